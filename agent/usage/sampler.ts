// Samples what running tasks use, every `--usage-interval` (5 s by default): from each
// task's cgroup where it has one, else from /proc (its process group); GPUs from
// nvidia-smi when the host has any; disk as the disk watcher last measured it. Serves the latest sample; takes GPUs that nvidia-smi
// reports lost or failed out of service.

import type { Logger } from 'pino';
import { isTerminal } from '../../shared/agent-protocol.ts';
import { Resources } from '../../shared/resources.ts';
import type { ProcessExecutor } from '../executors/process/executor.ts';
import { listProcesses, usageByGroup } from '../executors/process/proc.ts';
import { readUsage } from '../isolation/cgroups.ts';
import { queryGpuUsage, unhealthyGpus, type GpuUsageResult } from '../resources/gpu-usage.ts';
import { cpuRate, sumUsage } from './usage.ts';
import type { AgentUsage, GpuUsage, TaskUsage } from '../../shared/agent-usage.ts';
import { UsageRing } from './history.ts';

export const DEFAULT_USAGE_INTERVAL_MS = 5000;

export interface UsageSamplerOptions {
  /** The agent's executors (or one of them, in tests): what runs, and the GPUs. */
  executor: Pick<ProcessExecutor, 'snapshots' | 'gpus'>;
  intervalMs: number;
  agentId: () => string | undefined;
  /** The GPUs discovered at start (real devices only); no nvidia-smi calls without any. */
  knownGpus: readonly { index: number; uuid: string }[];
  /** Replaces running nvidia-smi (tests). */
  queryGpus?: () => Promise<GpuUsageResult>;
  /** A GPU was found out of service for the first time. */
  onGpuUnhealthy?: (index: number, reason: string) => void;
  /** The latest disk figures of a task (the disk watcher's), when there are any. */
  disk?: (taskId: string) => { diskBytes: number; diskLimitBytes: number | undefined; diskComplete: boolean } | undefined;
  /** How many samples the history keeps (history.ts; 180 by default). */
  historyPoints?: number;
  /** Each new sample, once taken (the agent sends the sums to the master). */
  onSample?: (usage: AgentUsage) => void;
  logger?: Logger;
}

export class UsageSampler {
  private timer: NodeJS.Timeout | undefined;
  private latest: AgentUsage;
  private readonly previous = new Map<string, { cpuSeconds: number; timestampMs: number }>();
  private running: Promise<void> | undefined;
  /** The recent samples (GET /api/v1/usage/history, /api/v1/tasks/:id/usage/history). */
  readonly history: UsageRing;

  constructor(private readonly opts: UsageSamplerOptions) {
    this.history = new UsageRing(opts.historyPoints);
    this.latest = { agentId: null, timestampMs: 0, intervalMs: opts.intervalMs, tasks: [], total: sumUsage([]), gpus: [], unhealthyGpus: [] };
  }

  start(): void {
    void this.sample();
    this.timer = setInterval(() => void this.sample(), this.opts.intervalMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    await this.running;
  }

  current(): AgentUsage {
    return this.latest;
  }

  forTask(taskId: string): TaskUsage | undefined {
    return this.latest.tasks.find((t) => t.taskId === taskId);
  }

  /** Takes a sample now (one at a time; a call while one runs waits for it). */
  sample(): Promise<void> {
    this.running ??= this.takeSample().finally(() => {
      this.running = undefined;
    });
    return this.running;
  }

  private async takeSample(): Promise<void> {
    const gpuResult = this.opts.knownGpus.length > 0 ? await (this.opts.queryGpus ?? (() => queryGpuUsage()))() : undefined;
    if (gpuResult) this.noteGpuHealth(gpuResult);
    const gpus: GpuUsage[] = gpuResult?.gpus ?? [];
    const byIndex = new Map(gpus.map((g) => [g.index, g]));

    const now = Date.now();
    const running = this.opts.executor.snapshots().filter((s) => !isTerminal(s.state) && s.pid !== undefined);
    const groups = running.some((s) => !s.cgroup) ? usageByGroup(listProcesses()) : undefined;
    const tasks: TaskUsage[] = [];
    for (const s of running) {
      let limits: Resources;
      try {
        limits = Resources.parse(s.resources);
      } catch {
        limits = Resources.EMPTY;
      }
      let cpuSeconds = 0;
      let memoryBytes = 0;
      let rssBytes = 0;
      if (s.cgroup) {
        const u = readUsage(s.cgroup);
        cpuSeconds = u.cpuSeconds;
        memoryBytes = u.memoryBytes;
        rssBytes = u.rssBytes;
      } else {
        const u = groups?.get(s.pid!);
        cpuSeconds = u?.cpuSeconds ?? 0;
        rssBytes = u?.rssBytes ?? 0;
        memoryBytes = rssBytes;
      }
      const prev = this.previous.get(s.taskId);
      const disk = this.opts.disk?.(s.taskId);
      tasks.push({
        taskId: s.taskId,
        frameworkId: s.frameworkId,
        timestampMs: now,
        source: s.cgroup ? 'cgroup' : 'proc',
        cpuSeconds: Math.round(cpuSeconds * 1000) / 1000,
        cpusUsed: roundOrNull(cpuRate(prev, cpuSeconds, now)),
        cpusLimit: limits.cpus,
        memoryBytes,
        rssBytes,
        memoryLimitBytes: Math.floor(limits.mem * 1024 * 1024),
        gpus: s.gpuIndices.map((i) => byIndex.get(i) ?? { index: i, uuid: '', memoryUsedMiB: null, memoryTotalMiB: null, utilizationPercent: null }),
        ...(disk ? { diskBytes: disk.diskBytes, diskLimitBytes: disk.diskLimitBytes ?? null, diskComplete: disk.diskComplete } : {}),
      });
      this.previous.set(s.taskId, { cpuSeconds, timestampMs: now });
    }
    const live = new Set(running.map((s) => s.taskId));
    for (const id of this.previous.keys()) if (!live.has(id)) this.previous.delete(id);
    this.latest = {
      agentId: this.opts.agentId() ?? null,
      timestampMs: now,
      intervalMs: this.opts.intervalMs,
      tasks,
      total: sumUsage(tasks),
      gpus,
      unhealthyGpus: this.opts.executor.gpus.unhealthy(),
    };
    this.history.add(this.latest);
    this.opts.onSample?.(this.latest);
  }

  private noteGpuHealth(result: GpuUsageResult): void {
    if (result.reason) {
      this.opts.logger?.warn({ reason: result.reason }, 'cannot read GPU usage');
      return;
    }
    for (const [index, reason] of unhealthyGpus(this.opts.knownGpus, result)) {
      if (this.opts.executor.gpus.markUnhealthy(index, reason)) {
        this.opts.logger?.error({ gpu: index, reason }, 'GPU out of service: it is not handed to tasks any more');
        this.opts.onGpuUnhealthy?.(index, reason);
      }
    }
  }
}

function roundOrNull(x: number | null): number | null {
  return x === null ? null : Math.round(x * 1000) / 1000;
}
