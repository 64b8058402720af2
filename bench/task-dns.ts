// Name lookups from inside a task through the system resolver (the agent's task resolver):
// lookups/s and p50/p99 for a replica's name (answered by a master) and for a name outside the
// zone (forwarded to a stand-in upstream on loopback), with a master's DNS asked directly (raw
// UDP, no task resolver) beside them as the floor. A master and an agent in this process,
// joined by gossip; the probe (bench/_task-dns-probe.py) runs as the job's one replica.
// Medians over RUNS runs of COUNT sequential lookups each.

import { rmSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { startMaster } from '../master/server.ts';
import { MasterAuth } from '../master/auth/master-auth.ts';
import { startAgent } from '../agent/agent.ts';
import { silentLogger } from '../shared/logger.ts';
import { tempDir } from '../test/harness/processes.ts';
import { StandInDns } from '../test/harness/stand-in-dns.ts';
import type { JobView } from '../shared/jobs/model.ts';

const COUNT = 2_000;
const RUNS = 5;
const PROBE = fileURLToPath(new URL('./_task-dns-probe.py', import.meta.url));

interface RunFigures {
  lookupsPerS: number;
  p50Us: number;
  p99Us: number;
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

export async function run(): Promise<unknown> {
  if (process.getuid?.() !== 0) throw new Error('the task resolver needs root: run the bench as root');
  const dir = tempDir('cairn-bench-task-dns-');
  const upstream = await StandInDns.start({ 'outside.example': '192.0.2.7' });
  const secret = 'a-task-dns-bench-secret-0123456789';
  const master = await startMaster({ auth: MasterAuth.off(), dataDir: `${dir}/master`, port: 0, host: '127.0.0.1', dnsPort: 0, logger: silentLogger(), gossip: { port: 0, host: '127.0.0.1', secret, join: [] } });
  const agent = await startAgent({
    masterUrl: master.url, workDir: `${dir}/agent`, httpPort: 0, hostname: 'localhost', resources: 'cpus:2;mem:2048;ports:[31000-31099]',
    logger: silentLogger(), gossip: { port: 0, host: '127.0.0.1', secret, join: [master.gossip!.member.address] }, dnsResolvers: [upstream.address],
  });
  try {
    const doc = { name: 'dnsbench', kind: 'batch', groups: [{ name: 'worker', replicas: 1, template: { command: ['/usr/bin/python3', PROBE, 'dnsbench-worker-0.jobs.cairn', 'outside.example', String(COUNT), String(RUNS)], cpus: 1, mem: 256 } }] };
    const res = await fetch(`${master.url}/api/v1/jobs`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(doc) });
    if (res.status !== 201) throw new Error(`submit: ${res.status} ${await res.text()}`);
    const t0 = Date.now();
    let job: JobView;
    for (;;) {
      job = (await (await fetch(`${master.url}/api/v1/jobs/dnsbench`)).json()) as JobView;
      if (job.phase === 'Succeeded' || job.phase === 'Failed') break;
      if (Date.now() - t0 > 300_000) throw new Error('the probe did not finish in 5 minutes');
      await new Promise((r) => setTimeout(r, 200));
    }
    const taskId = job.replicas[0]!.taskId!;
    const log = await (await fetch(`${master.url}/api/v1/tasks/${encodeURIComponent(taskId)}/logs?stream=stdout&offset=0`)).json() as { data: string };
    if (job.phase !== 'Succeeded') {
      const err = await (await fetch(`${master.url}/api/v1/tasks/${encodeURIComponent(taskId)}/logs?stream=stderr&offset=0`)).json() as { data: string };
      throw new Error(`the probe failed: ${job.message}\n${err.data}`);
    }
    const raw = JSON.parse(log.data.trim()) as Record<string, RunFigures[] | string>;
    const figures: Record<string, unknown> = {};
    for (const [kind, runs] of Object.entries(raw)) {
      if (typeof runs === 'string') continue;
      figures[kind] = {
        lookupsPerS: median(runs.map((r) => r.lookupsPerS)),
        p50Us: median(runs.map((r) => r.p50Us)),
        p99Us: median(runs.map((r) => r.p99Us)),
      };
    }
    const cluster = figures['getaddrinfo-cluster'] as RunFigures;
    const floor = figures['direct-master'] as RunFigures | undefined;
    return {
      bench: 'task-dns',
      lookupsPerRun: COUNT,
      runs: RUNS,
      taskResolvConf: raw.resolvConf,
      ...figures,
      ...(floor ? { clusterP50OverDirect: Math.round((cluster.p50Us / floor.p50Us) * 100) / 100 } : {}),
    };
  } finally {
    await agent.stop({ killTasks: true });
    await master.stop();
    upstream.close();
    rmSync(dir, { recursive: true, force: true });
  }
}
