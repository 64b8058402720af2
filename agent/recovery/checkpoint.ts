// What the agent checkpoints per task, and where: `<workDir>/meta/tasks/<task>.json`, one
// file per task, so a restarted agent (upgrade, crash, SIGKILL) knows what it was running.
//
// A file is written whole and durably: a temporary file is written and fsynced, renamed
// over the old one, and the directory is fsynced; a crash leaves the old version or the
// new one, never a torn file. Writes are group-committed: every write asked for in one
// event-loop turn shares one batch and one directory fsync, so a burst of launches costs
// a batch, not a disk round trip per task. Per task, writes complete in the order asked.
//
// The task's user travels in it twice: as asked (task.user, the framework's) and as resolved
// at launch (runAs), so a recovered task is known to run as whom it was started as, whatever
// the user database says now.
//
// When it is written: after the task's process exists (pid and start time known), when a
// kill is asked for, and when the task ends (its terminal status, which is re-sent after a
// restart until the master acknowledges it). The file is removed once that
// acknowledgement arrives. Non-terminal updates are not kept: a re-registering agent lists
// its tasks with their states and the master reconciles from that list.

import { mkdir, open, readdir, readFile, rename, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import type { TaskInfo, TaskState } from '../../shared/agent-protocol.ts';
import type { TerminalStatus } from '../executors/process/exit-status.ts';
import { sanitizeTaskId } from '../executors/process/sandbox.ts';
import type { CgroupRef } from '../isolation/cgroups.ts';
import type { RunAs } from '../task-users.ts';

export const CHECKPOINT_VERSION = 1;

export interface TaskCheckpoint {
  version: typeof CHECKPOINT_VERSION;
  task: TaskInfo;
  sandbox: string;
  /** The supervisor's pid, which is also the task's process group; absent if it never started. */
  pid?: number;
  /** /proc/PID/stat field 22 of that pid: tells the same process from a later one with its pid. */
  startTimeTicks?: number;
  gpus: number[];
  /** The task's cgroup, when the agent isolates tasks. */
  cgroup?: CgroupRef;
  launchedAtMs: number;
  /** The last non-terminal state reported; what the agent lists for the task when it registers. */
  activeState: TaskState;
  killRequested: boolean;
  /** Grace period of the kill that was asked for, so a restarted agent can finish it. */
  killGraceMs?: number;
  /** Set once the task has ended. */
  terminal?: TerminalStatus;
  /** The user the task runs as (its framework's, or the agent's default), as resolved at launch. */
  runAs?: RunAs;
}

export function checkpointsDir(workDir: string): string {
  return join(workDir, 'meta', 'tasks');
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Checks a checkpoint read back from disk; throws an Error naming what is wrong. */
export function parseCheckpoint(text: string): TaskCheckpoint {
  const v: unknown = JSON.parse(text);
  if (!isObject(v)) throw new Error('not a JSON object');
  if (v.version !== CHECKPOINT_VERSION) throw new Error(`unknown checkpoint version ${String(v.version)}`);
  const task = v.task;
  if (!isObject(task) || typeof task.taskId !== 'string' || task.taskId === '' || typeof task.frameworkId !== 'string') {
    throw new Error('task.taskId/frameworkId missing');
  }
  if (typeof v.sandbox !== 'string' || v.sandbox === '') throw new Error('sandbox missing');
  if (v.pid !== undefined && (!Number.isInteger(v.pid) || (v.pid as number) <= 0)) throw new Error(`bad pid ${String(v.pid)}`);
  if (v.startTimeTicks !== undefined && !Number.isInteger(v.startTimeTicks)) throw new Error('bad startTimeTicks');
  if (!Array.isArray(v.gpus) || !v.gpus.every((g) => Number.isInteger(g))) throw new Error('bad gpus');
  if (v.cgroup !== undefined && (!isObject(v.cgroup) || (v.cgroup.version !== 1 && v.cgroup.version !== 2))) throw new Error('bad cgroup');
  if (typeof v.launchedAtMs !== 'number') throw new Error('launchedAtMs missing');
  if (typeof v.activeState !== 'string') throw new Error('activeState missing');
  if (typeof v.killRequested !== 'boolean') throw new Error('killRequested missing');
  if (v.terminal !== undefined && (!isObject(v.terminal) || typeof v.terminal.state !== 'string')) throw new Error('bad terminal status');
  if (v.runAs !== undefined) {
    const r = v.runAs;
    if (!isObject(r) || typeof r.user !== 'string' || !Number.isInteger(r.uid) || !Number.isInteger(r.gid) || typeof r.home !== 'string') throw new Error('bad runAs');
  }
  return v as unknown as TaskCheckpoint;
}

type Op = { kind: 'write'; data: string } | { kind: 'remove' };

export class CheckpointStore {
  private pending = new Map<string, { op: Op; waiters: { resolve: () => void; reject: (e: Error) => void }[] }>();
  private flushing: Promise<void> | undefined;
  private scheduled = false;
  private dirReady: Promise<void> | undefined;

  constructor(readonly dir: string) {}

  fileFor(taskId: string): string {
    return join(this.dir, `${sanitizeTaskId(taskId)}.json`);
  }

  /** Reads every checkpoint; unreadable ones are set aside (`.corrupt`) and described. */
  async loadAll(): Promise<{ checkpoints: TaskCheckpoint[]; problems: string[] }> {
    const checkpoints: TaskCheckpoint[] = [];
    const problems: string[] = [];
    let names: string[];
    try {
      names = await readdir(this.dir);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { checkpoints, problems };
      throw err;
    }
    for (const name of names.sort()) {
      const path = join(this.dir, name);
      if (name.endsWith('.tmp')) {
        // A write that a crash cut short; the previous version (if any) is still in place.
        await unlink(path).catch(() => undefined);
        continue;
      }
      if (!name.endsWith('.json')) continue;
      try {
        checkpoints.push(parseCheckpoint(await readFile(path, 'utf8')));
      } catch (err) {
        problems.push(`${path}: ${(err as Error).message}; set aside as ${name}.corrupt`);
        await rename(path, `${path}.corrupt`).catch(() => undefined);
      }
    }
    return { checkpoints, problems };
  }

  /** Durably replaces the task's checkpoint. Resolves once it is on disk. */
  write(cp: TaskCheckpoint): Promise<void> {
    return this.enqueue(cp.task.taskId, { kind: 'write', data: `${JSON.stringify(cp)}\n` });
  }

  /** Removes the task's checkpoint (its terminal update was acknowledged). */
  remove(taskId: string): Promise<void> {
    return this.enqueue(taskId, { kind: 'remove' });
  }

  /** Resolves when nothing is queued or being written. */
  async idle(): Promise<void> {
    while (this.flushing || this.pending.size > 0 || this.scheduled) {
      if (this.flushing) await this.flushing.catch(() => undefined);
      else await new Promise((r) => setImmediate(r));
    }
  }

  private enqueue(taskId: string, op: Op): Promise<void> {
    return new Promise((resolve, reject) => {
      const entry = this.pending.get(taskId);
      // The latest operation wins; everyone waiting is answered when it is on disk.
      if (entry) {
        entry.op = op;
        entry.waiters.push({ resolve, reject });
      } else {
        this.pending.set(taskId, { op, waiters: [{ resolve, reject }] });
      }
      this.schedule();
    });
  }

  private schedule(): void {
    if (this.scheduled || this.flushing) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      this.flushing = this.flush().finally(() => {
        this.flushing = undefined;
        if (this.pending.size > 0) this.schedule();
      });
    });
  }

  private async flush(): Promise<void> {
    const batch = this.pending;
    this.pending = new Map();
    this.dirReady ??= mkdir(this.dir, { recursive: true }).then(() => undefined);
    try {
      await this.dirReady;
    } catch (err) {
      this.dirReady = undefined;
      for (const e of batch.values()) for (const w of e.waiters) w.reject(err as Error);
      return;
    }
    const results = await Promise.allSettled([...batch].map(([taskId, e]) => this.apply(taskId, e.op)));
    let dirError: Error | undefined;
    try {
      await fsyncPath(this.dir);
    } catch (err) {
      dirError = err as Error;
    }
    let i = 0;
    for (const e of batch.values()) {
      const r = results[i++];
      const err = r.status === 'rejected' ? (r.reason as Error) : dirError;
      for (const w of e.waiters) {
        if (err) w.reject(err);
        else w.resolve();
      }
    }
  }

  private async apply(taskId: string, op: Op): Promise<void> {
    const path = this.fileFor(taskId);
    if (op.kind === 'remove') {
      await unlink(path).catch((err: NodeJS.ErrnoException) => {
        if (err.code !== 'ENOENT') throw err;
      });
      return;
    }
    const tmp = `${path}.tmp`;
    const fh = await open(tmp, 'w', 0o600);
    try {
      await fh.writeFile(op.data);
      await fh.sync();
    } finally {
      await fh.close();
    }
    await rename(tmp, path);
  }
}

async function fsyncPath(path: string): Promise<void> {
  const fh = await open(path, 'r');
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}
