// The parsed, validated options of the task commands (`run`, `attach`, `tasks`, `task`,
// `logs`, `kill`, `teardown`, `top`): what the command-line parser hands their handlers.

import type { TaskState } from '../../../shared/agent-messages.ts';
import type { TlsFiles } from '../../../shared/tls.ts';
import type { ShippedRunFile } from './run-files.ts';
import type { ListOptions, MasterClientCommandOptions } from '../common/options.ts';

export interface RunOptions {
  masterUrl: string;
  /** The command line's TLS as a client (../common/client-tls.ts). */
  tls?: TlsFiles;
  name: string;
  instances: number;
  cpus: number;
  mem: number;
  gpus: number;
  ports: number;
  role: string;
  /** The framework's user, which its tasks run as (`--user`); left out, the agent's default. */
  user?: string;
  /** From `--env K=V`, in the order given (a later K wins). */
  env: [string, string][];
  /** The command and its arguments. */
  command: string[];
  /** `--timeout`: give up when the tasks are not all launched after this long (exit 124). */
  timeoutMs?: number;
  /** `--detach`: print the task ids and return once they are launched; they live on. */
  detach?: boolean;
  /** `--image`: run the command in a Docker container of this image. */
  image?: string;
  /** `--file LOCAL[:NAME]`: files read here, written into each task's sandbox. */
  files?: ShippedRunFile[];
}

/** `cairn attach TASK_ID...`: follow tasks a `cairn run --detach` launched. */
export interface AttachOptions extends MasterClientCommandOptions {
  taskIds: string[];
}

/** The `tasks` list shows this many unless `--limit` says otherwise. */
export const DEFAULT_TASK_LIMIT = 50;

export interface TasksOptions extends ListOptions {
  states?: TaskState[];
  /** Framework id or name. */
  framework?: string;
  /** Agent id or hostname. */
  agent?: string;
  /** 0: all. */
  limit: number;
}

export interface TaskOptions extends MasterClientCommandOptions {
  taskId: string;
  output?: 'json' | 'yaml';
}

export interface LogsOptions extends MasterClientCommandOptions {
  taskId: string;
  stream: 'stdout' | 'stderr';
  follow: boolean;
  /** `--tail N`: only the last N lines of what is there, then (following) what comes. */
  tail?: number;
  /** `--timestamps`: each line prefixed with when it was written (as the agent noted it). */
  timestamps?: boolean;
  /** `--since D`: only the lines written in the last D milliseconds. */
  sinceMs?: number;
}

export interface KillOptions extends MasterClientCommandOptions {
  taskId: string;
}

export interface TeardownOptions extends MasterClientCommandOptions {
  frameworkId: string;
}

export interface TopOptions extends MasterClientCommandOptions {
  /** Time between refreshes. */
  intervalMs: number;
  /** Print one frame and exit. */
  once: boolean;
  /** Clear the screen before each frame (a terminal). */
  clear: boolean;
}
