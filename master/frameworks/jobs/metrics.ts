// What the jobs framework adds to the master's /metrics: jobs by phase, the jobs whose gang
// waits to be placed (how many, how long the oldest has waited) and how long gangs waited
// before they were placed. Read from the replicated store, so every master answers alike.

import type { FrameworkMetrics } from '../../../shared/framework-host/contract.ts';
import { followQueue, type QueueStatus } from '../../../shared/framework-host/queue-waits.ts';
import type { FrameworkStore, JsonValue } from '../../../shared/framework-host/store.ts';
import { JOB_PHASES } from '../../../shared/jobs/model.ts';
import { histogramFamily, promFamily } from '../../../shared/prometheus.ts';
import type { JobRecord } from './record.ts';
import { JOB_KEY_PREFIX } from './runtime.ts';

/**
 * A job waits while it is Queued with no gang placed, from its latest Queued condition (or
 * the end of its restart back-off, a wait it chose) until its gang is placed.
 */
export function jobQueueStatus(r: JobRecord): QueueStatus {
  const queued = [...r.conditions].reverse().find((c) => c.type === 'Queued')?.atMs ?? r.createdAtMs;
  const since = Math.max(queued, r.restartAtMs ?? 0);
  if (r.phase === 'Queued' && r.placedAtMs === undefined) return { waitingSinceMs: since };
  return r.placedAtMs !== undefined ? { placedAtMs: r.placedAtMs, queuedAtMs: Math.min(since, r.placedAtMs) } : undefined;
}

export function jobsMetrics(store: FrameworkStore): FrameworkMetrics {
  const waits = followQueue<JobRecord>(store, JOB_KEY_PREFIX, jobQueueStatus);
  return {
    families: (nowMs) => {
      const byPhase = new Map<string, number>(JOB_PHASES.map((p) => [p, 0]));
      for (const [, v] of store.entries<JsonValue>(JOB_KEY_PREFIX)) {
        const r = v as unknown as JobRecord;
        byPhase.set(r.phase, (byPhase.get(r.phase) ?? 0) + 1);
      }
      return [
        promFamily('cairn_jobs', 'gauge', 'Jobs the jobs framework holds, by phase.', [...byPhase].map(([phase, value]) => ({ labels: { phase }, value }))),
        promFamily('cairn_jobs_queued', 'gauge', 'Jobs whose gang waits to be placed (Queued, no gang placed).', [{ value: waits.depth }]),
        promFamily('cairn_jobs_queued_oldest_wait_seconds', 'gauge', 'How long the job waiting longest to be placed has waited; 0 when none waits.', [{ value: waits.oldestSeconds(nowMs) }]),
        histogramFamily('cairn_jobs_queue_wait_seconds', "From a job's gang queued (or its restart back-off over) to its gang placed, for the gangs placed since this master started.", waits.histogram()),
      ];
    },
  };
}
