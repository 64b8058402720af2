// How the command line shows tasks (pure): exit codes as the shell sees them, the short
// reason a task ended, the filters and order of `cairn tasks`, and `cairn task ID`'s text.

import { constants } from 'node:os';
import type { UsageReport } from '../../../shared/agent-messages.ts';
import type { StateView, TaskView } from '../../../shared/master-state.ts';
import type { TaskState } from '../../../shared/agent-messages.ts';
import { formatTable } from '../common/table.ts';

/**
 * The exit code as a shell reports it: the agent records a process a signal ended as minus
 * the signal's number, and a shell says 128+N (143 for SIGTERM, 137 for SIGKILL). Containers'
 * codes already come as the shell's.
 */
export function shellExitCode(exitCode: number): number {
  return exitCode < 0 ? 128 - exitCode : exitCode;
}

const SIGNAL_NAMES = new Map(Object.entries(constants.signals as Record<string, number>).map(([name, n]) => [n, name]));

/**
 * Why a task ended, in a word, where its state alone does not say it: OOM (its memory limit),
 * preempted (its agent drained past the deadline), killed (on request), or the signal that
 * ended a failed process. Undefined for the rest (a running task, a plain failure, a finish).
 */
export function endReason(t: Pick<TaskView, 'state' | 'reason' | 'message' | 'exitCode'>): string | undefined {
  if (t.reason === 'REASON_CONTAINER_LIMITATION_MEMORY') return 'OOM';
  // The agent's drain-deadline kill carries no reason of its own, only its message.
  if (t.reason === 'REASON_CONTAINER_PREEMPTED' || t.reason === 'REASON_AGENT_DRAINING' || (t.state === 'TASK_KILLED' && /drain/i.test(t.message))) return 'preempted';
  if (t.state === 'TASK_KILLED') return 'killed';
  if (t.state === 'TASK_FAILED' && t.exitCode !== undefined && t.exitCode < 0) return SIGNAL_NAMES.get(-t.exitCode) ?? `signal ${-t.exitCode}`;
  return undefined;
}

/** The EXIT cell: `143 (killed)`, `137 (OOM)`, `3`, `- (killed)` when the task never exited, `-`. */
export function exitCell(t: Pick<TaskView, 'state' | 'reason' | 'message' | 'exitCode'>): string {
  const code = t.exitCode === undefined ? '-' : String(shellExitCode(t.exitCode));
  const why = endReason(t);
  return why === undefined ? code : `${code} (${why})`;
}

export interface TaskFilter {
  states?: readonly TaskState[];
  /** Framework id or name. */
  framework?: string;
  /** Agent id or hostname. */
  agent?: string;
  /** At most this many (0: all). */
  limit: number;
}

/** The tasks a filter selects, newest first (by launch, then id), cut at the limit; `more` counts those cut. */
export function selectTasks(state: Pick<StateView, 'tasks' | 'agents' | 'frameworks'>, f: TaskFilter): { tasks: TaskView[]; more: number } {
  const agentIds = f.agent === undefined ? undefined : new Set(state.agents.filter((a) => a.id === f.agent || a.hostname === f.agent).map((a) => a.id));
  const frameworkIds = f.framework === undefined ? undefined : new Set(state.frameworks.filter((x) => x.id === f.framework || x.name === f.framework).map((x) => x.id));
  const picked = state.tasks
    .filter((t) => (f.states === undefined || f.states.includes(t.state))
      && (agentIds === undefined || agentIds.has(t.agentId) || t.agentId === f.agent)
      && (frameworkIds === undefined || frameworkIds.has(t.frameworkId) || t.frameworkId === f.framework || t.frameworkName === f.framework))
    .sort((a, b) => b.launchedAtMs - a.launchedAtMs || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  if (f.limit <= 0 || picked.length <= f.limit) return { tasks: picked, more: 0 };
  return { tasks: picked.slice(0, f.limit), more: picked.length - f.limit };
}

/** A time as people read it in a description: local ISO-like, to the second. */
function when(ms: number): string {
  return new Date(ms).toISOString().replace('T', ' ').replace(/\.\d+Z$/, 'Z');
}

const MIB = 1024 * 1024;

/** What `GET /api/v1/tasks/:id/usage` answers (the agent's sample of one task), as far as a description reads it. */
export interface TaskUsageRead {
  cpusUsed?: number | null;
  cpusLimit?: number;
  memoryBytes?: number;
  memoryLimitBytes?: number;
  gpus?: { index: number; utilizationPercent: number | null; memoryUsedMiB?: number | null }[];
  timestampMs?: number;
  /** The task's sandbox directory on its agent, where the agent reports it. */
  sandbox?: string;
}

export interface TaskDescription {
  task: TaskView;
  agent?: { id: string; hostname: string; url: string };
  framework?: { id: string; name: string };
  /** The usage read, or why there is none. */
  usage: { usage: TaskUsageRead } | { none: string };
}

/** `cairn task ID`: the task in `key: value` lines, then its state history as a table. */
export function describeTask(d: TaskDescription): string {
  const t = d.task;
  const lines: [string, string][] = [
    ['ID', t.id],
    ['Name', t.name],
    ['State', t.state.replace(/^TASK_/, '')],
    ['Exit code', exitCell(t)],
    ['Reason', t.reason ?? '-'],
    ['Message', t.message || '-'],
    ['Framework', d.framework ? `${d.framework.name} (${d.framework.id})` : t.frameworkName ? `${t.frameworkName} (${t.frameworkId})` : t.frameworkId],
    ['Agent', d.agent ? `${d.agent.hostname} (${d.agent.id}, ${d.agent.url})` : `${t.agentId} (gone)`],
    ['Resources', t.resources],
    ...(t.healthCheck !== undefined || t.healthy !== undefined ? [['Health', healthCell(t)] as [string, string]] : []),
    ['Launched', when(t.launchedAtMs)],
    ['Updated', when(t.updatedAtMs)],
  ];
  if ('usage' in d.usage) {
    const u = d.usage.usage;
    if (u.sandbox) lines.push(['Sandbox', u.sandbox]);
    const cpus = u.cpusUsed === null || u.cpusUsed === undefined ? '-' : u.cpusUsed.toFixed(2);
    lines.push(['CPUs used', `${cpus} of ${u.cpusLimit ?? '-'}`]);
    lines.push(['Memory used', `${u.memoryBytes === undefined ? '-' : Math.round(u.memoryBytes / MIB)} of ${u.memoryLimitBytes === undefined ? '-' : Math.round(u.memoryLimitBytes / MIB)} MiB`]);
    if (u.gpus && u.gpus.length > 0) lines.push(['GPUs', u.gpus.map((g) => `${g.index}:${g.utilizationPercent === null ? '?' : `${g.utilizationPercent}%`}`).join(' ')]);
  } else {
    lines.push(['Usage', d.usage.none]);
  }
  const width = Math.max(...lines.map(([k]) => k.length)) + 1;
  const head = lines.map(([k, v]) => `${`${k}:`.padEnd(width)}  ${v}`).join('\n');
  const history = t.history ?? [];
  const rows = history.map((c) => [when(c.atMs), c.state.replace(/^TASK_/, ''), c.reason || '-', c.source.replace(/^SOURCE_/, '').toLowerCase(), c.message || '-']);
  const events = history.length === 0 ? 'History: none recorded\n' : `History:\n${indent(formatTable(['TIME', 'STATE', 'REASON', 'SOURCE', 'MESSAGE'], rows))}`;
  return `${head}\n${events}`;
}

/** `healthy (HTTP check)`, `unhealthy (TCP check)`, or `unknown` before the first result. */
export function healthCell(t: Pick<TaskView, 'healthy' | 'healthCheck'>): string {
  const word = t.healthy === undefined ? 'unknown' : t.healthy ? 'healthy' : 'unhealthy';
  return t.healthCheck ? `${word} (${t.healthCheck} check)` : word;
}

function indent(text: string): string {
  return text.split('\n').map((l) => (l === '' ? l : `  ${l}`)).join('\n');
}

/** A usage figure the agent reported for an agent as a whole, for wide lists. */
export function usageCell(u: UsageReport | null): string {
  if (!u) return '-';
  return `cpus:${u.cpusUsed.toFixed(2)};mem:${Math.round(u.memoryBytes / MIB)}`;
}
