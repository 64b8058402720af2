// The JSON the master's REST API returns (`GET /api/v1/state`, `/api/v1/tasks/:id`, logs).
// The command line and tests read these shapes; the master builds them from its registry.

import type { TaskState, UsageReport } from './agent-messages.ts';

export interface AgentView {
  id: string;
  hostname: string;
  ip: string;
  /** The agent's own HTTP endpoint, e.g. http://10.0.0.5:5051 */
  url: string;
  reachable: boolean;
  /** Whether the agent's WebSocket to this master is up right now. */
  connected: boolean;
  registeredAtMs: number;
  /** Resources in Mesos text form: what the agent has, what tasks use, what is offered now. */
  resources: string;
  used: string;
  offered: string;
  attributes: Record<string, string>;
  /** How the agent isolates tasks, in its words ('' when it did not say). */
  isolation: string;
  /** Set while an operator drains the agent: no offers; tasks killed at the deadline, if any. */
  draining: { sinceMs: number; deadlineAtMs: number | null } | null;
  /** What its tasks use, summed, from its latest sample; null on followers or before one arrived. */
  usage: UsageReport | null;
}

export interface FrameworkView {
  id: string;
  name: string;
  role: string;
  user: string;
  connected: boolean;
  failoverTimeoutS: number;
  registeredAtMs: number;
}

export interface TaskView {
  id: string;
  name: string;
  frameworkId: string;
  /**
   * Its framework's name, kept after the framework is gone (a finished `cairn run`), so a
   * list can show `cairn-run:train` rather than an id nobody knows; absent where unknown.
   */
  frameworkName?: string;
  agentId: string;
  state: TaskState;
  resources: string;
  message: string;
  /** Exit code of a process that exited (negative: killed by that signal). */
  exitCode?: number;
  /** The reason of the latest status change (Mesos' REASON_...); absent when none was given. */
  reason?: string;
  /** The kind of the task's health check; absent when it has none. */
  healthCheck?: 'HTTP' | 'TCP' | 'COMMAND';
  /** The latest result of its health check; absent before the first (or without a check). */
  healthy?: boolean;
  launchedAtMs: number;
  updatedAtMs: number;
  /** Its status changes, oldest first (the latest 20); only from `GET /api/v1/tasks/:id`. */
  history?: TaskStatusChangeView[];
}

/** One change of a task's state: what, why, who said so, when. */
export interface TaskStatusChangeView {
  state: TaskState;
  /** Mesos' reason (REASON_...), '' when none was given. */
  reason: string;
  message: string;
  source: 'SOURCE_MASTER' | 'SOURCE_AGENT';
  atMs: number;
  /** The health check result the change carried, if any. */
  healthy?: boolean;
}

export interface OfferView {
  id: string;
  frameworkId: string;
  agentId: string;
  resources: string;
}

export interface MasterRoleView {
  id: number;
  role: 'leader' | 'follower' | 'preCandidate' | 'candidate';
  term: number;
  commitIndex: number;
  appliedIndex: number;
}

export interface StateView {
  version: string;
  /** The leader as this master knows it (undefined while none is elected). */
  leader: { id: number; url: string } | undefined;
  /** The master that answered: its Raft role, term and how far it has applied the log. */
  master: MasterRoleView;
  /** The master group's membership (empty for a single master). */
  members: { id: number; url: string; voter: boolean }[];
  startedAtMs: number;
  agents: AgentView[];
  frameworks: FrameworkView[];
  tasks: TaskView[];
  offers: OfferView[];
}

/** One read of a task's log file (`GET /api/v1/tasks/:id/logs`). */
export interface LogChunk {
  /** UTF-8 text read from `offset`. */
  data: string;
  offset: number;
  /** Where the next read should start. */
  nextOffset: number;
  /** True once the task is terminal and everything has been read. */
  eof: boolean;
  /**
   * With `times=true`: when the log reached these sizes, as the agent noted them
   * (agent/log-times.ts), from the first past `offset` to the first at or past `nextOffset`.
   */
  times?: LogTimeNote[];
}

/** The log had reached `sizeBytes` when the agent looked at `atMs`. */
export type LogTimeNote = [sizeBytes: number, atMs: number];
