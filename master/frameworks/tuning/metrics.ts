// What the tuning framework adds to the master's /metrics: experiments by phase, trials by
// state, the trials that wait to be started (how many, how long the oldest has waited) and
// how long trials waited before they started. Read from the replicated store, so every
// master answers alike.

import type { FrameworkMetrics } from '../../../shared/framework-host/contract.ts';
import { followQueue, type QueueStatus } from '../../../shared/framework-host/queue-waits.ts';
import type { FrameworkStore, JsonValue } from '../../../shared/framework-host/store.ts';
import { histogramFamily, promFamily } from '../../../shared/prometheus.ts';
import { EXPERIMENT_KEY_PREFIX, type ExperimentPhase, type ExperimentRecord, type TrialRecord, type TrialState } from './record.ts';

const EXPERIMENT_PHASES: readonly ExperimentPhase[] = ['Running', 'Succeeded', 'Failed', 'Stopped'];
const TRIAL_STATES: readonly TrialState[] = ['Pending', 'Starting', 'Running', 'Succeeded', 'Failed', 'EarlyStopped', 'Killed'];
const TRIAL_KEY_PREFIX = 'trial/';

/**
 * A trial waits while Pending, from its creation (or the end of its back-off after a lost
 * attempt, a wait it chose) until it is started.
 */
export function trialQueueStatus(t: TrialRecord): QueueStatus {
  const since = Math.max(t.createdMs, t.restartAtMs ?? 0);
  if (t.state === 'Pending') return { waitingSinceMs: since };
  return t.startedMs !== undefined ? { placedAtMs: t.startedMs, queuedAtMs: Math.min(since, t.startedMs) } : undefined;
}

function counts<K extends string>(keys: readonly K[], values: Iterable<K>): Map<K, number> {
  const out = new Map<K, number>(keys.map((k) => [k, 0]));
  for (const v of values) out.set(v, (out.get(v) ?? 0) + 1);
  return out;
}

export function tuningMetrics(store: FrameworkStore): FrameworkMetrics {
  const waits = followQueue<TrialRecord>(store, TRIAL_KEY_PREFIX, trialQueueStatus);
  return {
    families: (nowMs) => {
      const phases = counts(EXPERIMENT_PHASES, store.entries<JsonValue>(EXPERIMENT_KEY_PREFIX).map(([, v]) => (v as unknown as ExperimentRecord).phase));
      const states = counts(TRIAL_STATES, store.entries<JsonValue>(TRIAL_KEY_PREFIX).map(([, v]) => (v as unknown as TrialRecord).state));
      return [
        promFamily('cairn_experiments', 'gauge', 'Tuning experiments, by phase.', [...phases].map(([phase, value]) => ({ labels: { phase }, value }))),
        promFamily('cairn_trials', 'gauge', "Tuning experiments' trials, by state.", [...states].map(([state, value]) => ({ labels: { state }, value }))),
        promFamily('cairn_trials_queued', 'gauge', 'Trials waiting to be started (Pending).', [{ value: waits.depth }]),
        promFamily('cairn_trials_queued_oldest_wait_seconds', 'gauge', 'How long the trial waiting longest to be started has waited; 0 when none waits.', [{ value: waits.oldestSeconds(nowMs) }]),
        histogramFamily('cairn_trials_queue_wait_seconds', "From a trial's creation (or its back-off over) to its start, for the trials started since this master started.", waits.histogram()),
      ];
    },
  };
}
