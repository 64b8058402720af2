// Gaussian-process search with Expected Improvement: the model's fit, EI itself, and the
// algorithm's determinism, quality on Branin against random search, parallel proposals,
// mixed spaces and refused settings.

import { describe, expect, it } from 'vitest';
import { SeededRandom } from '../../shared/random.ts';
import type { Assignment, SearchSpace } from '../../shared/tuning/space/types.ts';
import type { TrialObservation } from '../../master/frameworks/tuning/algorithms/types.ts';
import { gaussianProcessEi } from '../../master/frameworks/tuning/algorithms/gp-ei.ts';
import { fitGp, GpPosterior } from '../../master/frameworks/tuning/algorithms/gp-model.ts';
import { logExpectedImprovement } from '../../master/frameworks/tuning/algorithms/gp-acquisition.ts';
import { normCdf, normPdf } from '../../master/frameworks/tuning/math/normal.ts';
import { toUnit } from '../../master/frameworks/tuning/space/unit-cube.ts';
import { braninHistory, braninSpace, distancesFromRunning, median, trialsToBranin, uniform } from '../harness/tuning-functions.ts';
import { refusal } from '../harness/refusal.ts';

describe('the GP model', () => {
  it('finds a coordinate the loss ignores long, and interpolates what it saw', () => {
    const r = new SeededRandom(2);
    const xs = Array.from({ length: 40 }, () => Float64Array.from([r.float(), r.float()]));
    const y = Float64Array.from(xs, (x) => Math.sin(6 * x[0]));
    const hyper = fitGp(xs, y, [false, false]);
    const [l0, l1] = Array.from(hyper.logLengths, Math.exp);
    expect(l1).toBeGreaterThan(3 * l0);
    const post = new GpPosterior(xs, y, [false, false], hyper);
    const probe = Float64Array.from([0.3, 0.9]);
    expect(post.predict(probe).mean).toBeCloseTo(Math.sin(1.8), 1);
    expect(post.predict(xs[0]).variance).toBeLessThan(1e-3);
  });

  it('computes EI as σ(zΦ(z) + φ(z)), and keeps ranking far below any improvement', () => {
    const [mean, variance, best] = [0.2, 0.25, 0];
    const z = (best - 0.01 - mean) / 0.5;
    expect(Math.exp(logExpectedImprovement(mean, variance, best))).toBeCloseTo(0.5 * (z * normCdf(z) + normPdf(z)), 12);
    const far = [10, 20, 40].map((m) => logExpectedImprovement(m, 1, 0));
    expect(far.every(Number.isFinite)).toBe(true);
    expect(far[0]).toBeGreaterThan(far[1]);
    expect(far[1]).toBeGreaterThan(far[2]);
  });
});

describe('gaussianProcessEi()', () => {
  it('is a deterministic function of its inputs, and of the seed', () => {
    const h = braninHistory(15);
    const a = gaussianProcessEi(braninSpace, {}, 1).suggest(h, 2);
    expect(gaussianProcessEi(braninSpace, {}, 1).suggest(h, 2)).toEqual(a);
    expect(gaussianProcessEi(braninSpace, {}, 1).suggest([...h].reverse(), 2)).toEqual(a);
    expect(gaussianProcessEi(braninSpace, {}, 2).suggest(h, 2)).not.toEqual(a);
    expect(gaussianProcessEi(braninSpace, {}, 1).suggest([], 3)).toEqual(gaussianProcessEi(braninSpace, {}, 1).suggest([], 3));
  });

  it('finds Branin within 1 of its minimum in 60 trials, sooner than random search', () => {
    expect(trialsToBranin(gaussianProcessEi(braninSpace, {}, 0), 60)).toBeLessThanOrEqual(60);
    const seeds = [1, 2, 3];
    const withGp = seeds.map((s) => trialsToBranin(gaussianProcessEi(braninSpace, {}, s), 60));
    const withRandom = [1, 2, 3, 4, 5, 6, 7].map((s) => trialsToBranin(uniform(braninSpace, s), 60));
    expect(median(withGp)).toBeLessThan(median(withRandom));
    expect(median(withGp)).toBeLessThanOrEqual(30);
  });

  it('spreads four proposals of one call apart (constant liar at the best loss)', () => {
    const h = braninHistory(20);
    const four = gaussianProcessEi(braninSpace, {}, 3).suggest(h, 4).map((a) => toUnit(braninSpace, a));
    let far = 0;
    for (let i = 0; i < 4; i++) {
      for (let j = 0; j < i; j++) {
        const d = Math.hypot(four[i][0] - four[j][0], four[i][1] - four[j][1]);
        expect(d).toBeGreaterThan(0.02);
        far = Math.max(far, d);
      }
    }
    expect(far).toBeGreaterThan(0.02);
  });

  it('searches a mixed space with choices, integers and failed trials', () => {
    const space: SearchSpace = {
      params: [
        { kind: 'categorical', name: 'act', choices: [{ value: 'relu' }, { value: 'tanh' }, { value: 'gelu' }] },
        { kind: 'int', name: 'depth', low: 1, high: 8, log: false, step: 1 },
        { kind: 'double', name: 'lr', low: 1e-5, high: 1, log: true },
      ],
    };
    const loss = (a: Assignment) => (a.act === 'gelu' ? 0 : 1) + Math.abs((a.depth as number) - 5) / 4 + Math.abs(Math.log10(a.lr as number) + 3) / 2;
    const alg = gaussianProcessEi(space, { n_startup_trials: '6', n_candidates: '500' }, 8);
    const history: TrialObservation[] = [];
    for (let i = 0; i < 24; i++) {
      const [params] = alg.suggest(history, 1);
      expect(Number.isInteger(params.depth)).toBe(true);
      const failed = i === 7;
      history.push({ index: i, params, phase: failed ? 'failed' : 'succeeded', loss: failed ? undefined : loss(params), intermediate: [] });
    }
    const best = Math.min(...history.filter((t) => t.loss !== undefined).map((t) => t.loss!));
    expect(best).toBeLessThan(0.5);
  });

  it('steers away from running trials: a proposal lands far from trials running where it would go', () => {
    const { nearRunning, nearElsewhere } = distancesFromRunning((seed) => gaussianProcessEi(braninSpace, {}, seed));
    expect(median(nearRunning)).toBeGreaterThan(0.15);
    expect(median(nearRunning)).toBeGreaterThan(2 * median(nearElsewhere));
  });

  it('refuses bad settings, naming the field', () => {
    const field = (settings: Record<string, string>) => refusal(() => gaussianProcessEi(braninSpace, settings, 1)).field;
    expect(field({ n_startup_trials: '-3' })).toBe('algorithm.settings.n_startup_trials');
    expect(field({ n_candidates: '0' })).toBe('algorithm.settings.n_candidates');
    expect(field({ n_candidates: 'many' })).toBe('algorithm.settings.n_candidates');
    expect(field({ acq_func: 'ucb' })).toBe('algorithm.settings.acq_func');
  });
});
