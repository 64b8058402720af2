// Options in, defaults filled, one frozen config out. Durations are in ticks (the shell
// decides how long a tick is: the master ticks every 100 ms), sizes in bytes.

import { CairnError } from '../errors.ts';
import type { RandomSource } from '../random.ts';
import type { NodeId } from './types.ts';

export interface RaftOptions {
  /** This node's id: a positive integer, unique in the group, never reused. */
  id: NodeId;
  /** Where randomized election timeouts come from; seed it per node. */
  random: RandomSource;
  /** Ticks without hearing from a leader before campaigning; the real timeout is drawn from [electionTicks, 2·electionTicks). */
  electionTicks?: number;
  /** Ticks between a leader's heartbeats; must be well under electionTicks. */
  heartbeatTicks?: number;
  /** Ask for votes only after a pre-vote round that would win, so a node rejoining after a partition cannot inflate terms and depose a healthy leader. */
  preVote?: boolean;
  /** A leader that has not heard from a quorum for an election timeout steps down; followers then also ignore vote requests while they hear from a leader. */
  checkQuorum?: boolean;
  /** Most entry bytes in one append message (at least one entry is always sent). */
  maxMessageBytes?: number;
  /** Most append messages in flight to one follower (pipelining window). */
  maxInflightMessages?: number;
  /** Most entry bytes in flight to one follower; 0 for no byte limit. */
  maxInflightBytes?: number;
  /** Most proposed-but-uncommitted entry bytes a leader accepts before refusing proposals. */
  maxUncommittedBytes?: number;
  /** Most committed entry bytes handed out in one Ready (at least one entry). */
  maxApplyBytes?: number;
  /** How many entries a learner may trail the commit index by and still be promoted. */
  learnerCatchUpEntries?: number;
}

export interface RaftConfig {
  readonly id: NodeId;
  readonly random: RandomSource;
  readonly electionTicks: number;
  readonly heartbeatTicks: number;
  readonly preVote: boolean;
  readonly checkQuorum: boolean;
  readonly maxMessageBytes: number;
  readonly maxInflightMessages: number;
  readonly maxInflightBytes: number;
  readonly maxUncommittedBytes: number;
  readonly maxApplyBytes: number;
  readonly learnerCatchUpEntries: number;
}

export const RAFT_DEFAULTS = {
  // 10 ticks of 100 ms: a 1 s election timeout, etcd's default, long enough to ride out a
  // GC pause or a busy disk, short enough to fail over within the 1.5 s target.
  electionTicks: 10,
  // One heartbeat per tick: a follower sees ~10 before it would campaign.
  heartbeatTicks: 1,
  preVote: true,
  checkQuorum: true,
  // 1 MiB per append keeps one slow message from delaying heartbeats behind it.
  maxMessageBytes: 1 << 20,
  // 256 messages in flight lets a follower on a 1 ms link absorb bursts without stalls.
  maxInflightMessages: 256,
  maxInflightBytes: 0,
  // 64 MiB uncommitted caps leader memory when followers fall behind.
  maxUncommittedBytes: 64 << 20,
  maxApplyBytes: 64 << 20,
  // A learner within 100 entries of the commit index catches up within a round trip or two.
  learnerCatchUpEntries: 100,
} as const;

function positiveInt(value: number, field: string, min = 1): number {
  if (!Number.isSafeInteger(value) || value < min) {
    throw new CairnError('CAIRN_BAD_REQUEST', `must be an integer ≥ ${min}, got ${value}`, field);
  }
  return value;
}

export function compileRaftConfig(o: RaftOptions): RaftConfig {
  const electionTicks = positiveInt(o.electionTicks ?? RAFT_DEFAULTS.electionTicks, 'electionTicks', 2);
  const heartbeatTicks = positiveInt(o.heartbeatTicks ?? RAFT_DEFAULTS.heartbeatTicks, 'heartbeatTicks');
  if (heartbeatTicks >= electionTicks) {
    throw new CairnError('CAIRN_BAD_REQUEST', `must be less than electionTicks (${electionTicks}), got ${heartbeatTicks}`, 'heartbeatTicks');
  }
  if (typeof o.random?.nextU32 !== 'function') {
    throw new CairnError('CAIRN_BAD_REQUEST', 'a seeded random source is required', 'random');
  }
  return Object.freeze({
    id: positiveInt(o.id, 'id'),
    random: o.random,
    electionTicks,
    heartbeatTicks,
    preVote: o.preVote ?? RAFT_DEFAULTS.preVote,
    checkQuorum: o.checkQuorum ?? RAFT_DEFAULTS.checkQuorum,
    maxMessageBytes: positiveInt(o.maxMessageBytes ?? RAFT_DEFAULTS.maxMessageBytes, 'maxMessageBytes'),
    maxInflightMessages: positiveInt(o.maxInflightMessages ?? RAFT_DEFAULTS.maxInflightMessages, 'maxInflightMessages'),
    maxInflightBytes: positiveInt(o.maxInflightBytes ?? RAFT_DEFAULTS.maxInflightBytes, 'maxInflightBytes', 0),
    maxUncommittedBytes: positiveInt(o.maxUncommittedBytes ?? RAFT_DEFAULTS.maxUncommittedBytes, 'maxUncommittedBytes'),
    maxApplyBytes: positiveInt(o.maxApplyBytes ?? RAFT_DEFAULTS.maxApplyBytes, 'maxApplyBytes'),
    learnerCatchUpEntries: positiveInt(o.learnerCatchUpEntries ?? RAFT_DEFAULTS.learnerCatchUpEntries, 'learnerCatchUpEntries', 0),
  });
}
