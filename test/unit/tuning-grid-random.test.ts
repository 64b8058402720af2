// Grid and random search: the grid's points in their fixed order, trial i always point i,
// nothing once exhausted; random search seeded per trial, so batching and resuming do not
// change what trial i gets. Settings refused by name.

import { describe, expect, it } from 'vitest';
import { refusal } from '../harness/refusal.ts';
import { SeededRandom } from '../../shared/random.ts';
import { gridSearch, gridSize } from '../../master/frameworks/tuning/algorithms/grid-search.ts';
import { randomSearch, trialRandom } from '../../master/frameworks/tuning/algorithms/random-search.ts';
import type { TrialObservation } from '../../master/frameworks/tuning/algorithms/types.ts';
import { sampleAssignment } from '../../shared/tuning/space/sample.ts';
import type { SearchSpace } from '../../shared/tuning/space/types.ts';

/** n trials created so far (the algorithms look only at how many there are). */
const created = (n: number): TrialObservation[] =>
  Array.from({ length: n }, (_, index) => ({ index, params: {}, phase: 'running', intermediate: [] }));

const small: SearchSpace = {
  params: [
    { kind: 'int', name: 'a', low: 0, high: 1, log: false, step: 1 },
    { kind: 'categorical', name: 'b', choices: [{ value: 'x' }, { value: 'y' }, { value: 'z' }] },
  ],
};

const paper: SearchSpace = {
  params: [
    { kind: 'double', name: 'lr', low: 0.001, high: 0.1, log: false },
    { kind: 'categorical', name: 'batch_size', choices: [{ value: 16 }, { value: 32 }, { value: 64 }] },
  ],
};

const one = (p: SearchSpace['params'][number], settings = {}) =>
  gridSearch({ params: [p] }, settings, 0).suggest([], 1000).map((a) => a[p.name]);

describe('gridSearch', () => {
  it('enumerates the product, first parameter slowest, then has nothing more', () => {
    const grid = gridSearch(small, {}, 0);
    expect(grid.suggest([], 100)).toEqual([
      { a: 0, b: 'x' }, { a: 0, b: 'y' }, { a: 0, b: 'z' },
      { a: 1, b: 'x' }, { a: 1, b: 'y' }, { a: 1, b: 'z' },
    ]);
    // Trial i gets point i, however the trials were asked for; fewer when it runs out.
    expect(grid.suggest(created(4), 10)).toEqual([{ a: 1, b: 'y' }, { a: 1, b: 'z' }]);
    expect(grid.suggest(created(2), 1)).toEqual([{ a: 0, b: 'z' }]);
    expect(grid.suggest(created(6), 3)).toEqual([]);
    expect(grid.suggest(created(0), 0)).toEqual([]);
    expect(gridSize(small, {})).toBe(6);
  });

  it('spaces a double grid_points apart, ends included, log-spaced for log', () => {
    expect(one({ kind: 'double', name: 'x', low: 0, high: 1, log: false })).toEqual([0, 0.25, 0.5, 0.75, 1]);
    expect(one({ kind: 'double', name: 'x', low: 1e-4, high: 1e-1, log: true }, { grid_points: '4' })).toEqual([0.0001, 0.001, 0.01, 0.1]);
    expect(one({ kind: 'double', name: 'x', low: 0.5, high: 0.5, log: false })).toEqual([0.5]);
    expect(gridSize(paper, {})).toBe(15);
    expect(gridSize(paper, { grid_points: '10' })).toBe(30);
    expect(gridSearch(paper, {}, 0).suggest(created(3), 1)).toEqual([{ lr: 0.02575, batch_size: 16 }]);
  });

  it('takes every multiple of q, and every step of an int', () => {
    expect(one({ kind: 'double', name: 'x', low: 0, high: 1, log: false, q: 0.25 })).toEqual([0, 0.25, 0.5, 0.75, 1]);
    // The values sampling can give: round(x / q) * q clipped to the range, so 0 becomes 0.1,
    // 1.2 becomes 1.1, and 0.95 itself is never proposed (it rounds to 0.9).
    expect(one({ kind: 'double', name: 'x', low: 0.1, high: 0.95, log: false, q: 0.3 })).toEqual([0.1, 0.3, 0.6, 0.9]);
    expect(one({ kind: 'double', name: 'x', low: 0.1, high: 1.1, log: false, q: 0.3 })).toEqual([0.1, 0.3, 0.6, 0.9, 1.1]);
    expect(one({ kind: 'int', name: 'n', low: 2, high: 11, log: false, step: 3 })).toEqual([2, 5, 8, 11]);
    expect(one({ kind: 'int', name: 'n', low: 1, high: 5, log: true, step: 1 })).toEqual([1, 2, 3, 4, 5]);
  });

  it('expands nested choices in place', () => {
    const space: SearchSpace = {
      params: [
        {
          kind: 'categorical',
          name: 'optimizer',
          choices: [
            { value: 'sgd', sub: { params: [{ kind: 'categorical', name: 'lr', choices: [{ value: 0.1 }, { value: 0.01 }] }] } },
            { value: 'adam' },
          ],
        },
        { kind: 'categorical', name: 'flag', choices: [{ value: true }, { value: false }] },
      ],
    };
    expect(gridSize(space, {})).toBe(6);
    expect(gridSearch(space, {}, 0).suggest([], 10)).toEqual([
      { optimizer: 'sgd', 'optimizer.lr': 0.1, flag: true },
      { optimizer: 'sgd', 'optimizer.lr': 0.1, flag: false },
      { optimizer: 'sgd', 'optimizer.lr': 0.01, flag: true },
      { optimizer: 'sgd', 'optimizer.lr': 0.01, flag: false },
      { optimizer: 'adam', flag: true },
      { optimizer: 'adam', flag: false },
    ]);
  });

  it('refuses normal parameters, grids past 100,000 points, and bad settings', () => {
    const normal: SearchSpace = { params: [...small.params, { kind: 'normal', name: 'w', mu: 0, sigma: 1, log: false }] };
    const n = refusal(() => gridSearch(normal, {}, 0));
    expect(n.field).toBe('parameters.w');
    expect(n.message).toMatch(/normal parameter has no grid/);
    expect(refusal(() => gridSize(normal, {})).field).toBe('parameters.w');

    const ints: SearchSpace = {
      params: [
        { kind: 'int', name: 'a', low: 1, high: 100, log: false, step: 1 },
        { kind: 'int', name: 'b', low: 1, high: 1001, log: false, step: 1 },
      ],
    };
    expect(gridSize(ints, {})).toBe(100_100);
    const big = refusal(() => gridSearch(ints, {}, 0));
    expect(big.field).toBe('parameters.b');
    expect(big.message).toMatch(/the grid has 100100 points, more than 100000; the largest axis is b with 1001 values/);
    const doubles: SearchSpace = { params: [paper.params[0], { ...paper.params[0], name: 'wd' }] };
    expect(gridSearch(doubles, { grid_points: '316' }, 0).suggest(created(0), 1)).toHaveLength(1);
    expect(refusal(() => gridSearch(doubles, { grid_points: '317' }, 0)).field).toBe('algorithm.settings.grid_points');

    expect(refusal(() => gridSearch(small, { grid_point: '3' }, 0)).message).toMatch(/algorithm\.settings\.grid_point: unknown setting; known settings: grid_points/);
    for (const bad of ['1', '2.5', 'five', '']) {
      expect(refusal(() => gridSearch(small, { grid_points: bad }, 0)).field).toBe('algorithm.settings.grid_points');
    }
  });
});

describe('randomSearch', () => {
  it('proposes the same trial i for the same seed, however it is asked', () => {
    const r = randomSearch(paper, {}, 42);
    const all = r.suggest([], 6);
    expect(randomSearch(paper, {}, 42).suggest([], 6)).toEqual(all);
    expect([...r.suggest([], 2), ...r.suggest(created(2), 4)]).toEqual(all);
    // Trial i's generator is seeded from (seed, i) alone.
    expect(all[4]).toEqual(sampleAssignment(paper, new SeededRandom((42 ^ Math.imul(5, 0x9e3779b1)) >>> 0)));
    expect(all[4]).toEqual(sampleAssignment(paper, trialRandom(42, 4)));
    expect(new Set(all.map((a) => a.lr)).size).toBe(6);
  });

  it('proposes other trials for another seed', () => {
    const a = randomSearch(paper, {}, 1).suggest([], 5).map((x) => x.lr);
    const b = randomSearch(paper, {}, 2).suggest([], 5).map((x) => x.lr);
    expect(a.every((lr, i) => lr !== b[i])).toBe(true);
  });

  it("takes Katib's random_state as the seed, and refuses other settings", () => {
    expect(randomSearch(paper, { random_state: '7' }, 1).suggest([], 3)).toEqual(randomSearch(paper, {}, 7).suggest([], 3));
    const err = refusal(() => randomSearch(paper, { n_startup_trials: '5' }, 1));
    expect(err.field).toBe('algorithm.settings.n_startup_trials');
    expect(refusal(() => randomSearch(paper, { random_state: 'x' }, 1)).field).toBe('algorithm.settings.random_state');
  });

  it('stays inside the space', () => {
    for (const a of randomSearch(paper, {}, 3).suggest([], 200)) {
      expect(a.lr).toBeGreaterThanOrEqual(0.001);
      expect(a.lr).toBeLessThanOrEqual(0.1);
      expect([16, 32, 64]).toContain(a.batch_size);
    }
  });
});
