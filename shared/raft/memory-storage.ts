// RaftStorage held in memory: for tests and simulations. Mirrors what a disk store does:
// append (overwriting a conflicting suffix), hard state, snapshots, compaction. What it holds
// and how reads are served is held-log.ts, shared with the SQLite store.

import { bootstrapSnapshot, HeldLog } from './held-log.ts';
import type { ConfState, Entry, HardState, NodeId, Snapshot } from './types.ts';

export { bootstrapSnapshot, emptySnapshot } from './held-log.ts';

export class MemoryStorage extends HeldLog {
  /**
   * Makes a brand-new group member's first state: a snapshot at index 1, term 1 naming the
   * initial voters. Every founding member bootstraps the same; members added later start
   * empty and receive the group's snapshot from the leader.
   */
  bootstrap(voters: readonly NodeId[]): void {
    if (this.lastIndex() !== 0 || this.hard.term !== 0) throw new Error('bootstrap: storage is not empty');
    this.applySnapshot(bootstrapSnapshot(voters));
    this.hard = { term: 1, vote: 0, commit: 1 };
  }

  setHardState(hs: HardState): void {
    this.hard = hs;
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
    this.replaceTail(first + skip - this.baseIndex - 1, entries.slice(skip));
  }

  /** Replaces everything with a snapshot received from the leader. */
  applySnapshot(snapshot: Snapshot): void {
    if (snapshot.metadata.index < this.snap.metadata.index) return;
    this.snap = snapshot;
    this.restartAfter(snapshot.metadata.index, snapshot.metadata.term);
  }

  /** Records a snapshot the application took of its state at `index` (see HeldLog.snapshotAt). */
  createSnapshot(index: number, confState: ConfState, data: Uint8Array): Snapshot {
    this.snap = this.snapshotAt(index, confState, data) ?? this.snap;
    return this.snap;
  }

  /** Drops entries up to and including `index`, which a snapshot must cover. */
  compact(index: number): void {
    const term = this.compactionTerm(index);
    if (term !== undefined) this.dropUpTo(index, term);
  }

  /** A copy sharing the (immutable) entries: a simulated disk's durable image. */
  clone(): MemoryStorage {
    const c = new MemoryStorage();
    c.hard = this.hard;
    c.snap = this.snap;
    c.restartAfter(this.baseIndex, this.baseTerm);
    c.replaceTail(0, this.log);
    return c;
  }
}
