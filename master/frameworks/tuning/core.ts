// The tuning core (the paper's App Core), pure: it holds every experiment and its trials,
// asks the search algorithm for parameters, places pending trials on the offers of the
// experiment's own framework, reads trials' results and intermediate reports, stops trials
// early, and ends an experiment on its goal, its trial budget or its failures. It returns
// what to do as effects (records to write, then tasks to launch or kill, offers to decline);
// the runtime carries them out, writes first. No clocks, sockets or randomness: `now` and
// ids are passed in, and the search is a function of the recorded trials, so a new leader
// that loads the records proposes exactly what the old one would have.

import { fitTasks } from '../../../shared/sdk/offer-fit.ts';
import { DEFAULT_RESTART_BACKOFF, nextRestart, type RestartBackoffPolicy } from '../../../shared/sdk/restart-backoff.ts';
import type { MesosResource } from '../../../shared/resources.ts';
import type { HeldOffer } from '../../../shared/sdk/held-offer.ts';
import type { JsonValue } from '../../../shared/framework-host/store.ts';
import { makeAlgorithm, makeEarlyStopper } from './algorithm-catalog.ts';
import type { Algorithm, EarlyStopper, TrialObservation } from './algorithms/types.ts';
import { DynamicPriority } from './dynamic-priority.ts';
import { parseMetricLine } from './metrics-parse.ts';
import type { ExperimentSpec, IgnoredField } from '../../../shared/tuning/model.ts';
import {
  bestTrial, better, experimentKey, goalReached, isActive, isSettled, objectiveValue, trialKey,
  type ExperimentPhase, type ExperimentRecord, type StopCause, type TrialRecord, type TrialState,
} from './record.ts';
import type { Assignment } from '../../../shared/tuning/space/types.ts';

/** A lost launch (its agent gone) is tried this many times in all before the trial fails. */
const MAX_ATTEMPTS = 3;
/** An unanswered kill is asked again this often. */
const KILL_RESEND_MS = 5_000;
/** Kept per trial: a trial reporting every few milliseconds must not grow its record without end. */
const MAX_INTERMEDIATE = 2_000;
/** Offer filters: none wanted for a while; busy (more trials wait); declined by the dynamic strategy. */
export const REFUSE_IDLE_S = 30;
export const REFUSE_BUSY_S = 0.5;
export const REFUSE_DYNAMIC_S = 1;

/** Mesos task states whose task never ran to its end: its agent or the launch was lost. */
const LOST_STATES = new Set(['TASK_LOST', 'TASK_DROPPED', 'TASK_GONE', 'TASK_GONE_BY_OPERATOR', 'TASK_UNREACHABLE', 'TASK_UNKNOWN']);
const TERMINAL_STATES = new Set(['TASK_FINISHED', 'TASK_FAILED', 'TASK_KILLED', 'TASK_ERROR', 'TASK_LOST', 'TASK_DROPPED', 'TASK_GONE', 'TASK_GONE_BY_OPERATOR', 'TASK_UNKNOWN']);

export interface TrialLaunch {
  readonly experiment: string;
  readonly role: string;
  readonly agentId: string;
  readonly hostname: string;
  readonly offerIds: string[];
  readonly trials: { readonly index: number; readonly taskId: string; readonly resources: MesosResource[]; readonly params: Assignment }[];
}

/** A distributed trial to submit to the job engine as job `jobName`. */
export interface JobTrialLaunch {
  readonly experiment: string;
  readonly index: number;
  readonly jobName: string;
  readonly params: Assignment;
}

/** What the runtime saw of a distributed trial's job. */
export type JobTrialUpdate =
  | { readonly phase: 'running'; readonly taskId: string; readonly agentId: string; readonly hostname: string }
  | { readonly phase: 'succeeded' | 'failed'; readonly message: string }
  /** The job is not there: removed (a kill), or never created (its submission was lost). */
  | { readonly phase: 'gone'; readonly message: string }
  /** The job waits for its gang to fit; `message` is the job's, which says why. */
  | { readonly phase: 'queued'; readonly message: string };

export interface TuningEffects {
  /** Durable first: keys of the tuning framework's store, null to remove. */
  writes: Map<string, JsonValue | null>;
  launches: TrialLaunch[];
  jobLaunches: JobTrialLaunch[];
  /** A task to kill, or a distributed trial's job to remove (`jobName`). */
  kills: { experiment: string; taskId?: string; agentId?: string; jobName?: string }[];
  declines: { experiment: string; offerIds: string[]; refuseSeconds: number }[];
  /** Experiments whose framework is no longer needed (settled or removed): torn down. */
  teardowns: string[];
}

export interface TaskUpdate {
  readonly taskId: string;
  readonly state: string;
  readonly agentId?: string;
  readonly exitCode?: number;
  readonly message: string;
}

interface Live {
  record: ExperimentRecord;
  trials: TrialRecord[];
  algorithm: Algorithm;
  stopper: EarlyStopper | undefined;
  priority: DynamicPriority;
}

export function taskIdFor(e: ExperimentRecord, index: number, attempt: number): string {
  return `tune-${e.spec.name}-${e.uid}-${index}-${attempt}`;
}

/** A distributed trial's job: a DNS label of at most 40, unique per experiment, trial and attempt. */
export function jobNameFor(e: ExperimentRecord, index: number, attempt: number): string {
  return `tune-${e.uid}-${index}-${attempt}`;
}

function isJobExperiment(l: Live): boolean {
  return l.record.spec.trial.job !== undefined;
}

export interface TuningCoreOptions {
  /** The wait before a lost trial runs again (written in the trial as a time); default DEFAULT_RESTART_BACKOFF. */
  restartBackoff?: RestartBackoffPolicy;
  /**
   * Why a trial does not fit in what the agents have free now, naming who holds it
   * (shared/sdk/why-queued.ts); undefined when it would fit. Absent: pending trials say nothing.
   */
  explainWait?: (members: { label: string; cpus: number; mem: number; disk?: number; gpus?: number }[], priorityClass: string | undefined) => string | undefined;
}

/** The start of a pending trial's message that says why it waits for room. */
export const WAITING_FOR_ROOM = 'waiting for room: ';

/** A pending trial that may be placed now: not waiting out its back-off. */
function placeable(t: TrialRecord, now: number): boolean {
  return t.state === 'Pending' && (t.restartAtMs ?? 0) <= now;
}

export class TuningCore {
  private readonly live = new Map<string, Live>();
  /** The time of the latest input (what wantsOffers judges back-offs by). */
  private nowMs = 0;
  private readonly restartBackoff: RestartBackoffPolicy;

  private readonly explainWait: TuningCoreOptions['explainWait'];

  constructor(opts: TuningCoreOptions = {}) {
    this.restartBackoff = opts.restartBackoff ?? DEFAULT_RESTART_BACKOFF;
    this.explainWait = opts.explainWait;
  }

  private readonly dirty = new Set<string>();
  private effects: TuningEffects = emptyEffects();
  /** When a kill was last asked, per task id (soft: a new leader asks again at once). */
  private readonly killsSent = new Map<string, number>();

  // ---- loading and commands -----------------------------------------------------------

  /** The records a new leader finds; a record whose search cannot be built is failed. */
  load(records: readonly ExperimentRecord[], trials: readonly TrialRecord[], now: number): void {
    for (const record of records) {
      const mine = trials.filter((t) => t.experiment === record.spec.name).sort((a, b) => a.index - b.index);
      try {
        this.live.set(record.spec.name, this.makeLive(structuredClone(record), mine.map((t) => structuredClone(t))));
      } catch (err) {
        const failed = structuredClone(record);
        failed.phase = 'Failed';
        failed.reason = 'AlgorithmUnavailable';
        failed.message = (err as Error).message;
        this.live.set(failed.spec.name, { record: failed, trials: mine.map((t) => structuredClone(t)), algorithm: { suggest: () => [] }, stopper: undefined, priority: new DynamicPriority(failed.spec.dynamic) });
        this.touchExperiment(failed.spec.name);
      }
    }
    for (const l of this.live.values()) {
      // Kills asked before the leader changed are asked again; the search goes on.
      for (const t of l.trials) if (t.stopping && (t.state === 'Running' || t.state === 'Starting')) this.kill(l, t, now);
      this.fill(l, now);
      this.settle(l, now);
    }
  }

  /** A new experiment, or 'exists' while one of the name is live. The spec is already checked. */
  submit(spec: ExperimentSpec, ignored: IgnoredField[], uid: string, now: number, owner: string): ExperimentRecord | 'exists' {
    const old = this.live.get(spec.name);
    if (old && !isSettled(old.record, old.trials)) return 'exists';
    if (old) this.forget(old);
    const record: ExperimentRecord = {
      spec, ignored, owner, uid, createdMs: now, phase: 'Running', reason: 'ExperimentCreated',
      message: 'the experiment was created', trialCount: 0, maxTrialCount: spec.maxTrialCount, exhausted: false,
      conditions: [{ type: 'Created', reason: 'ExperimentCreated', message: 'the experiment was created', atMs: now }],
    };
    const l = this.makeLive(record, []);
    this.live.set(spec.name, l);
    this.touchExperiment(spec.name);
    this.fill(l, now);
    this.settle(l, now);
    return record;
  }

  /** Stops a running experiment: its trials are killed, it can be resumed. False when not running. */
  stop(name: string, now: number): boolean {
    const l = this.live.get(name);
    if (!l || l.record.phase !== 'Running') return false;
    this.end(l, 'Stopped', 'ExperimentStopped', 'stopped on request', now);
    return true;
  }

  /**
   * Runs an ended experiment again, with a larger trial or failure budget when given: killed
   * trials run again with their parameters, finished ones stay. One that reached its goal goes
   * on searching only when given more trials (as Katib resumes a succeeded experiment whose
   * maxTrialCount is raised); one whose resumePolicy is Never stays ended, unless it was
   * stopped on request. Answers why it cannot.
   */
  resume(name: string, now: number, limits: { maxTrialCount?: number; maxFailedTrialCount?: number } = {}): 'resumed' | 'unknown' | 'running' | 'nothing-left' | 'not-resumable' {
    const l = this.live.get(name);
    if (!l) return 'unknown';
    if (l.record.phase === 'Running') return 'running';
    if (l.record.spec.resumePolicy === 'Never' && l.record.phase !== 'Stopped') return 'not-resumable';
    const max = Math.max(l.record.maxTrialCount, limits.maxTrialCount ?? 0);
    const maxFailed = Math.max(l.record.spec.maxFailedTrialCount, limits.maxFailedTrialCount ?? 0);
    const killed = l.trials.filter((t) => t.state === 'Killed');
    const failed = l.trials.filter((t) => t.state === 'Failed').length;
    const goalNotRaised = l.record.reason === 'GoalReached' && max <= l.record.maxTrialCount;
    if (goalNotRaised || failed > maxFailed || (killed.length === 0 && (l.record.trialCount >= max || l.record.exhausted))) return 'nothing-left';
    l.record.maxTrialCount = max;
    if (maxFailed !== l.record.spec.maxFailedTrialCount) l.record.spec = { ...l.record.spec, maxFailedTrialCount: maxFailed };
    for (const t of killed) {
      t.state = 'Pending';
      delete t.finishedMs;
      delete t.message;
      delete t.restartAtMs;
      this.touchTrial(l, t);
    }
    this.setPhase(l, 'Running', 'ExperimentResumed', 'resumed on request', now);
    delete l.record.finishedMs;
    this.fill(l, now);
    this.settle(l, now);
    return 'resumed';
  }

  /** Forgets an experiment; its framework is torn down and its trials' jobs removed, which kills its trials. */
  remove(name: string): boolean {
    const l = this.live.get(name);
    if (!l) return false;
    this.forget(l);
    return true;
  }

  // ---- the scheduler's events ----------------------------------------------------------

  /** Offers made to an experiment's framework: pending trials are placed, the rest declined. */
  offers(experiment: string, offers: readonly HeldOffer[], now: number): void {
    const l = this.live.get(experiment);
    if (!l) {
      this.decline(experiment, offers.map((o) => o.id), REFUSE_IDLE_S);
      return;
    }
    if (isJobExperiment(l)) {
      // Its trials are jobs: the job engine takes offers for them.
      this.decline(experiment, offers.map((o) => o.id), REFUSE_IDLE_S);
      return;
    }
    this.nowMs = now;
    const spec = l.record.spec;
    const need = { cpus: spec.trial.cpus, mem: spec.trial.memMb, disk: spec.trial.diskMb, gpus: spec.trial.gpus };
    let said = false;
    for (const o of offers) {
      const pending = l.record.phase === 'Running' ? l.trials.filter((t) => placeable(t, now)) : [];
      if (pending.length === 0) {
        this.decline(experiment, [o.id], REFUSE_IDLE_S);
        continue;
      }
      const fit = fitTasks(o.resources, pending.map(() => need), { role: o.role });
      if (fit.placed.length === 0) {
        this.decline(experiment, [o.id], REFUSE_BUSY_S);
        if (!said) this.sayWhyTrialsWait(l, pending);
        said = true;
        continue;
      }
      if (spec.scheduling === 'dynamic' && l.priority.offer(this.higherWaiting(l, o)) === 'decline') {
        this.decline(experiment, [o.id], REFUSE_DYNAMIC_S);
        continue;
      }
      const launched: TrialLaunch['trials'][number][] = [];
      for (const p of fit.placed) {
        const t = pending[p.index];
        startAttempt(t);
        t.taskId = taskIdFor(l.record, t.index, t.attempt);
        t.agentId = o.agentId;
        t.hostname = o.hostname;
        this.touchTrial(l, t);
        launched.push({ index: t.index, taskId: t.taskId, resources: p.resources, params: t.params });
      }
      this.effects.launches.push({ experiment, role: spec.role, agentId: o.agentId, hostname: o.hostname, offerIds: [o.id], trials: launched });
    }
  }

  /** An offer too small for a trial: the pending trials say what is short and who holds it (once per change). */
  private sayWhyTrialsWait(l: Live, pending: readonly TrialRecord[]): void {
    const spec = l.record.spec;
    const why = this.explainWait?.([{ label: 'a trial', cpus: spec.trial.cpus, mem: spec.trial.memMb, disk: spec.trial.diskMb, gpus: spec.trial.gpus }], spec.priorityClass);
    if (why === undefined) return;
    for (const t of pending) {
      // A message of its own (a lost attempt's) is kept: it says more than the wait does.
      if (t.message !== undefined && !t.message.startsWith(WAITING_FOR_ROOM)) continue;
      const message = `${WAITING_FOR_ROOM}${why}`;
      if (t.message === message) continue;
      t.message = message;
      this.touchTrial(l, t);
    }
  }

  /** Launches that did not happen (no subscription, the ACCEPT refused): the trials wait again. */
  launchFailed(experiment: string, taskIds: readonly string[], message: string): void {
    const l = this.live.get(experiment);
    if (!l) return;
    for (const t of l.trials) {
      const id = t.jobName ?? t.taskId;
      if (t.state !== 'Starting' || !id || !taskIds.includes(id)) continue;
      t.state = l.record.phase === 'Running' ? 'Pending' : 'Killed';
      t.message = `launch failed: ${message}`;
      this.touchTrial(l, t);
    }
  }

  /** Lines a trial printed on stdout since `logOffset`, read through `newOffset`. */
  trialOutput(experiment: string, taskId: string, lines: readonly string[], newOffset: number, now: number): void {
    const l = this.live.get(experiment);
    const t = l?.trials.find((x) => x.taskId === taskId);
    if (!l || !t || !isActive(t) || newOffset <= t.logOffset) return;
    const metric = l.record.spec.objective.metricName;
    let reported = false;
    for (const line of lines) {
      const r = parseMetricLine(line);
      if (!r) continue;
      for (const [k, v] of r.values) t.metrics[k] = v;
      const v = r.values.get(metric);
      if (v === undefined) continue;
      // A trial that numbers its reports (`step=N`) gives its result on a line without a
      // step: that is the result (in metrics above), not one more step. A trial that numbers
      // none has each report put after the ones before it, so a plain `accuracy=…` per epoch
      // still forms a curve.
      if (r.step !== undefined) t.numbersSteps = true;
      else if (t.numbersSteps) continue;
      const step = r.step ?? (t.intermediate.at(-1)?.step ?? 0) + 1;
      const at = t.intermediate.findIndex((s) => s.step >= step);
      if (at !== -1 && t.intermediate[at].step === step) t.intermediate[at] = { step, value: v };
      else if (t.intermediate.length < MAX_INTERMEDIATE) t.intermediate.splice(at === -1 ? t.intermediate.length : at, 0, { step, value: v });
      reported = true;
    }
    t.logOffset = newOffset;
    this.touchTrial(l, t);
    if (reported) this.judgeEarly(l, now);
  }

  taskUpdate(experiment: string, u: TaskUpdate, now: number): void {
    const l = this.live.get(experiment);
    const t = l?.trials.find((x) => x.taskId === u.taskId);
    if (!l || !t || !isActive(t)) {
      // A task no trial claims (a launch recorded by no leader, a trial removed): not ours to run.
      if (!TERMINAL_STATES.has(u.state)) this.effects.kills.push({ experiment, taskId: u.taskId, ...(u.agentId ? { agentId: u.agentId } : {}) });
      return;
    }
    if (u.state === 'TASK_RUNNING') {
      if (t.state === 'Starting') {
        t.state = 'Running';
        t.startedMs = now;
        if (u.agentId) t.agentId = u.agentId;
        this.touchTrial(l, t);
      }
      return;
    }
    if (!TERMINAL_STATES.has(u.state)) return;
    this.killsSent.delete(u.taskId);
    this.finishTrial(l, t, u, now);
    this.fill(l, now);
    this.settle(l, now);
  }

  /** What became of a distributed trial's job; its chief's stdout is read before its end is told. */
  jobTrialUpdate(experiment: string, jobName: string, u: JobTrialUpdate, now: number): void {
    const l = this.live.get(experiment);
    const t = l?.trials.find((x) => x.jobName === jobName);
    if (!l || !t || !isActive(t)) return;
    if (u.phase === 'queued') {
      this.jobTrialQueued(l, t, u.message);
      return;
    }
    if (u.phase === 'running') {
      if (t.taskId !== u.taskId) {
        // The chief started, or the job engine restarted it: its stdout is read from the start.
        t.taskId = u.taskId;
        t.logOffset = 0;
        t.metrics = {};
        t.intermediate = [];
        delete t.numbersSteps;
      }
      t.agentId = u.agentId;
      t.hostname = u.hostname;
      if (t.message?.startsWith(WAITING_FOR_ROOM)) delete t.message;
      if (t.state === 'Starting') {
        t.state = 'Running';
        t.startedMs = now;
      }
      this.touchTrial(l, t);
      return;
    }
    const state = u.phase === 'succeeded' ? 'TASK_FINISHED' : u.phase === 'failed' ? 'TASK_FAILED' : t.stopping ? 'TASK_KILLED' : 'TASK_LOST';
    this.killsSent.delete(jobName);
    this.finishTrial(l, t, { taskId: t.taskId ?? jobName, state, message: u.message }, now);
    this.fill(l, now);
    this.placeJobs(l, now);
    this.settle(l, now);
  }

  /**
   * A distributed trial whose job waits for room says why, as a task trial does: the job
   * engine's sentence (`... does not fit: WHY; trying again in ...`), without its countdown,
   * so that it is written once per reason.
   */
  private jobTrialQueued(l: Live, t: TrialRecord, jobMessage: string): void {
    const why = /does not fit: (.*?)(?:; (?:trying again in .*|gathering offers))?$/.exec(jobMessage)?.[1];
    if (why === undefined || t.state !== 'Starting') return;
    const message = `${WAITING_FOR_ROOM}${why}`;
    if (t.message === message) return;
    t.message = message;
    this.touchTrial(l, t);
  }

  /** Distributed trials in flight, with their job's name, for the runtime to follow. */
  jobTrials(): { experiment: string; jobName: string; state: TrialState; taskId?: string }[] {
    const out: { experiment: string; jobName: string; state: TrialState; taskId?: string }[] = [];
    for (const l of this.live.values()) {
      for (const t of l.trials) {
        if ((t.state === 'Starting' || t.state === 'Running') && t.jobName) out.push({ experiment: l.record.spec.name, jobName: t.jobName, state: t.state, ...(t.taskId ? { taskId: t.taskId } : {}) });
      }
    }
    return out;
  }

  /** Timeouts, kills asked again, and proposals for room that opened. */
  tick(now: number): void {
    this.nowMs = now;
    for (const l of this.live.values()) {
      const limitMs = l.record.spec.trial.timeoutSeconds * 1000;
      for (const t of l.trials) {
        if (t.state !== 'Running' && t.state !== 'Starting') continue;
        if (!t.stopping && limitMs > 0 && t.startedMs !== undefined && now - t.startedMs > limitMs) {
          t.stopping = 'timeout';
          this.touchTrial(l, t);
        }
        if (t.stopping && now - (this.killsSent.get(killKey(t)) ?? -Infinity) >= KILL_RESEND_MS) this.kill(l, t, now);
      }
      this.fill(l, now);
      this.placeJobs(l, now);
    }
  }

  // ---- reading ------------------------------------------------------------------------

  takeEffects(): TuningEffects {
    for (const key of this.dirty) this.effects.writes.set(key, this.valueOf(key));
    this.dirty.clear();
    const e = this.effects;
    this.effects = emptyEffects();
    return e;
  }

  experimentNames(): string[] {
    return [...this.live.keys()];
  }

  roleOf(experiment: string): string | undefined {
    return this.live.get(experiment)?.record.spec.role;
  }

  priorityClassOf(experiment: string): string | undefined {
    return this.live.get(experiment)?.record.spec.priorityClass;
  }

  /** Whether an experiment's framework should be asked for offers (trials wait to be placed, their back-off over). */
  wantsOffers(experiment: string, now = this.nowMs): boolean {
    const l = this.live.get(experiment);
    return l !== undefined && !isJobExperiment(l) && l.record.phase === 'Running' && l.trials.some((t) => placeable(t, now));
  }

  /** Whether an experiment still needs its framework (it runs, or trials of it still run). */
  needsFramework(experiment: string): boolean {
    const l = this.live.get(experiment);
    return l !== undefined && !isJobExperiment(l) && !isSettled(l.record, l.trials);
  }

  /** Trials launched more than `ageMs` ago and not heard of since: asked about. */
  startingSince(now: number, ageMs: number): { experiment: string; taskId: string; agentId?: string }[] {
    const out: { experiment: string; taskId: string; agentId?: string }[] = [];
    for (const l of this.live.values()) {
      for (const t of l.trials) {
        if (t.state === 'Starting' && t.taskId && !t.jobName && now - (t.startedMs ?? l.record.createdMs) >= ageMs) {
          out.push({ experiment: l.record.spec.name, taskId: t.taskId, ...(t.agentId ? { agentId: t.agentId } : {}) });
        }
      }
    }
    return out;
  }

  /** The tasks of running trials, whose stdout the runtime reads for intermediate results. */
  runningTrials(): { experiment: string; taskId: string }[] {
    const out: { experiment: string; taskId: string }[] = [];
    for (const l of this.live.values()) {
      for (const t of l.trials) if (t.state === 'Running' && t.taskId) out.push({ experiment: l.record.spec.name, taskId: t.taskId });
    }
    return out;
  }

  /** Where the stdout of a trial's task is, and the byte it was read to; undefined for no active trial's task. */
  stdoutOf(experiment: string, taskId: string): { agentId: string; logOffset: number } | undefined {
    const t = this.live.get(experiment)?.trials.find((x) => x.taskId === taskId);
    return t && isActive(t) && t.agentId ? { agentId: t.agentId, logOffset: t.logOffset } : undefined;
  }

  experiment(name: string): { record: ExperimentRecord; trials: TrialRecord[] } | undefined {
    const l = this.live.get(name);
    return l ? structuredClone({ record: l.record, trials: l.trials }) : undefined;
  }

  /** The dynamic strategy's level of an experiment (0 highest), for views and the simulator. */
  priorityLevel(name: string): number | undefined {
    return this.live.get(name)?.priority.level;
  }

  // ---- inside ------------------------------------------------------------------------

  private makeLive(record: ExperimentRecord, trials: TrialRecord[]): Live {
    const spec = record.spec;
    return {
      record,
      trials,
      algorithm: makeAlgorithm(spec.algorithm.name, spec.space, spec.algorithm.settings, spec.seed),
      stopper: spec.earlyStopping ? makeEarlyStopper(spec.earlyStopping.name, spec.earlyStopping.settings, spec.seed) : undefined,
      priority: new DynamicPriority(spec.dynamic),
    };
  }

  /**
   * Whether another experiment of a higher priority (a lower dynamic level; a fifo one counts
   * as level 0) has a trial waiting that `o` would hold: what the dynamic strategy declines
   * for. The paper's App Core infers it from the offers; this core holds every experiment.
   */
  private higherWaiting(l: Live, o: HeldOffer): boolean {
    const mine = l.priority.level;
    for (const m of this.live.values()) {
      if (m === l || m.record.phase !== 'Running' || isJobExperiment(m)) continue;
      const level = m.record.spec.scheduling === 'dynamic' ? m.priority.level : 0;
      if (level >= mine || !m.trials.some((t) => t.state === 'Pending')) continue;
      const t = m.record.spec.trial;
      if (fitTasks(o.resources, [{ cpus: t.cpus, mem: t.memMb, disk: t.diskMb, gpus: t.gpus }], { role: o.role }).placed.length > 0) return true;
    }
    return false;
  }

  /** Creates trials while there is room under the parallelism and the trial budget. */
  private fill(l: Live, now: number): void {
    const r = l.record;
    if (r.phase !== 'Running' || r.exhausted) return;
    const active = l.trials.filter(isActive).length;
    const room = Math.min(r.spec.parallelTrialCount - active, r.maxTrialCount - r.trialCount);
    if (room <= 0) return;
    const proposals = l.algorithm.suggest(observations(l), room);
    if (proposals.length < room) {
      r.exhausted = true;
      this.touchExperiment(r.spec.name);
    }
    for (const params of proposals) {
      const t: TrialRecord = {
        experiment: r.spec.name, index: r.trialCount, params, state: 'Pending', attempt: 0, createdMs: now,
        metrics: {}, intermediate: [], logOffset: 0,
      };
      r.trialCount += 1;
      l.trials.push(t);
      this.touchTrial(l, t);
    }
    this.touchExperiment(r.spec.name);
    this.placeJobs(l, now);
  }

  /** Distributed trials need no offer of ours: each pending one becomes a job of the job engine. */
  private placeJobs(l: Live, now: number): void {
    if (!isJobExperiment(l) || l.record.phase !== 'Running') return;
    for (const t of l.trials) {
      if (!placeable(t, now)) continue;
      startAttempt(t);
      t.jobName = jobNameFor(l.record, t.index, t.attempt);
      this.touchTrial(l, t);
      this.effects.jobLaunches.push({ experiment: l.record.spec.name, index: t.index, jobName: t.jobName, params: t.params });
    }
  }

  private finishTrial(l: Live, t: TrialRecord, u: TaskUpdate, now: number): void {
    const spec = l.record.spec;
    const value = objectiveValue(spec, t);
    const cause: StopCause | undefined = t.stopping;
    const finished = u.state === 'TASK_FINISHED';
    delete t.stopping;
    if (u.exitCode !== undefined) t.exitCode = u.exitCode;
    if (finished && value !== undefined && cause !== 'timeout') {
      t.state = 'Succeeded';
    } else if (cause === 'experiment-ended') {
      t.state = 'Killed';
    } else if (cause === 'early-stopped') {
      t.state = 'EarlyStopped';
      t.message = 'stopped early: its intermediate results were not promising';
    } else if (cause === 'timeout') {
      t.state = 'Failed';
      t.message = `ran longer than trial.timeoutSeconds (${spec.trial.timeoutSeconds} s)`;
    } else if (LOST_STATES.has(u.state) && t.attempt < MAX_ATTEMPTS) {
      // Its agent or launch was lost, not its program: run it again elsewhere, after its back-off.
      const next = nextRestart(this.restartBackoff, t.backoffRestarts ?? 0, t.startedMs !== undefined ? now - t.startedMs : 0, now);
      t.state = 'Pending';
      t.backoffRestarts = next.inRow;
      t.restartAtMs = next.restartAtMs;
      t.message = `attempt ${t.attempt} lost (${u.state}): ${u.message}; running it again in ${Math.round(next.delayMs / 100) / 10} s`;
      this.touchTrial(l, t);
      return;
    } else {
      t.state = 'Failed';
      t.message = finished ? `exited 0 but reported no metric '${spec.objective.metricName}'` : `${u.state}: ${u.message}`;
    }
    t.finishedMs = now;
    this.touchTrial(l, t);
    if (t.state === 'Killed') return;
    if (t.state === 'Succeeded') {
      const others = bestTrial(spec, l.trials.filter((x) => x !== t));
      const improved = others === undefined || better(spec, value!, objectiveValue(spec, others)!);
      l.priority.trialFinished(improved, orientedResults(spec, l.trials));
      if (l.record.phase === 'Running' && goalReached(spec, value!)) {
        this.end(l, 'Succeeded', 'GoalReached', `trial ${t.index} reached ${spec.objective.metricName}=${value} (goal ${spec.objective.goal})`, now);
      }
      return;
    }
    l.priority.trialFinished(false, orientedResults(spec, l.trials));
    const failed = l.trials.filter((x) => x.state === 'Failed').length;
    if (l.record.phase === 'Running' && t.state === 'Failed' && failed > spec.maxFailedTrialCount) {
      this.end(l, 'Failed', 'MaxFailedTrialsReached', `${failed} trials failed (maxFailedTrialCount ${spec.maxFailedTrialCount}); the last: ${t.message}`, now);
    }
  }

  /** Early stopping: running trials the rule names are killed and end as EarlyStopped. */
  private judgeEarly(l: Live, now: number): void {
    if (!l.stopper || l.record.phase !== 'Running') return;
    for (const index of l.stopper.decide(observations(l))) {
      const t = l.trials[index];
      if (!t || t.state !== 'Running' || t.stopping) continue;
      t.stopping = 'early-stopped';
      this.touchTrial(l, t);
      this.kill(l, t, now);
    }
  }

  /** The experiment is over when nothing runs and no more trials can come. */
  private settle(l: Live, now: number): void {
    const r = l.record;
    if (r.phase === 'Running' && !l.trials.some(isActive)) {
      if (r.trialCount >= r.maxTrialCount) this.setPhase(l, 'Succeeded', 'MaxTrialsReached', `all ${r.trialCount} trials have ended`, now);
      else if (r.exhausted) this.setPhase(l, 'Succeeded', 'SearchSpaceExhausted', `the search space has no more points after ${r.trialCount} trials`, now);
    }
    if (isSettled(r, l.trials) && r.finishedMs === undefined) {
      r.finishedMs = now;
      this.touchExperiment(r.spec.name);
      this.effects.teardowns.push(r.spec.name);
    }
  }

  private end(l: Live, phase: Exclude<ExperimentPhase, 'Running'>, reason: string, message: string, now: number): void {
    this.setPhase(l, phase, reason, message, now);
    for (const t of l.trials) {
      if (t.state === 'Pending') {
        t.state = 'Killed';
        t.finishedMs = now;
        t.message = `not run: ${reason}`;
        this.touchTrial(l, t);
      } else if ((t.state === 'Starting' || t.state === 'Running') && !t.stopping) {
        t.stopping = 'experiment-ended';
        this.touchTrial(l, t);
        this.kill(l, t, now);
      }
    }
    this.settle(l, now);
  }

  private setPhase(l: Live, phase: ExperimentPhase, reason: string, message: string, now: number): void {
    l.record.phase = phase;
    l.record.reason = reason;
    l.record.message = message;
    l.record.conditions.push({ type: phase, reason, message, atMs: now });
    if (l.record.conditions.length > 50) l.record.conditions.splice(1, l.record.conditions.length - 50);
    this.touchExperiment(l.record.spec.name);
  }

  private kill(l: Live, t: TrialRecord, now: number): void {
    if (!t.taskId && !t.jobName) return;
    this.killsSent.set(killKey(t), now);
    // A distributed trial is stopped by removing its job (the engine kills its replicas).
    if (t.jobName) this.effects.kills.push({ experiment: l.record.spec.name, jobName: t.jobName });
    else this.effects.kills.push({ experiment: l.record.spec.name, taskId: t.taskId, ...(t.agentId ? { agentId: t.agentId } : {}) });
  }

  private decline(experiment: string, offerIds: string[], refuseSeconds: number): void {
    if (offerIds.length > 0) this.effects.declines.push({ experiment, offerIds, refuseSeconds });
  }

  private forget(l: Live): void {
    const name = l.record.spec.name;
    this.live.delete(name);
    for (const t of l.trials) {
      // A distributed trial's job is the job engine's: removing it is what stops it (a task
      // trial goes with the experiment's framework, torn down below).
      if (t.jobName && isActive(t)) this.effects.kills.push({ experiment: name, jobName: t.jobName });
      this.dirty.delete(trialKey(name, t.index));
      this.effects.writes.set(trialKey(name, t.index), null);
      this.killsSent.delete(killKey(t));
    }
    this.dirty.delete(experimentKey(name));
    this.effects.writes.set(experimentKey(name), null);
    this.effects.teardowns.push(name);
  }

  private touchExperiment(name: string): void {
    this.dirty.add(experimentKey(name));
  }

  private touchTrial(l: Live, t: TrialRecord): void {
    this.dirty.add(trialKey(l.record.spec.name, t.index));
  }

  private valueOf(key: string): JsonValue | null {
    const [kind, name, index] = key.split('/');
    const l = this.live.get(name);
    if (!l) return null;
    const v = kind === 'experiment' ? l.record : l.trials[Number(index)];
    return v === undefined ? null : (structuredClone(v) as unknown as JsonValue);
  }
}

/** The trials as the search sees them: losses, lower is better. */
function observations(l: Live): TrialObservation[] {
  const spec = l.record.spec;
  const sign = spec.objective.type === 'maximize' ? -1 : 1;
  return l.trials.map((t) => {
    const intermediate = t.intermediate.map((s) => ({ step: s.step, loss: sign * s.value }));
    const value = objectiveValue(spec, t);
    switch (t.state) {
      case 'Succeeded':
        return { index: t.index, params: t.params, phase: 'succeeded', loss: sign * value!, intermediate };
      case 'EarlyStopped': {
        const last = intermediate.at(-1);
        return last ? { index: t.index, params: t.params, phase: 'stopped', loss: last.loss, intermediate } : { index: t.index, params: t.params, phase: 'failed', intermediate };
      }
      case 'Failed':
      case 'Killed':
        return { index: t.index, params: t.params, phase: 'failed', intermediate };
      default:
        return { index: t.index, params: t.params, phase: 'running', intermediate };
    }
  });
}

function emptyEffects(): TuningEffects {
  return { writes: new Map(), launches: [], jobLaunches: [], kills: [], declines: [], teardowns: [] };
}

/** A pending trial's next attempt begins: what the last one read and where it ran are forgotten. */
function startAttempt(t: TrialRecord): void {
  t.attempt += 1;
  t.state = 'Starting';
  t.logOffset = 0;
  t.metrics = {};
  t.intermediate = [];
  for (const k of ['taskId', 'agentId', 'hostname', 'exitCode', 'message', 'startedMs', 'restartAtMs', 'numbersSteps'] as const) delete t[k];
}

function killKey(t: TrialRecord): string {
  return t.jobName ?? t.taskId ?? '';
}

/** Every succeeded trial's objective value, higher better (a minimised metric negated): what the gap rule judges. */
function orientedResults(spec: ExperimentSpec, trials: readonly TrialRecord[]): number[] {
  const sign = spec.objective.type === 'maximize' ? 1 : -1;
  return trials.flatMap((t) => {
    const v = t.state === 'Succeeded' ? objectiveValue(spec, t) : undefined;
    return v === undefined ? [] : [sign * v];
  });
}
