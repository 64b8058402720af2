// Sampling a search space: each kind of parameter in its range and with its distribution,
// nested choices named parent.child, the names a space can produce, and their env variables.

import { describe, expect, it } from 'vitest';
import { SeededRandom } from '../../shared/random.ts';
import { envName, paramNames, quantize, sampleAssignment, tidy } from '../../shared/tuning/space/sample.ts';
import type { Param, SearchSpace } from '../../shared/tuning/space/types.ts';

const draws = (param: Param, n: number, seed = 1): number[] => {
  const rng = new SeededRandom(seed);
  return Array.from({ length: n }, () => sampleAssignment({ params: [param] }, rng)[param.name] as number);
};
const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
const sd = (xs: number[]) => {
  const m = mean(xs);
  return Math.sqrt(mean(xs.map((x) => (x - m) ** 2)));
};

const nested: SearchSpace = {
  params: [
    { kind: 'double', name: 'dropout', low: 0, high: 0.5, log: false },
    {
      kind: 'categorical',
      name: 'optimizer',
      choices: [
        { value: 'sgd', sub: { params: [{ kind: 'double', name: 'lr', low: 0.01, high: 0.1, log: false }, { kind: 'categorical', name: 'momentum', choices: [{ value: 0.9 }] }] } },
        { value: 'adam', sub: { params: [{ kind: 'double', name: 'lr', low: 1e-4, high: 1e-2, log: true }] } },
        { value: 'none' },
      ],
    },
    { kind: 'int', name: 'layers', low: 1, high: 4, log: false, step: 1 },
  ],
};

describe('sampleAssignment', () => {
  it('is a function of the generator: same seed, same assignment; another seed, another', () => {
    const a = sampleAssignment(nested, new SeededRandom(7));
    expect(sampleAssignment(nested, new SeededRandom(7))).toEqual(a);
    const others = [8, 9, 10].map((s) => sampleAssignment(nested, new SeededRandom(s)));
    expect(others.some((o) => JSON.stringify(o) !== JSON.stringify(a))).toBe(true);
  });

  it('draws in parameter order from the one generator', () => {
    // An int of 10 values takes one draw: the same one SeededRandom.int(10) would.
    const space: SearchSpace = {
      params: [
        { kind: 'int', name: 'a', low: 0, high: 9, log: false, step: 1 },
        { kind: 'categorical', name: 'b', choices: [{ value: 'x' }, { value: 'y' }, { value: 'z' }] },
      ],
    };
    const r = new SeededRandom(3);
    const expected = { a: r.int(10), b: ['x', 'y', 'z'][r.int(3)] };
    expect(sampleAssignment(space, new SeededRandom(3))).toEqual(expected);
  });

  it('draws a uniform double inside its range, evenly', () => {
    const xs = draws({ kind: 'double', name: 'x', low: 2, high: 4, log: false }, 4000);
    expect(Math.min(...xs)).toBeGreaterThanOrEqual(2);
    expect(Math.max(...xs)).toBeLessThanOrEqual(4);
    expect(mean(xs)).toBeCloseTo(3, 1);
    expect(xs.filter((x) => x < 2.5).length / xs.length).toBeCloseTo(0.25, 1);
  });

  it('draws a log double evenly in log space', () => {
    const xs = draws({ kind: 'double', name: 'x', low: 1e-4, high: 1, log: true }, 4000);
    expect(Math.min(...xs)).toBeGreaterThanOrEqual(1e-4);
    expect(Math.max(...xs)).toBeLessThanOrEqual(1);
    // A quarter of the decades below 1e-3; uniform sampling would put 0.1% there.
    expect(xs.filter((x) => x < 1e-3).length / xs.length).toBeCloseTo(0.25, 1);
  });

  it('rounds a q double to multiples of q within its range, both ends reachable', () => {
    const xs = draws({ kind: 'double', name: 'x', low: 0, high: 1, log: false, q: 0.1 }, 3000);
    const seen = [...new Set(xs)].sort((a, b) => a - b);
    expect(seen).toEqual([0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1]);
    // Clipped like NNI's quniform: [0.05, 0.35] with q 0.2 gives 0.05 (0 clipped), 0.2 and 0.35 (0.4 clipped).
    const clipped = draws({ kind: 'double', name: 'x', low: 0.05, high: 0.35, log: false, q: 0.2 }, 500);
    expect([...new Set(clipped)].sort()).toEqual([0.05, 0.2, 0.35]);
  });

  it('draws ints on their steps, every one of them, log ints favouring the low end', () => {
    const xs = draws({ kind: 'int', name: 'n', low: 1, high: 9, log: false, step: 2 }, 2000);
    expect([...new Set(xs)].sort()).toEqual([1, 3, 5, 7, 9]);
    for (const v of [1, 3, 5, 7, 9]) expect(xs.filter((x) => x === v).length / xs.length).toBeCloseTo(0.2, 1);
    const logs = draws({ kind: 'int', name: 'n', low: 1, high: 1000, log: true, step: 1 }, 4000);
    expect(logs.every((x) => Number.isInteger(x) && x >= 1 && x <= 1000)).toBe(true);
    expect(logs.filter((x) => x <= 31).length / logs.length).toBeCloseTo(0.5, 1);
    expect(new Set(logs).has(1)).toBe(true);
    expect(Math.max(...logs)).toBeGreaterThan(900);
  });

  it('draws normals with their mu and sigma, log normals positive, q normals on the grid', () => {
    const xs = draws({ kind: 'normal', name: 'w', mu: 5, sigma: 2, log: false }, 8000);
    expect(mean(xs)).toBeCloseTo(5, 1);
    expect(sd(xs)).toBeCloseTo(2, 1);
    const logs = draws({ kind: 'normal', name: 'w', mu: 0, sigma: 1, log: true }, 4000);
    expect(logs.every((x) => x > 0)).toBe(true);
    expect(mean(logs.map(Math.log))).toBeCloseTo(0, 1);
    const qs = draws({ kind: 'normal', name: 'w', mu: 0, sigma: 3, log: false, q: 0.5 }, 1000);
    expect(qs.every((x) => Number.isInteger(x * 2))).toBe(true);
  });

  it('picks categorical values uniformly', () => {
    const space: SearchSpace = { params: [{ kind: 'categorical', name: 'c', choices: [{ value: 'a' }, { value: 1 }, { value: false }] }] };
    const rng = new SeededRandom(5);
    const xs = Array.from({ length: 3000 }, () => sampleAssignment(space, rng).c);
    for (const v of ['a', 1, false]) expect(xs.filter((x) => x === v).length / xs.length).toBeCloseTo(1 / 3, 1);
  });

  it("samples a nested choice's parameters as parent.child, and only the chosen one's", () => {
    const rng = new SeededRandom(11);
    const keys = new Set<string>();
    for (let i = 0; i < 300; i++) {
      const a = sampleAssignment(nested, rng);
      keys.add(Object.keys(a).join(','));
      if (a.optimizer === 'sgd') {
        expect(Object.keys(a)).toEqual(['dropout', 'optimizer', 'optimizer.lr', 'optimizer.momentum', 'layers']);
        expect(a['optimizer.lr']).toBeGreaterThanOrEqual(0.01);
        expect(a['optimizer.momentum']).toBe(0.9);
      } else if (a.optimizer === 'adam') {
        expect(Object.keys(a)).toEqual(['dropout', 'optimizer', 'optimizer.lr', 'layers']);
        expect(a['optimizer.lr']).toBeLessThanOrEqual(1e-2);
      } else {
        expect(Object.keys(a)).toEqual(['dropout', 'optimizer', 'layers']);
      }
    }
    expect(keys.size).toBe(3);
  });
});

describe('paramNames, envName, tidy', () => {
  it('lists every full name once, in the order of the space', () => {
    expect(paramNames(nested)).toEqual(['dropout', 'optimizer', 'optimizer.lr', 'optimizer.momentum', 'layers']);
  });

  it('makes an environment variable of a full name', () => {
    expect(envName('optimizer.lr')).toBe('CAIRN_PARAM_OPTIMIZER_LR');
    expect(envName('--batch-size')).toBe('CAIRN_PARAM___BATCH_SIZE');
    expect(envName('lr2')).toBe('CAIRN_PARAM_LR2');
  });

  it('drops float noise and rounds to q', () => {
    expect(0.1 * 3).not.toBe(0.3);
    expect(tidy(0.1 * 3)).toBe(0.3);
    expect(tidy(Math.exp(Math.log(0.001)))).toBe(0.001);
    expect(quantize(0.74, 0.25)).toBe(0.75);
    expect(quantize(7.3, 2)).toBe(8);
  });
});
