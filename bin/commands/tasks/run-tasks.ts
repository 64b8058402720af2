// The pure half of `cairn run`: what its framework subscribes as, how a command line
// becomes a Mesos CommandInfo, the tasks' ids and environment, and how a task's end
// becomes an exit code. No I/O here, so all of it is tested directly.

import type { TaskState } from '../../../shared/agent-protocol.ts';
import type { CommandInfoJson, FrameworkInfo, TaskInfoJson } from '../../../shared/mesos-v1.ts';
import type { PlacedTask, TaskRequirement } from '../../../shared/sdk/offer-fit.ts';
import type { RunOptions } from './options.ts';
import { shellQuote, withShippedFiles, type ShippedRunFile } from './run-files.ts';

/** How long the master keeps this framework's tasks after losing `cairn run` (seconds). */
export const RUN_FAILOVER_TIMEOUT_S = 60;

/**
 * With `--detach`: how long the tasks live on after `cairn run` returned (seconds). The
 * master kills what still runs then, as for any framework gone past its failover timeout.
 */
export const DETACH_FAILOVER_TIMEOUT_S = 7 * 24 * 3600;

/** Exit code of a `cairn run` whose `--timeout` ended the wait, as timeout(1) has it (every --timeout's). */
export { EXIT_TIMED_OUT } from '../common/exit-codes.ts';

export function runFrameworkInfo(o: Pick<RunOptions, 'name' | 'role'> & { detach?: boolean }, user: string): FrameworkInfo {
  return {
    user,
    name: `cairn-run:${o.name}`,
    role: o.role,
    failover_timeout: o.detach ? DETACH_FAILOVER_TIMEOUT_S : RUN_FAILOVER_TIMEOUT_S,
    // A one-off command may land on a GPU host even when it asks for no GPU.
    capabilities: [{ type: 'GPU_RESOURCES' }],
  };
}

/** Whether a framework is one a `cairn run --detach` left behind (`cairn attach` tidies it away). */
export function isDetachedRun(fw: { name: string; failoverTimeoutS: number }): boolean {
  return fw.name.startsWith('cairn-run:') && fw.failoverTimeoutS === DETACH_FAILOVER_TIMEOUT_S;
}

export function taskRequirement(o: Pick<RunOptions, 'cpus' | 'mem' | 'gpus' | 'ports'>): TaskRequirement {
  return { cpus: o.cpus, mem: o.mem, gpus: o.gpus, ports: o.ports };
}

/**
 * One argument is a shell command line (`cairn run 'make && ./a.out'`); several are a
 * program and its argv, run without a shell (argv[0] included, as Mesos wants).
 */
export function commandInfo(args: readonly string[]): CommandInfoJson {
  if (args.length === 0) throw new Error('a command is required');
  if (args.length === 1) return { shell: true, value: args[0] };
  return { shell: false, value: args[0], arguments: [...args] };
}

/** `<name>-<index>-<suffix>`, one per instance; the suffix keeps reruns apart. */
export function taskIds(name: string, count: number, suffix: () => string): string[] {
  return Array.from({ length: count }, (_, index) => `${name}-${index}-${suffix()}`);
}

/**
 * The task's environment: its place among the instances, its ports (PORT is PORT0), then
 * the user's `--env` values, which win over the rest.
 */
export function taskEnvironment(index: number, count: number, ports: readonly number[], userEnv: readonly [string, string][]): { name: string; value: string }[] {
  const env = new Map<string, string>([
    ['CAIRN_TASK_INDEX', String(index)],
    ['CAIRN_TASK_COUNT', String(count)],
  ]);
  if (ports.length > 0) env.set('PORT', String(ports[0]));
  ports.forEach((port, i) => env.set(`PORT${i}`, String(port)));
  for (const [name, value] of userEnv) env.set(name, value);
  return [...env].map(([name, value]) => ({ name, value }));
}

export interface RunTaskSpec {
  name: string;
  count: number;
  command: readonly string[];
  env: readonly [string, string][];
  /** `--image`: run the command in a Docker container of this image (host networking). */
  image?: string;
  /** `--file`: written into each task's sandbox before the command runs there. */
  files?: readonly ShippedRunFile[];
}

/**
 * The command as the task runs it: as given, or, with files to ship, one shell line that
 * writes them into the sandbox first (a program and its argv become quoted words).
 */
export function taskCommand(command: readonly string[], files: readonly ShippedRunFile[] = []): CommandInfoJson {
  const plain = commandInfo(command);
  if (files.length === 0) return plain;
  const line = command.length === 1 ? command[0] : command.map(shellQuote).join(' ');
  return { shell: true, value: withShippedFiles(files, line) };
}

export function buildTaskInfo(spec: RunTaskSpec, task: { index: number; id: string }, agentId: string, placed: PlacedTask): TaskInfoJson {
  return {
    name: `${spec.name}-${task.index}`,
    task_id: { value: task.id },
    agent_id: { value: agentId },
    resources: placed.resources,
    command: {
      ...taskCommand(spec.command, spec.files),
      environment: { variables: taskEnvironment(task.index, spec.count, placed.ports, spec.env) },
    },
    ...(spec.image !== undefined ? { container: { type: 'DOCKER', docker: { image: spec.image, network: 'HOST' } } } : {}),
  };
}

/**
 * The exit code `cairn run` reports for a task that ended: 0 for TASK_FINISHED; the
 * process's own code when it has one; 128+N for death by signal N (as a shell reports);
 * 1 when nothing better is known.
 */
export function exitCodeFor(state: TaskState, exitCode: number | undefined): number {
  if (state === 'TASK_FINISHED') return 0;
  if (exitCode === undefined || exitCode === 0) return 1;
  if (exitCode < 0) return Math.min(255, 128 - exitCode);
  return Math.min(255, exitCode);
}

const ENDINGS: Partial<Record<TaskState, string>> = {
  TASK_FAILED: 'failed',
  TASK_KILLED: 'was killed',
  TASK_LOST: 'was lost',
  TASK_ERROR: 'could not be launched',
  TASK_DROPPED: 'was dropped',
  TASK_GONE: 'is gone',
};

/** A line for stderr about a task that did not finish well. */
export function describeEnding(taskId: string, state: TaskState, exitCode: number | undefined, message: string | undefined): string {
  let text = `task ${taskId} ${ENDINGS[state] ?? `ended in ${state}`}`;
  if (exitCode !== undefined && exitCode !== 0) text += exitCode < 0 ? ` (signal ${-exitCode})` : ` (exit code ${exitCode})`;
  if (message) text += `: ${message}`;
  return text;
}
