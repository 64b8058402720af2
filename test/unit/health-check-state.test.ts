// The pure state machine of one task's health check, driven by hand: the time is a number
// passed in, results are given by check id.

import { describe, expect, it } from 'vitest';
import { HealthCheckState, type HealthEffect, type HealthTimings } from '../../agent/health/health-state.ts';

const T: HealthTimings = { delayMs: 1000, intervalMs: 1000, timeoutMs: 500, gracePeriodMs: 5000, consecutiveFailures: 3 };

/** Runs the check that is due at `at` and answers it at `at + took` with `outcome`. */
function check(m: HealthCheckState, at: number, outcome: { ok: true } | { ok: false; error: string }, took = 10): HealthEffect[] {
  const started = m.tick(at);
  expect(started).toEqual([{ type: 'run_check', checkId: expect.any(Number) }]);
  const id = (started[0] as { checkId: number }).checkId;
  return m.result(id, outcome, at + took);
}

const fail = { ok: false as const, error: 'HTTP status 404' };
const pass = { ok: true as const };

describe('health check state machine', () => {
  it('waits for the delay, then runs a check each interval after the previous one ended', () => {
    const m = new HealthCheckState(T, 0, 0, 'HTTP GET x');
    expect(m.wakeAtMs()).toBe(1000);
    expect(m.tick(999)).toEqual([]);
    const [run] = m.tick(1000);
    expect(run).toEqual({ type: 'run_check', checkId: 1 });
    expect(m.wakeAtMs()).toBe(1500); // the timeout
    m.result(1, pass, 1200);
    expect(m.wakeAtMs()).toBe(2200);
    expect(m.tick(2200)).toEqual([{ type: 'run_check', checkId: 2 }]);
  });

  it('reports the first result and then only changes', () => {
    const m = new HealthCheckState({ ...T, gracePeriodMs: 0 }, 0, 0, 'TCP');
    expect(check(m, 1000, pass)).toEqual([{ type: 'report', healthy: true, message: 'health check passed: TCP' }]);
    expect(check(m, 2010, pass)).toEqual([]);
    expect(check(m, 3020, fail)).toEqual([{ type: 'report', healthy: false, message: 'health check failed: TCP: HTTP status 404' }]);
    expect(check(m, 4030, fail)).toEqual([]);
    expect(check(m, 5040, pass)).toEqual([{ type: 'report', healthy: true, message: 'health check passed: TCP' }]);
    expect(m.consecutiveFailures).toBe(0);
  });

  it('ignores failures inside the grace period until the first success', () => {
    const m = new HealthCheckState(T, 0, 0, 'x');
    // 1000, 2010, 3020, 4030: all inside the 5 s grace period, none counted, nothing said.
    for (const at of [1000, 2010, 3020, 4030]) expect(check(m, at, fail)).toEqual([]);
    expect(m.consecutiveFailures).toBe(0);
    expect(m.healthy).toBeUndefined();
    // Past the grace period a failure counts and is reported.
    expect(check(m, 5040, fail)).toEqual([{ type: 'report', healthy: false, message: expect.stringContaining('404') }]);
    expect(m.consecutiveFailures).toBe(1);
  });

  it('counts failures inside the grace period once a check has succeeded', () => {
    const m = new HealthCheckState(T, 0, 0, 'x');
    expect(check(m, 1000, pass)).toEqual([{ type: 'report', healthy: true, message: expect.any(String) }]);
    expect(check(m, 2010, fail)).toEqual([{ type: 'report', healthy: false, message: expect.any(String) }]);
    expect(m.consecutiveFailures).toBe(1);
  });

  it('kills after consecutive_failures failures in a row, naming the check and its last error, and then stops', () => {
    const m = new HealthCheckState({ ...T, gracePeriodMs: 0 }, 0, 0, 'HTTP GET http://127.0.0.1:1/bad');
    expect(check(m, 1000, fail)).toEqual([{ type: 'report', healthy: false, message: expect.any(String) }]);
    expect(check(m, 2010, fail)).toEqual([]);
    const third = check(m, 3020, { ok: false, error: 'HTTP status 503' });
    expect(third).toEqual([{ type: 'kill', message: 'killed: health check failed 3 times in a row (HTTP GET http://127.0.0.1:1/bad); last error: HTTP status 503' }]);
    expect(m.done).toBe(true);
    expect(m.wakeAtMs()).toBeUndefined();
    expect(m.tick(10_000)).toEqual([]);
  });

  it('a success resets the count of failures in a row', () => {
    const m = new HealthCheckState({ ...T, gracePeriodMs: 0 }, 0, 0, 'x');
    check(m, 1000, fail);
    check(m, 2010, fail);
    check(m, 3020, pass);
    expect(check(m, 4030, fail)).toEqual([{ type: 'report', healthy: false, message: expect.any(String) }]);
    expect(check(m, 5040, fail)).toEqual([]);
    expect(m.done).toBe(false);
    expect(check(m, 6050, fail)).toEqual([{ type: 'kill', message: expect.stringContaining('3 times in a row') }]);
  });

  it('reports unhealthy and kills at once when one failure is the limit', () => {
    const m = new HealthCheckState({ ...T, gracePeriodMs: 0, consecutiveFailures: 1 }, 0, 0, 'x');
    expect(check(m, 1000, fail).map((e) => e.type)).toEqual(['report', 'kill']);
  });

  it('never kills with consecutive_failures 0', () => {
    const m = new HealthCheckState({ ...T, gracePeriodMs: 0, consecutiveFailures: 0 }, 0, 0, 'x');
    let at = 1000;
    for (let i = 0; i < 10; i++) {
      for (const e of check(m, at, fail)) expect(e.type).toBe('report');
      at = m.wakeAtMs()!;
    }
    expect(m.consecutiveFailures).toBe(10);
    expect(m.done).toBe(false);
  });

  it('fails a check that runs past its timeout and ignores its late result', () => {
    const m = new HealthCheckState({ ...T, gracePeriodMs: 0 }, 0, 0, 'x');
    expect(m.tick(1000)).toEqual([{ type: 'run_check', checkId: 1 }]);
    expect(m.runningCheckId).toBe(1);
    expect(m.tick(1499)).toEqual([]);
    expect(m.tick(1500)).toEqual([{ type: 'report', healthy: false, message: 'health check failed: x: timed out after 0.5 s' }]);
    expect(m.runningCheckId).toBeUndefined();
    // The late answer of the abandoned check changes nothing.
    expect(m.result(1, pass, 1600)).toEqual([]);
    expect(m.healthy).toBe(false);
    expect(m.wakeAtMs()).toBe(2500);
    expect(m.tick(2500)).toEqual([{ type: 'run_check', checkId: 2 }]);
    expect(m.result(2, pass, 2600)).toEqual([{ type: 'report', healthy: true, message: expect.any(String) }]);
  });

  it('timeouts count towards the kill like any failure', () => {
    const m = new HealthCheckState({ ...T, gracePeriodMs: 0, consecutiveFailures: 2 }, 0, 0, 'x');
    m.tick(1000);
    expect(m.tick(1500).map((e) => e.type)).toEqual(['report']);
    m.tick(2500);
    const effects = m.tick(3000);
    expect(effects.map((e) => e.type)).toEqual(['kill']);
    expect((effects[0] as { message: string }).message).toContain('last error: timed out after 0.5 s');
  });

  it('a timeout inside the grace period is ignored like other failures', () => {
    const m = new HealthCheckState(T, 0, 0, 'x');
    m.tick(1000);
    expect(m.tick(1500)).toEqual([]);
    expect(m.consecutiveFailures).toBe(0);
  });

  it('counts the grace period from the task start, not from when checking started', () => {
    // A recovered task: started long ago, checking resumes now; its failures count at once.
    const m = new HealthCheckState(T, 0, 100_000, 'x');
    expect(m.wakeAtMs()).toBe(101_000);
    expect(check(m, 101_000, fail)).toEqual([{ type: 'report', healthy: false, message: expect.any(String) }]);
  });

  it('ignores results once stopped', () => {
    const m = new HealthCheckState({ ...T, gracePeriodMs: 0 }, 0, 0, 'x');
    m.tick(1000);
    m.stop();
    expect(m.result(1, fail, 1100)).toEqual([]);
    expect(m.tick(5000)).toEqual([]);
    expect(m.wakeAtMs()).toBeUndefined();
  });
});
