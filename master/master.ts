// The master process: the registry, the allocator and the offers, wired to agents over
// WebSocket and to frameworks over the scheduler API. This is the shell around the pure
// parts (registry state machine, allocator): it owns the clock, the timers and the sockets,
// and it sends nothing that depends on a registry change before that change is durable.

import { randomBytes, randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { isTerminal, NOT_DRAINING, type DrainOrder, type Register, type StatusUpdate, type TaskInfo, type TaskState, type UsageReport } from '../shared/agent-protocol.ts';
import { CairnError } from '../shared/errors.ts';
import type { OfferJson, SchedulerEvent, TaskStatusJson } from '../shared/mesos-v1.ts';
import { Resources } from '../shared/resources.ts';
import { Allocator } from './allocator/allocator.ts';
import type { AgentLink } from './agents/agent-link.ts';
import { judgeAgent, livenessPolicy, type LivenessPolicy } from './agents/liveness.ts';
import type { EventStream } from './frameworks/event-stream.ts';
import { OfferBook, type OutstandingOffer } from './offers.ts';
import type { FrameworkSpec, SchedulerCallParsed } from './api/scheduler-calls.ts';
import type { AgentDrain, PendingUpdate, TaskRecord } from './registry/commands.ts';
import type { Registry } from './registry/registry.ts';
import type { RegistryEvent } from './registry/state-machine.ts';
import type { MemberState } from '../shared/gossip/messages.ts';
import { MasterMetrics } from './metrics.ts';

export interface MasterConfig {
  dataDir: string;
  /** Agent liveness: a ping every pingIntervalMs; unreachable after maxMissedPings unanswered. */
  pingIntervalMs: number;
  maxMissedPings: number;
  /** Outstanding offers older than this are rescinded. */
  offerTimeoutMs: number;
  allocationIntervalMs: number;
  /** DECLINE/ACCEPT filter when the framework gives none (Mesos: 5 s). */
  defaultRefuseMs: number;
  /** HEARTBEAT events on framework streams. */
  frameworkHeartbeatMs: number;
  /** How often unacknowledged status updates are re-sent to frameworks. */
  updateRetryMs: number;
  /** After a master restart, frameworks get at least this long to resubscribe. */
  frameworkReregisterGraceMs: number;
  roleWeights: Record<string, number>;
}

export const DEFAULT_MASTER_CONFIG: Omit<MasterConfig, 'dataDir'> = {
  pingIntervalMs: 15_000, // Mesos: --agent_ping_timeout 15 s
  maxMissedPings: 5, // Mesos: --max_agent_ping_timeouts 5
  offerTimeoutMs: 60_000, // frameworks that sit on offers give them back within a minute
  allocationIntervalMs: 1_000, // Mesos: --allocation_interval 1 s
  defaultRefuseMs: 5_000, // Mesos: Filters.refuse_seconds default
  frameworkHeartbeatMs: 15_000, // Mesos: 15 s heartbeat events
  updateRetryMs: 10_000, // Mesos' status update retry starts at 10 s
  frameworkReregisterGraceMs: 60_000,
  roleWeights: {},
};

/** Gossip's opinion of agents, for the leader's liveness checks (see agents/liveness.ts). */
export interface AgentGossipView {
  /** The agent's state in gossip; undefined when gossip does not know it. */
  agentState(agentId: string): MemberState | undefined;
}

/** What the master's shell lends the leader's services besides the registry. */
export interface MasterHooks {
  readonly gossip?: AgentGossipView;
  /** A task's DNS name (task.framework.domain), given to its agent at launch; '' for none. */
  readonly taskDnsName?: (taskName: string, frameworkName: string) => string;
}

interface FrameworkSession {
  stream: EventStream;
  heartbeat: NodeJS.Timeout;
}

const MIN_OFFER = Resources.of({ cpus: 0.01 });
const MIN_OFFER_MEM = Resources.of({ mem: 32 });

function newUuid(): string {
  return randomBytes(16).toString('base64');
}

export class Master {
  readonly registry: Registry;
  readonly allocator: Allocator;
  readonly offers = new OfferBook(randomUUID().slice(0, 8));
  readonly metrics = new MasterMetrics();
  readonly startedAtMs = Date.now();
  private readonly links = new Map<string, AgentLink>();
  private readonly sessions = new Map<string, FrameworkSession>();
  private readonly failoverTimers = new Map<string, NodeJS.Timeout>();
  /** The latest usage sums each connected agent sent (soft state, gone with its socket). */
  private readonly usage = new Map<string, UsageReport>();
  /** Last time each agent was heard from, for agents without a live socket. */
  private readonly lastSeenMs = new Map<string, number>();
  /** Kills waiting for an agent that has no socket right now. */
  private readonly pendingKills = new Set<string>();
  /** Recently rescinded offers, to tell a late ACCEPT why it failed. */
  private readonly rescinded = new Set<string>();
  /** Task ids of launches proposed and not yet durable: a second launch must not reuse them. */
  private readonly launching = new Set<string>();
  private readonly timers: NodeJS.Timeout[] = [];
  /** Agents gossip declared dead, and when a ping went out to confirm it. */
  private readonly confirmations = new Map<string, { sentAtMs: number; timer: NodeJS.Timeout }>();
  private readonly liveness: LivenessPolicy;
  private allocationScheduled = false;
  private stopped = false;

  constructor(
    readonly config: MasterConfig,
    readonly log: Logger,
    registry: Registry,
    private readonly hooks: MasterHooks = {},
  ) {
    this.registry = registry;
    this.liveness = livenessPolicy(config.pingIntervalMs, config.maxMissedPings);
    this.allocator = new Allocator({ roleWeights: { ...config.roleWeights, ...Object.fromEntries(this.registry.state.roleWeights) } });
    const now = Date.now();
    // Frameworks from before a restart are known but disconnected until they resubscribe.
    for (const fw of this.registry.state.frameworks.values()) {
      const active = this.registry.state.activeTasksOf(fw.id).length > 0;
      if (fw.removedAtMs !== undefined && !active) continue;
      this.allocator.addFramework(fw.id, fw.role, { gpuAware: fw.capabilities?.includes('GPU_RESOURCES') ?? false });
      this.allocator.setFrameworkActive(fw.id, false);
      if (fw.removedAtMs === undefined) {
        this.startFailoverTimer(fw.id, Math.max(fw.failoverTimeoutS * 1000, config.frameworkReregisterGraceMs));
      }
    }
    for (const agent of this.registry.state.agents.values()) this.lastSeenMs.set(agent.id, now);
    this.timers.push(setInterval(() => this.checkAgents(), config.pingIntervalMs));
    this.timers.push(setInterval(() => this.allocate(), config.allocationIntervalMs));
    this.timers.push(setInterval(() => this.resendUnacknowledged(), config.updateRetryMs));
    for (const t of this.timers) t.unref();
  }

  // ---------------------------------------------------------------- agents

  agentConnected(link: AgentLink): void {
    this.metrics.agentConnections++;
    link.socket.on('close', () => {
      if (link.agentId && this.links.get(link.agentId) === link) {
        this.links.delete(link.agentId);
        this.usage.delete(link.agentId);
        this.lastSeenMs.set(link.agentId, Date.now());
      }
    });
  }

  badAgentFrame(link: AgentLink, err: CairnError): void {
    this.metrics.badAgentFrames++;
    this.log.warn({ remote: link.remoteAddress, err: err.message }, 'bad frame from agent; closing its connection');
    link.send({ error: { code: err.code, message: err.message } });
    link.close(1002, err.code);
  }

  async registerAgent(link: AgentLink, reg: Register): Promise<void> {
    const total = Resources.parse(reg.resources, 'register.resources');
    if (!reg.hostname) throw new CairnError('CAIRN_BAD_FRAME', 'hostname is required', 'register.hostname');
    const known = reg.agentId !== '' ? this.registry.state.agents.get(reg.agentId) : undefined;
    const agentId = reg.agentId !== '' ? reg.agentId : `${randomUUID()}-S0`;
    const previousLink = this.links.get(agentId);
    if (previousLink && previousLink !== link) previousLink.close(1000, 'replaced by a newer connection');
    const now = Date.now();
    const activeBefore = known ? this.registry.state.activeTasksOn(agentId).length : 0;
    const events = await this.registry.submit({
      type: 'agent_registered',
      agent: {
        id: agentId,
        hostname: reg.hostname,
        ip: reg.ip || link.remoteAddress,
        httpPort: reg.httpPort,
        resources: total.toString(),
        attributes: Object.fromEntries(reg.attributes.map((a) => [a.name, a.value])),
        registeredAtMs: now,
        ...(reg.isolation ? { isolation: reg.isolation } : {}),
      },
      runningTasks: known ? reg.tasks.map((t) => ({ taskId: t.taskId, state: t.state })) : undefined,
      uuids: Array.from({ length: activeBefore }, newUuid),
      atMs: now,
    });
    if (this.stopped) return;
    link.agentId = agentId;
    this.links.set(agentId, link);
    this.lastSeenMs.set(agentId, now);
    link.send({
      registered: {
        agentId,
        lostTaskIds: events.filter((e) => e.update.state === 'TASK_LOST').map((e) => e.task.id),
        pingIntervalMs: this.config.pingIntervalMs,
        drain: drainOrder(this.registry.state.agents.get(agentId)?.drain),
      },
    });
    this.forwardEvents(events);
    // Tasks the agent runs that the master does not know of (or that were killed or written
    // off meanwhile) must not keep running unaccounted for.
    for (const t of reg.tasks) {
      const task = this.registry.state.tasks.get(t.taskId);
      if (!task || task.agentId !== agentId || isTerminal(task.state) || this.pendingKills.has(t.taskId)) {
        this.pendingKills.delete(t.taskId);
        link.send({ kill: { taskId: t.taskId, frameworkId: t.frameworkId, graceMs: task?.killGraceMs ?? 0 } });
      }
    }
    this.addAgentToAllocator(agentId, total);
    this.log.info({ agentId, hostname: reg.hostname, resources: total.toString(), reregistered: !!known }, 'agent registered');
    this.scheduleAllocation();
  }

  // ---------------------------------------------------------------- drains

  /**
   * Drains an agent (Mesos' DRAIN_AGENT, Nomad's node drain): durable first, then no more
   * offers of it (outstanding ones rescinded) and the agent told, which refuses new tasks
   * and kills what still runs at the deadline. Draining again moves the deadline.
   */
  async drainAgent(agentId: string, deadlineAtMs: number | null): Promise<AgentDrain> {
    if (!this.registry.state.agents.has(agentId)) throw new CairnError('CAIRN_UNKNOWN_AGENT', `no agent '${agentId}'`, 'agentId');
    await this.registry.submit({ type: 'agent_drain', agentId, drain: { sinceMs: Date.now(), deadlineAtMs } });
    const drain = this.registry.state.agents.get(agentId)?.drain;
    if (this.stopped || !drain) throw new CairnError('CAIRN_UNKNOWN_AGENT', `agent '${agentId}' went away during the drain`, 'agentId');
    this.rescindOffers((o) => o.agentId === agentId);
    if (this.allocator.hasAgent(agentId)) this.allocator.setAgentActive(agentId, false);
    this.links.get(agentId)?.send({ drain: drainOrder(drain) });
    this.log.warn({ agentId, deadlineAtMs }, 'agent draining: no more offers of it');
    return drain;
  }

  /** Ends a drain: the agent takes tasks and is offered again. */
  async undrainAgent(agentId: string): Promise<void> {
    if (!this.registry.state.agents.has(agentId)) throw new CairnError('CAIRN_UNKNOWN_AGENT', `no agent '${agentId}'`, 'agentId');
    await this.registry.submit({ type: 'agent_drain', agentId, drain: null });
    if (this.stopped) return;
    const link = this.links.get(agentId);
    link?.send({ drain: NOT_DRAINING });
    if (link && this.allocator.hasAgent(agentId)) this.allocator.setAgentActive(agentId, true);
    this.log.info({ agentId }, 'agent drain ended');
    this.scheduleAllocation();
  }

  /** The latest usage sums of a connected agent; undefined when none came yet. */
  agentUsageReport(agentId: string): UsageReport | undefined {
    return this.usage.get(agentId);
  }

  agentUsage(link: AgentLink, report: UsageReport): void {
    if (link.agentId && this.links.get(link.agentId) === link) this.usage.set(link.agentId, report);
  }

  private addAgentToAllocator(agentId: string, total: Resources): void {
    this.rescindOffers((o) => o.agentId === agentId);
    if (this.allocator.hasAgent(agentId)) this.allocator.removeAgent(agentId);
    let used = Resources.EMPTY;
    const usedBy: { frameworkId: string; resources: Resources }[] = [];
    for (const t of this.registry.state.activeTasksOn(agentId)) {
      const r = Resources.parse(t.resources);
      used = used.add(r);
      usedBy.push({ frameworkId: t.frameworkId, resources: r });
    }
    this.allocator.addAgent(agentId, total, used, usedBy.filter((u) => this.frameworkInAllocator(u.frameworkId)));
    if (this.registry.state.agents.get(agentId)?.drain) this.allocator.setAgentActive(agentId, false);
  }

  private frameworkInAllocator(frameworkId: string): boolean {
    const fw = this.registry.state.frameworks.get(frameworkId);
    return !!fw && (fw.removedAtMs === undefined || this.registry.state.activeTasksOf(frameworkId).length > 0);
  }

  agentPong(link: AgentLink): void {
    link.pong();
    if (link.agentId) this.lastSeenMs.set(link.agentId, Date.now());
  }

  async agentStatusUpdate(link: AgentLink, su: StatusUpdate): Promise<void> {
    const agentId = link.agentId;
    if (!agentId) throw new CairnError('CAIRN_BAD_FRAME', 'status update before registration', 'status_update');
    this.metrics.statusUpdates++;
    const ack = () => link.send({ ack: { uuid: su.uuid, taskId: su.taskId } });
    const task = this.registry.state.tasks.get(su.taskId);
    if (!task || task.agentId !== agentId || isTerminal(task.state) || (task.state === su.state && !isTerminal(su.state))) {
      ack(); // nothing to change: unknown, stale or a re-sent duplicate
      return;
    }
    const events = await this.registry.submit({
      type: 'status_update',
      taskId: su.taskId,
      state: su.state,
      message: su.message,
      reason: su.reason,
      exitCode: su.hasExitCode ? su.exitCode : undefined,
      source: 'SOURCE_AGENT',
      uuid: Buffer.from(su.uuid).toString('base64'),
      atMs: Date.now(),
    });
    ack();
    this.forwardEvents(events);
  }

  /** Pings connected agents, then judges every reachable agent (agents/liveness.ts). */
  private checkAgents(): void {
    const now = Date.now();
    for (const link of this.links.values()) link.ping(now);
    this.judgeAgents(undefined, now);
  }

  /**
   * Applies the liveness verdict to the given agents (default: every reachable one): pings
   * and, when there is one, gossip's opinion. Called on each ping round and by the gossip
   * shell when an agent's gossip state changes.
   */
  judgeAgents(agentIds?: Iterable<string>, now = Date.now()): void {
    const ids = agentIds ?? [...this.registry.state.agents.keys()];
    for (const agentId of ids) {
      if (this.stopped || !this.registry.state.agents.get(agentId)?.reachable) continue;
      const link = this.links.get(agentId);
      const gossip = this.hooks.gossip?.agentState(agentId);
      if (gossip !== 'dead' && gossip !== 'left') this.clearConfirmation(agentId);
      const verdict = judgeAgent({
        nowMs: now,
        gossip,
        connected: link !== undefined,
        missedPings: link?.missedPings ?? 0,
        lastHeardMs: this.lastSeenMs.get(agentId) ?? now,
        confirmSentAtMs: this.confirmations.get(agentId)?.sentAtMs,
      }, this.liveness);
      if (verdict.action === 'confirm') {
        link?.send({ ping: { sentMs: now } });
        const timer = setTimeout(() => this.judgeAgents([agentId]), this.liveness.confirmMs + 10);
        timer.unref();
        this.confirmations.set(agentId, { sentAtMs: now, timer });
      } else if (verdict.action === 'disconnect' && link) {
        this.log.warn({ agentId }, 'agent silent on its connection but alive in gossip: closing the connection for it to reconnect');
        link.close(1000, 'missed too many pings');
        this.links.delete(agentId);
      } else if (verdict.action === 'unreachable') {
        if (link) {
          link.close(1000, 'missed too many pings');
          this.links.delete(agentId);
        }
        this.clearConfirmation(agentId);
        this.background(this.markUnreachable(agentId, verdict.reason));
      }
    }
  }

  private clearConfirmation(agentId: string): void {
    const c = this.confirmations.get(agentId);
    if (c === undefined) return;
    clearTimeout(c.timer);
    this.confirmations.delete(agentId);
  }

  private async markUnreachable(agentId: string, reason: string): Promise<void> {
    const agent = this.registry.state.agents.get(agentId);
    if (!agent?.reachable) return;
    this.log.warn({ agentId, hostname: agent.hostname, reason }, 'agent unreachable');
    this.rescindOffers((o) => o.agentId === agentId);
    if (this.allocator.hasAgent(agentId)) this.allocator.setAgentActive(agentId, false);
    const n = this.registry.state.activeTasksOn(agentId).length;
    const events = await this.registry.submit({ type: 'agent_unreachable', agentId, uuids: Array.from({ length: n }, newUuid), atMs: Date.now() });
    this.forwardEvents(events);
  }

  // ---------------------------------------------------------------- frameworks

  /** SUBSCRIBE: returns the framework id once the subscription is durable. */
  async subscribe(spec: FrameworkSpec, stream: EventStream): Promise<string> {
    let frameworkId = spec.id;
    if (frameworkId !== undefined) {
      const existing = this.registry.state.frameworks.get(frameworkId);
      if (existing?.removedAtMs !== undefined) {
        throw new CairnError('CAIRN_UNKNOWN_FRAMEWORK', `framework ${frameworkId} has been removed and cannot resubscribe`, 'framework_id');
      }
      if (existing && existing.role !== spec.role) {
        throw new CairnError('CAIRN_BAD_REQUEST', `framework ${frameworkId} is in role '${existing.role}'; changing role is not supported`, 'subscribe.framework_info.role');
      }
    } else {
      frameworkId = `${randomUUID()}-0000`;
    }
    const now = Date.now();
    await this.registry.submit({
      type: 'framework_subscribed',
      framework: {
        id: frameworkId,
        name: spec.name,
        user: spec.user,
        role: spec.role,
        principal: spec.principal,
        failoverTimeoutS: spec.failoverTimeoutS,
        capabilities: spec.capabilities,
        registeredAtMs: now,
      },
      atMs: now,
    });
    const old = this.sessions.get(frameworkId);
    if (old) {
      old.stream.send({ type: 'ERROR', error: { message: 'framework failed over to a newer subscription' } });
      this.endSession(frameworkId);
    }
    const timer = this.failoverTimers.get(frameworkId);
    if (timer) clearTimeout(timer);
    this.failoverTimers.delete(frameworkId);
    const gpuAware = spec.capabilities.includes('GPU_RESOURCES');
    if (this.allocator.hasFramework(frameworkId) && this.allocator.isGpuAware(frameworkId) !== gpuAware) {
      this.recoverOffers((o) => o.frameworkId === frameworkId);
      this.allocator.setGpuAware(frameworkId, gpuAware);
    }
    if (!this.allocator.hasFramework(frameworkId)) this.allocator.addFramework(frameworkId, spec.role, { gpuAware });
    this.allocator.setFrameworkActive(frameworkId, true);
    const id = frameworkId;
    const heartbeat = setInterval(() => stream.send({ type: 'HEARTBEAT' }), this.config.frameworkHeartbeatMs);
    heartbeat.unref();
    this.sessions.set(id, { stream, heartbeat });
    stream.onClose(() => this.streamClosed(id, stream));
    stream.send({ type: 'SUBSCRIBED', subscribed: { framework_id: { value: id }, heartbeat_interval_seconds: this.config.frameworkHeartbeatMs / 1000 } });
    for (const t of this.registry.state.tasks.values()) {
      if (t.frameworkId === id && t.unacked) stream.send(this.updateEvent(t, t.unacked));
    }
    this.log.info({ frameworkId: id, name: spec.name, role: spec.role }, 'framework subscribed');
    this.scheduleAllocation();
    return id;
  }

  private endSession(frameworkId: string): void {
    const s = this.sessions.get(frameworkId);
    if (!s) return;
    this.sessions.delete(frameworkId);
    clearInterval(s.heartbeat);
    s.stream.end();
  }

  private streamClosed(frameworkId: string, stream: EventStream): void {
    const s = this.sessions.get(frameworkId);
    if (!s || s.stream !== stream || this.stopped) return;
    this.sessions.delete(frameworkId);
    clearInterval(s.heartbeat);
    const fw = this.registry.state.frameworks.get(frameworkId);
    if (!fw || fw.removedAtMs !== undefined) return;
    this.log.info({ frameworkId, failoverTimeoutS: fw.failoverTimeoutS }, 'framework disconnected');
    this.allocator.setFrameworkActive(frameworkId, false);
    this.recoverOffers((o) => o.frameworkId === frameworkId);
    this.startFailoverTimer(frameworkId, fw.failoverTimeoutS * 1000);
  }

  private startFailoverTimer(frameworkId: string, ms: number): void {
    const t = setTimeout(() => {
      this.failoverTimers.delete(frameworkId);
      if (!this.sessions.has(frameworkId)) this.background(this.teardown(frameworkId, 'failover timeout passed'));
    }, ms);
    t.unref();
    this.failoverTimers.set(frameworkId, t);
  }

  /** The session a call must come from: framework subscribed and stream id matching. */
  requireSession(frameworkId: string, streamId: string | undefined): FrameworkSession {
    const fw = this.registry.state.frameworks.get(frameworkId);
    if (!fw || fw.removedAtMs !== undefined) throw new CairnError('CAIRN_UNKNOWN_FRAMEWORK', `framework ${frameworkId} is not subscribed`, 'framework_id');
    const s = this.sessions.get(frameworkId);
    if (!s) throw new CairnError('CAIRN_UNKNOWN_FRAMEWORK', `framework ${frameworkId} has no open subscription`, 'framework_id');
    if (streamId === undefined) throw new CairnError('CAIRN_STREAM_MISMATCH', 'the Mesos-Stream-Id header is required', 'Mesos-Stream-Id');
    if (s.stream.streamId !== streamId) throw new CairnError('CAIRN_STREAM_MISMATCH', 'Mesos-Stream-Id does not match the current subscription', 'Mesos-Stream-Id');
    return s;
  }

  /** Every scheduler call but SUBSCRIBE. Throws CairnError (nothing changed) on bad input. */
  handleCall(call: Exclude<SchedulerCallParsed, { type: 'SUBSCRIBE' }>, streamId: string | undefined): void {
    const session = this.requireSession(call.frameworkId, streamId);
    this.metrics.calls.set(call.type, (this.metrics.calls.get(call.type) ?? 0) + 1);
    const now = Date.now();
    switch (call.type) {
      case 'ACCEPT':
        return this.accept(call, now);
      case 'DECLINE':
        for (const id of call.offerIds) {
          const o = this.offers.get(id);
          if (!o || o.frameworkId !== call.frameworkId) continue; // Mesos ignores unknown offers here
          this.offers.remove(id);
          this.allocator.recoverResources(o.frameworkId, o.agentId, o.resources, call.refuseMs ?? this.config.defaultRefuseMs, now);
        }
        this.scheduleAllocation();
        return;
      case 'REVIVE':
        this.allocator.revive(call.frameworkId);
        this.scheduleAllocation();
        return;
      case 'SUPPRESS':
        this.allocator.suppress(call.frameworkId);
        return;
      case 'KILL': {
        const task = this.registry.state.tasks.get(call.taskId);
        if (!task || task.frameworkId !== call.frameworkId) {
          session.stream.send(this.statusEvent(call.taskId, undefined, 'TASK_LOST', 'unknown task', 'REASON_RECONCILIATION'));
          return;
        }
        this.killTask(task);
        return;
      }
      case 'ACKNOWLEDGE': {
        const task = this.registry.state.tasks.get(call.taskId);
        if (task && task.frameworkId === call.frameworkId && task.unacked?.uuid === call.uuid) {
          this.registry.submit({ type: 'status_acknowledged', taskId: task.id, uuid: call.uuid }).catch(() => undefined); // re-sent until acknowledged
        }
        return;
      }
      case 'RECONCILE': {
        const tasks = call.taskIds.length > 0 ? call.taskIds : this.registry.state.activeTasksOf(call.frameworkId).map((t) => t.id);
        for (const id of tasks) {
          const t = this.registry.state.tasks.get(id);
          if (t && t.frameworkId === call.frameworkId) session.stream.send(this.statusEvent(t.id, t.agentId, t.state, t.message, 'REASON_RECONCILIATION'));
          else session.stream.send(this.statusEvent(id, undefined, 'TASK_LOST', 'unknown task', 'REASON_RECONCILIATION'));
        }
        return;
      }
      case 'TEARDOWN':
        this.background(this.teardown(call.frameworkId, 'torn down by the framework'));
        return;
    }
  }

  private accept(call: Extract<SchedulerCallParsed, { type: 'ACCEPT' }>, now: number): void {
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
    const agentId = offers[0].agentId;
    if (offers.some((o) => o.agentId !== agentId)) throw new CairnError('CAIRN_BAD_REQUEST', 'all offers of one ACCEPT must be for the same agent', 'accept.offer_ids');
    const offered = offers.reduce((acc, o) => acc.add(o.resources), Resources.EMPTY);
    let used = Resources.EMPTY;
    const seen = new Set<string>();
    call.tasks.forEach((t, i) => {
      const field = `accept.operations.launch.task_infos[${i}]`;
      if (t.agentId !== agentId) throw new CairnError('CAIRN_BAD_REQUEST', `agent ${t.agentId} is not the offers' agent ${agentId}`, `${field}.agent_id`);
      if (seen.has(t.taskId) || this.launching.has(t.taskId) || this.registry.state.tasks.has(t.taskId)) {
        throw new CairnError('CAIRN_DUPLICATE_TASK', `task id '${t.taskId}' is already in use`, `${field}.task_id`);
      }
      seen.add(t.taskId);
      used = used.add(t.resources);
      if (!offered.contains(used)) {
        throw new CairnError('CAIRN_INSUFFICIENT_RESOURCES', `tasks ask ${used.toString()} but the offers hold ${offered.toString()}`, `${field}.resources`);
      }
    });
    for (const o of offers) this.offers.remove(o.id);
    const remaining = offered.subtract(used);
    if (!remaining.isEmpty()) {
      this.allocator.recoverResources(call.frameworkId, agentId, remaining, call.refuseMs ?? this.config.defaultRefuseMs, now);
    }
    if (call.tasks.length === 0) {
      this.scheduleAllocation();
      return;
    }
    for (const t of call.tasks) this.launching.add(t.taskId);
    const launches = call.tasks.map((t) =>
      this.registry.submit({
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
          launchedAtMs: now,
        },
        atMs: now,
      }),
    );
    this.metrics.tasksLaunched += call.tasks.length;
    void Promise.all(launches).then(() => {
      const link = this.links.get(agentId);
      if (!link) {
        for (const t of call.tasks) this.background(this.masterUpdate(t.taskId, 'TASK_LOST', 'agent is not connected', 'REASON_AGENT_DISCONNECTED'));
        return;
      }
      const frameworkName = this.registry.state.frameworks.get(call.frameworkId)?.name ?? '';
      const infos: TaskInfo[] = call.tasks.map((t) => ({
        taskId: t.taskId,
        frameworkId: call.frameworkId,
        name: t.name,
        resources: t.resources.toString(),
        command: t.command,
        killGraceMs: t.killGraceMs,
        labels: t.labels,
        container: t.container ?? null,
        dnsName: this.hooks.taskDnsName?.(t.name, frameworkName) ?? '',
      }));
      link.send({ launch: { tasks: infos } });
    }).catch((err) => this.log.warn({ err: (err as Error).message, frameworkId: call.frameworkId }, 'launch not recorded; tasks not started'))
      .finally(() => {
        for (const t of call.tasks) this.launching.delete(t.taskId);
      });
    this.scheduleAllocation();
  }

  /** Asks the task's agent to kill it (operator or framework). */
  killTask(task: TaskRecord): void {
    if (isTerminal(task.state)) return;
    const link = this.links.get(task.agentId);
    if (link) link.send({ kill: { taskId: task.id, frameworkId: task.frameworkId, graceMs: task.killGraceMs } });
    else this.pendingKills.add(task.id);
  }

  async teardown(frameworkId: string, why: string): Promise<void> {
    const fw = this.registry.state.frameworks.get(frameworkId);
    if (!fw || fw.removedAtMs !== undefined) return;
    this.log.info({ frameworkId, why }, 'removing framework');
    await this.registry.submit({ type: 'framework_removed', frameworkId, atMs: Date.now() });
    this.endSession(frameworkId);
    const timer = this.failoverTimers.get(frameworkId);
    if (timer) clearTimeout(timer);
    this.failoverTimers.delete(frameworkId);
    this.recoverOffers((o) => o.frameworkId === frameworkId);
    const active = this.registry.state.activeTasksOf(frameworkId);
    if (this.allocator.hasFramework(frameworkId)) {
      if (active.length === 0) this.allocator.removeFramework(frameworkId);
      else this.allocator.setFrameworkActive(frameworkId, false);
    }
    for (const t of active) this.killTask(t);
    this.scheduleAllocation();
  }

  /** A status update the master itself decides (lost, unreachable...). */
  private async masterUpdate(taskId: string, state: TaskState, message: string, reason: string): Promise<void> {
    const events = await this.registry.submit({ type: 'status_update', taskId, state, message, reason, source: 'SOURCE_MASTER', uuid: newUuid(), atMs: Date.now() });
    this.forwardEvents(events);
  }

  /** After a registry change is durable: tell frameworks, give back resources of ended tasks. */
  private forwardEvents(events: RegistryEvent[]): void {
    const now = Date.now();
    for (const e of events) {
      const t = e.task;
      const s = this.sessions.get(t.frameworkId);
      if (s) s.stream.send(this.updateEvent(t, e.update));
      const wasHolding = !isTerminal(e.previousState) && e.previousState !== 'TASK_UNREACHABLE';
      if (isTerminal(e.update.state) && this.allocator.hasFramework(t.frameworkId)) {
        this.pendingKills.delete(t.id);
        if (wasHolding && this.registry.state.agents.get(t.agentId)?.reachable) {
          try {
            this.allocator.recoverResources(t.frameworkId, t.agentId, Resources.parse(t.resources), 0, now);
          } catch (err) {
            this.log.debug({ err: (err as Error).message, taskId: t.id }, 'resources of ended task not recovered');
          }
        }
        const fw = this.registry.state.frameworks.get(t.frameworkId);
        if (fw?.removedAtMs !== undefined && this.registry.state.activeTasksOf(fw.id).length === 0) this.allocator.removeFramework(fw.id);
        this.scheduleAllocation();
      }
    }
  }

  private resendUnacknowledged(): void {
    for (const t of this.registry.state.tasks.values()) {
      if (!t.unacked) continue;
      const s = this.sessions.get(t.frameworkId);
      if (s) s.stream.send(this.updateEvent(t, t.unacked));
    }
  }

  private updateEvent(t: TaskRecord, u: PendingUpdate): SchedulerEvent {
    const status: TaskStatusJson = {
      task_id: { value: t.id },
      state: u.state,
      agent_id: { value: t.agentId },
      message: u.message,
      source: u.source,
      uuid: u.uuid,
      timestamp: u.atMs / 1000,
    };
    if (u.reason) status.reason = u.reason;
    return { type: 'UPDATE', update: { status } };
  }

  private statusEvent(taskId: string, agentId: string | undefined, state: TaskState, message: string, reason: string): SchedulerEvent {
    const status: TaskStatusJson = { task_id: { value: taskId }, state, message, source: 'SOURCE_MASTER', reason, timestamp: Date.now() / 1000 };
    if (agentId) status.agent_id = { value: agentId };
    return { type: 'UPDATE', update: { status } };
  }

  // ---------------------------------------------------------------- offers

  scheduleAllocation(): void {
    if (this.allocationScheduled || this.stopped) return;
    this.allocationScheduled = true;
    setImmediate(() => {
      this.allocationScheduled = false;
      this.allocate();
    });
  }

  private allocate(): void {
    if (this.stopped) return;
    const now = Date.now();
    this.recoverOffers((o) => now - o.createdAtMs >= this.config.offerTimeoutMs, true);
    const started = performance.now();
    const made = this.allocator.allocate(now);
    this.metrics.observeAllocation(performance.now() - started);
    const byFramework = new Map<string, OfferJson[]>();
    for (const m of made) {
      const session = this.sessions.get(m.frameworkId);
      const agent = this.registry.state.agents.get(m.agentId);
      if (!session || !agent || (!m.resources.contains(MIN_OFFER) && !m.resources.contains(MIN_OFFER_MEM))) {
        this.allocator.recoverResources(m.frameworkId, m.agentId, m.resources, 0, now);
        continue;
      }
      const offer = this.offers.create(m.frameworkId, m.agentId, m.resources, now);
      const fw = this.registry.state.frameworks.get(m.frameworkId);
      const list = byFramework.get(m.frameworkId) ?? [];
      list.push({
        id: { value: offer.id },
        framework_id: { value: m.frameworkId },
        agent_id: { value: m.agentId },
        hostname: agent.hostname,
        url: { scheme: 'http', address: { hostname: agent.hostname, ip: agent.ip, port: agent.httpPort }, path: '/' },
        resources: m.resources.toMesos(fw?.role ?? '*'),
        attributes: Object.entries(agent.attributes).map(([name, value]) => ({ name, type: 'TEXT' as const, text: { value } })),
      });
      byFramework.set(m.frameworkId, list);
    }
    for (const [frameworkId, offers] of byFramework) {
      this.metrics.offersMade += offers.length;
      this.sessions.get(frameworkId)!.stream.send({ type: 'OFFERS', offers: { offers } });
    }
  }

  /** Takes offers back without telling the framework (it is gone) or, with `rescind`, telling it. */
  private recoverOffers(pred: (o: OutstandingOffer) => boolean, rescind = false): void {
    const now = Date.now();
    for (const o of this.offers.removeWhere(pred)) {
      if (rescind) this.noteRescinded(o);
      try {
        this.allocator.recoverResources(o.frameworkId, o.agentId, o.resources, 0, now);
      } catch {
        // agent or framework already removed from the allocator
      }
    }
  }

  private rescindOffers(pred: (o: OutstandingOffer) => boolean): void {
    this.recoverOffers(pred, true);
  }

  private noteRescinded(o: OutstandingOffer): void {
    this.metrics.offersRescinded++;
    this.rescinded.add(o.id);
    if (this.rescinded.size > 10_000) this.rescinded.delete(this.rescinded.values().next().value as string);
    this.sessions.get(o.frameworkId)?.stream.send({ type: 'RESCIND', rescind: { offer_id: { value: o.id } } });
  }

  /** An operator sets a role's weight: durable first, then the allocator uses it. */
  async setRoleWeight(role: string, weight: number): Promise<void> {
    await this.registry.submit({ type: 'role_weight_set', role, weight });
    if (!this.stopped) {
      this.allocator.setRoleWeight(role, weight);
      this.scheduleAllocation();
    }
  }

  // ---------------------------------------------------------------- lifetime

  /** Runs work no caller waits for; a failure (registry closed, leadership lost) is logged. */
  private background(p: Promise<unknown>): void {
    p.catch((err) => {
      if (!this.stopped) this.log.warn({ err: (err as Error).message }, 'background registry change failed');
    });
  }

  isConnected(agentId: string): boolean {
    return this.links.has(agentId);
  }

  frameworkConnected(frameworkId: string): boolean {
    return this.sessions.has(frameworkId);
  }

  stop(): void {
    if (this.stopped) return;
    this.stopped = true;
    for (const t of this.timers) clearInterval(t);
    for (const t of this.failoverTimers.values()) clearTimeout(t);
    for (const id of [...this.confirmations.keys()]) this.clearConfirmation(id);
    for (const id of [...this.sessions.keys()]) this.endSession(id);
    for (const link of this.links.values()) link.close(1001, 'master stopping');
    this.links.clear();
  }
}

/** A drain as the agent is told it (absent: not draining). */
function drainOrder(drain: AgentDrain | undefined): DrainOrder {
  if (!drain) return NOT_DRAINING;
  return { draining: true, hasDeadline: drain.deadlineAtMs !== null, deadlineAtMs: drain.deadlineAtMs ?? 0 };
}
