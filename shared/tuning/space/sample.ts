// One random point of a search space, the names a trial's parameters go by, and the
// environment variable each is passed in. Pure: the only randomness is the SeededRandom
// passed in, consumed in parameter order, so a seed replays the same assignment.

import type { SeededRandom } from '../../random.ts';
import type { Assignment, DoubleParam, IntParam, NormalParam, Param, ParamValue, SearchSpace } from './types.ts';

/** `parent.child` for a parameter nested under a choice of `parent`; the name at the top. */
export function fullName(prefix: string, name: string): string {
  return prefix === '' ? name : `${prefix}.${name}`;
}

/** Every full name that can appear in an assignment, each once, in the order of the space. */
export function paramNames(space: SearchSpace): string[] {
  const names = new Set<string>();
  const walk = (level: SearchSpace, prefix: string): void => {
    for (const param of level.params) {
      const name = fullName(prefix, param.name);
      names.add(name);
      if (param.kind === 'categorical') {
        for (const choice of param.choices) if (choice.sub) walk(choice.sub, name);
      }
    }
  };
  walk(space, '');
  return [...names];
}

/** `optimizer.lr` → `CAIRN_PARAM_OPTIMIZER_LR`: a name any shell and any language can read. */
export function envName(name: string): string {
  return `CAIRN_PARAM_${name.toUpperCase().replace(/[^A-Z0-9]/g, '_')}`;
}

/**
 * Drops the binary noise of float arithmetic (0.1 * 3 = 0.30000000000000004, exp(log(0.001))
 * = 0.0009999999999999998), so a trial gets the value a person would have written.
 */
export function tidy(x: number): number {
  return Number.isFinite(x) && x !== 0 ? Number(x.toPrecision(15)) : x;
}

/** The nearest multiple of q (NNI's q* types). */
export function quantize(x: number, q: number): number {
  return tidy(Math.round(x / q) * q);
}

export function sampleAssignment(space: SearchSpace, rng: SeededRandom): Assignment {
  const out: Record<string, ParamValue> = {};
  sampleLevel(space, '', rng, out);
  return out;
}

function sampleLevel(space: SearchSpace, prefix: string, rng: SeededRandom, out: Record<string, ParamValue>): void {
  for (const param of space.params) {
    const name = fullName(prefix, param.name);
    if (param.kind === 'categorical') {
      const choice = rng.pick(param.choices);
      out[name] = choice.value;
      // The chosen branch's parameters right after it, so the draw order is the space's order.
      if (choice.sub) sampleLevel(choice.sub, name, rng, out);
    } else {
      out[name] = sampleValue(param, rng);
    }
  }
}

export function sampleValue(param: Exclude<Param, { kind: 'categorical' }>, rng: SeededRandom): number {
  switch (param.kind) {
    case 'double':
      return sampleDouble(param, rng);
    case 'int':
      return sampleInt(param, rng);
    case 'normal':
      return sampleNormal(param, rng);
  }
}

function clip(x: number, low: number, high: number): number {
  return Math.min(high, Math.max(low, x));
}

function sampleDouble(p: DoubleParam, rng: SeededRandom): number {
  const u = rng.float();
  const x = p.log ? Math.exp(Math.log(p.low) + u * (Math.log(p.high) - Math.log(p.low))) : p.low + u * (p.high - p.low);
  // Rounded then clipped, as NNI's quniform does: the ends stay reachable, nothing leaves the range.
  return clip(p.q !== undefined ? quantize(x, p.q) : x, p.low, p.high);
}

function sampleInt(p: IntParam, rng: SeededRandom): number {
  const count = Math.floor((p.high - p.low) / p.step) + 1;
  if (!p.log) return p.low + p.step * rng.int(count);
  // Log-uniform over [low - ½, high + ½] then snapped to the step, as Optuna does for a log
  // int, so the two ends get their fair share instead of half of it.
  const lo = Math.log(p.low - 0.5);
  const hi = Math.log(p.high + 0.5);
  const x = Math.exp(lo + rng.float() * (hi - lo));
  const k = clip(Math.round((x - p.low) / p.step), 0, count - 1);
  return p.low + p.step * k;
}

function sampleNormal(p: NormalParam, rng: SeededRandom): number {
  // Box-Muller; 1 - u keeps the logarithm's argument in (0, 1].
  const u1 = 1 - rng.float();
  const u2 = rng.float();
  const z = Math.sqrt(-2 * Math.log(u1)) * Math.cos(2 * Math.PI * u2);
  const x = p.mu + p.sigma * z;
  const v = p.log ? Math.exp(x) : x;
  return p.q !== undefined ? quantize(v, p.q) : v;
}
