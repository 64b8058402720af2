// Asynchronous successive halving (ASHA; Optuna's SuccessiveHalvingPruner) and Hyperband's
// brackets of it. Rung k sits at step min_resource * eta^(k + min_early_stopping_rate); a
// running trial is judged at the highest rung its latest step has reached, and goes on only
// if its loss there is among the best floor(n / eta) (at least 1) of the n trials, in any
// phase, that reached that rung. Nothing is remembered between calls: a trial's loss at a
// rung is read from its reports each time (its best up to the rung step), so any leader asks
// the same question of the same history. The price of that: a trial between two rungs is
// judged again at its rung on each call, and trials that reached the rung since can stop it.

import { SeededRandom } from '../../../../shared/random.ts';
import type { AlgorithmSettings, EarlyStopper, StepLoss, TrialObservation } from '../algorithms/types.ts';
import { checkSettingNames, numberSetting } from '../../../../shared/tuning/space/validate.ts';

const PREFIX = 'earlyStopping.settings';

interface Halving {
  readonly minResource: number;
  readonly eta: number;
  readonly rate: number;
  /** Rungs at or past it judge nothing: a trial there has used all it will get. */
  readonly maxResource: number;
}

export function asha(settings: AlgorithmSettings, _seed: number): EarlyStopper {
  checkSettingNames(settings, ['min_resource', 'reduction_factor', 'min_early_stopping_rate'], PREFIX);
  const halving: Halving = {
    minResource: numberSetting(settings, 'min_resource', PREFIX, 1, { above: 0 }),
    eta: numberSetting(settings, 'reduction_factor', PREFIX, 3, { integer: true, min: 2 }),
    rate: numberSetting(settings, 'min_early_stopping_rate', PREFIX, 0, { integer: true, min: 0, max: 64 }),
    maxResource: Infinity,
  };
  return { decide: (history) => stops(history, halving) };
}

/**
 * Hyperband: brackets 0 … n-1, n = floor(log_eta(max / min)) + 1, bracket b halving from rung
 * min * eta^b. Each trial's bracket is a seeded hash of its index, weighted as Hyperband
 * weights them (bracket b gets ceil(n * eta^s / (s + 1)) shares, s = n - 1 - b, as Optuna's
 * HyperbandPruner does), and a trial is compared only with trials of its own bracket.
 */
export function hyperband(settings: AlgorithmSettings, seed: number): EarlyStopper {
  checkSettingNames(settings, ['min_resource', 'max_resource', 'reduction_factor'], PREFIX);
  const minResource = numberSetting(settings, 'min_resource', PREFIX, 1, { above: 0 });
  const maxResource = numberSetting(settings, 'max_resource', PREFIX, undefined, { min: minResource });
  const eta = numberSetting(settings, 'reduction_factor', PREFIX, 3, { integer: true, min: 2 });
  const brackets = bracketCount(minResource, maxResource, eta);
  const shares = Array.from({ length: brackets }, (_, b) => {
    const s = brackets - 1 - b;
    return Math.ceil((brackets * eta ** s) / (s + 1));
  });
  const total = shares.reduce((a, b) => a + b, 0);
  return {
    decide(history) {
      const byBracket = new Map<number, TrialObservation[]>();
      for (const t of history) {
        const b = bracketOf(seed, t.index, shares, total);
        byBracket.set(b, [...(byBracket.get(b) ?? []), t]);
      }
      const out: number[] = [];
      for (const [b, trials] of byBracket) out.push(...stops(trials, { minResource, eta, rate: b, maxResource }));
      return out.sort((x, y) => x - y);
    },
  };
}

/** floor(log_eta(max / min)) + 1, counted by multiplying so 27 / 1 with eta 3 is 4, not 3. */
export function bracketCount(minResource: number, maxResource: number, eta: number): number {
  let n = 1;
  for (let r = minResource * eta; r <= maxResource * (1 + 1e-12); r *= eta) n++;
  return n;
}

export function bracketOf(seed: number, index: number, shares: readonly number[], total: number): number {
  // Constants apart from random search's per-trial seeding, so the bracket does not follow
  // the trial's first sampled parameter.
  const h = new SeededRandom((Math.imul(seed ^ 0x5bd1e995, 0x27d4eb2f) ^ Math.imul(index + 1, 0x165667b1)) >>> 0).nextU32();
  let x = h % total;
  for (let b = 0; b < shares.length; b++) {
    if (x < shares[b]) return b;
    x -= shares[b];
  }
  return shares.length - 1;
}

function stops(history: readonly TrialObservation[], h: Halving): number[] {
  const out: number[] = [];
  for (const trial of history) {
    if (trial.phase !== 'running' || trial.intermediate.length === 0) continue;
    const rung = highestRung(lastStep(trial.intermediate), h);
    if (rung === undefined) continue;
    const own = lossAtRung(trial.intermediate, rung);
    const competing = history
      .filter((t) => t.intermediate.length > 0 && lastStep(t.intermediate) >= rung)
      .map((t) => lossAtRung(t.intermediate, rung))
      .sort((a, b) => a - b);
    const keep = Math.max(1, Math.floor(competing.length / h.eta));
    if (own > competing[keep - 1]) out.push(trial.index);
  }
  return out.sort((a, b) => a - b);
}

/** The step of the highest rung `step` has reached, if any. */
export function highestRung(step: number, h: Halving): number | undefined {
  let rung = h.minResource * h.eta ** h.rate;
  if (!(step >= rung) || rung >= h.maxResource) return undefined;
  while (rung * h.eta <= step && rung * h.eta < h.maxResource) rung *= h.eta;
  return rung;
}

function lastStep(reports: readonly StepLoss[]): number {
  return reports.reduce((m, r) => Math.max(m, r.step), -Infinity);
}

/**
 * A trial's loss at the rung: its best report up to the rung step. A trial that reported
 * sparsely (steps 5, 10 for a rung at 3) is read up to its first report past the rung.
 * A NaN loss (a diverged run) counts as the worst there is.
 */
export function lossAtRung(reports: readonly StepLoss[], rung: number): number {
  const limit = reports.reduce((m, r) => (r.step >= rung ? Math.min(m, r.step) : m), Infinity);
  let best = Infinity;
  for (const r of reports) {
    if (r.step <= limit) best = Math.min(best, Number.isNaN(r.loss) ? Infinity : r.loss);
  }
  return best;
}
