// The leader's (and candidate's) view of the group: who votes, who learns, each member's
// progress, and the votes gathered in the current election. Counting rules live in
// quorum.ts; this keeps the bookkeeping.

import { Progress } from './progress.ts';
import { isQuorum, quorumMatchIndex, voteResult, type VoteResult } from './quorum.ts';
import type { ConfState, NodeId } from './types.ts';

export class ProgressTracker {
  voters = new Set<NodeId>();
  learners = new Set<NodeId>();
  readonly progress = new Map<NodeId, Progress>();
  readonly votes = new Map<NodeId, boolean>();

  constructor(
    private readonly maxInflightMessages: number,
    private readonly maxInflightBytes: number,
  ) {}

  confState(): ConfState {
    return { voters: [...this.voters].sort((a, b) => a - b), learners: [...this.learners].sort((a, b) => a - b) };
  }

  /** Adopts a membership; progress of new members starts at `nextIndex`, others keep theirs. */
  setConfig(cs: ConfState, nextIndex: number): void {
    this.voters = new Set(cs.voters);
    this.learners = new Set(cs.learners);
    for (const id of [...this.progress.keys()]) {
      if (!this.voters.has(id) && !this.learners.has(id)) this.progress.delete(id);
    }
    for (const id of [...this.voters, ...this.learners]) {
      const pr = this.progress.get(id);
      if (pr === undefined) {
        const fresh = new Progress(nextIndex, this.maxInflightMessages, this.maxInflightBytes, this.learners.has(id));
        // A member added by a change counts as active until the next CheckQuorum round, so
        // that adding it does not at once cost the leader its quorum.
        fresh.recentActive = true;
        this.progress.set(id, fresh);
      } else {
        pr.isLearner = this.learners.has(id);
      }
    }
  }

  isMember(id: NodeId): boolean {
    return this.voters.has(id) || this.learners.has(id);
  }

  /** Highest index a quorum of voters has matched. */
  committedIndex(): number {
    return quorumMatchIndex(this.voters, (id) => this.progress.get(id)?.match ?? 0);
  }

  resetVotes(): void {
    this.votes.clear();
  }

  recordVote(id: NodeId, granted: boolean): void {
    if (!this.votes.has(id)) this.votes.set(id, granted);
  }

  tallyVotes(): { result: VoteResult; granted: number; rejected: number } {
    let granted = 0;
    let rejected = 0;
    for (const [id, v] of this.votes) {
      if (!this.voters.has(id)) continue;
      if (v) granted++;
      else rejected++;
    }
    return { result: voteResult(this.voters, this.votes), granted, rejected };
  }

  /** Whether the voters heard from recently (the leader counts itself) form a quorum. */
  quorumActive(self: NodeId): boolean {
    return isQuorum(this.voters, (id) => id === self || (this.progress.get(id)?.recentActive ?? false));
  }
}
