// Between a trial's parameters and a point of [0,1]^d, the one space the model-based
// algorithms (Sobol, TPE, the Gaussian process) work in: each parameter is one coordinate,
// mapped so that a uniform coordinate is the parameter's natural prior (log-uniform for log
// ranges, every integer and every choice equally likely, the normal's own distribution).
// Nested parameters have their own coordinates; a point of the cube decides which of them
// are active through their parent's choice.

import type { Assignment, Param, ParamValue, SearchSpace } from '../../../../shared/tuning/space/types.ts';
import { normCdf, normInv } from '../math/normal.ts';

/** One coordinate of the cube: a parameter, nested ones included. */
export interface Dimension {
  /** The full name (`optimizer.lr`). */
  readonly name: string;
  readonly param: Param;
  /** For a nested parameter: its parent's coordinate and the choice that makes it active. */
  readonly parent?: { readonly dimension: number; readonly choice: number };
}

/** A point with the parameters it activates; inactive coordinates hold INACTIVE_COORDINATE. */
export interface EncodedPoint {
  readonly point: number[];
  readonly active: boolean[];
}

/** Where an inactive (or absent) parameter sits, so that it pulls no model anywhere. */
export const INACTIVE_COORDINATE = 0.5;

/** A normal parameter's coordinate is kept off 0 and 1, where its value would be infinite. */
const NORMAL_CLIP = 1e-6;

const cache = new WeakMap<SearchSpace, readonly Dimension[]>();

/**
 * The cube's coordinates in a fixed order: the top-level parameters as listed, each
 * categorical followed at once by the parameters of its choices, depth first.
 */
export function dimensions(space: SearchSpace): readonly Dimension[] {
  let dims = cache.get(space);
  if (dims === undefined) {
    const out: Dimension[] = [];
    const walk = (s: SearchSpace, prefix: string, parent: Dimension['parent']): void => {
      for (const param of s.params) {
        const index = out.length;
        out.push(parent ? { name: prefix + param.name, param, parent } : { name: prefix + param.name, param });
        if (param.kind !== 'categorical') continue;
        param.choices.forEach((c, choice) => {
          if (c.sub) walk(c.sub, `${prefix}${param.name}.`, { dimension: index, choice });
        });
      }
    };
    walk(space, '', undefined);
    dims = Object.freeze(out);
    cache.set(space, dims);
  }
  return dims;
}

/** The parameters of a trial as a point of the cube; inactive ones at INACTIVE_COORDINATE. */
export function toUnit(space: SearchSpace, assignment: Assignment): number[] {
  return encode(dimensions(space), assignment).point;
}

/** The trial a point of the cube stands for: only the parameters its choices activate. */
export function fromUnit(space: SearchSpace, point: readonly number[]): Assignment {
  return decode(dimensions(space), point);
}

/**
 * A trial's point and which coordinates it uses. A value of the wrong type, or a choice the
 * parameter does not have, counts as absent: a model should not fail over one odd record.
 */
export function encode(dims: readonly Dimension[], assignment: Assignment): EncodedPoint {
  const point = new Array<number>(dims.length).fill(INACTIVE_COORDINATE);
  const active = new Array<boolean>(dims.length).fill(false);
  const chosen = new Array<number>(dims.length).fill(-1);
  dims.forEach((dim, i) => {
    if (dim.parent && chosen[dim.parent.dimension] !== dim.parent.choice) return;
    const value = assignment[dim.name];
    if (value === undefined) return;
    const p = dim.param;
    if (p.kind === 'categorical') {
      const c = p.choices.findIndex((choice) => choice.value === value);
      if (c < 0) return;
      chosen[i] = c;
      point[i] = (c + 0.5) / p.choices.length;
    } else {
      if (typeof value !== 'number' || Number.isNaN(value)) return;
      point[i] = clamp01(numericMap(p).fromRaw(value));
    }
    active[i] = true;
  });
  return { point, active };
}

/** The trial at a point (coordinates outside [0,1] are clipped). */
export function decode(dims: readonly Dimension[], point: readonly number[]): Assignment {
  if (point.length !== dims.length) throw new RangeError(`a point of ${point.length} coordinates for ${dims.length} dimensions`);
  const out: Record<string, ParamValue> = {};
  const chosen = new Array<number>(dims.length).fill(-1);
  dims.forEach((dim, i) => {
    if (dim.parent && chosen[dim.parent.dimension] !== dim.parent.choice) return;
    const u = clamp01(point[i]);
    const p = dim.param;
    if (p.kind === 'categorical') {
      const c = Math.min(p.choices.length - 1, Math.floor(u * p.choices.length));
      chosen[i] = c;
      out[dim.name] = p.choices[c].value;
    } else {
      const map = numericMap(p);
      out[dim.name] = map.round(map.toRaw(u));
    }
  });
  return out;
}

/**
 * The canonical form of a point: the point of the trial it decodes to (encode(decode(p)), up
 * to rounding), computed without building the trial, as a search scores thousands of them.
 */
export function snap(dims: readonly Dimension[], point: readonly number[]): EncodedPoint {
  const out = new Array<number>(dims.length).fill(INACTIVE_COORDINATE);
  const active = new Array<boolean>(dims.length).fill(false);
  const chosen = new Int32Array(dims.length).fill(-1);
  for (let j = 0; j < dims.length; j++) {
    const dim = dims[j];
    if (dim.parent && chosen[dim.parent.dimension] !== dim.parent.choice) continue;
    const u = clamp01(point[j]);
    const p = dim.param;
    if (p.kind === 'categorical') {
      const n = p.choices.length;
      const c = Math.min(n - 1, Math.floor(u * n));
      chosen[j] = c;
      out[j] = (c + 0.5) / n;
    } else {
      const map = numericMap(p);
      if (map.half > 0) out[j] = clamp01(map.fromRaw(map.round(map.toRaw(u))));
      else out[j] = p.kind === 'normal' ? Math.min(1 - NORMAL_CLIP, Math.max(NORMAL_CLIP, u)) : u;
    }
    active[j] = true;
  }
  return { point: out, active };
}

/**
 * Whether coordinate j is in use, given the coordinates before it (a nested parameter is,
 * when its parent is and the parent's coordinate falls on the parent's choice).
 */
export function activeGiven(dims: readonly Dimension[], j: number, point: readonly number[], active: readonly boolean[]): boolean {
  const parent = dims[j].parent;
  if (!parent) return true;
  if (!active[parent.dimension]) return false;
  const p = dims[parent.dimension].param;
  if (p.kind !== 'categorical') return false;
  const n = p.choices.length;
  return Math.min(n - 1, Math.floor(clamp01(point[parent.dimension]) * n)) === parent.choice;
}

/**
 * For a discrete numeric coordinate (integers, q-rounded values), the interval of coordinates
 * that decode to the same value as u: a density model's probability of that value is its mass
 * over this cell. Undefined for continuous and categorical coordinates.
 */
export function cellOf(dim: Dimension, u: number): readonly [number, number] | undefined {
  if (dim.param.kind === 'categorical') return undefined;
  const map = numericMap(dim.param);
  if (map.half === 0) return undefined;
  const v = map.round(map.toRaw(clamp01(u)));
  return [clamp01(map.fromRaw(v - map.half)), clamp01(map.fromRaw(v + map.half))];
}

interface NumericMap {
  /** The continuous value at coordinate u, before rounding. */
  toRaw(u: number): number;
  /** The coordinate of a continuous value (unclipped). */
  fromRaw(x: number): number;
  /** The value a trial gets: rounded to the parameter's grid, clipped to its range. */
  round(x: number): number;
  /** Half a grid step in raw units; 0 for a continuous parameter. */
  readonly half: number;
}

const maps = new WeakMap<Param, NumericMap>();

function numericMap(p: Exclude<Param, { kind: 'categorical' }>): NumericMap {
  let map = maps.get(p);
  if (map === undefined) {
    map = buildNumericMap(p);
    maps.set(p, map);
  }
  return map;
}

function buildNumericMap(p: Exclude<Param, { kind: 'categorical' }>): NumericMap {
  if (p.kind === 'normal') {
    const q = p.q;
    return {
      toRaw: (u) => {
        const z = p.mu + p.sigma * normInv(Math.min(1 - NORMAL_CLIP, Math.max(NORMAL_CLIP, u)));
        return p.log ? Math.exp(z) : z;
      },
      fromRaw: (x) => {
        if (p.log && !(x > 0)) return NORMAL_CLIP;
        const u = normCdf(((p.log ? Math.log(x) : x) - p.mu) / p.sigma);
        return Math.min(1 - NORMAL_CLIP, Math.max(NORMAL_CLIP, u));
      },
      round: (x) => (q ? tidy(Math.round(x / q) * q) : x),
      half: q ? q / 2 : 0,
    };
  }
  if (p.kind === 'int') {
    // Every integer owns an equal slice of the cube: the raw range reaches half a step past
    // each end, as Optuna's does, so the end values are not drawn half as often.
    const k = Math.max(1, Math.floor((p.high - p.low) / p.step + 1e-9) + 1);
    const top = p.low + (k - 1) * p.step;
    const lo = p.log ? Math.max(p.low - p.step / 2, p.low / 2) : p.low - p.step / 2;
    const hi = top + p.step / 2;
    return {
      ...rangeMap(lo, hi, p.log),
      round: (x) => tidy(p.low + Math.min(k - 1, Math.max(0, Math.round((x - p.low) / p.step))) * p.step),
      half: p.step / 2,
    };
  }
  const q = p.q;
  return {
    ...rangeMap(p.low, p.high, p.log),
    round: (x) => Math.min(p.high, Math.max(p.low, q ? tidy(Math.round(x / q) * q) : x)),
    half: q ? q / 2 : 0,
  };
}

function rangeMap(lo: number, hi: number, log: boolean): Pick<NumericMap, 'toRaw' | 'fromRaw'> {
  if (!log) return { toRaw: (u) => lo + u * (hi - lo), fromRaw: (x) => (hi > lo ? (x - lo) / (hi - lo) : 0.5) };
  const a = Math.log(lo);
  const b = Math.log(hi);
  return {
    toRaw: (u) => Math.exp(a + u * (b - a)),
    fromRaw: (x) => (!(x > 0) ? 0 : b > a ? (Math.log(x) - a) / (b - a) : 0.5),
  };
}

/** 0.30000000000000004 → 0.3: a grid value should read as the grid step suggests. */
function tidy(x: number): number {
  return Number(x.toPrecision(15));
}

function clamp01(u: number): number {
  return u < 0 ? 0 : u > 1 ? 1 : Number.isNaN(u) ? INACTIVE_COORDINATE : u;
}
