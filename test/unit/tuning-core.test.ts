// The tuning core as a pure unit: trials proposed within the parallelism and the budget,
// placed on offers, read from their stdout, judged at their end; an experiment ends on its
// goal, its budget, or its failures; a new core loaded from the records (a new leader)
// carries on without running a finished trial again; early stopping saves trial time.

import { describe, expect, it } from 'vitest';
import { Resources } from '../../shared/resources.ts';
import { TuningCore, type TuningEffects } from '../../master/frameworks/tuning/core.ts';
import type { ExperimentSpec } from '../../shared/tuning/model.ts';
import type { ExperimentRecord, TrialRecord } from '../../master/frameworks/tuning/record.ts';
import type { HeldOffer } from '../../shared/sdk/held-offer.ts';
import { runCurves } from '../sim/tuning-curves.ts';

function spec(over: Partial<ExperimentSpec> = {}): ExperimentSpec {
  return {
    name: 'exp', role: '*',
    objective: { type: 'maximize', metricName: 'accuracy', additionalMetricNames: [], goal: 0.99 },
    algorithm: { name: 'random', settings: {} },
    space: { params: [{ kind: 'double', name: 'lr', low: 0, high: 1, log: false }] },
    parallelTrialCount: 2, maxTrialCount: 6, maxFailedTrialCount: 1, seed: 7,
    scheduling: 'fifo', dynamic: { declinesPerLevel: 2, patience: 3, maxLevel: 4 },
    trial: { command: 'train --lr ${lr}', cpus: 1, memMb: 128, diskMb: 0, gpus: 0, env: {}, inputs: [], outputs: [], files: [], timeoutSeconds: 0 },
    ...over,
  };
}

let offerSeq = 0;
function offer(cpus = 4, agent = 'a1'): HeldOffer {
  return { id: `o${++offerSeq}`, agentId: agent, hostname: agent, ip: '127.0.0.1', resources: Resources.of({ cpus, mem: 4096, disk: 0, gpus: 0 }), role: '*' };
}

/** The records written so far, as a store would hold them. */
class Store {
  readonly data = new Map<string, unknown>();
  apply(e: TuningEffects): TuningEffects {
    for (const [k, v] of e.writes) if (v === null) this.data.delete(k); else this.data.set(k, structuredClone(v));
    return e;
  }
  experiments(): ExperimentRecord[] {
    return [...this.data].filter(([k]) => k.startsWith('experiment/')).map(([, v]) => v as ExperimentRecord);
  }
  trials(): TrialRecord[] {
    return [...this.data].filter(([k]) => k.startsWith('trial/')).map(([, v]) => v as TrialRecord);
  }
}

/** Runs a launched trial to its end: its stdout lines, then TASK_FINISHED (or another state). */
function finish(core: TuningCore, taskId: string, lines: string[], now: number, state = 'TASK_FINISHED'): void {
  core.taskUpdate('exp', { taskId, state: 'TASK_RUNNING', message: '' }, now);
  core.trialOutput('exp', taskId, lines, 100, now);
  core.taskUpdate('exp', { taskId, state, message: state === 'TASK_FINISHED' ? '' : 'exited with code 1' }, now);
}

describe('the tuning core: why trials wait', () => {
  it('an offer too small for a trial makes the pending trials say what is short and who holds it, once per change; a started trial forgets it', () => {
    let why = 'needs cpus 1; the best agent, a1, has cpus 0.5 free; /dev/web holds cpus 0.5 there';
    const asked: (string | undefined)[] = [];
    const core = new TuningCore({ explainWait: (members, cls) => {
      asked.push(`${members.map((m) => `${m.label}:${m.cpus}`).join()} ${cls}`);
      return why;
    } });
    const store = new Store();
    core.submit(spec({ priorityClass: 'production' }), [], 'u1', 0, 'alice');
    store.apply(core.takeEffects());
    core.offers('exp', [offer(0.5), offer(0.5, 'a2')], 10);
    let e = store.apply(core.takeEffects());
    expect(asked).toEqual(['a trial:1 production']);
    expect(store.trials().map((t) => t.message)).toEqual([`waiting for room: ${why}`, `waiting for room: ${why}`]);
    // The same reason again writes nothing.
    core.offers('exp', [offer(0.5)], 20);
    e = store.apply(core.takeEffects());
    expect([...e.writes.keys()].filter((k) => k.startsWith('trial/'))).toEqual([]);
    why = 'needs cpus 1; the best agent, a1, has cpus 0.7 free; /dev/web holds cpus 0.3 there';
    core.offers('exp', [offer(0.7)], 30);
    store.apply(core.takeEffects());
    expect(store.trials()[0]!.message).toBe(`waiting for room: ${why}`);
    core.offers('exp', [offer(1)], 40);
    store.apply(core.takeEffects());
    expect(store.trials().find((t) => t.state === 'Starting')?.message).toBeUndefined();
  });
});

describe('the tuning core', () => {
  it('proposes trials up to the parallelism, writes them before it launches them, and places them on offers', () => {
    const core = new TuningCore();
    const store = new Store();
    const r = core.submit(spec(), [], 'u1', 0, 'alice');
    expect(r).not.toBe('exists');
    let e = store.apply(core.takeEffects());
    // Two pending trials (parallelism 2), the experiment record: nothing launched without an offer.
    expect(store.trials().map((t) => t.state)).toEqual(['Pending', 'Pending']);
    expect(e.launches).toEqual([]);
    expect(core.wantsOffers('exp')).toBe(true);
    core.offers('exp', [offer(1.5)], 10);
    e = store.apply(core.takeEffects());
    // 1.5 CPUs hold one trial of 1 CPU; the write of its Starting record comes with the launch.
    expect(e.launches).toHaveLength(1);
    expect(e.launches[0].trials.map((t) => t.index)).toEqual([0]);
    expect(e.writes.get('trial/exp/000000')).toMatchObject({ state: 'Starting', attempt: 1, taskId: e.launches[0].trials[0].taskId });
    core.offers('exp', [offer()], 20);
    e = store.apply(core.takeEffects());
    expect(e.launches[0].trials.map((t) => t.index)).toEqual([1]);
    // Nothing waits: the next offer is declined for a while.
    core.offers('exp', [offer()], 30);
    e = core.takeEffects();
    expect(e.declines).toEqual([{ experiment: 'exp', offerIds: [expect.any(String)], refuseSeconds: 30 }]);
    expect(core.wantsOffers('exp')).toBe(false);
  });

  it('reads metrics and steps from stdout, and succeeds when a trial reaches the goal, killing the others', () => {
    const core = new TuningCore();
    const store = new Store();
    core.submit(spec({ objective: { type: 'maximize', metricName: 'accuracy', additionalMetricNames: [], goal: 0.9 } }), [], 'u1', 0, '');
    core.offers('exp', [offer()], 0);
    const [l] = store.apply(core.takeEffects()).launches;
    const [a, b] = l.trials.map((t) => t.taskId);
    core.taskUpdate('exp', { taskId: b, state: 'TASK_RUNNING', message: '' }, 1);
    core.trialOutput('exp', a, ['epoch 1', 'step=1 accuracy=0.5 loss=2', 'step=2 accuracy=0.8', 'noise=x'], 50, 2);
    finish(core, a, ['accuracy = 0.93'], 3);
    const e = store.apply(core.takeEffects());
    const t0 = store.trials().find((t) => t.index === 0)!;
    expect(t0.state).toBe('Succeeded');
    expect(t0.metrics).toEqual({ accuracy: 0.93, loss: 2 });
    // Steps 1 and 2 given; the last line had none: it is the result, not a step 3.
    expect(t0.intermediate).toEqual([{ step: 1, value: 0.5 }, { step: 2, value: 0.8 }]);
    const ex = store.experiments()[0];
    expect(ex.phase).toBe('Succeeded');
    expect(ex.reason).toBe('GoalReached');
    expect(e.kills.map((k) => k.taskId)).toEqual([b]);
    // The trial being killed ends as Killed, and only then is the experiment settled (its framework torn down).
    expect(e.teardowns).toEqual([]);
    core.taskUpdate('exp', { taskId: b, state: 'TASK_KILLED', message: 'killed' }, 4);
    const end = store.apply(core.takeEffects());
    expect(store.trials().find((t) => t.index === 1)!.state).toBe('Killed');
    expect(end.teardowns).toEqual(['exp']);
  });

  it('records no phantom step for the result a trial prints after its numbered reports (the report clients\' pattern)', () => {
    const core = new TuningCore();
    const store = new Store();
    core.submit(spec({ parallelTrialCount: 2, objective: { type: 'maximize', metricName: 'accuracy', additionalMetricNames: [] } }), [], 'u1', 0, '');
    core.offers('exp', [offer()], 0);
    const [l] = store.apply(core.takeEffects()).launches;
    const [a, b] = l.trials.map((t) => t.taskId);
    // As clients/python/cairn_report.py documents: report(step=epoch, ...) per epoch, then report(accuracy=acc).
    finish(core, a, ['step=1 accuracy=0.5 loss=0.9', 'step=2 accuracy=0.7 loss=0.5', 'step=3 accuracy=0.8 loss=0.4', 'accuracy=0.8'], 1);
    // A trial that numbers nothing: each report is a step of its curve, the last the result.
    finish(core, b, ['accuracy=0.2', 'accuracy=0.4', 'accuracy=0.6'], 2);
    store.apply(core.takeEffects());
    const [t0, t1] = store.trials().sort((x, y) => x.index - y.index);
    expect(t0.state).toBe('Succeeded');
    expect(t0.intermediate).toEqual([{ step: 1, value: 0.5 }, { step: 2, value: 0.7 }, { step: 3, value: 0.8 }]);
    expect(t0.metrics).toEqual({ accuracy: 0.8, loss: 0.4 });
    expect(t1.intermediate).toEqual([{ step: 1, value: 0.2 }, { step: 2, value: 0.4 }, { step: 3, value: 0.6 }]);
    expect(t1.metrics).toEqual({ accuracy: 0.6 });
  });

  it('fails a trial that exits non-zero or reports no metric, and the experiment past maxFailedTrialCount', () => {
    const core = new TuningCore();
    const store = new Store();
    core.submit(spec({ maxFailedTrialCount: 1 }), [], 'u1', 0, '');
    core.offers('exp', [offer()], 0);
    const [l] = store.apply(core.takeEffects()).launches;
    finish(core, l.trials[0].taskId, ['loss=0.3'], 1);
    finish(core, l.trials[1].taskId, ['accuracy=0.5'], 1, 'TASK_FAILED');
    store.apply(core.takeEffects());
    const [t0, t1] = store.trials().sort((x, y) => x.index - y.index);
    expect(t0).toMatchObject({ state: 'Failed', message: "exited 0 but reported no metric 'accuracy'" });
    expect(t1).toMatchObject({ state: 'Failed', message: 'TASK_FAILED: exited with code 1' });
    const ex = store.experiments()[0];
    expect(ex).toMatchObject({ phase: 'Failed', reason: 'MaxFailedTrialsReached' });
    // Trials proposed after the first failure were never run.
    expect(store.trials().filter((t) => t.state === 'Killed').every((t) => t.attempt === 0)).toBe(true);
  });

  it('runs a trial again when its agent is lost, after its back-off, and ends with MaxTrialsReached after maxTrialCount', () => {
    const core = new TuningCore();
    const store = new Store();
    core.submit(spec({ parallelTrialCount: 1, maxTrialCount: 2, objective: { type: 'minimize', metricName: 'loss', additionalMetricNames: [] } }), [], 'u1', 0, '');
    core.offers('exp', [offer()], 0);
    let [l] = store.apply(core.takeEffects()).launches;
    core.taskUpdate('exp', { taskId: l.trials[0].taskId, state: 'TASK_LOST', message: 'agent gone' }, 1);
    store.apply(core.takeEffects());
    // The back-off (10 s, Kubernetes' first) is in the record: a new leader waits the same.
    expect(store.trials()[0]).toMatchObject({ state: 'Pending', attempt: 1, restartAtMs: 10_001, backoffRestarts: 1 });
    expect(core.wantsOffers('exp', 2)).toBe(false);
    core.offers('exp', [offer(4, 'a2')], 2);
    expect(store.apply(core.takeEffects()).launches).toEqual([]);
    expect(core.wantsOffers('exp', 10_001)).toBe(true);
    core.offers('exp', [offer(4, 'a2')], 10_001);
    [l] = store.apply(core.takeEffects()).launches;
    expect(l.trials[0]).toMatchObject({ index: 0, taskId: expect.stringMatching(/-0-2$/) });
    finish(core, l.trials[0].taskId, ['loss=0.25'], 3);
    core.offers('exp', [offer()], 4);
    [l] = store.apply(core.takeEffects()).launches;
    expect(l.trials[0].index).toBe(1);
    finish(core, l.trials[0].taskId, ['loss=0.5'], 5);
    const e = store.apply(core.takeEffects());
    expect(store.experiments()[0]).toMatchObject({ phase: 'Succeeded', reason: 'MaxTrialsReached', trialCount: 2 });
    expect(e.teardowns).toEqual(['exp']);
  });

  it('a new core loaded from the records runs no finished trial again and proposes what the old one would have', () => {
    const run = (crashAfter: number | undefined) => {
      let core = new TuningCore();
      const store = new Store();
      core.submit(spec({ parallelTrialCount: 1, maxTrialCount: 5, objective: { type: 'maximize', metricName: 'accuracy', additionalMetricNames: [] } }), [], 'u1', 0, '');
      const launched: string[] = [];
      for (let i = 0; i < 5; i++) {
        if (i === crashAfter) {
          core = new TuningCore();
          core.load(store.experiments(), store.trials(), i * 10);
          store.apply(core.takeEffects());
        }
        core.offers('exp', [offer()], i * 10);
        const [l] = store.apply(core.takeEffects()).launches;
        launched.push(l.trials[0].taskId);
        const lr = l.trials[0].params.lr as number;
        finish(core, l.trials[0].taskId, [`accuracy=${lr}`], i * 10 + 5);
        store.apply(core.takeEffects());
      }
      return { launched, trials: store.trials().sort((a, b) => a.index - b.index).map((t) => [t.index, t.params.lr, t.state]) };
    };
    const straight = run(undefined);
    const crashed = run(2);
    expect(crashed).toEqual(straight);
    expect(new Set(crashed.launched).size).toBe(5);
  });

  it('a new core asks again for the kills the old one had asked', () => {
    const core = new TuningCore();
    const store = new Store();
    core.submit(spec(), [], 'u1', 0, '');
    core.offers('exp', [offer()], 0);
    const [l] = store.apply(core.takeEffects()).launches;
    core.stop('exp', 1);
    expect(store.apply(core.takeEffects()).kills).toHaveLength(2);
    const next = new TuningCore();
    next.load(store.experiments(), store.trials(), 2);
    expect(next.takeEffects().kills.map((k) => k.taskId).sort()).toEqual(l.trials.map((t) => t.taskId).sort());
  });

  it('stops and resumes: killed trials run again with their parameters', () => {
    const core = new TuningCore();
    const store = new Store();
    core.submit(spec(), [], 'u1', 0, '');
    core.offers('exp', [offer()], 0);
    const [l] = store.apply(core.takeEffects()).launches;
    expect(core.resume('exp', 1)).toBe('running');
    expect(core.stop('exp', 1)).toBe(true);
    for (const t of l.trials) core.taskUpdate('exp', { taskId: t.taskId, state: 'TASK_KILLED', message: '' }, 2);
    store.apply(core.takeEffects());
    expect(store.experiments()[0].phase).toBe('Stopped');
    const before = store.trials().map((t) => t.params);
    expect(core.resume('exp', 3)).toBe('resumed');
    store.apply(core.takeEffects());
    expect(store.trials().map((t) => t.state)).toEqual(['Pending', 'Pending']);
    expect(store.trials().map((t) => t.params)).toEqual(before);
    core.offers('exp', [offer()], 4);
    const [again] = store.apply(core.takeEffects()).launches;
    expect(again.trials.map((t) => t.taskId)).toEqual(l.trials.map((t) => t.taskId.replace(/-1$/, '-2')));
  });

  it('resumes an experiment that reached its goal, or its budget, when given more trials, and goes on searching', () => {
    const core = new TuningCore();
    const store = new Store();
    // One trial at a time, 2 in all, goal accuracy >= 0.9.
    core.submit(spec({ parallelTrialCount: 1, maxTrialCount: 2, objective: { type: 'maximize', metricName: 'accuracy', additionalMetricNames: [], goal: 0.9 } }), [], 'u1', 0, '');
    core.offers('exp', [offer()], 0);
    let [l] = store.apply(core.takeEffects()).launches;
    finish(core, l.trials[0].taskId, ['accuracy=0.95'], 1);
    store.apply(core.takeEffects());
    expect(store.experiments()[0]).toMatchObject({ phase: 'Succeeded', reason: 'GoalReached', trialCount: 1 });
    // No more trials asked for: a goal reached is the end.
    expect(core.resume('exp', 2)).toBe('nothing-left');
    expect(core.resume('exp', 2, { maxTrialCount: 2 })).toBe('nothing-left');
    // More trials: it searches on, its finished trial kept.
    expect(core.resume('exp', 3, { maxTrialCount: 3 })).toBe('resumed');
    store.apply(core.takeEffects());
    expect(store.experiments()[0]).toMatchObject({ phase: 'Running', reason: 'ExperimentResumed', maxTrialCount: 3 });
    expect(store.trials().map((t) => [t.index, t.state])).toEqual([[0, 'Succeeded'], [1, 'Pending']]);
    core.offers('exp', [offer()], 4);
    [l] = store.apply(core.takeEffects()).launches;
    finish(core, l.trials[0].taskId, ['accuracy=0.5'], 5);
    core.offers('exp', [offer()], 6);
    [l] = store.apply(core.takeEffects()).launches;
    finish(core, l.trials[0].taskId, ['accuracy=0.6'], 7);
    store.apply(core.takeEffects());
    expect(store.experiments()[0]).toMatchObject({ phase: 'Succeeded', reason: 'MaxTrialsReached', trialCount: 3 });
    // Its budget spent: more trials again, and it goes on.
    expect(core.resume('exp', 8)).toBe('nothing-left');
    expect(core.resume('exp', 8, { maxTrialCount: 4 })).toBe('resumed');
    store.apply(core.takeEffects());
    expect(store.trials().map((t) => t.state)).toEqual(['Succeeded', 'Succeeded', 'Succeeded', 'Pending']);
  });

  it('keeps an experiment of resumePolicy Never ended once it ends on its own, but resumes one stopped on request', () => {
    const core = new TuningCore();
    const store = new Store();
    core.submit(spec({ parallelTrialCount: 1, maxTrialCount: 1, resumePolicy: 'Never' }), [], 'u1', 0, '');
    core.offers('exp', [offer()], 0);
    let [l] = store.apply(core.takeEffects()).launches;
    expect(core.stop('exp', 1)).toBe(true);
    core.taskUpdate('exp', { taskId: l.trials[0].taskId, state: 'TASK_KILLED', message: '' }, 2);
    store.apply(core.takeEffects());
    expect(core.resume('exp', 3)).toBe('resumed');
    core.offers('exp', [offer()], 4);
    [l] = store.apply(core.takeEffects()).launches;
    finish(core, l.trials[0].taskId, ['accuracy=0.5'], 5);
    store.apply(core.takeEffects());
    expect(store.experiments()[0]).toMatchObject({ phase: 'Succeeded', reason: 'MaxTrialsReached' });
    expect(core.resume('exp', 6, { maxTrialCount: 5 })).toBe('not-resumable');
    expect(store.apply(core.takeEffects()).writes.size).toBe(0);
  });

  it('kills a trial that runs past its timeout and counts it failed', () => {
    const core = new TuningCore();
    const store = new Store();
    core.submit(spec({ parallelTrialCount: 1, trial: { ...spec().trial, timeoutSeconds: 10 } }), [], 'u1', 0, '');
    core.offers('exp', [offer()], 0);
    const [l] = store.apply(core.takeEffects()).launches;
    const id = l.trials[0].taskId;
    core.taskUpdate('exp', { taskId: id, state: 'TASK_RUNNING', message: '' }, 1_000);
    core.tick(10_999);
    expect(core.takeEffects().kills).toEqual([]);
    core.tick(11_001);
    expect(store.apply(core.takeEffects()).kills.map((k) => k.taskId)).toEqual([id]);
    core.taskUpdate('exp', { taskId: id, state: 'TASK_KILLED', message: '' }, 11_500);
    store.apply(core.takeEffects());
    expect(store.trials()[0]).toMatchObject({ state: 'Failed', message: 'ran longer than trial.timeoutSeconds (10 s)' });
  });
});

describe('distributed trials', () => {
  it('a trial whose job waits for its gang says why, once per reason, and forgets it when the chief runs', () => {
    const core = new TuningCore();
    const store = new Store();
    core.submit(spec({ parallelTrialCount: 1, maxTrialCount: 1, trial: { ...spec().trial, job: { kind: 'pytorch', groups: [] } } }), [], 'u1', 0, '');
    store.apply(core.takeEffects());
    const why = 'worker-0 needs cpus 0.5; the best agent, h1, has cpus 0.3 free after the gang\'s other replicas; /dev/web holds cpus 0.2 there';
    core.jobTrialUpdate('exp', 'tune-u1-0-1', { phase: 'queued', message: `its gang of 2 replicas does not fit: ${why}; gathering offers` }, 1);
    store.apply(core.takeEffects());
    expect(store.trials()[0]!.message).toBe(`waiting for room: ${why}`);
    // The countdown of the same reason writes nothing; a message that says no reason is not taken.
    core.jobTrialUpdate('exp', 'tune-u1-0-1', { phase: 'queued', message: `its gang of 2 replicas does not fit: ${why}; trying again in 8000 ms (attempt 3)` }, 2);
    core.jobTrialUpdate('exp', 'tune-u1-0-1', { phase: 'queued', message: 'waiting to place its gang of 2 replicas' }, 2);
    expect([...core.takeEffects().writes.keys()]).toEqual([]);
    core.jobTrialUpdate('exp', 'tune-u1-0-1', { phase: 'running', taskId: 't0', agentId: 'a1', hostname: 'h1' }, 3);
    store.apply(core.takeEffects());
    expect(store.trials()[0]).toMatchObject({ state: 'Running' });
    expect(store.trials()[0]!.message).toBeUndefined();
  });

  it('runs each trial as a job, follows it, and removes the jobs of a removed experiment', () => {
    const core = new TuningCore();
    const store = new Store();
    core.submit(spec({ parallelTrialCount: 2, maxTrialCount: 3, trial: { ...spec().trial, job: { kind: 'pytorch', groups: [] } } }), [], 'u1', 0, '');
    let e = store.apply(core.takeEffects());
    // No offers needed: each pending trial becomes a job at once, its record written with it.
    expect(core.wantsOffers('exp')).toBe(false);
    expect(core.needsFramework('exp')).toBe(false);
    expect(e.jobLaunches.map((j) => [j.index, j.jobName])).toEqual([[0, 'tune-u1-0-1'], [1, 'tune-u1-1-1']]);
    expect(store.trials().map((t) => [t.state, t.jobName])).toEqual([['Starting', 'tune-u1-0-1'], ['Starting', 'tune-u1-1-1']]);
    // The first replica runs: its stdout is the trial's; then the job succeeds.
    core.jobTrialUpdate('exp', 'tune-u1-0-1', { phase: 'running', taskId: 't0', agentId: 'a1', hostname: 'h1' }, 1);
    core.trialOutput('exp', 't0', ['accuracy=0.5'], 12, 2);
    core.jobTrialUpdate('exp', 'tune-u1-0-1', { phase: 'succeeded', message: 'done' }, 3);
    // The second job vanished before it ran (its submission lost): tried again as a new job.
    core.jobTrialUpdate('exp', 'tune-u1-1-1', { phase: 'gone', message: 'job tune-u1-1-1 is gone' }, 3);
    e = store.apply(core.takeEffects());
    // Not at once: after its back-off (10 s).
    expect(store.trials().map((t) => [t.index, t.state, t.jobName])).toEqual([[0, 'Succeeded', 'tune-u1-0-1'], [1, 'Pending', 'tune-u1-1-1'], [2, 'Starting', 'tune-u1-2-1']]);
    expect(e.jobLaunches.map((j) => j.jobName)).toEqual(['tune-u1-2-1']);
    core.tick(10_002);
    expect(store.apply(core.takeEffects()).jobLaunches).toEqual([]);
    core.tick(10_003);
    e = store.apply(core.takeEffects());
    expect(store.trials().map((t) => [t.index, t.state, t.jobName])).toEqual([[0, 'Succeeded', 'tune-u1-0-1'], [1, 'Starting', 'tune-u1-1-2'], [2, 'Starting', 'tune-u1-2-1']]);
    expect(store.trials()[0]!.metrics).toEqual({ accuracy: 0.5 });
    expect(e.jobLaunches.map((j) => j.jobName)).toEqual(['tune-u1-1-2']);
    // Removing the experiment removes the jobs of its trials still running.
    expect(core.remove('exp')).toBe(true);
    e = core.takeEffects();
    expect(e.kills.map((k) => k.jobName).sort()).toEqual(['tune-u1-1-2', 'tune-u1-2-1']);
  });
});

describe('the dynamic strategy between experiments', () => {
  it('a stagnating experiment declines offers only while one of a higher priority has a trial waiting', () => {
    // A short back-off: the lost trial below waits 1 ms.
    const core = new TuningCore({ restartBackoff: { initialMs: 1, factor: 2, maxMs: 4, resetAfterMs: 1_000 } });
    const dyn = spec({ name: 'slow', parallelTrialCount: 1, maxTrialCount: 50, scheduling: 'dynamic', dynamic: { declinesPerLevel: 2, patience: 1, maxLevel: 3 }, objective: { type: 'maximize', metricName: 'accuracy', additionalMetricNames: [] } });
    core.submit(dyn, [], 'u1', 0, '');
    // Its results get worse and worse: after the first, every trial is a stagnation.
    for (let i = 0; i < 3; i++) {
      core.offers('slow', [offer()], i);
      const [l] = core.takeEffects().launches;
      const id = l.trials[0].taskId;
      core.taskUpdate('slow', { taskId: id, state: 'TASK_RUNNING', message: '' }, i);
      core.trialOutput('slow', id, [`accuracy=${0.9 - i * 0.1}`], 20, i);
      core.taskUpdate('slow', { taskId: id, state: 'TASK_FINISHED', message: '' }, i);
      core.takeEffects();
    }
    expect(core.priorityLevel('slow')).toBe(2);
    // Nobody else waits: the offer is taken (declining it would leave it idle).
    core.offers('slow', [offer()], 10);
    expect(core.takeEffects().launches).toHaveLength(1);
    core.taskUpdate('slow', { taskId: core.experiment('slow')!.trials[3].taskId!, state: 'TASK_LOST', message: '' }, 11);
    core.takeEffects();
    // A fifo experiment with a trial waiting: offers the slow one could use are declined for it.
    core.submit(spec({ name: 'fast', parallelTrialCount: 1 }), [], 'u2', 12, '');
    core.takeEffects();
    core.offers('slow', [offer()], 13);
    const e = core.takeEffects();
    expect(e.launches).toEqual([]);
    expect(e.declines).toEqual([{ experiment: 'slow', offerIds: [expect.any(String)], refuseSeconds: 1 }]);
    // An offer too small for the waiting trial is no use to it: taken.
    core.submit(spec({ name: 'big', parallelTrialCount: 1, trial: { ...spec().trial, cpus: 8 } }), [], 'u3', 14, '');
    core.offers('fast', [offer()], 15);
    core.takeEffects();
    core.offers('slow', [offer(1)], 16);
    expect(core.takeEffects().launches).toHaveLength(1);
  });
});

describe('early stopping in an experiment', () => {
  it('ASHA reaches the same best value as the full search with at least 3x less trial time', () => {
    for (const seed of [1, 7, 11]) {
      const full = runCurves(undefined, 40, 27, seed);
      const asha = runCurves({ name: 'asha', settings: { min_resource: '1', reduction_factor: '3' } }, 40, 27, seed);
      expect(asha.best, `seed ${seed}`).toBe(full.best);
      expect(full.steps).toBe(40 * 27);
      expect(full.steps / asha.steps, `seed ${seed}`).toBeGreaterThanOrEqual(3);
    }
  });

  it('the median rule stops poor trials too, keeping the best', () => {
    const full = runCurves(undefined, 30, 20);
    const median = runCurves({ name: 'medianstop', settings: { min_trials_required: '3', start_step: '2' } }, 30, 20);
    expect(median.best).toBe(full.best);
    expect(median.steps).toBeLessThan(full.steps);
  });
});
