// The process executor: runs each task under its supervisor (supervisor.ts) in its own
// process group and sandbox, checkpoints what it runs, and reports the task's states
// through one callback. After an agent restart it recovers the tasks its checkpoints name.
//
// Launch is the fast path (the submit-to-RUNNING latency users feel): everything on it up
// to the spawn is synchronous and small — parse resources, pick GPUs, create the sandbox,
// spawn. RUNNING is reported once the checkpoint naming the pid is on disk (group-committed
// with the other launches of the same turn), so a restarted agent never meets a task it
// reported running but knows nothing of. Output goes straight from the task to its sandbox
// files (the fds are passed as stdio), never through this process.
//
// Every state change follows the same order per task: checkpoint, then report. The
// terminal status is checkpointed too, and re-sent after a restart until acknowledged.
//
// With a user policy (task-users.ts) each task runs as its user: the sandbox and its logs
// are given to that user, the supervisor's process switches to the user's uid and gid (no
// other groups) after joining the task's cgroups and before the task starts, and HOME,
// USER and LOGNAME are the user's. The supervisor then records the exit status in a
// sandbox the user owns, and the agent (root) reads it from there.

import { spawn, type ChildProcess } from 'node:child_process';
import { appendFileSync, mkdirSync, unlinkSync, writeFileSync } from 'node:fs';
import type { Logger } from 'pino';
import { isTerminal, type RunningTask, type TaskInfo, type TaskState } from '../../../shared/agent-protocol.ts';
import { CairnError, badRequest } from '../../../shared/errors.ts';
import type { LogChunk } from '../../../shared/master-state.ts';
import { Resources } from '../../../shared/resources.ts';
import type { CheckpointStore, TaskCheckpoint } from '../../recovery/checkpoint.ts';
import { GpuPool } from '../../resources/gpu-pool.ts';
import { destroyCgroup, endedByMemoryLimit, procsFiles, signalCgroup, type CgroupRef, type Cgroups } from '../../isolation/cgroups.ts';
import { spawnSpecFor } from './command.ts';
import { buildTaskEnvironment } from './environment.ts';
import { ensureJobDir, jobDirFor } from '../../job-dirs.ts';
import { terminalStatusFor, type TerminalStatus } from './exit-status.ts';
import { isSameProcessAlive, processStartTime } from './proc.ts';
import { Launcher, probeResolvMount } from './launcher.ts';
import type { RunAs, TaskUserDecider } from '../../task-users.ts';
import {
  LOG_STREAMS,
  MAX_LOG_READ_BYTES,
  chownSandbox,
  closeQuietly,
  logPath,
  openLogForAppend,
  openSandboxLogs,
  readSandboxLog,
  SANDBOX_MODE,
  sandboxDir,
  sanitizeTaskId,
  type LogStream,
} from './sandbox.ts';
import {
  EXIT_STATUS_FILE,
  findExecutable,
  findSupervisorTools,
  readExitStatus,
  supervisedSpawn,
  taskEndFromSupervisor,
  type ProcessEnd,
  type SupervisorTools,
} from './supervisor.ts';
import type { RecoverMode } from '../../../shared/agent-defaults.ts';

/** Used when neither the kill request nor the task names a grace period. */
export const DEFAULT_KILL_GRACE_MS = 3000;

/** A kill this soon after a task's start repeats its SIGTERM (see startKill). */
const EARLY_KILL_WINDOW_MS = 1000;
const EARLY_KILL_REPEATS_MS = [50, 200, 500];

/** How often tasks recovered after a restart (not this process's children) are checked for exit. */
export const DEFAULT_RECOVERED_POLL_MS = 250;

/** A task's new state, as the executor reports it (the agent adds uuid and timestamp). */
export interface TaskStatusChange {
  taskId: string;
  frameworkId: string;
  state: TaskState;
  message: string;
  hasExitCode: boolean;
  exitCode: number;
  reason: string;
  /** Set on updates that carry the task's health check result (agent/health/). */
  hasHealthy?: boolean;
  healthy?: boolean;
}

export interface ProcessExecutorOptions {
  workDir: string;
  /** Where training jobs' shared directories are made (agent/job-dirs.ts); absent: none are. */
  jobDirs?: string;
  /** Given to tasks as HOST. */
  hostname: string;
  /** The agent's GPU device indices; tasks asking for gpus get distinct ones. */
  gpuIndices?: readonly number[];
  /** The agent's GPUs when other executors share them (overrides gpuIndices). */
  gpuPool?: GpuPool;
  /** Where the inherited basics (PATH, HOME, ...) come from; process.env by default. */
  agentEnv?: Readonly<Record<string, string | undefined>>;
  /** The masters' DNS servers and zone as the agent knows them now (gossip), for CAIRN_DNS. */
  dns?: () => { servers: readonly string[]; domain?: string } | undefined;
  /**
   * The resolv.conf a task named `dnsName` sees as /etc/resolv.conf (the agent's task
   * resolver); undefined: the host's. Mounted by the launcher only (see resolvMountProblem).
   */
  resolvConf?: (dnsName: string) => string | undefined;
  defaultKillGraceMs?: number;
  /** Called on every state change, in order per task. */
  onStatus: (change: TaskStatusChange) => void;
  /** Where tasks are checkpointed; without one nothing survives a restart (tests). */
  checkpoints?: CheckpointStore;
  /** sh, bash and mv for the supervisor; found on PATH by default. */
  supervisorTools?: SupervisorTools;
  recoveredPollMs?: number;
  /** Start supervisors through the launcher (the default where perl is installed) or spawn them from Node. */
  launcher?: boolean;
  /** Puts each task in its own cgroup with its limits; without, tasks share the agent's. */
  cgroups?: Cgroups;
  /** Decides which user each task runs as (task-users.ts); without, tasks run as the agent's user. */
  users?: TaskUserDecider;
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
  startTimeTicks: number | undefined;
  gpuIndices: readonly number[];
  /** True for a task an earlier agent process started (this one re-attached to it). */
  recovered: boolean;
  launchedAtMs: number;
  cgroup: CgroupRef | undefined;
  /** The user the task runs as, when the agent decides tasks' users. */
  user?: string;
}

export interface RecoverySummary {
  /** Still running; watched again. */
  reattached: string[];
  /** Ended while the agent was away (or before its end was acknowledged); reported now. */
  ended: string[];
  /** Found running and killed (--recover=cleanup). */
  killed: string[];
}

interface TaskRecord {
  info: TaskInfo;
  state: TaskState;
  /** The last non-terminal state reported: listed at registration until the end is acknowledged. */
  activeState: TaskState;
  sandbox: string;
  child: ChildProcess | undefined;
  pid: number | undefined;
  startTimeTicks: number | undefined;
  gpus: number[];
  cgroup: CgroupRef | undefined;
  /** Who the task runs as (undefined: the agent's user, no policy). */
  runAs: RunAs | undefined;
  /** The task's memory limit (its `mem`), for the message of an OOM kill. */
  memMiB: number;
  launchedAtMs: number;
  /** When its supervisor started (this agent process's clock); undefined for recovered tasks. */
  startedAtMs: number | undefined;
  /** Started by an earlier agent process: watched by polling, not by 'exit'. */
  recovered: boolean;
  /** Killed, and its end is also watched for by polling (see startKill). */
  pollEnd: boolean;
  killRequested: boolean;
  killGraceMs: number | undefined;
  /** Overrides the terminal message of a kill (e.g. a cleanup after restart). */
  killMessage: string | undefined;
  /** The reason the kill gave (a preemption's); undefined for a plain kill. */
  killReason?: string;
  killTimer: NodeJS.Timeout | undefined;
  /** The end is being recorded; no second end and no more kills. */
  ending: boolean;
  terminal: TerminalStatus | undefined;
  /** Checkpoint writes and reports of this task, in order. */
  chain: Promise<void>;
  /** Resolves when the task reaches a terminal state. */
  ended: Promise<void>;
  markEnded: () => void;
}

export class ProcessExecutor {
  private readonly tasks = new Map<string, TaskRecord>();
  private readonly gpuPool: GpuPool;
  private readonly agentEnv: Readonly<Record<string, string | undefined>>;
  private readonly defaultGraceMs: number;
  private readonly tools: SupervisorTools;
  private readonly pollMs: number;
  private readonly launcher: Launcher | undefined;
  private pollTimer: NodeJS.Timeout | undefined;
  /** Removals of ended tasks' cgroups still going on. */
  private readonly cleanups = new Set<Promise<unknown>>();
  private closed = false;

  constructor(private readonly opts: ProcessExecutorOptions) {
    this.gpuPool = opts.gpuPool ?? new GpuPool(opts.gpuIndices ?? []);
    this.agentEnv = opts.agentEnv ?? process.env;
    this.defaultGraceMs = opts.defaultKillGraceMs ?? DEFAULT_KILL_GRACE_MS;
    this.tools = opts.supervisorTools ?? findSupervisorTools();
    this.pollMs = opts.recoveredPollMs ?? DEFAULT_RECOVERED_POLL_MS;
    const perl = this.tools.perl;
    if (opts.launcher !== false && perl !== undefined) this.launcher = new Launcher(perl, opts.logger);
  }

  /**
   * Why tasks cannot be given their own /etc/resolv.conf here (a mount namespace each, made by
   * the launcher), tried for real with `file`; undefined when they can.
   */
  resolvMountProblem(file: string): string | undefined {
    if (!this.launcher || this.tools.perl === undefined) return 'tasks are spawned without the launcher (perl not found)';
    return probeResolvMount(this.tools.perl, file);
  }

  /** How supervisors are started: through the launcher, or spawned from this process. */
  get launchMethod(): 'launcher' | 'spawn' {
    return this.launcher ? 'launcher' : 'spawn';
  }

  /** The agent's GPUs, by device: which are free, held or out of service. */
  get gpus(): GpuPool {
    return this.gpuPool;
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
    const rec = this.newRecord(info, sandboxDir(this.opts.workDir, info.taskId), Date.now());
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
    // Whom it runs as, before anything is made for it.
    let switchTo: RunAs | undefined;
    if (this.opts.users) {
      const decided = this.opts.users.decide(info.user, info.principal);
      if (!decided.ok) return this.failLaunch(rec, decided.message, 'REASON_TASK_INVALID');
      rec.runAs = decided.runAs;
      if (decided.switchUser) switchTo = decided.runAs;
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

    rec.memMiB = resources.mem;

    // The sandbox, and its log files when this process hands them to the child (the
    // launcher opens them itself).
    let logs: { stdoutFd: number; stderrFd: number } | undefined;
    const closeLogs = () => {
      if (logs) {
        closeQuietly(logs.stdoutFd);
        closeQuietly(logs.stderrFd);
      }
    };
    const owner = switchTo ? { uid: switchTo.uid, gid: switchTo.gid } : undefined;
    try {
      const created = mkdirSync(rec.sandbox, { recursive: true, mode: SANDBOX_MODE }) !== undefined;
      // An earlier run of the same task id must not speak for this one.
      if (!created) removeIfPresent(`${rec.sandbox}/${EXIT_STATUS_FILE}`);
      if (owner) chownSandbox(rec.sandbox, owner);
      // The logs exist from the start, as regular files of the task's user; the launcher's
      // child opens them again once it runs as that user.
      logs = openSandboxLogs(rec.sandbox, owner);
      if (this.launcher) {
        closeLogs();
        logs = undefined;
      }
    } catch (err) {
      return this.failLaunch(rec, `cannot create sandbox ${rec.sandbox}: ${(err as Error).message}`, 'REASON_EXECUTOR_TERMINATED');
    }
    const jobDir = this.opts.jobDirs !== undefined ? jobDirFor(info.labels, this.opts.jobDirs) : undefined;
    if (jobDir !== undefined) {
      try {
        ensureJobDir(jobDir, owner);
      } catch (err) {
        closeLogs();
        return this.failLaunch(rec, `cannot create the job's directory ${jobDir}: ${(err as Error).message}`, 'REASON_EXECUTOR_TERMINATED');
      }
    }

    // Its cgroup, which the supervisor joins before the task starts.
    let cgroupProcs: string[] = [];
    if (this.opts.cgroups) {
      try {
        rec.cgroup = this.opts.cgroups.create(sanitizeTaskId(info.taskId), { memMiB: resources.mem, cpus: resources.cpus });
        cgroupProcs = procsFiles(rec.cgroup);
      } catch (err) {
        closeLogs();
        return this.failLaunch(rec, `cannot create the task's cgroup: ${(err as Error).message}`, 'REASON_CONTAINER_LAUNCH_FAILED');
      }
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
      dns: { servers: [], ...this.opts.dns?.(), name: info.dnsName ?? '' },
      // A uid of a principal's own has no account and no home: its sandbox is its HOME.
      ...(rec.runAs ? { user: { name: rec.runAs.user, home: rec.runAs.home || rec.sandbox } } : {}),
    });
    // The task's own CAIRN_JOB_DIR (a path the job chose) wins.
    if (jobDir !== undefined && env.CAIRN_JOB_DIR === undefined) env.CAIRN_JOB_DIR = jobDir;
    const spec = spawnSpecFor({ ...info.command, arguments: info.command.arguments ?? [] });
    if (!info.command.shell && findExecutable(spec.file, env.PATH) === undefined) {
      // The supervisor would say "not found" with status 127; saying it here is clearer.
      closeLogs();
      return this.cannotStart(rec, `spawn ${spec.file} ENOENT (no such executable file)`);
    }
    // Who puts the supervisor into the task's cgroups: the launcher's child, before it drops
    // root's rights; spawned from here, the supervisor itself, or (when it already runs as
    // the task's user and cannot) this process, while the supervisor waits for its word.
    const held = !this.launcher && switchTo !== undefined && cgroupProcs.length > 0;
    const supervisorJoins = !this.launcher && !held ? cgroupProcs : [];
    const sup = supervisedSpawn(spec, info.command.shell, supervisorJoins, this.tools, held);
    if (sup.argv0Dropped) this.opts.logger?.warn({ taskId: info.taskId, argv0: spec.argv0 }, 'bash not found: the task runs with its program path as argv[0]');

    let resolvConf: string | undefined;
    try {
      resolvConf = this.launcher ? this.opts.resolvConf?.(info.dnsName ?? '') : undefined;
    } catch (err) {
      this.opts.logger?.warn({ taskId: info.taskId, err: (err as Error).message }, "cannot write the task's resolv.conf: it sees the host's");
    }
    if (this.launcher) {
      this.launcher.start(
        {
          cwd: rec.sandbox,
          // Relative to the sandbox: the task's user may not be able to reach it by its full path.
          stdoutPath: 'stdout',
          stderrPath: 'stderr',
          ...(switchTo ? { uid: switchTo.uid, gid: switchTo.gid } : {}),
          ...(resolvConf !== undefined ? { resolvConf } : {}),
          cgroupProcs,
          env,
          file: sup.file,
          argv0: sup.argv0,
          args: sup.args,
        },
        {
          onStarted: (pid, startTimeTicks) => this.onStarted(rec, pid, startTimeTicks),
          onFailed: (reason) => void this.cannotStart(rec, reason),
          onExit: (code, signal) => this.onSupervisorExit(rec, taskEndFromSupervisor(code, signal)),
          onOrphaned: () => {
            // Its end is found the way a recovered task's is: by polling /proc and reading its sandbox.
            rec.recovered = true;
            this.ensurePolling();
          },
        },
      );
      return 'launched';
    }

    let child: ChildProcess;
    try {
      child = spawn(sup.file, sup.args, {
        argv0: sup.argv0,
        cwd: rec.sandbox,
        env,
        // Its own process group, so a kill reaches everything the task started.
        detached: true,
        stdio: [held ? 'pipe' : 'ignore', logs!.stdoutFd, logs!.stderrFd],
        // Node (libuv) drops the supplementary groups when it sets ids.
        ...(switchTo ? { uid: switchTo.uid, gid: switchTo.gid } : {}),
      });
    } catch (err) {
      closeLogs();
      return this.cannotStart(rec, (err as Error).message);
    }
    // The child holds its own copies now.
    closeLogs();
    if (held && child.pid !== undefined) {
      // The supervisor waits on its stdin until it is in its cgroups; end-of-file alone
      // (a failed placement) makes it exit without starting the task.
      try {
        for (const file of cgroupProcs) writeFileSync(file, String(child.pid));
        child.stdin!.end('go\n');
      } catch (err) {
        child.stdin!.end();
        this.opts.logger?.warn({ taskId: info.taskId, err: (err as Error).message }, 'cannot place the task in its cgroup');
      }
      child.stdin!.on('error', () => undefined);
    }

    if (child.pid === undefined) {
      // Spawn failed (the shell missing?); Node reports why on the next tick.
      child.once('error', (err) => this.cannotStart(rec, err.message));
      return 'failed';
    }
    rec.child = child;
    child.once('exit', (code, signal) => this.onSupervisorExit(rec, taskEndFromSupervisor(code, signal)));
    child.on('error', (err) => this.opts.logger?.warn({ taskId: info.taskId, err: err.message }, 'task process error'));
    // Not yet reaped (Node reaps on a later turn), so readable even if it has already exited.
    this.onStarted(rec, child.pid, processStartTime(child.pid));
    return 'launched';
  }

  /** The supervisor exists: checkpoint it, then report RUNNING; carry out a kill asked for meanwhile. */
  private onStarted(rec: TaskRecord, pid: number, startTimeTicks: number | undefined): void {
    rec.pid = pid;
    rec.startTimeTicks = startTimeTicks;
    rec.startedAtMs = Date.now();
    void this.persist(rec, { state: 'TASK_RUNNING', message: '', hasExitCode: false, exitCode: 0, reason: '' });
    if (rec.killRequested && !rec.ending) this.startKill(rec, rec.killGraceMs ?? this.defaultGraceMs);
  }

  /**
   * Kills a task: SIGTERM to its process group now, SIGKILL to the group after the grace
   * period (the kill's, else the task's kill_grace_ms, else the default).
   */
  kill(taskId: string, graceMs = 0, message?: string, reason?: string): KillOutcome {
    const rec = this.tasks.get(taskId);
    if (!rec) return 'unknown';
    if (isTerminal(rec.state) || rec.ending) return 'terminal';
    if (rec.killRequested) return 'already-killing';
    rec.killRequested = true;
    rec.killMessage = message;
    rec.killReason = reason;
    const grace = graceMs > 0 ? graceMs : rec.info.killGraceMs > 0 ? rec.info.killGraceMs : this.defaultGraceMs;
    rec.killGraceMs = grace;
    // Not started yet: the kill is carried out when it is (or its failure is reported).
    if (rec.pid === undefined) return 'killing';
    void this.persist(rec, undefined);
    this.startKill(rec, grace);
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

  /** How many tasks have not ended yet. */
  runningCount(): number {
    let n = 0;
    for (const rec of this.tasks.values()) if (!isTerminal(rec.state)) n++;
    return n;
  }

  /**
   * The tasks the agent lists when it registers: every task it holds, those whose end is
   * not yet acknowledged included, with their last non-terminal state. So the master keeps
   * a task that ended while it was out of touch until the real end arrives, rather than
   * writing it off as lost at registration.
   */
  activeTasks(): RunningTask[] {
    const out: RunningTask[] = [];
    for (const rec of this.tasks.values()) {
      const state = isTerminal(rec.state) ? rec.activeState : rec.state;
      out.push({ taskId: rec.info.taskId, frameworkId: rec.info.frameworkId, state, resources: rec.info.resources });
    }
    return out;
  }

  /** Forgets an ended task (its terminal update was acknowledged). Running tasks stay. */
  release(taskId: string): void {
    const rec = this.tasks.get(taskId);
    if (!rec || !isTerminal(rec.state)) return;
    this.tasks.delete(taskId);
    const store = this.opts.checkpoints;
    if (store) {
      rec.chain = rec.chain.then(() =>
        store.remove(taskId).catch((err: Error) => this.opts.logger?.warn({ taskId, err: err.message }, 'cannot remove the checkpoint of a released task')),
      );
    }
  }

  /** Resolves when the task has ended (at once for tasks not held). */
  whenEnded(taskId: string): Promise<void> {
    return this.tasks.get(taskId)?.ended ?? Promise.resolve();
  }

  /**
   * Takes over the tasks an earlier agent process checkpointed. A task still running (same
   * pid, same start time) is re-attached — watched, killable, its GPUs held — or, with
   * `cleanup`, killed. A task that ended meanwhile is reported with the status its
   * supervisor recorded. A task whose end was checkpointed is reported again (its update
   * may never have been acknowledged). Call before the first registration, so the tasks
   * are listed in it.
   */
  recover(checkpoints: readonly TaskCheckpoint[], mode: RecoverMode): RecoverySummary {
    const summary: RecoverySummary = { reattached: [], ended: [], killed: [] };
    for (const cp of checkpoints) {
      const taskId = cp.task.taskId;
      if (this.tasks.has(taskId)) continue;
      const rec = this.newRecord(cp.task, cp.sandbox, cp.launchedAtMs);
      rec.recovered = true;
      rec.pid = cp.pid;
      rec.startTimeTicks = cp.startTimeTicks;
      rec.gpus = [...cp.gpus];
      rec.cgroup = cp.cgroup;
      rec.runAs = cp.runAs;
      rec.memMiB = memOf(cp.task.resources);
      rec.activeState = cp.activeState;
      rec.state = cp.activeState;
      rec.killRequested = cp.killRequested;
      rec.killGraceMs = cp.killGraceMs;
      this.tasks.set(taskId, rec);

      if (cp.terminal) {
        // Ended and checkpointed; only the acknowledgement may be missing.
        rec.ending = true;
        rec.terminal = cp.terminal;
        void this.announceEnd(rec, cp.terminal);
        summary.ended.push(taskId);
        continue;
      }
      const alive = cp.pid !== undefined && isSameProcessAlive(cp.pid, cp.startTimeTicks);
      if (!alive) {
        this.endRecovered(rec);
        summary.ended.push(taskId);
        continue;
      }
      if (!this.gpuPool.claim(taskId, rec.gpus)) {
        this.opts.logger?.warn({ taskId, gpus: rec.gpus }, 'a recovered task holds GPUs this agent no longer has free');
      }
      this.ensurePolling();
      if (mode === 'cleanup') {
        this.kill(taskId, 0, 'killed: the agent restarted with --recover=cleanup');
        summary.killed.push(taskId);
      } else {
        if (rec.killRequested) this.startKill(rec, rec.killGraceMs ?? this.defaultGraceMs);
        summary.reattached.push(taskId);
      }
    }
    return summary;
  }

  /**
   * Reads a task's log. Works for tasks the executor no longer holds (ended and released,
   * or run by an earlier agent process): their sandbox path follows from the id, and they
   * count as ended. Throws CAIRN_BAD_REQUEST naming the field, or CAIRN_UNKNOWN_TASK.
   */
  async readLog(taskId: string, stream: LogStream, offset: number, maxBytes = MAX_LOG_READ_BYTES, withTimes = false): Promise<LogChunk> {
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
      return await readSandboxLog(dir, stream, offset, maxBytes, terminal, withTimes);
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
   * what is left. Without, tasks keep running, detached from this process, and a later
   * agent recovers them from their checkpoints. Either way no timer, listener or handle
   * of the executor keeps the process alive afterwards, and every checkpoint asked for is
   * on disk when this resolves.
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
    this.launcher?.close();
    clearInterval(this.pollTimer);
    this.pollTimer = undefined;
    for (const rec of this.tasks.values()) {
      if (rec.killTimer) clearTimeout(rec.killTimer);
      rec.killTimer = undefined;
      // From here on a task's end is the next agent process's to find, in its sandbox.
      if (!rec.ending) rec.child?.removeAllListeners('exit');
      rec.child?.unref();
    }
    await Promise.all([...this.tasks.values()].map((r) => r.chain));
    await Promise.all(this.cleanups);
    await this.opts.checkpoints?.idle();
  }

  // ------------------------------------------------------------------ internals

  private newRecord(info: TaskInfo, sandbox: string, launchedAtMs: number): TaskRecord {
    let markEnded!: () => void;
    const ended = new Promise<void>((r) => {
      markEnded = r;
    });
    return {
      info,
      state: 'TASK_STAGING',
      activeState: 'TASK_STAGING',
      sandbox,
      child: undefined,
      pid: undefined,
      startTimeTicks: undefined,
      gpus: [],
      cgroup: undefined,
      runAs: undefined,
      memMiB: 0,
      launchedAtMs,
      startedAtMs: undefined,
      recovered: false,
      pollEnd: false,
      killRequested: false,
      killGraceMs: undefined,
      killMessage: undefined,
      killTimer: undefined,
      ending: false,
      terminal: undefined,
      chain: Promise.resolve(),
      ended,
      markEnded,
    };
  }

  private checkpointOf(rec: TaskRecord, activeState: TaskState): TaskCheckpoint {
    const cp: TaskCheckpoint = {
      version: 1,
      task: rec.info,
      sandbox: rec.sandbox,
      gpus: [...rec.gpus],
      launchedAtMs: rec.launchedAtMs,
      activeState,
      killRequested: rec.killRequested,
    };
    if (rec.pid !== undefined) cp.pid = rec.pid;
    if (rec.cgroup) cp.cgroup = rec.cgroup;
    if (rec.runAs) cp.runAs = rec.runAs;
    if (rec.startTimeTicks !== undefined) cp.startTimeTicks = rec.startTimeTicks;
    if (rec.killGraceMs !== undefined) cp.killGraceMs = rec.killGraceMs;
    if (rec.terminal) cp.terminal = rec.terminal;
    return cp;
  }

  /**
   * Checkpoints the task as it is now, then (once on disk) reports `status` if given.
   * Steps of one task run in order. A checkpoint that cannot be written is logged and the
   * report goes ahead: the task runs on, but a restarted agent will not know it.
   */
  private persist(rec: TaskRecord, status: TerminalStatus | undefined): Promise<void> {
    const activeState = status && !isTerminal(status.state) ? status.state : rec.activeState;
    const cp = this.checkpointOf(rec, activeState);
    const store = this.opts.checkpoints;
    rec.chain = rec.chain.then(async () => {
      if (store) {
        try {
          await store.write(cp);
        } catch (err) {
          this.opts.logger?.error({ taskId: rec.info.taskId, err: (err as Error).message }, 'cannot checkpoint the task; an agent restart will not recover it');
        }
      }
      if (status) this.report(rec, status);
    });
    return rec.chain;
  }

  private startKill(rec: TaskRecord, graceMs: number): void {
    if (rec.recovered && rec.pid !== undefined && !isSameProcessAlive(rec.pid, rec.startTimeTicks)) return; // the poll will see the end
    // A kill must end the task even if the report of its supervisor's exit never comes (the
    // launcher once lost such reports under a burst, and the task then held its resources
    // until the agent restarted). So a killed task is also watched by polling, as a
    // recovered one is: once its supervisor is gone, its end is read from its sandbox.
    // Already gone: there is nothing to signal, and the end is found on the next poll.
    this.pollForEnd(rec);
    if (rec.pid !== undefined && !isSameProcessAlive(rec.pid, rec.startTimeTicks)) return;
    this.signalGroup(rec, 'SIGTERM');
    if (rec.killTimer) clearTimeout(rec.killTimer);
    const startedAt = rec.startedAtMs;
    rec.killTimer = setTimeout(() => {
      rec.killTimer = undefined;
      if (!rec.ending) this.signalGroup(rec, 'SIGKILL');
    }, graceMs);
    // A SIGTERM that reaches a supervisor which has set its trap but not yet started the
    // task is absorbed, and the task would then run until the SIGKILL. A kill that comes
    // within a second of the start is therefore repeated while the grace period lasts.
    if (startedAt !== undefined && Date.now() - startedAt < EARLY_KILL_WINDOW_MS) {
      for (const after of EARLY_KILL_REPEATS_MS) {
        if (after >= graceMs) break;
        const t = setTimeout(() => {
          if (!rec.ending && rec.killTimer) this.signalGroup(rec, 'SIGTERM');
        }, after);
        t.unref();
      }
    }
  }

  private onSupervisorExit(rec: TaskRecord, end: ProcessEnd): void {
    // Whatever the task left behind in its group goes with it: its ports and GPUs are
    // free from now on, so nothing of the task may keep running.
    this.signalGroup(rec, 'SIGKILL');
    this.finish(rec, this.statusFor(rec, end));
  }

  /** A recovered task found ended: its end as the supervisor recorded it. */
  private endRecovered(rec: TaskRecord): void {
    if (rec.pid !== undefined) this.signalGroup(rec, 'SIGKILL');
    const recorded = rec.pid !== undefined ? readExitStatus(rec.sandbox) : undefined;
    if (recorded) {
      this.finish(rec, this.statusFor(rec, recorded));
    } else if (rec.killRequested) {
      // The supervisor itself was SIGKILLed at the end of the grace period.
      this.finish(rec, { ...terminalStatusFor(null, 'SIGKILL', true), message: rec.killMessage ?? 'killed on request (killed by signal SIGKILL)', reason: rec.killReason ?? '' });
    } else {
      const why = rec.pid === undefined ? 'it never started' : 'its supervisor ended without recording an exit status (killed, or the host restarted)';
      this.finish(rec, { state: 'TASK_FAILED', message: `the task ended while the agent was away: ${why}`, hasExitCode: false, exitCode: 0, reason: 'REASON_EXECUTOR_TERMINATED' });
    }
  }

  private statusFor(rec: TaskRecord, end: ProcessEnd): TerminalStatus {
    const status = terminalStatusFor(end.code, end.signal, rec.killRequested);
    if (rec.killRequested && (rec.killMessage || rec.killReason)) return { ...status, message: rec.killMessage || status.message, reason: rec.killReason ?? status.reason };
    if (status.state === 'TASK_FAILED' && rec.cgroup && endedByMemoryLimit(rec.cgroup, end.signal === 'SIGKILL')) {
      return {
        ...status,
        message: `memory limit of ${rec.memMiB} MiB reached: the kernel's OOM killer ended the task (${status.message})`,
        reason: 'REASON_CONTAINER_LIMITATION_MEMORY',
      };
    }
    return status;
  }

  private pollForEnd(rec: TaskRecord): void {
    rec.pollEnd = true;
    this.ensurePolling();
  }

  private ensurePolling(): void {
    if (this.pollTimer || this.closed) return;
    this.pollTimer = setInterval(() => this.pollRecovered(), this.pollMs);
    this.pollTimer.unref();
  }

  private pollRecovered(): void {
    let watching = 0;
    for (const rec of this.tasks.values()) {
      if ((!rec.recovered && !rec.pollEnd) || rec.ending || isTerminal(rec.state)) continue;
      if (rec.pid !== undefined && isSameProcessAlive(rec.pid, rec.startTimeTicks)) {
        watching++;
        continue;
      }
      this.endRecovered(rec);
    }
    if (watching === 0) {
      clearInterval(this.pollTimer);
      this.pollTimer = undefined;
    }
  }

  private failLaunch(rec: TaskRecord, message: string, reason: string): LaunchOutcome {
    this.finish(rec, { state: 'TASK_FAILED', message, hasExitCode: false, exitCode: 0, reason });
    return 'failed';
  }

  private cannotStart(rec: TaskRecord, detail: string): LaunchOutcome {
    const message = `cannot start: ${detail}`;
    try {
      // Where the task's user looks first; a few bytes, once (never through a symlink).
      const fd = openLogForAppend(logPath(rec.sandbox, 'stderr'));
      try {
        appendFileSync(fd, `cairn: ${message}\n`);
      } finally {
        closeQuietly(fd);
      }
    } catch {
      // the update still says why
    }
    return this.failLaunch(rec, message, 'REASON_EXECUTOR_TERMINATED');
  }

  private finish(rec: TaskRecord, status: TerminalStatus): void {
    if (isTerminal(rec.state) || rec.ending) return;
    rec.ending = true;
    if (rec.killTimer) clearTimeout(rec.killTimer);
    rec.killTimer = undefined;
    this.gpuPool.release(rec.info.taskId);
    rec.terminal = status;
    void this.announceEnd(rec, status);
  }

  /** Checkpoints the end, reports it, and only then marks the task ended and removes its cgroup. */
  private async announceEnd(rec: TaskRecord, status: TerminalStatus): Promise<void> {
    await this.persist(rec, status);
    rec.markEnded();
    if (rec.cgroup) {
      const removal = destroyCgroup(rec.cgroup);
      this.cleanups.add(removal);
      const left = await removal;
      this.cleanups.delete(removal);
      if (left.length > 0) this.opts.logger?.warn({ taskId: rec.info.taskId, left }, 'cannot remove the cgroup of an ended task');
    }
  }

  private report(rec: TaskRecord, status: TerminalStatus): void {
    rec.state = status.state;
    if (!isTerminal(status.state)) rec.activeState = status.state;
    // After shutdown nobody is listening; the next agent process reconciles with the master.
    if (this.closed) return;
    try {
      this.opts.onStatus({ taskId: rec.info.taskId, frameworkId: rec.info.frameworkId, ...status });
    } catch (err) {
      this.opts.logger?.error({ taskId: rec.info.taskId, err: (err as Error).message }, 'status handler threw');
    }
  }

  private signalGroup(rec: TaskRecord, signal: NodeJS.Signals): void {
    // A SIGKILL also reaches what left the group but not the cgroup (setsid, daemons).
    if (signal === 'SIGKILL' && rec.cgroup) signalCgroup(rec.cgroup, signal);
    if (rec.pid === undefined) return;
    try {
      process.kill(-rec.pid, signal);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code !== 'ESRCH') this.opts.logger?.warn({ taskId: rec.info.taskId, signal, err: (err as Error).message }, 'cannot signal task');
    }
  }
}

function removeIfPresent(path: string): void {
  try {
    unlinkSync(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
}

function memOf(resources: string): number {
  try {
    return Resources.parse(resources).mem;
  } catch {
    return 0;
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
    startTimeTicks: rec.startTimeTicks,
    gpuIndices: [...rec.gpus],
    recovered: rec.recovered,
    launchedAtMs: rec.launchedAtMs,
    cgroup: rec.cgroup,
    user: rec.runAs?.user,
  };
}
