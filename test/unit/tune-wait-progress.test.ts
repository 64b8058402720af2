// What `cairn tune submit --wait` prints beside each ended trial: new conditions, each trial
// as it starts (a distributed trial once its chief runs, not when its job is submitted), and
// why trials wait when that changes.

import { describe, expect, it } from 'vitest';
import { ExperimentProgress } from '../../bin/commands/tune/wait-progress.ts';
import type { ExperimentView, TrialView } from '../../shared/tuning/views.ts';

function trial(index: number, state: TrialView['state'], extra: Partial<TrialView> = {}): TrialView {
  return { index, name: `exp-${index}`, state, params: {}, metrics: {}, intermediate: [], attempt: 1, createdMs: 0, ...extra };
}

function view(trials: TrialView[], conditions: ExperimentView['conditions'] = [{ type: 'Created', reason: 'ExperimentCreated', message: 'the experiment was created', atMs: 0 }]): ExperimentView {
  return { name: 'exp', trials, conditions } as unknown as ExperimentView;
}

describe('ExperimentProgress', () => {
  it('a distributed trial waiting for its gang: the reason, then started once its chief runs', () => {
    const p = new ExperimentProgress();
    const why = 'waiting for room: worker-0 needs cpus 0.5; the best agent, h1, has cpus 0.3 free; /dev/web holds cpus 0.2 there';
    expect(p.lines(view([trial(0, 'Starting', { jobName: 'tune-0' })]))).toEqual(['experiment exp: Created (ExperimentCreated): the experiment was created']);
    expect(p.lines(view([trial(0, 'Starting', { jobName: 'tune-0', message: why })]))).toEqual([`1 trial ${why}`]);
    expect(p.lines(view([trial(0, 'Starting', { jobName: 'tune-0', message: why })]))).toEqual([]);
    expect(p.lines(view([trial(0, 'Running', { jobName: 'tune-0', taskId: 't', hostname: 'h1', startedMs: 5 })]))).toEqual(['trial 0 started on h1']);
  });

  it('a task trial has started once launched; a new condition is said once', () => {
    const p = new ExperimentProgress();
    p.lines(view([trial(0, 'Pending')]));
    const cs: ExperimentView['conditions'] = [{ type: 'Created', reason: 'ExperimentCreated', message: 'c', atMs: 0 }, { type: 'Succeeded', reason: 'GoalReached', message: 'trial 0 reached the goal', atMs: 1 }];
    expect(p.lines(view([trial(0, 'Starting', { taskId: 't' })], cs))).toEqual(['experiment exp: Succeeded (GoalReached): trial 0 reached the goal', 'trial 0 started']);
  });
});
