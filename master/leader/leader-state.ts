// The leader core's one state, shared by its concerns (agents.ts, agent-liveness.ts,
// subscriptions.ts, launches.ts, updates.ts, allocation.ts, quotas.ts, preempting.ts,
// operators.ts), and the one way out of it: the effects a step collects for the shell. Each
// concern is a set of functions over this state; leader-core.ts owns it and dispatches every
// input to them, as etcd's raft keeps progress, quorum and configuration changes in files of
// their own over one `raft` struct.
//
// Pure: time is `nowMs`, set by the core at each step; chance is the injected random source.

import type { UsageReport } from '../../shared/agent-messages.ts';
import type { MemberState } from '../../shared/gossip/messages.ts';
import type { SchedulerEvent } from '../../shared/mesos-v1.ts';
import { randomBytesOf, type RandomSource } from '../../shared/random.ts';
import type { Resources } from '../../shared/resources.ts';
import { livenessPolicy, type LivenessPolicy } from './liveness-verdict.ts';
import { Allocator } from '../allocator/allocator.ts';
import { MasterMetrics } from '../metrics.ts';
import { OfferBook } from '../offers.ts';
import type { RegistryCommand } from '../registry/commands.ts';
import type { RegistryEvent, RegistryStateMachine } from '../registry/state-machine.ts';
import type { CompiledQuotas } from '../sharing/quota-policy.ts';
import type { LeaderConfig } from './config.ts';
import type { ConnId, LeaderEffect, LogLevel, ProposalId, ReplyValue, RequestId, StreamId } from './messages.ts';
import { CairnError } from '../../shared/errors.ts';

export interface LeaderCoreOptions {
  config: LeaderConfig;
  /** The registry's state as of the last committed command (read only: changes go through `propose`). */
  registry: () => RegistryStateMachine;
  random: RandomSource;
  nowMs: number;
  /** Gossip's opinion of an agent; absent without gossip. */
  gossip?: (agentId: string) => MemberState | undefined;
  /** A task's DNS name (task.framework.domain), given to its agent at launch; '' for none. */
  taskDnsName?: (taskName: string, frameworkName: string) => string;
  /** Whose a task is (its framework's principal, or its app's or job's owner), given to its agent at launch; '' for no one's. */
  taskPrincipal?: (frameworkId: string, labels: { name: string; value: string }[]) => string;
}

/** One agent connection as the core sees it. */
export interface AgentConn {
  readonly conn: ConnId;
  readonly remoteAddress: string;
  /** The agent credential it authenticated with: it may speak only for agents of that principal. */
  readonly principal: string;
  /** Set once a registration over this connection is committed. */
  agentId: string | undefined;
  /** Pings sent since the last pong. */
  missedPings: number;
  awaitingPong: boolean;
  closed: boolean;
}

/** A subscribed framework's open event stream. */
export interface Session {
  readonly stream: StreamId;
  nextHeartbeatMs: number;
}

/** What to do once a proposal is committed (or fails). */
interface Pending {
  committed(events: RegistryEvent[]): void;
  failed(message: string): void;
}

/** Why a task is killed, when a preemption kills it (absent: its framework or an operator asked). */
export interface KillReason {
  reason: string;
  message: string;
  graceMs: number;
}

type AgentMessage = Extract<LeaderEffect, { type: 'to_agent' }>['msg'];

export class LeaderState {
  readonly config: LeaderConfig;
  readonly registry: () => RegistryStateMachine;
  readonly random: RandomSource;
  readonly liveness: LivenessPolicy;
  readonly gossip: ((agentId: string) => MemberState | undefined) | undefined;
  readonly taskDnsName: ((taskName: string, frameworkName: string) => string) | undefined;
  readonly taskPrincipal: LeaderCoreOptions['taskPrincipal'];
  readonly allocator: Allocator;
  readonly offers: OfferBook;
  readonly metrics = new MasterMetrics();
  readonly startedAtMs: number;

  readonly conns = new Map<ConnId, AgentConn>();
  /** The connection each registered agent speaks over. */
  readonly links = new Map<string, AgentConn>();
  readonly sessions = new Map<string, Session>();
  /** Streams that asked to subscribe and are not yet answered; value: closed meanwhile. */
  readonly subscribing = new Map<StreamId, boolean>();
  /** When a disconnected framework is removed for good. */
  readonly failoverDeadlines = new Map<string, number>();
  /** The latest usage sums each connected agent sent (soft state, gone with its connection). */
  readonly usage = new Map<string, UsageReport>();
  /** Last time each agent was heard from, for agents without a live connection. */
  readonly lastSeenMs = new Map<string, number>();
  /** Kills waiting for an agent that has no connection right now, with the reason a preemption gave. */
  readonly pendingKills = new Map<string, KillReason | undefined>();
  /** Preemptions decided and not yet over: per preemptor, its victims and when it gives up waiting. */
  readonly preempting = new Map<string, { victims: Set<string>; untilMs: number }>();
  /** The roles' quotas as the allocator and preemption read them. */
  quotas: CompiledQuotas | undefined;
  /** Per role, what tasks hold on agents the allocator does not have; counted in the quotas (see quotas.ts). */
  heldElsewhere: ReadonlyMap<string, Resources> = new Map();
  readonly rescinded = new Set<string>();
  /**
   * Launches proposed and not yet committed: a second launch must not reuse their ids, and
   * what they take of their agent is held even if the agent is rebuilt in the allocator
   * (it re-registers) before they are in the registry.
   */
  readonly launching = new Map<string, { agentId: string; frameworkId: string; resources: Resources }>();
  /**
   * The agent last registered at each address (ip, port, hostname), so that a new agent there
   * finds the one it succeeds without a scan of every agent (10,000 at scale, per registration).
   */
  readonly agentAt = new Map<string, string>();
  /** Agents gossip declared dead, and when a ping went out to confirm it. */
  readonly confirmations = new Map<string, number>();
  readonly pending = new Map<ProposalId, Pending>();
  /** When this core first sent each update still unacknowledged (by uuid), on its clock; pruned at each re-send round. */
  forwardedAt = new Map<string, number>();
  nextProposal = 1;
  nextPingRoundMs: number;
  nextAllocationMs: number;
  nextResendMs: number;
  allocationRequested = false;
  stopped = false;
  nowMs: number;
  private out: LeaderEffect[] = [];

  constructor(opts: LeaderCoreOptions) {
    this.config = opts.config;
    this.registry = opts.registry;
    this.random = opts.random;
    this.gossip = opts.gossip;
    this.taskDnsName = opts.taskDnsName;
    this.taskPrincipal = opts.taskPrincipal;
    this.nowMs = opts.nowMs;
    this.startedAtMs = opts.nowMs;
    this.liveness = livenessPolicy(this.config.pingIntervalMs, this.config.maxMissedPings);
    this.offers = new OfferBook(hex(randomBytesOf(this.random, 4)));
    this.allocator = new Allocator({ roleWeights: { ...this.config.roleWeights, ...Object.fromEntries(this.registry().roleWeights) } });
    this.nextPingRoundMs = this.nowMs + this.config.pingIntervalMs;
    this.nextAllocationMs = this.nowMs + this.config.allocationIntervalMs;
    this.nextResendMs = this.nowMs + this.config.updateRetryMs;
  }

  // ------------------------------------------------------------------ effects

  /** The effects collected since the last take, in order. */
  take(): LeaderEffect[] {
    const out = this.out;
    this.out = [];
    return out;
  }

  emit(e: LeaderEffect): void {
    this.out.push(e);
  }

  log(level: LogLevel, msg: string, fields: Record<string, unknown> = {}): void {
    this.emit({ type: 'log', level, msg, fields });
  }

  propose(command: RegistryCommand, then: (events: RegistryEvent[]) => void, failed?: (message: string) => void): void {
    const proposal = this.nextProposal++;
    this.pending.set(proposal, {
      committed: then,
      failed: failed ?? ((message) => this.log('warn', 'registry change failed', { command: command.type, err: message })),
    });
    this.emit({ type: 'propose', proposal, command });
  }

  /** Runs what waited on a proposal, once: committed (with its events) or failed. */
  settle(proposal: ProposalId, outcome: { events: RegistryEvent[] } | { message: string }): void {
    const p = this.pending.get(proposal);
    if (!p) return;
    this.pending.delete(proposal);
    if ('events' in outcome) p.committed(outcome.events);
    else p.failed(outcome.message);
  }

  toAgent(agentId: string, msg: AgentMessage): boolean {
    const c = this.links.get(agentId);
    if (!c) return false;
    this.sendConn(c, msg);
    return true;
  }

  sendConn(c: AgentConn, msg: AgentMessage): void {
    if (!c.closed) this.emit({ type: 'to_agent', conn: c.conn, msg });
  }

  closeConn(c: AgentConn, code: number, reason: string): void {
    if (c.closed) return;
    c.closed = true;
    this.emit({ type: 'close_agent', conn: c.conn, code, reason });
  }

  toFramework(frameworkId: string, event: SchedulerEvent): void {
    const s = this.sessions.get(frameworkId);
    if (s) this.emit({ type: 'to_framework', stream: s.stream, event });
  }

  reply(request: RequestId, result: ReplyValue): void {
    this.emit({ type: 'reply', request, result });
  }

  replyFailed(request: RequestId, message: string): void {
    this.emit({ type: 'reply_error', request, error: new CairnError('CAIRN_NOT_LEADER', `not recorded: ${message}`, 'request') });
  }

  requestAllocation(): void {
    if (this.allocationRequested) return;
    this.allocationRequested = true;
    this.emit({ type: 'allocate_soon' });
  }

  uuid(): string {
    return Buffer.from(randomBytesOf(this.random, 16)).toString('base64');
  }

  uuids(n: number): string[] {
    return Array.from({ length: n }, () => this.uuid());
  }
}

function hex(bytes: Uint8Array): string {
  return Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
}
