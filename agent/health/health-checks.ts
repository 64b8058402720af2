// The agent's health checks: one TaskHealthCheck per running task that has a check. It
// watches the task's status changes on their way to the master (`observe`): RUNNING starts
// the check, an end stops it. Results go out as TASK_RUNNING updates with `healthy`; too
// many failures kill the task through its executor's normal kill (grace period included),
// and that kill's end goes out as TASK_KILLED, healthy false, with
// REASON_TASK_HEALTH_CHECK_STATUS_UPDATED. Checks are kept on disk (store.ts) while their
// task runs, so an agent restarted with its tasks recovered resumes them (`recover`).

import { readFileSync, statSync } from 'node:fs';
import type Docker from 'dockerode';
import type { Logger } from 'pino';
import { isTerminal, type TaskInfo } from '../../shared/agent-messages.ts';
import type { TaskSnapshot, TaskStatusChange } from '../executors/process/executor.ts';
import { TaskHealthCheck } from './checker.ts';
import { steadyClock } from '../../shared/steady-clock.ts';
import type { HealthTimings } from './health-state.ts';
import { probeCommand, probeDockerExec, probeHttp, probeTcp, type CommandTarget, type ProbeOutcome } from './probes.ts';
import { HealthStore, type StoredHealthCheck } from './store.ts';
import { describeTarget, healthTarget, usableSpec, type HealthTarget } from './target.ts';

export const HEALTH_REASON = 'REASON_TASK_HEALTH_CHECK_STATUS_UPDATED';

export interface HealthChecksOptions {
  store: HealthStore;
  /** What the executors know of a task now (its pid, sandbox), for COMMAND checks. */
  snapshot: (taskId: string) => TaskSnapshot | undefined;
  /** The Docker client, for COMMAND checks of container tasks; undefined without containers. */
  docker: () => Docker | undefined;
  /** Sends a status update of the agent's own (a health change). */
  report: (change: TaskStatusChange) => void;
  /** Kills a task through its executor, with the message its end will carry. */
  kill: (taskId: string, message: string) => void;
  /** The agent's own environment, for a COMMAND check whose task's cannot be read. */
  agentEnv?: Readonly<Record<string, string | undefined>>;
  now?: () => number;
  logger?: Logger;
}

interface Planned {
  frameworkId: string;
  target: HealthTarget;
  timings: HealthTimings;
}

export class HealthChecks {
  /** Checks of tasks launched but not yet running. */
  private readonly planned = new Map<string, Planned>();
  private readonly active = new Map<string, TaskHealthCheck>();
  /** Tasks a check is killing, with the message of their end. */
  private readonly killing = new Map<string, string>();
  private readonly now: () => number;
  private stopped = false;

  constructor(private readonly opts: HealthChecksOptions) {
    // Grace periods, intervals and time-outs on a steady clock: a wall-clock step neither
    // kills a healthy task early nor leaves a failing one unchecked for the step's length.
    this.now = opts.now ?? steadyClock();
  }

  /** Notes a launched task's check; it starts when the task runs. A check the agent cannot place is logged, the task runs unchecked. */
  noteLaunch(info: TaskInfo): void {
    if (this.stopped || !info.healthCheck || this.active.has(info.taskId) || this.planned.has(info.taskId)) return;
    if (!usableSpec(info.healthCheck)) {
      this.opts.logger?.warn({ taskId: info.taskId }, 'health check of the launch is malformed: the task runs unchecked');
      return;
    }
    const spec = info.healthCheck;
    try {
      this.planned.set(info.taskId, {
        frameworkId: info.frameworkId,
        target: healthTarget(spec, info),
        timings: { delayMs: spec.delayMs, intervalMs: spec.intervalMs, timeoutMs: spec.timeoutMs, gracePeriodMs: spec.gracePeriodMs, consecutiveFailures: spec.consecutiveFailures },
      });
    } catch (err) {
      this.opts.logger?.warn({ taskId: info.taskId, err: (err as Error).message }, 'health check cannot be placed: the task runs unchecked');
    }
  }

  /**
   * Sees a task's status change on its way out, and returns it as it should go: the end of
   * a task a check killed says so.
   */
  observe(change: TaskStatusChange): TaskStatusChange {
    // The update goes out whatever happens here: a check's trouble never costs a status.
    try {
      return this.seen(change);
    } catch (err) {
      this.opts.logger?.error({ taskId: change.taskId, err: (err as Error).message }, 'health checks could not follow a status change');
      return change;
    }
  }

  private seen(change: TaskStatusChange): TaskStatusChange {
    const { taskId } = change;
    if (isTerminal(change.state)) {
      this.planned.delete(taskId);
      const check = this.active.get(taskId);
      if (check) {
        check.stop();
        this.active.delete(taskId);
        this.forget(taskId);
      }
      const message = this.killing.get(taskId);
      if (message === undefined) return change;
      this.killing.delete(taskId);
      return { ...change, state: 'TASK_KILLED', message, reason: HEALTH_REASON, hasHealthy: true, healthy: false };
    }
    if (change.state === 'TASK_RUNNING' && !change.hasHealthy) {
      const plan = this.planned.get(taskId);
      if (plan) {
        this.planned.delete(taskId);
        const entry: StoredHealthCheck = { taskId, frameworkId: plan.frameworkId, target: plan.target, timings: plan.timings, startedAtMs: this.now() };
        this.begin(entry);
        this.opts.store.write(entry).catch((err: Error) => this.opts.logger?.warn({ taskId, err: err.message }, 'cannot record the health check; an agent restart will not resume it'));
      }
    }
    return change;
  }

  /** Resumes the checks of tasks an earlier agent process started and that still run; forgets the rest. */
  async recover(running: readonly TaskSnapshot[]): Promise<string[]> {
    const { entries, problems } = await this.opts.store.loadAll();
    for (const p of problems) this.opts.logger?.warn(p);
    const resumed: string[] = [];
    for (const e of entries) {
      const s = running.find((r) => r.taskId === e.taskId);
      if (!s || isTerminal(s.state)) {
        this.forget(e.taskId);
        continue;
      }
      if (this.active.has(e.taskId) || this.stopped) continue;
      this.begin(e);
      resumed.push(e.taskId);
    }
    return resumed;
  }

  /** Whether a task's check runs, and its latest result. */
  status(taskId: string): { checking: boolean; healthy: boolean | undefined } {
    const c = this.active.get(taskId);
    return { checking: c !== undefined, healthy: c?.healthy };
  }

  /** Stops every check (the agent stops); their records stay for the next agent process. */
  stop(): void {
    this.stopped = true;
    for (const c of this.active.values()) c.stop();
    this.active.clear();
    this.planned.clear();
  }

  private begin(e: StoredHealthCheck): void {
    const { taskId, frameworkId } = e;
    const what = describeTarget(e.target);
    const check = new TaskHealthCheck({
      timings: e.timings,
      taskStartedAtMs: e.startedAtMs,
      what,
      now: this.now,
      ...(this.opts.logger ? { logger: this.opts.logger } : {}),
      probe: (signal) => this.probe(taskId, e.target, signal),
      onReport: (healthy, message) => {
        this.opts.logger?.info({ taskId, healthy, check: what }, healthy ? 'task is healthy' : 'task is unhealthy');
        this.opts.report({ taskId, frameworkId, state: 'TASK_RUNNING', message, hasExitCode: false, exitCode: 0, reason: HEALTH_REASON, hasHealthy: true, healthy });
      },
      onKill: (message) => {
        this.opts.logger?.warn({ taskId, check: what }, message);
        this.killing.set(taskId, message);
        this.opts.kill(taskId, message);
      },
    });
    this.active.set(taskId, check);
    check.start();
  }

  private forget(taskId: string): void {
    this.opts.store.remove(taskId).catch((err: Error) => this.opts.logger?.warn({ taskId, err: err.message }, 'cannot remove the health check record of an ended task'));
  }

  private probe(taskId: string, target: HealthTarget, signal: AbortSignal): Promise<ProbeOutcome> {
    switch (target.kind) {
      case 'http':
        return probeHttp(target, signal);
      case 'tcp':
        return probeTcp(target.port, signal);
      case 'docker-exec': {
        const docker = this.opts.docker();
        if (!docker) return Promise.resolve({ ok: false, error: 'containers are not available on this agent' });
        return probeDockerExec(docker, target.container, target.command, signal);
      }
      default: {
        const snap = this.opts.snapshot(taskId);
        if (!snap || snap.pid === undefined) return Promise.resolve({ ok: false, error: 'the task has no process to check next to' });
        return probeCommand(commandTarget(target.command, snap, this.opts.agentEnv ?? process.env), signal);
      }
    }
  }
}

/**
 * Where a COMMAND check runs: the task's sandbox, the environment of its supervisor (the
 * task's own, as /proc shows it) and, for a root agent, the supervisor's user and group.
 */
export function commandTarget(command: string, snap: Pick<TaskSnapshot, 'pid' | 'sandbox'>, agentEnv: Readonly<Record<string, string | undefined>>): CommandTarget {
  const target: CommandTarget = { command, cwd: snap.sandbox, env: {} };
  try {
    for (const entry of readFileSync(`/proc/${snap.pid}/environ`, 'latin1').split('\0')) {
      const eq = entry.indexOf('=');
      if (eq > 0) target.env[entry.slice(0, eq)] = Buffer.from(entry.slice(eq + 1), 'latin1').toString('utf8');
    }
  } catch {
    // Unreadable (gone, or another user's): the agent's PATH at least, and the sandbox.
    target.env = { PATH: agentEnv.PATH ?? '/usr/local/bin:/usr/bin:/bin', MESOS_SANDBOX: snap.sandbox };
  }
  if (process.getuid?.() === 0) {
    try {
      const st = statSync(`/proc/${snap.pid}`);
      if (st.uid !== 0) {
        target.uid = st.uid;
        target.gid = st.gid;
      }
    } catch {
      // The task is gone; the check fails on its own.
    }
  }
  return target;
}
