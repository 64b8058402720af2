// The leader's shell: the sockets, streams, timers and registry log around the pure leader
// core (leader/leader-core.ts). Every input becomes one `step` of the core; every effect it
// returns is carried out here, in order — a registry command handed to the log (its outcome
// fed back as `committed`), a frame to an agent, an event to a framework, an answer to a
// waiting request. The core decides; this file only connects it to the world.

import type { Logger } from 'pino';
import type { AgentToMaster, UsageReport } from '../shared/agent-messages.ts';
import { cryptoRandom } from '../shared/crypto-random.ts';
import { CairnError } from '../shared/errors.ts';
import type { MemberState } from '../shared/gossip/messages.ts';
import type { Allocator } from './allocator/allocator.ts';
import type { AgentLink } from './agents/agent-link.ts';
import type { FrameworkSpec } from './scheduler-calls.ts';
import type { EventStream } from './event-stream.ts';
import { DEFAULT_LEADER_CONFIG, type LeaderConfig } from './leader/config.ts';
import { LeaderCore } from './leader/leader-core.ts';
import type { ConnId, LeaderEffect, LeaderInput, OperatorCall, ReplyValue, RequestId, SchedulerCall } from './leader/messages.ts';
import type { MasterMetrics } from './metrics.ts';
import type { OfferBook } from './offers.ts';
import type { AgentDrain, QuotaRecord, TaskRecord } from './registry/commands.ts';
import type { Registry } from './registry/registry.ts';
import { steadyClock, type Clock } from '../shared/steady-clock.ts';

export interface MasterConfig extends LeaderConfig {
  dataDir: string;
}

export const DEFAULT_MASTER_CONFIG: Omit<MasterConfig, 'dataDir'> = DEFAULT_LEADER_CONFIG;

/** Gossip's opinion of agents, for the leader's liveness checks (see leader/liveness-verdict.ts). */
export interface AgentGossipView {
  /** The agent's state in gossip; undefined when gossip does not know it. */
  agentState(agentId: string): MemberState | undefined;
}

/** What the master's shell lends the leader's services besides the registry. */
export interface MasterHooks {
  readonly gossip?: AgentGossipView;
  /** A task's DNS name (task.framework.domain), given to its agent at launch; '' for none. */
  readonly taskDnsName?: (taskName: string, frameworkName: string) => string;
  /** Whose a task is (framework-host/task-owner.ts), given to its agent at launch; '' for no one's. */
  readonly taskPrincipal?: (frameworkId: string, labels: { name: string; value: string }[]) => string;
}

interface Waiter {
  resolve(value: ReplyValue): void;
  reject(err: Error): void;
}

export class Master {
  readonly registry: Registry;
  readonly core: LeaderCore;
  /**
   * This leadership's clock: the wall clock as this master began to lead, advanced by the
   * monotonic clock since (shared/steady-clock.ts). Every deadline, lease, offer time-out and
   * liveness check of the core runs on it, so a step of the wall clock — forward or back —
   * neither expires nor freezes them; the timestamps the core writes read as epoch times.
   */
  readonly now: Clock = steadyClock();
  private readonly links = new Map<ConnId, AgentLink>();
  private readonly connOf = new WeakMap<AgentLink, ConnId>();
  private readonly streams = new Map<string, EventStream>();
  private readonly waiters = new Map<RequestId, Waiter>();
  /**
   * The last refusal of the data dir's disk: the core only hears a failed proposal's message
   * (and answers CAIRN_NOT_LEADER quoting it), so the caller is given this one back instead,
   * 507 rather than a 503 that sends it looking for another leader.
   */
  private storageRefusal: CairnError | undefined;
  private nextConn = 1;
  private nextRequest = 1;
  private wakeTimer: NodeJS.Timeout | undefined;
  private wakeAtMs = Infinity;
  private allocationScheduled = false;
  private stopped = false;

  constructor(
    readonly config: MasterConfig,
    readonly log: Logger,
    registry: Registry,
    hooks: MasterHooks = {},
  ) {
    this.registry = registry;
    const gossip = hooks.gossip;
    this.core = new LeaderCore({
      config,
      registry: () => registry.state,
      random: cryptoRandom(),
      nowMs: this.now(),
      gossip: gossip ? (id) => gossip.agentState(id) : undefined,
      taskDnsName: hooks.taskDnsName,
      taskPrincipal: hooks.taskPrincipal,
    });
    this.armWake();
  }

  get allocator(): Allocator {
    return this.core.allocator;
  }

  get offers(): OfferBook {
    return this.core.offers;
  }

  get metrics(): MasterMetrics {
    return this.core.metrics;
  }

  get startedAtMs(): number {
    return this.core.startedAtMs;
  }

  // ---------------------------------------------------------------- inputs

  agentConnected(link: AgentLink): void {
    const conn = this.nextConn++;
    this.links.set(conn, link);
    this.connOf.set(link, conn);
    link.socket.on('close', () => {
      this.links.delete(conn);
      this.step({ type: 'agent_disconnected', conn });
    });
    this.step({ type: 'agent_connected', conn, remoteAddress: link.remoteAddress, principal: link.principal });
  }

  agentFrame(link: AgentLink, frame: AgentToMaster): void {
    const conn = this.connOf.get(link);
    if (conn !== undefined) this.step({ type: 'agent_frame', conn, frame });
  }

  badAgentFrame(link: AgentLink, error: CairnError): void {
    const conn = this.connOf.get(link);
    if (conn !== undefined) this.step({ type: 'agent_bad_frame', conn, error });
  }

  /** SUBSCRIBE: resolves with the framework id once the subscription is durable. */
  subscribe(spec: FrameworkSpec, stream: EventStream): Promise<string> {
    this.streams.set(stream.streamId, stream);
    stream.onClose(() => {
      if (this.streams.get(stream.streamId) === stream) this.streams.delete(stream.streamId);
      this.step({ type: 'stream_closed', stream: stream.streamId });
    });
    return this.request((request) => ({ type: 'subscribe', request, stream: stream.streamId, spec })).then((r) => {
      if (r.type !== 'subscribed') throw new CairnError('CAIRN_INTERNAL', `unexpected answer ${r.type} to SUBSCRIBE`);
      return r.frameworkId;
    }, (err: unknown) => {
      this.streams.delete(stream.streamId);
      throw err;
    });
  }

  /** Every scheduler call but SUBSCRIBE. Throws CairnError (nothing changed) on bad input. */
  handleCall(call: SchedulerCall, streamId: string | undefined): void {
    this.step({ type: 'scheduler_call', call, streamId });
  }

  /** Asks the task's agent to kill it, as an operator. */
  killTask(task: TaskRecord): void {
    void this.operator({ type: 'kill_task', taskId: task.id }).catch((err: Error) => this.log.warn({ err: err.message, taskId: task.id }, 'kill not sent'));
  }

  /** Drains an agent; resolves with the drain once it is durable. */
  async drainAgent(agentId: string, deadlineAtMs: number | null): Promise<AgentDrain> {
    const r = await this.operator({ type: 'drain_agent', agentId, deadlineAtMs });
    if (r.type !== 'drained') throw new CairnError('CAIRN_INTERNAL', `unexpected answer ${r.type} to a drain`);
    return r.drain;
  }

  /** Removes a framework as an operator (Mesos' TEARDOWN); resolves once durable. */
  async teardownFramework(frameworkId: string): Promise<void> {
    await this.operator({ type: 'teardown_framework', frameworkId });
  }

  /** Ends a drain: the agent takes tasks and is offered again. */
  async undrainAgent(agentId: string): Promise<void> {
    await this.operator({ type: 'undrain_agent', agentId });
  }

  /** An operator sets a role's weight: durable first, then the allocator uses it. */
  async setRoleWeight(role: string, weight: number): Promise<void> {
    await this.operator({ type: 'set_role_weight', role, weight });
  }

  /** An operator sets (or, with null, removes) a role's quota: checked against the others, durable, then in force. */
  async setQuota(role: string, quota: QuotaRecord | null): Promise<void> {
    await this.operator({ type: 'set_quota', role, quota });
  }

  /** Gossip's opinion of these agents (all when absent) changed: judge them again. */
  judgeAgents(agentIds?: Iterable<string>): void {
    this.step({ type: 'gossip_changed', agentIds: agentIds ? [...agentIds] : undefined });
  }

  // ---------------------------------------------------------------- queries

  agentUsageReport(agentId: string): UsageReport | undefined {
    return this.core.agentUsageReport(agentId);
  }

  isConnected(agentId: string): boolean {
    return this.core.isConnected(agentId);
  }

  frameworkConnected(frameworkId: string): boolean {
    return this.core.frameworkConnected(frameworkId);
  }

  // ---------------------------------------------------------------- carrying out effects

  private operator(call: OperatorCall): Promise<ReplyValue> {
    return this.request((request) => ({ type: 'operator', request, call }));
  }

  private request(input: (request: RequestId) => LeaderInput): Promise<ReplyValue> {
    const request = this.nextRequest++;
    return new Promise<ReplyValue>((resolve, reject) => {
      this.waiters.set(request, { resolve, reject });
      try {
        this.step(input(request));
      } catch (err) {
        this.waiters.delete(request);
        reject(err as Error);
      }
    }).finally(() => this.waiters.delete(request));
  }

  /** One input through the core, then its effects; a CairnError from the core is the caller's. */
  private step(input: LeaderInput): void {
    if (this.stopped) {
      if (input.type === 'subscribe' || input.type === 'operator' || input.type === 'scheduler_call') {
        throw new CairnError('CAIRN_NOT_LEADER', 'this master stopped leading; retry with the new leader');
      }
      return;
    }
    const started = input.type === 'allocate' || input.type === 'tick' ? performance.now() : 0;
    const effects = this.core.step(this.now(), input);
    if (input.type === 'allocate') this.metrics.observeAllocation(performance.now() - started);
    this.execute(effects);
    this.armWake();
  }

  private execute(effects: LeaderEffect[]): void {
    for (const e of effects) {
      switch (e.type) {
        case 'propose':
          this.registry.submit(e.command).then(
            (events) => this.step({ type: 'committed', proposal: e.proposal, events }),
            (err: Error) => {
              if (err instanceof CairnError && err.code === 'CAIRN_STORAGE_FULL') this.storageRefusal = err;
              this.step({ type: 'proposal_failed', proposal: e.proposal, message: err.message });
            },
          );
          break;
        case 'to_agent':
          this.links.get(e.conn)?.send(e.msg);
          break;
        case 'close_agent':
          this.links.get(e.conn)?.close(e.code, e.reason);
          break;
        case 'to_framework':
          this.streams.get(e.stream)?.send(e.event);
          break;
        case 'end_stream': {
          const s = this.streams.get(e.stream);
          this.streams.delete(e.stream);
          s?.end();
          break;
        }
        case 'reply':
          this.waiters.get(e.request)?.resolve(e.result);
          break;
        case 'reply_error': {
          const refusal = this.storageRefusal;
          this.waiters.get(e.request)?.reject(refusal !== undefined && e.error.message.includes(refusal.message) ? refusal : e.error);
          break;
        }
        case 'allocate_soon':
          if (!this.allocationScheduled) {
            this.allocationScheduled = true;
            setImmediate(() => {
              this.allocationScheduled = false;
              this.step({ type: 'allocate' });
            });
          }
          break;
        case 'log':
          this.log[e.level](e.fields, e.msg);
          break;
      }
    }
  }

  /** One timer, set for when the core next needs time to pass. */
  private armWake(): void {
    if (this.stopped) return;
    const at = this.core.nextWakeMs();
    if (this.wakeTimer && at >= this.wakeAtMs) return;
    if (this.wakeTimer) clearTimeout(this.wakeTimer);
    this.wakeAtMs = at;
    this.wakeTimer = setTimeout(() => {
      this.wakeTimer = undefined;
      this.wakeAtMs = Infinity;
      this.step({ type: 'tick' });
    }, Math.max(0, at - this.now()));
    this.wakeTimer.unref();
  }

  stop(): void {
    if (this.stopped) return;
    const effects = this.core.stop();
    this.execute(effects);
    this.stopped = true;
    if (this.wakeTimer) clearTimeout(this.wakeTimer);
    for (const w of this.waiters.values()) w.reject(new CairnError('CAIRN_NOT_LEADER', 'this master stopped leading; retry with the new leader'));
    this.waiters.clear();
    for (const link of this.links.values()) link.close(1001, 'master stopping');
    this.links.clear();
    // A stream not yet started is a SUBSCRIBE still waiting for its write: the rejection just
    // above answers it with its error (503, retry with the new leader). Ending it here would
    // send a 200 with no event instead, which a client waiting for SUBSCRIBED cannot tell
    // from a slow subscription.
    for (const s of this.streams.values()) if (s.started) s.end();
    this.streams.clear();
  }
}
