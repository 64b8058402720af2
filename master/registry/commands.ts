// The commands of the registry state machine. Every change to what the cluster must
// remember goes through one of these, so that a log of them (SQLite today, a Raft log
// later) replays to the same state on any master. Commands carry everything they need,
// time and uuids included: applying one never reads a clock or a random source.

import type { ContainerSpec, HealthCheckSpec, TaskState } from '../../shared/agent-messages.ts';
import type { DockerConfigJson } from '../../shared/docker-auth.ts';
import type { PreemptionRecord } from '../../shared/sharing/views.ts';
import type { JsonValue, StorePut } from '../../shared/framework-host/store.ts';

export interface AgentRecord {
  id: string;
  hostname: string;
  ip: string;
  httpPort: number;
  /** The agent's HTTP endpoint serves HTTPS (absent: plain HTTP, and from older agents). */
  https?: boolean;
  /** Mesos text form. */
  resources: string;
  attributes: Record<string, string>;
  reachable: boolean;
  registeredAtMs: number;
  /** How the agent isolates tasks, in its own words (absent from older agents). */
  isolation?: string;
  /**
   * How many times the agent has registered (absent in records written before it was kept).
   * A write-off decided before the latest registration is stale.
   */
  registrations?: number;
  /** The agent credential it registered with; absent where the master authenticates no one. */
  principal?: string;
  /** Set while an operator drains the agent: it gets no offers, its tasks end by the deadline. */
  drain?: AgentDrain;
}

export interface AgentDrain {
  sinceMs: number;
  /** When tasks still running are killed (master clock); null: they run until they finish. */
  deadlineAtMs: number | null;
}

export interface FrameworkRecord {
  id: string;
  name: string;
  user: string;
  role: string;
  principal: string;
  failoverTimeoutS: number;
  /** FrameworkInfo capabilities (GPU_RESOURCES opts in to GPU agents). Absent in old logs. */
  capabilities?: string[];
  registeredAtMs: number;
  /** Set once torn down or failed over past its timeout; the id can never subscribe again. */
  removedAtMs?: number;
  /** Its priority class (the FrameworkInfo label cairn.priority-class); absent: the default class. */
  priorityClass?: string;
}

/** A role's quota as the log keeps it: amounts per scalar (mem and disk in MB). */
export interface QuotaRecord {
  role: string;
  guarantee?: Partial<Record<'cpus' | 'mem' | 'disk' | 'gpus', number>>;
  /** Scalars not named are unlimited; absent or null: no limit. */
  limit?: Partial<Record<'cpus' | 'mem' | 'disk' | 'gpus', number>> | null;
}

// One preemption's record is what `GET /api/v1/preemptions` answers, so it is defined in shared/.
export type { PreemptionRecord };

/** Preemptions the registry keeps, the oldest dropped first. */
export const MAX_PREEMPTIONS = 500;

export interface CommandSpec {
  shell: boolean;
  value: string;
  arguments: string[];
  environment: { name: string; value: string }[];
}

/** The latest status update a framework has not acknowledged yet. */
export interface PendingUpdate {
  uuid: string; // base64
  state: TaskState;
  message: string;
  source: 'SOURCE_MASTER' | 'SOURCE_AGENT';
  reason: string;
  atMs: number;
  /** The task's health check result, when the update carries one. */
  healthy?: boolean;
}

/**
 * One change of a task's state, as `cairn task ID` shows it. Part of the replicated record,
 * so every master can describe a task; capped at MAX_TASK_HISTORY, the oldest dropped.
 */
export interface TaskStatusChange {
  state: TaskState;
  /** Mesos' reason (REASON_...), '' when none was given. */
  reason: string;
  message: string;
  source: 'SOURCE_MASTER' | 'SOURCE_AGENT';
  atMs: number;
  /** The health check result the update carried, if any. */
  healthy?: boolean;
}

/** Status changes a task record keeps: enough for a task's life, bounded for 10,000 kept tasks. */
export const MAX_TASK_HISTORY = 20;

export interface TaskRecord {
  id: string;
  name: string;
  frameworkId: string;
  agentId: string;
  resources: string;
  command: CommandSpec;
  labels: { name: string; value: string }[];
  killGraceMs: number;
  /** Absent for a plain process. */
  container?: ContainerSpec;
  /** Absent when the task has no health check. */
  healthCheck?: HealthCheckSpec;
  /** The latest health check result reported; absent before the first (or without a check). */
  healthy?: boolean;
  state: TaskState;
  message: string;
  exitCode?: number;
  launchedAtMs: number;
  updatedAtMs: number;
  unacked?: PendingUpdate;
  /**
   * Its status changes, oldest first, at most MAX_TASK_HISTORY (absent in records written
   * before it was kept). Replaced, never changed in place: snapshots share it.
   */
  history?: TaskStatusChange[];
}

/**
 * A credential stored in the cluster (a secret): a Docker config's registry credentials, under
 * a name apps and jobs pull with. Only its owner (and principals the ACLs let `use_secrets` on
 * that owner) may list, use or delete it; no read path ever shows `dockerConfig`.
 */
export interface SecretRecord {
  name: string;
  /** The principal that stored it ('' on a master that authenticates no one). */
  owner: string;
  dockerConfig: DockerConfigJson;
  createdAtMs: number;
}

/**
 * A value a built-in framework keeps in the registry (plain JSON, as every log stores it), and
 * one key of its state set or removed: the frameworks' store contract defines both.
 */
export type { JsonValue, StorePut } from '../../shared/framework-host/store.ts';

export type RegistryCommand =
  | {
      type: 'agent_registered';
      agent: Omit<AgentRecord, 'reachable' | 'drain' | 'registrations'>;
      /** For a re-registration: what the agent runs now (state per task id). */
      runningTasks?: { taskId: string; state: TaskState }[];
      /** uuids for the updates this command may generate (tasks marked lost/reachable). */
      uuids: string[];
      atMs: number;
    }
  /**
   * `registrations`: the agent's count when the leader decided; a registration committed in
   * between makes the command stale (ignored). Absent in logs written before the count.
   */
  | { type: 'agent_unreachable'; agentId: string; uuids: string[]; atMs: number; registrations?: number }
  /** Starts (or moves the deadline of) a drain; `drain: null` ends it. */
  | { type: 'agent_drain'; agentId: string; drain: AgentDrain | null }
  | { type: 'agent_removed'; agentId: string; uuids: string[]; atMs: number; registrations?: number }
  | { type: 'framework_subscribed'; framework: Omit<FrameworkRecord, 'removedAtMs'>; atMs: number }
  | { type: 'framework_removed'; frameworkId: string; atMs: number }
  | { type: 'task_launched'; task: Omit<TaskRecord, 'state' | 'message' | 'updatedAtMs' | 'unacked' | 'exitCode' | 'history' | 'healthy'>; atMs: number }
  | {
      type: 'status_update';
      taskId: string;
      state: TaskState;
      message: string;
      reason: string;
      exitCode?: number;
      source: 'SOURCE_MASTER' | 'SOURCE_AGENT';
      uuid: string;
      atMs: number;
      /** The task's health check result; absent when the update carries none (the last one stands). */
      healthy?: boolean;
    }
  | { type: 'status_acknowledged'; taskId: string; uuid: string }
  /** An operator's weight for a role (Mesos' /weights): its fair share scales with it. */
  | { type: 'role_weight_set'; role: string; weight: number }
  /** A role's quota set (replacing any), or removed with `quota: null`; validated by the leader before. */
  | { type: 'quota_set'; role: string; quota: QuotaRecord | null }
  /** A preemption decided and re-checked by the leader: its victims are killed once this is durable. */
  | { type: 'preemption'; record: PreemptionRecord }
  /**
   * A built-in framework's own state (apps and deployments, jobs, experiments), keyed under
   * its name: every put of one command applies together, so a change that spans keys (an app
   * and its deployment) is never seen half made, and a new leader resumes from it.
   */
  | { type: 'builtin_state'; owner: string; puts: StorePut[] }
  /** Stores (or replaces, when its owner is the same) a secret; one of another owner stays. */
  | { type: 'secret_set'; secret: SecretRecord }
  | { type: 'secret_removed'; name: string };
