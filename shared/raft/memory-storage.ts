// RaftStorage held in memory: for tests, simulations, and as the in-memory half of a
// durable store. Mirrors what a disk store does: append (overwriting a conflicting
// suffix), hard state, snapshots, compaction.

import { CairnError } from '../errors.ts';
import { limitBySize, type RaftStorage } from './storage.ts';
import {
  EMPTY_BYTES, EMPTY_HARD_STATE, entrySize,
  type ConfState, type Entry, type HardState, type NodeId, type Snapshot,
} from './types.ts';

export class MemoryStorage implements RaftStorage {
  hardState: HardState = EMPTY_HARD_STATE;
  private snap: Snapshot = emptySnapshot();
  // The log held: `log[0]` has index baseIndex + 1. (baseIndex, baseTerm) is the entry just
  // before, known only by its term: the last compacted one, covered by the snapshot.
  private baseIndex = 0;
  private baseTerm = 0;
  private log: Entry[] = [];

  /**
   * Makes a brand-new group member's first state: a snapshot at index 1, term 1 naming the
   * initial voters. Every founding member bootstraps the same; members added later start
   * empty and receive the group's snapshot from the leader.
   */
  bootstrap(voters: readonly NodeId[]): void {
    if (this.lastIndex() !== 0 || this.hardState.term !== 0) throw new Error('bootstrap: storage is not empty');
    this.applySnapshot(bootstrapSnapshot(voters));
    this.hardState = { term: 1, vote: 0, commit: 1 };
  }

  initialState(): { hardState: HardState; confState: ConfState } {
    return { hardState: this.hardState, confState: this.snap.metadata.confState };
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
    return limitBySize(this.log.slice(lo - this.baseIndex - 1, hi - this.baseIndex - 1), maxBytes, entrySize);
  }

  snapshot(): Snapshot {
    return this.snap;
  }

  setHardState(hs: HardState): void {
    this.hardState = hs;
  }

  /** Appends entries, first dropping any held entries at or after the first new index. */
  append(entries: readonly Entry[]): void {
    if (entries.length === 0) return;
    const first = entries[0].index;
    if (first > this.lastIndex() + 1) {
      throw new Error(`append: gap between last index ${this.lastIndex()} and ${first}`);
    }
    // Entries at or below the base are covered by the snapshot already.
    const skip = Math.max(0, this.baseIndex + 1 - first);
    if (skip >= entries.length) return;
    const keep = first + skip - this.baseIndex - 1;
    this.log = this.log.slice(0, keep).concat(entries.slice(skip));
  }

  /** Replaces everything with a snapshot received from the leader. */
  applySnapshot(snapshot: Snapshot): void {
    if (snapshot.metadata.index < this.snap.metadata.index) return;
    this.snap = snapshot;
    this.baseIndex = snapshot.metadata.index;
    this.baseTerm = snapshot.metadata.term;
    this.log = [];
  }

  /**
   * Records a snapshot the application took of its state at `index` (at most its applied
   * index). The log is left whole; compact() drops entries separately, so a few can be kept
   * for followers that are only a little behind.
   */
  createSnapshot(index: number, confState: ConfState, data: Uint8Array): Snapshot {
    if (index <= this.snap.metadata.index) return this.snap;
    const term = this.term(index);
    if (term === undefined) throw new Error(`createSnapshot: index ${index} is not in the log`);
    this.snap = { metadata: { index, term, confState }, data };
    return this.snap;
  }

  /** Drops entries up to and including `index`, which a snapshot must cover. */
  compact(index: number): void {
    if (index <= this.baseIndex) return;
    if (index > this.snap.metadata.index) {
      throw new CairnError('CAIRN_INTERNAL', `compact(${index}) beyond the snapshot at ${this.snap.metadata.index}`);
    }
    const term = this.term(index);
    if (term === undefined) throw new Error(`compact: index ${index} is not in the log`);
    this.log = this.log.slice(index - this.baseIndex);
    this.baseIndex = index;
    this.baseTerm = term;
  }

  /** A copy sharing the (immutable) entries: a simulated disk's durable image. */
  clone(): MemoryStorage {
    const c = new MemoryStorage();
    c.hardState = this.hardState;
    c.snap = this.snap;
    c.baseIndex = this.baseIndex;
    c.baseTerm = this.baseTerm;
    c.log = this.log.slice();
    return c;
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
