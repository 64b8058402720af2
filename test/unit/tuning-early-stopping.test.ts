// Early stopping: ASHA on a hand-built history (which rung each trial is judged at, who is
// there), Hyperband's brackets, median stopping, and a seeded run of 30 learning curves.

import { describe, expect, it } from 'vitest';
import { refusal } from '../harness/refusal.ts';
import { SeededRandom } from '../../shared/random.ts';
import { asha, bracketCount, bracketOf, hyperband } from '../../master/frameworks/tuning/early-stopping/asha.ts';
import { medianStop } from '../../master/frameworks/tuning/early-stopping/median-stop.ts';
import type { TrialObservation, TrialPhase } from '../../master/frameworks/tuning/algorithms/types.ts';

/** A trial with losses by step: trial(3, 'running', {1: 0.9, 3: 0.5}). */
function trial(index: number, phase: TrialPhase, losses: Record<number, number>): TrialObservation {
  const intermediate = Object.entries(losses).map(([step, loss]) => ({ step: Number(step), loss }));
  const last = intermediate[intermediate.length - 1];
  return { index, params: {}, phase, intermediate, ...(phase === 'succeeded' || phase === 'stopped' ? { loss: last?.loss } : {}) };
}

/** A trial whose losses are the list, at steps 1, 2, 3, … */
function curve(index: number, phase: TrialPhase, losses: number[]): TrialObservation {
  return trial(index, phase, Object.fromEntries(losses.map((l, i) => [i + 1, l])));
}

describe('asha', () => {
  // Defaults: min_resource 1, eta 3, rate 0, so rungs at steps 1, 3, 9, 27.
  const history = [
    trial(0, 'succeeded', { 1: 0.9, 3: 0.5, 9: 0.3 }),
    trial(1, 'stopped', { 1: 0.8, 3: 0.45 }),
    trial(2, 'running', { 1: 0.7, 3: 0.35, 9: 0.1 }),
    trial(3, 'running', { 1: 0.95 }),
    trial(4, 'running', { 1: 0.6, 3: 0.32 }),
    trial(5, 'running', { 1: 0.99, 2: 0.5 }),
    trial(6, 'running', {}),
    trial(7, 'running', { 1: 0.99, 3: 0.3, 5: 0.3 }),
  ];
  // Rung 1 (step 1): 0.9, 0.8, 0.7, 0.95, 0.6, 0.99, 0.99 (trials 0-5, 7): n 7, the best 2
  //   go on (0.6 and 0.7): trial 3 (0.95) and trial 5 are stopped; trial 5's 0.5 at step 2
  //   does not count, it is past the rung.
  // Rung 3: 0.5, 0.45, 0.35, 0.32, 0.3 (trials 0, 1, 2, 4, 7): n 5, floor(5 / 3) = 1 goes on
  //   (trial 7's 0.3): trial 4 (0.32, second) is stopped; trial 7 is judged here, not at
  //   rung 1 where it was worst, since step 5 is past rung 3.
  // Rung 9: 0.3, 0.1 (trials 0, 2): n 2, the best 1 goes on: trial 2 (0.1) runs on.
  // Trial 6 reported nothing: not judged.
  it('stops the trials outside the top floor(n / eta) at their highest rung', () => {
    expect(asha({}, 0).decide(history)).toEqual([3, 4, 5]);
  });

  it('answers the same whenever and however it is asked', () => {
    const stopper = asha({}, 0);
    expect(stopper.decide(history)).toEqual(stopper.decide(history));
    expect(asha({}, 99).decide([...history].reverse())).toEqual([3, 4, 5]);
  });

  it('counts trials of every phase at a rung, and keeps the first one alone', () => {
    const lone = trial(4, 'running', { 1: 0.5 });
    expect(asha({}, 0).decide([lone])).toEqual([]);
    // With a succeeded, a stopped and a failed trial better at rung 1: n 4, the best 1 goes on.
    const others = [trial(0, 'succeeded', { 1: 0.1 }), trial(1, 'stopped', { 1: 0.2 }), trial(2, 'failed', { 1: 0.3 })];
    expect(asha({}, 0).decide([...others, lone])).toEqual([4]);
    // Ties go on: the best loss at the rung is shared.
    expect(asha({}, 0).decide([trial(0, 'succeeded', { 1: 0.5 }), lone])).toEqual([]);
  });

  it('takes a trial\'s best loss up to the rung, not its latest', () => {
    // Rung 3: trial 0 at 0.4, trial 1's best up to step 3 is 0.2 (step 2), not 0.6 (step 3).
    const h = [trial(0, 'succeeded', { 1: 1, 2: 0.9, 3: 0.4 }), trial(1, 'running', { 1: 1, 2: 0.2, 3: 0.6 })];
    expect(asha({}, 0).decide(h)).toEqual([]);
    expect(asha({}, 0).decide([h[0], trial(1, 'running', { 1: 1, 2: 0.5, 3: 0.6 })])).toEqual([1]);
  });

  it('places the rungs at min_resource * eta^(k + min_early_stopping_rate)', () => {
    const settings = { min_resource: '2', reduction_factor: '2', min_early_stopping_rate: '1' };
    // Rungs at 4, 8, 16: at step 3 nothing is judged, at step 4 the worse of two stops.
    const best = trial(0, 'succeeded', { 4: 0.1, 8: 0.1 });
    expect(asha(settings, 0).decide([best, curve(1, 'running', [1, 1, 1])])).toEqual([]);
    expect(asha(settings, 0).decide([best, curve(1, 'running', [1, 1, 1, 1])])).toEqual([1]);
  });

  it('refuses unknown and malformed settings by name', () => {
    expect(refusal(() => asha({ eta: '3' }, 0)).field).toBe('earlyStopping.settings.eta');
    expect(refusal(() => asha({ reduction_factor: '1' }, 0)).message).toMatch(/earlyStopping\.settings\.reduction_factor: must be an integer >= 2, got "1"/);
    expect(refusal(() => asha({ min_resource: '0' }, 0)).field).toBe('earlyStopping.settings.min_resource');
    expect(refusal(() => asha({ min_resource: 'one' }, 0)).field).toBe('earlyStopping.settings.min_resource');
    expect(refusal(() => asha({ min_early_stopping_rate: '-1' }, 0)).field).toBe('earlyStopping.settings.min_early_stopping_rate');
  });

  it('keeps the best of 30 learning curves to the end and spends a third of the steps or less', () => {
    const run = (seed: number) => {
      const rng = new SeededRandom(seed);
      // loss_i(step) = a_i + 1 / step: the curves never cross, so the best at the end is the
      // best at every rung.
      const a = Array.from({ length: 30 }, () => rng.float());
      const stopper = asha({}, seed);
      const done: TrialObservation[] = [];
      let steps = 0;
      for (let i = 0; i < 30; i++) {
        const losses: number[] = [];
        let phase: TrialPhase = 'succeeded';
        for (let step = 1; step <= 27; step++) {
          losses.push(a[i] + 1 / step);
          steps++;
          if (stopper.decide([...done, curve(i, 'running', losses)]).includes(i)) {
            phase = 'stopped';
            break;
          }
        }
        done.push(curve(i, phase, losses));
      }
      return { a, done, steps };
    };
    const { a, done, steps } = run(2024);
    const best = a.indexOf(Math.min(...a));
    expect(done[best].phase).toBe('succeeded');
    expect(done[best].intermediate).toHaveLength(27);
    expect(steps).toBeLessThanOrEqual((30 * 27) / 3);
    // The first trial has no one to lose to: it runs to the end too.
    expect(done[0].phase).toBe('succeeded');
    expect(run(2024).steps).toBe(steps);
  });
});

describe('hyperband', () => {
  it('counts floor(log_eta(max / min)) + 1 brackets', () => {
    expect(bracketCount(1, 27, 3)).toBe(4);
    expect(bracketCount(1, 26, 3)).toBe(3);
    expect(bracketCount(1, 1, 3)).toBe(1);
    expect(bracketCount(1, 81, 3)).toBe(5);
    expect(bracketCount(2, 100, 2)).toBe(6);
  });

  it('spreads trials over the brackets by a seeded hash, the aggressive brackets getting more', () => {
    // 4 brackets, eta 3: shares ceil(4 * 3^s / (s + 1)) for s = 3, 2, 1, 0: 27, 12, 6, 4 of 49.
    const shares = [27, 12, 6, 4];
    const counts = [0, 0, 0, 0];
    for (let i = 0; i < 4900; i++) counts[bracketOf(5, i, shares, 49)]++;
    expect(counts.map((c) => Math.round(c / 100))).toEqual([27, 12, 6, 4]);
    const first = Array.from({ length: 20 }, (_, i) => bracketOf(5, i, shares, 49));
    expect(Array.from({ length: 20 }, (_, i) => bracketOf(5, i, shares, 49))).toEqual(first);
    expect(Array.from({ length: 20 }, (_, i) => bracketOf(6, i, shares, 49))).not.toEqual(first);
  });

  it('compares a trial only with trials of its own bracket', () => {
    const seed = 3;
    const shares = [27, 12, 6, 4];
    const inBracket = (b: number, skip = -1) => {
      for (let i = 0; ; i++) if (i !== skip && bracketOf(seed, i, shares, 49) === b) return i;
    };
    const i0 = inBracket(0);
    const j0 = inBracket(0, i0);
    const k1 = inBracket(1);
    const settings = { max_resource: '27' };
    const h = [
      trial(i0, 'succeeded', { 1: 0.1, 3: 0.05 }),
      // Bracket 0, rungs 1, 3, 9: at rung 1 with trial i0 (0.1), n 2, the best 1 goes on.
      trial(j0, 'running', { 1: 0.5 }),
      // Bracket 1, rungs 3, 9: alone at rung 3, so it goes on, though i0 did better there.
      trial(k1, 'running', { 1: 0.9, 2: 0.9, 3: 0.9 }),
    ];
    expect(hyperband(settings, seed).decide(h)).toEqual([j0]);
    // ASHA, one bracket for all, would stop both.
    expect(asha({}, seed).decide(h)).toEqual([j0, k1].sort((x, y) => x - y));
  });

  it('judges nothing at max_resource: a trial there has had all it gets', () => {
    // Bracket 3 of 4 (1 to 27, eta 3) starts at rung 27 = max: Hyperband's no-stopping bracket.
    const shares = [27, 12, 6, 4];
    let last = 0;
    while (bracketOf(0, last, shares, 49) !== 3) last++;
    const lots = Array.from({ length: 27 }, () => 1);
    const h = [trial(last + 1000, 'succeeded', { 27: 0 }), curve(last, 'running', lots)];
    expect(hyperband({ max_resource: '27' }, 0).decide(h)).toEqual([]);
  });

  it('requires max_resource and refuses bad settings by name', () => {
    expect(refusal(() => hyperband({}, 0)).message).toMatch(/earlyStopping\.settings\.max_resource: is required/);
    expect(refusal(() => hyperband({ max_resource: '0.5' }, 0)).field).toBe('earlyStopping.settings.max_resource');
    expect(refusal(() => hyperband({ max_resource: '9', min_early_stopping_rate: '1' }, 0)).field).toBe('earlyStopping.settings.min_early_stopping_rate');
    expect(refusal(() => hyperband({ max_resource: '9', reduction_factor: '1.5' }, 0)).field).toBe('earlyStopping.settings.reduction_factor');
  });
});

describe('medianStop', () => {
  const succeeded = [
    curve(0, 'succeeded', [1.0, 0.8, 0.6, 0.5, 0.4]),
    curve(1, 'succeeded', [1.2, 1.0, 0.8, 0.7, 0.6]),
    curve(2, 'succeeded', [0.9, 0.7, 0.5, 0.4, 0.3]),
  ];
  // At step 3 their running averages are 0.8, 1.0 and 0.7: the median is 0.8.

  it('stops a clearly bad trial and keeps a good one', () => {
    const bad = curve(3, 'running', [2.0, 1.9, 1.8]);
    const good = curve(4, 'running', [1.0, 0.7, 0.75]);
    expect(medianStop({}, 0).decide([...succeeded, bad, good])).toEqual([3]);
  });

  it('compares its best loss with the median of the others\' averages, not their bests', () => {
    // 0.85 is worse than the median average 0.8, though better than the median best (0.7).
    expect(medianStop({}, 0).decide([...succeeded, curve(5, 'running', [0.95, 0.9, 0.85])])).toEqual([5]);
    expect(medianStop({}, 0).decide([...succeeded, curve(5, 'running', [0.95, 0.9, 0.79])])).toEqual([]);
  });

  it('waits for min_trials_required succeeded trials that got as far, and for start_step', () => {
    const bad = curve(3, 'running', [2.0, 1.9, 1.8]);
    expect(medianStop({ min_trials_required: '4' }, 0).decide([...succeeded, bad])).toEqual([]);
    expect(medianStop({ start_step: '4' }, 0).decide([...succeeded, bad])).toEqual([]);
    // Running and stopped trials are no yardstick.
    const others = succeeded.map((t) => ({ ...t, phase: 'stopped' as const }));
    expect(medianStop({}, 0).decide([...others, bad])).toEqual([]);
    // None of the succeeded trials reported at step 6.
    expect(medianStop({}, 0).decide([...succeeded, curve(3, 'running', [2, 2, 2, 2, 2, 2])])).toEqual([]);
  });

  it('refuses unknown and malformed settings by name', () => {
    expect(refusal(() => medianStop({ min_trials: '3' }, 0)).field).toBe('earlyStopping.settings.min_trials');
    expect(refusal(() => medianStop({ min_trials_required: '0' }, 0)).field).toBe('earlyStopping.settings.min_trials_required');
    expect(refusal(() => medianStop({ start_step: 'soon' }, 0)).field).toBe('earlyStopping.settings.start_step');
  });
});
