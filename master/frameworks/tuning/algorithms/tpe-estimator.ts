// A Parzen estimator over the whole unit cube: one kernel component per observation plus the
// prior, each component a product of one-dimensional kernels. Multivariate TPE samples and
// scores whole points with it (a draw picks one component for all coordinates, so the
// dimensions stay correlated as the good trials were); univariate TPE uses only its
// per-coordinate marginals. A coordinate an observation did not use (a nested parameter of
// another choice) is left out of that coordinate's kernels: in a joint component it is
// replaced by the coordinate's marginal over the observations that did use it.

import type { SeededRandom } from '../../../../shared/random.ts';
import { activeGiven, cellOf, INACTIVE_COORDINATE, type Dimension, type EncodedPoint } from '../space/unit-cube.ts';
import {
  categoricalKernels,
  logSumExp,
  multivariateSigma,
  neighbourBandwidthKernels,
  numericLogDensity,
  sampleCategorical,
  sampleIndex,
  sampleNumeric,
  sharedBandwidthKernels,
  type NumericKernels,
} from './tpe-parzen.ts';

export interface ParzenOptions {
  readonly priorWeight: number;
  readonly considerEndpoints: boolean;
  readonly multivariate: boolean;
}

export interface EstimatorPoint {
  readonly point: readonly number[];
  readonly active: readonly boolean[];
}

/** One coordinate's kernels over the observations that use it, the prior's last. */
interface Coordinate {
  /** For each observation, its kernel here, or -1 where it does not use the coordinate. */
  readonly slot: Int32Array;
  readonly numeric?: NumericKernels;
  /** Log probability rows (categorical coordinates). */
  readonly rows?: Float64Array[];
  /** log weights of the kernels as a mixture of their own (the coordinate's marginal). */
  readonly marginalLogW: Float64Array;
}

export class ParzenEstimator {
  private readonly n: number;
  /** log weights of the n components and the prior, normalised. */
  private readonly logW: Float64Array;
  private readonly coords: Coordinate[];

  /** `weights`: one per observation, unnormalised; the prior gets `priorWeight` beside them. */
  constructor(
    private readonly dims: readonly Dimension[],
    observations: readonly EstimatorPoint[],
    weights: readonly number[],
    opts: ParzenOptions,
  ) {
    const n = observations.length;
    this.n = n;
    const w = [...weights, opts.priorWeight];
    const total = w.reduce((a, b) => a + b, 0);
    this.logW = Float64Array.from(w, (x) => Math.log(x / total));
    const sigma = multivariateSigma(n, dims.length);
    this.coords = dims.map((dim, j) => {
      const slot = new Int32Array(n).fill(-1);
      const values: number[] = [];
      const memberLogW: number[] = [];
      observations.forEach((o, k) => {
        if (!o.active[j]) return;
        slot[k] = values.length;
        values.push(o.point[j]);
        memberLogW.push(this.logW[k]);
      });
      memberLogW.push(this.logW[n]);
      const norm = logSumExp(memberLogW);
      const marginalLogW = Float64Array.from(memberLogW, (x) => x - norm);
      const p = dim.param;
      if (p.kind === 'categorical') {
        const choices = p.choices.length;
        const observed = values.map((u) => Math.min(choices - 1, Math.floor(u * choices)));
        return { slot, rows: categoricalKernels(observed, choices, opts.priorWeight), marginalLogW };
      }
      const numeric = opts.multivariate ? sharedBandwidthKernels(values, sigma) : neighbourBandwidthKernels(values, opts.considerEndpoints);
      return { slot, numeric, marginalLogW };
    });
  }

  /** A point drawn from the joint mixture; coordinates its choices leave inactive are not drawn. */
  sample(rng: SeededRandom): EncodedPoint {
    const k = sampleIndex(this.logW, rng);
    const point = new Array<number>(this.dims.length).fill(INACTIVE_COORDINATE);
    const active = new Array<boolean>(this.dims.length).fill(false);
    this.dims.forEach((_, j) => {
      if (!activeGiven(this.dims, j, point, active)) return;
      const c = this.coords[j];
      const s = k === this.n ? c.marginalLogW.length - 1 : c.slot[k] >= 0 ? c.slot[k] : sampleIndex(c.marginalLogW, rng);
      point[j] = this.draw(j, s, rng);
      active[j] = true;
    });
    return { point, active };
  }

  /** The log score of x under the joint mixture, over the coordinates x uses (see numericLogDensity). */
  logScore(x: EstimatorPoint): number {
    const comp = Float64Array.from(this.logW);
    this.dims.forEach((_, j) => {
      if (!x.active[j]) return;
      const c = this.coords[j];
      const dens = this.kernelDensities(j, x.point[j]);
      const prior = dens[dens.length - 1];
      let marginal = NaN;
      for (let k = 0; k < this.n; k++) {
        const s = c.slot[k];
        if (s >= 0) comp[k] += dens[s];
        else {
          if (Number.isNaN(marginal)) marginal = mixture(c.marginalLogW, dens);
          comp[k] += marginal;
        }
      }
      comp[this.n] += prior;
    });
    return logSumExp(comp);
  }

  /** A draw from one coordinate's marginal (univariate TPE). */
  sampleOne(j: number, rng: SeededRandom): number {
    return this.draw(j, sampleIndex(this.coords[j].marginalLogW, rng), rng);
  }

  /** The log score of u under one coordinate's marginal (univariate TPE). */
  logScoreOne(j: number, u: number): number {
    return mixture(this.coords[j].marginalLogW, this.kernelDensities(j, u));
  }

  private draw(j: number, s: number, rng: SeededRandom): number {
    const c = this.coords[j];
    if (c.rows) {
      const choice = sampleCategorical(c.rows[s], rng);
      return (choice + 0.5) / c.rows[s].length;
    }
    return sampleNumeric(c.numeric!, s, rng);
  }

  /** Each kernel's log score at u: numericLogDensity, or a choice's log probability. */
  private kernelDensities(j: number, u: number): Float64Array {
    const c = this.coords[j];
    if (c.rows) {
      const choices = c.rows[0].length;
      const choice = Math.min(choices - 1, Math.floor(u * choices));
      return Float64Array.from(c.rows, (row) => row[choice]);
    }
    const k = c.numeric!;
    const cell = cellOf(this.dims[j], u);
    const out = new Float64Array(k.mus.length);
    for (let s = 0; s < out.length; s++) out[s] = numericLogDensity(k, s, u, cell);
    return out;
  }
}

function mixture(logW: Float64Array, dens: Float64Array): number {
  const terms = new Float64Array(logW.length);
  for (let i = 0; i < terms.length; i++) terms[i] = logW[i] + dens[i];
  return logSumExp(terms);
}
