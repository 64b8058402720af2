// Grid search: the Cartesian product of every parameter's grid values, in a fixed order (the
// first parameter varies slowest, the last fastest; a categorical's values in the order given,
// each followed by the grid of the parameters nested under it). Trial i gets point i, decoded
// from i like the digits of a number, so nothing is stored and a resumed experiment goes on
// where it was; once every point was proposed there is nothing more to suggest.

import { badRequest } from '../../../../shared/errors.ts';
import { fullName, tidy } from '../../../../shared/tuning/space/sample.ts';
import type { Assignment, CategoricalParam, Param, ParamValue, SearchSpace } from '../../../../shared/tuning/space/types.ts';
import { checkSettingNames, numberSetting } from '../../../../shared/tuning/space/validate.ts';
import type { Algorithm, AlgorithmSettings } from './types.ts';

const PREFIX = 'algorithm.settings';
/** More points than a cluster would ever run is a mistake in the space, not a plan. */
export const MAX_GRID_POINTS = 100_000;

export function gridSearch(space: SearchSpace, settings: AlgorithmSettings, _seed: number): Algorithm {
  const gridPoints = readSettings(settings);
  const size = countLevel(space, '', gridPoints);
  if (size > MAX_GRID_POINTS) refuseSize(space, gridPoints, size);
  const grid = compileLevel(space, '', gridPoints);
  return {
    suggest(history, count) {
      const out: Assignment[] = [];
      for (let i = history.length; i < Math.min(grid.size, history.length + count); i++) {
        const point: Record<string, ParamValue> = {};
        pointOf(grid, i, point);
        out.push(point);
      }
      return out;
    },
  };
}

/** How many points the grid has (refusing what has no grid: a normal parameter). */
export function gridSize(space: SearchSpace, settings: AlgorithmSettings): number {
  return countLevel(space, '', readSettings(settings));
}

function readSettings(settings: AlgorithmSettings): number {
  checkSettingNames(settings, ['grid_points'], PREFIX);
  // Both ends are always in, so fewer than 2 points cannot be honoured.
  return numberSetting(settings, 'grid_points', PREFIX, 5, { integer: true, min: 2, max: MAX_GRID_POINTS });
}

type Numeric = Exclude<Param, CategoricalParam>;

/** How many values a numeric parameter takes, without listing them (an int range may be vast). */
function valueCount(p: Numeric, name: string, gridPoints: number): number {
  switch (p.kind) {
    case 'int':
      return Math.floor((p.high - p.low) / p.step) + 1;
    case 'double':
      if (p.q !== undefined) return Math.round(p.high / p.q) - Math.round(p.low / p.q) + 1;
      return doubleValues(p.low, p.high, p.log, gridPoints).length;
    case 'normal':
      throw badRequest(`parameters.${name}`, 'a normal parameter has no grid (it is unbounded): use random search or give it a range');
  }
}

function values(p: Numeric, gridPoints: number): number[] {
  const n = valueCount(p, p.name, gridPoints);
  if (p.kind === 'int') return Array.from({ length: n }, (_, k) => p.low + k * p.step);
  if (p.kind === 'double' && p.q !== undefined) {
    const { low, high, q } = p;
    // The values sampling can give: multiples of q, clipped to the range like NNI's quniform.
    const first = Math.round(low / q);
    return Array.from({ length: n }, (_, k) => Math.min(high, Math.max(low, tidy((first + k) * q))));
  }
  if (p.kind === 'double') return doubleValues(p.low, p.high, p.log, gridPoints);
  return [];
}

/** `count` points from low to high, both ends exact, evenly spaced (in log space for log). */
function doubleValues(low: number, high: number, log: boolean, count: number): number[] {
  if (low === high) return [low];
  const [a, b] = log ? [Math.log(low), Math.log(high)] : [low, high];
  const out: number[] = [];
  for (let k = 0; k < count; k++) {
    const x = k === 0 ? low : k === count - 1 ? high : tidy(log ? Math.exp(a + ((b - a) * k) / (count - 1)) : a + ((b - a) * k) / (count - 1));
    // A range too narrow for `count` distinct doubles gives each value once.
    if (out[out.length - 1] !== x) out.push(x);
  }
  return out;
}

function countLevel(space: SearchSpace, prefix: string, gridPoints: number): number {
  let size = 1;
  for (const p of space.params) {
    const name = fullName(prefix, p.name);
    size *= p.kind === 'categorical'
      ? p.choices.reduce((sum, c) => sum + (c.sub ? countLevel(c.sub, name, gridPoints) : 1), 0)
      : valueCount(p, name, gridPoints);
  }
  return size;
}

/** Names the parameter with the most values, or grid_points when a plain double has the most. */
function refuseSize(space: SearchSpace, gridPoints: number, size: number): never {
  let worst = { name: '', count: 0, double: false };
  const walk = (level: SearchSpace, prefix: string): void => {
    for (const p of level.params) {
      const name = fullName(prefix, p.name);
      const count = p.kind === 'categorical' ? p.choices.length : valueCount(p, name, gridPoints);
      if (count > worst.count) worst = { name, count, double: p.kind === 'double' && p.q === undefined };
      if (p.kind === 'categorical') for (const c of p.choices) if (c.sub) walk(c.sub, name);
    }
  };
  walk(space, '');
  const field = worst.double ? `${PREFIX}.grid_points` : `parameters.${worst.name}`;
  throw badRequest(
    field,
    `the grid has ${size} points, more than ${MAX_GRID_POINTS}; the largest axis is ${worst.name} with ${worst.count} values`,
  );
}

interface Axis {
  readonly name: string;
  /** Each value, with the grid of the parameters it brings (a nested choice). */
  readonly options: readonly { readonly value: ParamValue; readonly sub?: Level }[];
  /** Points under option j start at offsets[j]; the last entry is the axis' size. */
  readonly offsets: readonly number[];
}

interface Level {
  readonly axes: readonly Axis[];
  readonly size: number;
}

function compileLevel(space: SearchSpace, prefix: string, gridPoints: number): Level {
  const axes = space.params.map((p): Axis => {
    const name = fullName(prefix, p.name);
    const options: Axis['options'] = p.kind === 'categorical'
      ? p.choices.map((c) => (c.sub ? { value: c.value, sub: compileLevel(c.sub, name, gridPoints) } : { value: c.value }))
      : values(p, gridPoints).map((value) => ({ value }));
    const offsets = [0];
    for (const o of options) offsets.push(offsets[offsets.length - 1] + (o.sub?.size ?? 1));
    return { name, options, offsets };
  });
  return { axes, size: axes.reduce((n, a) => n * a.offsets[a.offsets.length - 1], 1) };
}

function pointOf(level: Level, index: number, out: Record<string, ParamValue>): void {
  // The digits of index, last axis fastest; then written first axis first, so the keys of an
  // assignment come in the order of the space.
  const digits: number[] = new Array(level.axes.length);
  let rest = index;
  for (let a = level.axes.length - 1; a >= 0; a--) {
    const size = level.axes[a].offsets[level.axes[a].offsets.length - 1];
    digits[a] = rest % size;
    rest = Math.floor(rest / size);
  }
  level.axes.forEach((axis, a) => {
    let j = 0;
    while (axis.offsets[j + 1] <= digits[a]) j++;
    const option = axis.options[j];
    out[axis.name] = option.value;
    if (option.sub) pointOf(option.sub, digits[a] - axis.offsets[j], out);
  });
}
