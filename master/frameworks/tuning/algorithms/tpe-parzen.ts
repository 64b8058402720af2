// TPE's one-dimensional kernels, in unit-cube coordinates (where a log range is already
// linear): Gaussians truncated to [0,1] for numbers, smoothed one-hot rows for choices, each
// set ending with the prior's kernel. Bandwidths follow Optuna 3's TPESampler, so the two can
// be compared like for like.

import type { SeededRandom } from '../../../../shared/random.ts';
import { logNormalMass, normCdf, normInv, normLogPdf } from '../math/normal.ts';

/** The prior kernel: centred, as wide as the range (nearly flat over it). */
const PRIOR_MU = 0.5;
const PRIOR_SIGMA = 1;

/** Optuna's SIGMA0_MAGNITUDE: the multivariate bandwidth's constant (Scott's rule, as BOHB). */
const SIGMA0_MAGNITUDE = 0.2;

/** Gaussians truncated to [0,1]; the last is the prior's. */
export interface NumericKernels {
  readonly mus: Float64Array;
  readonly sigmas: Float64Array;
  /** log of each Gaussian's mass inside [0,1]. */
  readonly logZ: Float64Array;
}

/** The multivariate bandwidth for n observations in d dimensions. */
export function multivariateSigma(n: number, d: number): number {
  return SIGMA0_MAGNITUDE * Math.max(n, 1) ** (-1 / (d + 4));
}

/** One bandwidth for every kernel (multivariate TPE), clipped as Optuna's "magic clip". */
export function sharedBandwidthKernels(values: readonly number[], sigma: number): NumericKernels {
  const mus = Float64Array.from([...values, PRIOR_MU]);
  const sigmas = new Float64Array(mus.length).fill(clipSigma(sigma, mus.length));
  return finish(mus, sigmas);
}

/**
 * Each kernel as wide as the larger gap to its neighbours (the prior's centre and the range's
 * ends counting as neighbours), as univariate TPE. Without `considerEndpoints`, the outermost
 * kernels look only inwards, so a value near an end is not made wide by the end.
 */
export function neighbourBandwidthKernels(values: readonly number[], considerEndpoints: boolean): NumericKernels {
  const mus = Float64Array.from([...values, PRIOR_MU]);
  const order = Array.from(mus.keys()).sort((a, b) => mus[a] - mus[b] || a - b);
  const sorted = [0, ...order.map((i) => mus[i]), 1];
  const m = order.length;
  const sigmas = new Float64Array(m);
  for (let r = 0; r < m; r++) {
    let s = Math.max(sorted[r + 1] - sorted[r], sorted[r + 2] - sorted[r + 1]);
    if (!considerEndpoints && sorted.length >= 4) {
      if (r === 0) s = sorted[2] - sorted[1];
      if (r === m - 1) s = sorted[m] - sorted[m - 1];
    }
    sigmas[order[r]] = clipSigma(s, m);
  }
  sigmas[m - 1] = PRIOR_SIGMA;
  return finish(mus, sigmas);
}

/** Optuna's magic clip: no kernel narrower than the range over min(100, kernels + 1). */
function clipSigma(s: number, kernels: number): number {
  return Math.min(1, Math.max(1 / Math.min(100, 1 + kernels), s));
}

function finish(mus: Float64Array, sigmas: Float64Array): NumericKernels {
  sigmas[mus.length - 1] = PRIOR_SIGMA;
  const logZ = mus.map((mu, i) => logNormalMass(-mu / sigmas[i], (1 - mu) / sigmas[i]));
  return { mus, sigmas, logZ };
}

/**
 * How strongly kernel i scores x: its truncated density in units of its own bandwidth
 * (σ · pdf), or its mass over the cell [a, b] of a discrete value.
 *
 * Measuring each kernel in units of its own width is what Optuna 3.1's TPE does (its
 * truncated-normal log-pdf leaves out the log σ term). Against the exact density it weighs
 * the wide prior kernel up by σ^-d in d dimensions, so the score of a candidate is not decided
 * by the single nearest observation alone, which in six dimensions it otherwise is: on
 * Hartmann-6 the exact density needed a median of 32 trials to come within 1 of the optimum,
 * this form 22.5 (seeds 0-99, bench/tuning-quality.ts's setting). Sampling is unaffected.
 */
export function numericLogDensity(k: NumericKernels, i: number, x: number, cell: readonly [number, number] | undefined): number {
  const mu = k.mus[i];
  const s = k.sigmas[i];
  if (cell) return logNormalMass((cell[0] - mu) / s, (cell[1] - mu) / s) - k.logZ[i];
  return normLogPdf((x - mu) / s) - k.logZ[i];
}

/** A draw from kernel i, by inversion (its centre lies in [0,1], so no tail is extreme). */
export function sampleNumeric(k: NumericKernels, i: number, rng: SeededRandom): number {
  const mu = k.mus[i];
  const s = k.sigmas[i];
  const lo = normCdf(-mu / s);
  const hi = normCdf((1 - mu) / s);
  const x = mu + s * normInv(lo + rng.float() * (hi - lo));
  return Number.isFinite(x) ? Math.min(1, Math.max(0, x)) : mu;
}

/**
 * One probability row per observed choice: prior_weight spread over all choices, plus one
 * for the observed choice, normalised; the last row (the prior's) is uniform.
 */
export function categoricalKernels(observed: readonly number[], choices: number, priorWeight: number): Float64Array[] {
  const base = priorWeight / (observed.length + 1);
  const rows = observed.map((c) => {
    const row = new Float64Array(choices).fill(base);
    row[c] += 1;
    const total = base * choices + 1;
    return row.map((p) => Math.log(p / total));
  });
  rows.push(new Float64Array(choices).fill(-Math.log(choices)));
  return rows;
}

/** A choice drawn from a row of log probabilities. */
export function sampleCategorical(logRow: Float64Array, rng: SeededRandom): number {
  let u = rng.float();
  for (let c = 0; c < logRow.length; c++) {
    u -= Math.exp(logRow[c]);
    if (u < 0) return c;
  }
  return logRow.length - 1;
}

/** log Σ exp(x_i), without overflow. */
export function logSumExp(xs: ArrayLike<number>): number {
  let max = -Infinity;
  for (let i = 0; i < xs.length; i++) if (xs[i] > max) max = xs[i];
  if (max === -Infinity) return -Infinity;
  let s = 0;
  for (let i = 0; i < xs.length; i++) s += Math.exp(xs[i] - max);
  return max + Math.log(s);
}

/** An index drawn with probabilities exp(logW). */
export function sampleIndex(logW: ArrayLike<number>, rng: SeededRandom): number {
  let u = rng.float();
  for (let i = 0; i < logW.length; i++) {
    u -= Math.exp(logW[i]);
    if (u < 0) return i;
  }
  return logW.length - 1;
}
