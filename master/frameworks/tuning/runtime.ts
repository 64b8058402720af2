// The tuning framework's shell on the leading master. Every experiment subscribes as a
// framework of its own (`tuning:<name>`), as in the paper, so the master's DRF and the
// experiments' declines decide between them. One queue takes every input: the core decides,
// the records it changed are written and durable, and only then are trials launched or
// killed — a new leader never finds a trial task it did not record, and a finished trial is
// recorded once. Trials' stdout is read from their agents for metrics while they run, and
// to its end before their end is judged.

import { randomBytes, randomInt } from 'node:crypto';
import type { Logger } from 'pino';
import { isTerminal } from '../../../shared/agent-messages.ts';
import type { TaskStatusJson } from '../../../shared/mesos-v1.ts';
import { SchedulerClient } from '../../../shared/sdk/scheduler-client.ts';
import type { BuiltinEnv, BuiltinInstance } from '../../../shared/framework-host/contract.ts';
import type { JsonValue } from '../../../shared/framework-host/store.ts';
import { heldOffer } from '../../../shared/sdk/held-offer.ts';
import type { JobsApi } from '../../../shared/jobs/api.ts';
import { isFinished, type JobView } from '../../../shared/jobs/model.ts';
import { DecisionQueue } from '../../../shared/framework-runtime/decision-queue.ts';
import { OfferInterest } from '../../../shared/framework-runtime/offer-interest.ts';
import { chiefGroup, trialJobSpec } from './trial-job.ts';
import { policyExitCode } from '../../../shared/jobs/exit-code.ts';
import { REFUSE_BUSY_S, TuningCore, type JobTrialLaunch, type TuningCoreOptions } from './core.ts';
import type { ExperimentSpec, IgnoredField } from '../../../shared/tuning/model.ts';
import { EXPERIMENT_KEY_PREFIX, type ExperimentRecord, type TrialRecord } from './record.ts';
import { trialTaskInfo } from './trial-command.ts';
import { readTrialStdout } from './trial-logs.ts';
import { PRIORITY_CLASS_LABEL } from '../../../shared/sharing/priority-classes.ts';

export const TUNING_FRAMEWORK_NAME = 'tuning';
/** Each experiment's framework is named this, then the experiment's name. */
export const EXPERIMENT_FRAMEWORK_PREFIX = 'tuning:';
const FRAMEWORK_ID_PREFIX = 'framework-id/';
const FAILOVER_TIMEOUT_S = 7 * 24 * 3600;
const TICK_MS = 200;
/** How often running trials' stdout is read for intermediate metrics. */
const LOG_POLL_MS = 1_000;
const RECONCILE_STARTING_MS = 5_000;
const TEARDOWN_DELAY_MS = 1_000;
const JOB_SYNC_MS = 1_000;

export interface TuningRuntimeOptions extends TuningCoreOptions {
  now?: () => number;
}

export function frameworkIdKey(experiment: string): string {
  return `${FRAMEWORK_ID_PREFIX}${experiment}`;
}

export class TuningRuntime implements BuiltinInstance {
  readonly core: TuningCore;
  private readonly log: Logger;
  private readonly clients = new Map<string, SchedulerClient>();
  private readonly interest = new OfferInterest<string>({ reviveAgainMs: Infinity, suppressOnOffer: false });
  private readonly queue: DecisionQueue;
  private readonly timers: NodeJS.Timeout[] = [];
  private stopped = false;
  private pendingKills: { experiment: string; taskId?: string; agentId?: string; jobName?: string }[] = [];
  /** Distributed trials' jobs being submitted now (not in the job store yet, and not lost). */
  private readonly submitting = new Set<string>();
  /**
   * Jobs whose absence means something: submitted by this runtime, or recorded before it
   * started. A trial's job decided but not yet submitted (its record still being written) is
   * not missing.
   */
  private readonly followed = new Set<string>();
  private readonly offJobs: () => void;
  /** Trials whose stdout is being read now (one read at a time each). */
  private readonly reading = new Set<string>();
  private readonly now: () => number;

  constructor(private readonly env: BuiltinEnv, opts: TuningRuntimeOptions = {}) {
    this.log = env.log;
    this.now = opts.now ?? env.now;
    this.core = new TuningCore(opts.restartBackoff ? { restartBackoff: opts.restartBackoff } : {});
    this.queue = new DecisionQueue(() => this.flush(), (err) => this.log.error({ err }, 'the tuning framework could not carry out a decision'));
    // Distributed trials' jobs are followed through the jobs framework's API.
    this.offJobs = env.api('jobs')?.onChange(() => this.syncJobTrials()) ?? (() => {});
    const records = env.store.entries<JsonValue>(EXPERIMENT_KEY_PREFIX).map(([, v]) => v as unknown as ExperimentRecord);
    const trials = env.store.entries<JsonValue>('trial/').map(([, v]) => v as unknown as TrialRecord);
    for (const t of trials) if (t.jobName && (t.state === 'Starting' || t.state === 'Running')) this.followed.add(t.jobName);
    void this.run(() => this.core.load(records, trials, this.now()));
    let ticks = 0;
    this.timers.push(setInterval(() => void this.run(() => {
      this.core.tick(this.now());
      if (++ticks % Math.round(RECONCILE_STARTING_MS / TICK_MS) === 0) this.reconcileStarting();
      // Job changes come as they are applied; this catches any missed (a leader's first moments).
      if (ticks % Math.round(JOB_SYNC_MS / TICK_MS) === 0) this.syncJobTrials();
    }), TICK_MS));
    this.timers.push(setInterval(() => this.pollLogs(), LOG_POLL_MS));
    for (const t of this.timers) t.unref();
  }

  /** Submits an experiment; 'exists' while a live one has its name. Resolves once durable. */
  async submit(spec: ExperimentSpec, ignored: IgnoredField[], owner: string): Promise<ExperimentRecord | 'exists'> {
    let out: ExperimentRecord | 'exists' = 'exists';
    await this.run(() => {
      const r = this.core.submit(spec, ignored, randomBytes(3).toString('hex'), this.now(), owner);
      out = r === 'exists' ? r : structuredClone(r);
    });
    return out;
  }

  async stopExperiment(name: string): Promise<boolean> {
    let ok = false;
    await this.run(() => {
      ok = this.core.stop(name, this.now());
    });
    return ok;
  }

  async resume(name: string, limits: { maxTrialCount?: number; maxFailedTrialCount?: number }): Promise<ReturnType<TuningCore['resume']>> {
    let out: ReturnType<TuningCore['resume']> = 'unknown';
    await this.run(() => {
      out = this.core.resume(name, this.now(), limits);
    });
    return out;
  }

  async remove(name: string): Promise<boolean> {
    let ok = false;
    await this.run(() => {
      ok = this.core.remove(name);
    });
    return ok;
  }

  /** This master stops leading: trials keep running for the next leader's instance. */
  stop(): void {
    this.stopped = true;
    this.queue.stop();
    this.offJobs();
    for (const t of this.timers) clearInterval(t);
    for (const c of this.clients.values()) c.close();
  }

  // ---- the queue ----------------------------------------------------------------------

  private run(fn: () => void): Promise<void> {
    return this.queue.run(fn);
  }

  private async flush(): Promise<void> {
    const e = this.core.takeEffects();
    if (e.writes.size > 0) {
      // Durable first: a leader that dies after this line leaves records the next one acts on.
      await this.env.store.write([...e.writes].map(([key, value]) => ({ key, value })));
    }
    for (const name of e.teardowns) {
      const client = this.clients.get(name);
      this.clients.delete(name);
      this.interest.forget(name);
      this.pendingKills = this.pendingKills.filter((k) => k.experiment !== name);
      if (this.env.store.get(frameworkIdKey(name)) !== undefined) await this.env.store.put(frameworkIdKey(name), null);
      if (client) {
        // The master kills whatever still runs of it (a removed experiment's trials). A moment
        // later, so the acknowledgement of the update that settled it goes out first.
        setTimeout(() => client.teardown().catch((err: Error) => this.log.debug({ err: err.message, experiment: name }, 'teardown not sent')), TEARDOWN_DELAY_MS).unref();
      }
    }
    this.pendingKills.push(...e.kills);
    const waiting: typeof this.pendingKills = [];
    for (const k of this.pendingKills) {
      if (k.jobName) {
        this.removeJob(k.jobName);
        continue;
      }
      const client = this.clients.get(k.experiment);
      if (client?.connected !== true || !k.taskId) {
        waiting.push(k);
        continue;
      }
      client.kill(k.taskId, k.agentId).catch((err: Error) => this.log.warn({ err: err.message, taskId: k.taskId }, 'kill not sent'));
    }
    this.pendingKills = waiting;
    for (const l of e.launches) {
      const record = this.core.experiment(l.experiment)?.record;
      const client = this.clients.get(l.experiment);
      const ids = l.trials.map((t) => t.taskId);
      if (!record || client?.connected !== true) {
        queueMicrotask(() => void this.run(() => this.core.launchFailed(l.experiment, ids, 'not subscribed')));
        continue;
      }
      const tasks = l.trials.map((t) => trialTaskInfo(record.spec, t, l.agentId));
      client.accept(l.offerIds, tasks, { refuse_seconds: REFUSE_BUSY_S }).catch((err: Error) => {
        this.log.warn({ err: err.message, tasks: ids }, 'trial launch refused');
        void this.run(() => this.core.launchFailed(l.experiment, ids, err.message));
      });
    }
    for (const j of e.jobLaunches) this.submitJob(j);
    for (const d of e.declines) {
      this.clients.get(d.experiment)?.decline(d.offerIds, d.refuseSeconds).catch((err: Error) => this.log.debug({ err: err.message }, 'decline not sent'));
    }
    for (const name of this.core.experimentNames()) {
      if (!this.core.needsFramework(name)) continue;
      const client = this.clients.get(name) ?? this.subscribe(name);
      if (client?.connected) void this.interest.adjust(name, client, this.core.wantsOffers(name), this.now());
    }
  }

  // ---- subscriptions ------------------------------------------------------------------

  private subscribe(name: string): SchedulerClient | undefined {
    if (this.stopped) return undefined;
    const role = this.core.roleOf(name) ?? '*';
    const priorityClass = this.core.priorityClassOf(name);
    const key = frameworkIdKey(name);
    const stored = this.env.store.get<string>(key);
    const client = new SchedulerClient(this.env.schedulerOptions({
      name: `${EXPERIMENT_FRAMEWORK_PREFIX}${name}`,
      user: '',
      failover_timeout: FAILOVER_TIMEOUT_S,
      capabilities: [{ type: 'GPU_RESOURCES' }],
      ...(role !== '*' ? { role } : {}),
      ...(priorityClass !== undefined ? { labels: { labels: [{ key: PRIORITY_CLASS_LABEL, value: priorityClass }] } } : {}),
      ...(stored ? { id: { value: stored } } : {}),
    }));
    this.clients.set(name, client);
    client.on('subscribed', (frameworkId) => {
      this.interest.subscribed(name, true, this.now());
      void this.run(() => {}).then(async () => {
        if (this.clients.get(name) !== client) return;
        if (this.env.store.get(key) !== frameworkId) await this.env.store.put(key, frameworkId);
        // Every task of the framework: known ones come back with their state, unknown ones
        // (launched by a leader that died before recording) are killed.
        await client.reconcile([]).catch((err: Error) => this.log.warn({ err: err.message }, 'reconcile not sent'));
        this.reconcileStarting();
        await client.revive().catch(() => {});
      }).catch((err: unknown) => this.log.warn({ err }, 'could not record the framework id'));
    });
    client.on('offers', (offers) => void this.run(() => this.core.offers(name, offers.map(heldOffer), this.now())));
    client.on('update', (status) => this.onUpdate(name, status));
    client.on('error', (message) => this.log.error({ message, experiment: name }, 'the master ended an experiment\'s framework'));
    client.subscribe().catch((err: Error) => {
      this.log.warn({ err: err.message, experiment: name }, 'an experiment\'s framework could not subscribe; trying again');
      if (this.clients.get(name) === client) this.clients.delete(name);
      client.close();
      if (!this.stopped) setTimeout(() => void this.run(() => {}), 1_000).unref();
    });
    return client;
  }

  private reconcileStarting(): void {
    for (const s of this.core.startingSince(this.now(), RECONCILE_STARTING_MS)) {
      const client = this.clients.get(s.experiment);
      if (client?.connected === true) client.reconcile([{ taskId: s.taskId, ...(s.agentId ? { agentId: s.agentId } : {}) }]).catch(() => {});
    }
  }

  /**
   * A trial's end is judged after its stdout is read to the end (its final metrics are the
   * last lines it printed); the update is acknowledged once that is recorded.
   */
  private async onUpdate(name: string, status: TaskStatusJson): Promise<void> {
    const taskId = status.task_id.value;
    if (isTerminal(status.state)) await this.readStdout(name, taskId, true);
    const record = this.env.cluster.tasks().get(taskId);
    const message = status.message ?? '';
    const exitCode = isTerminal(status.state) ? policyExitCode(record?.exitCode, message) : undefined;
    await this.run(() => this.core.taskUpdate(name, {
      taskId, state: status.state, message,
      ...(status.agent_id ? { agentId: status.agent_id.value } : {}),
      ...(exitCode !== undefined ? { exitCode } : {}),
    }, this.now()));
  }

  // ---- distributed trials: jobs of the job engine ------------------------------------

  /** The jobs framework's API while it runs on this master. */
  private jobs(): JobsApi | undefined {
    const jobs = this.env.api('jobs');
    return jobs?.running() ? jobs : undefined;
  }

  private submitJob(j: JobTrialLaunch): void {
    const record = this.core.experiment(j.experiment)?.record;
    const doc = record?.spec.trial.job;
    if (!record || !doc) return;
    let job;
    try {
      job = trialJobSpec(record.spec, doc, j.jobName, j.index, j.params).job;
    } catch (err) {
      // Checked at submission with sample parameters; these ones made a document the job engine refuses.
      void this.run(() => this.core.jobTrialUpdate(j.experiment, j.jobName, { phase: 'failed', message: `its job was refused: ${(err as Error).message}` }, this.now()));
      return;
    }
    const jobs = this.jobs();
    if (!jobs) {
      queueMicrotask(() => void this.run(() => this.core.launchFailed(j.experiment, [j.jobName], 'the jobs framework is not running on this leader')));
      return;
    }
    this.submitting.add(j.jobName);
    this.followed.add(j.jobName);
    jobs.submit(job, [], record.owner).then((r) => {
      if (r === 'exists') void this.run(() => this.core.launchFailed(j.experiment, [j.jobName], `a job named ${j.jobName} exists`));
    }, (err: Error) => {
      this.log.warn({ err: err.message, job: j.jobName }, 'a trial\'s job was not submitted');
      void this.run(() => this.core.launchFailed(j.experiment, [j.jobName], err.message));
    }).finally(() => {
      this.submitting.delete(j.jobName);
      this.syncJobTrials();
    });
  }

  private removeJob(jobName: string): void {
    const jobs = this.jobs();
    if (!jobs) return;
    jobs.remove(jobName).catch((err: Error) => this.log.warn({ err: err.message, job: jobName }, 'a trial\'s job was not removed'));
  }

  /** Tells the core what became of each distributed trial's job, as the jobs framework has it. */
  private syncJobTrials(): void {
    if (this.stopped) return;
    for (const t of this.core.jobTrials()) {
      if (this.submitting.has(t.jobName) || !this.followed.has(t.jobName)) continue;
      const job = this.env.api('jobs')?.get(t.jobName);
      if (!job) {
        this.followed.delete(t.jobName);
        void this.run(() => this.core.jobTrialUpdate(t.experiment, t.jobName, { phase: 'gone', message: `job ${t.jobName} is gone` }, this.now()));
        continue;
      }
      const chief = job.replicas.find((r) => r.group === chiefGroup(job.spec) && r.index === 0);
      if (chief?.taskId && chief.agentId && (chief.state === 'Running' || isFinished(job)) && chief.taskId !== t.taskId) {
        const running = { phase: 'running' as const, taskId: chief.taskId, agentId: chief.agentId, hostname: chief.host ?? '' };
        void this.run(() => this.core.jobTrialUpdate(t.experiment, t.jobName, running, this.now()));
      }
      if (isFinished(job)) void this.finishJobTrial(t.experiment, t.jobName, job);
    }
  }

  /** A finished job's trial: its chief's stdout read to the end, then its end told. */
  private async finishJobTrial(experiment: string, jobName: string, job: JobView): Promise<void> {
    if (this.reading.has(`job:${jobName}`)) return;
    this.reading.add(`job:${jobName}`);
    try {
      await this.queue.settled();
      const trial = this.core.jobTrials().find((t) => t.jobName === jobName);
      if (!trial) return;
      if (trial.taskId) await this.readStdout(experiment, trial.taskId, true);
      const phase = job.phase === 'Succeeded' ? 'succeeded' : 'failed';
      await this.run(() => this.core.jobTrialUpdate(experiment, jobName, { phase, message: job.message }, this.now()));
      this.followed.delete(jobName);
    } finally {
      this.reading.delete(`job:${jobName}`);
    }
  }

  private pollLogs(): void {
    if (this.stopped) return;
    for (const t of this.core.runningTrials()) void this.readStdout(t.experiment, t.taskId, false);
  }

  /** Reads a trial's task's stdout on from where its record has read it, and hands the lines to the core. */
  private async readStdout(experiment: string, taskId: string, final: boolean): Promise<void> {
    // One reader at a time; the final read waits for a poll in flight, then reads on.
    while (this.reading.has(taskId)) await new Promise((r) => setTimeout(r, 20));
    this.reading.add(taskId);
    try {
      const at = this.core.stdoutOf(experiment, taskId);
      if (!at) return;
      const from = at.logOffset;
      const read = await readTrialStdout(this.env, taskId, at.agentId, from, final).catch((err: Error) => {
        this.log.debug({ err: err.message, taskId }, 'could not read a trial\'s stdout');
        return undefined;
      });
      if (read && read.nextOffset > from) await this.run(() => this.core.trialOutput(experiment, taskId, read.lines, read.nextOffset, this.now()));
    } finally {
      this.reading.delete(taskId);
    }
  }
}

/** A seed for an experiment that names none. */
export function freshSeed(): number {
  return randomInt(0, 2 ** 31 - 1);
}
