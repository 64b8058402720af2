// What a task and the agent use, as served at `GET /api/v1/tasks/:id/usage` and
// `GET /api/v1/usage` (pure: shapes, the CPU rate between two samples, the sums).

import type { UsageReport } from '../../shared/agent-protocol.ts';
import type { GpuUsage } from '../resources/gpu-usage.ts';

export interface TaskUsage {
  taskId: string;
  frameworkId: string;
  /** When the sample was taken (agent clock, ms since the epoch). */
  timestampMs: number;
  /** Where the figures come from: the task's cgroup (everything it ran), or /proc (its live process group). */
  source: 'cgroup' | 'proc';
  /** CPU time used so far, in seconds. */
  cpuSeconds: number;
  /** CPUs used on average since the previous sample; null on a task's first sample. */
  cpusUsed: number | null;
  /** The task's `cpus`. */
  cpusLimit: number;
  memoryBytes: number;
  rssBytes: number;
  /** The task's `mem` in bytes (its hard limit under cgroups). */
  memoryLimitBytes: number;
  /** The devices the task holds (whole-device figures). */
  gpus: GpuUsage[];
  /** What the task's sandbox (and a container's own layer) takes on disk; absent before its first measurement (agent/isolation/disk-watcher.ts). */
  diskBytes?: number;
  /** The task's disk limit in bytes; null: none. */
  diskLimitBytes?: number | null;
  /** False when diskBytes is a lower bound (the measurement stopped early). */
  diskComplete?: boolean;
}

export interface UsageTotals {
  tasks: number;
  cpusUsed: number;
  cpusLimit: number;
  memoryBytes: number;
  rssBytes: number;
  memoryLimitBytes: number;
  gpus: number;
  gpuMemoryUsedMiB: number;
}

export interface AgentUsage {
  agentId: string | null;
  timestampMs: number;
  intervalMs: number;
  tasks: TaskUsage[];
  /** Sums over the tasks. */
  total: UsageTotals;
  /** Every GPU of the agent (absent figures: nvidia-smi did not say). */
  gpus: GpuUsage[];
  /** GPUs taken out of service, with why. */
  unhealthyGpus: { index: number; reason: string }[];
}

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
