// One task's health check as a pure state machine: it decides when a check runs, when one
// has taken too long, what a result means (grace period, consecutive failures), when the
// framework hears of it and when the task is killed. Time comes in as arguments; the shell
// (checker.ts) runs the checks and keeps the timer at `wakeAtMs()`.
//
// Mesos' rules (health_checker.cpp, the command executor):
//   - the first check runs `delay` after checking starts; each next one `interval` after
//     the previous one ended;
//   - a check still running after `timeout` has failed (its late result is ignored);
//   - a failure inside the grace period (counted from the task's start) is ignored as long
//     as no check has succeeded yet: a slow start is not a sick task;
//   - every change of the result, the first one included, is reported;
//   - `consecutiveFailures` failures in a row kill the task (0: never).

export interface HealthTimings {
  delayMs: number;
  intervalMs: number;
  timeoutMs: number;
  gracePeriodMs: number;
  consecutiveFailures: number;
}

export type HealthEffect =
  /** Start check number `checkId`; its result comes back through `result(checkId, ...)`. */
  | { type: 'run_check'; checkId: number }
  /** Tell the framework the task's health (TASK_RUNNING with `healthy`). */
  | { type: 'report'; healthy: boolean; message: string }
  /** Kill the task: it failed too many checks in a row. Nothing follows. */
  | { type: 'kill'; message: string };

type Phase =
  | { kind: 'waiting'; nextCheckAtMs: number }
  | { kind: 'checking'; checkId: number; deadlineMs: number }
  | { kind: 'done' };

export class HealthCheckState {
  private phase: Phase;
  private lastCheckId = 0;
  private succeededOnce = false;
  private failuresInRow = 0;
  /** What the framework was last told; undefined before the first report. */
  private reported: boolean | undefined;
  private lastError = '';

  /**
   * `taskStartedAtMs`: when the task started (the grace period counts from it);
   * `nowMs`: when checking starts (the delay counts from it).
   */
  constructor(
    private readonly timings: HealthTimings,
    private readonly taskStartedAtMs: number,
    nowMs: number,
    /** Names the check in messages, e.g. `HTTP GET http://127.0.0.1:31000/health`. */
    private readonly what: string,
  ) {
    this.phase = { kind: 'waiting', nextCheckAtMs: nowMs + timings.delayMs };
  }

  /** When `tick` next has something to do; undefined once the machine is done. */
  wakeAtMs(): number | undefined {
    switch (this.phase.kind) {
      case 'waiting':
        return this.phase.nextCheckAtMs;
      case 'checking':
        return this.phase.deadlineMs;
      default:
        return undefined;
    }
  }

  get healthy(): boolean | undefined {
    return this.reported;
  }

  get consecutiveFailures(): number {
    return this.failuresInRow;
  }

  /** The check the machine waits for; undefined between checks. */
  get runningCheckId(): number | undefined {
    return this.phase.kind === 'checking' ? this.phase.checkId : undefined;
  }

  get done(): boolean {
    return this.phase.kind === 'done';
  }

  /** Starts a check that is due, or fails the one that has run past its timeout. */
  tick(nowMs: number): HealthEffect[] {
    const p = this.phase;
    if (p.kind === 'waiting' && nowMs >= p.nextCheckAtMs) {
      const checkId = ++this.lastCheckId;
      this.phase = { kind: 'checking', checkId, deadlineMs: nowMs + this.timings.timeoutMs };
      return [{ type: 'run_check', checkId }];
    }
    if (p.kind === 'checking' && nowMs >= p.deadlineMs) {
      return this.failed(`timed out after ${formatSeconds(this.timings.timeoutMs)}`, nowMs);
    }
    return [];
  }

  /** The outcome of check `checkId`; one that is not the running check (late, timed out) is ignored. */
  result(checkId: number, outcome: { ok: true } | { ok: false; error: string }, nowMs: number): HealthEffect[] {
    const p = this.phase;
    if (p.kind !== 'checking' || p.checkId !== checkId) return [];
    if (!outcome.ok) return this.failed(outcome.error, nowMs);
    this.succeededOnce = true;
    this.failuresInRow = 0;
    this.lastError = '';
    this.phase = { kind: 'waiting', nextCheckAtMs: nowMs + this.timings.intervalMs };
    if (this.reported === true) return [];
    this.reported = true;
    return [{ type: 'report', healthy: true, message: `health check passed: ${this.what}` }];
  }

  /** The task ended or the agent stops: nothing more is decided. */
  stop(): void {
    this.phase = { kind: 'done' };
  }

  private failed(error: string, nowMs: number): HealthEffect[] {
    this.lastError = error;
    this.phase = { kind: 'waiting', nextCheckAtMs: nowMs + this.timings.intervalMs };
    if (!this.succeededOnce && nowMs - this.taskStartedAtMs < this.timings.gracePeriodMs) return [];
    this.failuresInRow++;
    const effects: HealthEffect[] = [];
    if (this.reported !== false) {
      this.reported = false;
      effects.push({ type: 'report', healthy: false, message: `health check failed: ${this.what}: ${error}` });
    }
    const limit = this.timings.consecutiveFailures;
    if (limit > 0 && this.failuresInRow >= limit) {
      this.phase = { kind: 'done' };
      const times = this.failuresInRow === 1 ? 'once' : `${this.failuresInRow} times in a row`;
      effects.push({ type: 'kill', message: `killed: health check failed ${times} (${this.what}); last error: ${this.lastError}` });
    }
    return effects;
  }
}

function formatSeconds(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000} s` : `${(ms / 1000).toFixed(3).replace(/0+$/, '')} s`;
}
