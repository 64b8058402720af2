// The job engine on the framework runtime (shared/framework-runtime/), on the leading master:
// one subscription per lane (made once there is a job, or a framework id from an earlier
// leader), the engine's records in the replicated store, a tick for deadlines and gathering
// windows. Every input goes through the runtime's queue: the engine decides, the records it
// changed are written and durable, and only then are tasks launched or killed — so a new
// leader never finds a task it did not record, and a replica never runs twice. The runtime
// reconciles every task on every subscription.

import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import { isTerminal } from '../../../shared/agent-messages.ts';
import type { TaskStatusJson } from '../../../shared/mesos-v1.ts';
import { Resources } from '../../../shared/resources.ts';
import { heldOffer } from '../../../shared/sdk/held-offer.ts';
import type { FrameworkEnv, FrameworkInstance } from '../../../shared/framework-host/contract.ts';
import type { Cancel } from '../../../shared/framework-runtime/clock.ts';
import { DecisionQueue } from '../../../shared/framework-runtime/decision-queue.ts';
import { runtimeIo, type RuntimeIoOptions } from '../../../shared/framework-runtime/io.ts';
import { recordThenAct } from '../../../shared/framework-runtime/record-then-act.ts';
import { Subscriptions } from '../../../shared/framework-runtime/subscriptions.ts';
import { STARTING_TIMEOUT_MS } from '../../../shared/framework-runtime/time-outs.ts';
import { ON_CHANGE } from '../../../shared/framework-runtime/offer-interest.ts';
import { hostedFrameworkInfo } from '../../../shared/framework-host/framework-info.ts';
import type { JsonValue } from '../../../shared/framework-host/store.ts';
import { JOBS_FRAMEWORK_NAME } from '../../../shared/jobs/api.ts';
import { roomAgents } from '../../../shared/framework-host/room-agents.ts';
import { explainQueued } from '../../../shared/sdk/why-queued.ts';
import { DEFAULT_ENGINE_OPTIONS, JobEngine, type Effects, type EngineOptions } from './engine.ts';
import { laneOf, parseLane, type IgnoredField, type JobSpec } from '../../../shared/jobs/model.ts';
import type { JobRecord } from './record.ts';
import { policyExitCode, taskInfoFor } from './task-info.ts';

export { JOBS_FRAMEWORK_NAME };
export const FRAMEWORK_ID_KEY = 'framework-id';
export const JOB_KEY_PREFIX = 'job/';

export function jobKey(name: string): string {
  return `${JOB_KEY_PREFIX}${name}`;
}

/**
 * One subscription per role and priority class of the jobs (a framework has one role and one
 * class; jobs/model.ts laneOf): the default role's framework id under `framework-id`, another
 * lane's under `framework-id/<role>` or `framework-id/<role>@<class>`.
 */
export function frameworkIdKey(role: string): string {
  return role === '*' ? FRAMEWORK_ID_KEY : `${FRAMEWORK_ID_KEY}/${role}`;
}

function roleOfKey(key: string): string {
  return key === FRAMEWORK_ID_KEY ? '*' : key.slice(FRAMEWORK_ID_KEY.length + 1);
}

const TICK_MS = 200;
/** Offers nobody needs come back after this long, or at once after a revive. */
const REFUSE_IDLE_S = 30;
const REFUSE_BUSY_S = 0.5;

export interface JobsRuntimeOptions extends Partial<Omit<EngineOptions, 'domain'>>, RuntimeIoOptions {
  /** Makes a new job's uid (default: random); the simulator passes a seeded one, so one seed gives one history. */
  uid?: () => string;
}

/** The job engine on the framework runtime: its reconciler, with the runtime's offer loop and queue. */
export class JobsRuntime implements FrameworkInstance {
  private readonly engine: JobEngine;
  private readonly log: Logger;
  /** One subscription per role (and class), each a framework named `jobs`. */
  private readonly subs: Subscriptions<string>;
  /** The role whose subscription each held offer came through, to decline it there. */
  private readonly offerRoles = new Map<string, string>();
  private readonly queue: DecisionQueue;
  private readonly stopTicks: Cancel;
  private readonly now: () => number;
  private readonly uid: () => string;

  constructor(private readonly env: FrameworkEnv, opts: JobsRuntimeOptions = {}) {
    this.log = env.log;
    const io = runtimeIo(env, opts);
    this.now = () => io.clock.now();
    this.uid = opts.uid ?? (() => randomBytes(4).toString('hex'));
    this.queue = new DecisionQueue(() => this.flush(), (err) => this.log.error({ err }, 'the job engine could not carry out a decision'));
    const classes = env.priorityClasses;
    this.engine = new JobEngine({
      ...DEFAULT_ENGINE_OPTIONS, ...opts, domain: env.domain ?? 'cairn',
      classRank: (c) => classes.rank(classes.orDefault(c)),
      explainWait: (members, c) => explainQueued(members, roomAgents(env.cluster), { name: classes.orDefault(c), rank: (n) => classes.rank(n) }),
    });
    this.subs = new Subscriptions<string>({
      name: JOBS_FRAMEWORK_NAME, io, store: env.store, log: env.log, interest: ON_CHANGE, reviveOnSubscribe: true,
      settled: () => this.run(() => {}),
      handlers: {
        frameworkInfo: (role) => {
          const lane = parseLane(role);
          return hostedFrameworkInfo(JOBS_FRAMEWORK_NAME, lane.role, lane.priorityClass);
        },
        idKey: frameworkIdKey,
        wanted: () => true,
        offers: (role, offers) => void this.run(() => {
          for (const o of offers) this.offerRoles.set(o.id.value, role);
          this.engine.offers(offers.map((o) => ({ ...heldOffer(o), lane: role })), this.now());
        }),
        rescind: (_role, offerId) => void this.run(() => {
          this.offerRoles.delete(offerId);
          this.engine.rescind(offerId);
        }),
        // Acknowledged even when the record could not be written: the reconciliation of the
        // next subscription tells the engine again (a failed handler would end the process).
        update: (role, status) => this.run(() => this.onUpdate(status, role)).catch(() => {}),
        subscribed: () => this.reconcileStarting(),
      },
    });
    const records = env.store.entries<JsonValue>(JOB_KEY_PREFIX).map(([, v]) => v as unknown as JobRecord);
    this.engine.load(records);
    const roles = new Set([...this.engine.roles(), ...env.store.entries(FRAMEWORK_ID_KEY).map(([k]) => roleOfKey(k))]);
    for (const role of roles) this.subs.ensure(role);
    let ticks = 0;
    this.stopTicks = io.clock.every(TICK_MS, () => void this.run(() => {
      this.engine.setClusterTotals(this.clusterTotals());
      this.engine.tick(this.now());
      if (++ticks % Math.round(STARTING_TIMEOUT_MS / TICK_MS) === 0) this.reconcileStarting();
    }));
    // Kills re-sent from the records wait for the subscription.
    void this.run(() => {});
  }

  /** Submits a job owned by `owner` ('' for none); 'exists' while a live job has its name. Resolves once the job is durable. */
  async submit(spec: JobSpec, ignored: IgnoredField[], owner = ''): Promise<JobRecord | 'exists'> {
    const out = await this.queue.ask<JobRecord | 'exists'>(() => {
      this.engine.setClusterTotals(this.clusterTotals());
      const r = this.engine.submit(spec, ignored, this.uid(), this.now(), owner);
      return r === 'exists' ? r : structuredClone(r);
    }, 'exists');
    if (out !== 'exists') this.subs.ensure(laneOf(spec));
    return out;
  }

  /** Kills a job's replicas and removes it; false when there is none. Resolves once durable. */
  remove(name: string): Promise<boolean> {
    return this.queue.ask(() => this.engine.remove(name, this.now()), false);
  }

  stop(): void {
    this.queue.stop();
    this.stopTicks();
    this.subs.stop();
  }

  // ---- the queue ----------------------------------------------------------------------

  /** Runs `fn` on the engine after everything before it, then carries out its effects. */
  private run(fn: () => void): Promise<void> {
    return this.queue.run(fn);
  }

  private async flush(): Promise<void> {
    const e = this.engine.takeEffects();
    const puts = [...e.writes].map(([name, r]) => ({ key: jobKey(name), value: r === null ? null : (structuredClone(r) as unknown as JsonValue) }));
    await recordThenAct(this.env.store, puts, () => this.act(e));
  }

  /** What the engine decided, once its records are durable. */
  private act(e: Effects): void {
    for (const k of e.kills) this.subs.kill(k.role, k.taskId, k.agentId);
    for (const l of e.launches) {
      const tasks = l.tasks.map((t) => taskInfoFor(t, l.agentId));
      const ids = tasks.map((t) => t.task_id.value);
      for (const id of l.offerIds) this.offerRoles.delete(id);
      this.subs.launch(l.role, l.offerIds, tasks, { refuse_seconds: REFUSE_BUSY_S }, (message) => void this.run(() => this.engine.launchFailed(ids, message, this.now())));
    }
    const declines = new Map<string, string[]>();
    for (const id of e.declines) {
      const role = this.offerRoles.get(id) ?? '*';
      this.offerRoles.delete(id);
      declines.set(role, [...(declines.get(role) ?? []), id]);
    }
    for (const q of e.requests) {
      if (!this.subs.connected(q.role)) continue;
      this.subs.requestRoom(q.role, q.members, `job ${q.job}`).catch((err: Error) => this.log.debug({ err: err.message, job: q.job }, 'request for room not sent'));
    }
    for (const [role, ids] of declines) void this.subs.decline(role, ids, this.engine.wantsOffers(role) ? REFUSE_BUSY_S : REFUSE_IDLE_S);
    // Offers while a job needs them, and not otherwise.
    for (const role of this.subs.keys()) void this.subs.wantOffers(role, this.engine.wantsOffers(role));
    for (const role of this.engine.roles()) this.subs.ensure(role);
  }

  private reconcileStarting(): void {
    this.subs.reconcileStarting(this.engine.startingSince(this.now(), STARTING_TIMEOUT_MS).map(({ role, ...t }) => ({ key: role, ...t })));
  }

  private onUpdate(status: TaskStatusJson, role: string): void {
    const taskId = status.task_id.value;
    if (status.state === 'TASK_LOST' && status.reason === 'REASON_RECONCILIATION') {
      // The master never recorded this launch: it did not happen, and is no failure.
      this.engine.launchFailed([taskId], status.message ?? 'unknown task', this.now());
      return;
    }
    const record = this.env.cluster.tasks().get(taskId);
    const message = status.message ?? '';
    const exitCode = isTerminal(status.state) ? policyExitCode(record?.exitCode, message) : undefined;
    this.engine.taskUpdate({
      taskId,
      state: status.state,
      ...(status.agent_id ? { agentId: status.agent_id.value } : {}),
      ...(exitCode !== undefined ? { exitCode } : {}),
      message,
      role,
      ...(status.reason ? { reason: status.reason } : {}),
    }, this.now());
  }

  private clusterTotals(): Resources[] {
    const out: Resources[] = [];
    for (const a of this.env.cluster.agents().values()) {
      if (a.drain) continue;
      try {
        out.push(Resources.parse(a.resources));
      } catch {
        // An agent record the engine cannot read counts for nothing.
      }
    }
    return out;
  }
}
