// What the core reads from durable storage. The core never writes it: it hands the shell
// what to persist (Ready) and the shell writes it, so the same core runs over SQLite in a
// master and over memory in tests and simulations.

import type { ConfState, Entry, HardState, Snapshot } from './types.ts';

export interface RaftStorage {
  /** The hard state, and the membership as of the stored snapshot. */
  initialState(): { hardState: HardState; confState: ConfState };
  /**
   * Entries with index in [lo, hi), as many as fit in `maxBytes` but at least one.
   * Undefined if `lo` has been compacted away. Asking beyond lastIndex() is a bug.
   */
  entries(lo: number, hi: number, maxBytes: number): Entry[] | undefined;
  /**
   * The term of entry `index`; for firstIndex() - 1, the snapshot's term. Undefined when
   * compacted or not (yet) in the log.
   */
  term(index: number): number | undefined;
  /** Index of the first entry still held (one past the snapshot). */
  firstIndex(): number;
  /** Index of the last entry held; firstIndex() - 1 when there are none. */
  lastIndex(): number;
  /** The latest snapshot; index 0 when there has never been one. */
  snapshot(): Snapshot;
}

/** Total payload bytes of a run of entries, for batching limits. */
export function limitBySize(entries: Entry[], maxBytes: number, sizeOf: (e: Entry) => number): Entry[] {
  if (entries.length === 0) return entries;
  let size = sizeOf(entries[0]);
  let n = 1;
  while (n < entries.length) {
    size += sizeOf(entries[n]);
    if (size > maxBytes) break;
    n++;
  }
  return n === entries.length ? entries : entries.slice(0, n);
}
