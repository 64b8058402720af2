// Early stopping on synthetic learning curves, through the real tuning core: trials one at a
// time, each reporting its loss after every step (one step takes one unit of trial time),
// killed when the core says so. Used by test/unit/tuning-core.test.ts and by
// `npm run bench -- tuning-early-stopping`.

import { Resources } from '../../shared/resources.ts';
import { TuningCore } from '../../master/frameworks/tuning/core.ts';
import type { ExperimentSpec } from '../../shared/tuning/model.ts';

/**
 * Learning curves, the trial's parameter x in [0, 1] setting where it ends (the best at
 * x = 0.37). `ranked`: loss = floor(x) · (1 + 2 / step), a worse trial is worse at every step
 * (early results predict the final ranking: what early stopping assumes). `crossing`: loss =
 * floor(x) + (0.5 + 2x) / step, trials that end better may start worse.
 */
export type CurveFamily = 'ranked' | 'crossing';

export function curve(x: number, step: number, family: CurveFamily = 'ranked'): number {
  const floor = 0.1 + (x - 0.37) ** 2 * 3;
  return family === 'ranked' ? floor * (1 + 2 / step) : floor + (0.5 + 2 * x) / step;
}

export interface CurvesRun {
  /** The best final loss of a trial that ran to its end. */
  best: number;
  /** Steps run by all trials: the trial time used. */
  steps: number;
  stopped: number;
}

/** `trials` trials of `steps` steps each, random search with `seed`, one at a time, on curves of `family`. */
export function runCurves(early: ExperimentSpec['earlyStopping'], trials: number, steps: number, seed = 7, family: CurveFamily = 'ranked'): CurvesRun {
  const core = new TuningCore();
  const spec: ExperimentSpec = {
    name: 'curves', role: '*',
    objective: { type: 'minimize', metricName: 'loss', additionalMetricNames: [] },
    algorithm: { name: 'random', settings: {} },
    ...(early ? { earlyStopping: early } : {}),
    space: { params: [{ kind: 'double', name: 'x', low: 0, high: 1, log: false }] },
    parallelTrialCount: 1, maxTrialCount: trials, maxFailedTrialCount: trials, seed,
    scheduling: 'fifo', dynamic: { declinesPerLevel: 2, patience: 3, maxLevel: 4 },
    trial: { command: 'train --x ${x}', cpus: 1, memMb: 64, diskMb: 0, gpus: 0, env: {}, inputs: [], outputs: [], files: [], timeoutSeconds: 0 },
  };
  core.submit(spec, [], 'u', 0, '');
  let used = 0;
  let best = Infinity;
  let stopped = 0;
  let now = 0;
  for (let i = 0; i < trials; i++) {
    core.offers('curves', [{ id: `o${i}`, agentId: 'a', hostname: 'a', ip: '127.0.0.1', resources: Resources.of({ cpus: 4, mem: 4096, disk: 0, gpus: 0 }), role: '*' }], now);
    const e = core.takeEffects();
    if (e.launches.length === 0) break;
    const t = e.launches[0].trials[0];
    const x = t.params.x as number;
    core.taskUpdate('curves', { taskId: t.taskId, state: 'TASK_RUNNING', message: '' }, now);
    let killed = false;
    for (let s = 1; s <= steps && !killed; s++) {
      now += 1;
      used += 1;
      core.trialOutput('curves', t.taskId, [`step=${s} loss=${curve(x, s, family)}`], s * 40, now);
      killed = core.takeEffects().kills.some((k) => k.taskId === t.taskId);
    }
    if (killed) {
      stopped += 1;
      core.taskUpdate('curves', { taskId: t.taskId, state: 'TASK_KILLED', message: '' }, now);
    } else {
      const final = curve(x, steps, family);
      core.trialOutput('curves', t.taskId, [`loss=${final}`], steps * 40 + 20, now);
      best = Math.min(best, final);
      core.taskUpdate('curves', { taskId: t.taskId, state: 'TASK_FINISHED', message: '' }, now);
    }
    core.takeEffects();
  }
  return { best, steps: used, stopped };
}
