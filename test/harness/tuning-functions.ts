// What the search algorithms' tests share (tuning-gp-ei, tuning-tpe): Branin over its usual
// box, a seeded stand-in for random search, how soon a search finds Branin's minimum, and
// how far a proposal keeps from trials still running.

import { SeededRandom } from '../../shared/random.ts';
import type { Assignment, SearchSpace } from '../../shared/tuning/space/types.ts';
import type { Algorithm, TrialObservation } from '../../master/frameworks/tuning/algorithms/types.ts';
import { fromUnit, toUnit } from '../../master/frameworks/tuning/space/unit-cube.ts';

export const BRANIN_MIN = 0.397887;

export const braninSpace: SearchSpace = {
  params: [
    { kind: 'double', name: 'x1', low: -5, high: 10, log: false },
    { kind: 'double', name: 'x2', low: 0, high: 15, log: false },
  ],
};

export function branin(a: Assignment): number {
  const x1 = a.x1 as number;
  const x2 = a.x2 as number;
  const b = 5.1 / (4 * Math.PI ** 2);
  const c = 5 / Math.PI;
  const t = 1 / (8 * Math.PI);
  return (x2 - b * x1 * x1 + c * x1 - 6) ** 2 + 10 * (1 - t) * Math.cos(x1) + 10;
}

/** A stand-in for random search that depends on nothing but the seeded generator. */
export function uniform(space: SearchSpace, seed: number): Algorithm {
  return {
    suggest: (history, count) =>
      Array.from({ length: count }, (_, j) => {
        const r = new SeededRandom(seed * 7919 + history.length + j);
        return fromUnit(space, space.params.map(() => r.float()));
      }),
  };
}

/** Trials until a loss within 1 of Branin's minimum, one at a time; budget + 1 if never. */
export function trialsToBranin(alg: Algorithm, budget: number): number {
  const history: TrialObservation[] = [];
  while (history.length < budget) {
    const [params] = alg.suggest(history, 1);
    const loss = branin(params);
    history.push({ index: history.length, params, phase: 'succeeded', loss, intermediate: [] });
    if (loss - BRANIN_MIN < 1) return history.length;
  }
  return budget + 1;
}

export function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
}

/** n finished Branin trials from the seed's random draws. */
export function braninHistory(n: number, seed = 5): TrialObservation[] {
  return uniform(braninSpace, seed)
    .suggest([], n)
    .map((params, index) => ({ index, params, phase: 'succeeded' as const, loss: branin(params), intermediate: [] }));
}

/**
 * For seeds 1 to 6, how far (in the unit square) the algorithm's next proposal after 20
 * Branin trials lands from the one it would make, once three trials run at that very point
 * (nearRunning), and once they run at its mirror image instead (nearElsewhere).
 */
export function distancesFromRunning(algorithm: (seed: number) => Algorithm): { nearRunning: number[]; nearElsewhere: number[] } {
  const nearRunning: number[] = [];
  const nearElsewhere: number[] = [];
  for (let seed = 1; seed <= 6; seed++) {
    const h = braninHistory(20, seed);
    const alg = algorithm(seed);
    const p = alg.suggest(h, 1)[0];
    const pu = toUnit(braninSpace, p);
    const mirror = fromUnit(braninSpace, [1 - pu[0], 1 - pu[1]]);
    const running = (params: Assignment) => [0, 1, 2].map((k) => ({ index: 20 + k, params, phase: 'running' as const, intermediate: [] }));
    const dist = (a: Assignment) => Math.hypot(toUnit(braninSpace, a)[0] - pu[0], toUnit(braninSpace, a)[1] - pu[1]);
    nearRunning.push(dist(alg.suggest([...h, ...running(p)], 1)[0]));
    nearElsewhere.push(dist(alg.suggest([...h, ...running(mirror)], 1)[0]));
  }
  return { nearRunning, nearElsewhere };
}
