// The trial history as the model-based algorithms read it: points of the unit cube, sorted
// into trials with a loss (succeeded, and stopped ones at their last intermediate loss),
// trials still running, and trials without a usable loss (failed, or stopped before any
// report). Sorted by trial index, so that "older" means what it says.

import { encode, type Dimension } from '../space/unit-cube.ts';
import type { TrialObservation } from './types.ts';

export interface CubeTrial {
  readonly index: number;
  readonly point: readonly number[];
  readonly active: readonly boolean[];
}

export interface ObservedTrial extends CubeTrial {
  readonly loss: number;
}

export interface CubeHistory {
  /** Trials with a finite loss. */
  readonly observed: readonly ObservedTrial[];
  /** Running trials: parameters known, loss not yet. */
  readonly running: readonly CubeTrial[];
  /** Trials that ended without a loss. */
  readonly failed: readonly CubeTrial[];
}

export function cubeHistory(dims: readonly Dimension[], history: readonly TrialObservation[]): CubeHistory {
  const observed: ObservedTrial[] = [];
  const running: CubeTrial[] = [];
  const failed: CubeTrial[] = [];
  const sorted = [...history].sort((a, b) => a.index - b.index);
  for (const t of sorted) {
    const { point, active } = encode(dims, t.params);
    const trial = { index: t.index, point, active };
    if (t.phase === 'running') running.push(trial);
    else if (t.phase !== 'failed' && typeof t.loss === 'number' && Number.isFinite(t.loss)) observed.push({ ...trial, loss: t.loss });
    else failed.push(trial);
  }
  return { observed, running, failed };
}
