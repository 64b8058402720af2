// The services framework at scale, on a real master with simulated agents (the real agent
// protocol, no children; every health check passes the moment a task runs):
// 1. one app of 1,000 instances on 100 agents: POST /v2/apps to all 1,000 RUNNING;
// 2. a rolling restart of those 1,000 (upgradeStrategy defaults, health checks): POST
//    restart to the deployment's end, every instance replaced, new ones healthy;
// 3. GET /v2/apps?embed=apps.tasks with 1,000 apps of one instance each: median latency.

import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { startMaster, type MasterHandle } from '../master/server.ts';
import { MasterAuth } from '../master/auth/master-auth.ts';
import { silentLogger } from '../shared/logger.ts';
import type { TaskState } from '../shared/agent-messages.ts';
import { FakeAgent } from '../test/harness/fake-agent.ts';
import { tempDir } from '../test/harness/processes.ts';
import { marathon } from '../test/harness/marathon.ts';

const AGENTS = 100;
const INSTANCES = 1000;
const APPS = 1000;
const LIST_RUNS = 15;
const APP = { cpus: 0.1, mem: 16, healthChecks: [{ protocol: 'HTTP', path: '/health', portIndex: 0, gracePeriodSeconds: 5, intervalSeconds: 1 }] };

/** A simulated agent whose tasks' health checks pass at once: RUNNING, then RUNNING healthy. */
class HealthyAgent extends FakeAgent {
  override update(taskId: string, frameworkId: string, state: TaskState, exitCode?: number): string {
    const uuid = super.update(taskId, frameworkId, state, exitCode);
    if (state === 'TASK_RUNNING') {
      this.send({ statusUpdate: { uuid: randomBytes(16), taskId, frameworkId, state, message: '', reason: '', hasExitCode: false, exitCode: 0, timestampMs: Date.now(), hasHealthy: true, healthy: true } });
    }
    return uuid;
  }
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
}

async function until(what: string, fn: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!fn()) {
    if (performance.now() > deadline) throw new Error(`timed out: ${what}`);
    await new Promise((r) => setTimeout(r, 2));
  }
}

async function cluster(perAgent: number): Promise<{ master: MasterHandle; agents: FakeAgent[]; dir: string }> {
  const dir = tempDir('cairn-bench-services-');
  const master = await startMaster({ auth: MasterAuth.off(), dataDir: dir, port: 0, host: '127.0.0.1', logger: silentLogger(), dnsPort: null, allocationIntervalMs: 100 });
  const agents = Array.from({ length: AGENTS }, (_, i) => new HealthyAgent({
    masterUrl: master.url,
    hostname: `sim-${i}`,
    resources: `cpus:${(perAgent * APP.cpus).toFixed(1)};mem:${perAgent * APP.mem};disk:1000;ports:[31000-${31000 + perAgent}]`,
  }));
  await Promise.all(agents.map((a) => a.connect()));
  return { master, agents, dir };
}

async function stop(c: { master: MasterHandle; agents: FakeAgent[]; dir: string }): Promise<void> {
  await Promise.all(c.agents.map((a) => a.close()));
  await c.master.stop();
  rmSync(c.dir, { recursive: true, force: true });
}

/** Tasks of the marathon framework by state, from the registry, plus the ready (healthy) count. */
function census(master: MasterHandle, version?: string): { running: number; healthyNew: number; alive: number } {
  const state = master.context.registry.state;
  const fw = [...state.frameworks.values()].find((f) => f.name === 'marathon' && f.removedAtMs === undefined);
  let running = 0;
  let healthyNew = 0;
  let alive = 0;
  if (!fw) return { running, healthyNew, alive };
  for (const t of state.tasks.values()) {
    if (t.frameworkId !== fw.id) continue;
    if (t.state === 'TASK_RUNNING') running++;
    if (t.state !== 'TASK_FINISHED' && t.state !== 'TASK_KILLED' && t.state !== 'TASK_FAILED' && t.state !== 'TASK_LOST') alive++;
    const v = t.labels.find((l) => l.name === 'cairn.marathon.configVersion')?.value;
    if (t.state === 'TASK_RUNNING' && t.healthy === true && (version === undefined || v === version)) healthyNew++;
  }
  return { running, healthyNew, alive };
}

async function launchAndRestart(): Promise<Record<string, unknown>> {
  // Room for the rollout's defaults: all new instances beside all old ones (maximumOverCapacity 1).
  const c = await cluster((2 * INSTANCES) / AGENTS);
  try {
    const t0 = performance.now();
    const r = await marathon(c.master.url, 'POST', '/v2/apps', { id: '/bench/web', cmd: 'serve', instances: INSTANCES, ...APP });
    if (r.status !== 201) throw new Error(`POST /v2/apps answered ${r.status}: ${JSON.stringify(r.body)}`);
    await until('1,000 RUNNING', () => census(c.master).running >= INSTANCES, 60_000);
    const launchSeconds = (performance.now() - t0) / 1000;
    await until('the first deployment finished', () => c.master.context.registry.state.builtin.get('marathon')!.size > 0 && ![...c.master.context.registry.state.builtin.get('marathon')!.keys()].some((k) => k.startsWith('deployment/')), 60_000);

    const t1 = performance.now();
    const restart = await marathon(c.master.url, 'POST', '/v2/apps/bench/web/restart');
    if (restart.status !== 200) throw new Error(`restart answered ${restart.status}`);
    const version = restart.body.version as string;
    let peakAlive = 0;
    await until('the restart finished', () => {
      const n = census(c.master, version);
      peakAlive = Math.max(peakAlive, n.alive);
      const deploying = [...c.master.context.registry.state.builtin.get('marathon')!.keys()].some((k) => k.startsWith('deployment/'));
      return !deploying && n.healthyNew === INSTANCES && n.alive === INSTANCES;
    }, 120_000);
    const restartSeconds = (performance.now() - t1) / 1000;
    return {
      launch: { instances: INSTANCES, agents: AGENTS, seconds: +launchSeconds.toFixed(3), instancesPerSecond: Math.round(INSTANCES / launchSeconds), targetSeconds: 2 },
      rollingRestart: { instances: INSTANCES, seconds: +restartSeconds.toFixed(3), peakAlive, targetSeconds: 10 },
    };
  } finally {
    await stop(c);
  }
}

async function listLatency(): Promise<Record<string, unknown>> {
  const c = await cluster(APPS / AGENTS + 1);
  try {
    const posts: Promise<unknown>[] = [];
    for (let i = 0; i < APPS; i++) {
      posts.push(marathon(c.master.url, 'POST', '/v2/apps', { id: `/bench/app-${i}`, cmd: 'serve', instances: 1, cpus: APP.cpus, mem: APP.mem }));
      if (posts.length >= 50) await Promise.all(posts.splice(0));
    }
    await Promise.all(posts);
    await until('1,000 RUNNING', () => census(c.master).running >= APPS, 120_000);
    const times: number[] = [];
    let bytes = 0;
    for (let i = 0; i < LIST_RUNS; i++) {
      const t = performance.now();
      const r = await marathon(c.master.url, 'GET', '/v2/apps?embed=apps.tasks');
      times.push(performance.now() - t);
      if (r.body.apps.length !== APPS) throw new Error(`listed ${r.body.apps.length} apps`);
      bytes = JSON.stringify(r.body).length;
    }
    return { apps: APPS, runs: LIST_RUNS, medianMs: +median(times).toFixed(1), minMs: +Math.min(...times).toFixed(1), maxMs: +Math.max(...times).toFixed(1), answerBytes: bytes };
  } finally {
    await stop(c);
  }
}

export async function run(): Promise<unknown> {
  const scale = await launchAndRestart();
  const list = await listLatency();
  return { bench: 'services', ...scale, listAppsEmbedTasks: list };
}
