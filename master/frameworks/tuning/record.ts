// What the tuning framework records of an experiment and of each of its trials, in the
// replicated store: the experiment under `experiment/<name>`, each trial under
// `trial/<name>/<index>` so a trial's change rewrites that trial alone. A new leader loads
// these and resumes: a finished trial is never run again, a running one is reconciled.

import type { Assignment } from '../../../shared/tuning/space/types.ts';
import type { ExperimentSpec, IgnoredField } from '../../../shared/tuning/model.ts';
import type { Condition, ExperimentPhase, StepValue, TrialState } from '../../../shared/tuning/views.ts';

// A trial's and an experiment's states are what the REST API shows too (shared/tuning/views.ts).
export type { Condition, ExperimentPhase, StepValue, TrialState };

export const ACTIVE_TRIAL_STATES: ReadonlySet<TrialState> = new Set(['Pending', 'Starting', 'Running']);

/** Why a kill was asked for a trial still running (its end is then read in that light). */
export type StopCause = 'early-stopped' | 'experiment-ended' | 'timeout';

export interface TrialRecord {
  experiment: string;
  index: number;
  params: Assignment;
  state: TrialState;
  /** Launches so far (a launch lost with its agent is tried again). */
  attempt: number;
  /** The task whose stdout is read: the trial's own, or its job's first replica's. */
  taskId?: string;
  agentId?: string;
  hostname?: string;
  /** A distributed trial's job (one per attempt). */
  jobName?: string;
  createdMs: number;
  startedMs?: number;
  finishedMs?: number;
  /** The latest value of each metric the trial printed. */
  metrics: Record<string, number>;
  /** The objective metric's reports, by step. */
  intermediate: StepValue[];
  /** The trial has given a step (`step=N`) on a report: a report without one is then its result, not a step. */
  numbersSteps?: true;
  /** Bytes of stdout read through the last complete line: a new leader reads on from here. */
  logOffset: number;
  exitCode?: number;
  message?: string;
  stopping?: StopCause;
  /** Lost attempts in a row without a stable run: the next waits longer. */
  backoffRestarts?: number;
  /** A pending trial waiting out its back-off is placed no earlier than this. */
  restartAtMs?: number;
}

export interface ExperimentRecord {
  spec: ExperimentSpec;
  ignored: IgnoredField[];
  /** The principal that submitted it ('' with authentication off). */
  owner: string;
  /** Different for every submission of a name: its trials' task ids carry it. */
  uid: string;
  createdMs: number;
  phase: ExperimentPhase;
  /** Why it is in its phase (GoalReached, MaxTrialsReached, …), as Katib names them. */
  reason: string;
  message: string;
  finishedMs?: number;
  /** Trials created so far (their indices are 0 … trialCount-1). */
  trialCount: number;
  /** The trial budget: the spec's maxTrialCount, raised by a resume that asks for more. */
  maxTrialCount: number;
  /** The search found no more to propose (a finished grid). */
  exhausted: boolean;
  conditions: Condition[];
}

export function experimentKey(name: string): string {
  return `experiment/${name}`;
}

export const EXPERIMENT_KEY_PREFIX = 'experiment/';

export function trialKey(experiment: string, index: number): string {
  return `trial/${experiment}/${String(index).padStart(6, '0')}`;
}

export function trialKeyPrefix(experiment: string): string {
  return `trial/${experiment}/`;
}

/** A trial's value of the objective, when it has one. */
export function objectiveValue(spec: ExperimentSpec, t: TrialRecord): number | undefined {
  return t.metrics[spec.objective.metricName];
}

/** Whether `a` is better than `b` for the objective. */
export function better(spec: ExperimentSpec, a: number, b: number): boolean {
  return spec.objective.type === 'maximize' ? a > b : a < b;
}

/** The best succeeded trial, earliest first among equals. */
export function bestTrial(spec: ExperimentSpec, trials: readonly TrialRecord[]): TrialRecord | undefined {
  let best: TrialRecord | undefined;
  for (const t of trials) {
    if (t.state !== 'Succeeded') continue;
    const v = objectiveValue(spec, t);
    if (v === undefined) continue;
    if (!best || better(spec, v, objectiveValue(spec, best)!)) best = t;
  }
  return best;
}

export function goalReached(spec: ExperimentSpec, value: number): boolean {
  const goal = spec.objective.goal;
  if (goal === undefined) return false;
  return spec.objective.type === 'maximize' ? value >= goal : value <= goal;
}

export function isActive(t: TrialRecord): boolean {
  return ACTIVE_TRIAL_STATES.has(t.state);
}

/** The experiment has ended and none of its trials still runs. */
export function isSettled(e: ExperimentRecord, trials: readonly TrialRecord[]): boolean {
  return e.phase !== 'Running' && !trials.some((t) => t.state === 'Starting' || t.state === 'Running');
}
