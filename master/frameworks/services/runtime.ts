// The services framework on the framework runtime (shared/framework-runtime/), on the
// leading master: one subscription (made once there is an app, or a framework id from an
// earlier leader) around the pure core (core.ts). Each round reads apps, deployments and
// instances, asks the core what to do, writes what it decided to the replicated store, and
// only then launches and kills: a new leader reads back every instance the old one may have
// started, and never starts one twice. Rounds run one at a time (the runtime's RoundLoop);
// offers, status updates, API changes and a 1 s tick each ask for one.

import { randomUUID } from 'node:crypto';
import type { OfferJson, TaskStatusJson } from '../../../shared/mesos-v1.ts';
import type { Cancel } from '../../../shared/framework-runtime/clock.ts';
import { runtimeIo, type RuntimeIoOptions } from '../../../shared/framework-runtime/io.ts';
import { recordThenAct } from '../../../shared/framework-runtime/record-then-act.ts';
import { RoundLoop } from '../../../shared/framework-runtime/round-loop.ts';
import { Subscriptions } from '../../../shared/framework-runtime/subscriptions.ts';
import { hostedFrameworkInfo } from '../../../shared/framework-host/framework-info.ts';
import type { FrameworkEnv, FrameworkInstance } from '../../../shared/framework-host/contract.ts';
import type { JsonValue } from '../../../shared/framework-host/store.ts';
import type { AppQueueFacts } from './core.ts';
import { storedDelays } from './launch-delays.ts';
import { planRound, type RoundPlan } from './round-plan.ts';
import { SERVICES_INTEREST } from './offer-policy.ts';
import { AppChanges } from './app-changes.ts';
import { EventBus } from './event-bus.ts';
import { failureKey, FRAMEWORK_ID_KEY, instanceKey, ServicesRecords, type InstanceRecord, type TaskFailureRecord } from './records.ts';
import { deploymentPlanJson, type QueueCounters } from './views.ts';

export const FRAMEWORK_NAME = 'marathon';

export interface ServicesRuntimeOptions extends RuntimeIoOptions {
  /** Makes new instances' ids (default: random); the simulator passes a seeded one, so one seed gives one history. */
  uuid?: () => string;
  /**
   * Sees, and may change, each round's plan (and the working copy of the instance records it
   * changed) before its records are written: the simulator's checks, and the bugs it plants.
   */
  onPlan?: (plan: RoundPlan, instances: Map<string, InstanceRecord>) => void;
}
const TICK_MS = 1000;
/** How often tasks of the framework that no record names are looked for. */
const ADOPT_EVERY_MS = 5000;
/** Status updates within this long share one round. */
const UPDATE_BATCH_MS = 20;
/** An instance written but not in the registry after this long was never launched. */
const PENDING_TIMEOUT_MS = 30_000;
/** A kill not yet seen through is sent again after this long (lost in a leader change). */
const KILL_RETRY_MS = 5000;
/** Offers declined while something waits come back soon; otherwise the framework suppresses. */
const REFUSE_WHILE_WAITING_S = 1;
const REFUSE_IDLE_S = 30;
/** The states Marathon records as an app's `lastTaskFailure` (a kill asked for is none). */
const FAILURE_STATES = new Set(['TASK_FAILED', 'TASK_ERROR', 'TASK_LOST', 'TASK_DROPPED', 'TASK_GONE', 'TASK_GONE_BY_OPERATOR', 'TASK_UNREACHABLE', 'TASK_UNKNOWN']);

export class ServicesRuntime implements FrameworkInstance {
  readonly bus = new EventBus();
  readonly records: ServicesRecords;
  /** The one subscription, under the key '*'. */
  private readonly subs: Subscriptions<'*'>;
  private readonly loop: RoundLoop;
  private readonly timers: Cancel[] = [];
  private readonly clockNow: () => number;
  /** The leader's working copy of the instance records (the store holds the durable one). */
  private readonly instances = new Map<string, InstanceRecord>();
  private queueFacts = new Map<string, AppQueueFacts>();
  private readonly counters = new Map<string, QueueCounters>();
  private readonly killSentAt = new Map<string, number>();
  private readonly lastHealth = new Map<string, boolean | undefined>();
  private pendingOffers: OfferJson[] = [];
  private stopped = false;
  private adoptedAtMs = -Infinity;
  /**
   * Instances an earlier leader recorded whose tasks the registry did not have when this one
   * started. Once this framework's subscription is committed in this leader's term, every
   * launch an earlier leader got into the log is applied: one still missing never happened,
   * and is placed again at once rather than after the pending timeout.
   */
  private inheritedPending: Set<string> | undefined;
  private soon: Cancel | undefined;
  private readonly after: (ms: number, fn: () => void) => Cancel;
  private readonly uuid: () => string;
  private readonly onPlan: ServicesRuntimeOptions['onPlan'];

  /** Changes from the REST API. */
  readonly changes: AppChanges;

  /** This leadership's clock (FrameworkEnv.now): what launch delays are measured on. */
  now(): number {
    return this.clockNow();
  }

  constructor(private readonly env: FrameworkEnv, opts: ServicesRuntimeOptions = {}) {
    const io = runtimeIo(env, opts);
    this.uuid = opts.uuid ?? randomUUID;
    this.onPlan = opts.onPlan;
    this.clockNow = () => io.clock.now();
    this.after = (ms, fn) => io.clock.after(ms, fn);
    this.loop = new RoundLoop(() => this.round(), (err) => this.env.log.warn({ err }, 'a services round failed; the next one retries'));
    this.subs = new Subscriptions<'*'>({
      name: FRAMEWORK_NAME, io, store: env.store, log: env.log,
      interest: SERVICES_INTEREST,
      // Its rounds ask for offers when instances wait.
      reviveOnSubscribe: false,
      handlers: {
        frameworkInfo: () => hostedFrameworkInfo(FRAMEWORK_NAME),
        idKey: () => FRAMEWORK_ID_KEY,
        wanted: () => true,
        offers: (_k, offers) => {
          this.pendingOffers.push(...offers);
          this.kick();
        },
        rescind: (_k, offerId) => {
          this.pendingOffers = this.pendingOffers.filter((o) => o.id.value !== offerId);
        },
        update: (_k, status) => this.onUpdate(status),
        // Every task's latest state (health included) was asked for; orphans are looked for at once.
        subscribed: () => {
          this.adoptedAtMs = -Infinity;
          this.kick();
        },
      },
    });
    this.records = new ServicesRecords(env.store);
    this.changes = new AppChanges({
      records: this.records,
      store: env.store,
      bus: this.bus,
      instances: this.instances,
      // A delay is kept per config version (launch-delays.ts): a new config or a restart starts with none.
      resetBackoff: () => {},
      changed: () => {
        this.ensureSubscribed();
        this.kick();
      },
    });
    for (const r of this.records.instances()) this.instances.set(r.taskId, r);
    const tasks = env.cluster.tasks();
    this.inheritedPending = new Set([...this.instances.keys()].filter((id) => !tasks.has(id)));
    if (this.records.frameworkId() !== undefined || this.records.apps().length > 0 || this.records.deployments().length > 0) this.ensureSubscribed();
    this.timers.push(io.clock.every(TICK_MS, () => {
      if (this.subs.has('*')) this.kick();
    }));
  }

  stop(): void {
    this.stopped = true;
    this.loop.stop();
    for (const cancel of this.timers) cancel();
    this.soon?.();
    this.subs.stop();
  }

  get frameworkId(): string | undefined {
    return this.subs.get('*')?.frameworkId ?? this.records.frameworkId();
  }

  get connected(): boolean {
    return this.subs.connected('*');
  }

  queue(): Map<string, AppQueueFacts> {
    return this.queueFacts;
  }

  queueCounters(appId: string): QueueCounters {
    return this.counters.get(appId) ?? { processed: 0, unused: 0, declined: {} };
  }

  private ensureSubscribed(): void {
    this.subs.ensure('*');
  }

  private onUpdate(status: TaskStatusJson): void {
    const taskId = status.task_id.value;
    const rec = this.instances.get(taskId);
    if (!rec) {
      this.kickSoon();
      return;
    }
    const now = new Date();
    this.bus.publish('status_update_event', {
      slaveId: rec.agentId, taskId, taskStatus: status.state, message: status.message ?? '', appId: rec.appId,
      host: rec.hostname, ipAddresses: [], ports: rec.ports, version: rec.version,
    }, now);
    if (status.healthy !== undefined && this.lastHealth.get(taskId) !== status.healthy) {
      this.lastHealth.set(taskId, status.healthy);
      this.bus.publish('health_status_changed_event', { appId: rec.appId, instanceId: taskId, version: rec.version, alive: status.healthy }, now);
    }
    if (FAILURE_STATES.has(status.state)) {
      const failure: TaskFailureRecord = {
        appId: rec.appId, host: rec.hostname, message: status.message ?? '', state: status.state, taskId,
        timestamp: now.toISOString(), version: rec.version, slaveId: rec.agentId,
      };
      void this.env.store.put(failureKey(rec.appId), failure as unknown as JsonValue).catch((err) => this.env.log.warn({ err }, 'could not record a task failure'));
    }
    this.kickSoon();
  }

  /**
   * A round shortly: status updates come in bursts (a thousand RUNNINGs after one launch),
   * and one round for the burst leaves the master's event loop to the updates themselves.
   */
  private kickSoon(): void {
    if (this.soon) return;
    this.soon = this.after(UPDATE_BATCH_MS, () => {
      this.soon = undefined;
      this.kick();
    });
  }

  /** Asks for a round; rounds never overlap, and one asked for during a round follows it. */
  kick(): void {
    void this.loop.kick();
  }

  private async round(): Promise<void> {
    const frameworkId = this.subs.get('*')?.frameworkId;
    if (!frameworkId || !this.subs.connected('*')) return;
    const offers = this.pendingOffers.splice(0);
    // Launch delays, pending and kill time-outs run on the leader's steady clock: a wall-clock
    // step neither ends a delay early nor holds it for the step's length.
    const nowMs = this.now();
    // Now and then (first thing after subscribing): an accept whose answer was lost may still
    // have launched its tasks after their records were dropped; they are adopted, not left uncounted.
    const adopt = nowMs - this.adoptedAtMs >= ADOPT_EVERY_MS;
    if (adopt) this.adoptedAtMs = nowMs;
    const apps = this.records.apps();
    const plan = planRound({
      nowMs, frameworkId, registry: { tasks: this.env.cluster.tasks(), agents: this.env.cluster.agents() }, apps, deployments: this.records.deployments(), offers,
      backoff: storedDelays(this.env.store), instances: this.instances, killSentAt: this.killSentAt, adopt, inheritedPending: this.inheritedPending,
      newUuid: this.uuid, pendingTimeoutMs: PENDING_TIMEOUT_MS, killRetryMs: KILL_RETRY_MS,
    });
    this.inheritedPending = undefined;
    this.onPlan?.(plan, this.instances);
    for (const id of plan.out.forget) this.lastHealth.delete(id);

    // Durable before acting: a leader that dies after this write leaves its decisions to the next.
    await recordThenAct(this.env.store, plan.puts, () => this.act(plan, offers.length, nowMs));
  }

  /** What the round decided, once its records are durable. */
  private async act(plan: RoundPlan, offers: number, nowMs: number): Promise<void> {
    if (this.stopped) return;
    const { out, kills, killNow, launches, finished } = plan;

    // Soft state of apps that are gone goes with them.
    for (const id of this.counters.keys()) if (!out.queue.has(id)) this.counters.delete(id);
    this.queueFacts = out.queue;
    this.countOffers(out.queue, nowMs);
    for (const d of finished) this.bus.publish('deployment_success', { id: d.id, plan: deploymentPlanJson(d) });

    const byOffer = new Map<string, typeof launches>();
    for (const x of launches) {
      const list = byOffer.get(x.l.offerId);
      if (list) list.push(x);
      else byOffer.set(x.l.offerId, [x]);
    }
    const waitingNow = [...out.queue.values()].some((q) => q.waiting > q.launched && (q.delayUntilMs === undefined || q.delayUntilMs <= nowMs));
    const calls: Promise<unknown>[] = [];
    for (const [offerId, list] of byOffer) {
      calls.push(this.subs.accept('*', [offerId], list.map((x) => x.info), { refuse_seconds: waitingNow ? REFUSE_WHILE_WAITING_S : REFUSE_IDLE_S }).catch(async (err) => {
        // Never launched: forget the instances now rather than after the pending timeout, and count no failure.
        this.env.log.warn({ err, offerId }, 'an accept failed; its instances will be placed again');
        for (const x of list) this.instances.delete(x.rec.taskId);
        await this.env.store.write(list.map((x) => ({ key: instanceKey(x.rec.taskId), value: null }))).catch(() => {});
        this.kick();
      }));
    }
    if (out.declines.length > 0) calls.push(this.subs.decline('*', out.declines, waitingNow ? REFUSE_WHILE_WAITING_S : REFUSE_IDLE_S));
    for (const rec of kills) {
      this.killSentAt.set(rec.taskId, nowMs);
      calls.push(this.subs.killNow('*', rec.taskId, rec.agentId));
    }
    for (const k of killNow) calls.push(this.subs.killNow('*', k.taskId, k.agentId));
    calls.push(this.subs.wantOffers('*', waitingNow, offers));
    await Promise.all(calls);
  }

  private countOffers(queue: Map<string, AppQueueFacts>, nowMs: number): void {
    for (const [appId, q] of queue) {
      if (q.waiting === 0) {
        this.counters.delete(appId);
        continue;
      }
      const c = this.counters.get(appId) ?? { processed: 0, unused: 0, declined: {} };
      c.processed += q.processed;
      const unused = Object.values(q.declined).reduce((a, b) => a + (b ?? 0), 0);
      c.unused += unused;
      if (unused > 0) c.lastUnusedAtMs = nowMs;
      if (q.launched > 0) c.lastUsedAtMs = nowMs;
      for (const [r, n] of Object.entries(q.declined)) c.declined[r as keyof typeof c.declined] = (c.declined[r as keyof typeof c.declined] ?? 0) + (n ?? 0);
      this.counters.set(appId, c);
    }
  }

  /** The instances of an app (or all) with their registry tasks. */
  instancesOf(appId?: string): InstanceRecord[] {
    return [...this.instances.values()].filter((r) => appId === undefined || r.appId === appId);
  }
}
