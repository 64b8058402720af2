// The disk watcher: every `--disk-watch-interval` (15 s by default, as Mesos'
// --container_disk_watch_interval) it measures each task's sandbox (disk-usage.ts) and, for
// a container, its writable layer (Docker's SizeRw), keeps the figures for the usage
// endpoint, and kills a task over its disk limit (disk-watch.ts decides). Once such a task
// has ended, its sandbox is shrunk to its logs (sandbox-shrink.ts), so the space it took
// is given back at once rather than when its sandbox is collected.
//
// Rounds never overlap: the next starts an interval after the last one ended. Tasks are
// measured one at a time, each walk bounded in time (`walkBudgetMs`), so a sandbox of
// millions of files costs one bounded walk per interval, never the agent's event loop.
//
// What this cannot do: stop a write as it happens. A task writing W bytes a second can go
// over its limit by up to W × (interval + walk time) before it is killed; a filesystem
// quota (XFS project quotas) would refuse the write itself, and is not used here.

import type Docker from 'dockerode';
import type { Logger } from 'pino';
import { isTerminal } from '../../shared/agent-protocol.ts';
import type { KillOutcome, TaskSnapshot, TaskStatusChange } from '../executors/process/executor.ts';
import { containerName, LABEL_TASK_ID } from '../executors/docker/container-config.ts';
import { LOG_STREAMS } from '../executors/process/sandbox.ts';
import { EXIT_STATUS_FILE } from '../executors/process/supervisor.ts';
import { measureTree } from './disk-usage.ts';
import { asDiskLimitation, DISK_LIMITATION_REASON, diskLimitBytes, judgeDisk, usedBytes, type DiskMeasurement } from './disk-watch.ts';
import { shrinkSandbox } from './sandbox-shrink.ts';

/** The longest one task's sandbox walk may take per round. */
export const DEFAULT_DISK_WALK_BUDGET_MS = 2_000;
/** The longest Docker may take to say what a container's layer holds. */
const LAYER_TIMEOUT_MS = 5_000;
/** A killed task's logs keep at least this much, whatever its limit. */
const MIN_LOG_KEEP_BYTES = 1024 * 1024;

export interface DiskWatcherOptions {
  executor: { snapshots(): TaskSnapshot[]; kill(taskId: string, graceMs?: number, message?: string, reason?: string): KillOutcome };
  intervalMs: number;
  /** Kill tasks over their limit; off, usage is still measured and reported. */
  enforce: boolean;
  /** The limit (MiB) of a task that asks for no disk; 0: none. */
  defaultLimitMiB: number;
  /** Bytes of a container task's writable layer; undefined for a process task, or when unknown. */
  containerLayer?: (taskId: string) => Promise<number | undefined>;
  walkBudgetMs?: number;
  logger?: Logger;
}

/** What the usage endpoint shows of a task's disk. */
export interface TaskDiskUsage {
  diskBytes: number;
  /** Undefined: no limit. */
  diskLimitBytes: number | undefined;
  /** The figure is a lower bound (the walk stopped early). */
  diskComplete: boolean;
}

export class DiskWatcher {
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  private running: Promise<void> | undefined;
  private readonly latest = new Map<string, TaskDiskUsage>();
  /** Tasks this watcher killed, by id: their sandbox and limit, for the shrink after their end. */
  private readonly killed = new Map<string, { sandbox: string; limitBytes: number }>();

  constructor(private readonly opts: DiskWatcherOptions) {}

  start(): void {
    this.schedule();
  }

  /** No kill from the moment this is called (an agent going away leaves its tasks be); resolves once a round in progress is over. */
  stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    return this.running ?? Promise.resolve();
  }

  /** The `disk` part of /health's isolation. */
  report(): Record<string, unknown> {
    return { enforced: this.opts.enforce, intervalMs: this.opts.intervalMs, defaultTaskDiskMb: this.opts.defaultLimitMiB };
  }

  /** The latest figures for a task; undefined before its first measurement. */
  usage(taskId: string): TaskDiskUsage | undefined {
    return this.latest.get(taskId);
  }

  /**
   * Sees every status change before it goes out: the end of a task killed over its disk
   * limit is stated as a limitation (TASK_FAILED), and its sandbox is shrunk.
   */
  observe(change: TaskStatusChange): TaskStatusChange {
    const out = asDiskLimitation(change);
    if (!isTerminal(out.state)) return out;
    this.latest.delete(out.taskId);
    const killed = this.killed.get(out.taskId);
    this.killed.delete(out.taskId);
    if (killed && out.reason === DISK_LIMITATION_REASON) {
      void this.shrink(out.taskId, killed.sandbox, killed.limitBytes);
    }
    return out;
  }

  /** Measures every task once (and kills those over their limit); one round at a time. */
  round(): Promise<void> {
    this.running ??= this.measureAll().finally(() => {
      this.running = undefined;
    });
    return this.running;
  }

  private schedule(): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      void this.round().finally(() => this.schedule());
    }, this.opts.intervalMs);
    this.timer.unref();
  }

  private async measureAll(): Promise<void> {
    const live = this.opts.executor.snapshots().filter((s) => !isTerminal(s.state));
    const ids = new Set(live.map((s) => s.taskId));
    for (const id of this.latest.keys()) if (!ids.has(id)) this.latest.delete(id);
    for (const s of live) {
      if (this.stopped) return;
      try {
        await this.measureOne(s);
      } catch (err) {
        this.opts.logger?.warn({ taskId: s.taskId, err: (err as Error).message }, "cannot measure a task's disk use");
      }
    }
  }

  private async measureOne(s: TaskSnapshot): Promise<void> {
    const limitBytes = diskLimitBytes(s.resources, this.opts.defaultLimitMiB);
    const tree = await measureTree(s.sandbox, {
      budgetMs: this.opts.walkBudgetMs ?? DEFAULT_DISK_WALK_BUDGET_MS,
      ...(limitBytes !== undefined && this.opts.enforce ? { stopAboveBytes: limitBytes } : {}),
    });
    const m: DiskMeasurement = { sandboxBytes: tree.bytes, complete: tree.complete };
    // Docker counts a layer by walking it, so it is asked only about a task with a limit,
    // and only when the sandbox alone is not already over it.
    if (limitBytes !== undefined && tree.bytes <= limitBytes) {
      const layer = await this.opts.containerLayer?.(s.taskId);
      if (layer !== undefined) m.layerBytes = layer;
    }
    if (tree.stopped === 'budget') this.opts.logger?.warn({ taskId: s.taskId, entries: tree.entries, bytes: tree.bytes }, "a task's sandbox took longer to measure than its budget: its disk use is at least the figure reported");
    this.latest.set(s.taskId, { diskBytes: usedBytes(m), diskLimitBytes: limitBytes, diskComplete: m.complete });
    if (!this.opts.enforce || limitBytes === undefined || this.stopped) return;
    const verdict = judgeDisk(limitBytes, m);
    if (!verdict.over) return;
    this.killed.set(s.taskId, { sandbox: s.sandbox, limitBytes });
    // No grace period: every second of one lets the task write on (Mesos destroys the container).
    const outcome = this.opts.executor.kill(s.taskId, 1, verdict.message, DISK_LIMITATION_REASON);
    this.opts.logger?.warn({ taskId: s.taskId, usedBytes: usedBytes(m), limitBytes, outcome }, 'task over its disk limit: killed');
  }

  private async shrink(taskId: string, sandbox: string, limitBytes: number): Promise<void> {
    try {
      const done = await shrinkSandbox(sandbox, { logs: LOG_STREAMS, keepPrefixes: [EXIT_STATUS_FILE], logCapBytes: Math.max(limitBytes, MIN_LOG_KEEP_BYTES) });
      this.opts.logger?.info({ taskId, removed: done.removed.length, truncated: done.truncated }, 'sandbox of a task killed over its disk limit shrunk to its logs');
    } catch (err) {
      this.opts.logger?.warn({ taskId, err: (err as Error).message }, 'cannot shrink the sandbox of a task killed over its disk limit');
    }
  }
}

/**
 * A container task's writable layer in bytes, as Docker counts it (SizeRw), for the task's
 * own container only (its label names the task); undefined when there is none or Docker
 * does not answer in time.
 */
export async function dockerLayerBytes(docker: Docker, taskId: string): Promise<number | undefined> {
  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(), LAYER_TIMEOUT_MS);
  try {
    // `size` asks the daemon to count the layer (the Engine API's ?size=true); the types lack it.
    const opts = { size: true, abortSignal: abort.signal } as Docker.ContainerInspectOptions;
    const info = await docker.getContainer(containerName(taskId)).inspect(opts).catch(() => undefined);
    if (!info || info.Config?.Labels?.[LABEL_TASK_ID] !== taskId) return undefined;
    const size = (info as { SizeRw?: number }).SizeRw;
    return typeof size === 'number' && size >= 0 ? size : undefined;
  } finally {
    clearTimeout(timer);
  }
}
