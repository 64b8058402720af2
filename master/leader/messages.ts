// What goes into the leader's core and what comes out of it. The core (leader-core.ts) is
// pure: `step(nowMs, input)` is its one entry point, in the manner of etcd's raft `Step`, and
// returns the effects for its shell (master.ts in a daemon, the cluster simulator in tests)
// to carry out in order. Connections are named by numbers and streams by ids the shell
// chooses; the core never sees a socket, a timer or a file.

import type { AgentToMaster, MasterToAgent } from '../../shared/agent-messages.ts';
import type { CairnError } from '../../shared/errors.ts';
import type { SchedulerEvent } from '../../shared/mesos-v1.ts';
import type { FrameworkSpec, SchedulerCallParsed } from '../scheduler-calls.ts';
import type { AgentDrain, RegistryCommand } from '../registry/commands.ts';
import type { RegistryEvent } from '../registry/state-machine.ts';
import type { QuotaRecord } from '../registry/commands.ts';

/** An agent's connection, numbered by the shell; never reused while the core runs. */
export type ConnId = number;
/** A framework's event stream (its Mesos-Stream-Id). */
export type StreamId = string;
/** A request whose answer the shell waits for (SUBSCRIBE, operator calls). */
export type RequestId = number;
/** A registry command handed to the log; its outcome comes back as `committed` or `proposal_failed`. */
export type ProposalId = number;

export type SchedulerCall = Exclude<SchedulerCallParsed, { type: 'SUBSCRIBE' }>;

/** Operator calls answered once what they change is durable. */
export type OperatorCall =
  | { type: 'kill_task'; taskId: string }
  | { type: 'drain_agent'; agentId: string; deadlineAtMs: number | null }
  | { type: 'undrain_agent'; agentId: string }
  | { type: 'set_role_weight'; role: string; weight: number }
  /** A role's quota set, or removed with `quota: null`; refused (naming the field) when it does not fit the others. */
  | { type: 'set_quota'; role: string; quota: QuotaRecord | null }
  /** Mesos' operator TEARDOWN: the framework is removed and its tasks killed. */
  | { type: 'teardown_framework'; frameworkId: string };

export type LeaderInput =
  /** `principal`: the agent credential it authenticated with ('' where the master authenticates no one). */
  | { type: 'agent_connected'; conn: ConnId; remoteAddress: string; principal: string }
  | { type: 'agent_disconnected'; conn: ConnId }
  /** A frame that decoded; the shell drops bad frames with `agent_bad_frame`. */
  | { type: 'agent_frame'; conn: ConnId; frame: AgentToMaster }
  | { type: 'agent_bad_frame'; conn: ConnId; error: CairnError }
  /** SUBSCRIBE on a new stream; answered by `reply` with the framework id once durable. */
  | { type: 'subscribe'; request: RequestId; stream: StreamId; spec: FrameworkSpec }
  | { type: 'stream_closed'; stream: StreamId }
  /** Every other scheduler call; `streamId` is the caller's Mesos-Stream-Id header. */
  | { type: 'scheduler_call'; call: SchedulerCall; streamId: StreamId | undefined }
  | { type: 'operator'; request: RequestId; call: OperatorCall }
  /** Gossip's opinion changed for these agents (all reachable ones when absent). */
  | { type: 'gossip_changed'; agentIds?: string[] }
  | { type: 'committed'; proposal: ProposalId; events: RegistryEvent[] }
  | { type: 'proposal_failed'; proposal: ProposalId; message: string }
  /** Time passed: the shell calls this at `nextWakeMs()` (or later). */
  | { type: 'tick' }
  /** The allocation the core asked for with `allocate_soon`. */
  | { type: 'allocate' };

export type LogLevel = 'debug' | 'info' | 'warn' | 'error';

export type LeaderEffect =
  /** Make a registry command durable; its outcome is fed back with the same proposal id. */
  | { type: 'propose'; proposal: ProposalId; command: RegistryCommand }
  | { type: 'to_agent'; conn: ConnId; msg: MasterToAgent }
  | { type: 'close_agent'; conn: ConnId; code: number; reason: string }
  | { type: 'to_framework'; stream: StreamId; event: SchedulerEvent }
  /** Ends the stream (its framework failed over to another, was removed, or the core stops). */
  | { type: 'end_stream'; stream: StreamId }
  | { type: 'reply'; request: RequestId; result: ReplyValue }
  | { type: 'reply_error'; request: RequestId; error: CairnError }
  /** Run an allocation (`allocate`) soon, once for any number of these in one turn. */
  | { type: 'allocate_soon' }
  | { type: 'log'; level: LogLevel; msg: string; fields: Record<string, unknown> };

export type ReplyValue =
  | { type: 'subscribed'; frameworkId: string }
  | { type: 'drained'; drain: AgentDrain }
  | { type: 'done' };
