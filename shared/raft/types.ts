// The values the Raft core takes in and hands out: log entries, snapshots, hard state,
// membership, and the messages peers exchange. Plain data, no behaviour, so that the
// core, its storage, the wire codec and the simulation all speak the same shapes.
//
// Node ids, terms and indexes are positive safe integers; 0 means "none" (no vote, no
// leader, the empty log's last index).

export type NodeId = number;

/** `normal` carries an application command (empty data: the leader's no-op); `confChange` a membership change. */
export type EntryType = 'normal' | 'confChange';

export interface Entry {
  readonly index: number;
  readonly term: number;
  readonly type: EntryType;
  /** Opaque to the core. Never mutated once in an entry. */
  readonly data: Uint8Array;
}

/** What must be on disk before any message that depends on it is sent. */
export interface HardState {
  readonly term: number;
  /** Whom this node voted for in `term`; 0 when it has not voted. */
  readonly vote: NodeId;
  /** Highest index known committed; persisted so a restart does not re-deliver less. */
  readonly commit: number;
}

/** The membership: voters decide elections and commits; learners only receive the log. */
export interface ConfState {
  readonly voters: readonly NodeId[];
  readonly learners: readonly NodeId[];
}

export interface SnapshotMetadata {
  /** Last index the snapshot covers, and that entry's term. */
  readonly index: number;
  readonly term: number;
  /** The membership as of `index`. */
  readonly confState: ConfState;
}

export interface Snapshot {
  readonly metadata: SnapshotMetadata;
  /** The application's state as of `metadata.index`; opaque to the core. */
  readonly data: Uint8Array;
}

/** Single-server membership changes. A replacement is addLearner, promote, remove. */
export type ConfChangeType = 'addLearner' | 'promote' | 'remove';

export interface ConfChange {
  readonly type: ConfChangeType;
  readonly nodeId: NodeId;
  /**
   * Opaque to the core: what the application records with the change (the master's URL for
   * an added one), carried in the entry so every member learns it when it applies the change.
   */
  readonly context?: Uint8Array;
}

export type Role = 'follower' | 'preCandidate' | 'candidate' | 'leader';

// ---------------------------------------------------------------------------------------
// Messages. Every message carries the sender's term; a term of 0 marks none of these
// (all peer messages have a term), so the field is always set.

interface Base {
  readonly from: NodeId;
  readonly to: NodeId;
  readonly term: number;
}

/** AppendEntries: entries following (prevIndex, prevTerm); commit is the leader's commit index. */
export interface AppendMessage extends Base {
  readonly type: 'append';
  readonly prevIndex: number;
  readonly prevTerm: number;
  readonly entries: readonly Entry[];
  readonly commit: number;
}

/**
 * The answer to append or snapshot. Accepted: `index` is the last index now matching the
 * leader. Rejected: `index` is the prevIndex that did not match, and (hintIndex, hintTerm)
 * say where the follower's log could match, so the leader skips a whole term at a time.
 */
export interface AppendResponseMessage extends Base {
  readonly type: 'appendResponse';
  readonly index: number;
  readonly reject: boolean;
  readonly hintIndex: number;
  readonly hintTerm: number;
}

/** RequestVote; `preVote` asks "would you vote for me" without anyone changing term. */
export interface VoteMessage extends Base {
  readonly type: 'vote' | 'preVote';
  readonly lastIndex: number;
  readonly lastTerm: number;
  /** Set when the election was started by a leadership transfer: voters ignore their leader lease. */
  readonly transfer: boolean;
}

export interface VoteResponseMessage extends Base {
  readonly type: 'voteResponse' | 'preVoteResponse';
  readonly reject: boolean;
}

/** Keeps followers from electing; `context` non-empty when it also confirms a ReadIndex round. */
export interface HeartbeatMessage extends Base {
  readonly type: 'heartbeat';
  readonly commit: number;
  readonly context: Uint8Array;
}

export interface HeartbeatResponseMessage extends Base {
  readonly type: 'heartbeatResponse';
  readonly context: Uint8Array;
}

/** InstallSnapshot, whole (snapshots are sent in one message). */
export interface SnapshotMessage extends Base {
  readonly type: 'snapshot';
  readonly snapshot: Snapshot;
}

/** Sent by a leader transferring leadership: the receiver campaigns at once. */
export interface TimeoutNowMessage extends Base {
  readonly type: 'timeoutNow';
}

/** A follower asks the leader for a read index on behalf of a local reader. */
export interface ReadIndexMessage extends Base {
  readonly type: 'readIndex';
  readonly context: Uint8Array;
}

/** The leader's answer: reads with `context` may be served once `index` is applied. */
export interface ReadIndexResponseMessage extends Base {
  readonly type: 'readIndexResponse';
  readonly index: number;
  readonly context: Uint8Array;
  readonly reject: boolean;
}

export type Message =
  | AppendMessage
  | AppendResponseMessage
  | VoteMessage
  | VoteResponseMessage
  | HeartbeatMessage
  | HeartbeatResponseMessage
  | SnapshotMessage
  | TimeoutNowMessage
  | ReadIndexMessage
  | ReadIndexResponseMessage;

export type MessageType = Message['type'];

export const MESSAGE_TYPES: readonly MessageType[] = [
  'append', 'appendResponse', 'vote', 'voteResponse', 'preVote', 'preVoteResponse',
  'heartbeat', 'heartbeatResponse', 'snapshot', 'timeoutNow', 'readIndex', 'readIndexResponse',
];

/** A confirmed read: once `index` is applied locally, reads tagged `context` are linearizable. */
export interface ReadState {
  readonly index: number;
  readonly context: Uint8Array;
}

export const EMPTY_BYTES: Uint8Array = new Uint8Array(0);

export const EMPTY_HARD_STATE: HardState = { term: 0, vote: 0, commit: 0 };

export function isEmptySnapshot(s: Snapshot | undefined): boolean {
  return s === undefined || s.metadata.index === 0;
}

export function hardStateEqual(a: HardState, b: HardState): boolean {
  return a.term === b.term && a.vote === b.vote && a.commit === b.commit;
}

export function bytesEqual(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** Size of an entry for batching limits: its payload plus a fixed overhead. */
export function entrySize(e: Entry): number {
  return e.data.length + 24;
}
