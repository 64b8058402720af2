// Multivariate TPE: determinism, the startup design, search quality on Branin against random
// search, parallel proposals that spread out, nested spaces, and refused settings.

import { describe, expect, it } from 'vitest';
import type { Assignment, SearchSpace } from '../../shared/tuning/space/types.ts';
import type { TrialObservation } from '../../master/frameworks/tuning/algorithms/types.ts';
import { tpe, optunaWeights } from '../../master/frameworks/tuning/algorithms/tpe.ts';
import { sobol } from '../../master/frameworks/tuning/algorithms/sobol.ts';
import { toUnit } from '../../master/frameworks/tuning/space/unit-cube.ts';
import { branin, braninHistory, braninSpace, distancesFromRunning, median, trialsToBranin, uniform } from '../harness/tuning-functions.ts';
import { refusal } from '../harness/refusal.ts';

describe('tpe()', () => {
  it('is a deterministic function of its inputs, and of the seed', () => {
    const h = braninHistory(20);
    const a = tpe(braninSpace, {}, 1).suggest(h, 3);
    expect(tpe(braninSpace, {}, 1).suggest(h, 3)).toEqual(a);
    expect(tpe(braninSpace, {}, 1).suggest([...h].reverse(), 3)).toEqual(a); // order of the history is not an input
    expect(tpe(braninSpace, {}, 2).suggest(h, 3)).not.toEqual(a);
    // Trial 20's proposal is the same whether asked for alone or first of three.
    expect(tpe(braninSpace, {}, 1).suggest(h, 1)[0]).toEqual(a[0]);
  });

  it('starts with the seed\'s Sobol design until n_startup_trials trials have a loss', () => {
    const design = sobol(braninSpace, {}, 9).suggest([], 12);
    const alg = tpe(braninSpace, { n_startup_trials: '5' }, 9);
    expect(alg.suggest([], 5)).toEqual(design.slice(0, 5));
    const four = design.slice(0, 5).map((params, index) => ({ index, params, phase: index < 4 ? ('succeeded' as const) : ('running' as const), loss: index < 4 ? branin(params) : undefined, intermediate: [] }));
    expect(alg.suggest(four, 1)).toEqual([design[5]]); // four losses: still the design
    const five = [...four.slice(0, 4), { ...four[4], phase: 'stopped' as const, loss: 3 }];
    expect(alg.suggest(five, 1)).not.toEqual([design[5]]); // a stopped trial's loss counts
  });

  it('finds Branin within 1 of its minimum in 60 trials, sooner than random search', () => {
    expect(trialsToBranin(tpe(braninSpace, {}, 0), 60)).toBeLessThanOrEqual(60);
    const seeds = [1, 2, 3, 4, 5, 6, 7];
    const withTpe = seeds.map((s) => trialsToBranin(tpe(braninSpace, {}, s), 60));
    const withRandom = seeds.map((s) => trialsToBranin(uniform(braninSpace, s), 60));
    expect(median(withTpe)).toBeLessThan(median(withRandom));
    expect(median(withTpe)).toBeLessThanOrEqual(40);
  });

  it('also searches with independent per-parameter estimators (multivariate=false)', () => {
    const seeds = [1, 2, 3, 4, 5];
    const withTpe = seeds.map((s) => trialsToBranin(tpe(braninSpace, { multivariate: 'false', consider_endpoints: 'true' }, s), 60));
    expect(median(withTpe)).toBeLessThanOrEqual(60);
  });

  it('spreads four proposals of one call apart (constant liar), as if the earlier ones were running', () => {
    const h = braninHistory(20);
    const four = tpe(braninSpace, {}, 3).suggest(h, 4).map((a) => toUnit(braninSpace, a));
    const dist = (p: number[], q: number[]) => Math.hypot(p[0] - q[0], p[1] - q[1]);
    let far = 0;
    for (let i = 0; i < 4; i++) {
      for (let j = 0; j < i; j++) {
        expect(dist(four[i], four[j])).toBeGreaterThan(0.02);
        far = Math.max(far, dist(four[i], four[j]));
      }
    }
    expect(far).toBeGreaterThan(0.02);
    // The same call with the first proposal already running gives the other three.
    const first = tpe(braninSpace, {}, 3).suggest(h, 1)[0];
    const running = [...h, { index: 20, params: first, phase: 'running' as const, intermediate: [] }];
    expect(tpe(braninSpace, {}, 3).suggest(running, 3).map((a) => toUnit(braninSpace, a))).toEqual(four.slice(1));
  });

  it('keeps failed trials and nested parameters in order', () => {
    const space: SearchSpace = {
      params: [
        { kind: 'categorical', name: 'opt', choices: [{ value: 'sgd', sub: { params: [{ kind: 'double', name: 'momentum', low: 0, high: 1, log: false }] } }, { value: 'adam', sub: { params: [{ kind: 'double', name: 'lr', low: 1e-5, high: 1e-1, log: true }] } }] },
        { kind: 'int', name: 'units', low: 16, high: 512, log: true, step: 1 },
      ],
    };
    const loss = (a: Assignment) => (a.opt === 'adam' ? Math.abs(Math.log10(a['opt.lr'] as number) + 3) : 2 + (a['opt.momentum'] as number)) + Math.abs(Math.log2(a.units as number) - 7) / 10;
    for (const multivariate of ['true', 'false']) {
      const alg = tpe(space, { multivariate }, 4);
      const history: TrialObservation[] = [];
      for (let i = 0; i < 40; i++) {
        const [params] = alg.suggest(history, 1);
        expect(Object.keys(params).sort()).toEqual(params.opt === 'sgd' ? ['opt', 'opt.momentum', 'units'] : ['opt', 'opt.lr', 'units']);
        expect(Number.isInteger(params.units)).toBe(true);
        const failed = i % 7 === 3;
        history.push({ index: i, params, phase: failed ? 'failed' : 'succeeded', loss: failed ? undefined : loss(params), intermediate: [] });
      }
      // The good choice wins the search's second half.
      expect(history.slice(20).filter((t) => t.params.opt === 'adam').length).toBeGreaterThan(12);
    }
  });

  it("weighs trials as Optuna does: the newest 25 at 1, older ones ramping down", () => {
    expect(optunaWeights(3)).toEqual([1, 1, 1]);
    const w = optunaWeights(30);
    expect(w.length).toBe(30);
    expect(w[0]).toBeCloseTo(1 / 30, 12);
    expect(w[4]).toBeCloseTo(1, 12);
    expect(w.slice(5).every((x) => x === 1)).toBe(true);
  });

  it('steers away from running trials: a proposal lands far from trials running where it would go', () => {
    const { nearRunning, nearElsewhere } = distancesFromRunning((seed) => tpe(braninSpace, {}, seed));
    expect(median(nearRunning)).toBeGreaterThan(0.15);
    expect(median(nearRunning)).toBeGreaterThan(2 * median(nearElsewhere));
  });

  it('refuses bad settings, naming the field', () => {
    const field = (settings: Record<string, string>) => refusal(() => tpe(braninSpace, settings, 1)).field;
    expect(field({ n_startup_trials: '-1' })).toBe('algorithm.settings.n_startup_trials');
    expect(field({ n_startup_trials: '2.5' })).toBe('algorithm.settings.n_startup_trials');
    expect(field({ n_ei_candidates: '0' })).toBe('algorithm.settings.n_ei_candidates');
    expect(field({ gamma: '0' })).toBe('algorithm.settings.gamma');
    expect(field({ gamma: '1.5' })).toBe('algorithm.settings.gamma');
    expect(field({ prior_weight: 'heavy' })).toBe('algorithm.settings.prior_weight');
    expect(field({ multivariate: 'yes' })).toBe('algorithm.settings.multivariate');
    expect(field({ consider_endpoints: '' })).toBe('algorithm.settings.consider_endpoints');
    expect(field({ n_ei_candidate: '24' })).toBe('algorithm.settings.n_ei_candidate');
    expect(refusal(() => tpe(braninSpace, { gamma: '0' }, 1)).code).toBe('CAIRN_BAD_REQUEST');
  });
});
