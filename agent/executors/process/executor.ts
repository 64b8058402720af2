// The process executor: runs each task as a plain child process in its own process group
// and sandbox, and reports the task's states through one callback.
//
// Launch is the fast path (the submit-to-RUNNING latency users feel): everything on it is
// synchronous and small — parse resources, pick GPUs, create the sandbox, spawn — and
// RUNNING is reported as soon as spawn returns a pid. Output goes straight from the child
// to its sandbox files (the fds are passed as stdio), never through this process.

import { spawn, type ChildProcess } from 'node:child_process';
import { appendFileSync } from 'node:fs';
import type { Logger } from 'pino';
import { isTerminal, type RunningTask, type TaskInfo, type TaskState } from '../../../shared/agent-protocol.ts';
import { CairnError, badRequest } from '../../../shared/errors.ts';
import type { LogChunk } from '../../../shared/master-state.ts';
import { Resources } from '../../../shared/resources.ts';
import { GpuPool } from '../../resources/gpu-pool.ts';
import { spawnSpecFor } from './command.ts';
import { buildTaskEnvironment } from './environment.ts';
import { terminalStatusFor } from './exit-status.ts';
import {
  LOG_STREAMS,
  MAX_LOG_READ_BYTES,
  closeQuietly,
  logPath,
  openSandbox,
  readSandboxLog,
  sandboxDir,
  type LogStream,
} from './sandbox.ts';

/** Used when neither the kill request nor the task names a grace period. */
export const DEFAULT_KILL_GRACE_MS = 3000;

/** A task's new state, as the executor reports it (the agent adds uuid and timestamp). */
export interface TaskStatusChange {
  taskId: string;
  frameworkId: string;
  state: TaskState;
  message: string;
  hasExitCode: boolean;
  exitCode: number;
  reason: string;
}

export interface ProcessExecutorOptions {
  workDir: string;
  /** Given to tasks as HOST. */
  hostname: string;
  /** The agent's GPU device indices; tasks asking for gpus get distinct ones. */
  gpuIndices?: readonly number[];
  /** Where the inherited basics (PATH, HOME, ...) come from; process.env by default. */
  agentEnv?: Readonly<Record<string, string | undefined>>;
  defaultKillGraceMs?: number;
  /** Called synchronously on every state change, in order per task. */
  onStatus: (change: TaskStatusChange) => void;
  logger?: Logger;
}

export type LaunchOutcome = 'launched' | 'failed' | 'duplicate';
export type KillOutcome = 'killing' | 'already-killing' | 'terminal' | 'unknown';

/** What the executor knows of one task; kept until the agent releases it. */
export interface TaskSnapshot {
  taskId: string;
  frameworkId: string;
  state: TaskState;
  resources: string;
  sandbox: string;
  pid: number | undefined;
  gpuIndices: readonly number[];
}

interface TaskRecord {
  info: TaskInfo;
  state: TaskState;
  sandbox: string;
  child: ChildProcess | undefined;
  pid: number | undefined;
  gpus: number[];
  killRequested: boolean;
  killTimer: NodeJS.Timeout | undefined;
  /** Resolves when the task reaches a terminal state. */
  ended: Promise<void>;
  markEnded: () => void;
}

export class ProcessExecutor {
  private readonly tasks = new Map<string, TaskRecord>();
  private readonly gpuPool: GpuPool;
  private readonly agentEnv: Readonly<Record<string, string | undefined>>;
  private readonly defaultGraceMs: number;
  private closed = false;

  constructor(private readonly opts: ProcessExecutorOptions) {
    this.gpuPool = new GpuPool(opts.gpuIndices ?? []);
    this.agentEnv = opts.agentEnv ?? process.env;
    this.defaultGraceMs = opts.defaultKillGraceMs ?? DEFAULT_KILL_GRACE_MS;
  }

  /**
   * Starts a task. A task id the executor still knows (running, or ended but not yet
   * released) is ignored: launches are idempotent. Failures are reported as TASK_FAILED
   * through onStatus, never thrown.
   */
  launch(info: TaskInfo): LaunchOutcome {
    if (this.closed) return 'failed';
    if (this.tasks.has(info.taskId)) return 'duplicate';
    if (!info.taskId) {
      // No id means no status update can name the task; the agent logs the frame.
      this.opts.logger?.warn({ frameworkId: info.frameworkId }, 'launch of a task without an id ignored');
      return 'failed';
    }
    let markEnded!: () => void;
    const ended = new Promise<void>((r) => {
      markEnded = r;
    });
    const rec: TaskRecord = {
      info,
      state: 'TASK_STAGING',
      sandbox: sandboxDir(this.opts.workDir, info.taskId),
      child: undefined,
      pid: undefined,
      gpus: [],
      killRequested: false,
      killTimer: undefined,
      ended,
      markEnded,
    };
    this.tasks.set(info.taskId, rec);

    // What the task may use.
    let resources: Resources;
    try {
      resources = Resources.parse(info.resources ?? '', 'resources');
    } catch (err) {
      return this.failLaunch(rec, `bad task resources: ${(err as Error).message}`, 'REASON_TASK_INVALID');
    }
    if (!info.command || (info.command.value ?? '') === '') {
      return this.failLaunch(rec, 'task has no command', 'REASON_TASK_INVALID');
    }
    const gpuCount = resources.gpus;
    if (!Number.isInteger(gpuCount)) {
      return this.failLaunch(rec, `gpus must be a whole number, got ${gpuCount}`, 'REASON_TASK_INVALID');
    }
    const gpus = this.gpuPool.assign(info.taskId, gpuCount);
    if (gpus === undefined) {
      return this.failLaunch(rec, `asks for ${gpuCount} GPUs but ${this.gpuPool.freeCount()} are free on this agent`, 'REASON_TASK_INVALID');
    }
    rec.gpus = gpus;

    // The sandbox and its log files.
    let stdoutFd: number;
    let stderrFd: number;
    try {
      ({ stdoutFd, stderrFd } = openSandbox(this.opts.workDir, info.taskId));
    } catch (err) {
      return this.failLaunch(rec, `cannot create sandbox ${rec.sandbox}: ${(err as Error).message}`, 'REASON_EXECUTOR_TERMINATED');
    }

    const env = buildTaskEnvironment({
      taskId: info.taskId,
      frameworkId: info.frameworkId,
      hostname: this.opts.hostname,
      sandbox: rec.sandbox,
      ports: resources.portList(),
      gpuIndices: gpus,
      taskEnv: info.command.environment ?? [],
      agentEnv: this.agentEnv,
    });
    const spec = spawnSpecFor({ ...info.command, arguments: info.command.arguments ?? [] });

    let child: ChildProcess;
    try {
      child = spawn(spec.file, spec.args, {
        argv0: spec.argv0,
        cwd: rec.sandbox,
        env,
        // Its own process group, so a kill reaches everything the task started.
        detached: true,
        stdio: ['ignore', stdoutFd, stderrFd],
      });
    } catch (err) {
      closeQuietly(stdoutFd);
      closeQuietly(stderrFd);
      return this.failLaunch(rec, `cannot start: ${(err as Error).message}`, 'REASON_EXECUTOR_TERMINATED');
    }
    // The child holds its own copies now.
    closeQuietly(stdoutFd);
    closeQuietly(stderrFd);
    rec.child = child;

    if (child.pid === undefined) {
      // Spawn failed (program missing, not executable, ...); Node reports why on the next tick.
      child.once('error', (err) => {
        const message = `cannot start: ${err.message}`;
        try {
          // Where the task's user looks first; a few bytes, once.
          appendFileSync(logPath(rec.sandbox, 'stderr'), `cairn: ${message}\n`);
        } catch {
          // the update below still says why
        }
        this.finish(rec, { state: 'TASK_FAILED', message, hasExitCode: false, exitCode: 0, reason: 'REASON_EXECUTOR_TERMINATED' });
      });
      return 'failed';
    }
    rec.pid = child.pid;
    child.once('exit', (code, signal) => this.onExit(rec, code, signal));
    child.on('error', (err) => this.opts.logger?.warn({ taskId: info.taskId, err: err.message }, 'task process error'));
    this.report(rec, { state: 'TASK_RUNNING', message: '', hasExitCode: false, exitCode: 0, reason: '' });
    return 'launched';
  }

  /**
   * Kills a task: SIGTERM to its process group now, SIGKILL to the group after the grace
   * period (the kill's, else the task's kill_grace_ms, else the default).
   */
  kill(taskId: string, graceMs = 0): KillOutcome {
    const rec = this.tasks.get(taskId);
    if (!rec) return 'unknown';
    if (isTerminal(rec.state)) return 'terminal';
    if (rec.killRequested) return 'already-killing';
    rec.killRequested = true;
    if (rec.pid === undefined) return 'killing'; // spawn is failing; its FAILED update is on its way
    const grace = graceMs > 0 ? graceMs : rec.info.killGraceMs > 0 ? rec.info.killGraceMs : this.defaultGraceMs;
    this.signalGroup(rec, 'SIGTERM');
    rec.killTimer = setTimeout(() => {
      rec.killTimer = undefined;
      this.signalGroup(rec, 'SIGKILL');
    }, grace);
    return 'killing';
  }

  has(taskId: string): boolean {
    return this.tasks.has(taskId);
  }

  snapshot(taskId: string): TaskSnapshot | undefined {
    const rec = this.tasks.get(taskId);
    return rec ? toSnapshot(rec) : undefined;
  }

  /** Every task the executor still holds, ended or not. */
  snapshots(): TaskSnapshot[] {
    return [...this.tasks.values()].map(toSnapshot);
  }

  /** Non-terminal tasks, as the agent lists them when it registers. */
  activeTasks(): RunningTask[] {
    const out: RunningTask[] = [];
    for (const rec of this.tasks.values()) {
      if (!isTerminal(rec.state)) {
        out.push({ taskId: rec.info.taskId, frameworkId: rec.info.frameworkId, state: rec.state, resources: rec.info.resources });
      }
    }
    return out;
  }

  /** Forgets an ended task (its terminal update was acknowledged). Running tasks stay. */
  release(taskId: string): void {
    const rec = this.tasks.get(taskId);
    if (rec && isTerminal(rec.state)) this.tasks.delete(taskId);
  }

  /** Resolves when the task has ended (at once for tasks not held). */
  whenEnded(taskId: string): Promise<void> {
    return this.tasks.get(taskId)?.ended ?? Promise.resolve();
  }

  /**
   * Reads a task's log. Works for tasks the executor no longer holds (ended and released,
   * or run by an earlier agent process): their sandbox path follows from the id, and they
   * count as ended. Throws CAIRN_BAD_REQUEST naming the field, or CAIRN_UNKNOWN_TASK.
   */
  async readLog(taskId: string, stream: LogStream, offset: number, maxBytes = MAX_LOG_READ_BYTES): Promise<LogChunk> {
    if (!LOG_STREAMS.includes(stream)) throw badRequest('stream', `must be stdout or stderr, got '${String(stream)}'`);
    if (!Number.isSafeInteger(offset) || offset < 0) throw badRequest('offset', `must be a non-negative integer, got ${offset}`);
    if (!Number.isSafeInteger(maxBytes) || maxBytes <= 0) throw badRequest('length', `must be a positive integer, got ${maxBytes}`);
    const rec = this.tasks.get(taskId);
    // Read the state before the file: a task that ends in between is then reported as not
    // at eof, and the next read sees the rest.
    const terminal = rec ? isTerminal(rec.state) : true;
    let dir: string;
    try {
      dir = rec?.sandbox ?? sandboxDir(this.opts.workDir, taskId);
    } catch {
      throw new CairnError('CAIRN_UNKNOWN_TASK', `unknown task '${taskId}'`, 'taskId');
    }
    try {
      return await readSandboxLog(dir, stream, offset, maxBytes, terminal);
    } catch (err) {
      if (err instanceof CairnError && err.code === 'CAIRN_UNKNOWN_TASK') {
        throw new CairnError('CAIRN_UNKNOWN_TASK', `no sandbox for task '${taskId}' on this agent`, 'taskId');
      }
      throw err;
    }
  }

  /**
   * Stops the executor. With killTasks every running task is killed (its grace period
   * capped at graceMs) and this waits for them to end, at most timeoutMs, then SIGKILLs
   * what is left. Without, tasks keep running, detached from this process. Either way no
   * timer, listener or handle of the executor keeps the process alive afterwards.
   */
  async shutdown(opts: { killTasks: boolean; graceMs?: number; timeoutMs?: number }): Promise<void> {
    if (opts.killTasks) {
      const running = [...this.tasks.values()].filter((r) => !isTerminal(r.state));
      for (const rec of running) this.kill(rec.info.taskId, opts.graceMs ?? 0);
      const graceOf = (r: TaskRecord) => (r.info.killGraceMs > 0 ? r.info.killGraceMs : this.defaultGraceMs);
      const bound = opts.timeoutMs ?? Math.max(0, ...running.map(graceOf)) + 1000;
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        Promise.all(running.map((r) => r.ended)),
        new Promise<void>((r) => {
          timer = setTimeout(r, bound);
        }),
      ]);
      clearTimeout(timer);
      for (const rec of running) if (!isTerminal(rec.state)) this.signalGroup(rec, 'SIGKILL');
    }
    this.closed = true;
    for (const rec of this.tasks.values()) {
      if (rec.killTimer) clearTimeout(rec.killTimer);
      rec.killTimer = undefined;
      rec.child?.unref();
    }
  }

  private onExit(rec: TaskRecord, code: number | null, signal: NodeJS.Signals | null): void {
    // Whatever the leader left behind in its group goes with it: the task's ports and
    // GPUs are free from now on, so nothing of the task may keep running.
    this.signalGroup(rec, 'SIGKILL');
    this.finish(rec, terminalStatusFor(code, signal, rec.killRequested));
  }

  private failLaunch(rec: TaskRecord, message: string, reason: string): LaunchOutcome {
    this.finish(rec, { state: 'TASK_FAILED', message, hasExitCode: false, exitCode: 0, reason });
    return 'failed';
  }

  private finish(rec: TaskRecord, status: Omit<TaskStatusChange, 'taskId' | 'frameworkId'>): void {
    if (isTerminal(rec.state)) return;
    if (rec.killTimer) clearTimeout(rec.killTimer);
    rec.killTimer = undefined;
    this.gpuPool.release(rec.info.taskId);
    this.report(rec, status);
    rec.markEnded();
  }

  private report(rec: TaskRecord, status: Omit<TaskStatusChange, 'taskId' | 'frameworkId'>): void {
    rec.state = status.state;
    // After shutdown nobody is listening; the next agent process reconciles with the master.
    if (this.closed) return;
    try {
      this.opts.onStatus({ taskId: rec.info.taskId, frameworkId: rec.info.frameworkId, ...status });
    } catch (err) {
      this.opts.logger?.error({ taskId: rec.info.taskId, err: (err as Error).message }, 'status handler threw');
    }
  }

  private signalGroup(rec: TaskRecord, signal: NodeJS.Signals): void {
    if (rec.pid === undefined) return;
    try {
      process.kill(-rec.pid, signal);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code !== 'ESRCH') this.opts.logger?.warn({ taskId: rec.info.taskId, signal, err: (err as Error).message }, 'cannot signal task');
    }
  }
}

function toSnapshot(rec: TaskRecord): TaskSnapshot {
  return {
    taskId: rec.info.taskId,
    frameworkId: rec.info.frameworkId,
    state: rec.state,
    resources: rec.info.resources,
    sandbox: rec.sandbox,
    pid: rec.pid,
    gpuIndices: [...rec.gpus],
  };
}
