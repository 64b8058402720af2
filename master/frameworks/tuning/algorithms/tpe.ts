// Tree-structured Parzen Estimator search (Bergstra et al. 2011), multivariate as Optuna's
// TPESampler(multivariate=True) (Falkner et al. 2018): the observed trials are split into the
// best few (gamma) and the rest; a Parzen estimator l(x) is fitted to the good ones and g(x)
// to the others; candidates drawn from l are scored by log l(x) - log g(x), the best is tried.
//
// Stateless: every call rebuilds the split from the history. In parallel, a trial whose loss
// is not known yet (running, or proposed earlier in the same call) is a "constant liar" with
// the worst loss seen, so it lands in g and pushes the next proposals away from itself;
// failed trials are treated the same way, which keeps the search off regions that fail.
// Stopped (early-stopped) trials count as observations at their last reported loss.

import type { Assignment, SearchSpace } from '../../../../shared/tuning/space/types.ts';
import { decode, dimensions, encode, activeGiven, INACTIVE_COORDINATE, type Dimension, type EncodedPoint } from '../space/unit-cube.ts';
import { cubeHistory, type CubeTrial, type ObservedTrial } from './model-history.ts';
import { boolSetting, intSetting, numberSetting, refuseUnknownSettings, seedSetting } from './model-settings.ts';
import { startupDesign } from './model-startup.ts';
import { ParzenEstimator, type ParzenOptions } from './tpe-estimator.ts';
import { STREAM, trialRandom } from './trial-random.ts';
import type { Algorithm, AlgorithmSettings } from './types.ts';
import type { SeededRandom } from '../../../../shared/random.ts';

export interface TpeOptions extends ParzenOptions {
  readonly nStartupTrials: number;
  readonly nEiCandidates: number;
  /** The fraction of observed trials that make up l(x), at most BELOW_CAP of them. */
  readonly gamma: number;
}

const SETTINGS = ['n_startup_trials', 'n_ei_candidates', 'gamma', 'prior_weight', 'consider_endpoints', 'multivariate', 'random_state'];

/** Optuna's cap on the good trials, and the count of newest trials its weights keep at 1. */
const BELOW_CAP = 25;
const FLAT_WEIGHTS = 25;

export function parseTpeSettings(settings: AlgorithmSettings): TpeOptions {
  refuseUnknownSettings(settings, SETTINGS);
  return {
    nStartupTrials: intSetting(settings, 'n_startup_trials', 10, 0),
    nEiCandidates: intSetting(settings, 'n_ei_candidates', 24, 1, 100_000),
    gamma: numberSetting(settings, 'gamma', 0.1, { min: 0, max: 1, minExclusive: true }),
    priorWeight: numberSetting(settings, 'prior_weight', 1, { min: 0, max: 1e6, minExclusive: true }),
    considerEndpoints: boolSetting(settings, 'consider_endpoints', false),
    multivariate: boolSetting(settings, 'multivariate', true),
  };
}

export function tpe(space: SearchSpace, settings: AlgorithmSettings, experimentSeed: number): Algorithm {
  const opts = parseTpeSettings(settings);
  const seed = seedSetting(settings, experimentSeed);
  const dims = dimensions(space);
  const startup = startupDesign(dims, seed);
  return {
    suggest(history, count) {
      const h = cubeHistory(dims, history);
      const out: Assignment[] = [];
      const proposed: CubeTrial[] = [];
      for (let j = 0; j < count; j++) {
        const index = history.length + j;
        const point =
          h.observed.length < opts.nStartupTrials
            ? startup(index)
            : proposeTpe(dims, opts, h.observed, [...h.running, ...h.failed, ...proposed], trialRandom(seed, index, STREAM.candidates));
        const assignment = decode(dims, point);
        out.push(assignment);
        proposed.push({ index, ...encode(dims, assignment) });
      }
      return out;
    },
  };
}

/** One proposal: split, fit l and g, pick the best of l's candidates. */
export function proposeTpe(
  dims: readonly Dimension[],
  opts: TpeOptions,
  observed: readonly ObservedTrial[],
  liars: readonly CubeTrial[],
  rng: SeededRandom,
): number[] {
  const nBelow = Math.min(Math.ceil(opts.gamma * observed.length), BELOW_CAP);
  const ranked = [...observed].sort((a, b) => a.loss - b.loss || a.index - b.index);
  const byIndex = (a: CubeTrial, b: CubeTrial) => a.index - b.index;
  const below = ranked.slice(0, nBelow).sort(byIndex);
  const above = [...ranked.slice(nBelow), ...liars].sort(byIndex);
  const l = new ParzenEstimator(dims, below, optunaWeights(below.length), opts);
  const g = new ParzenEstimator(dims, above, optunaWeights(above.length), opts);
  return opts.multivariate ? bestJoint(l, g, opts.nEiCandidates, rng) : bestPerCoordinate(dims, l, g, opts.nEiCandidates, rng);
}

function bestJoint(l: ParzenEstimator, g: ParzenEstimator, candidates: number, rng: SeededRandom): number[] {
  let best: EncodedPoint | undefined;
  let bestScore = -Infinity;
  for (let c = 0; c < candidates; c++) {
    const x = l.sample(rng);
    const score = l.logScore(x) - g.logScore(x);
    if (best === undefined || score > bestScore) {
      best = x;
      bestScore = score;
    }
  }
  return best!.point;
}

/** Univariate TPE: each coordinate chosen on its own, in order, so nesting follows the choices. */
function bestPerCoordinate(dims: readonly Dimension[], l: ParzenEstimator, g: ParzenEstimator, candidates: number, rng: SeededRandom): number[] {
  const point = new Array<number>(dims.length).fill(INACTIVE_COORDINATE);
  const active = new Array<boolean>(dims.length).fill(false);
  dims.forEach((_, j) => {
    if (!activeGiven(dims, j, point, active)) return;
    let best = NaN;
    let bestScore = -Infinity;
    for (let c = 0; c < candidates; c++) {
      const u = l.sampleOne(j, rng);
      const score = l.logScoreOne(j, u) - g.logScoreOne(j, u);
      if (Number.isNaN(best) || score > bestScore) {
        best = u;
        bestScore = score;
      }
    }
    point[j] = best;
    active[j] = true;
  });
  return point;
}

/**
 * Optuna's default weights, oldest first: the newest 25 weigh 1, older ones ramp down
 * linearly towards 1/n, so an estimator follows where the search has moved.
 */
export function optunaWeights(n: number): number[] {
  if (n < FLAT_WEIGHTS) return new Array<number>(n).fill(1);
  const ramp = n - FLAT_WEIGHTS;
  const out: number[] = [];
  for (let i = 0; i < ramp; i++) out.push(ramp === 1 ? 1 / n : 1 / n + ((1 - 1 / n) * i) / (ramp - 1));
  for (let i = 0; i < FLAT_WEIGHTS; i++) out.push(1);
  return out;
}
