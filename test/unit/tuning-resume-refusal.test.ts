// What a refused resume says: which limit to raise, and above what, for each way an
// experiment can have nothing left to run.

import { describe, expect, it } from 'vitest';
import { nothingLeft } from '../../master/frameworks/tuning/resume-refusal.ts';
import type { ExperimentRecord, TrialRecord } from '../../master/frameworks/tuning/record.ts';

function record(over: Partial<ExperimentRecord>): ExperimentRecord {
  return {
    spec: { maxFailedTrialCount: 1 } as ExperimentRecord['spec'], ignored: [], owner: '', uid: 'u', createdMs: 0,
    phase: 'Succeeded', reason: 'MaxTrialsReached', message: '', trialCount: 4, maxTrialCount: 4, exhausted: false, conditions: [], ...over,
  };
}

const trial = (state: TrialRecord['state']) => ({ state }) as TrialRecord;

describe('nothingLeft', () => {
  it('names the trial budget and the count to go above, with what was asked', () => {
    expect(nothingLeft(record({}), [], {})).toEqual({ field: 'maxTrialCount', message: 'ended MaxTrialsReached after 4 trials (maxTrialCount 4): give maxTrialCount above 4 to run more' });
    expect(nothingLeft(record({ reason: 'GoalReached', trialCount: 1, maxTrialCount: 12 }), [], { maxTrialCount: 3 })).toEqual({
      field: 'maxTrialCount', message: 'ended GoalReached after 1 trial (maxTrialCount 12): give maxTrialCount above 12 (asked: 3) to run more',
    });
  });

  it('names the failure budget when failures are past it, counting the raise asked for', () => {
    const failed = [trial('Failed'), trial('Failed'), trial('Failed'), trial('Succeeded')];
    const r = record({ phase: 'Failed', reason: 'MaxFailedTrialsReached' });
    expect(nothingLeft(r, failed, {})).toEqual({ field: 'maxFailedTrialCount', message: 'has 3 trials failed (maxFailedTrialCount 1): give maxFailedTrialCount 3 or more to go on' });
    expect(nothingLeft(r, failed, { maxFailedTrialCount: 2 }).message).toMatch(/\(maxFailedTrialCount 2\)/);
    expect(nothingLeft(r, failed, { maxFailedTrialCount: 3 }).field).toBe('maxTrialCount');
  });

  it('says a searched-out space has no more trials, whatever the budget', () => {
    expect(nothingLeft(record({ reason: 'SearchSpaceExhausted', exhausted: true }), [], { maxTrialCount: 9 })).toEqual({
      field: 'name', message: 'has searched its whole space (SearchSpaceExhausted, 4 trials): no more trials can be proposed',
    });
    // A grid whose goal was reached on its last point: more trials cannot be proposed either.
    expect(nothingLeft(record({ reason: 'GoalReached', exhausted: true }), [], { maxTrialCount: 9 }).field).toBe('name');
    expect(nothingLeft(record({ reason: 'GoalReached', exhausted: true }), [], {}).field).toBe('maxTrialCount');
  });
});
