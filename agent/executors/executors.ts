// The agent's executors behind one face: plain processes and Docker containers. A launch
// goes to the executor the task's spec names (`container.type: docker`, or none for a
// process); kills, logs, listings and shutdown go to whichever holds the task. Both share
// one GPU pool, so no device is handed to two tasks across executors.

import type { RunningTask, TaskInfo } from '../../shared/agent-protocol.ts';
import type { LogChunk } from '../../shared/master-state.ts';
import type { GpuPool } from '../resources/gpu-pool.ts';
import type { DockerExecutor } from './docker/docker-executor.ts';
import { isContainerTask } from './docker/docker-executor.ts';
import type { KillOutcome, LaunchOutcome, ProcessExecutor, TaskSnapshot, TaskStatusChange } from './process/executor.ts';
import type { RecoverMode } from '../../shared/agent-defaults.ts';
import { MAX_LOG_READ_BYTES, type LogStream } from './process/sandbox.ts';

/** Whether container tasks can run here, decided once at start (and why not). */
export type ContainerSupport = { enabled: true; version: string; runtime: string } | { enabled: false; reason: string };

export class TaskExecutors {
  constructor(
    readonly processes: ProcessExecutor,
    /** Undefined when containers cannot run here (see `containerSupport`). */
    readonly containers: DockerExecutor | undefined,
    readonly containerSupport: ContainerSupport,
    private readonly onStatus: (change: TaskStatusChange) => void,
  ) {}

  get gpus(): GpuPool {
    return this.processes.gpus;
  }

  launch(info: TaskInfo): LaunchOutcome {
    if (!isContainerTask(info)) return this.processes.launch(info);
    if (this.containers) return this.containers.launch(info);
    if (this.processes.has(info.taskId)) return 'duplicate';
    const why = this.containerSupport.enabled ? 'containers are off' : this.containerSupport.reason;
    this.onStatus({
      taskId: info.taskId, frameworkId: info.frameworkId, state: 'TASK_FAILED', reason: 'REASON_CONTAINER_LAUNCH_FAILED',
      message: `this agent cannot run container tasks: ${why}`, hasExitCode: false, exitCode: 0,
    });
    return 'failed';
  }

  kill(taskId: string, graceMs = 0, message?: string, reason?: string): KillOutcome {
    if (this.containers?.has(taskId)) return this.containers.kill(taskId, graceMs, message, reason);
    return this.processes.kill(taskId, graceMs, message, reason);
  }

  has(taskId: string): boolean {
    return this.processes.has(taskId) || (this.containers?.has(taskId) ?? false);
  }

  snapshot(taskId: string): TaskSnapshot | undefined {
    return this.processes.snapshot(taskId) ?? this.containers?.snapshot(taskId);
  }

  snapshots(): TaskSnapshot[] {
    return [...this.processes.snapshots(), ...(this.containers?.snapshots() ?? [])];
  }

  runningCount(): number {
    return this.processes.runningCount() + (this.containers?.runningCount() ?? 0);
  }

  activeTasks(): RunningTask[] {
    return [...this.processes.activeTasks(), ...(this.containers?.activeTasks() ?? [])];
  }

  release(taskId: string): void {
    this.processes.release(taskId);
    this.containers?.release(taskId);
  }

  readLog(taskId: string, stream: LogStream, offset: number, maxBytes?: number, withTimes = false): Promise<LogChunk> {
    if (this.containers?.has(taskId)) return this.containers.readLog(taskId, stream, offset, maxBytes ?? MAX_LOG_READ_BYTES, withTimes);
    return this.processes.readLog(taskId, stream, offset, maxBytes, withTimes);
  }

  /** Finds the containers an earlier agent process left (processes are recovered from their checkpoints). */
  async recoverContainers(mode: RecoverMode): Promise<RunningTask[]> {
    return this.containers ? this.containers.recover(mode) : [];
  }

  async shutdown(opts: { killTasks: boolean }): Promise<void> {
    await Promise.all([this.processes.shutdown(opts), this.containers?.shutdown(opts)]);
  }
}
