// The agent's recent usage, kept where it is measured: the last `capacity` samples (15 min at
// the default 5 s) in a ring, each with the agent's sums, its GPUs and every task's share, so
// the dashboard can draw CPU, memory and GPU over time for the agent and for any task in the
// window (an ended one included). Kept on the agent rather than the master: it survives a
// change of leader, and a master never has to poll every agent for figures nobody reads.
// Memory: capacity × running tasks small records.

import type { AgentUsage, AgentUsagePoint, TaskUsagePoint, UsageHistory } from '../../shared/agent-usage.ts';

export const DEFAULT_HISTORY_POINTS = 180;

export class UsageRing {
  private readonly ring: (AgentUsagePoint | undefined)[];
  /** Where the next point goes. */
  private next = 0;

  constructor(readonly capacity = DEFAULT_HISTORY_POINTS) {
    if (!Number.isInteger(capacity) || capacity < 1) throw new RangeError(`capacity must be a whole number of at least 1, not ${capacity}`);
    this.ring = new Array<AgentUsagePoint | undefined>(capacity);
  }

  add(u: AgentUsage): void {
    const gpus = u.gpus.map((g) => ({ index: g.index, utilizationPercent: g.utilizationPercent, memoryUsedMiB: g.memoryUsedMiB }));
    this.ring[this.next] = {
      timestampMs: u.timestampMs,
      cpusUsed: u.total.cpusUsed,
      cpusLimit: u.total.cpusLimit,
      memoryBytes: u.total.memoryBytes,
      memoryLimitBytes: u.total.memoryLimitBytes,
      gpus,
      tasks: u.tasks.map((t) => ({
        taskId: t.taskId, frameworkId: t.frameworkId, cpusUsed: t.cpusUsed, cpusLimit: t.cpusLimit,
        memoryBytes: t.memoryBytes, memoryLimitBytes: t.memoryLimitBytes, gpuIndices: t.gpus.map((g) => g.index),
      })),
    };
    this.next = (this.next + 1) % this.capacity;
  }

  /** The points held, oldest first. */
  points(): AgentUsagePoint[] {
    const out: AgentUsagePoint[] = [];
    for (let k = 0; k < this.capacity; k++) {
      const p = this.ring[(this.next + k) % this.capacity];
      if (p) out.push(p);
    }
    return out;
  }

  agent(intervalMs: number): UsageHistory<AgentUsagePoint> {
    return { intervalMs, points: this.points() };
  }

  /** One task's points (the samples it was in), oldest first; undefined when none holds it. */
  task(taskId: string, intervalMs: number): UsageHistory<TaskUsagePoint> | undefined {
    const points: TaskUsagePoint[] = [];
    for (const p of this.points()) {
      const t = p.tasks.find((x) => x.taskId === taskId);
      if (!t) continue;
      const byIndex = new Map(p.gpus.map((g) => [g.index, g]));
      points.push({
        timestampMs: p.timestampMs, cpusUsed: t.cpusUsed, cpusLimit: t.cpusLimit, memoryBytes: t.memoryBytes, memoryLimitBytes: t.memoryLimitBytes,
        gpus: t.gpuIndices.map((i) => byIndex.get(i) ?? { index: i, utilizationPercent: null, memoryUsedMiB: null }),
      });
    }
    return points.length > 0 ? { intervalMs, points } : undefined;
  }
}
