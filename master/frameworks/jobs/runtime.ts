// The job engine's shell on the leading master: one SchedulerClient (subscribed only once
// there is a job, or a framework id from an earlier leader), the engine's records in the
// replicated store, a timer for deadlines and gathering windows. Every input goes through
// one queue: the engine decides, the records it changed are written and durable, and only
// then are tasks launched or killed — so a new leader never finds a task it did not record,
// and a replica never runs twice. On every subscription it reconciles every task.

import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import { isTerminal } from '../../../shared/agent-messages.ts';
import type { OfferJson, TaskStatusJson } from '../../../shared/mesos-v1.ts';
import { Resources } from '../../../shared/resources.ts';
import { offerRole } from '../../../shared/sdk/offer-fit.ts';
import { SchedulerClient } from '../../../shared/sdk/scheduler-client.ts';
import type { BuiltinEnv, BuiltinInstance } from '../../builtin/host.ts';
import type { JsonValue } from '../../registry/commands.ts';
import { DEFAULT_ENGINE_OPTIONS, JobEngine, type EngineOptions } from './engine.ts';
import type { HeldOffer } from './gang.ts';
import type { IgnoredField, JobSpec } from './model.ts';
import { isFinished, type JobRecord } from './record.ts';
import { policyExitCode, taskInfoFor } from './task-info.ts';

export const JOBS_FRAMEWORK_NAME = 'jobs';
export const FRAMEWORK_ID_KEY = 'framework-id';
export const JOB_KEY_PREFIX = 'job/';

export function jobKey(name: string): string {
  return `${JOB_KEY_PREFIX}${name}`;
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
  private client: SchedulerClient | undefined;
  private chain: Promise<void> = Promise.resolve();
  private readonly timer: NodeJS.Timeout;
  private stopped = false;
  /** Kills decided before the subscription was up: sent once it is. */
  private pendingKills: { taskId: string; agentId?: string }[] = [];
  private suppressed = false;
  private readonly now: () => number;

  constructor(private readonly env: BuiltinEnv, opts: JobsRuntimeOptions = {}) {
    this.log = env.log;
    this.now = opts.now ?? Date.now;
    this.engine = new JobEngine({ ...DEFAULT_ENGINE_OPTIONS, ...opts, domain: env.domain ?? 'cairn' });
    const records = env.store.entries<JsonValue>(JOB_KEY_PREFIX).map(([, v]) => v as unknown as JobRecord);
    this.engine.load(records);
    if (records.length > 0 || env.store.get(FRAMEWORK_ID_KEY) !== undefined) this.ensureSubscribed();
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

  /** Submits a job; 'exists' while a live job has its name. Resolves once the job is durable. */
  async submit(spec: JobSpec, ignored: IgnoredField[]): Promise<JobRecord | 'exists'> {
    let out: JobRecord | 'exists' = 'exists';
    await this.run(() => {
      this.engine.setClusterTotals(this.clusterTotals());
      const r = this.engine.submit(spec, ignored, randomBytes(4).toString('hex'), this.now());
      out = r === 'exists' ? r : structuredClone(r);
    });
    if (out !== 'exists') this.ensureSubscribed();
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
    clearInterval(this.timer);
    this.client?.close();
  }

  // ---- the queue ----------------------------------------------------------------------

  /** Runs `fn` on the engine after everything before it, then carries out its effects. */
  private run(fn: () => void): Promise<void> {
    const next = this.chain.then(async () => {
      if (this.stopped) return;
      fn();
      await this.flush();
    });
    this.chain = next.catch((err: unknown) => this.log.error({ err }, 'the job engine could not carry out a decision'));
    return next;
  }

  private async flush(): Promise<void> {
    const e = this.engine.takeEffects();
    if (e.writes.size > 0) {
      // Durable first: a leader that dies after this line leaves a record the next one acts on.
      await this.env.store.write([...e.writes].map(([name, r]) => ({ key: jobKey(name), value: r === null ? null : (structuredClone(r) as unknown as JsonValue) })));
    }
    const client = this.client;
    const subscribed = client?.connected === true;
    this.pendingKills.push(...e.kills);
    if (subscribed) {
      const kills = this.pendingKills;
      this.pendingKills = [];
      for (const k of kills) client!.kill(k.taskId, k.agentId).catch((err: Error) => this.log.warn({ err: err.message, taskId: k.taskId }, 'kill not sent'));
      for (const l of e.launches) {
        const tasks = l.tasks.map((t) => taskInfoFor(t, l.agentId));
        client!.accept(l.offerIds, tasks, { refuse_seconds: REFUSE_BUSY_S }).catch((err: Error) => {
          this.log.warn({ err: err.message, tasks: tasks.map((t) => t.task_id.value) }, 'launch refused');
          void this.run(() => this.engine.launchFailed(tasks.map((t) => t.task_id.value), err.message, this.now()));
        });
      }
      if (e.declines.length > 0) {
        const refuse = this.engine.wantsOffers() ? REFUSE_BUSY_S : REFUSE_IDLE_S;
        client!.decline(e.declines, refuse).catch((err: Error) => this.log.debug({ err: err.message }, 'decline not sent'));
      }
      this.adjustOffers(client!);
    } else if (e.launches.length > 0) {
      // Offers come only on a subscription; a launch without one is a launch that failed.
      const ids = e.launches.flatMap((l) => l.tasks.map((t) => t.taskId));
      queueMicrotask(() => void this.run(() => this.engine.launchFailed(ids, 'not subscribed', this.now())));
    }
  }

  /** Asks for offers while a job needs them, and not otherwise. */
  private adjustOffers(client: SchedulerClient): void {
    const want = this.engine.wantsOffers();
    if (want && this.suppressed) {
      this.suppressed = false;
      client.revive().catch(() => { this.suppressed = true; });
    } else if (!want && !this.suppressed) {
      this.suppressed = true;
      client.suppress().catch(() => { this.suppressed = false; });
    }
  }

  // ---- the subscription ---------------------------------------------------------------

  private ensureSubscribed(): void {
    if (this.client || this.stopped) return;
    const stored = this.env.store.get<string>(FRAMEWORK_ID_KEY);
    const client = new SchedulerClient(this.env.schedulerOptions({
      name: JOBS_FRAMEWORK_NAME,
      user: '',
      failover_timeout: FAILOVER_TIMEOUT_S,
      // Training wants GPUs: without this the master offers no agent that has any.
      capabilities: [{ type: 'GPU_RESOURCES' }],
      ...(stored ? { id: { value: stored } } : {}),
    }));
    this.client = client;
    client.on('subscribed', (frameworkId) => {
      this.suppressed = false;
      void this.run(() => {}).then(async () => {
        if (this.env.store.get(FRAMEWORK_ID_KEY) !== frameworkId) await this.env.store.put(FRAMEWORK_ID_KEY, frameworkId);
        // Every task of the framework: the ones we know come back with their state, the
        // ones we do not (launched by a leader that died before recording) get killed.
        await client.reconcile([]).catch((err: Error) => this.log.warn({ err: err.message }, 'reconcile not sent'));
        this.reconcileStarting();
        await client.revive().catch(() => {});
      }).catch((err: unknown) => this.log.warn({ err }, 'could not record the framework id'));
    });
    client.on('offers', (offers) => void this.run(() => this.engine.offers(offers.map(heldOffer), this.now())));
    client.on('rescind', (offerId) => void this.run(() => this.engine.rescind(offerId)));
    // Acknowledged even when the record could not be written: the reconciliation of the
    // next subscription tells the engine again (a failed handler would end the process).
    client.on('update', (status) => this.run(() => this.onUpdate(status)).catch(() => {}));
    client.on('error', (message) => this.log.error({ message }, 'the master ended the jobs framework'));
    client.subscribe().catch((err: Error) => {
      this.log.warn({ err: err.message }, 'the jobs framework could not subscribe; trying again');
      if (this.client === client) this.client = undefined;
      client.close();
      if (!this.stopped) setTimeout(() => this.ensureSubscribed(), 1_000).unref();
    });
  }

  private reconcileStarting(): void {
    const stale = this.engine.startingSince(this.now(), RECONCILE_STARTING_MS);
    if (stale.length === 0 || this.client?.connected !== true) return;
    this.client.reconcile(stale).catch((err: Error) => this.log.debug({ err: err.message }, 'reconcile not sent'));
  }

  private onUpdate(status: TaskStatusJson): void {
    const taskId = status.task_id.value;
    if (status.state === 'TASK_LOST' && status.reason === 'REASON_RECONCILIATION') {
      // The master never recorded this launch: it did not happen, and is no failure.
      this.engine.launchFailed([taskId], status.message ?? 'unknown task', this.now());
      return;
    }
    const record = this.env.ctx.registry.state.tasks.get(taskId);
    const message = status.message ?? '';
    const exitCode = isTerminal(status.state) ? policyExitCode(record?.exitCode, message) : undefined;
    this.engine.taskUpdate({
      taskId,
      state: status.state,
      ...(status.agent_id ? { agentId: status.agent_id.value } : {}),
      ...(exitCode !== undefined ? { exitCode } : {}),
      message,
    }, this.now());
  }

  private clusterTotals(): Resources[] {
    const out: Resources[] = [];
    for (const a of this.env.ctx.registry.state.agents.values()) {
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

export function heldOffer(o: OfferJson): HeldOffer {
  return {
    id: o.id.value,
    agentId: o.agent_id.value,
    hostname: o.hostname,
    ip: o.url?.address?.ip ?? o.hostname,
    resources: Resources.fromMesos(o.resources),
    role: offerRole(o.resources),
  };
}

/** Whether a stored record still needs the framework (a job not finished). */
export function needsFramework(r: JobRecord): boolean {
  return !isFinished(r);
}
