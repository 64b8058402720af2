// What both Raft storages hold in memory and serve the core's reads from: the hard state,
// the latest snapshot and the log entries after the last compacted one. MemoryStorage
// (memory-storage.ts) is only this; SqliteRaftStorage (sqlite-storage.ts) mirrors its
// tables here, so reads cost no disk access, and moves this only once a write is durable.
// Subclasses decide when the held state moves; the helpers here say how.

import { CairnError } from '../errors.ts';
import type { RaftStorage } from './storage.ts';
import {
  EMPTY_BYTES, EMPTY_HARD_STATE, entrySize,
  type ConfState, type Entry, type HardState, type NodeId, type Snapshot,
} from './types.ts';

export abstract class HeldLog implements RaftStorage {
  protected hard: HardState = EMPTY_HARD_STATE;
  protected snap: Snapshot = emptySnapshot();
  // The log held: log[i] is entry baseIndex + 1 + i. (baseIndex, baseTerm) is the entry
  // just before, known only by its term: the last compacted one, covered by the snapshot.
  protected baseIndex = 0;
  protected baseTerm = 0;
  protected log: Entry[] = [];

  initialState(): { hardState: HardState; confState: ConfState } {
    return { hardState: this.hard, confState: this.snap.metadata.confState };
  }

  firstIndex(): number {
    return this.baseIndex + 1;
  }

  lastIndex(): number {
    return this.baseIndex + this.log.length;
  }

  term(index: number): number | undefined {
    if (index === this.baseIndex) return this.baseTerm;
    if (index < this.baseIndex || index > this.lastIndex()) return undefined;
    return this.log[index - this.baseIndex - 1].term;
  }

  entries(lo: number, hi: number, maxBytes: number): Entry[] | undefined {
    if (lo <= this.baseIndex) return undefined;
    if (hi > this.lastIndex() + 1) throw new Error(`entries(${lo}, ${hi}) beyond last index ${this.lastIndex()}`);
    // As many as fit in maxBytes, at least one; stopping early, as a follower far behind asks
    // for everything up to the last index.
    const out: Entry[] = [];
    let size = 0;
    for (let i = lo; i < hi; i++) {
      const e = this.log[i - this.baseIndex - 1];
      size += entrySize(e);
      if (out.length > 0 && size > maxBytes) break;
      out.push(e);
    }
    return out;
  }

  snapshot(): Snapshot {
    return this.snap;
  }

  /**
   * The snapshot the application took of its state at `index` (at most its applied index);
   * undefined when the held snapshot is already as recent. The log is left whole: compact()
   * drops entries separately, so a few can be kept for followers only a little behind.
   */
  protected snapshotAt(index: number, confState: ConfState, data: Uint8Array): Snapshot | undefined {
    if (index <= this.snap.metadata.index) return undefined;
    const term = this.term(index);
    if (term === undefined) throw new CairnError('CAIRN_INTERNAL', `createSnapshot: index ${index} is not in the log`);
    return { metadata: { index, term, confState }, data };
  }

  /**
   * The term of entry `index` when compacting up to it (which the snapshot must cover) drops
   * something; undefined when nothing is held at or below it.
   */
  protected compactionTerm(index: number): number | undefined {
    if (index <= this.baseIndex) return undefined;
    if (index > this.snap.metadata.index) {
      throw new CairnError('CAIRN_INTERNAL', `compact(${index}) beyond the snapshot at ${this.snap.metadata.index}`);
    }
    const term = this.term(index);
    if (term === undefined) throw new CairnError('CAIRN_INTERNAL', `compact: index ${index} is not in the log`);
    return term;
  }

  /** Drops the held entries up to and including `index`, whose term is `term`. */
  protected dropUpTo(index: number, term: number): void {
    this.log = this.log.slice(index - this.baseIndex);
    this.baseIndex = index;
    this.baseTerm = term;
  }

  /** Empties the log: it starts again just after (index, term), a snapshot's last entry. */
  protected restartAfter(index: number, term: number): void {
    this.baseIndex = index;
    this.baseTerm = term;
    this.log = [];
  }

  /** Keeps the first `keep` held entries and appends `entries` after them. */
  protected replaceTail(keep: number, entries: readonly Entry[]): void {
    if (keep < this.log.length) this.log.length = keep;
    for (const e of entries) this.log.push(e);
  }
}

export function emptySnapshot(): Snapshot {
  return { metadata: { index: 0, term: 0, confState: { voters: [], learners: [] } }, data: EMPTY_BYTES };
}

export function bootstrapSnapshot(voters: readonly NodeId[]): Snapshot {
  if (voters.length === 0) throw new CairnError('CAIRN_BAD_REQUEST', 'a group needs at least one voter', 'voters');
  return {
    metadata: { index: 1, term: 1, confState: { voters: [...voters].sort((a, b) => a - b), learners: [] } },
    data: EMPTY_BYTES,
  };
}
