// Launch throughput and latency.
// 1. tasks/s from SUBSCRIBE to all RUNNING: 10,000 tasks on 100 simulated agents (real
//    master, real WebSocket agent protocol, agents simulated in this process: no children).
// 2. submit-to-RUNNING of a real `sh -c true` task on an idle local cluster (master and
//    agent in this process, the task a real child process): median over repeated launches.

import { rmSync } from 'node:fs';
import { startMaster } from '../master/server.ts';
import { startAgent } from '../agent/agent.ts';
import { silentLogger } from '../shared/logger.ts';
import { FakeAgent } from '../test/harness/fake-agent.ts';
import { tempDir } from '../test/harness/processes.ts';
import { RawScheduler, taskInfo, type RawEvent } from '../test/harness/raw-scheduler.ts';
import { MasterAuth } from '../master/auth/master-auth.ts';
import { authorizationHeader } from '../agent/credential.ts';
import { launchTlsCost } from './tls.ts';
import { hasOpenssl } from '../test/harness/tls-certs.ts';
import { parseCredentials } from '../master/auth/credentials.ts';
import { authHeaders, TEST_AGENT, TEST_USER } from '../test/harness/credentials.ts';

const TASK = { cpus: 0.1, mem: 32 };

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
}

/** `auth`: the master authenticates the framework's every call and the agents' connections. */
async function throughput(agentCount: number, taskCount: number, auth = false): Promise<{ tasks: number; agents: number; seconds: number; tasksPerSecond: number }> {
  const dir = tempDir('cairn-bench-');
  const credentials = parseCredentials(JSON.stringify({ credentials: [{ ...TEST_USER }, { ...TEST_AGENT, agent: true }] }));
  const agentHeaders = { authorization: authorizationHeader(TEST_AGENT) };
  const handle = await startMaster({ auth: auth ? MasterAuth.on({ credentials }) : MasterAuth.off(), dataDir: dir, port: 0, host: '127.0.0.1', logger: silentLogger(), allocationIntervalMs: 100 });
  const perAgent = Math.ceil(taskCount / agentCount);
  const agents = Array.from({ length: agentCount }, (_, i) => new FakeAgent({
    masterUrl: handle.url,
    hostname: `sim-${i}`,
    resources: `cpus:${(perAgent * TASK.cpus).toFixed(1)};mem:${perAgent * TASK.mem};disk:1000`,
    ...(auth ? { headers: agentHeaders } : {}),
  }));
  await Promise.all(agents.map((a) => a.connect()));
  const s = new RawScheduler(handle.url, auth ? authHeaders() : {});
  let launched = 0;
  let running = 0;
  let done: () => void = () => undefined;
  const allRunning = new Promise<void>((r) => (done = r));
  const seenOffers = new Set<string>();
  const calls: Promise<unknown>[] = [];
  let finished = false;
  // Calls still in flight when the run ends are cut off by the shutdown; that is expected.
  const track = (p: Promise<unknown>) => calls.push(p.catch(() => undefined));
  const onEvent = (e: RawEvent) => {
    if (finished) return;
    if (e.type === 'OFFERS') {
      for (const offer of e.offers.offers) {
        if (seenOffers.has(offer.id.value)) continue;
        seenOffers.add(offer.id.value);
        const cpus = offer.resources.find((r: any) => r.name === 'cpus')?.scalar.value ?? 0;
        const n = Math.min(Math.floor(cpus / TASK.cpus + 1e-9), taskCount - launched);
        const tasks = Array.from({ length: n }, () => taskInfo(`t${launched++}`, offer.agent_id.value, TASK, 'true'));
        track(s.call({ type: 'ACCEPT', accept: { offer_ids: [offer.id], operations: [{ type: 'LAUNCH', launch: { task_infos: tasks } }] } }));
      }
    } else if (e.type === 'UPDATE' && e.update.status.state === 'TASK_RUNNING') {
      running++;
      const st = e.update.status;
      track(s.call({ type: 'ACKNOWLEDGE', acknowledge: { agent_id: st.agent_id, task_id: st.task_id, uuid: st.uuid } }));
      if (running === taskCount) {
        finished = true;
        done();
      }
    }
  };
  s.onEvent(onEvent);
  const t0 = performance.now();
  await s.subscribe({ user: '', name: 'launch-bench' });
  await allRunning;
  const seconds = (performance.now() - t0) / 1000;
  await Promise.allSettled(calls); // acknowledgements still in flight, outside the timing
  s.close();
  await Promise.all(agents.map((a) => a.close()));
  await handle.stop();
  rmSync(dir, { recursive: true, force: true });
  return { tasks: taskCount, agents: agentCount, seconds: Number(seconds.toFixed(3)), tasksPerSecond: Math.round(taskCount / seconds) };
}

async function realTaskLatency(samples: number): Promise<{ samples: number; medianMs: number; p90Ms: number; minMs: number }> {
  // An authenticating master, as a shared cluster runs: each task carries its framework's
  // principal, and a root agent runs it under that principal's own uid in a 0700 sandbox.
  const dir = tempDir('cairn-bench-');
  const credentials = parseCredentials(JSON.stringify({ credentials: [{ ...TEST_USER }, { ...TEST_AGENT, agent: true }] }));
  const handle = await startMaster({ auth: MasterAuth.on({ credentials }), dataDir: `${dir}/master`, port: 0, host: '127.0.0.1', logger: silentLogger(), allocationIntervalMs: 1000, defaultRefuseMs: 0 });
  const agent = await startAgent({ masterUrl: handle.url, workDir: `${dir}/agent`, httpPort: 0, hostname: 'localhost', resources: 'cpus:2;mem:2048', logger: silentLogger(), credential: { principal: TEST_AGENT.principal, secret: TEST_AGENT.secret } });
  const s = new RawScheduler(handle.url, authHeaders());
  await s.subscribe({ user: '', name: 'latency-bench' });
  const latencies: number[] = [];
  for (let i = 0; i < samples; i++) {
    const mark = s.events.length;
    const offers = s.offers(0).filter((o) => handle.master.offers.get(o.id.value));
    const offer = offers[0] ?? (await s.next((e) => e.type === 'OFFERS', 10_000, mark)).offers.offers[0];
    const from = s.events.length;
    const t0 = performance.now();
    const id = `lat-${i}`;
    await s.call({ type: 'ACCEPT', accept: { offer_ids: [offer.id], operations: [{ type: 'LAUNCH', launch: { task_infos: [taskInfo(id, offer.agent_id.value, TASK, 'true')] } }], filters: { refuse_seconds: 0 } } });
    await s.next((e) => e.type === 'UPDATE' && e.update.status.task_id.value === id && e.update.status.state === 'TASK_RUNNING', 10_000, from);
    latencies.push(performance.now() - t0);
    const fin = await s.next((e) => e.type === 'UPDATE' && e.update.status.task_id.value === id && e.update.status.state === 'TASK_FINISHED', 10_000, from);
    void fin;
    // Let the freed resources come back as a fresh offer before the next launch.
    if (!s.offers(s.events.length - 1).length) await s.next((e) => e.type === 'OFFERS', 10_000, from);
  }
  s.close();
  await agent.stop({ killTasks: true });
  await handle.stop();
  rmSync(dir, { recursive: true, force: true });
  const sorted = [...latencies].sort((a, b) => a - b);
  return {
    samples,
    medianMs: Number(median(latencies).toFixed(2)),
    p90Ms: Number(sorted[Math.floor(sorted.length * 0.9)].toFixed(2)),
    minMs: Number(sorted[0].toFixed(2)),
  };
}

export async function run(): Promise<unknown> {
  // Without and with authentication, alternating, so both meet the same machine.
  const runs = [];
  const authRuns = [];
  for (let i = 0; i < 3; i++) {
    // Which goes first alternates, so neither always follows the other's teardown.
    if (i % 2 === 0) runs.push(await throughput(100, 10_000));
    authRuns.push(await throughput(100, 10_000, true));
    if (i % 2 === 1) runs.push(await throughput(100, 10_000));
  }
  const off = median(runs.map((r) => r.tasksPerSecond));
  const on = median(authRuns.map((r) => r.tasksPerSecond));
  const real = await realTaskLatency(30);
  return {
    bench: 'launch',
    throughput: { runs, medianTasksPerSecond: off, target: 4000 },
    tlsCost: hasOpenssl() ? await launchTlsCost() : 'openssl missing: no certificates to measure TLS with',
    throughputWithTokens: { runs: authRuns, medianTasksPerSecond: on, ratioToWithout: Number((on / off).toFixed(3)), target: 'ratio >= 0.9' },
    realTaskSubmitToRunning: { ...real, targetMedianMs: 50 },
  };
}

if (import.meta.url === `file://${process.argv[1]}`) console.log(JSON.stringify(await run(), null, 2));
