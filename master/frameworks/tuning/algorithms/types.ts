// What every search algorithm and early-stopping rule sees, and the shape they answer in.
// Each is a pure, seeded function of the space, its settings, the seed and the trials so far:
// it keeps no state between calls, so a new leader that loads the replicated trial history
// asks the same question and gets the same answer, without storing an algorithm's insides.

import type { Assignment, SearchSpace } from '../../../../shared/tuning/space/types.ts';
import type { AlgorithmSettings } from '../../../../shared/tuning/model.ts';

export type TrialPhase = 'running' | 'succeeded' | 'failed' | 'stopped';

/** One intermediate report of a trial, as a loss (lower is better). */
export interface StepLoss {
  readonly step: number;
  readonly loss: number;
}

/**
 * One trial as an algorithm sees it. The objective is always a loss: the core negates a
 * metric to maximise before any algorithm sees it.
 */
export interface TrialObservation {
  /** 0-based, in the order trials were created; unique. */
  readonly index: number;
  readonly params: Assignment;
  readonly phase: TrialPhase;
  /** The final loss of a succeeded trial; a stopped trial's last intermediate loss; else absent. */
  readonly loss?: number;
  /** Intermediate losses in step order (may be empty). */
  readonly intermediate: readonly StepLoss[];
}

export interface Algorithm {
  /**
   * Parameters for the next `count` trials (indices history.length … history.length+count-1,
   * where history holds every trial created so far, running ones included). Fewer, or none,
   * when the space is exhausted (a finished grid). Deterministic in its inputs.
   */
  suggest(history: readonly TrialObservation[], count: number): Assignment[];
}

// The settings' shape is part of an experiment's spec (shared/tuning/model.ts).
export type { AlgorithmSettings };

export interface EarlyStopper {
  /**
   * Indices of running trials to stop now, judged on the intermediate losses of every trial.
   * Deterministic in its inputs; a trial it names again after being stopped is ignored.
   */
  decide(history: readonly TrialObservation[]): number[];
}

// Bad settings or spaces are refused with badRequest(field, message) from shared/errors.ts,
// the field naming what is wrong: `algorithm.settings.n_startup_trials`, `parameters.lr.low`.
