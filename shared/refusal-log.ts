// Refusals an outsider can cause at will (a connection flood, handshakes that never finish)
// must not become a log flood: each reason is logged at most once per interval, and the line
// that is written says how many of that reason went unlogged since the last one. Every refusal
// is still counted, for metrics.

import type { Logger } from './logger.ts';
import { monotonicMs, type Clock } from './steady-clock.ts';

/** How often one reason is logged at most. */
export const REFUSAL_LOG_INTERVAL_MS = 10_000;

interface Reason {
  lastLoggedMs: number;
  unlogged: number;
}

export class RefusalLog {
  private readonly reasons = new Map<string, Reason>();
  /** Every refusal, logged or not, by reason. */
  readonly counts = new Map<string, number>();

  constructor(
    private readonly log: Logger,
    private readonly message: string,
    private readonly intervalMs = REFUSAL_LOG_INTERVAL_MS,
    private readonly now: Clock = monotonicMs,
  ) {}

  /** One refusal of `reason` (a short, fixed phrase); `fields` describe this one (remote address...). */
  refused(reason: string, fields: Record<string, unknown> = {}): void {
    this.counts.set(reason, (this.counts.get(reason) ?? 0) + 1);
    const now = this.now();
    const r = this.reasons.get(reason);
    if (r !== undefined && now - r.lastLoggedMs < this.intervalMs) {
      r.unlogged++;
      return;
    }
    this.log.warn({ ...fields, reason, unloggedSinceLast: r?.unlogged ?? 0 }, this.message);
    this.reasons.set(reason, { lastLoggedMs: now, unlogged: 0 });
  }

  /** Refusals of every reason so far. */
  get total(): number {
    let n = 0;
    for (const c of this.counts.values()) n += c;
    return n;
  }
}
