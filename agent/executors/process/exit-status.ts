// How a task's end becomes its terminal state (pure).

import { constants } from 'node:os';
import type { TaskState } from '../../../shared/agent-protocol.ts';

export interface TerminalStatus {
  state: TaskState;
  message: string;
  hasExitCode: boolean;
  /** The exit code, or minus the signal number for a process a signal ended. */
  exitCode: number;
  reason: string;
}

export function signalNumber(signal: string): number {
  return (constants.signals as Record<string, number | undefined>)[signal] ?? 0;
}

/**
 * Exit 0 is FINISHED, any other code FAILED; a signal nobody asked for is FAILED; and any
 * end after a kill request is KILLED, whatever the process did on its way out.
 */
export function terminalStatusFor(code: number | null, signal: string | null, killRequested: boolean): TerminalStatus {
  const hasExitCode = code !== null || signal !== null;
  const exitCode = code !== null ? code : signal !== null ? -signalNumber(signal) : 0;
  const how = code !== null ? `exited with code ${code}` : signal !== null ? `killed by signal ${signal}` : 'ended';
  if (killRequested) {
    return { state: 'TASK_KILLED', message: `killed on request (${how})`, hasExitCode, exitCode, reason: '' };
  }
  if (code === 0) return { state: 'TASK_FINISHED', message: how, hasExitCode, exitCode, reason: '' };
  return { state: 'TASK_FAILED', message: how, hasExitCode, exitCode, reason: 'REASON_COMMAND_EXECUTOR_FAILED' };
}
