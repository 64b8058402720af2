// What a leader knows of one follower's log, and how it is feeding it:
//  - probe: the leader does not know where the logs match; one append at a time, waiting
//    for the answer (or the next heartbeat) before trying again, stepping back on rejects;
//  - replicate: the logs match up to `match`; appends are pipelined optimistically, at most
//    an inflight window ahead;
//  - snapshot: the entries the follower needs are compacted away; a snapshot is on its way
//    and nothing else is sent until it is answered (or given up on).

import { Inflights } from './inflights.ts';

export type ProgressState = 'probe' | 'replicate' | 'snapshot';

export class Progress {
  /** Highest index known to match the leader's log. */
  match = 0;
  /** Next index to send. */
  next: number;
  state: ProgressState = 'probe';
  /** In probe: an append was sent and is unanswered, so the follower is paused. */
  probeSent = false;
  /** In snapshot: the index of the snapshot on its way. */
  pendingSnapshot = 0;
  /** Ticks since the snapshot was sent; a lost snapshot is retried after a while. */
  snapshotTicks = 0;
  /** Heard from since the last CheckQuorum round. */
  recentActive = false;
  readonly inflights: Inflights;

  constructor(
    next: number,
    maxInflightMessages: number,
    maxInflightBytes: number,
    public isLearner: boolean,
  ) {
    this.next = next;
    this.inflights = new Inflights(maxInflightMessages, maxInflightBytes);
  }

  private resetState(state: ProgressState): void {
    this.state = state;
    this.probeSent = false;
    this.pendingSnapshot = 0;
    this.snapshotTicks = 0;
    this.inflights.reset();
  }

  becomeProbe(): void {
    // After a snapshot, the follower has at least the snapshot: probe from just past it.
    const from = this.state === 'snapshot' ? Math.max(this.match + 1, this.pendingSnapshot + 1) : this.match + 1;
    this.resetState('probe');
    this.next = from;
  }

  becomeReplicate(): void {
    this.resetState('replicate');
    this.next = this.match + 1;
  }

  becomeSnapshot(snapshotIndex: number): void {
    this.resetState('snapshot');
    this.pendingSnapshot = snapshotIndex;
  }

  /** The follower acknowledged up to `index`; false if that was old news. */
  maybeUpdate(index: number): boolean {
    let updated = false;
    if (this.match < index) {
      this.match = index;
      updated = true;
      this.probeSent = false;
    }
    this.next = Math.max(this.next, index + 1);
    return updated;
  }

  /** Notes an append carrying entries up to `lastIndex` (or none: `lastIndex` = next - 1). */
  sentAppend(lastIndex: number, bytes: number, entryCount: number): void {
    if (this.state === 'replicate') {
      if (entryCount > 0) {
        this.next = lastIndex + 1;
        this.inflights.add(lastIndex, bytes);
      }
    } else if (this.state === 'probe') {
      this.probeSent = true;
    }
  }

  /**
   * The follower rejected an append whose previous index was `rejected`; `matchHint` is the
   * highest index that may still match. False when the reject is stale (answers an older
   * append than the one the leader is waiting on).
   */
  maybeDecrease(rejected: number, matchHint: number): boolean {
    if (this.state === 'replicate') {
      if (rejected <= this.match) return false;
      // Pipelined appends went past a mismatch: fall back to right after what matches.
      this.next = this.match + 1;
      return true;
    }
    if (this.next - 1 !== rejected) return false;
    this.next = Math.max(Math.min(rejected, matchHint + 1), this.match + 1);
    this.probeSent = false;
    return true;
  }

  isPaused(): boolean {
    switch (this.state) {
      case 'probe':
        return this.probeSent;
      case 'replicate':
        return this.inflights.full();
      case 'snapshot':
        return true;
    }
  }
}
