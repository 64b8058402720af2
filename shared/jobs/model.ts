// The job model: one shape for every kind of training or batch job. A job is named groups
// of replicas, each group with a task template, a replica count and a restart policy, plus
// job-level gang size, success and failure policies, limits and cleanup. Every way a job
// comes in (Cairn's own JSON/YAML, a Kubeflow TFJob or PyTorchJob, a Volcano Job, flags)
// is turned into a JobSpec and checked once (spec-validate); the engine reads only JobSpecs.
// Pure types: no I/O, so the engine's core and the simulator share them.

export const JOB_KINDS = ['pslite', 'tensorflow', 'pytorch', 'batch'] as const;
export type JobKind = (typeof JOB_KINDS)[number];

export const RESTART_POLICIES = ['Always', 'OnFailure', 'Never', 'ExitCode'] as const;
/** ExitCode: exit codes >= 128 (killed by a signal) are retried, 1-127 are permanent. */
export type RestartPolicy = (typeof RESTART_POLICIES)[number];

export const POLICY_EVENTS = ['TaskFailed', 'TaskCompleted', 'Unschedulable'] as const;
export type PolicyEvent = (typeof POLICY_EVENTS)[number];
export const POLICY_ACTIONS = ['RestartJob', 'RestartTask', 'AbortJob', 'CompleteJob'] as const;
export type PolicyAction = (typeof POLICY_ACTIONS)[number];

/** Volcano's lifecycle policy: on `event` (in `group`, or any group when absent) do `action`. */
export interface FailurePolicy {
  event: PolicyEvent;
  action: PolicyAction;
  /** Only for this group's replicas; absent: every group. */
  group?: string;
}

export const CLEANUP_POLICIES = ['All', 'Running', 'None'] as const;
/** What is killed when the job ends: every replica, the ones still running, or nothing. */
export type CleanupPolicy = (typeof CLEANUP_POLICIES)[number];

export interface VolumeSpec {
  containerPath: string;
  hostPath: string;
  mode: 'RO' | 'RW';
}

/** What one replica runs: a command (shell when `args` is absent), or a container. */
export interface TaskTemplate {
  /**
   * Run by `sh -c` when `args` is absent; else the program, with `args`. '' only with an
   * image (and `args`, possibly empty): the image's own entrypoint runs, with `args`.
   */
  command: string;
  args?: string[];
  /** A Docker image; absent: a process on the agent. */
  image?: string;
  /** Credentials stored in the cluster to pull the image with (Kubernetes' imagePullSecrets, by name). */
  imagePullSecrets?: string[];
  cpus: number;
  memMb: number;
  diskMb: number;
  gpus: number;
  /** How many ports each replica is given from its offer (the first is its PORT); at least 1. */
  ports: number;
  env: Record<string, string>;
  volumes: VolumeSpec[];
}

export interface ReplicaGroup {
  /** `scheduler`, `server`, `worker`, `ps`, `chief`, `master`, `evaluator`, or any name for batch. */
  name: string;
  replicas: number;
  restartPolicy: RestartPolicy;
  template: TaskTemplate;
}

/** TFJob's successPolicy: '' (chief, or worker 0, decides) or AllWorkers. */
export type SuccessPolicy = 'Default' | 'AllWorkers';

/**
 * How long a replica waits before it starts again (Kubernetes' CrashLoopBackOff): the first
 * restart in a row after `initialSeconds`, each next one `factor` times longer, never longer
 * than `maxSeconds`; a replica that ran `resetAfterSeconds` was stable, and its count starts over.
 */
export interface RestartBackoffSpec {
  initialSeconds: number;
  factor: number;
  maxSeconds: number;
  resetAfterSeconds: number;
}

export interface JobSpec {
  /** Unique among live jobs: lower case letters, digits and '-', a DNS label (at most 40). */
  name: string;
  kind: JobKind;
  groups: ReplicaGroup[];
  /** Gang: how many replicas start together or not at all; default every replica. */
  minAvailable: number;
  successPolicy: SuccessPolicy;
  failurePolicies: FailurePolicy[];
  /** Restarts (of a task or the whole job) allowed before the job fails; Volcano's maxRetry. */
  backoffLimit: number;
  /** The wait before each restart; absent: the master's default (10 s doubling to 300 s, reset after 600 s). */
  restartBackoff?: RestartBackoffSpec;
  /** The job fails once it has run this long; absent: no deadline. */
  activeDeadlineSeconds?: number;
  /** A finished job (and its record) is removed this long after it ended; absent: kept. */
  ttlSecondsAfterFinished?: number;
  cleanupPolicy: CleanupPolicy;
  role: string;
  /** Within its priority class, higher runs first among waiting jobs. */
  priority: number;
  /**
   * The cluster's priority class (`priorityClassName`); absent: the default class. A higher
   * class is offered first and may preempt lower classes' tasks when its gang does not fit.
   */
  priorityClass?: string;
  /**
   * Submitted although a replica is bigger than every agent (`allowUnschedulable=true` on
   * POST /api/v1/jobs): it waits for an agent that can hold it instead of failing as
   * Unschedulable, unless a failure policy says otherwise.
   */
  allowUnschedulable?: boolean;
}

/**
 * The subscription a job's tasks go through: one framework per role and class, since a
 * framework has one role and one class. The default class's is the role alone, as before classes.
 */
export function laneOf(spec: Pick<JobSpec, 'role' | 'priorityClass'>): string {
  return spec.priorityClass === undefined ? spec.role : `${spec.role}@${spec.priorityClass}`;
}

/** The role and class of a subscription key (laneOf's inverse). */
export function parseLane(lane: string): { role: string; priorityClass?: string } {
  const at = lane.lastIndexOf('@');
  return at < 0 ? { role: lane } : { role: lane.slice(0, at), priorityClass: lane.slice(at + 1) };
}

/** What the parsers of other formats could not honour: listed with the job, never dropped silently. */
export interface IgnoredField {
  path: string;
  why: string;
}

export const JOB_PHASES = ['Created', 'Queued', 'Running', 'Restarting', 'Succeeded', 'Failed'] as const;
export type JobPhase = (typeof JOB_PHASES)[number];

export interface JobCondition {
  type: JobPhase;
  reason: string;
  message: string;
  atMs: number;
}

export type ReplicaState = 'Pending' | 'Starting' | 'Running' | 'Succeeded' | 'Failed' | 'Killed';

export interface ReplicaStatus {
  group: string;
  index: number;
  state: ReplicaState;
  /** The task running (or that last ran) this replica. */
  taskId?: string;
  agentId?: string;
  /** The host it runs on and the ports it was given (the first is PORT). */
  host?: string;
  /** The agent's address, for peers that cannot resolve names. */
  ip?: string;
  ports: number[];
  restarts: number;
  /** When its current task reported RUNNING (how long it ran decides whether its back-off starts over). */
  runningSinceMs?: number;
  /** Restarts in a row without a stable run: the next one waits longer. */
  backoffRestarts?: number;
  /** A Pending replica waiting out its back-off is placed again no earlier than this. */
  restartAtMs?: number;
  exitCode?: number;
  message?: string;
}

/** What the REST API shows of a job. */
export interface JobView {
  name: string;
  kind: JobKind;
  phase: JobPhase;
  conditions: JobCondition[];
  replicas: ReplicaStatus[];
  restarts: number;
  ignored: IgnoredField[];
  spec: JobSpec;
  createdAtMs: number;
  startedAtMs?: number;
  finishedAtMs?: number;
  /** A restarted gang waits out its back-off until then. */
  restartAtMs?: number;
  message: string;
  owner?: string;
}

/** A job that has ended: it runs nothing more, and its name may be used again. */
export const FINISHED_PHASES: ReadonlySet<JobPhase> = new Set(['Succeeded', 'Failed']);

export function isFinished(r: { readonly phase: JobPhase }): boolean {
  return FINISHED_PHASES.has(r.phase);
}
