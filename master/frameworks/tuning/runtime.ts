// The tuning core on the framework runtime (shared/framework-runtime/), on the leading
// master. Every experiment subscribes as a framework of its own (`tuning:<name>`), as in the
// paper, so the master's DRF and the experiments' declines decide between them. The runtime's
// queue takes every input: the core decides,
// the records it changed are written and durable, and only then are trials launched or
// killed — a new leader never finds a trial task it did not record, and a finished trial is
// recorded once. Trials' stdout is read from their agents for metrics while they run, and
// to its end before their end is judged.

import { randomBytes, randomInt } from 'node:crypto';
import type { Logger } from 'pino';
import { isTerminal } from '../../../shared/agent-messages.ts';
import type { TaskStatusJson } from '../../../shared/mesos-v1.ts';
import { roomAgents } from '../../../shared/framework-host/room-agents.ts';
import { explainQueued } from '../../../shared/sdk/why-queued.ts';
import type { FrameworkEnv, FrameworkInstance } from '../../../shared/framework-host/contract.ts';
import type { JsonValue } from '../../../shared/framework-host/store.ts';
import { heldOffer } from '../../../shared/sdk/held-offer.ts';
import type { JobsApi } from '../../../shared/jobs/api.ts';
import { isFinished, type JobView } from '../../../shared/jobs/model.ts';
import type { Cancel } from '../../../shared/framework-runtime/clock.ts';
import { DecisionQueue } from '../../../shared/framework-runtime/decision-queue.ts';
import { runtimeIo, type RuntimeIoOptions } from '../../../shared/framework-runtime/io.ts';
import { recordThenAct } from '../../../shared/framework-runtime/record-then-act.ts';
import { Subscriptions } from '../../../shared/framework-runtime/subscriptions.ts';
import { STARTING_TIMEOUT_MS } from '../../../shared/framework-runtime/time-outs.ts';
import { ON_CHANGE } from '../../../shared/framework-runtime/offer-interest.ts';
import { hostedFrameworkInfo } from '../../../shared/framework-host/framework-info.ts';
import { chiefGroup, trialJobSpec } from './trial-job.ts';
import { policyExitCode } from '../../../shared/jobs/exit-code.ts';
import { REFUSE_BUSY_S, TuningCore, type JobTrialLaunch, type TuningEffects, type TuningCoreOptions } from './core.ts';
import type { ExperimentSpec, IgnoredField } from '../../../shared/tuning/model.ts';
import { EXPERIMENT_KEY_PREFIX, type ExperimentRecord, type TrialRecord } from './record.ts';
import { trialTaskInfo } from './trial-command.ts';
import { readTrialStdout, type TrialStdoutReader } from './trial-logs.ts';

export const TUNING_FRAMEWORK_NAME = 'tuning';
/** Each experiment's framework is named this, then the experiment's name. */
export const EXPERIMENT_FRAMEWORK_PREFIX = 'tuning:';
const FRAMEWORK_ID_PREFIX = 'framework-id/';
const TICK_MS = 200;
/** How often running trials' stdout is read for intermediate metrics. */
const LOG_POLL_MS = 1_000;
const TEARDOWN_DELAY_MS = 1_000;
const JOB_SYNC_MS = 1_000;

export interface TuningRuntimeOptions extends TuningCoreOptions, RuntimeIoOptions {
  /** Makes a new experiment's uid (default: random); the simulator passes a seeded one, so one seed gives one history. */
  uid?: () => string;
  /** Reads a trial's stdout (default: from its agent, trial-logs.ts); the simulator reads its simulated trials'. */
  readStdout?: TrialStdoutReader;
}

export function frameworkIdKey(experiment: string): string {
  return `${FRAMEWORK_ID_PREFIX}${experiment}`;
}

export class TuningRuntime implements FrameworkInstance {
  readonly core: TuningCore;
  private readonly log: Logger;
  /** One subscription per experiment. */
  private readonly subs: Subscriptions<string>;
  private readonly queue: DecisionQueue;
  private readonly timers: Cancel[] = [];
  private stopped = false;
  /** Distributed trials' jobs being submitted now (not in the job store yet, and not lost). */
  private readonly submitting = new Set<string>();
  /**
   * Jobs whose absence means something: submitted by this runtime, or recorded before it
   * started. A trial's job decided but not yet submitted (its record still being written) is
   * not missing.
   */
  private readonly followed = new Set<string>();
  private readonly offJobs: () => void;
  /** Distributed trials' jobs whose end is being told now (once each). */
  private readonly endingJobs = new Set<string>();
  /** Trials whose stdout is being read now, with that read (one read at a time each). */
  private readonly stdoutReads = new Map<string, Promise<void>>();
  private readonly now: () => number;
  private readonly uid: () => string;
  private readonly readTrialStdout: TrialStdoutReader;

  constructor(private readonly env: FrameworkEnv, opts: TuningRuntimeOptions = {}) {
    this.log = env.log;
    const io = runtimeIo(env, opts);
    this.now = () => io.clock.now();
    this.uid = opts.uid ?? (() => randomBytes(3).toString('hex'));
    this.readTrialStdout = opts.readStdout ?? ((taskId, agentId, offset, final) => readTrialStdout(env, taskId, agentId, offset, final));
    const classes = env.priorityClasses;
    this.core = new TuningCore({
      ...(opts.restartBackoff ? { restartBackoff: opts.restartBackoff } : {}),
      explainWait: (members, c) => explainQueued(members, roomAgents(env.cluster), { name: classes.orDefault(c), rank: (n) => classes.rank(n) }),
    });
    this.queue = new DecisionQueue(() => this.flush(), (err) => this.log.error({ err }, 'the tuning framework could not carry out a decision'));
    this.subs = new Subscriptions<string>({
      name: TUNING_FRAMEWORK_NAME, io, store: env.store, log: env.log, interest: ON_CHANGE, reviveOnSubscribe: true,
      settled: () => this.run(() => {}),
      handlers: {
        frameworkInfo: (name) => hostedFrameworkInfo(`${EXPERIMENT_FRAMEWORK_PREFIX}${name}`, this.core.roleOf(name), this.core.priorityClassOf(name)),
        idKey: frameworkIdKey,
        wanted: (name) => this.core.needsFramework(name),
        offers: (name, offers) => void this.run(() => this.core.offers(name, offers.map(heldOffer), this.now())),
        update: (name, status) => this.onUpdate(name, status),
        subscribed: () => this.reconcileStarting(),
      },
    });
    // Distributed trials' jobs are followed through the jobs framework's API.
    this.offJobs = env.api('jobs')?.onChange(() => this.syncJobTrials()) ?? (() => {});
    const records = env.store.entries<JsonValue>(EXPERIMENT_KEY_PREFIX).map(([, v]) => v as unknown as ExperimentRecord);
    const trials = env.store.entries<JsonValue>('trial/').map(([, v]) => v as unknown as TrialRecord);
    for (const t of trials) if (t.jobName && (t.state === 'Starting' || t.state === 'Running')) this.followed.add(t.jobName);
    void this.run(() => this.core.load(records, trials, this.now()));
    let ticks = 0;
    this.timers.push(io.clock.every(TICK_MS, () => void this.run(() => {
      this.core.tick(this.now());
      if (++ticks % Math.round(STARTING_TIMEOUT_MS / TICK_MS) === 0) this.reconcileStarting();
      // Job changes come as they are applied; this catches any missed (a leader's first moments).
      if (ticks % Math.round(JOB_SYNC_MS / TICK_MS) === 0) this.syncJobTrials();
    })));
    this.timers.push(io.clock.every(LOG_POLL_MS, () => this.pollLogs()));
  }

  /** Submits an experiment; 'exists' while a live one has its name. Resolves once durable. */
  submit(spec: ExperimentSpec, ignored: IgnoredField[], owner: string): Promise<ExperimentRecord | 'exists'> {
    return this.queue.ask<ExperimentRecord | 'exists'>(() => {
      const r = this.core.submit(spec, ignored, this.uid(), this.now(), owner);
      return r === 'exists' ? r : structuredClone(r);
    }, 'exists');
  }

  stopExperiment(name: string): Promise<boolean> {
    return this.queue.ask(() => this.core.stop(name, this.now()), false);
  }

  resume(name: string, limits: { maxTrialCount?: number; maxFailedTrialCount?: number }): Promise<ReturnType<TuningCore['resume']>> {
    return this.queue.ask<ReturnType<TuningCore['resume']>>(() => this.core.resume(name, this.now(), limits), 'unknown');
  }

  remove(name: string): Promise<boolean> {
    return this.queue.ask(() => this.core.remove(name), false);
  }

  /** This master stops leading: trials keep running for the next leader's instance. */
  stop(): void {
    this.stopped = true;
    this.queue.stop();
    this.offJobs();
    for (const cancel of this.timers) cancel();
    this.subs.stop();
  }

  // ---- the queue ----------------------------------------------------------------------

  private run(fn: () => void): Promise<void> {
    return this.queue.run(fn);
  }

  private async flush(): Promise<void> {
    const e = this.core.takeEffects();
    await recordThenAct(this.env.store, [...e.writes].map(([key, value]) => ({ key, value })), () => this.act(e));
  }

  /** What the core decided, once its records are durable. */
  private async act(e: TuningEffects): Promise<void> {
    // The master kills whatever still runs of a finished experiment's framework (a removed
    // one's trials); a moment later, so the acknowledgement of the update that settled it goes first.
    for (const name of e.teardowns) await this.subs.teardown(name, TEARDOWN_DELAY_MS);
    for (const k of e.kills) {
      if (k.jobName) this.removeJob(k.jobName);
      else if (k.taskId) this.subs.kill(k.experiment, k.taskId, k.agentId);
    }
    for (const l of e.launches) {
      const record = this.core.experiment(l.experiment)?.record;
      const ids = l.trials.map((t) => t.taskId);
      const failed = (message: string): void => void this.run(() => this.core.launchFailed(l.experiment, ids, message));
      if (!record) {
        queueMicrotask(() => failed('not subscribed'));
        continue;
      }
      this.subs.launch(l.experiment, l.offerIds, l.trials.map((t) => trialTaskInfo(record.spec, t, l.agentId)), { refuse_seconds: REFUSE_BUSY_S }, failed);
    }
    for (const j of e.jobLaunches) this.submitJob(j);
    for (const d of e.declines) void this.subs.decline(d.experiment, d.offerIds, d.refuseSeconds);
    for (const name of this.core.experimentNames()) {
      if (!this.core.needsFramework(name)) continue;
      this.subs.ensure(name);
      void this.subs.wantOffers(name, this.core.wantsOffers(name));
    }
  }

  private reconcileStarting(): void {
    this.subs.reconcileStarting(this.core.startingSince(this.now(), STARTING_TIMEOUT_MS).map(({ experiment, ...t }) => ({ key: experiment, ...t })));
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
      // Waiting for its gang to fit: the trial says why (once per reason: the core compares).
      if (job.phase === 'Queued' && job.message !== '') void this.run(() => this.core.jobTrialUpdate(t.experiment, t.jobName, { phase: 'queued', message: job.message }, this.now()));
      if (isFinished(job)) void this.finishJobTrial(t.experiment, t.jobName, job);
    }
  }

  /** A finished job's trial: its chief's stdout read to the end, then its end told. */
  private async finishJobTrial(experiment: string, jobName: string, job: JobView): Promise<void> {
    if (this.endingJobs.has(jobName)) return;
    this.endingJobs.add(jobName);
    try {
      await this.queue.settled();
      const trial = this.core.jobTrials().find((t) => t.jobName === jobName);
      if (!trial) return;
      if (trial.taskId) await this.readStdout(experiment, trial.taskId, true);
      const phase = job.phase === 'Succeeded' ? 'succeeded' : 'failed';
      await this.run(() => this.core.jobTrialUpdate(experiment, jobName, { phase, message: job.message }, this.now()));
      this.followed.delete(jobName);
    } finally {
      this.endingJobs.delete(jobName);
    }
  }

  private pollLogs(): void {
    if (this.stopped) return;
    for (const t of this.core.runningTrials()) void this.readStdout(t.experiment, t.taskId, false);
  }

  /** Reads a trial's task's stdout on from where its record has read it, and hands the lines to the core. */
  private async readStdout(experiment: string, taskId: string, final: boolean): Promise<void> {
    // One reader at a time; the final read waits for a poll in flight, then reads on.
    for (let busy = this.stdoutReads.get(taskId); busy; busy = this.stdoutReads.get(taskId)) await busy.catch(() => {});
    const read = this.readStdoutOnce(experiment, taskId, final).finally(() => {
      if (this.stdoutReads.get(taskId) === read) this.stdoutReads.delete(taskId);
    });
    this.stdoutReads.set(taskId, read);
    return read;
  }

  private async readStdoutOnce(experiment: string, taskId: string, final: boolean): Promise<void> {
    const at = this.core.stdoutOf(experiment, taskId);
    if (!at) return;
    const from = at.logOffset;
    const read = await this.readTrialStdout(taskId, at.agentId, from, final).catch((err: Error) => {
      this.log.debug({ err: err.message, taskId }, 'could not read a trial\'s stdout');
      return undefined;
    });
    if (read && read.nextOffset > from) await this.run(() => this.core.trialOutput(experiment, taskId, read.lines, read.nextOffset, this.now()));
  }
}

/** A seed for an experiment that names none. */
export function freshSeed(): number {
  return randomInt(0, 2 ** 31 - 1);
}
