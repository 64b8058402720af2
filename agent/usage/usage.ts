// The CPU rate between two usage samples and the sums over a sample's tasks (pure); the shapes
// served at `GET /api/v1/tasks/:id/usage` and `GET /api/v1/usage` are in shared/agent-usage.ts.

import type { UsageReport } from '../../shared/agent-protocol.ts';
import type { AgentUsage, TaskUsage, UsageTotals } from '../../shared/agent-usage.ts';

/** Average CPUs used between two readings of cumulative CPU time. */
export function cpuRate(prev: { cpuSeconds: number; timestampMs: number } | undefined, cpuSeconds: number, timestampMs: number): number | null {
  if (!prev || timestampMs <= prev.timestampMs) return null;
  // CPU time of processes that ended is not in /proc's sums, so it can go down there.
  const used = Math.max(0, cpuSeconds - prev.cpuSeconds);
  return used / ((timestampMs - prev.timestampMs) / 1000);
}

export function sumUsage(tasks: readonly TaskUsage[]): UsageTotals {
  const t: UsageTotals = { tasks: tasks.length, cpusUsed: 0, cpusLimit: 0, memoryBytes: 0, rssBytes: 0, memoryLimitBytes: 0, gpus: 0, gpuMemoryUsedMiB: 0 };
  for (const u of tasks) {
    t.cpusUsed += u.cpusUsed ?? 0;
    t.cpusLimit += u.cpusLimit;
    t.memoryBytes += u.memoryBytes;
    t.rssBytes += u.rssBytes;
    t.memoryLimitBytes += u.memoryLimitBytes;
    t.gpus += u.gpus.length;
    for (const g of u.gpus) t.gpuMemoryUsedMiB += g.memoryUsedMiB ?? 0;
  }
  t.cpusUsed = Math.round(t.cpusUsed * 1000) / 1000;
  t.cpusLimit = Math.round(t.cpusLimit * 1000) / 1000;
  return t;
}

/** The sums the agent sends the master after each sample (`usage` frame). */
export function usageReport(u: AgentUsage): UsageReport {
  return {
    timestampMs: u.timestampMs,
    tasks: u.total.tasks,
    cpusUsed: u.total.cpusUsed,
    cpusLimit: u.total.cpusLimit,
    memoryBytes: u.total.memoryBytes,
    memoryLimitBytes: u.total.memoryLimitBytes,
    gpus: u.gpus.map((g) => ({ index: g.index, utilizationPercent: g.utilizationPercent ?? -1, memoryUsedMib: g.memoryUsedMiB ?? -1, memoryTotalMib: g.memoryTotalMiB ?? -1 })),
    unhealthyGpus: u.unhealthyGpus.map((g) => g.index),
  };
}
