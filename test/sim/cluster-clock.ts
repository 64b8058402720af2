// The whole-cluster simulator's clock: one queue of timed callbacks, run in order of
// (time, insertion). Message deliveries, timers of simulated agents and frameworks, Raft
// ticks and the leader core's wake-ups are all entries here, so one seed gives one history.

export class SimClock {
  nowMs = 0;
  private readonly queue: { atMs: number; seq: number; fn: () => void }[] = [];
  private seq = 0;

  /** Runs `fn` at `atMs` (not before now). */
  at(atMs: number, fn: () => void): void {
    const e = { atMs: Math.max(atMs, this.nowMs), seq: this.seq++, fn };
    // Binary search for the insertion point keeps the queue sorted by (atMs, seq).
    let lo = 0;
    let hi = this.queue.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      const q = this.queue[mid];
      if (q.atMs < e.atMs || (q.atMs === e.atMs && q.seq < e.seq)) lo = mid + 1;
      else hi = mid;
    }
    this.queue.splice(lo, 0, e);
  }

  after(ms: number, fn: () => void): void {
    this.at(this.nowMs + ms, fn);
  }

  /** Runs the next callback due at or before `untilMs`; false when none is. */
  runNext(untilMs: number): boolean {
    const e = this.queue[0];
    if (!e || e.atMs > untilMs) {
      this.nowMs = Math.max(this.nowMs, untilMs);
      return false;
    }
    this.queue.shift();
    this.nowMs = e.atMs;
    e.fn();
    return true;
  }

  get pending(): number {
    return this.queue.length;
  }
}

/** Where simulated wall clocks start: a real date (2023-11-14), so that no step takes one below the epoch. */
export const SIM_EPOCH_MS = 1_700_000_000_000;

/**
 * A simulated host's wall clock: an epoch time that runs with the simulated (monotonic) time,
 * plus an offset that clock-step faults move by hours, either way.
 */
export class SimWallClock {
  /** The step in effect (0: the true time). */
  offsetMs = 0;

  constructor(private readonly clock: SimClock) {}

  nowMs(): number {
    return SIM_EPOCH_MS + this.clock.nowMs + this.offsetMs;
  }
}
