// Bayesian optimisation with a Gaussian process and Expected Improvement, in the unit cube.
// The first n_startup_trials trials are points of the seed's Sobol design; after that each
// call fits the GP's hyperparameters to the observed losses (normalised), and each proposal
// maximises EI over n_candidates quasi-random points plus local steps around the best.
//
// Stateless, so parallel proposals use a constant liar, "CL-min": running trials, and the
// proposals made earlier in the same call, enter the posterior (not the fit) as observations
// at the best loss seen, which flattens EI around them and sends the next proposal elsewhere.
// Failed trials enter the same way at the worst loss seen, so the search does not return to
// a point that failed; stopped trials count as observations at their last reported loss.
// Categorical parameters: a Hamming term in the kernel (one-hot, one length scale each).

import type { Assignment, SearchSpace } from '../../../../shared/tuning/space/types.ts';
import { decode, dimensions, encode, type Dimension, type EncodedPoint } from '../space/unit-cube.ts';
import { maximiseEi } from './gp-acquisition.ts';
import { fitGp, GpPosterior, type Features } from './gp-model.ts';
import { cubeHistory, type CubeTrial } from './model-history.ts';
import { intSetting, refuseUnknownSettings, seedSetting } from './model-settings.ts';
import { startupDesign } from './model-startup.ts';
import { STREAM, trialRandom } from './trial-random.ts';
import type { Algorithm, AlgorithmSettings } from './types.ts';

export interface GpEiOptions {
  readonly nStartupTrials: number;
  readonly nCandidates: number;
}

export function parseGpEiSettings(settings: AlgorithmSettings): GpEiOptions {
  refuseUnknownSettings(settings, ['n_startup_trials', 'n_candidates', 'random_state']);
  return {
    nStartupTrials: intSetting(settings, 'n_startup_trials', 10, 0),
    nCandidates: intSetting(settings, 'n_candidates', 2000, 1, 100_000),
  };
}

export function gaussianProcessEi(space: SearchSpace, settings: AlgorithmSettings, experimentSeed: number): Algorithm {
  const opts = parseGpEiSettings(settings);
  const seed = seedSetting(settings, experimentSeed);
  const dims = dimensions(space);
  const isCat = dims.map((d) => d.param.kind === 'categorical');
  const features = featuresOf(dims);
  const startup = startupDesign(dims, seed);
  return {
    suggest(history, count) {
      const h = cubeHistory(dims, history);
      const out: Assignment[] = [];
      if (h.observed.length < Math.max(1, opts.nStartupTrials)) {
        for (let j = 0; j < count; j++) out.push(decode(dims, startup(history.length + j)));
        return out;
      }
      if (count <= 0) return out;
      const losses = h.observed.map((t) => t.loss);
      const mean = losses.reduce((a, b) => a + b, 0) / losses.length;
      const sd = Math.sqrt(losses.reduce((a, b) => a + (b - mean) ** 2, 0) / losses.length) || 1;
      const y = Float64Array.from(losses, (v) => (v - mean) / sd);
      const xs = h.observed.map(features);
      const hyper = fitGp(xs, y, isCat);
      const best = Math.min(...y);
      const worst = Math.max(...y);
      const incumbents = [...h.observed].sort((a, b) => a.loss - b.loss || a.index - b.index).map((t) => t.point);
      const liarX: Features[] = [...h.running.map(features), ...h.failed.map(features)];
      const liarY: number[] = [...h.running.map(() => best), ...h.failed.map(() => worst)];
      for (let j = 0; j < count; j++) {
        const index = history.length + j;
        const posterior = new GpPosterior([...xs, ...liarX], Float64Array.from([...y, ...liarY]), isCat, hyper);
        const point = maximiseEi({ dims, posterior, best, incumbents, logLengths: hyper.logLengths, features }, opts.nCandidates, trialRandom(seed, index, STREAM.candidates));
        const assignment = decode(dims, point);
        out.push(assignment);
        liarX.push(features(encode(dims, assignment)));
        liarY.push(best);
      }
      return out;
    },
  };
}

/** A unit point as the kernel reads it: coordinates, choice indices, inactive marked. */
function featuresOf(dims: readonly Dimension[]): (p: EncodedPoint | CubeTrial) => Features {
  return (p) =>
    Float64Array.from(dims, (dim, j) => {
      const u = p.point[j];
      if (dim.param.kind !== 'categorical') return p.active[j] ? u : 0.5;
      if (!p.active[j]) return -1;
      const n = dim.param.choices.length;
      return Math.min(n - 1, Math.floor(u * n));
    });
}
