// The shells around the health check state machine, with real timers kept short and probes
// played by the test: a check that hangs is aborted at its timeout, one that throws is a
// failure, stopping aborts what runs; and the agent's manager turns results into status
// updates, kills through the executor and marks the end of a task it killed.

import { afterEach, describe, expect, it } from 'vitest';
import { existsSync, readdirSync, rmSync } from 'node:fs';
import { TaskHealthCheck } from '../../agent/health/checker.ts';
import { HealthChecks, HEALTH_REASON } from '../../agent/health/health-checks.ts';
import { HealthStore, healthDir } from '../../agent/health/store.ts';
import type { ProbeOutcome } from '../../agent/health/probes.ts';
import type { TaskStatusChange } from '../../agent/executors/process/executor.ts';
import type { HealthCheckSpec, TaskInfo } from '../../shared/agent-messages.ts';
import { tempDir, waitFor } from '../harness/processes.ts';

const timings = { delayMs: 0, intervalMs: 30, timeoutMs: 100, gracePeriodMs: 0, consecutiveFailures: 2 };
const checks: { stop(): void }[] = [];
const dirs: string[] = [];
afterEach(() => {
  for (const c of checks.splice(0)) c.stop();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function shell(probe: (signal: AbortSignal) => Promise<ProbeOutcome>) {
  const reports: boolean[] = [];
  const kills: string[] = [];
  const c = new TaskHealthCheck({ timings, taskStartedAtMs: Date.now(), what: 'test check', probe, onReport: (h) => reports.push(h), onKill: (m) => kills.push(m) });
  checks.push(c);
  c.start();
  return { c, reports, kills };
}

describe('health check shell', () => {
  it('aborts a check that hangs past its timeout and counts it failed', async () => {
    const aborted: string[] = [];
    const { reports, kills } = shell((signal) => new Promise((resolve) => {
      signal.addEventListener('abort', () => {
        aborted.push((signal.reason as Error).message);
        resolve({ ok: false, error: 'aborted' });
      });
    }));
    await waitFor('killed after two timeouts', () => kills.length === 1, 5000, 10);
    expect(reports).toEqual([false]);
    expect(aborted.length).toBeGreaterThanOrEqual(2);
    expect(aborted[0]).toMatch(/timed out/);
    expect(kills[0]).toContain('last error: timed out after 0.1 s');
  });

  it('counts a probe that throws or rejects as a failure, not an agent error', async () => {
    let n = 0;
    const { kills } = shell(() => {
      n++;
      if (n === 1) throw new Error('boom');
      return Promise.reject(new Error('rejected'));
    });
    await waitFor('killed', () => kills.length === 1, 5000, 10);
    expect(kills[0]).toContain('last error: rejected');
  });

  it('stops: the running check is aborted and nothing more is reported', async () => {
    let signalSeen: AbortSignal | undefined;
    const { c, reports } = shell((signal) => {
      signalSeen = signal;
      return new Promise(() => undefined);
    });
    await waitFor('a check runs', () => signalSeen !== undefined, 5000, 5);
    c.stop();
    expect(signalSeen!.aborted).toBe(true);
    await new Promise((r) => setTimeout(r, 250));
    expect(reports).toEqual([]);
  });
});

describe('the agent health checks', () => {
  const spec: HealthCheckSpec = { type: 'tcp', port: 1, path: '/', scheme: 'http', statuses: [], command: '', ...timings };
  const info: TaskInfo = { taskId: 'web', frameworkId: 'fw', name: 'web', resources: 'cpus:1;ports:[1-1]', command: { shell: true, value: 'x', arguments: [], environment: [] }, killGraceMs: 0, labels: [], healthCheck: spec };
  const change = (state: TaskStatusChange['state'], extra: Partial<TaskStatusChange> = {}): TaskStatusChange => ({ taskId: 'web', frameworkId: 'fw', state, message: '', hasExitCode: false, exitCode: 0, reason: '', ...extra });

  it('starts on RUNNING, reports, kills after the failures, marks the end, and forgets the record', async () => {
    const workDir = tempDir();
    dirs.push(workDir);
    const reported: TaskStatusChange[] = [];
    const killed: [string, string][] = [];
    const health = new HealthChecks({ store: new HealthStore(healthDir(workDir)), snapshot: () => undefined, docker: () => undefined, report: (c) => reported.push(c), kill: (id, m) => killed.push([id, m]) });
    checks.push(health);
    health.noteLaunch(info);
    expect(health.observe(change('TASK_RUNNING'))).toEqual(change('TASK_RUNNING'));
    expect(health.status('web').checking).toBe(true);
    await waitFor('record written', () => existsSync(healthDir(workDir)) && readdirSync(healthDir(workDir)).includes('web.json'), 5000, 10);
    // Nothing listens on port 1: refused, twice, then killed.
    await waitFor('killed', () => killed.length === 1, 5000, 10);
    expect(reported).toEqual([change('TASK_RUNNING', { reason: HEALTH_REASON, hasHealthy: true, healthy: false, message: expect.stringContaining('TCP connect 127.0.0.1:1') })]);
    expect(killed[0]![1]).toContain('2 times in a row');
    const end = health.observe(change('TASK_KILLED', { message: 'killed on request', hasExitCode: true, exitCode: -15 }));
    expect(end).toMatchObject({ state: 'TASK_KILLED', reason: HEALTH_REASON, hasHealthy: true, healthy: false, message: killed[0]![1], exitCode: -15 });
    expect(health.status('web').checking).toBe(false);
    await waitFor('record removed', () => !readdirSync(healthDir(workDir)).includes('web.json'), 5000, 10);
  });

  it('leaves the end of a task it did not kill as it is, and checks nothing for a task without a check', () => {
    const health = new HealthChecks({ store: new HealthStore(healthDir('/nonexistent')), snapshot: () => undefined, docker: () => undefined, report: () => undefined, kill: () => undefined });
    checks.push(health);
    health.noteLaunch({ ...info, healthCheck: null });
    health.observe(change('TASK_RUNNING'));
    expect(health.status('web').checking).toBe(false);
    expect(health.observe(change('TASK_FINISHED'))).toEqual(change('TASK_FINISHED'));
  });

  it('resumes recorded checks of tasks that still run, and forgets those of tasks gone', async () => {
    const workDir = tempDir();
    dirs.push(workDir);
    const store = new HealthStore(healthDir(workDir));
    const entry = { taskId: 'web', frameworkId: 'fw', target: { kind: 'tcp' as const, port: 1 }, timings: { ...timings, consecutiveFailures: 0 }, startedAtMs: 0 };
    await store.write(entry);
    await store.write({ ...entry, taskId: 'gone' });
    const health = new HealthChecks({ store, snapshot: () => undefined, docker: () => undefined, report: () => undefined, kill: () => undefined });
    checks.push(health);
    const snap = { taskId: 'web', frameworkId: 'fw', state: 'TASK_RUNNING' as const, resources: '', sandbox: '', pid: 1, startTimeTicks: undefined, gpuIndices: [], recovered: true, launchedAtMs: 0, cgroup: undefined };
    expect(await health.recover([snap])).toEqual(['web']);
    expect(health.status('web').checking).toBe(true);
    await waitFor('gone forgotten', () => readdirSync(healthDir(workDir)).join() === 'web.json', 5000, 10);
  });
});
