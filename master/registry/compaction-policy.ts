// When a command log (the single master's registry log, a master's Raft log) is folded into a
// snapshot of the state it produced. What the store holds is the last snapshot plus the log
// since; both are measured in bytes, because a few large objects (apps with a big
// environment) weigh more than many small commands. Two triggers:
// - the log outgrew the snapshot (or a count of commands): write a new snapshot, so the
//   store stays within about twice the state (Redis rewrites its append-only file on the
//   same rule: once the file doubled since the last rewrite, above a floor);
// - deletions: a log of small "remove" commands never outgrows a large snapshot, yet the
//   state it produces may be small. Every so often, when the log grew, the state is
//   measured; when a snapshot of it would at least halve the store, it is written. The
//   measuring costs a serialization of the state, so it runs at most every `checkEveryMs`,
//   stretched to keep it under 1% of the time however large the state is.
// Pure: the callers own the clock and the timers.

export interface LogSize {
  /** Commands (entries) in the log since the snapshot. */
  entries: number;
  /** Their bytes. */
  bytes: number;
  /** The snapshot's bytes (0 when there is none). */
  snapshotBytes: number;
}

export interface CompactionLimits {
  /** Commands since the snapshot that call for a new one whatever their size. */
  maxEntries: number;
  /** The log is not folded for its size alone below this many bytes. */
  minLogBytes: number;
  /** How often, at least this far apart, the state is measured for deletions. */
  checkEveryMs: number;
}

export const DEFAULT_COMPACTION: CompactionLimits = {
  maxEntries: 20_000,
  minLogBytes: 64 * 1024 * 1024,
  checkEveryMs: 60_000,
};

/** What a store may keep beyond twice the state before a measured snapshot is written. */
export const SHRINK_SLACK_BYTES = 1024 * 1024;

/** The measuring may take at most this share of the time. */
const MEASURE_SHARE = 0.01;

/** Whether the log outgrew its snapshot: fold it now. */
export function logOutgrown(size: LogSize, limits: CompactionLimits): boolean {
  return size.entries >= limits.maxEntries || size.bytes >= Math.max(limits.minLogBytes, size.snapshotBytes);
}

/** Whether writing a snapshot of `stateBytes` (measured) would at least halve the store. */
export function snapshotShrinks(size: LogSize, stateBytes: number): boolean {
  return size.entries > 0 && size.snapshotBytes + size.bytes > 2 * stateBytes + SHRINK_SLACK_BYTES;
}

/** Paces the measuring of the state for deletions. */
export class ShrinkPacer {
  private nextAtMs: number;

  constructor(
    private readonly everyMs: number,
    nowMs: number,
  ) {
    this.nextAtMs = nowMs + everyMs;
  }

  /** Whether to measure now: it is time, and the log holds enough to be worth folding. */
  due(nowMs: number, size: LogSize): boolean {
    return nowMs >= this.nextAtMs && size.entries > 0 && size.snapshotBytes + size.bytes > SHRINK_SLACK_BYTES;
  }

  /** A measuring that took `costMs` just ended (or a snapshot was written): the next is this far off. */
  measured(nowMs: number, costMs: number): void {
    this.nextAtMs = nowMs + Math.max(this.everyMs, costMs / MEASURE_SHARE);
  }
}
