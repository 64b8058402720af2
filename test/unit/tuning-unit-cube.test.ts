// The unit cube the model-based tuning algorithms search in: one coordinate per parameter
// (nested ones included, in a fixed order), the maps both ways, and the canonical snap.

import { describe, expect, it } from 'vitest';
import { SeededRandom } from '../../shared/random.ts';
import type { SearchSpace } from '../../shared/tuning/space/types.ts';
import { cellOf, decode, dimensions, encode, fromUnit, snap, toUnit } from '../../master/frameworks/tuning/space/unit-cube.ts';
import { normCdf } from '../../master/frameworks/tuning/math/normal.ts';

const space: SearchSpace = {
  params: [
    { kind: 'double', name: 'lr', low: 1e-4, high: 1e-1, log: true },
    { kind: 'int', name: 'layers', low: 1, high: 4, log: false, step: 1 },
    {
      kind: 'categorical',
      name: 'optimizer',
      choices: [
        { value: 'sgd', sub: { params: [{ kind: 'double', name: 'momentum', low: 0, high: 0.99, log: false }] } },
        { value: 'adam', sub: { params: [{ kind: 'int', name: 'warmup', low: 8, high: 1024, log: true, step: 1 }] } },
        { value: 'lbfgs' },
      ],
    },
    { kind: 'categorical', name: 'bn', choices: [{ value: true }, { value: false }] },
    { kind: 'double', name: 'dropout', low: 0, high: 0.5, log: false, q: 0.1 },
    { kind: 'normal', name: 'shift', mu: 1, sigma: 2, log: false, q: 0.5 },
  ],
};

describe('dimensions', () => {
  it('lists every parameter, each nested one right after its parent, by full name', () => {
    expect(dimensions(space).map((d) => d.name)).toEqual(['lr', 'layers', 'optimizer', 'optimizer.momentum', 'optimizer.warmup', 'bn', 'dropout', 'shift']);
    expect(dimensions(space)[3].parent).toEqual({ dimension: 2, choice: 0 });
    expect(dimensions(space)[4].parent).toEqual({ dimension: 2, choice: 1 });
  });
});

describe('fromUnit', () => {
  const at = (point: number[]) => fromUnit(space, point);
  const base = [0.5, 0.5, 0.1, 0.5, 0.5, 0.1, 0.5, 0.5];

  it('reads log ranges in log space and rounds q values to the grid', () => {
    expect(at([0, ...base.slice(1)]).lr).toBeCloseTo(1e-4, 12);
    expect(at([1, ...base.slice(1)]).lr).toBeCloseTo(1e-1, 12);
    expect(at(base).lr).toBeCloseTo(Math.sqrt(1e-4 * 1e-1), 12);
    expect(at([...base.slice(0, 6), 0.61, 0.5]).dropout).toBe(0.3); // not 0.30000000000000004
    expect(at([...base.slice(0, 6), 1, 0.5]).dropout).toBe(0.5);
  });

  it('gives every integer and every choice an equal share of the coordinate', () => {
    const layers = new Map<number, number>();
    const opt = new Map<string, number>();
    for (let i = 0; i < 1200; i++) {
      const u = (i + 0.5) / 1200;
      const a = at([0.5, u, u, 0.5, 0.5, 0.5, 0.5, 0.5]);
      layers.set(a.layers as number, (layers.get(a.layers as number) ?? 0) + 1);
      opt.set(a.optimizer as string, (opt.get(a.optimizer as string) ?? 0) + 1);
    }
    expect([...layers.entries()].sort()).toEqual([[1, 300], [2, 300], [3, 300], [4, 300]]);
    expect(Object.fromEntries(opt)).toEqual({ sgd: 400, adam: 400, lbfgs: 400 });
  });

  it('reads a normal parameter through the inverse normal CDF, clipped off 0 and 1', () => {
    const shift = (u: number) => at([...base.slice(0, 7), u]).shift as number;
    expect(shift(0.5)).toBe(1);
    expect(shift(normCdf(1))).toBe(3); // mu + sigma
    expect(shift(normCdf(-1.3))).toBe(-1.5); // 1 - 2.6 = -1.6, to the 0.5 grid
    expect(Number.isFinite(shift(0))).toBe(true);
    expect(Number.isFinite(shift(1))).toBe(true);
  });

  it('gives nested parameters only with their parent choice, under their full names', () => {
    expect(Object.keys(at([0.5, 0.5, 0.1, 0.5, 0.5, 0.1, 0.5, 0.5])).sort()).toEqual(['bn', 'dropout', 'layers', 'lr', 'optimizer', 'optimizer.momentum', 'shift']);
    const adam = at([0.5, 0.5, 0.5, 0.5, 0, 0.1, 0.5, 0.5]);
    expect(adam.optimizer).toBe('adam');
    expect(adam['optimizer.warmup']).toBe(8);
    expect(adam['optimizer.momentum']).toBeUndefined();
    expect(Object.keys(at([0.5, 0.5, 0.9, 0.5, 0.5, 0.1, 0.5, 0.5]))).not.toContain('optimizer.warmup');
  });
});

describe('toUnit', () => {
  it('inverts fromUnit: fromUnit(toUnit(a)) is a, for trials drawn all over the cube', () => {
    const r = new SeededRandom(7);
    for (let i = 0; i < 500; i++) {
      const a = fromUnit(space, dimensions(space).map(() => r.float()));
      expect(fromUnit(space, toUnit(space, a))).toEqual(a);
    }
  });

  it('round-trips continuous normal and log values to within rounding', () => {
    const s: SearchSpace = { params: [{ kind: 'normal', name: 'z', mu: 0, sigma: 1, log: true }, { kind: 'double', name: 'c', low: 0.001, high: 1000, log: true }] };
    const r = new SeededRandom(3);
    for (let i = 0; i < 200; i++) {
      const a = fromUnit(s, [r.float(), r.float()]);
      const b = fromUnit(s, toUnit(s, a));
      expect((b.z as number) / (a.z as number)).toBeCloseTo(1, 9);
      expect((b.c as number) / (a.c as number)).toBeCloseTo(1, 9);
    }
  });

  it('puts inactive and unknown parameters at 0.5 and marks them inactive', () => {
    const dims = dimensions(space);
    const e = encode(dims, { lr: 0.01, layers: 3, optimizer: 'lbfgs', bn: 'maybe', dropout: 0.2, shift: 1 });
    expect(e.point[1]).toBeCloseTo(5 / 8, 12); // the third of four integers
    expect(e.point[2]).toBeCloseTo(5 / 6, 12);
    expect([e.point[3], e.point[4], e.point[5]]).toEqual([0.5, 0.5, 0.5]);
    expect(e.active).toEqual([true, true, true, false, false, false, true, true]);
    // A nested value whose parent picked another choice is inactive too.
    expect(encode(dims, { optimizer: 'adam', 'optimizer.momentum': 0.9 }).active[3]).toBe(false);
  });
});

describe('snap', () => {
  it('is encode(decode(point)): the point of the trial a point stands for', () => {
    const dims = dimensions(space);
    const r = new SeededRandom(11);
    for (let i = 0; i < 300; i++) {
      const p = dims.map(() => r.float() * 1.2 - 0.1);
      const s = snap(dims, p);
      const e = encode(dims, decode(dims, p));
      expect(s.active).toEqual(e.active);
      s.point.forEach((u, j) => expect(u).toBeCloseTo(e.point[j], 9));
      expect(decode(dims, s.point)).toEqual(decode(dims, p));
    }
  });

  it('gives a discrete value the cell of coordinates that decode to it', () => {
    const dims = dimensions(space);
    expect(cellOf(dims[1], 0.3)).toEqual([0.25, 0.5]); // layers = 2
    expect(cellOf(dims[0], 0.3)).toBeUndefined(); // continuous
    const [a, b] = cellOf(dims[6], 0.5)!; // dropout 0.3: raw [0.25, 0.35]
    expect(a).toBeCloseTo(0.5, 12);
    expect(b).toBeCloseTo(0.7, 12);
  });
});
