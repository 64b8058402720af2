// Median stopping (Katib's medianstop, Optuna's MedianPruner): a running trial at step s is
// stopped when its best loss so far is worse than the median, over the succeeded trials that
// reported at or past s, of each one's running average of losses up to s. Averages, not bests,
// for the others: a finished trial's noisy lucky step should not raise the bar. Stateless.

import type { AlgorithmSettings, EarlyStopper, StepLoss, TrialObservation } from '../algorithms/types.ts';
import { checkSettingNames, numberSetting } from '../../../../shared/tuning/space/validate.ts';

const PREFIX = 'earlyStopping.settings';

export function medianStop(settings: AlgorithmSettings, _seed: number): EarlyStopper {
  checkSettingNames(settings, ['min_trials_required', 'start_step'], PREFIX);
  const minTrials = numberSetting(settings, 'min_trials_required', PREFIX, 3, { integer: true, min: 1 });
  const startStep = numberSetting(settings, 'start_step', PREFIX, 1, { min: 0 });
  return {
    decide(history) {
      const done = history.filter((t) => t.phase === 'succeeded' && t.intermediate.length > 0);
      const out: number[] = [];
      for (const trial of history) {
        if (trial.phase !== 'running' || trial.intermediate.length === 0) continue;
        const step = lastStep(trial.intermediate);
        if (step < startStep) continue;
        const others = averagesUpTo(done, step);
        // Too few to know what a typical trial does by now: let it run.
        if (others.length < minTrials) continue;
        if (bestUpTo(trial.intermediate, step) > median(others)) out.push(trial.index);
      }
      return out.sort((a, b) => a - b);
    },
  };
}

/** A NaN loss (a diverged run) counts as the worst there is. */
function lossOf(r: StepLoss): number {
  return Number.isNaN(r.loss) ? Infinity : r.loss;
}

function lastStep(reports: readonly StepLoss[]): number {
  return reports.reduce((m, r) => Math.max(m, r.step), -Infinity);
}

function bestUpTo(reports: readonly StepLoss[], step: number): number {
  return reports.filter((r) => r.step <= step).reduce((m, r) => Math.min(m, lossOf(r)), Infinity);
}

function averagesUpTo(trials: readonly TrialObservation[], step: number): number[] {
  const out: number[] = [];
  for (const t of trials) {
    if (lastStep(t.intermediate) < step) continue;
    const upTo = t.intermediate.filter((r) => r.step <= step);
    if (upTo.length > 0) out.push(upTo.reduce((sum, r) => sum + lossOf(r), 0) / upTo.length);
  }
  return out;
}

export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}
