// A Gaussian-process regression model over unit-cube points: Matérn-5/2 kernel with one
// length scale per parameter (ARD), a signal variance and a noise variance, fitted by
// maximising the log marginal likelihood (with weak priors, so that ten points cannot drive a
// length scale to nothing) by a few dozen resilient-backpropagation steps on its gradient.
// Categorical parameters enter through a Hamming term (1 when two points differ in the
// choice), which is a one-hot encoding with one length scale shared by the choices.

import { cholesky, choleskyInverse, choleskySolve } from '../math/cholesky.ts';

/** A point as the kernel sees it: a unit coordinate, or a choice index (-1 when inactive). */
export type Features = Float64Array;

export interface GpHyper {
  readonly logLengths: Float64Array;
  readonly logSignal: number;
  readonly logNoise: number;
}

const SQRT5 = Math.sqrt(5);
const LOG_2PI = Math.log(2 * Math.PI);

/** Box bounds, in log space, for length scales, signal variance and noise variance. */
const LOG_LENGTH = [Math.log(0.01), Math.log(30)] as const;
const LOG_SIGNAL = [Math.log(0.05), Math.log(20)] as const;
const LOG_NOISE = [Math.log(1e-6), Math.log(1)] as const;
/** Weak log-normal priors: length scales around half the cube, signal variance around 1. */
const LENGTH_PRIOR = { mean: Math.log(0.5), sd: 1.5 };
const SIGNAL_PRIOR = { mean: 0, sd: 1.5 };

/** Matérn-5/2 covariance at scaled distance r, per unit of signal variance. */
function matern(r: number): number {
  return (1 + SQRT5 * r + (5 / 3) * r * r) * Math.exp(-SQRT5 * r);
}

/** Squared scaled distance between two points. */
function scaledDist2(a: Features, b: Features, isCat: Uint8Array, invL2: Float64Array): number {
  let s = 0;
  for (let j = 0; j < a.length; j++) {
    const d = isCat[j] ? (a[j] === b[j] ? 0 : 1) : a[j] - b[j];
    s += d * d * invL2[j];
  }
  return s;
}

function inverseSquaredLengths(h: GpHyper): Float64Array {
  return h.logLengths.map((l) => Math.exp(-2 * l));
}

/**
 * Every pair's squared difference per coordinate, computed once per fit: the likelihood is
 * evaluated some forty times on the same points, and only the length scales change.
 */
class PairDiffs {
  readonly n: number;
  readonly d: number;
  /** Pair (a, b), b < a, at ((a(a-1))/2 + b) * d. */
  readonly sq: Float64Array;

  constructor(xs: readonly Features[], isCat: Uint8Array) {
    this.n = xs.length;
    this.d = isCat.length;
    this.sq = new Float64Array(((this.n * (this.n - 1)) / 2) * this.d);
    let o = 0;
    for (let a = 0; a < this.n; a++) {
      for (let b = 0; b < a; b++) {
        for (let j = 0; j < this.d; j++, o++) {
          const diff = isCat[j] ? (xs[a][j] === xs[b][j] ? 0 : 1) : xs[a][j] - xs[b][j];
          this.sq[o] = diff * diff;
        }
      }
    }
  }
}

/** The noisy covariance matrix of the points (row-major), and each pair's scaled distance. */
function covariance(p: PairDiffs, h: GpHyper): { k: Float64Array; r: Float64Array } {
  const { n, d, sq } = p;
  const invL2 = inverseSquaredLengths(h);
  const sf2 = Math.exp(h.logSignal);
  const k = new Float64Array(n * n);
  const r = new Float64Array((n * (n - 1)) / 2);
  let o = 0;
  let pair = 0;
  for (let a = 0; a < n; a++) {
    k[a * n + a] = sf2 + Math.exp(h.logNoise);
    for (let b = 0; b < a; b++, pair++) {
      let r2 = 0;
      for (let j = 0; j < d; j++, o++) r2 += sq[o] * invL2[j];
      const ra = Math.sqrt(r2);
      r[pair] = ra;
      const v = sf2 * matern(ra);
      k[a * n + b] = v;
      k[b * n + a] = v;
    }
  }
  return { k, r };
}

/** Factor K, adding jitter when rounding has made it indefinite. */
function factor(k: Float64Array, n: number): Float64Array | undefined {
  let l = cholesky(k, n);
  for (let jitter = 1e-8; l === undefined && jitter <= 1e-2; jitter *= 100) {
    const kj = Float64Array.from(k);
    for (let i = 0; i < n; i++) kj[i * n + i] += jitter;
    l = cholesky(kj, n);
  }
  return l;
}

const pack = (d: number, t: Float64Array): GpHyper => ({ logLengths: t.slice(0, d), logSignal: t[d], logNoise: t[d + 1] });

function clampTheta(t: Float64Array, d: number): void {
  for (let j = 0; j < d; j++) t[j] = Math.min(LOG_LENGTH[1], Math.max(LOG_LENGTH[0], t[j]));
  t[d] = Math.min(LOG_SIGNAL[1], Math.max(LOG_SIGNAL[0], t[d]));
  t[d + 1] = Math.min(LOG_NOISE[1], Math.max(LOG_NOISE[0], t[d + 1]));
}

/**
 * The log marginal likelihood plus log priors at θ = (log ℓ_1..d, log σf², log σn²), and its
 * gradient when asked: ½ tr((ααᵀ - K⁻¹) ∂K/∂θ).
 */
function objective(t: Float64Array, p: PairDiffs, y: Float64Array, withGrad: boolean): { value: number; grad?: Float64Array } {
  const { n, d, sq } = p;
  const h = pack(d, t);
  const { k, r } = covariance(p, h);
  const l = factor(k, n);
  if (!l) return { value: -Infinity };
  const alpha = choleskySolve(l, n, y);
  let value = -0.5 * n * LOG_2PI;
  for (let i = 0; i < n; i++) value += -0.5 * y[i] * alpha[i] - Math.log(l[i * n + i]);
  for (let j = 0; j < d; j++) value -= 0.5 * ((t[j] - LENGTH_PRIOR.mean) / LENGTH_PRIOR.sd) ** 2;
  value -= 0.5 * ((t[d] - SIGNAL_PRIOR.mean) / SIGNAL_PRIOR.sd) ** 2;
  if (!withGrad) return { value };

  const inv = choleskyInverse(l, n);
  const grad = new Float64Array(d + 2);
  const invL2 = inverseSquaredLengths(h);
  const sf2 = Math.exp(h.logSignal);
  const noise = Math.exp(h.logNoise);
  let o = 0;
  let pair = 0;
  for (let a = 0; a < n; a++) {
    const waa = alpha[a] * alpha[a] - inv[a * n + a];
    grad[d] += 0.5 * waa * sf2;
    grad[d + 1] += 0.5 * waa * noise;
    for (let b = 0; b < a; b++, pair++) {
      // Both triangles: the factor ½ cancels against the pair counted twice.
      const w = alpha[a] * alpha[b] - inv[a * n + b];
      const ra = r[pair];
      const e = Math.exp(-SQRT5 * ra);
      grad[d] += w * sf2 * (1 + SQRT5 * ra + (5 / 3) * ra * ra) * e;
      // ∂k/∂log ℓ_j = σf² (5/3)(1 + √5 r) e^{-√5 r} · s_j, s_j the coordinate's share of r².
      const g = w * sf2 * (5 / 3) * (1 + SQRT5 * ra) * e;
      for (let j = 0; j < d; j++, o++) grad[j] += g * sq[o] * invL2[j];
    }
  }
  for (let j = 0; j < d; j++) grad[j] -= (t[j] - LENGTH_PRIOR.mean) / LENGTH_PRIOR.sd ** 2;
  grad[d] -= (t[d] - SIGNAL_PRIOR.mean) / SIGNAL_PRIOR.sd ** 2;
  return { value, grad };
}

/**
 * Hyperparameters for (xs, y), y already normalised. Deterministic: a few fixed starting
 * length scales, the best of them refined by iRprop⁻ (sign-based steps that grow while the
 * gradient keeps its sign), fewer steps as the data grows so a fit stays cheap.
 */
export function fitGp(xs: readonly Features[], y: Float64Array, isCat: readonly boolean[]): GpHyper {
  const d = isCat.length;
  const pairs = new PairDiffs(xs, Uint8Array.from(isCat, Number));
  let best: Float64Array | undefined;
  let bestValue = -Infinity;
  for (const length of [0.15, 0.4, 1]) {
    const t = new Float64Array(d + 2).fill(Math.log(length));
    t[d] = 0;
    t[d + 1] = Math.log(1e-3);
    const v = objective(t, pairs, y, false).value;
    if (best === undefined || v > bestValue) {
      best = t;
      bestValue = v;
    }
  }
  const n = xs.length;
  const steps = n <= 60 ? 50 : n <= 120 ? 35 : 20;
  const t = Float64Array.from(best!);
  const delta = new Float64Array(d + 2).fill(0.1);
  const prev = new Float64Array(d + 2);
  for (let it = 0; it < steps; it++) {
    const { value, grad } = objective(t, pairs, y, true);
    if (!grad) break;
    if (value > bestValue) {
      bestValue = value;
      best = Float64Array.from(t);
    }
    for (let i = 0; i < t.length; i++) {
      let g = grad[i];
      if (g * prev[i] > 0) delta[i] = Math.min(delta[i] * 1.2, 1);
      else if (g * prev[i] < 0) {
        delta[i] = Math.max(delta[i] * 0.5, 1e-3);
        g = 0;
      }
      t[i] += Math.sign(g) * delta[i];
      prev[i] = g;
    }
    clampTheta(t, d);
  }
  const last = objective(t, pairs, y, false).value;
  if (last > bestValue) best = t;
  return pack(d, best!);
}

/** The posterior of the latent function given (xs, y) and fixed hyperparameters. */
export class GpPosterior {
  private readonly n: number;
  private readonly d: number;
  private readonly l: Float64Array;
  private readonly alpha: Float64Array;
  private readonly invL2: Float64Array;
  private readonly signal: number;
  private readonly isCat: Uint8Array;
  /** The points, one row each, contiguous: predict() reads them all for every candidate. */
  private readonly flat: Float64Array;
  private readonly scratch: Float64Array;

  constructor(xs: readonly Features[], y: Float64Array, isCat: readonly boolean[], hyper: GpHyper) {
    this.n = xs.length;
    this.d = isCat.length;
    this.isCat = Uint8Array.from(isCat, Number);
    this.invL2 = inverseSquaredLengths(hyper);
    this.signal = Math.exp(hyper.logSignal);
    this.flat = new Float64Array(this.n * this.d);
    xs.forEach((x, i) => this.flat.set(x, i * this.d));
    this.scratch = new Float64Array(this.n);
    const pairs = new PairDiffs(xs, this.isCat);
    let l = factor(covariance(pairs, hyper).k, this.n);
    if (!l) {
      // Only with pathological data: fall back to a noisier model rather than fail.
      l = factor(covariance(pairs, { ...hyper, logNoise: 0 }).k, this.n)!;
    }
    this.l = l;
    this.alpha = choleskySolve(l, this.n, y);
  }

  /** Mean and variance (of the function, noise excluded) at x. */
  predict(x: Features): { mean: number; variance: number } {
    const { n, d, flat, isCat, invL2, l } = this;
    const v = this.scratch;
    let mean = 0;
    for (let i = 0, o = 0; i < n; i++) {
      let r2 = 0;
      for (let j = 0; j < d; j++, o++) {
        const diff = isCat[j] ? (x[j] === flat[o] ? 0 : 1) : x[j] - flat[o];
        r2 += diff * diff * invL2[j];
      }
      const k = this.signal * matern(Math.sqrt(r2));
      v[i] = k;
      mean += k * this.alpha[i];
    }
    // v ← L⁻¹ k*, in place; the variance explained is |v|².
    let explained = 0;
    for (let i = 0; i < n; i++) {
      const ri = i * n;
      let s = v[i];
      for (let k = 0; k < i; k++) s -= l[ri + k] * v[k];
      s /= l[ri + i];
      v[i] = s;
      explained += s * s;
    }
    return { mean, variance: Math.max(0, this.signal - explained) };
  }
}
