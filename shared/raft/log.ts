// A node's Raft log: what storage holds durably, plus an unstable tail (entries and
// perhaps a snapshot) the core has accepted but the shell has not yet persisted. Also the
// commit and apply cursors. Everything the core knows about "the log" goes through here.
//
// Cursors, in order: applied ≤ applying ≤ committed ≤ lastIndex. `applying` is what was
// handed out in a Ready and not yet acknowledged by advance().

import type { RaftStorage } from './storage.ts';
import { limitBySize } from './storage.ts';
import { entrySize, type Entry, type Snapshot } from './types.ts';

/** Entries and maybe a snapshot not yet on disk. */
class Unstable {
  snapshot: Snapshot | undefined;
  entries: Entry[] = [];
  /** Index of entries[0]. */
  offset: number;
  /** Entries with index < handedOut were given to the shell in a Ready already. */
  handedOut: number;
  snapshotHandedOut = false;

  constructor(offset: number) {
    this.offset = offset;
    this.handedOut = offset;
  }

  firstIndex(): number | undefined {
    return this.snapshot ? this.snapshot.metadata.index + 1 : undefined;
  }

  lastIndex(): number | undefined {
    if (this.entries.length > 0) return this.offset + this.entries.length - 1;
    return this.snapshot ? this.snapshot.metadata.index : undefined;
  }

  term(index: number): number | undefined {
    if (index < this.offset) {
      if (this.snapshot && this.snapshot.metadata.index === index) return this.snapshot.metadata.term;
      return undefined;
    }
    const last = this.lastIndex();
    if (last === undefined || index > last) return undefined;
    return this.entries[index - this.offset].term;
  }

  /** Entries up to (index, term) are now durable. A term mismatch means they were replaced since. */
  stableTo(index: number, term: number): void {
    if (index < this.offset) return;
    const t = this.term(index);
    if (t !== term) return;
    this.entries = this.entries.slice(index + 1 - this.offset);
    this.offset = index + 1;
    this.handedOut = Math.max(this.handedOut, this.offset);
  }

  stableSnapshotTo(index: number): void {
    if (this.snapshot && this.snapshot.metadata.index === index) {
      this.snapshot = undefined;
      this.snapshotHandedOut = false;
    }
  }

  restore(snapshot: Snapshot): void {
    this.offset = snapshot.metadata.index + 1;
    this.handedOut = this.offset;
    this.entries = [];
    this.snapshot = snapshot;
    this.snapshotHandedOut = false;
  }

  truncateAndAppend(entries: readonly Entry[]): void {
    const from = entries[0].index;
    if (from === this.offset + this.entries.length) {
      this.entries.push(...entries);
    } else if (from <= this.offset) {
      // Replaces the whole unstable tail; the shell overwrites from `from` when it persists.
      this.offset = from;
      this.entries = entries.slice();
    } else {
      this.entries = this.entries.slice(0, from - this.offset).concat(entries);
    }
    this.handedOut = Math.min(this.handedOut, from);
  }

  slice(lo: number, hi: number): Entry[] {
    return this.entries.slice(lo - this.offset, hi - this.offset);
  }
}

export class RaftLog {
  readonly storage: RaftStorage;
  private readonly unstable: Unstable;
  committed: number;
  applying: number;
  applied: number;

  constructor(storage: RaftStorage) {
    this.storage = storage;
    this.unstable = new Unstable(storage.lastIndex() + 1);
    // The application restarts from the stored snapshot, which may be ahead of the first
    // entry kept (a few are kept behind it for slow followers): everything up to it is
    // applied by definition.
    const base = Math.max(storage.firstIndex() - 1, storage.snapshot().metadata.index);
    this.committed = base;
    this.applying = base;
    this.applied = base;
  }

  firstIndex(): number {
    return this.unstable.firstIndex() ?? this.storage.firstIndex();
  }

  lastIndex(): number {
    return this.unstable.lastIndex() ?? this.storage.lastIndex();
  }

  lastTerm(): number {
    const t = this.term(this.lastIndex());
    if (t === undefined) throw new Error('raft log: no term for the last index');
    return t;
  }

  /** Term of entry `index`, or undefined if compacted or beyond the end. */
  term(index: number): number | undefined {
    const first = this.firstIndex();
    if (index < first - 1 || index > this.lastIndex()) return undefined;
    const t = this.unstable.term(index);
    if (t !== undefined) return t;
    return this.storage.term(index);
  }

  matchTerm(index: number, term: number): boolean {
    return this.term(index) === term;
  }

  /** Whether a log ending at (lastIndex, lastTerm) is at least as up to date as this one (§5.4.1). */
  isUpToDate(lastIndex: number, lastTerm: number): boolean {
    const myTerm = this.lastTerm();
    return lastTerm > myTerm || (lastTerm === myTerm && lastIndex >= this.lastIndex());
  }

  /**
   * A follower's append: if the log matches at (prevIndex, prevTerm), takes the entries
   * (dropping a conflicting suffix, never committed entries) and moves commit up to
   * min(commit, last new index). Returns the last new index, or undefined on mismatch.
   */
  maybeAppend(prevIndex: number, prevTerm: number, commit: number, entries: readonly Entry[]): number | undefined {
    if (!this.matchTerm(prevIndex, prevTerm)) return undefined;
    const lastNew = prevIndex + entries.length;
    const conflict = this.findConflict(entries);
    if (conflict !== 0) {
      if (conflict <= this.committed) {
        throw new Error(`raft log: entry ${conflict} conflicts with committed entry (committed ${this.committed})`);
      }
      this.append(entries.slice(conflict - entries[0].index));
    }
    this.commitTo(Math.min(commit, lastNew));
    return lastNew;
  }

  /** Leader's own append (or a follower's after conflict resolution). Returns the new last index. */
  append(entries: readonly Entry[]): number {
    if (entries.length === 0) return this.lastIndex();
    if (entries[0].index - 1 < this.committed) {
      throw new Error(`raft log: append at ${entries[0].index} would overwrite committed ${this.committed}`);
    }
    this.unstable.truncateAndAppend(entries);
    return this.lastIndex();
  }

  /**
   * The index of the first entry in `entries` that is not already in the log with the
   * same term, or 0 if all are. Entries past the end count as conflicts (they are new).
   */
  findConflict(entries: readonly Entry[]): number {
    for (const e of entries) {
      if (!this.matchTerm(e.index, e.term)) return e.index;
    }
    return 0;
  }

  /**
   * The largest index ≤ `index` whose term is ≤ `term`, with that term: where a log whose
   * entry at `index` has term `term` could last match this one. Compacted ranges stop the
   * search at the first held index.
   */
  findConflictByTerm(index: number, term: number): { index: number; term: number } {
    let i = Math.min(index, this.lastIndex());
    for (;;) {
      const t = this.term(i);
      if (t === undefined) return { index: i, term: 0 };
      if (t <= term) return { index: i, term: t };
      i--;
    }
  }

  /** Entries not yet handed to the shell for persisting. */
  takeUnstableEntries(): Entry[] {
    const lo = Math.max(this.unstable.handedOut, this.unstable.offset);
    const hi = this.unstable.offset + this.unstable.entries.length;
    if (lo >= hi) return [];
    const out = this.unstable.slice(lo, hi);
    this.unstable.handedOut = hi;
    return out;
  }

  hasUnstableEntries(): boolean {
    return Math.max(this.unstable.handedOut, this.unstable.offset) < this.unstable.offset + this.unstable.entries.length;
  }

  /** The snapshot waiting to be persisted, if it has not been handed out already. */
  takeUnstableSnapshot(): Snapshot | undefined {
    const s = this.unstable.snapshot;
    if (s === undefined || this.unstable.snapshotHandedOut) return undefined;
    this.unstable.snapshotHandedOut = true;
    return s;
  }

  hasUnstableSnapshot(): boolean {
    return this.unstable.snapshot !== undefined && !this.unstable.snapshotHandedOut;
  }

  /** Whether committed entries wait to be applied (none while a snapshot is being installed). */
  hasNextCommittedEntries(): boolean {
    if (this.unstable.snapshot !== undefined) return false;
    return this.committed > Math.max(this.applying, this.firstIndex() - 1);
  }

  /** Committed entries not yet handed out for applying, at most about `maxBytes` of them. */
  takeCommittedEntries(maxBytes: number): Entry[] {
    if (!this.hasNextCommittedEntries()) return [];
    const lo = Math.max(this.applying + 1, this.firstIndex());
    const out = this.slice(lo, this.committed + 1, maxBytes);
    if (out === undefined) throw new Error(`raft log: committed entries from ${lo} are compacted`);
    if (out.length > 0) this.applying = out[out.length - 1].index;
    return out;
  }

  /** Entries in [lo, hi), at least one and about `maxBytes`; undefined if lo is compacted. */
  slice(lo: number, hi: number, maxBytes: number): Entry[] | undefined {
    if (lo >= hi) return [];
    if (lo < this.firstIndex()) return undefined;
    if (hi > this.lastIndex() + 1) throw new Error(`raft log: slice(${lo}, ${hi}) beyond last index ${this.lastIndex()}`);
    let out: Entry[] = [];
    const uoff = this.unstable.offset;
    if (lo < uoff) {
      const stored = this.storage.entries(lo, Math.min(hi, uoff), maxBytes);
      if (stored === undefined) return undefined;
      // Storage stopped early for size: do not reach into the unstable part.
      if (stored.length < Math.min(hi, uoff) - lo) return stored;
      out = stored;
    }
    if (hi > uoff) {
      const fresh = this.unstable.slice(Math.max(lo, uoff), hi);
      out = out.length === 0 ? fresh : out.concat(fresh);
    }
    return limitBySize(out, maxBytes, entrySize);
  }

  /** The latest snapshot: the unstable one if there is one, else storage's. */
  snapshot(): Snapshot {
    return this.unstable.snapshot ?? this.storage.snapshot();
  }

  commitTo(index: number): void {
    if (index <= this.committed) return;
    if (index > this.lastIndex()) {
      throw new Error(`raft log: commit ${index} is beyond the last index ${this.lastIndex()}`);
    }
    this.committed = index;
  }

  /** Commits `index` if it is in `term` (only entries of the leader's own term commit by counting). */
  maybeCommit(index: number, term: number): boolean {
    if (index > this.committed && this.term(index) === term) {
      this.committed = index;
      return true;
    }
    return false;
  }

  appliedTo(index: number): void {
    if (index <= this.applied) return;
    this.applied = index;
    this.applying = Math.max(this.applying, index);
  }

  stableTo(index: number, term: number): void {
    this.unstable.stableTo(index, term);
  }

  stableSnapshotTo(index: number): void {
    this.unstable.stableSnapshotTo(index);
  }

  /** Replaces the log with a snapshot (a follower catching up through InstallSnapshot). */
  restore(snapshot: Snapshot): void {
    this.committed = snapshot.metadata.index;
    this.unstable.restore(snapshot);
  }

  /** The last index known durable: storage's, below the unstable tail. */
  stableLastIndex(): number {
    return Math.min(this.storage.lastIndex(), this.unstable.offset - 1);
  }
}
