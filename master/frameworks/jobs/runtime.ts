// The job engine's shell on the leading master: one SchedulerClient (subscribed only once
// there is a job, or a framework id from an earlier leader), the engine's records in the
// replicated store, a timer for deadlines and gathering windows. Every input goes through
// one queue: the engine decides, the records it changed are written and durable, and only
// then are tasks launched or killed — so a new leader never finds a task it did not record,
// and a replica never runs twice. On every subscription it reconciles every task.

import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import { isTerminal } from '../../../shared/agent-messages.ts';
import type { TaskStatusJson } from '../../../shared/mesos-v1.ts';
import { Resources } from '../../../shared/resources.ts';
import { heldOffer } from '../../../shared/sdk/held-offer.ts';
import { SchedulerClient } from '../../../shared/sdk/scheduler-client.ts';
import type { BuiltinEnv, BuiltinInstance } from '../../../shared/framework-host/contract.ts';
import { DecisionQueue } from '../../../shared/framework-runtime/decision-queue.ts';
import { OfferInterest } from '../../../shared/framework-runtime/offer-interest.ts';
import type { JsonValue } from '../../../shared/framework-host/store.ts';
import { JOBS_FRAMEWORK_NAME } from '../../../shared/jobs/api.ts';
import { roomAgents } from '../../../shared/framework-host/room-agents.ts';
import { explainQueued } from '../../../shared/sdk/why-queued.ts';
import { DEFAULT_ENGINE_OPTIONS, JobEngine, type EngineOptions } from './engine.ts';
import { laneOf, parseLane, type IgnoredField, type JobSpec } from '../../../shared/jobs/model.ts';
import { PRIORITY_CLASS_LABEL } from '../../../shared/sharing/priority-classes.ts';
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

/** Tasks of a framework that failed over are kept this long for the next leader (a week). */
const FAILOVER_TIMEOUT_S = 7 * 24 * 3600;
const TICK_MS = 200;
/** A launch not heard of for this long is asked about (the ACCEPT or the leader may be lost). */
const RECONCILE_STARTING_MS = 5_000;
/** Offers nobody needs come back after this long, or at once after a revive. */
const REFUSE_IDLE_S = 30;
const REFUSE_BUSY_S = 0.5;

export interface JobsRuntimeOptions extends Partial<Omit<EngineOptions, 'domain'>> {
  /** For tests: the time source. */
  now?: () => number;
}

export class JobsRuntime implements BuiltinInstance {
  private readonly engine: JobEngine;
  private readonly log: Logger;
  /** One subscription per role, each a framework named `jobs`. */
  private readonly clients = new Map<string, SchedulerClient>();
  /** The role whose subscription each held offer came through, to decline it there. */
  private readonly offerRoles = new Map<string, string>();
  private readonly queue: DecisionQueue;
  private readonly timer: NodeJS.Timeout;
  private stopped = false;
  /** Kills decided before their subscription was up: sent once it is. */
  private pendingKills: { taskId: string; agentId?: string; role: string }[] = [];
  private readonly interest = new OfferInterest<string>({ reviveAgainMs: Infinity, suppressOnOffer: false });
  private readonly now: () => number;

  constructor(private readonly env: BuiltinEnv, opts: JobsRuntimeOptions = {}) {
    this.log = env.log;
    this.now = opts.now ?? env.now;
    this.queue = new DecisionQueue(() => this.flush(), (err) => this.log.error({ err }, 'the job engine could not carry out a decision'));
    const classes = env.priorityClasses;
    this.engine = new JobEngine({
      ...DEFAULT_ENGINE_OPTIONS, ...opts, domain: env.domain ?? 'cairn',
      classRank: (c) => classes.rank(classes.orDefault(c)),
      explainWait: (members, c) => explainQueued(members, roomAgents(env.cluster), { name: classes.orDefault(c), rank: (n) => classes.rank(n) }),
    });
    const records = env.store.entries<JsonValue>(JOB_KEY_PREFIX).map(([, v]) => v as unknown as JobRecord);
    this.engine.load(records);
    const roles = new Set([...this.engine.roles(), ...env.store.entries(FRAMEWORK_ID_KEY).map(([k]) => roleOfKey(k))]);
    for (const role of roles) this.ensureSubscribed(role);
    let ticks = 0;
    this.timer = setInterval(() => this.run(() => {
      this.engine.setClusterTotals(this.clusterTotals());
      this.engine.tick(this.now());
      if (++ticks % Math.round(RECONCILE_STARTING_MS / TICK_MS) === 0) this.reconcileStarting();
    }), TICK_MS);
    this.timer.unref();
    // Kills re-sent from the records wait for the subscription.
    this.run(() => {});
  }

  /** Submits a job owned by `owner` ('' for none); 'exists' while a live job has its name. Resolves once the job is durable. */
  async submit(spec: JobSpec, ignored: IgnoredField[], owner = ''): Promise<JobRecord | 'exists'> {
    let out: JobRecord | 'exists' = 'exists';
    await this.run(() => {
      this.engine.setClusterTotals(this.clusterTotals());
      const r = this.engine.submit(spec, ignored, randomBytes(4).toString('hex'), this.now(), owner);
      out = r === 'exists' ? r : structuredClone(r);
    });
    if (out !== 'exists') this.ensureSubscribed(laneOf(spec));
    return out;
  }

  /** Kills a job's replicas and removes it; false when there is none. Resolves once durable. */
  async remove(name: string): Promise<boolean> {
    let found = false;
    await this.run(() => {
      found = this.engine.remove(name, this.now());
    });
    return found;
  }

  stop(): void {
    this.stopped = true;
    this.queue.stop();
    clearInterval(this.timer);
    for (const c of this.clients.values()) c.close();
  }

  // ---- the queue ----------------------------------------------------------------------

  /** Runs `fn` on the engine after everything before it, then carries out its effects. */
  private run(fn: () => void): Promise<void> {
    return this.queue.run(fn);
  }

  private async flush(): Promise<void> {
    const e = this.engine.takeEffects();
    if (e.writes.size > 0) {
      // Durable first: a leader that dies after this line leaves a record the next one acts on.
      await this.env.store.write([...e.writes].map(([name, r]) => ({ key: jobKey(name), value: r === null ? null : (structuredClone(r) as unknown as JsonValue) })));
    }
    this.pendingKills.push(...e.kills);
    const waiting: typeof this.pendingKills = [];
    for (const k of this.pendingKills) {
      const client = this.clients.get(k.role);
      if (client?.connected !== true) {
        waiting.push(k);
        continue;
      }
      client.kill(k.taskId, k.agentId).catch((err: Error) => this.log.warn({ err: err.message, taskId: k.taskId }, 'kill not sent'));
    }
    this.pendingKills = waiting;
    for (const l of e.launches) {
      const tasks = l.tasks.map((t) => taskInfoFor(t, l.agentId));
      const ids = tasks.map((t) => t.task_id.value);
      for (const id of l.offerIds) this.offerRoles.delete(id);
      const client = this.clients.get(l.role);
      if (client?.connected !== true) {
        // Offers come only on a subscription: without one, the launch did not happen.
        queueMicrotask(() => void this.run(() => this.engine.launchFailed(ids, 'not subscribed', this.now())));
        continue;
      }
      client.accept(l.offerIds, tasks, { refuse_seconds: REFUSE_BUSY_S }).catch((err: Error) => {
        this.log.warn({ err: err.message, tasks: ids }, 'launch refused');
        void this.run(() => this.engine.launchFailed(ids, err.message, this.now()));
      });
    }
    const declines = new Map<string, string[]>();
    for (const id of e.declines) {
      const role = this.offerRoles.get(id) ?? '*';
      this.offerRoles.delete(id);
      declines.set(role, [...(declines.get(role) ?? []), id]);
    }
    for (const q of e.requests) {
      const client = this.clients.get(q.role);
      if (client?.connected === true) {
        client.requestRoom(q.members, `job ${q.job}`).catch((err: Error) => this.log.debug({ err: err.message, job: q.job }, 'request for room not sent'));
      }
    }
    for (const [role, ids] of declines) {
      const refuse = this.engine.wantsOffers(role) ? REFUSE_BUSY_S : REFUSE_IDLE_S;
      this.clients.get(role)?.decline(ids, refuse).catch((err: Error) => this.log.debug({ err: err.message }, 'decline not sent'));
    }
    // Offers while a job needs them, and not otherwise.
    for (const [role, client] of this.clients) if (client.connected) void this.interest.adjust(role, client, this.engine.wantsOffers(role), this.now());
    for (const role of this.engine.roles()) this.ensureSubscribed(role);
  }

  // ---- the subscription ---------------------------------------------------------------

  /** `role`: the lane (laneOf), the role alone for the default class. */
  private ensureSubscribed(role: string): void {
    if (this.clients.has(role) || this.stopped) return;
    const key = frameworkIdKey(role);
    const stored = this.env.store.get<string>(key);
    const lane = parseLane(role);
    const client = new SchedulerClient(this.env.schedulerOptions({
      name: JOBS_FRAMEWORK_NAME,
      user: '',
      failover_timeout: FAILOVER_TIMEOUT_S,
      // Training wants GPUs: without this the master offers no agent that has any.
      capabilities: [{ type: 'GPU_RESOURCES' }],
      ...(lane.role !== '*' ? { role: lane.role } : {}),
      ...(lane.priorityClass !== undefined ? { labels: { labels: [{ key: PRIORITY_CLASS_LABEL, value: lane.priorityClass }] } } : {}),
      ...(stored ? { id: { value: stored } } : {}),
    }));
    this.clients.set(role, client);
    client.on('subscribed', (frameworkId) => {
      this.interest.subscribed(role, true, this.now());
      void this.run(() => {}).then(async () => {
        if (this.env.store.get(key) !== frameworkId) await this.env.store.put(key, frameworkId);
        // Every task of the framework: the ones we know come back with their state, the
        // ones we do not (launched by a leader that died before recording) get killed.
        await client.reconcile([]).catch((err: Error) => this.log.warn({ err: err.message }, 'reconcile not sent'));
        this.reconcileStarting();
        await client.revive().catch(() => {});
      }).catch((err: unknown) => this.log.warn({ err }, 'could not record the framework id'));
    });
    client.on('offers', (offers) => void this.run(() => {
      for (const o of offers) this.offerRoles.set(o.id.value, role);
      this.engine.offers(offers.map((o) => ({ ...heldOffer(o), lane: role })), this.now());
    }));
    client.on('rescind', (offerId) => void this.run(() => {
      this.offerRoles.delete(offerId);
      this.engine.rescind(offerId);
    }));
    // Acknowledged even when the record could not be written: the reconciliation of the
    // next subscription tells the engine again (a failed handler would end the process).
    client.on('update', (status) => this.run(() => this.onUpdate(status, role)).catch(() => {}));
    client.on('error', (message) => this.log.error({ message, role }, 'the master ended the jobs framework'));
    client.subscribe().catch((err: Error) => {
      this.log.warn({ err: err.message, role }, 'the jobs framework could not subscribe; trying again');
      if (this.clients.get(role) === client) this.clients.delete(role);
      client.close();
      if (!this.stopped) setTimeout(() => this.ensureSubscribed(role), 1_000).unref();
    });
  }

  private reconcileStarting(): void {
    const stale = this.engine.startingSince(this.now(), RECONCILE_STARTING_MS);
    const byRole = new Map<string, { taskId: string; agentId?: string }[]>();
    for (const { role, ...t } of stale) byRole.set(role, [...(byRole.get(role) ?? []), t]);
    for (const [role, tasks] of byRole) {
      const client = this.clients.get(role);
      if (client?.connected === true) client.reconcile(tasks).catch((err: Error) => this.log.debug({ err: err.message }, 'reconcile not sent'));
    }
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
