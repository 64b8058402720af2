// The shell around one task's HealthCheckState: a timer set to the machine's next wake-up,
// the running check (aborted when the machine says it took too long), and the effects
// handed on (reports, the kill). A check's error ends up as a failed result; nothing a check
// does can throw into the agent.

import type { Logger } from 'pino';
import { HealthCheckState, type HealthEffect, type HealthTimings } from './health-state.ts';
import type { ProbeOutcome } from './probes.ts';
import { steadyClock } from '../../shared/steady-clock.ts';

export interface TaskHealthCheckOptions {
  timings: HealthTimings;
  taskStartedAtMs: number;
  /** The check in words, for messages. */
  what: string;
  /** Runs one check; aborted when it times out or checking stops. */
  probe: (signal: AbortSignal) => Promise<ProbeOutcome>;
  onReport: (healthy: boolean, message: string) => void;
  onKill: (message: string) => void;
  now?: () => number;
  logger?: Logger;
}

export class TaskHealthCheck {
  private readonly machine: HealthCheckState;
  private readonly now: () => number;
  private timer: NodeJS.Timeout | undefined;
  private running: { checkId: number; controller: AbortController } | undefined;
  private stopped = false;

  constructor(private readonly opts: TaskHealthCheckOptions) {
    // Steady, as in health-checks.ts.
    this.now = opts.now ?? steadyClock();
    this.machine = new HealthCheckState(opts.timings, opts.taskStartedAtMs, this.now(), opts.what);
  }

  start(): void {
    this.arm();
  }

  /** Stops checking: the timer is cleared and a running check aborted. */
  stop(): void {
    this.stopped = true;
    this.machine.stop();
    clearTimeout(this.timer);
    this.timer = undefined;
    this.abortRunning('checking stopped');
  }

  get healthy(): boolean | undefined {
    return this.machine.healthy;
  }

  private arm(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    const at = this.machine.wakeAtMs();
    if (at === undefined || this.stopped) return;
    this.timer = setTimeout(() => this.step(), Math.max(0, at - this.now()));
    // Checks never keep a stopping agent alive.
    this.timer.unref();
  }

  private step(): void {
    this.timer = undefined;
    if (this.stopped) return;
    this.apply(this.machine.tick(this.now()));
  }

  private apply(effects: HealthEffect[]): void {
    // A check the machine has given up on (timed out) is stopped before anything else.
    if (this.running && this.machine.runningCheckId !== this.running.checkId) this.abortRunning(`timed out after ${this.opts.timings.timeoutMs} ms`);
    for (const e of effects) {
      try {
        if (e.type === 'run_check') this.run(e.checkId);
        else if (e.type === 'report') this.opts.onReport(e.healthy, e.message);
        else {
          this.abortRunning('the task is being killed');
          this.opts.onKill(e.message);
        }
      } catch (err) {
        this.opts.logger?.error({ err: (err as Error).message, effect: e.type }, 'health check effect failed');
      }
    }
    this.arm();
  }

  private run(checkId: number): void {
    const controller = new AbortController();
    this.running = { checkId, controller };
    let result: Promise<ProbeOutcome>;
    try {
      result = this.opts.probe(controller.signal);
    } catch (err) {
      result = Promise.resolve({ ok: false, error: (err as Error).message });
    }
    result
      .catch((err: unknown): ProbeOutcome => ({ ok: false, error: (err as Error)?.message ?? String(err) }))
      .then((outcome) => {
        if (this.running?.checkId === checkId) this.running = undefined;
        if (this.stopped) return;
        this.apply(this.machine.result(checkId, outcome, this.now()));
      })
      .catch((err: unknown) => this.opts.logger?.error({ err: (err as Error)?.message }, 'health check result not handled'));
  }

  private abortRunning(why: string): void {
    const r = this.running;
    if (!r) return;
    this.running = undefined;
    r.controller.abort(new Error(why));
  }
}
