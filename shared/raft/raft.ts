// The Raft state machine of one node. Pure: inputs are step(message), tick(), proposals
// and reports from the shell; outputs accumulate in `msgs`, `readStates` and the log's
// unstable part, which RaftNode turns into Ready values. Each role has its own step
// function (stepFollower, stepCandidate, stepLeader); what every role does the same
// (term bookkeeping, voting) happens in step() before the role's function is called.
//
// Paper references (§) are to Ongaro & Ousterhout, "In Search of an Understandable
// Consensus Algorithm", and Ongaro's dissertation for PreVote, CheckQuorum, membership
// changes, leadership transfer and ReadIndex.

import { CairnError } from '../errors.ts';
import { randomInt } from '../random.ts';
import { applyConfChangeTo, confChangeProblem } from './confchange.ts';
import { compileRaftConfig, type RaftConfig, type RaftOptions } from './config.ts';
import { RaftLog } from './log.ts';
import { isQuorum } from './quorum.ts';
import { ReadIndexRounds, type ReadRequest } from './read-index.ts';
import type { RaftStorage } from './storage.ts';
import { ProgressTracker } from './tracker.ts';
import {
  EMPTY_BYTES, entrySize,
  type AppendMessage, type AppendResponseMessage, type ConfChange, type ConfState, type Entry,
  type HardState, type HeartbeatMessage, type HeartbeatResponseMessage, type Message, type NodeId,
  type ReadState, type Role, type SnapshotMessage, type VoteMessage,
} from './types.ts';

/** A proposal reached a node that is not the leader; `leaderId` is its best guess (0: none known). */
export class NotLeaderError extends CairnError {
  constructor(readonly leaderId: NodeId) {
    super('CAIRN_NOT_LEADER', leaderId === 0 ? 'not the leader, and no leader is known' : `not the leader; node ${leaderId} is`);
  }
}

type StepFn = (m: Message) => void;

export class Raft {
  readonly id: NodeId;
  readonly cfg: RaftConfig;
  readonly log: RaftLog;
  readonly tracker: ProgressTracker;

  term = 0;
  vote: NodeId = 0;
  role: Role = 'follower';
  leader: NodeId = 0;

  /** Outgoing messages, taken by the next Ready. */
  msgs: Message[] = [];
  /** Confirmed reads, taken by the next Ready. */
  readStates: ReadState[] = [];
  /** Proposals appended since the last Ready; sent to followers in one batch when it is built. */
  appendsPending = false;

  /** Index of the latest membership change in the log; a new one waits until it is applied. */
  pendingConfIndex = 0;
  /** Bytes of entries this leader proposed that have not been handed out committed yet. */
  uncommittedBytes = 0;
  /** The voter a leadership transfer is handing over to; 0 when none. */
  leadTransferee: NodeId = 0;

  private electionElapsed = 0;
  private heartbeatElapsed = 0;
  private randomizedElectionTimeout = 0;
  private stepRole: StepFn;
  private tickRole: () => void;
  private readonly reads = new ReadIndexRounds();
  /** Reads that arrived before this leader committed an entry of its own term. */
  private readsBeforeCommit: ReadRequest[] = [];

  constructor(options: RaftOptions, storage: RaftStorage) {
    this.cfg = compileRaftConfig(options);
    this.id = this.cfg.id;
    this.log = new RaftLog(storage);
    this.tracker = new ProgressTracker(this.cfg.maxInflightMessages, this.cfg.maxInflightBytes);
    const { hardState, confState } = storage.initialState();
    this.tracker.setConfig(confState, this.log.lastIndex() + 1);
    if (hardState.commit > this.log.lastIndex() || hardState.commit < this.log.firstIndex() - 1 && hardState.commit !== 0) {
      throw new CairnError(
        'CAIRN_RAFT_CORRUPT_LOG',
        `stored commit index ${hardState.commit} is outside the stored log [${this.log.firstIndex() - 1}, ${this.log.lastIndex()}]`,
      );
    }
    this.term = hardState.term;
    this.vote = hardState.vote;
    this.log.commitTo(hardState.commit);
    this.stepRole = this.stepFollower;
    this.tickRole = this.tickElection;
    this.becomeFollower(this.term, 0);
  }

  hardState(): HardState {
    return { term: this.term, vote: this.vote, commit: this.log.committed };
  }

  // -------------------------------------------------------------------------------------
  // Inputs

  tick(): void {
    this.tickRole();
  }

  /** Handles a message from a peer. Messages not addressed to this node are ignored. */
  step(m: Message): void {
    if (m.to !== this.id || m.from === this.id || m.term <= 0) return;

    if (m.term > this.term) {
      if (m.type === 'vote' || m.type === 'preVote') {
        // Leader lease (§4.2.3 of the dissertation): while this node hears from a leader it
        // ignores elections, unless the leader itself asked for one by transferring.
        const inLease = this.cfg.checkQuorum && this.leader !== 0 && this.electionElapsed < this.cfg.electionTicks;
        if (inLease && !m.transfer) return;
      }
      if (m.type === 'preVote') {
        // A pre-vote is a question about the next term; it changes nobody's term.
      } else if (m.type === 'preVoteResponse' && !m.reject) {
        // A granted pre-vote carries the term we would campaign in; we move there only by winning.
      } else if (m.type === 'append' || m.type === 'heartbeat' || m.type === 'snapshot') {
        this.becomeFollower(m.term, m.from);
      } else {
        this.becomeFollower(m.term, 0);
      }
    } else if (m.term < this.term) {
      if ((this.cfg.checkQuorum || this.cfg.preVote) && (m.type === 'heartbeat' || m.type === 'append')) {
        // A leader of an older term still thinks it leads (it was cut off, or this node's
        // term rose while it was). Without an answer it would never learn; tell it the term.
        this.send({ type: 'appendResponse', from: this.id, to: m.from, term: this.term, index: 0, reject: false, hintIndex: 0, hintTerm: 0 });
      } else if (m.type === 'preVote') {
        this.send({ type: 'preVoteResponse', from: this.id, to: m.from, term: this.term, reject: true });
      }
      return;
    }

    if (m.type === 'vote' || m.type === 'preVote') {
      this.handleVoteRequest(m);
      return;
    }
    this.stepRole(m);
  }

  private handleVoteRequest(m: VoteMessage): void {
    const canVote =
      this.vote === m.from ||
      (this.vote === 0 && this.leader === 0) ||
      (m.type === 'preVote' && m.term > this.term);
    const responseType = m.type === 'vote' ? 'voteResponse' : 'preVoteResponse';
    if (canVote && this.log.isUpToDate(m.lastIndex, m.lastTerm)) {
      // A granted pre-vote answers in the asked-about term, so the asker counts it.
      this.send({ type: responseType, from: this.id, to: m.from, term: m.term, reject: false });
      if (m.type === 'vote') {
        this.electionElapsed = 0;
        this.vote = m.from;
      }
    } else {
      this.send({ type: responseType, from: this.id, to: m.from, term: this.term, reject: true });
    }
  }

  // -------------------------------------------------------------------------------------
  // Roles

  private reset(term: number): void {
    if (term !== this.term) {
      this.term = term;
      this.vote = 0;
    }
    this.leader = 0;
    this.electionElapsed = 0;
    this.heartbeatElapsed = 0;
    this.randomizedElectionTimeout = this.cfg.electionTicks + randomInt(this.cfg.random, this.cfg.electionTicks);
    this.leadTransferee = 0;
    this.tracker.resetVotes();
    const next = this.log.lastIndex() + 1;
    for (const [id, pr] of this.tracker.progress) {
      // Our own copy counts only as far as it is on disk.
      pr.match = id === this.id ? this.log.stableLastIndex() : 0;
      pr.becomeProbe();
      pr.next = next;
      pr.recentActive = id === this.id;
    }
    this.pendingConfIndex = 0;
    this.uncommittedBytes = 0;
    this.reads.clear();
    this.readsBeforeCommit = [];
  }

  becomeFollower(term: number, leader: NodeId): void {
    this.stepRole = this.stepFollower;
    this.tickRole = this.tickElection;
    this.reset(term);
    this.leader = leader;
    this.role = 'follower';
  }

  private becomePreCandidate(): void {
    if (this.role === 'leader') throw new Error('raft: a leader cannot become a pre-candidate');
    // Unlike a candidate, a pre-candidate keeps its term and vote: it only asks.
    this.stepRole = this.stepCandidate;
    this.tickRole = this.tickElection;
    this.tracker.resetVotes();
    this.leader = 0;
    this.role = 'preCandidate';
  }

  private becomeCandidate(): void {
    if (this.role === 'leader') throw new Error('raft: a leader cannot become a candidate');
    this.stepRole = this.stepCandidate;
    this.tickRole = this.tickElection;
    this.reset(this.term + 1);
    this.vote = this.id;
    this.role = 'candidate';
  }

  private becomeLeader(): void {
    if (this.role !== 'candidate') throw new Error('raft: only a candidate can become leader');
    this.stepRole = this.stepLeader;
    this.tickRole = this.tickHeartbeat;
    this.reset(this.term);
    this.leader = this.id;
    this.role = 'leader';
    const self = this.tracker.progress.get(this.id);
    self?.becomeReplicate();
    // Entries from earlier terms commit only once one of ours does (§5.4.2), and a membership
    // change may be pending among them: no new change until this empty entry of our own term
    // is applied (the fix to single-server changes in Ongaro's 2015 raft-dev note).
    this.pendingConfIndex = this.appendEntries([{ type: 'normal', data: EMPTY_BYTES }]);
    this.appendsPending = true;
  }

  /** Whether this node may campaign: a voter, not in the middle of installing a snapshot. */
  promotable(): boolean {
    return this.tracker.voters.has(this.id) && !this.log.hasUnstableSnapshot();
  }

  /** Starts an election (after a pre-vote round when enabled). */
  campaign(transfer = false): void {
    if (this.role === 'leader' || !this.promotable()) return;
    if (this.hasUnappliedConfChange()) {
      // A committed membership change not yet applied may change who votes: campaigning on
      // the old membership could let two leaders win the same term.
      return;
    }
    if (this.cfg.preVote && !transfer) this.startElection('preVote', false);
    else this.startElection('vote', transfer);
  }

  private hasUnappliedConfChange(): boolean {
    if (this.log.committed <= this.log.applied) return false;
    let lo = Math.max(this.log.applied + 1, this.log.firstIndex());
    while (lo <= this.log.committed) {
      const batch = this.log.slice(lo, this.log.committed + 1, 1 << 20);
      if (batch === undefined || batch.length === 0) return false;
      if (batch.some((e) => e.type === 'confChange')) return true;
      lo = batch[batch.length - 1].index + 1;
    }
    return false;
  }

  private startElection(kind: 'vote' | 'preVote', transfer: boolean): void {
    let term: number;
    if (kind === 'preVote') {
      this.becomePreCandidate();
      term = this.term + 1;
    } else {
      this.becomeCandidate();
      term = this.term;
    }
    this.tracker.recordVote(this.id, true);
    const { result } = this.tracker.tallyVotes();
    if (result === 'won') {
      // A group of one.
      if (kind === 'preVote') this.startElection('vote', false);
      else this.becomeLeader();
      return;
    }
    const lastIndex = this.log.lastIndex();
    const lastTerm = this.log.lastTerm();
    for (const id of this.tracker.voters) {
      if (id === this.id) continue;
      this.send({ type: kind, from: this.id, to: id, term, lastIndex, lastTerm, transfer });
    }
  }

  private tickElection(): void {
    this.electionElapsed++;
    if (this.promotable() && this.electionElapsed >= this.randomizedElectionTimeout) {
      this.electionElapsed = 0;
      this.campaign(false);
    }
  }

  private tickHeartbeat(): void {
    this.heartbeatElapsed++;
    this.electionElapsed++;
    if (this.electionElapsed >= this.cfg.electionTicks) {
      this.electionElapsed = 0;
      if (this.cfg.checkQuorum) {
        if (!this.tracker.quorumActive(this.id)) {
          // Cut off from a quorum: stop acting as leader so clients go elsewhere (§6.2).
          this.becomeFollower(this.term, 0);
          return;
        }
        for (const [id, pr] of this.tracker.progress) pr.recentActive = id === this.id;
      }
      // A transfer that has not completed within an election timeout is abandoned; a leader
      // removed from the group gives up waiting and steps down anyway.
      this.leadTransferee = 0;
      if (!this.tracker.voters.has(this.id)) {
        this.becomeFollower(this.term, 0);
        return;
      }
    }
    if (this.role !== 'leader') return;
    for (const [id, pr] of this.tracker.progress) {
      if (id === this.id || pr.state !== 'snapshot') continue;
      // A snapshot unanswered for an election timeout is taken as lost and sent again.
      if (++pr.snapshotTicks >= this.cfg.electionTicks) pr.becomeProbe();
    }
    if (this.heartbeatElapsed >= this.cfg.heartbeatTicks) {
      this.heartbeatElapsed = 0;
      this.broadcastHeartbeat(EMPTY_BYTES);
    }
  }

  // -------------------------------------------------------------------------------------
  // Per-role step functions

  private stepFollower = (m: Message): void => {
    switch (m.type) {
      case 'append':
        this.electionElapsed = 0;
        this.leader = m.from;
        this.handleAppend(m);
        return;
      case 'heartbeat':
        this.electionElapsed = 0;
        this.leader = m.from;
        this.handleHeartbeat(m);
        return;
      case 'snapshot':
        this.electionElapsed = 0;
        this.leader = m.from;
        this.handleSnapshot(m);
        return;
      case 'timeoutNow':
        // Our leader is handing over: campaign now, skipping the pre-vote and the lease.
        this.campaign(true);
        return;
      case 'readIndexResponse':
        if (!m.reject) this.readStates.push({ index: m.index, context: m.context });
        return;
      default:
        return;
    }
  };

  private stepCandidate = (m: Message): void => {
    switch (m.type) {
      case 'append':
        this.becomeFollower(m.term, m.from);
        this.handleAppend(m);
        return;
      case 'heartbeat':
        this.becomeFollower(m.term, m.from);
        this.handleHeartbeat(m);
        return;
      case 'snapshot':
        this.becomeFollower(m.term, m.from);
        this.handleSnapshot(m);
        return;
      case 'voteResponse':
      case 'preVoteResponse': {
        const mine = this.role === 'candidate' ? 'voteResponse' : 'preVoteResponse';
        if (m.type !== mine) return;
        this.tracker.recordVote(m.from, !m.reject);
        const { result } = this.tracker.tallyVotes();
        if (result === 'won') {
          if (this.role === 'preCandidate') this.startElection('vote', false);
          else this.becomeLeader();
        } else if (result === 'lost') {
          this.becomeFollower(this.term, 0);
        }
        return;
      }
      default:
        return;
    }
  };

  private stepLeader = (m: Message): void => {
    switch (m.type) {
      case 'appendResponse':
        this.handleAppendResponse(m);
        return;
      case 'heartbeatResponse':
        this.handleHeartbeatResponse(m);
        return;
      case 'readIndex':
        if (this.tracker.isMember(m.from)) this.handleReadIndex({ from: m.from, context: m.context });
        return;
      default:
        return;
    }
  };

  // -------------------------------------------------------------------------------------
  // Follower side of replication

  private handleAppend(m: AppendMessage): void {
    const reply = (index: number, reject: boolean, hintIndex = 0, hintTerm = 0) =>
      this.send({ type: 'appendResponse', from: this.id, to: m.from, term: this.term, index, reject, hintIndex, hintTerm });
    if (m.prevIndex < this.log.committed) {
      // Everything up to our commit index matches any leader's log already.
      reply(this.log.committed, false);
      return;
    }
    const lastNew = this.log.maybeAppend(m.prevIndex, m.prevTerm, m.commit, m.entries);
    if (lastNew !== undefined) {
      reply(lastNew, false);
      return;
    }
    // Mismatch. Point the leader at the last index whose term is ≤ prevTerm: every entry
    // after it in our log has a newer term than the leader's entry at prevIndex, so cannot
    // match it, and the leader can skip them all at once.
    const hint = this.log.findConflictByTerm(Math.min(m.prevIndex, this.log.lastIndex()), m.prevTerm);
    reply(m.prevIndex, true, hint.index, hint.term);
  }

  private handleHeartbeat(m: HeartbeatMessage): void {
    // The leader sends at most what it knows we match, so this never commits a divergent entry.
    this.log.commitTo(Math.min(m.commit, this.log.lastIndex()));
    this.send({ type: 'heartbeatResponse', from: this.id, to: m.from, term: this.term, context: m.context });
  }

  private handleSnapshot(m: SnapshotMessage): void {
    const { index, term } = m.snapshot.metadata;
    let ack = this.log.committed;
    if (index > this.log.committed && term > 0) {
      if (this.log.matchTerm(index, term)) {
        // We hold the entry the snapshot ends at: just move the commit index.
        this.log.commitTo(index);
      } else {
        this.log.restore(m.snapshot);
        this.tracker.setConfig(m.snapshot.metadata.confState, this.log.lastIndex() + 1);
      }
      ack = this.log.committed;
    }
    this.send({ type: 'appendResponse', from: this.id, to: m.from, term: this.term, index: ack, reject: false, hintIndex: 0, hintTerm: 0 });
  }

  // -------------------------------------------------------------------------------------
  // Leader side of replication

  private handleAppendResponse(m: AppendResponseMessage): void {
    const pr = this.tracker.progress.get(m.from);
    if (pr === undefined) return;
    pr.recentActive = true;
    if (m.reject) {
      let matchHint = m.hintIndex;
      if (m.hintTerm > 0) matchHint = this.log.findConflictByTerm(m.hintIndex, m.hintTerm).index;
      if (pr.maybeDecrease(m.index, matchHint)) {
        if (pr.state === 'replicate') pr.becomeProbe();
        this.sendAppend(m.from, true);
      }
      return;
    }
    if (!pr.maybeUpdate(m.index) && !(pr.state === 'probe' && pr.match === m.index && m.index > 0)) {
      return;
    }
    switch (pr.state) {
      case 'probe':
        pr.becomeReplicate();
        break;
      case 'snapshot':
        if (pr.match >= pr.pendingSnapshot || pr.match + 1 >= this.log.firstIndex()) {
          pr.becomeProbe();
          pr.becomeReplicate();
        }
        break;
      case 'replicate':
        pr.inflights.freeUpTo(m.index);
        break;
    }
    if (this.maybeCommit()) {
      // Tell followers the new commit index with the next batch (or an empty append).
      this.appendsPending = true;
    }
    // Keep the pipeline full while there is more to send (a paused follower just unpaused).
    this.fillPipeline(m.from);
    if (m.from === this.leadTransferee && pr.match === this.log.lastIndex()) {
      this.send({ type: 'timeoutNow', from: this.id, to: m.from, term: this.term });
      if (!this.tracker.voters.has(this.id)) this.becomeFollower(this.term, 0);
    }
  }

  private handleHeartbeatResponse(m: HeartbeatResponseMessage): void {
    const pr = this.tracker.progress.get(m.from);
    if (pr === undefined) return;
    pr.recentActive = true;
    pr.probeSent = false;
    // A full window with the follower still answering means appends were lost: let one more
    // through. If it leaves a gap the follower rejects it and the leader probes back.
    if (pr.state === 'replicate' && pr.inflights.full()) pr.inflights.freeOldest();
    if (pr.match < this.log.lastIndex()) this.sendAppend(m.from, true);
    if (m.context.length === 0) return;
    const done = this.reads.ack(m.from, m.context, (acks) => isQuorum(this.tracker.voters, (id) => acks.has(id)));
    for (const round of done) {
      for (const req of round.requests) this.answerRead(req, round.index);
    }
  }

  /**
   * Sends `to` the entries it is missing (or a snapshot when they are compacted away).
   * With `sendIfEmpty` false, sends nothing when there is nothing new. Returns whether a
   * message went out.
   */
  private sendAppend(to: NodeId, sendIfEmpty: boolean): boolean {
    const pr = this.tracker.progress.get(to);
    if (pr === undefined || to === this.id || pr.isPaused()) return false;
    const prevIndex = pr.next - 1;
    const prevTerm = this.log.term(prevIndex);
    const lastIndex = this.log.lastIndex();
    const entries = prevTerm === undefined ? undefined : this.log.slice(pr.next, lastIndex + 1, this.cfg.maxMessageBytes);
    if (prevTerm === undefined || entries === undefined) {
      this.sendSnapshot(to);
      return false;
    }
    if (entries.length === 0 && !sendIfEmpty) return false;
    let bytes = 0;
    for (const e of entries) bytes += entrySize(e);
    this.send({ type: 'append', from: this.id, to, term: this.term, prevIndex, prevTerm, entries, commit: this.log.committed });
    pr.sentAppend(entries.length > 0 ? entries[entries.length - 1].index : prevIndex, bytes, entries.length);
    return entries.length > 0;
  }

  private sendSnapshot(to: NodeId): void {
    const pr = this.tracker.progress.get(to);
    if (pr === undefined) return;
    const snapshot = this.log.snapshot();
    if (snapshot.metadata.index === 0) throw new Error('raft: entries are compacted but there is no snapshot');
    pr.becomeSnapshot(snapshot.metadata.index);
    this.send({ type: 'snapshot', from: this.id, to, term: this.term, snapshot });
  }

  private fillPipeline(to: NodeId): void {
    while (this.sendAppend(to, false)) {
      /* one more batch in flight */
    }
  }

  /**
   * Sends every member what it is missing, or an empty append carrying the commit index.
   * Called once per Ready, so all proposals made since the last one travel together.
   */
  broadcastAppend(): void {
    this.appendsPending = false;
    if (this.role !== 'leader') return;
    for (const id of this.tracker.progress.keys()) {
      if (id === this.id) continue;
      if (this.sendAppend(id, true)) this.fillPipeline(id);
    }
  }

  private broadcastHeartbeat(context: Uint8Array): void {
    for (const [id, pr] of this.tracker.progress) {
      if (id === this.id) continue;
      // Never more than the follower is known to match: it must not commit an entry it
      // holds from an older leader.
      const commit = Math.min(pr.match, this.log.committed);
      this.send({ type: 'heartbeat', from: this.id, to: id, term: this.term, commit, context });
    }
  }

  /** Moves the commit index to what a quorum holds, if that entry is of this term (§5.4.2). */
  private maybeCommit(): boolean {
    const wasCommittedInTerm = this.log.term(this.log.committed) === this.term;
    if (!this.log.maybeCommit(this.tracker.committedIndex(), this.term)) return false;
    if (!wasCommittedInTerm && this.readsBeforeCommit.length > 0) {
      const waiting = this.readsBeforeCommit;
      this.readsBeforeCommit = [];
      for (const req of waiting) this.handleReadIndex(req);
    }
    return true;
  }

  private appendEntries(entries: { type: Entry['type']; data: Uint8Array }[]): number {
    let index = this.log.lastIndex();
    const stamped: Entry[] = entries.map((e) => ({ index: ++index, term: this.term, type: e.type, data: e.data }));
    return this.log.append(stamped);
  }

  /** The shell persisted entries up to (index, term): the leader's own copy now counts. */
  persisted(index: number, term: number): void {
    if (this.role !== 'leader' || !this.log.matchTerm(index, term)) return;
    const self = this.tracker.progress.get(this.id);
    if (self === undefined) return;
    if (self.maybeUpdate(index) && this.maybeCommit()) this.appendsPending = true;
  }

  // -------------------------------------------------------------------------------------
  // Leader API: proposals, membership, transfer, reads

  private requireLeader(): void {
    if (this.role !== 'leader') throw new NotLeaderError(this.leader);
    if (this.leadTransferee !== 0) {
      throw new CairnError('CAIRN_RAFT_TRANSFERRING', `leadership is being transferred to node ${this.leadTransferee}; retry on the new leader`);
    }
  }

  propose(data: Uint8Array): number {
    this.requireLeader();
    if (this.uncommittedBytes > 0 && this.uncommittedBytes + data.length > this.cfg.maxUncommittedBytes) {
      throw new CairnError('CAIRN_RAFT_OVERLOADED', `${this.uncommittedBytes} bytes of proposals are not yet committed; retry later`);
    }
    this.uncommittedBytes += data.length;
    const index = this.appendEntries([{ type: 'normal', data }]);
    this.appendsPending = true;
    return index;
  }

  /**
   * Proposes a single-server membership change. Refused (CairnError) when another change is
   * still pending, when the change makes no sense for the membership, when a learner to be
   * promoted has not caught up, or when the voters left reachable would not form a quorum.
   */
  proposeConfChange(cc: ConfChange, encoded: Uint8Array): number {
    this.requireLeader();
    if (this.pendingConfIndex > this.log.applied) {
      throw new CairnError(
        'CAIRN_RAFT_CHANGE_PENDING',
        `a membership change (or the new leader's first entry) at index ${this.pendingConfIndex} is not applied yet (applied ${this.log.applied}); one change at a time`,
      );
    }
    const current = this.tracker.confState();
    const problem = confChangeProblem(current, cc);
    if (problem !== undefined) throw problem;
    const pr = this.tracker.progress.get(cc.nodeId);
    if (cc.type === 'promote' && (pr === undefined || pr.match === 0 || !pr.recentActive || pr.match + this.cfg.learnerCatchUpEntries < this.log.committed)) {
      const match = pr?.match ?? 0;
      throw new CairnError(
        'CAIRN_RAFT_LEARNER_BEHIND',
        match === 0 || !pr?.recentActive
          ? `learner ${cc.nodeId} has not been heard from; promote it once it has caught up`
          : `learner ${cc.nodeId} has index ${match}, ${this.log.committed - match} behind the commit index; promote it once it has caught up`,
        'nodeId',
      );
    }
    if (cc.type !== 'addLearner') {
      const next = applyConfChangeTo(current, cc);
      const reachable = (id: NodeId) => id === this.id || (this.tracker.progress.get(id)?.recentActive ?? false);
      if (!isQuorum(next.voters, reachable)) {
        const up = next.voters.filter(reachable);
        throw new CairnError(
          'CAIRN_RAFT_NO_QUORUM',
          `after this change the voters would be [${next.voters.join(', ')}] of which only [${up.join(', ')}] are reachable: no quorum`,
          'nodeId',
        );
      }
    }
    const index = this.appendEntries([{ type: 'confChange', data: encoded }]);
    this.pendingConfIndex = index;
    this.appendsPending = true;
    return index;
  }

  /**
   * The shell applies a committed membership change: the new membership takes effect here.
   * A leader that is no longer a voter hands over to the most caught-up voter and steps down.
   */
  applyConfChange(cc: ConfChange): ConfState {
    const next = applyConfChangeTo(this.tracker.confState(), cc);
    this.tracker.setConfig(next, this.log.lastIndex() + 1);
    if (this.role !== 'leader') return next;
    if (!this.tracker.voters.has(this.id)) {
      // Removed: hand over rather than vanish. The remaining voters may not know yet that
      // the removal is committed (they would campaign on the old membership, which needs
      // this node's vote), so this node keeps replicating, refuses proposals, and steps
      // down once the most caught-up voter has everything and has been told to campaign
      // (or after an election timeout).
      let best: NodeId = 0;
      let bestMatch = -1;
      for (const id of this.tracker.voters) {
        const m = this.tracker.progress.get(id)?.match ?? 0;
        if (m > bestMatch) {
          best = id;
          bestMatch = m;
        }
      }
      if (best === 0) {
        this.becomeFollower(this.term, 0);
        return next;
      }
      this.leadTransferee = best;
      this.electionElapsed = 0;
      if (bestMatch === this.log.lastIndex()) {
        this.send({ type: 'timeoutNow', from: this.id, to: best, term: this.term });
        this.becomeFollower(this.term, 0);
        return next;
      }
      this.appendsPending = true;
      return next;
    }
    if (this.leadTransferee !== 0 && !this.tracker.voters.has(this.leadTransferee)) this.leadTransferee = 0;
    // A smaller quorum may commit more at once.
    if (this.maybeCommit()) this.appendsPending = true;
    this.appendsPending = true;
    return next;
  }

  /** Hands leadership to voter `to` once its log is complete (§3.10 of the dissertation). */
  transferLeadership(to: NodeId): void {
    if (this.role !== 'leader') throw new NotLeaderError(this.leader);
    if (to === this.id) return;
    if (!this.tracker.voters.has(to)) {
      throw new CairnError('CAIRN_RAFT_BAD_CHANGE', `node ${to} is not a voter and cannot lead`, 'to');
    }
    if (this.leadTransferee === to) return;
    this.leadTransferee = to;
    // Counts against the same budget as CheckQuorum: abandoned after an election timeout.
    this.electionElapsed = 0;
    const pr = this.tracker.progress.get(to)!;
    if (pr.match === this.log.lastIndex()) {
      this.send({ type: 'timeoutNow', from: this.id, to, term: this.term });
    } else {
      this.sendAppend(to, true);
    }
  }

  /**
   * Asks for a linearizable read tagged `context`. The answer arrives as a ReadState in a
   * later Ready. Returns false when the read was dropped (no leader known); the caller retries.
   */
  readIndex(context: Uint8Array): boolean {
    if (this.role === 'leader') {
      this.handleReadIndex({ from: this.id, context });
      return true;
    }
    if (this.role === 'follower' && this.leader !== 0) {
      this.send({ type: 'readIndex', from: this.id, to: this.leader, term: this.term, context });
      return true;
    }
    return false;
  }

  private handleReadIndex(req: ReadRequest): void {
    if (this.log.term(this.log.committed) !== this.term) {
      // Until an entry of this term commits, the commit index may be behind what earlier
      // leaders committed: wait (§6.4).
      this.readsBeforeCommit.push(req);
      return;
    }
    const index = this.log.committed;
    if (isQuorum(this.tracker.voters, (id) => id === this.id)) {
      this.answerRead(req, index);
      return;
    }
    const tag = this.reads.start(index, req, this.id);
    this.broadcastHeartbeat(tag);
  }

  private answerRead(req: ReadRequest, index: number): void {
    if (req.from === this.id) {
      this.readStates.push({ index, context: req.context });
    } else {
      this.send({ type: 'readIndexResponse', from: this.id, to: req.from, term: this.term, index, context: req.context, reject: false });
    }
  }

  /** The transport could not reach `id`: stop pipelining to it until it answers again. */
  reportUnreachable(id: NodeId): void {
    const pr = this.tracker.progress.get(id);
    if (this.role === 'leader' && pr !== undefined && pr.state === 'replicate') pr.becomeProbe();
  }

  /**
   * `id` presented a storage other than the one the group knew (its data dir was lost or
   * replaced): what it acknowledged is gone with it, so a leader forgets its match and
   * treats it as a new, unmatched peer. Nothing it sends is let through until it is removed
   * and added back; this only makes the leader's count honest.
   */
  reportStorageLost(id: NodeId): void {
    const pr = this.tracker.progress.get(id);
    if (this.role !== 'leader' || pr === undefined || id === this.id) return;
    pr.match = 0;
    pr.recentActive = false;
    pr.becomeProbe();
    pr.next = this.log.lastIndex() + 1;
  }

  /**
   * The transport saw its connection to `id` break (a crashed process resets its sockets).
   * If `id` is this follower's leader, the follower stops trusting it: its lease ends and it
   * campaigns within a few ticks instead of waiting out a whole election timeout. PreVote
   * keeps this safe: a follower that still hears the leader refuses the pre-vote, so one
   * broken connection cannot depose a live leader.
   */
  reportLeaderConnectionLost(id: NodeId): void {
    if (this.role !== 'follower' || this.leader === 0 || this.leader !== id) return;
    this.electionElapsed = Math.max(this.electionElapsed, this.cfg.electionTicks);
    // A small random delay, so that the followers that noticed do not all campaign at once.
    this.randomizedElectionTimeout = this.electionElapsed + 1 + randomInt(this.cfg.random, 3);
  }

  /** The transport finished sending a snapshot to `id`, successfully or not. */
  reportSnapshot(id: NodeId, ok: boolean): void {
    const pr = this.tracker.progress.get(id);
    if (this.role !== 'leader' || pr === undefined || pr.state !== 'snapshot') return;
    if (!ok) pr.pendingSnapshot = 0;
    pr.becomeProbe();
    // Wait for the follower's next heartbeat answer before probing again.
    pr.probeSent = true;
  }

  private send(m: Message): void {
    this.msgs.push(m);
  }
}
