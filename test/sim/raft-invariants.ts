// Raft's safety properties (Figure 3 of the paper), checked while a simulation runs:
//  - Election Safety: at most one leader per term;
//  - Log Matching: entries with the same index and term are identical, and so are the logs
//    before them (checked on every write to a node's disk, and across whole logs now and then);
//  - Leader Completeness: a new leader holds every entry committed before it was elected;
//  - State Machine Safety: no two nodes apply different entries at one index, and the state
//    machines agree wherever they snapshot at the same index.
// A violation throws, naming what broke.

import type { Entry, NodeId } from '../../shared/raft/types.ts';

export class SafetyViolation extends Error {
  constructor(property: string, detail: string) {
    super(`${property} violated: ${detail}`);
    this.name = 'SafetyViolation';
  }
}

/** The parts of a node the whole-log checks read. */
export interface LogView {
  readonly id: NodeId;
  firstIndex(): number;
  lastIndex(): number;
  termAt(index: number): number | undefined;
  entryAt(index: number): Entry | undefined;
}

/** FNV-1a over an entry's type and payload: equal entries, equal fingerprints. */
export function entryFingerprint(e: Entry): string {
  let h = 0x811c9dc5;
  h = Math.imul(h ^ (e.type === 'normal' ? 1 : 2), 0x01000193);
  for (let i = 0; i < e.data.length; i++) h = Math.imul(h ^ e.data[i], 0x01000193);
  return `${e.term}:${(h >>> 0).toString(16)}:${e.data.length}`;
}

export class SafetyChecker {
  private readonly leaderOfTerm = new Map<number, NodeId>();
  /** index → term → (fingerprint, term of the entry before) as first written anywhere. */
  private readonly written = new Map<number, Map<number, { fp: string; prevTerm: number | undefined }>>();
  /** index → fingerprint of the entry applied there (by anyone). */
  private readonly appliedAt = new Map<number, string>();
  /** index → state machine fingerprint at a snapshot taken or installed there. */
  private readonly stateAt = new Map<number, string>();
  /**
   * Per committed index: the earliest term in which a leader committed it, and the entry's
   * own term. Leader Completeness speaks of entries committed in earlier terms; an entry
   * committed by a later leader need not be in the log of a stale leader elected, late, in
   * an older term.
   */
  private readonly committedIn = new Map<number, { term: number; entryTerm: number }>();
  /** Highest index each leader (id:term) has been seen to commit. */
  private readonly commitMark = new Map<string, number>();
  maxCommitted = 0;
  leadersSeen = 0;
  maxTerm = 0;

  /** A node is leader in `term`; returns true the first time it is seen, when completeness should be checked. */
  observeLeader(id: NodeId, term: number): boolean {
    const prior = this.leaderOfTerm.get(term);
    if (prior === undefined) {
      this.leaderOfTerm.set(term, id);
      this.leadersSeen++;
      this.maxTerm = Math.max(this.maxTerm, term);
      return true;
    }
    if (prior !== id) throw new SafetyViolation('Election Safety', `nodes ${prior} and ${id} both led term ${term}`);
    return false;
  }

  /** A node wrote `entries` (contiguous) to its disk; `prevTerm` is the term of the entry before the first. */
  observePersisted(id: NodeId, entries: readonly Entry[], prevTerm: number | undefined): void {
    let before = prevTerm;
    for (const e of entries) {
      let byTerm = this.written.get(e.index);
      if (byTerm === undefined) this.written.set(e.index, (byTerm = new Map()));
      const fp = entryFingerprint(e);
      const seen = byTerm.get(e.term);
      if (seen === undefined) {
        byTerm.set(e.term, { fp, prevTerm: before });
      } else {
        if (seen.fp !== fp) {
          throw new SafetyViolation('Log Matching', `node ${id} wrote a different entry at index ${e.index} term ${e.term}`);
        }
        if (seen.prevTerm !== undefined && before !== undefined && seen.prevTerm !== before) {
          throw new SafetyViolation(
            'Log Matching',
            `node ${id} has entry ${e.index}/${e.term} after term ${before}, another node after term ${seen.prevTerm}`,
          );
        }
        if (seen.prevTerm === undefined && before !== undefined) seen.prevTerm = before;
      }
      before = e.term;
    }
  }

  /** A node applied `e`, whose index must follow the last it applied. */
  observeApplied(id: NodeId, e: Entry, lastApplied: number): void {
    if (e.index !== lastApplied + 1) {
      throw new SafetyViolation('State Machine Safety', `node ${id} applied index ${e.index} after ${lastApplied}`);
    }
    const fp = entryFingerprint(e);
    const prior = this.appliedAt.get(e.index);
    if (prior === undefined) {
      this.appliedAt.set(e.index, fp);
      if (e.index > this.maxCommitted) this.maxCommitted = e.index;
    } else if (prior !== fp) {
      throw new SafetyViolation('State Machine Safety', `node ${id} applied ${fp} at index ${e.index}, another node applied ${prior}`);
    }
  }

  /** A node's state machine stood at `index` with fingerprint `state` (a snapshot taken or installed). */
  observeState(id: NodeId, index: number, state: string): void {
    const prior = this.stateAt.get(index);
    if (prior === undefined) this.stateAt.set(index, state);
    else if (prior !== state) {
      throw new SafetyViolation('State Machine Safety', `node ${id}'s state at index ${index} differs from another node's`);
    }
    if (index > this.maxCommitted) this.maxCommitted = index;
  }

  /** A leader of `term` has commit index `commit`: everything up to it is committed, in `term` at the latest. */
  observeCommit(leader: LogView, term: number, commit: number): void {
    const key = `${leader.id}:${term}`;
    const from = (this.commitMark.get(key) ?? 0) + 1;
    if (commit < from) return;
    this.commitMark.set(key, commit);
    for (let i = Math.max(from, leader.firstIndex()); i <= commit; i++) {
      const entryTerm = leader.termAt(i);
      if (entryTerm === undefined) continue;
      const known = this.committedIn.get(i);
      if (known === undefined) {
        this.committedIn.set(i, { term, entryTerm });
      } else {
        if (known.entryTerm !== entryTerm) {
          throw new SafetyViolation(
            'State Machine Safety',
            `leader ${leader.id} of term ${term} committed an entry of term ${entryTerm} at index ${i}, where one of term ${known.entryTerm} was committed`,
          );
        }
        if (term < known.term) known.term = term;
      }
    }
  }

  /** A new leader of `term` must hold every entry committed in an earlier term (those it has not compacted). */
  checkLeaderCompleteness(leader: LogView, term: number): void {
    const last = leader.lastIndex();
    for (const [i, c] of this.committedIn) {
      if (c.term >= term) continue;
      if (i > last) {
        throw new SafetyViolation('Leader Completeness', `leader ${leader.id} of term ${term} ends at ${last}, but ${i} was committed in term ${c.term}`);
      }
      if (i < leader.firstIndex()) continue;
      const have = leader.termAt(i);
      if (have !== c.entryTerm) {
        throw new SafetyViolation(
          'Leader Completeness',
          `leader ${leader.id} of term ${term} has term ${have} at index ${i}, committed in term ${c.term} with term ${c.entryTerm}`,
        );
      }
    }
  }

  /** Log Matching across whole logs: wherever two logs agree on a term, they agree on everything before. */
  checkLogsMatch(logs: readonly LogView[]): void {
    for (let a = 0; a < logs.length; a++) {
      for (let b = a + 1; b < logs.length; b++) {
        const x = logs[a];
        const y = logs[b];
        const lo = Math.max(x.firstIndex(), y.firstIndex());
        let hi = Math.min(x.lastIndex(), y.lastIndex());
        while (hi >= lo && x.termAt(hi) !== y.termAt(hi)) hi--;
        for (let i = lo; i <= hi; i++) {
          const ex = x.entryAt(i);
          const ey = y.entryAt(i);
          if (ex === undefined || ey === undefined || entryFingerprint(ex) !== entryFingerprint(ey)) {
            throw new SafetyViolation('Log Matching', `nodes ${x.id} and ${y.id} agree at index ${hi} but differ at ${i}`);
          }
        }
      }
    }
  }
}
