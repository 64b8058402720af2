// What an agent's usage endpoints answer (`GET /api/v1/usage`, `GET /api/v1/tasks/:id/usage`)
// and `cairn top` reads: per task and per GPU. Types only; the agent samples them (agent/usage/).

export interface GpuUsage {
  index: number;
  uuid: string;
  memoryUsedMiB: number | null;
  memoryTotalMiB: number | null;
  /** Percent of time a kernel ran over the last sample period; null when the device does not say. */
  utilizationPercent: number | null;
}

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

/** One sample of an agent's recent history (`GET /api/v1/usage/history`): its sums, its GPUs, and each task's share. */
export interface AgentUsagePoint {
  timestampMs: number;
  cpusUsed: number;
  cpusLimit: number;
  memoryBytes: number;
  memoryLimitBytes: number;
  gpus: { index: number; utilizationPercent: number | null; memoryUsedMiB: number | null }[];
  tasks: { taskId: string; frameworkId: string; cpusUsed: number | null; cpusLimit: number; memoryBytes: number; memoryLimitBytes: number; gpuIndices: number[] }[];
}

/** One sample of a task's recent history (`GET /api/v1/tasks/:id/usage/history`); its GPUs' whole-device figures. */
export interface TaskUsagePoint {
  timestampMs: number;
  cpusUsed: number | null;
  cpusLimit: number;
  memoryBytes: number;
  memoryLimitBytes: number;
  gpus: { index: number; utilizationPercent: number | null; memoryUsedMiB: number | null }[];
}

/** What the history routes answer: the samples oldest first, taken every `intervalMs`. */
export interface UsageHistory<P> {
  intervalMs: number;
  points: P[];
}
