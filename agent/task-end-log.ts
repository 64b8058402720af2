// The log line of a task's end (no I/O): what ended, how, and why, at info for an end that
// went as asked (FINISHED, KILLED) and at warn for a failure. The agent writes it once per
// end, when the executor reports it; re-sending the update to the master writes nothing.

import { constants } from 'node:os';
import type { TaskState } from '../shared/agent-protocol.ts';
import type { TaskStatusChange } from './executors/process/executor.ts';

/** A task's end as the executor reports it. */
export type TaskEnd = TaskStatusChange;

/** Ends that are failures: the task did not do what it was asked, or was lost with its host. */
const FAILURES: ReadonlySet<TaskState> = new Set<TaskState>(['TASK_FAILED', 'TASK_LOST', 'TASK_ERROR', 'TASK_DROPPED', 'TASK_GONE']);

function signalName(n: number): string | undefined {
  return Object.entries(constants.signals).find(([, v]) => v === n)?.[0];
}

export function taskEndLine(end: TaskEnd): { level: 'info' | 'warn'; fields: Record<string, unknown>; msg: string } {
  const fields: Record<string, unknown> = { taskId: end.taskId, frameworkId: end.frameworkId, state: end.state };
  if (end.hasExitCode) {
    if (end.exitCode >= 0) fields.exitCode = end.exitCode;
    else fields.signal = signalName(-end.exitCode) ?? -end.exitCode;
  }
  if (end.reason !== '') fields.reason = end.reason;
  if (end.message !== '') fields.message = end.message;
  const failed = FAILURES.has(end.state);
  return { level: failed ? 'warn' : 'info', fields, msg: failed ? 'task failed' : 'task ended' };
}
