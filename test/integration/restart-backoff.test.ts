// Restart back-off on real processes: a master and one agent. A job replica that always
// fails restarts after its configured waits (1 s, 2 s, 4 s here, to stay quick), measured
// between one task's end and the next task's launch in the master's task records, and
// `cairn job show` says "restarting in N s" while it waits; a replica that ran stably starts
// its back-off over; a Marathon app that always fails is launched again after backoffSeconds
// × backoffFactor^n up to maxLaunchDelaySeconds, and /v2/queue shows the delay as Marathon does.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chmodSync } from 'node:fs';
import { authFetch } from '../harness/credentials.ts';
import { Cleanup, runCairn, startAgentProcess, startMasterProcess, waitFor, type CairnProcess } from '../harness/processes.ts';
import type { JobView } from '../../shared/jobs/model.ts';

const cleanup = new Cleanup();
let master: CairnProcess;
let scratch: string;

beforeAll(async () => {
  scratch = cleanup.dir('cairn-backoff-scratch-');
  chmodSync(scratch, 0o777);
  master = await startMasterProcess(cleanup);
  await startAgentProcess(cleanup, master.url, { resources: 'cpus:4;mem:2048;disk:1000;ports:[31000-31049]' });
  await waitFor('the agent registered', async () => ((await (await authFetch(`${master.url}/api/v1/state`)).json()).agents?.length === 1 ? true : undefined), 30_000);
}, 90_000);

afterAll(async () => {
  await cleanup.run();
}, 60_000);

interface TaskFacts {
  id: string;
  name: string;
  launchedAtMs: number;
  endedAtMs: number | undefined;
}

/** The master's records of the tasks whose name starts with `prefix`, in launch order: when each was launched and ended. */
async function tasksNamed(prefix: string): Promise<TaskFacts[]> {
  const state = (await (await authFetch(`${master.url}/api/v1/state`)).json()) as { tasks: { id: string; name: string; launchedAtMs: number }[] };
  const out: TaskFacts[] = [];
  for (const t of state.tasks.filter((x) => x.name.startsWith(prefix))) {
    const detail = (await (await authFetch(`${master.url}/api/v1/tasks/${encodeURIComponent(t.id)}`)).json()) as { history: { state: string; atMs: number }[] };
    const end = detail.history.find((h) => ['TASK_FINISHED', 'TASK_FAILED', 'TASK_KILLED', 'TASK_LOST', 'TASK_ERROR'].includes(h.state));
    out.push({ id: t.id, name: t.name, launchedAtMs: t.launchedAtMs, endedAtMs: end?.atMs });
  }
  return out.sort((a, b) => a.launchedAtMs - b.launchedAtMs);
}

/** Seconds from each task's end to the next one's launch. */
function gaps(tasks: TaskFacts[]): number[] {
  return tasks.slice(1).map((t, i) => (t.launchedAtMs - tasks[i]!.endedAtMs!) / 1000);
}

async function job(name: string): Promise<JobView> {
  return (await (await authFetch(`${master.url}/api/v1/jobs/${name}`)).json()) as JobView;
}

async function submit(doc: unknown): Promise<void> {
  const r = await authFetch(`${master.url}/api/v1/jobs`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(doc) });
  expect(r.status, await r.clone().text()).toBe(201);
}

/** Each measured wait is at least the back-off, and not much more (an allocation round, a status update). */
function expectWaits(measured: number[], wanted: number[]): void {
  expect(measured, `waits ${measured.join(', ')} s`).toHaveLength(wanted.length);
  measured.forEach((m, i) => {
    expect(m, `wait ${i + 1}: ${measured.join(', ')} s`).toBeGreaterThanOrEqual(wanted[i]! - 0.05);
    expect(m, `wait ${i + 1}: ${measured.join(', ')} s`).toBeLessThan(wanted[i]! + 2);
  });
}

describe('restart back-off', () => {
  it('a job replica that always fails restarts after 1 s, 2 s, 4 s; cairn job show says when', async () => {
    await submit({
      name: 'crash', kind: 'batch', backoffLimit: 3, restartBackoff: { initialSeconds: 1, factor: 2, maxSeconds: 8 },
      groups: [{ name: 'worker', restartPolicy: 'OnFailure', template: { command: 'exit 3', cpus: 0.5, mem: 64 } }],
    });
    // While it waits out a back-off, the CLI says how long is left.
    const shown = await waitFor('cairn job show says restarting in', async () => {
      const r = await runCairn(['job', 'show', 'crash', '--master', master.url]);
      return /worker-0\s+Pending \(restarting in \d+ s\)/.test(r.stdout) ? r.stdout : undefined;
    }, 30_000, 200);
    expect(shown).toMatch(/restarting in [1-4] s/);
    const done = await waitFor('crash failed', async () => ((await job('crash')).phase === 'Failed' ? job('crash') : undefined), 60_000, 200);
    expect(done.message).toMatch(/backoffLimit 3/);
    const tasks = await tasksNamed('crash-worker-0');
    expect(tasks).toHaveLength(4);
    expectWaits(gaps(tasks), [1, 2, 4]);
  }, 90_000);

  it('a replica that ran stably starts its back-off over', async () => {
    // The second run lasts 3 s, past resetAfterSeconds (2): the wait after it is the first again.
    const count = `${scratch}/stable-runs`;
    const script = `n=$(cat ${count} 2>/dev/null || echo 0); n=$((n+1)); echo $n > ${count}; if [ $n -eq 2 ]; then sleep 3; fi; exit 3`;
    await submit({
      name: 'stable', kind: 'batch', backoffLimit: 3, restartBackoff: { initialSeconds: 1, factor: 3, maxSeconds: 9, resetAfterSeconds: 2 },
      groups: [{ name: 'worker', restartPolicy: 'OnFailure', template: { command: script, cpus: 0.5, mem: 64 } }],
    });
    await waitFor('stable failed', async () => ((await job('stable')).phase === 'Failed' ? true : undefined), 60_000, 200);
    const tasks = await tasksNamed('stable-worker-0');
    expect(tasks).toHaveLength(4);
    // 1 s; the run that lasted 3 s resets it: 1 s again (not 3); then 3 s.
    expectWaits(gaps(tasks), [1, 1, 3]);
  }, 90_000);

  it("a Marathon app that always fails is launched again after its backoffSeconds × backoffFactor^n, capped; /v2/queue shows the delay", async () => {
    const app = { id: '/crashy', cmd: 'exit 1', cpus: 0.1, mem: 32, instances: 1, backoffSeconds: 1, backoffFactor: 2, maxLaunchDelaySeconds: 10 };
    const r = await authFetch(`${master.url}/v2/apps`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(app) });
    expect(r.status).toBe(201);
    const queued = await waitFor('/v2/queue shows a delay', async () => {
      const q = (await (await authFetch(`${master.url}/v2/queue`)).json()) as { queue: { app: { id: string }; delay: { timeLeftSeconds: number; overdue: boolean } }[] };
      const item = q.queue.find((x) => x.app.id === '/crashy');
      return item && item.delay.timeLeftSeconds > 0 ? item : undefined;
    }, 30_000, 100);
    expect(queued.delay.overdue).toBe(false);
    expect(queued.delay.timeLeftSeconds).toBeLessThanOrEqual(4);
    const tasks = await waitFor('four launches', async () => {
      const t = await tasksNamed('crashy');
      return t.length >= 4 && t.slice(0, 4).every((x) => x.endedAtMs !== undefined) ? t.slice(0, 4) : undefined;
    }, 60_000, 200);
    await authFetch(`${master.url}/v2/apps/crashy?force=true`, { method: 'DELETE' });
    // 1 s, 2 s, 4 s (the cap, and Marathon's forgetting a delay once maxLaunchDelaySeconds
    // passed without a failure, are shown by test/unit/marathon-core.test.ts).
    expectWaits(gaps(tasks), [1, 2, 4]);
  }, 90_000);
});
