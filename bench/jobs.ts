// Training jobs.
// 1. Submit to all RUNNING of a 1+2+4 ps-lite job on a real local cluster (master and agent
//    in this process, the jobs framework on the master, each replica a real child process):
//    the first job (which also subscribes the framework) and the median of the next ones.
// 2. Gang placement of a 1,000-replica job on 100 simulated agents (16 cpus each), in the
//    job engine's core: the placement alone (gang.ts), and the whole decision from the
//    offers to the launches (placement, task ids and every replica's environment).

import { rmSync } from 'node:fs';
import { startMaster } from '../master/server.ts';
import { MasterAuth } from '../master/auth/master-auth.ts';
import { startAgent } from '../agent/agent.ts';
import { silentLogger } from '../shared/logger.ts';
import { Resources } from '../shared/resources.ts';
import { tempDir } from '../test/harness/processes.ts';
import { JobEngine, DEFAULT_ENGINE_OPTIONS } from '../master/frameworks/jobs/engine.ts';
import { placeGang, type GangMember } from '../shared/placement/gang.ts';
import type { HeldOffer } from '../shared/sdk/held-offer.ts';
import type { JobSpec } from '../shared/jobs/model.ts';
import type { JobView } from '../shared/jobs/model.ts';

const PSLITE_SAMPLES = 6;
const GANG_SAMPLES = 5;
const AGENTS = 100;
const REPLICAS = 1_000;
const AGENT_RESOURCES = 'cpus:16;mem:65536;ports:[31000-31099]';

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
}

const round = (ms: number) => Math.round(ms * 10) / 10;

async function psliteSubmitToRunning(): Promise<{ firstMs: number; medianMs: number; samplesMs: number[] }> {
  const dir = tempDir('cairn-bench-jobs-');
  const master = await startMaster({ auth: MasterAuth.off(), dataDir: `${dir}/master`, port: 0, host: '127.0.0.1', dnsPort: null, logger: silentLogger() });
  const agent = await startAgent({ masterUrl: master.url, workDir: `${dir}/agent`, httpPort: 0, hostname: 'localhost', resources: 'cpus:4;mem:4096;ports:[31000-31999]', logger: silentLogger() });
  const samples: number[] = [];
  try {
    for (let i = 0; i < PSLITE_SAMPLES; i++) {
      const name = `ps-${i}`;
      const tpl = { command: 'exec sleep 60', cpus: 0.1, mem: 32 };
      const doc = { name, kind: 'pslite', groups: [{ name: 'scheduler', template: tpl }, { name: 'server', replicas: 2, template: tpl }, { name: 'worker', replicas: 4, template: tpl }] };
      const t0 = performance.now();
      const res = await fetch(`${master.url}/api/v1/jobs`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(doc) });
      if (res.status !== 201) throw new Error(`submit: ${res.status} ${await res.text()}`);
      for (;;) {
        const j = (await (await fetch(`${master.url}/api/v1/jobs/${name}`)).json()) as JobView;
        if (j.replicas.every((r) => r.state === 'Running')) break;
        if (j.phase === 'Failed' || performance.now() - t0 > 30_000) throw new Error(`job ${name} did not run: ${j.phase} ${j.message}`);
        await new Promise((r) => setTimeout(r, 2));
      }
      samples.push(performance.now() - t0);
      await fetch(`${master.url}/api/v1/jobs/${name}`, { method: 'DELETE' });
      // The next job starts on an idle agent: wait for the kills to end.
      for (let k = 0; k < 500 && master.context.registry.state.tasks.size > 0 && [...master.context.registry.state.tasks.values()].some((t) => t.state === 'TASK_RUNNING' || t.state === 'TASK_STAGING' || t.state === 'TASK_STARTING'); k++) {
        await new Promise((r) => setTimeout(r, 20));
      }
    }
  } finally {
    await agent.stop();
    await master.stop();
    rmSync(dir, { recursive: true, force: true });
  }
  return { firstMs: round(samples[0]!), medianMs: round(median(samples.slice(1))), samplesMs: samples.map(round) };
}

function gangPlacement(): { placementMs: number; decisionMs: number; tasks: number; agentsUsed: number } {
  const template = { command: 'true', cpus: 1, memMb: 512, diskMb: 0, gpus: 0, ports: 1, env: {}, volumes: [] };
  const offers = (): HeldOffer[] => Array.from({ length: AGENTS }, (_, i) => ({ id: `o${i}`, agentId: `a${i}`, hostname: `sim-${i}`, ip: `10.0.${i >> 8}.${i & 255}`, resources: Resources.parse(AGENT_RESOURCES), role: '*' }));
  const members: GangMember[] = Array.from({ length: REPLICAS }, (_, key) => ({ key, template }));
  const placement: number[] = [];
  const decision: number[] = [];
  let tasks = 0;
  let agentsUsed = 0;
  for (let i = 0; i < GANG_SAMPLES; i++) {
    const held = offers();
    let t0 = performance.now();
    const placed = placeGang(members, held);
    placement.push(performance.now() - t0);
    if (!placed) throw new Error('the gang did not fit');

    const spec: JobSpec = { name: 'big', kind: 'batch', groups: [{ name: 'worker', replicas: REPLICAS, restartPolicy: 'OnFailure', template }], minAvailable: REPLICAS, successPolicy: 'Default', failurePolicies: [], backoffLimit: 6, cleanupPolicy: 'All', role: '*', priority: 0 };
    const engine = new JobEngine({ ...DEFAULT_ENGINE_OPTIONS, domain: 'cairn' });
    engine.setClusterTotals(held.map((o) => o.resources));
    engine.submit(spec, [], 'bench', 0);
    engine.takeEffects();
    t0 = performance.now();
    engine.offers(held, 1);
    const e = engine.takeEffects();
    decision.push(performance.now() - t0);
    tasks = e.launches.reduce((n, l) => n + l.tasks.length, 0);
    agentsUsed = e.launches.length;
  }
  return { placementMs: round(median(placement)), decisionMs: round(median(decision)), tasks, agentsUsed };
}

export async function run(): Promise<unknown> {
  const pslite = await psliteSubmitToRunning();
  const gang = gangPlacement();
  return {
    psliteSubmitToAllRunning: { job: '1 scheduler + 2 servers + 4 workers', targetMs: 500, ...pslite },
    gangPlacement: { replicas: REPLICAS, agents: AGENTS, agentResources: AGENT_RESOURCES, targetMs: 1000, ...gang },
  };
}
