// How long the objects a framework queues (a job's gang, a trial) wait to be placed, for the
// master's /metrics: the framework says, for each record of its store, whether it waits and
// since when, or when it was placed; this follows the store's changes and counts each wait
// into a histogram as it ends. The store's change events reach every master, so every master
// counts the same waits (from its own start); a wait that ends without a placement (the
// object removed, or failed while queued) is not counted. A record may be placed in the same
// write that made it (never seen waiting): its own queued time then says when it began.

import { Histogram, QUEUE_WAIT_BUCKETS_S, type HistogramSnapshot } from '../prometheus.ts';
import type { FrameworkStore, JsonValue } from './store.ts';

/** A record's place in the queue: waiting since a time, placed at one (queued at another), or neither. */
export type QueueStatus = { waitingSinceMs: number } | { placedAtMs: number; queuedAtMs: number } | undefined;

export class QueueWaits {
  /** What waits now, by store key, and since when. */
  private readonly since = new Map<string, number>();
  /** The placement last counted for each placed record: a rewrite of a placed record counts nothing. */
  private readonly placed = new Map<string, number>();
  private readonly seconds = new Histogram(QUEUE_WAIT_BUCKETS_S);

  /** The record under `key` as it stood before this began following: nothing is counted for it. */
  seed(key: string, status: QueueStatus): void {
    if (status !== undefined && 'waitingSinceMs' in status) this.since.set(key, status.waitingSinceMs);
    else if (status !== undefined) this.placed.set(key, status.placedAtMs);
  }

  /** The record under `key` is now in `status` (undefined too when it is gone). */
  update(key: string, status: QueueStatus): void {
    const was = this.since.get(key);
    if (status !== undefined && 'waitingSinceMs' in status) {
      this.since.set(key, status.waitingSinceMs);
      this.placed.delete(key);
      return;
    }
    this.since.delete(key);
    if (status === undefined) {
      this.placed.delete(key);
      return;
    }
    if (this.placed.get(key) === status.placedAtMs) return;
    this.placed.set(key, status.placedAtMs);
    // Seen waiting: since then; placed in the write that made it: since its own queued time.
    const from = was ?? status.queuedAtMs;
    if (status.placedAtMs >= from) this.seconds.observe((status.placedAtMs - from) / 1000);
  }

  /** How many wait now. */
  get depth(): number {
    return this.since.size;
  }

  /** How long the one waiting longest has waited at `nowMs`, in seconds; 0 when none waits. */
  oldestSeconds(nowMs: number): number {
    let oldest = Infinity;
    for (const s of this.since.values()) oldest = Math.min(oldest, s);
    return oldest === Infinity ? 0 : Math.max(0, (nowMs - oldest) / 1000);
  }

  /** The waits that ended in a placement, since this master started. */
  histogram(): HistogramSnapshot {
    return this.seconds.snapshot();
  }
}

/**
 * A QueueWaits following the records under `prefix` in `store`: those waiting now are taken
 * as they stand, then every durable change to one of them is read.
 */
export function followQueue<T>(store: FrameworkStore, prefix: string, statusOf: (value: T) => QueueStatus): QueueWaits {
  const waits = new QueueWaits();
  for (const [key, value] of store.entries<JsonValue>(prefix)) waits.seed(key, statusOf(value as unknown as T));
  store.onChange((keys) => {
    for (const key of keys) {
      if (!key.startsWith(prefix)) continue;
      const v = store.get<JsonValue>(key) as unknown as T | undefined;
      waits.update(key, v === undefined ? undefined : statusOf(v));
    }
  });
  return waits;
}
