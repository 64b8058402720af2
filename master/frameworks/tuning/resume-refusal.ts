// Why `resume` found nothing to run, said so the caller knows which limit to raise and above
// what: failures past maxFailedTrialCount, a search space with no more points, or a trial
// budget spent (MaxTrialsReached, or a goal reached with no more trials asked for). Pure.

import type { ExperimentRecord, TrialRecord } from './record.ts';

const trials = (n: number) => `${n} trial${n === 1 ? '' : 's'}`;

/** Why a resume found nothing to run, and the limit that would let it go on, by how much. */
export function nothingLeft(r: ExperimentRecord, records: readonly TrialRecord[], limits: { maxTrialCount?: number; maxFailedTrialCount?: number }): { message: string; field: string } {
  const failed = records.filter((t) => t.state === 'Failed').length;
  const maxFailed = Math.max(r.spec.maxFailedTrialCount, limits.maxFailedTrialCount ?? 0);
  if (failed > maxFailed) {
    return { field: 'maxFailedTrialCount', message: `has ${trials(failed)} failed (maxFailedTrialCount ${maxFailed}): give maxFailedTrialCount ${failed} or more to go on` };
  }
  if (r.exhausted && (r.reason !== 'GoalReached' || (limits.maxTrialCount ?? 0) > r.maxTrialCount)) return { field: 'name', message: `has searched its whole space (${r.reason}, ${trials(r.trialCount)}): no more trials can be proposed` };
  const asked = limits.maxTrialCount !== undefined ? ` (asked: ${limits.maxTrialCount})` : '';
  return { field: 'maxTrialCount', message: `ended ${r.reason} after ${trials(r.trialCount)} (maxTrialCount ${r.maxTrialCount}): give maxTrialCount above ${Math.max(r.trialCount, r.maxTrialCount)}${asked} to run more` };
}
