// What the tuning REST API answers and `cairn tune` reads: a trial's and an experiment's
// states, an experiment with its counts and best trial, and its trials. Types only; the
// tuning framework builds them from its records (master/frameworks/tuning/views.ts).

import type { ExperimentSpec, IgnoredField } from './model.ts';
import type { Assignment } from './space/types.ts';

export type TrialState = 'Pending' | 'Starting' | 'Running' | 'Succeeded' | 'Failed' | 'EarlyStopped' | 'Killed';

export interface StepValue {
  step: number;
  value: number;
}

export type ExperimentPhase = 'Running' | 'Succeeded' | 'Failed' | 'Stopped';

export interface Condition {
  type: string;
  reason: string;
  message: string;
  atMs: number;
}

export interface TrialView {
  index: number;
  name: string;
  state: TrialState;
  params: Assignment;
  /** The objective's value (the latest reported), when there is one. */
  value?: number;
  metrics: Record<string, number>;
  intermediate: StepValue[];
  taskId?: string;
  /** A distributed trial's job (`cairn job show` it). */
  jobName?: string;
  hostname?: string;
  attempt: number;
  createdMs: number;
  startedMs?: number;
  finishedMs?: number;
  exitCode?: number;
  message?: string;
}

export interface ExperimentSummary {
  name: string;
  /** The name as submitted, where it was not a DNS label already. */
  displayName?: string;
  owner: string;
  phase: ExperimentPhase;
  reason: string;
  message: string;
  objective: ExperimentSpec['objective'];
  algorithm: string;
  earlyStopping?: string;
  parallelTrialCount: number;
  maxTrialCount: number;
  maxFailedTrialCount: number;
  scheduling: string;
  seed: number;
  counts: Record<TrialState, number>;
  best?: TrialView;
  createdMs: number;
  finishedMs?: number;
}

export interface ExperimentView extends ExperimentSummary {
  spec: ExperimentSpec;
  ignored: IgnoredField[];
  conditions: Condition[];
  trials: TrialView[];
}
