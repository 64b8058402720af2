// Wall-clock steps on a running master and agent (issue 22, finding 13). A preload steps
// their Date by ±1–2 h (test/harness/clock-shift.mjs), as `date -s` or an NTP step would.
// Deadlines, offers, pings and liveness run on a steady clock (shared/steady-clock.ts):
//   - a +2 h step fails no job whose activeDeadlineSeconds lies well ahead (it failed a
//     20-second-old job with DeadlineExceeded);
//   - after a −2 h step a deadline still fires on time (it would have waited two hours);
//   - after a +1 h step that is then corrected, a killed agent is unreachable as quickly as
//     without the step (failure detection froze for the hour the leader's high-water mark of
//     wall time stayed ahead).

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { authFetch } from '../harness/credentials.ts';
import { clockShiftEnv, setClockShift } from '../harness/clock-shift.ts';
import { jobsApi } from '../harness/jobs-api.ts';
import { Cleanup, startAgentProcess, startMasterProcess, waitFor, type CairnProcess } from '../harness/processes.ts';

const HOUR = 3_600_000;
const cleanup = new Cleanup();
let master: CairnProcess;
let dir: string;
const api = jobsApi(() => master.url);
const masterClock = () => join(dir, 'master-clock');

beforeAll(async () => {
  dir = cleanup.dir('cairn-clock-steps-');
  master = await startMasterProcess(cleanup, { extra: ['--ping-interval', '500ms', '--max-missed-pings', '3'], env: clockShiftEnv(masterClock()) });
}, 60_000);

afterAll(async () => {
  await cleanup.run();
}, 60_000);

interface AgentView { id: string; hostname: string; reachable: boolean }

async function agents(): Promise<AgentView[]> {
  return (await (await authFetch(`${master.url}/api/v1/state`)).json()).agents as AgentView[];
}

/** Starts an agent whose wall clock the test steps through `name`; resolves with its id once registered. */
async function agent(name: string): Promise<{ proc: CairnProcess; id: string; clock: string }> {
  const before = new Set((await agents()).map((a) => a.id));
  const clock = join(dir, `${name}-clock`);
  const proc = await startAgentProcess(cleanup, master.url, { resources: 'cpus:4;mem:1024;ports:[31000-31009]', env: clockShiftEnv(clock) });
  const id = await waitFor(`agent ${name} registered`, async () => (await agents()).find((a) => !before.has(a.id) && a.reachable)?.id, 30_000);
  return { proc, id, clock };
}

function sleepJob(name: string, deadlineS: number) {
  return { name, kind: 'batch', activeDeadlineSeconds: deadlineS, groups: [{ name: 'worker', replicas: 1, restartPolicy: 'Never', template: { command: 'exec sleep 600', cpus: 0.5, mem: 32 } }] };
}

async function waitRunning(name: string): Promise<void> {
  await waitFor(`job ${name} running`, async () => ((await api.job(name)).phase === 'Running' ? true : undefined), 30_000, 100);
}

/** How long, on the test's own clock, until the master marks agent `id` unreachable after `kill`. */
async function timeToUnreachable(id: string, kill: () => Promise<unknown>): Promise<number> {
  const started = performance.now();
  await kill();
  await waitFor(`agent ${id} unreachable`, async () => ((await agents()).find((a) => a.id === id)?.reachable === false ? true : undefined), 30_000, 20);
  return performance.now() - started;
}

describe('wall-clock steps on a running master and agent', () => {
  let worker: { proc: CairnProcess; id: string; clock: string };

  beforeAll(async () => {
    worker = await agent('worker');
  }, 60_000);

  it('a +2 h step fails no job whose deadline lies ahead', async () => {
    await api.submit(sleepJob('ahead', 600));
    await waitRunning('ahead');
    await setClockShift(masterClock(), 2 * HOUR);
    await setClockShift(worker.clock, 2 * HOUR);
    // Something the job engine does after the step, start to end: its ticks ran meanwhile.
    await api.submit({ name: 'after', kind: 'batch', groups: [{ name: 'worker', replicas: 1, template: { command: 'true', cpus: 0.5, mem: 32 } }] });
    const after = await api.finished('after', 30_000);
    expect(after.phase, after.message).toBe('Succeeded');
    const ahead = await api.job('ahead');
    // Before: Failed, DeadlineExceeded, "ran longer than its activeDeadlineSeconds (600 s)".
    expect(ahead.phase, ahead.message).toBe('Running');
    expect(ahead.conditions.some((c) => c.reason === 'DeadlineExceeded')).toBe(false);
    await setClockShift(masterClock(), 0);
    await setClockShift(worker.clock, 0);
    expect((await authFetch(`${master.url}/api/v1/jobs/ahead`, { method: 'DELETE' })).status).toBeLessThan(300);
  }, 90_000);

  it('after a −2 h step a deadline still fires on time', async () => {
    const submitted = performance.now();
    await api.submit(sleepJob('behind', 6));
    await waitRunning('behind');
    await setClockShift(masterClock(), -2 * HOUR);
    await setClockShift(worker.clock, -2 * HOUR);
    // Before: the deadline waited for the wall clock to come back, two hours.
    const j = await api.finished('behind', 40_000);
    const tookMs = performance.now() - submitted;
    expect(j.phase).toBe('Failed');
    expect(j.conditions.at(-1)).toMatchObject({ type: 'Failed', reason: 'DeadlineExceeded' });
    expect(tookMs).toBeGreaterThanOrEqual(6_000);
    expect(tookMs).toBeLessThan(6_000 + 15_000);
    await setClockShift(masterClock(), 0);
    await setClockShift(worker.clock, 0);
  }, 90_000);

  it('after a +1 h step that is corrected, a killed agent is unreachable as quickly as without the step', async () => {
    const plain = await agent('plain');
    const unstepped = await timeToUnreachable(plain.id, () => plain.proc.kill('SIGKILL'));
    const stepped = await agent('stepped');
    await setClockShift(masterClock(), HOUR);
    // The step lasts a few of the master's ping rounds (500 ms) before it is corrected.
    const stepped0 = performance.now();
    await waitFor('the step held for 2 s', () => (performance.now() - stepped0 >= 2_000 ? true : undefined), 10_000, 50);
    await setClockShift(masterClock(), 0);
    const afterStep = await timeToUnreachable(stepped.id, () => stepped.proc.kill('SIGKILL'));
    // 3 missed pings at 500 ms: 1.5-2 s. Before: the master's timers waited out the hour.
    expect(unstepped).toBeLessThan(10_000);
    expect(afterStep).toBeLessThan(Math.max(unstepped * 2, unstepped + 3_000));
  }, 120_000);
});
