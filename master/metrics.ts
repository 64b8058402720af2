// Counters and histograms the leader keeps for `GET /metrics` (rendered by
// api/metrics-text.ts in the Prometheus text format, shared/prometheus.ts).

import { DURATION_BUCKETS_S, Histogram } from '../shared/prometheus.ts';
import type { PreemptionRecord } from '../shared/sharing/views.ts';

export { promFamily } from '../shared/prometheus.ts';

/** Launches take from milliseconds (a process) to minutes (an image pulled first). */
export const LAUNCH_BUCKETS_S: readonly number[] = [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];

export class MasterMetrics {
  agentConnections = 0;
  badAgentFrames = 0;
  statusUpdates = 0;
  tasksLaunched = 0;
  offersMade = 0;
  offersRescinded = 0;
  badRequests = 0;
  readonly calls = new Map<string, number>();
  /** How long each allocation cycle took. */
  readonly allocationSeconds = new Histogram(DURATION_BUCKETS_S);
  /** From a task's ACCEPT to its TASK_RUNNING, both as the leader recorded them. */
  readonly launchSeconds = new Histogram(LAUNCH_BUCKETS_S);
  private allocationLastMs = 0;
  /** Preemptions committed, by `cause\tclass` (the preemptor's priority class). */
  readonly preemptions = new Map<string, number>();
  /** Tasks preempted, by `cause\tclass` (the victim's priority class). */
  readonly preemptedTasks = new Map<string, number>();

  /** A preemption the leader committed: one for its cause and preemptor's class, one per victim. */
  countPreemption(r: PreemptionRecord): void {
    const bump = (m: Map<string, number>, k: string) => m.set(k, (m.get(k) ?? 0) + 1);
    bump(this.preemptions, `${r.cause}\t${r.preemptor.priorityClass}`);
    for (const v of r.victims) bump(this.preemptedTasks, `${r.cause}\t${v.priorityClass}`);
  }

  observeAllocation(ms: number): void {
    this.allocationSeconds.observe(ms / 1000);
    this.allocationLastMs = ms;
  }

  get allocation(): { count: number; sumMs: number; lastMs: number } {
    const s = this.allocationSeconds.snapshot();
    return { count: s.count, sumMs: s.sum * 1000, lastMs: this.allocationLastMs };
  }
}
