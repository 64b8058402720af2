// `npm run bench -- tuning-early-stopping`: the trial time early stopping saves on synthetic
// learning curves (test/sim/tuning-curves.ts), through the real tuning core: 40 trials of 27
// steps each, random search, one trial at a time, over 20 seeds, with no early stopping, ASHA
// (reduction factor 3), Hyperband and the median rule. The figures: whether each reaches the
// same best value as the full search, and how many times less trial time it uses — on curves
// whose early results rank the trials as their ends do (what early stopping assumes), and on
// curves that cross (where a rule that judges early can stop the eventual best).

import { runCurves, type CurveFamily } from '../test/sim/tuning-curves.ts';
import type { ExperimentSpec } from '../shared/tuning/model.ts';

const TRIALS = 40;
const STEPS = 27;
const SEEDS = Array.from({ length: 20 }, (_, i) => i + 1);

const RULES: Record<string, ExperimentSpec['earlyStopping']> = {
  asha: { name: 'asha', settings: { min_resource: '1', reduction_factor: '3' } },
  hyperband: { name: 'hyperband', settings: { min_resource: '1', max_resource: String(STEPS), reduction_factor: '3' } },
  medianstop: { name: 'medianstop', settings: { min_trials_required: '3', start_step: '2' } },
};

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

function measure(family: CurveFamily): Record<string, unknown> {
  const full = SEEDS.map((seed) => runCurves(undefined, TRIALS, STEPS, seed, family));
  const rules: Record<string, unknown> = {};
  for (const [name, rule] of Object.entries(RULES)) {
    const runs = SEEDS.map((seed) => runCurves(rule, TRIALS, STEPS, seed, family));
    const savings = runs.map((r, i) => full[i]!.steps / r.steps);
    const sameBest = runs.filter((r, i) => r.best === full[i]!.best).length;
    rules[name] = {
      medianSaving: Number(median(savings).toFixed(2)),
      minSaving: Number(Math.min(...savings).toFixed(2)),
      sameBestInSeeds: `${sameBest}/${SEEDS.length}`,
      medianStoppedTrials: median(runs.map((r) => r.stopped)),
    };
    process.stderr.write(`${family} curves, ${name}: ${median(savings).toFixed(2)}x less trial time (min ${Math.min(...savings).toFixed(2)}x), the same best in ${sameBest}/${SEEDS.length} seeds\n`);
  }
  return rules;
}

export async function run(): Promise<unknown> {
  return {
    trials: TRIALS, stepsPerTrial: STEPS, seeds: SEEDS.length, fullSteps: TRIALS * STEPS,
    ranked: measure('ranked'),
    crossing: measure('crossing'),
    target: 'ASHA: the same best value with at least 3x less trial time',
  };
}
