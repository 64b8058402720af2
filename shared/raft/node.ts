// RaftNode: the face of the core that a shell drives. Inputs (tick, step, propose, ...)
// change the state; the effects wait in a Ready until the shell asks for them. The shell
// loop is:
//
//   while (node.hasReady()) {
//     const rd = node.ready();
//     // 1. Persist, in one durable write (fsync): rd.snapshot (if any, first), then
//     //    rd.entries (replacing any stored entries from rd.entries[0].index on), then
//     //    rd.hardState (if any). SqliteRaftStorage.save(rd) does exactly this (and skips
//     //    the fsync when rd.mustSync is false: only the commit index changed).
//     // 2. Only then send rd.messages: votes, acknowledgements and appends in them may
//     //    promise state that step 1 made durable.
//     // 3. Apply rd.snapshot (if any) to the state machine, then rd.committedEntries in
//     //    order; for a 'confChange' entry call node.applyConfChange(decodeConfChange(e.data)).
//     //    Serve reads in rd.readStates once their index is applied.
//     // 4. node.advance().
//   }
//
// Only one Ready is out at a time: ready() again before advance() is a bug. Inputs may
// arrive between ready() and advance(); their effects go into the next Ready.

import { encodeConfChange } from './confchange.ts';
import type { RaftOptions } from './config.ts';
import { Raft } from './raft.ts';
import type { RaftStorage } from './storage.ts';
import {
  hardStateEqual,
  type ConfChange, type ConfState, type Entry, type HardState, type Message, type NodeId,
  type ReadState, type Role, type Snapshot,
} from './types.ts';

/** Volatile state worth telling the shell about when it changes (not persisted). */
export interface SoftState {
  readonly role: Role;
  readonly leader: NodeId;
}

export interface Ready {
  /** Set when the role or the known leader changed since the last Ready. */
  readonly softState: SoftState | undefined;
  /** Set when term, vote or commit changed: persist it. */
  readonly hardState: HardState | undefined;
  /** A snapshot from the leader: persist it (it replaces the whole log), then restore the state machine from it. */
  readonly snapshot: Snapshot | undefined;
  /** Entries to persist, after dropping stored entries from entries[0].index on. */
  readonly entries: readonly Entry[];
  /** Committed entries to apply, in order, after persisting. */
  readonly committedEntries: readonly Entry[];
  /** To send after persisting. */
  readonly messages: readonly Message[];
  /** Confirmed reads: serve each once its index is applied. */
  readonly readStates: readonly ReadState[];
  /** Whether the write must be fsynced before sending (false only when nothing needs persisting). */
  readonly mustSync: boolean;
}

export interface ProgressStatus {
  readonly match: number;
  readonly next: number;
  readonly state: 'probe' | 'replicate' | 'snapshot';
  readonly learner: boolean;
  readonly recentActive: boolean;
}

export interface RaftStatus {
  readonly id: NodeId;
  readonly role: Role;
  readonly leader: NodeId;
  readonly term: number;
  readonly vote: NodeId;
  readonly commit: number;
  readonly applied: number;
  readonly lastIndex: number;
  readonly firstIndex: number;
  readonly config: ConfState;
  readonly leadTransferee: NodeId;
  /** The leader's view of each member; empty on other nodes. */
  readonly progress: ReadonlyMap<NodeId, ProgressStatus>;
}

export class RaftNode {
  private readonly raft: Raft;
  private prevSoft: SoftState;
  private prevHard: HardState;
  private outstanding: Ready | undefined;

  /**
   * Starts (or restarts) a node over `storage`, which holds what earlier Readys persisted.
   * A new group's founding members bootstrap their storage first (MemoryStorage.bootstrap,
   * SqliteRaftStorage.bootstrap); members added later start empty. Committed entries after
   * the stored snapshot are handed out again to rebuild the state machine.
   */
  constructor(options: RaftOptions, storage: RaftStorage) {
    this.raft = new Raft(options, storage);
    this.prevSoft = { role: this.raft.role, leader: this.raft.leader };
    this.prevHard = this.raft.hardState();
  }

  get id(): NodeId {
    return this.raft.id;
  }

  // Cheap reads of the volatile state, for shells and checks that look often.
  get role(): Role {
    return this.raft.role;
  }
  get term(): number {
    return this.raft.term;
  }
  get leader(): NodeId {
    return this.raft.leader;
  }
  get commitIndex(): number {
    return this.raft.log.committed;
  }
  /** Whether `id` is a voter or learner of the membership as of the applied index. */
  isMember(id: NodeId): boolean {
    return this.raft.tracker.voters.has(id) || this.raft.tracker.learners.has(id);
  }
  get lastIndex(): number {
    return this.raft.log.lastIndex();
  }
  get firstIndex(): number {
    return this.raft.log.firstIndex();
  }

  tick(): void {
    this.raft.tick();
  }

  /** A message from a peer (already authenticated and decoded by the transport). */
  step(m: Message): void {
    this.raft.step(m);
  }

  /**
   * Appends a command on the leader; returns its index. The entry's term is `node.term` at
   * the time of the call: when the shell later applies the entry at that index, it is this
   * command if and only if its term matches (one leader per term, one entry per index per
   * leader); a different term means the proposal was lost. Throws CAIRN_NOT_LEADER
   * (NotLeaderError, with the leader's id when known), CAIRN_RAFT_TRANSFERRING during a
   * leadership transfer, CAIRN_RAFT_OVERLOADED when too much is uncommitted.
   */
  propose(command: Uint8Array): number {
    return this.raft.propose(command);
  }

  /** Proposes a membership change on the leader; returns its index. See Raft.proposeConfChange for refusals. */
  proposeConfChange(cc: ConfChange): number {
    return this.raft.proposeConfChange(cc, encodeConfChange(cc));
  }

  /** Applies a committed membership change (from a 'confChange' entry); returns the new membership. */
  applyConfChange(cc: ConfChange): ConfState {
    return this.raft.applyConfChange(cc);
  }

  /** Asks for a linearizable read; the answer comes as a ReadState. False: dropped, retry later. */
  readIndex(context: Uint8Array): boolean {
    return this.raft.readIndex(context);
  }

  transferLeadership(to: NodeId): void {
    this.raft.transferLeadership(to);
  }

  /** Starts an election now (tests, or an operator forcing one). */
  campaign(): void {
    this.raft.campaign(false);
  }

  reportUnreachable(id: NodeId): void {
    this.raft.reportUnreachable(id);
  }

  /** `id`'s storage was lost or replaced; see Raft.reportStorageLost. */
  reportStorageLost(id: NodeId): void {
    this.raft.reportStorageLost(id);
  }

  /** The connection to `id` broke; see Raft.reportLeaderConnectionLost. */
  reportLeaderConnectionLost(id: NodeId): void {
    this.raft.reportLeaderConnectionLost(id);
  }

  reportSnapshot(id: NodeId, ok: boolean): void {
    this.raft.reportSnapshot(id, ok);
  }

  hasReady(): boolean {
    if (this.outstanding !== undefined) return false;
    const r = this.raft;
    return (
      r.appendsPending ||
      r.msgs.length > 0 ||
      r.readStates.length > 0 ||
      r.log.hasUnstableEntries() ||
      r.log.hasUnstableSnapshot() ||
      r.log.hasNextCommittedEntries() ||
      r.role !== this.prevSoft.role ||
      r.leader !== this.prevSoft.leader ||
      !hardStateEqual(r.hardState(), this.prevHard)
    );
  }

  ready(): Ready {
    if (this.outstanding !== undefined) throw new Error('raft: ready() called again before advance()');
    const r = this.raft;
    if (r.appendsPending) r.broadcastAppend();
    const soft: SoftState = { role: r.role, leader: r.leader };
    const hard = r.hardState();
    const snapshot = r.log.takeUnstableSnapshot();
    const entries = r.log.takeUnstableEntries();
    const committedEntries = r.log.takeCommittedEntries(r.cfg.maxApplyBytes);
    if (r.role === 'leader') {
      for (const e of committedEntries) r.uncommittedBytes = Math.max(0, r.uncommittedBytes - e.data.length);
    }
    const hardChanged = !hardStateEqual(hard, this.prevHard);
    const rd: Ready = {
      softState: soft.role !== this.prevSoft.role || soft.leader !== this.prevSoft.leader ? soft : undefined,
      hardState: hardChanged ? hard : undefined,
      snapshot,
      entries,
      committedEntries,
      messages: r.msgs,
      readStates: r.readStates,
      mustSync: snapshot !== undefined || entries.length > 0 || hard.term !== this.prevHard.term || hard.vote !== this.prevHard.vote,
    };
    r.msgs = [];
    r.readStates = [];
    this.prevSoft = soft;
    if (hardChanged) this.prevHard = hard;
    this.outstanding = rd;
    return rd;
  }

  /** The shell has persisted, sent and applied everything in the last Ready. */
  advance(): void {
    const rd = this.outstanding;
    if (rd === undefined) throw new Error('raft: advance() without a Ready');
    this.outstanding = undefined;
    const log = this.raft.log;
    if (rd.snapshot !== undefined) {
      log.stableSnapshotTo(rd.snapshot.metadata.index);
      log.appliedTo(rd.snapshot.metadata.index);
    }
    if (rd.entries.length > 0) {
      const last = rd.entries[rd.entries.length - 1];
      log.stableTo(last.index, last.term);
      this.raft.persisted(last.index, last.term);
    }
    if (rd.committedEntries.length > 0) {
      log.appliedTo(rd.committedEntries[rd.committedEntries.length - 1].index);
    }
  }

  status(): RaftStatus {
    const r = this.raft;
    const progress = new Map<NodeId, ProgressStatus>();
    if (r.role === 'leader') {
      for (const [id, pr] of r.tracker.progress) {
        progress.set(id, { match: pr.match, next: pr.next, state: pr.state, learner: pr.isLearner, recentActive: pr.recentActive });
      }
    }
    return {
      id: r.id,
      role: r.role,
      leader: r.leader,
      term: r.term,
      vote: r.vote,
      commit: r.log.committed,
      applied: r.log.applied,
      lastIndex: r.log.lastIndex(),
      firstIndex: r.log.firstIndex(),
      config: r.tracker.confState(),
      leadTransferee: r.leadTransferee,
      progress,
    };
  }

  /** The entry at `index` if it is still held (for checks and tests); undefined otherwise. */
  entryAt(index: number): Entry | undefined {
    const log = this.raft.log;
    if (index < log.firstIndex() || index > log.lastIndex()) return undefined;
    const out = log.slice(index, index + 1, Number.MAX_SAFE_INTEGER);
    return out === undefined || out.length === 0 ? undefined : out[0];
  }

  /** Term of entry `index`, or undefined if compacted or beyond the log. */
  termAt(index: number): number | undefined {
    return this.raft.log.term(index);
  }
}
