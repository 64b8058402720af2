// The leader's core: everything the leading master decides — agent registration and
// liveness, framework subscription and failover, offers and rescinds, ACCEPT/DECLINE
// validation, kills, status-update forwarding and acknowledgement, drains, reconciliation.
//
// Pure, in the manner of etcd's raft: `step(nowMs, input)` is the one entry point and
// returns effects (registry commands to make durable, frames for agents, events for
// frameworks, answers to requests) for the shell to carry out in order. Time comes in as
// `nowMs` (monotonic, in the epoch's range: see master.ts), chance from the injected random
// source; nothing here reads a clock, sets a timer or touches a socket. The shell calls `step(now, {type: 'tick'})` at `nextWakeMs()`.
//
// What must hold: nothing that depends on a registry change (an ack to an agent, a launch,
// an update to a framework, an answer) is emitted before the change is committed — the core
// emits `propose` and waits for `committed` with the same proposal id.

import { isTerminal, NOT_DRAINING, type DrainOrder, type Register, type StatusUpdate, type TaskInfo, type TaskState, type UsageReport } from '../../shared/agent-messages.ts';
import { CairnError } from '../../shared/errors.ts';
import type { MemberState } from '../../shared/gossip/messages.ts';
import type { OfferJson, SchedulerEvent } from '../../shared/mesos-v1.ts';
import { randomBytesOf, randomUuid, type RandomSource } from '../../shared/random.ts';
import { Resources } from '../../shared/resources.ts';
import { judgeAgent, livenessPolicy, type LivenessPolicy } from '../agents/liveness.ts';
import { Allocator, type QuotaPolicy } from '../allocator/allocator.ts';
import type { FrameworkSpec, TaskSpec } from '../api/scheduler-calls.ts';
import { MasterMetrics } from '../metrics.ts';
import { OfferBook, type OutstandingOffer } from '../offers.ts';
import type { AgentDrain, RegistryCommand, TaskRecord } from '../registry/commands.ts';
import type { RegistryEvent, RegistryStateMachine } from '../registry/state-machine.ts';
import type { LeaderConfig } from './config.ts';
import type { ConnId, LeaderEffect, LeaderInput, LogLevel, OperatorCall, ProposalId, ReplyValue, RequestId, SchedulerCall, StreamId } from './messages.ts';
import { offerJson, statusEvent, updateEvent } from './scheduler-events.ts';
import { classOf, decidePreemption } from './preemption.ts';
import { compileQuotas, type CompiledQuotas } from '../sharing/quota-policy.ts';
import { parseQuotaJson } from '../sharing/quotas.ts';
import { withPullAuth } from '../secrets/pull-auth.ts';
import type { PreemptionRecord, QuotaRecord } from '../registry/commands.ts';

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
interface AgentConn {
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

interface Session {
  readonly stream: StreamId;
  nextHeartbeatMs: number;
}

/** What to do once a proposal is committed (or fails). */
interface Pending {
  committed(events: RegistryEvent[]): void;
  failed(message: string): void;
}

const MIN_OFFER = Resources.of({ cpus: 0.01 });
const MIN_OFFER_MEM = Resources.of({ mem: 32 });
/** How many rescinded offer ids are remembered, to tell a late ACCEPT why it failed. */
const RESCINDED_MEMORY = 10_000;
/** A confirming ping's answer may come just after the window; judge a little later. */
const CONFIRM_SLACK_MS = 10;

export class LeaderCore {
  readonly allocator: Allocator;
  readonly offers: OfferBook;
  readonly metrics = new MasterMetrics();
  readonly startedAtMs: number;
  private readonly config: LeaderConfig;
  private readonly state: () => RegistryStateMachine;
  private readonly random: RandomSource;
  private readonly liveness: LivenessPolicy;
  private readonly gossip: ((agentId: string) => MemberState | undefined) | undefined;
  private readonly taskDnsName: ((taskName: string, frameworkName: string) => string) | undefined;
  private readonly taskPrincipal: LeaderCoreOptions['taskPrincipal'];

  private readonly conns = new Map<ConnId, AgentConn>();
  /** The connection each registered agent speaks over. */
  private readonly links = new Map<string, AgentConn>();
  private readonly sessions = new Map<string, Session>();
  /** Streams that asked to subscribe and are not yet answered; value: closed meanwhile. */
  private readonly subscribing = new Map<StreamId, boolean>();
  /** When a disconnected framework is removed for good. */
  private readonly failoverDeadlines = new Map<string, number>();
  /** The latest usage sums each connected agent sent (soft state, gone with its connection). */
  private readonly usage = new Map<string, UsageReport>();
  /** Last time each agent was heard from, for agents without a live connection. */
  private readonly lastSeenMs = new Map<string, number>();
  /** Kills waiting for an agent that has no connection right now, with the reason a preemption gave. */
  private readonly pendingKills = new Map<string, { reason: string; message: string; graceMs: number } | undefined>();
  /** Preemptions decided and not yet over: per preemptor, its victims and when it gives up waiting. */
  private readonly preempting = new Map<string, { victims: Set<string>; untilMs: number }>();
  /** The roles' quotas as the allocator and preemption read them. */
  private quotas: CompiledQuotas | undefined;
  /** Per role, what tasks hold on agents the allocator does not have; counted in the quotas (see countingElsewhere). */
  private heldElsewhere: ReadonlyMap<string, Resources> = new Map();
  private readonly rescinded = new Set<string>();
  /**
   * Launches proposed and not yet committed: a second launch must not reuse their ids, and
   * what they take of their agent is held even if the agent is rebuilt in the allocator
   * (it re-registers) before they are in the registry.
   */
  private readonly launching = new Map<string, { agentId: string; frameworkId: string; resources: Resources }>();
  /**
   * The agent last registered at each address (ip, port, hostname), so that a new agent there
   * finds the one it succeeds without a scan of every agent (10,000 at scale, per registration).
   */
  private readonly agentAt = new Map<string, string>();
  /** Agents gossip declared dead, and when a ping went out to confirm it. */
  private readonly confirmations = new Map<string, number>();
  private readonly pending = new Map<ProposalId, Pending>();
  /** When this core first sent each update still unacknowledged (by uuid), on its clock; pruned at each re-send round. */
  private forwardedAt = new Map<string, number>();
  private nextProposal = 1;
  private nextPingRoundMs: number;
  private nextAllocationMs: number;
  private nextResendMs: number;
  private allocationRequested = false;
  private stopped = false;
  private nowMs: number;
  private out: LeaderEffect[] = [];

  constructor(opts: LeaderCoreOptions) {
    this.config = opts.config;
    this.state = opts.registry;
    this.random = opts.random;
    this.gossip = opts.gossip;
    this.taskDnsName = opts.taskDnsName;
    this.taskPrincipal = opts.taskPrincipal;
    this.nowMs = opts.nowMs;
    this.startedAtMs = opts.nowMs;
    this.liveness = livenessPolicy(this.config.pingIntervalMs, this.config.maxMissedPings);
    this.offers = new OfferBook(hex(randomBytesOf(this.random, 4)));
    const state = this.state();
    this.allocator = new Allocator({ roleWeights: { ...this.config.roleWeights, ...Object.fromEntries(state.roleWeights) } });
    this.setQuotas([...state.quotas.values()]);
    // Frameworks from before a restart or a leader change are known but disconnected until
    // they resubscribe; they get at least the re-register grace to do so.
    for (const fw of state.frameworks.values()) {
      const active = state.activeTasksOf(fw.id).length > 0;
      if (fw.removedAtMs !== undefined && !active) continue;
      this.allocator.addFramework(fw.id, fw.role, { gpuAware: fw.capabilities?.includes('GPU_RESOURCES') ?? false, classRank: this.classRank(fw.priorityClass) });
      this.allocator.setFrameworkActive(fw.id, false);
      if (fw.removedAtMs === undefined) {
        this.failoverDeadlines.set(fw.id, this.nowMs + Math.max(fw.failoverTimeoutS * 1000, this.config.frameworkReregisterGraceMs));
      }
    }
    for (const agent of state.agents.values()) {
      this.lastSeenMs.set(agent.id, this.nowMs);
      this.agentAt.set(addressKey(agent.ip, agent.httpPort, agent.hostname), agent.id);
    }
    this.resumePreemptions();
    this.nextPingRoundMs = this.nowMs + this.config.pingIntervalMs;
    this.nextAllocationMs = this.nowMs + this.config.allocationIntervalMs;
    this.nextResendMs = this.nowMs + this.config.updateRetryMs;
  }

  // ------------------------------------------------------------------ the entry point

  /**
   * Feeds one input and returns what to do, in order. Throws CairnError only for a
   * scheduler call, subscription or operator call that is invalid — and then nothing has
   * changed and no effect is lost.
   */
  step(nowMs: number, input: LeaderInput): LeaderEffect[] {
    // `nowMs` is the shell's steady clock (shared/steady-clock.ts), never the wall clock: fed
    // wall time, a step forward then back held every timer here at the high-water mark until
    // the wall clock caught up (an hour's step froze failure detection for an hour). On a
    // monotonic clock this keeps only a shell's same-millisecond reorderings from moving time back.
    if (nowMs > this.nowMs) this.nowMs = nowMs;
    this.out = [];
    if (this.stopped) return [];
    switch (input.type) {
      case 'agent_connected':
        this.metrics.agentConnections++;
        this.conns.set(input.conn, { conn: input.conn, remoteAddress: input.remoteAddress, principal: input.principal, agentId: undefined, missedPings: 0, awaitingPong: false, closed: false });
        break;
      case 'agent_disconnected':
        this.agentDisconnected(input.conn);
        break;
      case 'agent_bad_frame':
        this.badAgentFrame(input.conn, input.error);
        break;
      case 'agent_frame':
        this.agentFrame(input.conn, input.frame);
        break;
      case 'subscribe':
        this.subscribe(input.request, input.stream, input.spec);
        break;
      case 'stream_closed':
        this.streamClosed(input.stream);
        break;
      case 'scheduler_call':
        this.schedulerCall(input.call, input.streamId);
        break;
      case 'operator':
        this.operator(input.request, input.call);
        break;
      case 'gossip_changed':
        this.judgeAgents(input.agentIds);
        break;
      case 'committed': {
        const p = this.pending.get(input.proposal);
        if (p) {
          this.pending.delete(input.proposal);
          p.committed(input.events);
        }
        break;
      }
      case 'proposal_failed': {
        const p = this.pending.get(input.proposal);
        if (p) {
          this.pending.delete(input.proposal);
          p.failed(input.message);
        }
        break;
      }
      case 'tick':
        this.tick();
        break;
      case 'allocate':
        this.allocationRequested = false;
        this.allocate();
        break;
    }
    return this.take();
  }

  /** When the core next needs a `tick`, at the latest. */
  nextWakeMs(): number {
    let t = Math.min(this.nextPingRoundMs, this.nextAllocationMs, this.nextResendMs);
    for (const s of this.sessions.values()) t = Math.min(t, s.nextHeartbeatMs);
    for (const d of this.failoverDeadlines.values()) t = Math.min(t, d);
    for (const sent of this.confirmations.values()) t = Math.min(t, sent + this.liveness.confirmMs + CONFIRM_SLACK_MS);
    return t;
  }

  /** Ends every stream and connection; the core takes no more input. */
  stop(): LeaderEffect[] {
    if (this.stopped) return [];
    this.out = [];
    for (const s of this.sessions.values()) this.emit({ type: 'end_stream', stream: s.stream });
    for (const c of this.conns.values()) this.emit({ type: 'close_agent', conn: c.conn, code: 1001, reason: 'master stopping' });
    this.sessions.clear();
    this.conns.clear();
    this.links.clear();
    this.pending.clear();
    this.stopped = true;
    return this.take();
  }

  // ------------------------------------------------------------------ queries (soft state)

  isConnected(agentId: string): boolean {
    return this.links.has(agentId);
  }

  frameworkConnected(frameworkId: string): boolean {
    return this.sessions.has(frameworkId);
  }

  /** The latest usage sums of a connected agent; undefined when none came yet. */
  agentUsageReport(agentId: string): UsageReport | undefined {
    return this.usage.get(agentId);
  }

  /** Proposals handed to the log and not yet answered (for tests and the simulator). */
  get pendingProposals(): number {
    return this.pending.size;
  }

  // ------------------------------------------------------------------ effects

  private take(): LeaderEffect[] {
    const out = this.out;
    this.out = [];
    return out;
  }

  private emit(e: LeaderEffect): void {
    this.out.push(e);
  }

  private log(level: LogLevel, msg: string, fields: Record<string, unknown> = {}): void {
    this.emit({ type: 'log', level, msg, fields });
  }

  private propose(command: RegistryCommand, then: (events: RegistryEvent[]) => void, failed?: (message: string) => void): void {
    const proposal = this.nextProposal++;
    this.pending.set(proposal, {
      committed: then,
      failed: failed ?? ((message) => this.log('warn', 'registry change failed', { command: command.type, err: message })),
    });
    this.emit({ type: 'propose', proposal, command });
  }

  private toAgent(agentId: string, msg: Parameters<typeof this.sendConn>[1]): boolean {
    const c = this.links.get(agentId);
    if (!c) return false;
    this.sendConn(c, msg);
    return true;
  }

  private sendConn(c: AgentConn, msg: Extract<LeaderEffect, { type: 'to_agent' }>['msg']): void {
    if (!c.closed) this.emit({ type: 'to_agent', conn: c.conn, msg });
  }

  private closeConn(c: AgentConn, code: number, reason: string): void {
    if (c.closed) return;
    c.closed = true;
    this.emit({ type: 'close_agent', conn: c.conn, code, reason });
  }

  private toFramework(frameworkId: string, event: SchedulerEvent): void {
    const s = this.sessions.get(frameworkId);
    if (s) this.emit({ type: 'to_framework', stream: s.stream, event });
  }

  private reply(request: RequestId, result: ReplyValue): void {
    this.emit({ type: 'reply', request, result });
  }

  private requestAllocation(): void {
    if (this.allocationRequested) return;
    this.allocationRequested = true;
    this.emit({ type: 'allocate_soon' });
  }

  private uuid(): string {
    return Buffer.from(randomBytesOf(this.random, 16)).toString('base64');
  }

  private uuids(n: number): string[] {
    return Array.from({ length: n }, () => this.uuid());
  }

  // ------------------------------------------------------------------ agents

  private agentDisconnected(conn: ConnId): void {
    const c = this.conns.get(conn);
    if (!c) return;
    c.closed = true;
    this.conns.delete(conn);
    if (c.agentId && this.links.get(c.agentId) === c) {
      this.links.delete(c.agentId);
      this.usage.delete(c.agentId);
      this.lastSeenMs.set(c.agentId, this.nowMs);
    }
  }

  private badAgentFrame(conn: ConnId, err: CairnError): void {
    const c = this.conns.get(conn);
    this.metrics.badAgentFrames++;
    this.log('warn', 'bad frame from agent; closing its connection', { remote: c?.remoteAddress, err: err.message });
    if (!c) return;
    this.sendConn(c, { error: { code: err.code, message: err.message } });
    this.closeConn(c, 1002, err.code);
  }

  private agentFrame(conn: ConnId, frame: LeaderAgentFrame): void {
    const c = this.conns.get(conn);
    if (!c || c.closed) return;
    try {
      if ('register' in frame) this.registerAgent(c, frame.register);
      else if (!c.agentId) throw new CairnError('CAIRN_BAD_FRAME', 'the first frame must be register', 'frame');
      else if ('statusUpdate' in frame) this.agentStatusUpdate(c, c.agentId, frame.statusUpdate);
      else if ('pong' in frame) this.agentPong(c, c.agentId);
      else if ('usage' in frame) {
        if (this.links.get(c.agentId) === c) this.usage.set(c.agentId, frame.usage);
      }
    } catch (err) {
      this.badAgentFrame(conn, err instanceof CairnError ? err : new CairnError('CAIRN_BAD_FRAME', String(err), 'frame'));
    }
  }

  private registerAgent(c: AgentConn, reg: Register): void {
    const total = Resources.parse(reg.resources, 'register.resources');
    if (!reg.hostname) throw new CairnError('CAIRN_BAD_FRAME', 'hostname is required', 'register.hostname');
    const state = this.state();
    const known = reg.agentId !== '' ? state.agents.get(reg.agentId) : undefined;
    // An agent speaks only for itself (Kubernetes' NodeRestriction): an id registered under
    // one credential is never taken over with another, which would disconnect the real agent.
    if (known?.principal !== undefined && known.principal !== c.principal) {
      throw new CairnError('CAIRN_FORBIDDEN', `agent ${known.id} is registered by principal '${known.principal}', not '${c.principal}'`, 'register.agent_id');
    }
    const agentId = reg.agentId !== '' ? reg.agentId : `${randomUuid(this.random)}-S0`;
    const previous = this.links.get(agentId);
    if (previous && previous !== c) {
      this.closeConn(previous, 1000, 'replaced by a newer connection');
      this.links.delete(agentId);
    }
    const now = this.nowMs;
    const ip = reg.ip || c.remoteAddress;
    if (reg.agentId === '') this.removeSuperseded(ip, reg.httpPort, reg.hostname, c.principal);
    const activeBefore = known ? state.activeTasksOn(agentId).length : 0;
    this.propose({
      type: 'agent_registered',
      agent: {
        id: agentId,
        hostname: reg.hostname,
        ip,
        httpPort: reg.httpPort,
        resources: total.toString(),
        attributes: Object.fromEntries(reg.attributes.map((a) => [a.name, a.value])),
        registeredAtMs: now,
        ...(reg.isolation ? { isolation: reg.isolation } : {}),
        ...(reg.https ? { https: true } : {}),
        ...(c.principal !== '' ? { principal: c.principal } : {}),
      },
      // Sent whenever the agent names an id: the state it applies to may know the agent even if
      // this (possibly older) view does not.
      runningTasks: reg.agentId !== '' ? reg.tasks.map((t) => ({ taskId: t.taskId, state: t.state })) : undefined,
      uuids: this.uuids(activeBefore),
      atMs: now,
    }, (events) => this.agentRegistered(c, agentId, reg, total, !!known, events));
  }

  /**
   * An agent that registers without an id at the address of a known agent that is not
   * connected is that agent's successor (its work dir was wiped, or it never heard the id it
   * was given): the old one is removed, its tasks GONE, as Mesos does for a new agent at a
   * registered agent's address. Otherwise it would stay unreachable for ever, and so would
   * its tasks.
   */
  private removeSuperseded(ip: string, httpPort: number, hostname: string, principal: string): void {
    const state = this.state();
    const known = this.agentAt.get(addressKey(ip, httpPort, hostname));
    const a = known !== undefined ? state.agents.get(known) : undefined;
    // Only an agent of the same principal succeeds one: another credential may not remove it.
    if (a && a.ip === ip && a.httpPort === httpPort && a.hostname === hostname && !this.links.has(a.id) && (a.principal ?? principal) === principal) {
      const agentId = a.id;
      this.log('warn', 'a new agent registers at the address of an old one: removing the old one', { agentId, host: hostname, ip, httpPort });
      this.recoverOffers((o) => o.agentId === agentId, true);
      if (this.allocator.hasAgent(agentId)) this.allocator.setAgentActive(agentId, false);
      this.propose({ type: 'agent_removed', agentId, uuids: this.uuids(state.activeTasksOn(agentId).length), atMs: this.nowMs, registrations: a.registrations ?? 0 }, (events) => {
        if (this.state().agents.has(agentId)) return; // it came back meanwhile: nothing was removed
        if (this.allocator.hasAgent(agentId)) this.allocator.removeAgent(agentId);
        this.lastSeenMs.delete(agentId);
        this.forwardEvents(events);
      });
    }
  }

  private agentRegistered(c: AgentConn, agentId: string, reg: Register, total: Resources, reregistered: boolean, events: RegistryEvent[]): void {
    const state = this.state();
    const record = state.agents.get(agentId);
    if (record) this.agentAt.set(addressKey(record.ip, record.httpPort, record.hostname), agentId);
    this.lastSeenMs.set(agentId, this.nowMs);
    if (c.closed) {
      // The connection went away before its registration was durable; the agent will
      // register again. Its updates still go to frameworks.
      this.forwardEvents(events);
      return;
    }
    c.agentId = agentId;
    const previous = this.links.get(agentId);
    if (previous && previous !== c) this.closeConn(previous, 1000, 'replaced by a newer connection');
    this.links.set(agentId, c);
    this.sendConn(c, {
      registered: {
        agentId,
        lostTaskIds: events.filter((e) => e.update.state === 'TASK_LOST').map((e) => e.task.id),
        pingIntervalMs: this.config.pingIntervalMs,
        drain: drainOrder(state.agents.get(agentId)?.drain),
      },
    });
    this.forwardEvents(events);
    // Tasks the agent runs that the master does not know of (or that were killed or written
    // off meanwhile) must not keep running unaccounted for.
    for (const t of reg.tasks) {
      const task = state.tasks.get(t.taskId);
      if (!task || task.agentId !== agentId || isTerminal(task.state) || this.pendingKills.has(t.taskId)) {
        const why = this.pendingKills.get(t.taskId);
        this.pendingKills.delete(t.taskId);
        this.sendConn(c, { kill: { taskId: t.taskId, frameworkId: t.frameworkId, graceMs: why?.graceMs ?? task?.killGraceMs ?? 0, ...(why ? { reason: why.reason, message: why.message } : {}) } });
      }
    }
    this.addAgentToAllocator(agentId, total);
    this.log('info', 'agent registered', { agentId, principal: c.principal, host: reg.hostname, resources: total.toString(), reregistered });
    this.requestAllocation();
  }

  private addAgentToAllocator(agentId: string, total: Resources): void {
    const state = this.state();
    this.recoverOffers((o) => o.agentId === agentId, true);
    if (this.allocator.hasAgent(agentId)) this.allocator.removeAgent(agentId);
    let used = Resources.EMPTY;
    const usedBy: { frameworkId: string; resources: Resources }[] = [];
    for (const t of state.activeTasksOn(agentId)) {
      const r = Resources.parse(t.resources);
      used = used.add(r);
      usedBy.push({ frameworkId: t.frameworkId, resources: r });
    }
    for (const [taskId, l] of this.launching) {
      if (l.agentId !== agentId || state.tasks.has(taskId)) continue;
      used = used.add(l.resources);
      usedBy.push({ frameworkId: l.frameworkId, resources: l.resources });
    }
    this.allocator.addAgent(agentId, total, used, usedBy.filter((u) => this.frameworkInAllocator(u.frameworkId)));
    if (state.agents.get(agentId)?.drain) this.allocator.setAgentActive(agentId, false);
  }

  private frameworkInAllocator(frameworkId: string): boolean {
    const state = this.state();
    const fw = state.frameworks.get(frameworkId);
    return !!fw && (fw.removedAtMs === undefined || state.activeTasksOf(frameworkId).length > 0);
  }

  private agentPong(c: AgentConn, agentId: string): void {
    c.awaitingPong = false;
    c.missedPings = 0;
    this.lastSeenMs.set(agentId, this.nowMs);
  }

  private agentStatusUpdate(c: AgentConn, agentId: string, su: StatusUpdate): void {
    this.metrics.statusUpdates++;
    const ack = () => this.sendConn(c, { ack: { uuid: su.uuid, taskId: su.taskId } });
    const task = this.state().tasks.get(su.taskId);
    const healthy = su.hasHealthy ? su.healthy === true : undefined;
    // An update in the same state that changes only the task's health is news, not a duplicate.
    const healthChanged = healthy !== undefined && task?.healthy !== healthy;
    if (!task || task.agentId !== agentId || isTerminal(task.state) || (task.state === su.state && !isTerminal(su.state) && !healthChanged)) {
      ack(); // nothing to change: unknown, stale or a re-sent duplicate
      return;
    }
    const wasRunning = task.state === 'TASK_RUNNING';
    this.propose({
      type: 'status_update',
      taskId: su.taskId,
      state: su.state,
      message: su.message,
      reason: su.reason,
      exitCode: su.hasExitCode ? su.exitCode : undefined,
      source: 'SOURCE_AGENT',
      uuid: Buffer.from(su.uuid).toString('base64'),
      atMs: this.nowMs,
      ...(healthy !== undefined ? { healthy } : {}),
    }, (events) => {
      // Launch latency, ACCEPT to RUNNING, for tasks this leader launched (an earlier leader's would count the failover).
      if (su.state === 'TASK_RUNNING' && !wasRunning && task.launchedAtMs >= this.startedAtMs) this.metrics.launchSeconds.observe((this.nowMs - task.launchedAtMs) / 1000);
      ack();
      this.forwardEvents(events);
    });
  }

  // ------------------------------------------------------------------ liveness

  private tick(): void {
    const now = this.nowMs;
    if (now >= this.nextPingRoundMs) {
      this.nextPingRoundMs = now + this.config.pingIntervalMs;
      for (const c of this.links.values()) {
        if (c.awaitingPong) c.missedPings++;
        c.awaitingPong = true;
        this.sendConn(c, { ping: { sentMs: now } });
      }
      this.judgeAgents(undefined);
    } else {
      const due = [...this.confirmations].filter(([, sent]) => now >= sent + this.liveness.confirmMs + CONFIRM_SLACK_MS).map(([id]) => id);
      if (due.length > 0) this.judgeAgents(due);
    }
    for (const [frameworkId, deadline] of [...this.failoverDeadlines]) {
      if (now < deadline) continue;
      this.failoverDeadlines.delete(frameworkId);
      if (!this.sessions.has(frameworkId)) this.teardown(frameworkId, 'failover timeout passed');
    }
    // A victim that never ends (its agent gone quiet) does not block its preemptor for ever.
    for (const [preemptor, p] of this.preempting) if (now >= p.untilMs) this.preempting.delete(preemptor);
    for (const [frameworkId, s] of this.sessions) {
      if (now < s.nextHeartbeatMs) continue;
      s.nextHeartbeatMs = now + this.config.frameworkHeartbeatMs;
      this.toFramework(frameworkId, { type: 'HEARTBEAT' });
    }
    if (now >= this.nextResendMs) {
      this.nextResendMs = now + this.config.updateRetryMs;
      this.resendUnacknowledged();
    }
    if (now >= this.nextAllocationMs) {
      this.nextAllocationMs = now + this.config.allocationIntervalMs;
      this.allocate();
    }
  }

  /**
   * Applies the liveness verdict (agents/liveness.ts) to the given agents (default: every
   * reachable one): pings and, when there is one, gossip's opinion.
   */
  private judgeAgents(agentIds: Iterable<string> | undefined): void {
    const state = this.state();
    const now = this.nowMs;
    for (const agentId of agentIds ?? [...state.agents.keys()]) {
      if (!state.agents.get(agentId)?.reachable) {
        this.confirmations.delete(agentId);
        continue;
      }
      const c = this.links.get(agentId);
      const gossip = this.gossip?.(agentId);
      if (gossip !== 'dead' && gossip !== 'left') this.confirmations.delete(agentId);
      const verdict = judgeAgent({
        nowMs: now,
        gossip,
        connected: c !== undefined,
        missedPings: c?.missedPings ?? 0,
        lastHeardMs: this.lastSeenMs.get(agentId) ?? now,
        confirmSentAtMs: this.confirmations.get(agentId),
      }, this.liveness);
      if (verdict.action === 'confirm') {
        if (c) this.sendConn(c, { ping: { sentMs: now } });
        this.confirmations.set(agentId, now);
      } else if (verdict.action === 'disconnect' && c) {
        this.log('warn', 'agent silent on its connection but alive in gossip: closing the connection for it to reconnect', { agentId });
        this.closeConn(c, 1000, 'missed too many pings');
        this.links.delete(agentId);
      } else if (verdict.action === 'unreachable') {
        if (c) {
          this.closeConn(c, 1000, 'missed too many pings');
          this.links.delete(agentId);
        }
        this.confirmations.delete(agentId);
        this.markUnreachable(agentId, verdict.reason, verdict.orderly === true);
      }
    }
  }

  private markUnreachable(agentId: string, reason: string, orderly = false): void {
    const state = this.state();
    const agent = state.agents.get(agentId);
    if (!agent?.reachable) return;
    // An agent that said goodbye stopped as its operator asked: the same state, but no fault to warn of.
    if (orderly) this.log('info', 'agent stopped: it left the cluster (unreachable until it registers again)', { agentId, host: agent.hostname, reason });
    else this.log('warn', 'agent unreachable', { agentId, host: agent.hostname, reason });
    this.recoverOffers((o) => o.agentId === agentId, true);
    if (this.allocator.hasAgent(agentId)) this.allocator.setAgentActive(agentId, false);
    const n = state.activeTasksOn(agentId).length;
    // Stale once the agent registers again before this commits: the state machine then ignores
    // it, and the registration has already put the agent back in the allocator.
    this.propose({ type: 'agent_unreachable', agentId, uuids: this.uuids(n), atMs: this.nowMs, registrations: agent.registrations ?? 0 }, (events) => this.forwardEvents(events));
  }

  // ------------------------------------------------------------------ frameworks

  private subscribe(request: RequestId, stream: StreamId, spec: FrameworkSpec): void {
    const state = this.state();
    let frameworkId = spec.id;
    if (frameworkId !== undefined) {
      const existing = state.frameworks.get(frameworkId);
      if (existing?.removedAtMs !== undefined) {
        throw new CairnError('CAIRN_UNKNOWN_FRAMEWORK', `framework ${frameworkId} has been removed and cannot resubscribe`, 'framework_id');
      }
      if (existing && existing.role !== spec.role) {
        throw new CairnError('CAIRN_BAD_REQUEST', `framework ${frameworkId} is in role '${existing.role}'; changing role is not supported`, 'subscribe.framework_info.role');
      }
    } else {
      frameworkId = `${randomUuid(this.random)}-0000`;
    }
    const priorityClass = this.config.priorityClasses.resolve(spec.priorityClass, 'subscribe.framework_info.labels');
    const known = state.frameworks.get(frameworkId);
    if (known && classOf(known, this.config.priorityClasses) !== priorityClass) {
      throw new CairnError('CAIRN_BAD_REQUEST', `framework ${frameworkId} is of class '${classOf(known, this.config.priorityClasses)}'; changing class is not supported`, 'subscribe.framework_info.labels');
    }
    const id = frameworkId;
    this.subscribing.set(stream, false);
    this.propose({
      type: 'framework_subscribed',
      framework: {
        id,
        name: spec.name,
        user: spec.user,
        role: spec.role,
        principal: spec.principal,
        failoverTimeoutS: spec.failoverTimeoutS,
        capabilities: spec.capabilities,
        registeredAtMs: this.nowMs,
        ...(priorityClass !== this.config.priorityClasses.defaultClass ? { priorityClass } : {}),
      },
      atMs: this.nowMs,
    }, () => this.subscribed(request, stream, id, spec), (message) => {
      this.subscribing.delete(stream);
      this.emit({ type: 'reply_error', request, error: new CairnError('CAIRN_NOT_LEADER', `subscription not recorded: ${message}`, 'subscribe') });
    });
  }

  private subscribed(request: RequestId, stream: StreamId, frameworkId: string, spec: FrameworkSpec): void {
    const closedMeanwhile = this.subscribing.get(stream) === true;
    this.subscribing.delete(stream);
    const fw = this.state().frameworks.get(frameworkId);
    if (!fw || fw.removedAtMs !== undefined) {
      this.emit({ type: 'reply_error', request, error: new CairnError('CAIRN_UNKNOWN_FRAMEWORK', `framework ${frameworkId} was removed meanwhile`, 'framework_id') });
      return;
    }
    const old = this.sessions.get(frameworkId);
    if (old) {
      this.emit({ type: 'to_framework', stream: old.stream, event: { type: 'ERROR', error: { message: 'framework failed over to a newer subscription' } } });
      this.emit({ type: 'end_stream', stream: old.stream });
      this.sessions.delete(frameworkId);
    }
    this.failoverDeadlines.delete(frameworkId);
    const gpuAware = spec.capabilities.includes('GPU_RESOURCES');
    if (this.allocator.hasFramework(frameworkId) && this.allocator.isGpuAware(frameworkId) !== gpuAware) {
      this.recoverOffers((o) => o.frameworkId === frameworkId, false);
      this.allocator.setGpuAware(frameworkId, gpuAware);
    }
    if (!this.allocator.hasFramework(frameworkId)) this.allocator.addFramework(frameworkId, spec.role, { gpuAware, classRank: this.classRank(fw.priorityClass) });
    this.reply(request, { type: 'subscribed', frameworkId });
    if (closedMeanwhile) {
      // Its stream ended before the subscription was durable: it is subscribed and at once
      // disconnected, so it gets its failover timeout as any framework would.
      this.allocator.setFrameworkActive(frameworkId, false);
      this.failoverDeadlines.set(frameworkId, this.nowMs + fw.failoverTimeoutS * 1000);
      return;
    }
    this.allocator.setFrameworkActive(frameworkId, true);
    this.sessions.set(frameworkId, { stream, nextHeartbeatMs: this.nowMs + this.config.frameworkHeartbeatMs });
    this.toFramework(frameworkId, { type: 'SUBSCRIBED', subscribed: { framework_id: { value: frameworkId }, heartbeat_interval_seconds: this.config.frameworkHeartbeatMs / 1000 } });
    for (const t of this.state().tasks.values()) {
      if (t.frameworkId === frameworkId && t.unacked) this.toFramework(frameworkId, updateEvent(t, t.unacked));
    }
    this.log('info', 'framework subscribed', { frameworkId, framework: spec.name, role: spec.role });
    this.requestAllocation();
  }

  private streamClosed(stream: StreamId): void {
    if (this.subscribing.has(stream)) {
      this.subscribing.set(stream, true);
      return;
    }
    let frameworkId: string | undefined;
    for (const [id, s] of this.sessions) if (s.stream === stream) frameworkId = id;
    if (frameworkId === undefined) return;
    this.sessions.delete(frameworkId);
    const fw = this.state().frameworks.get(frameworkId);
    if (!fw || fw.removedAtMs !== undefined) return;
    this.log('info', 'framework disconnected', { frameworkId, failoverTimeoutS: fw.failoverTimeoutS });
    this.allocator.setFrameworkActive(frameworkId, false);
    this.recoverOffers((o) => o.frameworkId === frameworkId, false);
    this.failoverDeadlines.set(frameworkId, this.nowMs + fw.failoverTimeoutS * 1000);
  }

  /** The session a call must come from: framework subscribed and stream id matching. */
  private requireSession(frameworkId: string, streamId: StreamId | undefined): Session {
    const fw = this.state().frameworks.get(frameworkId);
    if (!fw || fw.removedAtMs !== undefined) throw new CairnError('CAIRN_UNKNOWN_FRAMEWORK', `framework ${frameworkId} is not subscribed`, 'framework_id');
    const s = this.sessions.get(frameworkId);
    if (!s) throw new CairnError('CAIRN_UNKNOWN_FRAMEWORK', `framework ${frameworkId} has no open subscription`, 'framework_id');
    if (streamId === undefined) throw new CairnError('CAIRN_STREAM_MISMATCH', 'the Mesos-Stream-Id header is required', 'Mesos-Stream-Id');
    if (s.stream !== streamId) throw new CairnError('CAIRN_STREAM_MISMATCH', 'Mesos-Stream-Id does not match the current subscription', 'Mesos-Stream-Id');
    return s;
  }

  private schedulerCall(call: SchedulerCall, streamId: StreamId | undefined): void {
    this.requireSession(call.frameworkId, streamId);
    this.metrics.calls.set(call.type, (this.metrics.calls.get(call.type) ?? 0) + 1);
    const state = this.state();
    switch (call.type) {
      case 'ACCEPT':
        return this.accept(call);
      case 'DECLINE':
        for (const id of call.offerIds) {
          const o = this.offers.get(id);
          if (!o || o.frameworkId !== call.frameworkId) continue; // Mesos ignores unknown offers here
          this.offers.remove(id);
          this.allocator.recoverResources(o.frameworkId, o.agentId, o.resources, call.refuseMs ?? this.config.defaultRefuseMs, this.nowMs);
        }
        this.requestAllocation();
        return;
      case 'REVIVE':
        this.allocator.revive(call.frameworkId);
        this.requestAllocation();
        return;
      case 'SUPPRESS':
        this.allocator.suppress(call.frameworkId);
        return;
      case 'KILL': {
        const task = state.tasks.get(call.taskId);
        if (!task || task.frameworkId !== call.frameworkId) {
          this.toFramework(call.frameworkId, statusEvent(call.taskId, undefined, 'TASK_LOST', 'unknown task', 'REASON_RECONCILIATION', this.nowMs));
          return;
        }
        this.killTask(task);
        return;
      }
      case 'ACKNOWLEDGE': {
        const task = state.tasks.get(call.taskId);
        if (task && task.frameworkId === call.frameworkId && task.unacked?.uuid === call.uuid) {
          // Nothing waits on it: an update not acknowledged durably is simply sent again.
          this.propose({ type: 'status_acknowledged', taskId: task.id, uuid: call.uuid }, () => undefined, () => undefined);
        }
        return;
      }
      case 'RECONCILE': {
        const tasks = call.taskIds.length > 0 ? call.taskIds : state.activeTasksOf(call.frameworkId).map((t) => t.id);
        for (const id of tasks) {
          const t = state.tasks.get(id);
          if (t && t.frameworkId === call.frameworkId) this.toFramework(call.frameworkId, statusEvent(t.id, t.agentId, t.state, t.message, 'REASON_RECONCILIATION', this.nowMs, t.healthy));
          else this.toFramework(call.frameworkId, statusEvent(id, undefined, 'TASK_LOST', 'unknown task', 'REASON_RECONCILIATION', this.nowMs));
        }
        return;
      }
      case 'TEARDOWN':
        this.teardown(call.frameworkId, 'torn down by the framework');
        return;
      case 'REQUEST':
        this.request(call);
        return;
    }
  }

  private classRank(priorityClass: string | undefined): number {
    const classes = this.config.priorityClasses;
    return classes.rank(classes.orDefault(priorityClass));
  }

  private setQuotas(records: QuotaRecord[]): void {
    this.quotas = records.length > 0 ? compileQuotas(records) : undefined;
    this.allocator.setQuotas(this.quotas && countingElsewhere(this.quotas, () => this.heldElsewhere));
  }

  /**
   * A gang the framework cannot place: room is made for it by preemption if its class (or
   * its role's guarantee) allows. One preemption per framework at a time; the agents freed
   * are earmarked for it, and offers of them to others are rescinded.
   */
  private request(call: Extract<SchedulerCall, { type: 'REQUEST' }>): void {
    const state = this.state();
    const fw = state.frameworks.get(call.frameworkId)!;
    if (this.preempting.has(call.frameworkId)) return;
    const claimed = this.victimsStillRunning();
    for (const p of this.preempting.values()) for (const v of p.victims) claimed.add(v);
    const decision = decidePreemption({
      state,
      classes: this.config.priorityClasses,
      quotas: this.quotas,
      agentUsable: (agentId) => this.allocator.hasAgent(agentId) && this.links.has(agentId),
      launching: this.launching.values(),
      claimed,
    }, call.frameworkId, call.members);
    if (decision.kind === 'none') {
      this.log('debug', 'no preemption for a request', { frameworkId: call.frameworkId, for: call.for, why: decision.why });
      return;
    }
    const untilMs = this.nowMs + this.config.preemptionGraceMs + this.config.earmarkMs;
    if (decision.kind === 'fits') {
      this.makeRoom(call.frameworkId, decision.agentIds, untilMs);
      return;
    }
    const classes = this.config.priorityClasses;
    const record: PreemptionRecord = {
      id: randomUuid(this.random),
      atMs: this.nowMs,
      cause: decision.cause,
      preemptor: { frameworkId: fw.id, name: fw.name, role: fw.role, priorityClass: classOf(fw, classes), for: call.for },
      victims: decision.victims.map((t) => {
        const vf = state.frameworks.get(t.frameworkId);
        return { taskId: t.id, frameworkId: t.frameworkId, agentId: t.agentId, role: vf?.role ?? '*', priorityClass: classOf(vf, classes) };
      }),
    };
    const entry = { victims: new Set(record.victims.map((v) => v.taskId)), untilMs };
    this.preempting.set(call.frameworkId, entry);
    const message = preemptionMessage(record);
    this.propose({ type: 'preemption', record }, () => {
      const now = this.state();
      for (const v of record.victims) {
        const t = now.tasks.get(v.taskId);
        if (!t || isTerminal(t.state)) {
          entry.victims.delete(v.taskId);
          continue;
        }
        this.killTask(t, { reason: 'REASON_CONTAINER_PREEMPTED', message, graceMs: this.config.preemptionGraceMs });
      }
      this.makeRoom(call.frameworkId, decision.agentIds, untilMs);
      this.log('warn', 'tasks preempted', { preemptor: fw.id, for: call.for, cause: decision.cause, victims: record.victims.map((v) => v.taskId) });
      if (entry.victims.size === 0) this.preempting.delete(call.frameworkId);
    }, () => {
      this.preempting.delete(call.frameworkId);
    });
  }

  /**
   * Victims of committed preemptions that have not ended. Never chosen again, even once their
   * preemptor stopped waiting for them (an agent gone quiet) or an earlier leader decided them.
   */
  private victimsStillRunning(): Set<string> {
    const state = this.state();
    const out = new Set<string>();
    for (const r of state.preemptions) {
      for (const v of r.victims) {
        const t = state.tasks.get(v.taskId);
        if (t && !isTerminal(t.state)) out.add(v.taskId);
      }
    }
    return out;
  }

  /**
   * A new leader carries out the preemptions committed under an earlier one: the record is the
   * decision, and the leader that made it may have gone before its kills reached the agents.
   * Victims still running are killed as their agents register, and their preemptor waits for
   * them as it would have.
   */
  private resumePreemptions(): void {
    const state = this.state();
    const untilMs = this.nowMs + this.config.preemptionGraceMs + this.config.earmarkMs;
    for (const r of state.preemptions) {
      const message = preemptionMessage(r);
      for (const v of r.victims) {
        const t = state.tasks.get(v.taskId);
        if (!t || isTerminal(t.state)) continue;
        this.pendingKills.set(t.id, { reason: 'REASON_CONTAINER_PREEMPTED', message, graceMs: this.config.preemptionGraceMs });
        const entry = this.preempting.get(r.preemptor.frameworkId) ?? { victims: new Set<string>(), untilMs };
        entry.victims.add(t.id);
        this.preempting.set(r.preemptor.frameworkId, entry);
      }
    }
  }

  /** Keeps the agents for the framework a while, and takes back what others were offered of them. */
  private makeRoom(frameworkId: string, agentIds: string[], untilMs: number): void {
    const agents = new Set(agentIds);
    for (const a of agents) if (this.allocator.hasAgent(a)) this.allocator.earmark(a, frameworkId, untilMs);
    this.recoverOffers((o) => agents.has(o.agentId) && o.frameworkId !== frameworkId, true);
    this.allocator.revive(frameworkId);
    this.requestAllocation();
  }

  private accept(call: Extract<SchedulerCall, { type: 'ACCEPT' }>): void {
    const state = this.state();
    // Validate everything first: a bad ACCEPT changes nothing and keeps the offers outstanding.
    const offers: OutstandingOffer[] = call.offerIds.map((id, i) => {
      const o = this.offers.get(id);
      const field = `accept.offer_ids[${i}]`;
      if (!o) {
        if (this.rescinded.has(id)) throw new CairnError('CAIRN_OFFER_RESCINDED', `offer ${id} was rescinded`, field);
        throw new CairnError('CAIRN_UNKNOWN_OFFER', `offer ${id} is not outstanding`, field);
      }
      if (o.frameworkId !== call.frameworkId) throw new CairnError('CAIRN_UNKNOWN_OFFER', `offer ${id} was made to another framework`, field);
      return o;
    });
    if (new Set(call.offerIds).size !== call.offerIds.length) throw new CairnError('CAIRN_BAD_REQUEST', 'an offer id appears twice', 'accept.offer_ids');
    if (offers.length === 0) throw new CairnError('CAIRN_BAD_REQUEST', 'ACCEPT needs at least one offer id', 'accept.offer_ids');
    const agentId = offers[0].agentId;
    if (offers.some((o) => o.agentId !== agentId)) throw new CairnError('CAIRN_BAD_REQUEST', 'all offers of one ACCEPT must be for the same agent', 'accept.offer_ids');
    const offered = offers.reduce((acc, o) => acc.add(o.resources), Resources.EMPTY);
    let used = Resources.EMPTY;
    const seen = new Set<string>();
    call.tasks.forEach((t, i) => {
      const field = `accept.operations.launch.task_infos[${i}]`;
      if (t.agentId !== agentId) throw new CairnError('CAIRN_BAD_REQUEST', `agent ${t.agentId} is not the offers' agent ${agentId}`, `${field}.agent_id`);
      if (seen.has(t.taskId) || this.launching.has(t.taskId) || state.tasks.has(t.taskId)) {
        throw new CairnError('CAIRN_DUPLICATE_TASK', `task id '${t.taskId}' is already in use`, `${field}.task_id`);
      }
      seen.add(t.taskId);
      used = used.add(t.resources);
      if (!offered.contains(used)) {
        throw new CairnError('CAIRN_INSUFFICIENT_RESOURCES', `tasks ask ${used.toString()} but the offers hold ${offered.toString()}`, `${field}.resources`);
      }
    });
    for (const o of offers) this.offers.remove(o.id);
    if (call.tasks.length > 0) this.allocator.clearEarmark(agentId, call.frameworkId);
    const remaining = offered.subtract(used);
    if (!remaining.isEmpty()) {
      this.allocator.recoverResources(call.frameworkId, agentId, remaining, call.refuseMs ?? this.config.defaultRefuseMs, this.nowMs);
    }
    this.requestAllocation();
    // Tasks refused on their own at the edge (scheduler-calls.ts): each is answered TASK_ERROR, as
    // Mesos answers an invalid task, and the rest of the ACCEPT goes ahead.
    for (const r of call.refused ?? []) this.toFramework(call.frameworkId, statusEvent(r.taskId, r.agentId ?? agentId, 'TASK_ERROR', r.message, r.reason ?? 'REASON_TASK_INVALID', this.nowMs));
    if (call.tasks.length === 0) return;
    this.metrics.tasksLaunched += call.tasks.length;
    // The launch goes to the agent once every task of it is durable, in one frame.
    let waiting = call.tasks.length;
    let failed = false;
    const done = () => {
      if (--waiting > 0) return;
      const state = this.state();
      for (const t of call.tasks) {
        this.launching.delete(t.taskId);
        // A launch that never reached the registry gives back what it took.
        if (!state.tasks.has(t.taskId) && this.allocator.hasAgent(agentId) && this.allocator.hasFramework(call.frameworkId)) {
          this.allocator.recoverResources(call.frameworkId, agentId, t.resources, 0, this.nowMs);
          this.requestAllocation();
        }
      }
      if (failed) {
        this.log('warn', 'launch not recorded; tasks not started', { frameworkId: call.frameworkId });
        return;
      }
      this.sendLaunch(call.frameworkId, agentId, call.tasks);
    };
    for (const t of call.tasks) {
      this.launching.set(t.taskId, { agentId, frameworkId: call.frameworkId, resources: t.resources });
      this.propose({
        type: 'task_launched',
        task: {
          id: t.taskId,
          name: t.name,
          frameworkId: call.frameworkId,
          agentId,
          resources: t.resources.toString(),
          command: t.command,
          labels: t.labels,
          killGraceMs: t.killGraceMs,
          ...(t.container ? { container: t.container } : {}),
          ...(t.healthCheck ? { healthCheck: t.healthCheck } : {}),
          launchedAtMs: this.nowMs,
        },
        atMs: this.nowMs,
      }, done, (message) => {
        failed = true;
        this.log('warn', 'task launch not recorded', { taskId: t.taskId, err: message });
        done();
      });
    }
  }

  private sendLaunch(frameworkId: string, agentId: string, tasks: TaskSpec[]): void {
    const state = this.state();
    // A task killed (or written off) between its proposal and now is not started.
    const live = tasks.filter((t) => {
      const r = state.tasks.get(t.taskId);
      return r !== undefined && r.state === 'TASK_STAGING';
    });
    if (live.length === 0) return;
    if (!this.links.has(agentId)) {
      for (const t of live) this.masterUpdate(t.taskId, 'TASK_LOST', 'agent is not connected', 'REASON_AGENT_DISCONNECTED');
      return;
    }
    const frameworkName = state.frameworks.get(frameworkId)?.name ?? '';
    // The image's registry credential goes to the agent with this launch and is kept nowhere.
    const containers = new Map<string, TaskInfo['container']>();
    const launchable = live.filter((t) => {
      if (!t.container) return true;
      const resolved = withPullAuth(t.container, state.secrets);
      if (!resolved.ok) this.masterUpdate(t.taskId, 'TASK_FAILED', resolved.message, 'REASON_CONTAINER_LAUNCH_FAILED');
      else containers.set(t.taskId, resolved.container);
      return resolved.ok;
    });
    if (launchable.length === 0) return;
    const infos: TaskInfo[] = launchable.map((t) => ({
      taskId: t.taskId,
      frameworkId,
      name: t.name,
      resources: t.resources.toString(),
      command: t.command,
      killGraceMs: t.killGraceMs,
      labels: t.labels,
      container: containers.get(t.taskId) ?? null,
      dnsName: this.taskDnsName?.(t.name, frameworkName) ?? '',
      user: state.frameworks.get(frameworkId)?.user ?? '',
      principal: this.taskPrincipal?.(frameworkId, t.labels) ?? '',
      healthCheck: t.healthCheck ?? null,
    }));
    this.toAgent(agentId, { launch: { tasks: infos } });
  }

  /** Asks the task's agent to kill it (operator or framework). */
  private killTask(task: TaskRecord, why?: { reason: string; message: string; graceMs: number }): void {
    if (isTerminal(task.state)) return;
    const kill = { taskId: task.id, frameworkId: task.frameworkId, graceMs: why?.graceMs ?? task.killGraceMs, ...(why ? { reason: why.reason, message: why.message } : {}) };
    if (!this.toAgent(task.agentId, { kill })) this.pendingKills.set(task.id, why);
  }

  private teardown(frameworkId: string, why: string, request?: RequestId): void {
    const fw = this.state().frameworks.get(frameworkId);
    if (!fw || fw.removedAtMs !== undefined) {
      if (request !== undefined) this.reply(request, { type: 'done' });
      return;
    }
    this.log('info', 'removing framework', { frameworkId, why });
    this.propose({ type: 'framework_removed', frameworkId, atMs: this.nowMs }, () => {
      const s = this.sessions.get(frameworkId);
      if (s) {
        this.emit({ type: 'end_stream', stream: s.stream });
        this.sessions.delete(frameworkId);
      }
      this.failoverDeadlines.delete(frameworkId);
      this.recoverOffers((o) => o.frameworkId === frameworkId, false);
      const active = this.state().activeTasksOf(frameworkId);
      if (this.allocator.hasFramework(frameworkId)) {
        if (active.length === 0) this.allocator.removeFramework(frameworkId);
        else this.allocator.setFrameworkActive(frameworkId, false);
      }
      for (const t of active) this.killTask(t);
      this.requestAllocation();
      if (request !== undefined) this.reply(request, { type: 'done' });
    });
  }

  /** A status update the master itself decides (lost, unreachable...). */
  private masterUpdate(taskId: string, state: TaskState, message: string, reason: string): void {
    this.propose({ type: 'status_update', taskId, state, message, reason, source: 'SOURCE_MASTER', uuid: this.uuid(), atMs: this.nowMs }, (events) => this.forwardEvents(events));
  }

  /** After a registry change is committed: tell frameworks, give back resources of ended tasks. */
  private forwardEvents(events: RegistryEvent[]): void {
    const state = this.state();
    for (const e of events) {
      const t = e.task;
      this.toFramework(t.frameworkId, updateEvent(t, e.update));
      this.forwardedAt.set(e.update.uuid, this.nowMs);
      const wasHolding = !isTerminal(e.previousState) && e.previousState !== 'TASK_UNREACHABLE';
      if (!isTerminal(e.update.state)) continue;
      this.pendingKills.delete(t.id);
      for (const [preemptor, p] of this.preempting) {
        if (p.victims.delete(t.id) && p.victims.size === 0) this.preempting.delete(preemptor);
      }
      if (!this.allocator.hasFramework(t.frameworkId)) continue;
      if (wasHolding && state.agents.get(t.agentId)?.reachable && this.allocator.hasAgent(t.agentId)) {
        try {
          this.allocator.recoverResources(t.frameworkId, t.agentId, Resources.parse(t.resources), 0, this.nowMs);
        } catch (err) {
          this.log('debug', 'resources of ended task not recovered', { err: (err as Error).message, taskId: t.id });
        }
      }
      const fw = state.frameworks.get(t.frameworkId);
      if (fw?.removedAtMs !== undefined && state.activeTasksOf(fw.id).length === 0) this.allocator.removeFramework(fw.id);
      this.requestAllocation();
    }
  }

  /**
   * Re-sends updates still unacknowledged a retry period after they were made; younger ones
   * have just gone out and most are being acknowledged (re-sending those too made a third of
   * the update traffic at 10,000 tasks/s duplicates).
   */
  private resendUnacknowledged(): void {
    if (this.sessions.size === 0) return;
    const before = this.nowMs - this.config.updateRetryMs;
    // Made when this core first sent it, on this core's clock — not the update's atMs: that is
    // the clock of whichever leader wrote it, hours apart from this one's after a wall-clock
    // step, and an update from the future would not be re-sent until the clocks met. One this
    // core never sent (an earlier leader's) is due at once.
    const sent = new Map<string, number>();
    for (const t of this.state().tasks.values()) {
      if (!t.unacked) continue;
      const at = this.forwardedAt.get(t.unacked.uuid) ?? -Infinity;
      sent.set(t.unacked.uuid, at);
      if (at <= before && this.sessions.has(t.frameworkId)) this.toFramework(t.frameworkId, updateEvent(t, t.unacked));
    }
    this.forwardedAt = sent;
  }

  // ------------------------------------------------------------------ operators

  private operator(request: RequestId, call: OperatorCall): void {
    const state = this.state();
    switch (call.type) {
      case 'kill_task': {
        const task = state.tasks.get(call.taskId);
        if (!task) throw new CairnError('CAIRN_UNKNOWN_TASK', `no task '${call.taskId}'`, 'taskId');
        this.killTask(task);
        this.reply(request, { type: 'done' });
        return;
      }
      case 'drain_agent': {
        if (!state.agents.has(call.agentId)) throw new CairnError('CAIRN_UNKNOWN_AGENT', `no agent '${call.agentId}'`, 'agentId');
        const agentId = call.agentId;
        // Drains (Mesos' DRAIN_AGENT, Nomad's node drain): durable first, then no more offers
        // of the agent (outstanding ones rescinded) and the agent told, which refuses new
        // tasks and kills what still runs at the deadline. Draining again moves the deadline.
        this.propose({ type: 'agent_drain', agentId, drain: { sinceMs: this.nowMs, deadlineAtMs: call.deadlineAtMs } }, () => {
          const drain = this.state().agents.get(agentId)?.drain;
          if (!drain) {
            this.emit({ type: 'reply_error', request, error: new CairnError('CAIRN_UNKNOWN_AGENT', `agent '${agentId}' went away during the drain`, 'agentId') });
            return;
          }
          this.recoverOffers((o) => o.agentId === agentId, true);
          if (this.allocator.hasAgent(agentId)) this.allocator.setAgentActive(agentId, false);
          this.toAgent(agentId, { drain: drainOrder(drain) });
          this.log('warn', 'agent draining: no more offers of it', { agentId, deadlineAtMs: call.deadlineAtMs });
          this.reply(request, { type: 'drained', drain });
        }, (message) => this.replyFailed(request, message));
        return;
      }
      case 'teardown_framework': {
        const fw = state.frameworks.get(call.frameworkId);
        if (!fw || fw.removedAtMs !== undefined) throw new CairnError('CAIRN_UNKNOWN_FRAMEWORK', `no framework '${call.frameworkId}'`, 'frameworkId');
        this.teardown(call.frameworkId, 'torn down by an operator', request);
        return;
      }
      case 'undrain_agent': {
        if (!state.agents.has(call.agentId)) throw new CairnError('CAIRN_UNKNOWN_AGENT', `no agent '${call.agentId}'`, 'agentId');
        const agentId = call.agentId;
        this.propose({ type: 'agent_drain', agentId, drain: null }, () => {
          if (this.toAgent(agentId, { drain: NOT_DRAINING }) && this.allocator.hasAgent(agentId)) this.allocator.setAgentActive(agentId, true);
          this.log('info', 'agent drain ended', { agentId });
          this.requestAllocation();
          this.reply(request, { type: 'done' });
        }, (message) => this.replyFailed(request, message));
        return;
      }
      case 'set_quota': {
        // Checked before it is durable, against every other quota: a child above its parent,
        // a negative amount, a guarantee above the limit never reach the log.
        const current = this.quotas?.table ?? compileQuotas([]).table;
        if (call.quota === null) current.withRemoved(call.role);
        else current.withSet(call.role, parseQuotaJson({ ...call.quota, role: call.role }).quota);
        this.propose({ type: 'quota_set', role: call.role, quota: call.quota }, () => {
          this.setQuotas([...this.state().quotas.values()]);
          this.requestAllocation();
          this.reply(request, { type: 'done' });
        }, (message) => this.replyFailed(request, message));
        return;
      }
      case 'set_role_weight': {
        // Checked before it is durable: a weight the allocator refuses must never reach the log.
        if (!Number.isFinite(call.weight) || call.weight <= 0) {
          throw new CairnError('CAIRN_BAD_REQUEST', `role '${call.role}' needs a finite weight > 0, got ${call.weight}`, 'weight');
        }
        this.propose({ type: 'role_weight_set', role: call.role, weight: call.weight }, () => {
          this.allocator.setRoleWeight(call.role, call.weight);
          this.requestAllocation();
          this.reply(request, { type: 'done' });
        }, (message) => this.replyFailed(request, message));
        return;
      }
    }
  }

  private replyFailed(request: RequestId, message: string): void {
    this.emit({ type: 'reply_error', request, error: new CairnError('CAIRN_NOT_LEADER', `not recorded: ${message}`, 'request') });
  }

  // ------------------------------------------------------------------ offers

  private allocate(): void {
    const now = this.nowMs;
    const state = this.state();
    this.recoverOffers((o) => now - o.createdAtMs >= this.config.offerTimeoutMs, true);
    if (this.quotas) this.heldElsewhere = this.holdingsElsewhere();
    const made = this.allocator.allocate(now);
    const byFramework = new Map<string, OfferJson[]>();
    for (const m of made) {
      const session = this.sessions.get(m.frameworkId);
      const agent = state.agents.get(m.agentId);
      if (!session || !agent || (!m.resources.contains(MIN_OFFER) && !m.resources.contains(MIN_OFFER_MEM))) {
        this.allocator.recoverResources(m.frameworkId, m.agentId, m.resources, 0, now);
        continue;
      }
      const offer = this.offers.create(m.frameworkId, m.agentId, m.resources, now);
      const role = state.frameworks.get(m.frameworkId)?.role ?? '*';
      const list = byFramework.get(m.frameworkId) ?? [];
      list.push(offerJson(offer.id, m.frameworkId, role, agent, m.resources));
      byFramework.set(m.frameworkId, list);
    }
    for (const [frameworkId, offers] of byFramework) {
      this.metrics.offersMade += offers.length;
      this.toFramework(frameworkId, { type: 'OFFERS', offers: { offers } });
    }
  }

  /** Per role, what the registry's live tasks hold on agents the allocator does not have. */
  private holdingsElsewhere(): Map<string, Resources> {
    const state = this.state();
    const out = new Map<string, Resources>();
    for (const a of state.agents.values()) {
      if (this.allocator.hasAgent(a.id)) continue;
      for (const t of state.activeTasksOn(a.id)) {
        let r: Resources;
        try {
          r = Resources.parse(t.resources);
        } catch {
          continue;
        }
        const role = state.frameworks.get(t.frameworkId)?.role ?? '*';
        out.set(role, (out.get(role) ?? Resources.EMPTY).add(Resources.of({ cpus: r.cpus, mem: r.mem, disk: r.disk, gpus: r.gpus })));
      }
    }
    return out;
  }

  /** Takes offers back; with `rescind` the framework is told (RESCIND), else it is gone. */
  private recoverOffers(pred: (o: OutstandingOffer) => boolean, rescind: boolean): void {
    for (const o of this.offers.removeWhere(pred)) {
      if (rescind) {
        this.metrics.offersRescinded++;
        this.rescinded.add(o.id);
        if (this.rescinded.size > RESCINDED_MEMORY) this.rescinded.delete(this.rescinded.values().next().value as string);
        this.toFramework(o.frameworkId, { type: 'RESCIND', rescind: { offer_id: { value: o.id } } });
      }
      if (this.allocator.hasAgent(o.agentId) && this.allocator.hasFramework(o.frameworkId)) {
        this.allocator.recoverResources(o.frameworkId, o.agentId, o.resources, 0, this.nowMs);
      }
    }
  }
}

type LeaderAgentFrame = Extract<LeaderInput, { type: 'agent_frame' }>['frame'];

/** A drain as the agent is told it (absent: not draining). */
function drainOrder(drain: AgentDrain | undefined): DrainOrder {
  if (!drain) return NOT_DRAINING;
  return { draining: true, hasDeadline: drain.deadlineAtMs !== null, deadlineAtMs: drain.deadlineAtMs ?? 0 };
}

/** What a preemption's victims are told, and their frameworks with them. */
function preemptionMessage(r: PreemptionRecord): string {
  const p = r.preemptor;
  const what = p.for !== '' ? p.for : `framework ${p.name || p.frameworkId}`;
  return r.cause === 'priority' ? `preempted for ${what} (class ${p.priorityClass}, role ${p.role})` : `preempted for ${what}: role ${p.role} takes back its guarantee`;
}

/**
 * The quotas as the allocator reads them: what it holds itself, plus what tasks hold on agents
 * it does not have. After a leader change an agent is missing until it registers with the new
 * leader, and one unreachable since before keeps its tasks, which may come back; left out,
 * their roles would be offered past their limits (and seem below their guarantees).
 */
function countingElsewhere(policy: QuotaPolicy, elsewhere: () => ReadonlyMap<string, Resources>): QuotaPolicy {
  const withElsewhere = (allocated: ReadonlyMap<string, Resources>): ReadonlyMap<string, Resources> => {
    const extra = elsewhere();
    if (extra.size === 0) return allocated;
    const all = new Map(allocated);
    for (const [role, r] of extra) all.set(role, (all.get(role) ?? Resources.EMPTY).add(r));
    return all;
  };
  return {
    headroom: (role, allocated) => policy.headroom(role, withElsewhere(allocated)),
    belowGuarantee: (role, allocated) => policy.belowGuarantee(role, withElsewhere(allocated)),
  };
}

function addressKey(ip: string, httpPort: number, hostname: string): string {
  return `${ip}|${httpPort}|${hostname}`;
}

function hex(bytes: Uint8Array): string {
  return Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
}
