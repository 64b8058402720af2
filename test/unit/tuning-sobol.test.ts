// Quasi-random search: the Sobol sequence against its published first points and its net
// properties, the seed's digital shift, and the algorithm's determinism and refusals.

import { describe, expect, it } from 'vitest';
import { SeededRandom } from '../../shared/random.ts';
import type { SearchSpace } from '../../shared/tuning/space/types.ts';
import type { TrialObservation } from '../../master/frameworks/tuning/algorithms/types.ts';
import { SOBOL_MAX_DIMENSIONS, shiftedSobolPoint, sobolPoint } from '../../master/frameworks/tuning/algorithms/sobol-sequence.ts';
import { sobol } from '../../master/frameworks/tuning/algorithms/sobol.ts';
import { toUnit } from '../../master/frameworks/tuning/space/unit-cube.ts';
import { refusal } from '../harness/refusal.ts';

/** The L2-star discrepancy of points in [0,1]^d (Warnock's formula): lower is more even. */
function l2StarDiscrepancy(points: readonly (readonly number[])[]): number {
  const n = points.length;
  const d = points[0].length;
  let a = 0;
  let b = 0;
  for (const p of points) a += p.reduce((s, x) => s * (1 - x * x), 1);
  for (const p of points) for (const q of points) b += p.reduce((s, x, k) => s * (1 - Math.max(x, q[k])), 1);
  return Math.sqrt(3 ** -d - (2 ** (1 - d) / n) * a + b / (n * n));
}

const cube = (d: number): SearchSpace => ({ params: Array.from({ length: d }, (_, j) => ({ kind: 'double' as const, name: `x${j}`, low: 0, high: 1, log: false })) });

const done = (params: Record<string, number | string | boolean>, index: number): TrialObservation => ({ index, params, phase: 'succeeded', loss: 0, intermediate: [] });

describe('the unscrambled Sobol sequence', () => {
  it('starts with the published points (Joe & Kuo, in Gray-code order as SciPy gives them)', () => {
    const first = Array.from({ length: 8 }, (_, i) => sobolPoint(i, 3));
    expect(first).toEqual([
      [0, 0, 0],
      [0.5, 0.5, 0.5],
      [0.75, 0.25, 0.25],
      [0.25, 0.75, 0.75],
      [0.375, 0.375, 0.625],
      [0.875, 0.875, 0.125],
      [0.625, 0.125, 0.875],
      [0.125, 0.625, 0.375],
    ]);
    // Later dimensions, checked against scipy.stats.qmc.Sobol(d=40, scramble=False).
    expect(sobolPoint(5, 40).slice(36)).toEqual([0.125, 0.375, 0.875, 0.375]);
    expect(sobolPoint(11, 10)).toEqual([0.4375, 0.5625, 0.1875, 0.6875, 0.8125, 0.0625, 0.6875, 0.6875, 0.6875, 0.0625]);
  });

  it('holds at least 40 dimensions, each of whose first 2^m points fill the 2^m strata once', () => {
    expect(SOBOL_MAX_DIMENSIONS).toBeGreaterThanOrEqual(40);
    const m = 7;
    const points = Array.from({ length: 2 ** m }, (_, i) => sobolPoint(i, SOBOL_MAX_DIMENSIONS));
    for (let d = 0; d < SOBOL_MAX_DIMENSIONS; d++) {
      const strata = new Set(points.map((p) => Math.floor(p[d] * 2 ** m)));
      expect(strata.size, `dimension ${d + 1}`).toBe(2 ** m);
    }
  });

  it('is a (0, m, 2)-net in its first two dimensions: one point in every elementary box', () => {
    const n = 64;
    const points = Array.from({ length: n }, (_, i) => sobolPoint(i, 2));
    for (let k = 0; k <= 6; k++) {
      const boxes = new Set(points.map(([x, y]) => `${Math.floor(x * 2 ** k)},${Math.floor(y * 2 ** (6 - k))}`));
      expect(boxes.size).toBe(n);
    }
  });
});

describe('the shifted sequence', () => {
  it('keeps the strata, moves the origin, and differs by mask', () => {
    const masks = Uint32Array.from([0x9e3779b9, 0x12345678, 0xdeadbeef]);
    const points = Array.from({ length: 32 }, (_, i) => shiftedSobolPoint(i, masks));
    for (let d = 0; d < 3; d++) expect(new Set(points.map((p) => Math.floor(p[d] * 32))).size).toBe(32);
    expect(points[0].every((x) => x > 0 && x < 1)).toBe(true);
    expect(shiftedSobolPoint(3, Uint32Array.from([1, 2, 3]))).not.toEqual(points[3]);
  });

  it('spreads points more evenly than independent uniform draws', () => {
    const n = 128;
    const d = 4;
    const quasi: number[] = [];
    const random: number[] = [];
    for (let seed = 1; seed <= 5; seed++) {
      const alg = sobol(cube(d), {}, seed);
      quasi.push(l2StarDiscrepancy(alg.suggest([], n).map((a) => toUnit(cube(d), a))));
      const r = new SeededRandom(seed);
      random.push(l2StarDiscrepancy(Array.from({ length: n }, () => Array.from({ length: d }, () => r.float()))));
    }
    // For n = 128 in 4-d: uniform draws sit near 0.02; a shifted Sobol net well under half that.
    expect(Math.max(...quasi)).toBeLessThan(Math.min(...random));
    expect(Math.max(...quasi)).toBeLessThan(0.5 * (random.reduce((a, b) => a + b) / random.length));
  });
});

describe('sobol()', () => {
  const space: SearchSpace = {
    params: [
      { kind: 'double', name: 'lr', low: 1e-4, high: 1, log: true },
      { kind: 'categorical', name: 'opt', choices: [{ value: 'sgd', sub: { params: [{ kind: 'double', name: 'm', low: 0, high: 1, log: false }] } }, { value: 'adam' }] },
    ],
  };

  it('is deterministic, depends on the seed, and gives trial i the same point however batched', () => {
    const a = sobol(space, {}, 42).suggest([], 6);
    expect(sobol(space, {}, 42).suggest([], 6)).toEqual(a);
    expect(sobol(space, {}, 43).suggest([], 6)).not.toEqual(a);
    const first = sobol(space, {}, 42).suggest([], 2);
    const rest = sobol(space, {}, 42).suggest(first.map(done), 4);
    expect([...first, ...rest]).toEqual(a);
    // Katib's random_state replaces the seed.
    expect(sobol(space, { random_state: '42' }, 7).suggest([], 6)).toEqual(a);
  });

  it('gives nested parameters only with their choice', () => {
    for (const t of sobol(space, {}, 1).suggest([], 32)) {
      expect('opt.m' in t).toBe(t.opt === 'sgd');
    }
  });

  it('refuses more parameters than its table holds, and unknown settings, naming the field', () => {
    const wide = refusal(() => sobol(cube(SOBOL_MAX_DIMENSIONS + 1), {}, 1));
    expect(wide.code).toBe('CAIRN_BAD_REQUEST');
    expect(wide.field).toBe('parameters');
    expect(() => sobol(cube(SOBOL_MAX_DIMENSIONS), {}, 1)).not.toThrow();
    expect(refusal(() => sobol(cube(2), { scramble: 'true' }, 1)).field).toBe('algorithm.settings.scramble');
    expect(refusal(() => sobol(cube(2), { random_state: '-1' }, 1)).field).toBe('algorithm.settings.random_state');
  });
});
