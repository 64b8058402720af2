// What the tuning REST API answers (its shapes: shared/tuning/views.ts): an experiment with its
// counts and best trial, and its trials. Built from the replicated records, so every master
// answers the same. Pure.

import { bestTrial, objectiveValue, type ExperimentRecord, type TrialRecord, type TrialState } from './record.ts';
import type { ExperimentSummary, ExperimentView, TrialView } from '../../../shared/tuning/views.ts';

export function trialView(e: ExperimentRecord, t: TrialRecord): TrialView {
  const value = objectiveValue(e.spec, t);
  return {
    index: t.index, name: `${e.spec.name}-${t.index}`, state: t.state, params: t.params,
    ...(value !== undefined ? { value } : {}),
    metrics: t.metrics, intermediate: t.intermediate, attempt: t.attempt, createdMs: t.createdMs,
    ...(t.taskId ? { taskId: t.taskId } : {}),
    ...(t.jobName ? { jobName: t.jobName } : {}),
    ...(t.hostname ? { hostname: t.hostname } : {}),
    ...(t.startedMs !== undefined ? { startedMs: t.startedMs } : {}),
    ...(t.finishedMs !== undefined ? { finishedMs: t.finishedMs } : {}),
    ...(t.exitCode !== undefined ? { exitCode: t.exitCode } : {}),
    ...(t.message ? { message: t.message } : {}),
  };
}

export function experimentSummary(e: ExperimentRecord, trials: readonly TrialRecord[]): ExperimentSummary {
  const counts: Record<TrialState, number> = { Pending: 0, Starting: 0, Running: 0, Succeeded: 0, Failed: 0, EarlyStopped: 0, Killed: 0 };
  for (const t of trials) counts[t.state] += 1;
  const best = bestTrial(e.spec, trials);
  return {
    name: e.spec.name, ...(e.spec.displayName !== undefined ? { displayName: e.spec.displayName } : {}), owner: e.owner, phase: e.phase, reason: e.reason, message: e.message,
    objective: e.spec.objective, algorithm: e.spec.algorithm.name,
    ...(e.spec.earlyStopping ? { earlyStopping: e.spec.earlyStopping.name } : {}),
    parallelTrialCount: e.spec.parallelTrialCount, maxTrialCount: e.maxTrialCount, maxFailedTrialCount: e.spec.maxFailedTrialCount,
    scheduling: e.spec.scheduling, seed: e.spec.seed, counts,
    ...(best ? { best: trialView(e, best) } : {}),
    createdMs: e.createdMs,
    ...(e.finishedMs !== undefined ? { finishedMs: e.finishedMs } : {}),
  };
}

export function experimentView(e: ExperimentRecord, trials: readonly TrialRecord[]): ExperimentView {
  return {
    ...experimentSummary(e, trials),
    spec: e.spec, ignored: e.ignored, conditions: e.conditions,
    trials: [...trials].sort((a, b) => a.index - b.index).map((t) => trialView(e, t)),
  };
}
