// Expected Improvement and its maximisation over the unit cube. EI is maximised by looking:
// a scrambled quasi-random design over the whole cube, Gaussian steps around the best trials
// so far (scaled by the fitted length scales, so a parameter the model finds irrelevant moves
// freely), then a few shrinking rounds of steps around the best candidate. Every candidate is
// snapped to the trial it decodes to, so integers and choices are scored as they will be run.

import type { SeededRandom } from '../../../../shared/random.ts';
import { normCdf, normInv, normLogPdf } from '../math/normal.ts';
import { snap, type Dimension, type EncodedPoint } from '../space/unit-cube.ts';
import type { Features, GpPosterior } from './gp-model.ts';
import { SOBOL_MAX_DIMENSIONS, shiftedSobolPoint } from './sobol-sequence.ts';

/** Improvement below which EI is not worth chasing, in normalised loss units. */
const XI = 0.01;
const INCUMBENTS = 5;
const STEPS_PER_INCUMBENT = 40;
const STEP_SCALES = [0.02, 0.08, 0.25];
const REFINE_ROUNDS = 3;
const STEPS_PER_ROUND = 30;
/** The chance that a local step also re-draws a categorical coordinate. */
const CHOICE_FLIP = 0.15;

/**
 * log EI(x) for minimisation, EI = σ (z Φ(z) + φ(z)), z = (best - ξ - μ)/σ; in logs and with
 * the far tail's asymptote, so candidates far from any improvement still rank.
 */
export function logExpectedImprovement(mean: number, variance: number, best: number): number {
  const sigma = Math.sqrt(variance);
  if (!(sigma > 1e-12)) return best - XI - mean > 0 ? Math.log(best - XI - mean) : -Infinity;
  const z = (best - XI - mean) / sigma;
  if (z > -6) return Math.log(sigma) + Math.log(z * normCdf(z) + Math.exp(normLogPdf(z)));
  // z Φ(z) + φ(z) ≈ φ(z) / z² (1 - 3/z²) as z → -∞
  return Math.log(sigma) + normLogPdf(z) - 2 * Math.log(-z) + Math.log1p(-3 / (z * z));
}

export interface EiSearch {
  readonly dims: readonly Dimension[];
  readonly posterior: GpPosterior;
  /** The best normalised loss observed. */
  readonly best: number;
  /** Unit points of the best observed trials, best first. */
  readonly incumbents: readonly (readonly number[])[];
  /** Fitted log length scales, per coordinate. */
  readonly logLengths: Float64Array;
  readonly features: (p: EncodedPoint) => Features;
}

/** The unit point with the largest EI found among about nCandidates + 500 looks. */
export function maximiseEi(s: EiSearch, nCandidates: number, rng: SeededRandom): number[] {
  let bestPoint: number[] | undefined;
  let bestScore = -Infinity;
  const consider = (raw: readonly number[]): void => {
    const enc = snap(s.dims, raw);
    const { mean, variance } = s.posterior.predict(s.features(enc));
    const score = logExpectedImprovement(mean, variance, s.best);
    if (bestPoint === undefined || score > bestScore) {
      bestPoint = enc.point;
      bestScore = score;
    }
  };

  const d = s.dims.length;
  const masks = Uint32Array.from({ length: d }, () => rng.nextU32());
  for (let i = 0; i < nCandidates; i++) {
    consider(d <= SOBOL_MAX_DIMENSIONS ? shiftedSobolPoint(i, masks) : s.dims.map(() => rng.float()));
  }
  for (const x of s.incumbents.slice(0, INCUMBENTS)) {
    for (let k = 0; k < STEPS_PER_INCUMBENT; k++) consider(step(s, x, STEP_SCALES[k % STEP_SCALES.length], rng));
  }
  let scale = STEP_SCALES[1];
  for (let round = 0; round < REFINE_ROUNDS; round++, scale /= 2) {
    const centre = bestPoint!;
    for (let k = 0; k < STEPS_PER_ROUND; k++) consider(step(s, centre, scale, rng));
  }
  return bestPoint!;
}

/** A Gaussian step from x, each coordinate's spread its length scale (at most 1) times `scale`. */
function step(s: EiSearch, x: readonly number[], scale: number, rng: SeededRandom): number[] {
  return x.map((u, j) => {
    if (s.dims[j].param.kind === 'categorical') return rng.float() < CHOICE_FLIP ? rng.float() : u;
    const z = normInv((rng.nextU32() + 0.5) / 4294967296);
    const v = u + z * scale * Math.min(1, Math.exp(s.logLengths[j]));
    return v < 0 ? -v : v > 1 ? 2 - v : v; // reflect at the walls
  });
}
