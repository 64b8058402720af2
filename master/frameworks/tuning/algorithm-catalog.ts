// The search algorithms and early-stopping rules by name: the one place the core turns an
// experiment's `algorithm` and `earlyStopping` into the pure modules that answer it. The
// constructors check their settings, so building one is also how a spec is validated.

import type { SearchSpace } from '../../../shared/tuning/space/types.ts';
import type { AlgorithmName, EarlyStoppingName } from '../../../shared/tuning/model.ts';
import type { Algorithm, AlgorithmSettings, EarlyStopper } from './algorithms/types.ts';
import { randomSearch } from './algorithms/random-search.ts';
import { gridSearch } from './algorithms/grid-search.ts';
import { sobol } from './algorithms/sobol.ts';
import { tpe } from './algorithms/tpe.ts';
import { gaussianProcessEi } from './algorithms/gp-ei.ts';
import { asha, hyperband } from './early-stopping/asha.ts';
import { medianStop } from './early-stopping/median-stop.ts';

type AlgorithmFactory = (space: SearchSpace, settings: AlgorithmSettings, seed: number) => Algorithm;
type StopperFactory = (settings: AlgorithmSettings, seed: number) => EarlyStopper;

const ALGORITHMS: Record<AlgorithmName, AlgorithmFactory> = {
  random: randomSearch,
  grid: gridSearch,
  sobol,
  tpe,
  bayesianoptimization: gaussianProcessEi,
};

const STOPPERS: Record<EarlyStoppingName, StopperFactory> = {
  asha,
  hyperband,
  medianstop: medianStop,
};

/**
 * Other names users bring: the paper's `--tuning-type` values, Katib's and NNI's names.
 * `bayesian` is the paper's Gaussian-process search.
 */
export const ALGORITHM_ALIASES: Readonly<Record<string, AlgorithmName>> = {
  'random-search': 'random',
  'grid-search': 'grid',
  bayesian: 'bayesianoptimization',
  gp: 'bayesianoptimization',
  'multivariate-tpe': 'tpe',
  'quasirandom': 'sobol',
};

export const EARLY_STOPPING_ALIASES: Readonly<Record<string, EarlyStoppingName>> = {
  'successive-halving': 'asha',
  median: 'medianstop',
  'median-stop': 'medianstop',
};

export function makeAlgorithm(name: AlgorithmName, space: SearchSpace, settings: AlgorithmSettings, seed: number): Algorithm {
  return ALGORITHMS[name](space, settings, seed);
}

export function makeEarlyStopper(name: EarlyStoppingName, settings: AlgorithmSettings, seed: number): EarlyStopper {
  return STOPPERS[name](settings, seed);
}
