// The agent <-> master messages as typed values, and the task states: pure data, shared by
// the codec (agent-protocol.ts), the registry and the leader's core, none of which may load
// the wire schema from disk.

export const TASK_STATES = [
  'TASK_STAGING', 'TASK_STARTING', 'TASK_RUNNING', 'TASK_FINISHED', 'TASK_FAILED', 'TASK_KILLED',
  'TASK_LOST', 'TASK_ERROR', 'TASK_KILLING', 'TASK_UNREACHABLE', 'TASK_GONE', 'TASK_DROPPED', 'TASK_UNKNOWN',
] as const;
export type TaskState = (typeof TASK_STATES)[number];

const TERMINAL: ReadonlySet<TaskState> = new Set<TaskState>([
  'TASK_FINISHED', 'TASK_FAILED', 'TASK_KILLED', 'TASK_LOST', 'TASK_ERROR', 'TASK_GONE', 'TASK_DROPPED',
]);
export function isTerminal(state: TaskState): boolean {
  return TERMINAL.has(state);
}

export interface EnvVar { name: string; value: string }
export interface CommandInfo { shell: boolean; value: string; arguments: string[]; environment: EnvVar[] }
export interface PortMapping { hostPort: number; containerPort: number; protocol: 'tcp' | 'udp' }
export interface VolumeSpec { hostPath: string; containerPath: string; readOnly: boolean }
export type PullPolicy = 'always' | 'if-not-present' | 'never';
/** One registry's credential for one pull (the Docker Engine API's AuthConfig). */
export interface RegistryAuth { serverAddress: string; username: string; password: string; identityToken: string }
export interface DockerSpec {
  image: string;
  network: 'host' | 'bridge';
  portMappings: PortMapping[];
  pullPolicy: PullPolicy;
  /** Names of credentials stored in the cluster (secrets) to pull the image with; absent or empty: none. */
  pullSecrets?: string[];
  /**
   * The credential the leader picked from `pullSecrets` for the image's registry: on the launch
   * frame only, never in the registry's task record; the agent uses it for the pull and drops it.
   */
  pullAuth?: RegistryAuth | null;
}
export interface ContainerSpec { type: 'docker'; docker: DockerSpec; volumes: VolumeSpec[] }

/**
 * A task's health check as the agent runs it: the master fills every default, so the wire
 * carries whole values. `port` is the one to check on 127.0.0.1; for a BRIDGE container a
 * mapped container port, which the agent turns into its host port.
 */
export interface HealthCheckSpec {
  type: 'http' | 'tcp' | 'command';
  port: number;
  /** HTTP only: the path asked for (starts with /). */
  path: string;
  scheme: 'http' | 'https';
  /** HTTP only: the statuses that count as healthy; empty: 200-399. */
  statuses: number[];
  /** COMMAND only: run by `sh -c`. */
  command: string;
  delayMs: number;
  intervalMs: number;
  timeoutMs: number;
  gracePeriodMs: number;
  /** Failures in a row that get the task killed; 0: never killed. */
  consecutiveFailures: number;
}

export interface TaskInfo {
  taskId: string;
  frameworkId: string;
  name: string;
  resources: string;
  command: CommandInfo;
  killGraceMs: number;
  labels: EnvVar[];
  /** Absent (or null off the wire): a plain process. */
  container?: ContainerSpec | null;
  /** The task's DNS name (task.framework.domain) as the masters serve it; '' or absent when none. */
  dnsName?: string;
  /**
   * The OS user to run as (the framework's FrameworkInfo.user); '' or absent: the agent's
   * default task user (or the agent's own user where it is not root).
   */
  user?: string;
  /**
   * Whose the task is (its framework's principal, or the owner of a built-in's app, job or
   * experiment); '' or absent: no one's. A root agent gives each principal a uid of its own.
   */
  principal?: string;
  /** Absent (or null off the wire): the task has no health check. */
  healthCheck?: HealthCheckSpec | null;
}
export interface StatusUpdate {
  uuid: Uint8Array;
  taskId: string;
  frameworkId: string;
  state: TaskState;
  message: string;
  hasExitCode: boolean;
  exitCode: number;
  timestampMs: number;
  reason: string;
  /** Set when the update carries the task's health check result (`healthy`). */
  hasHealthy?: boolean;
  healthy?: boolean;
}
export interface RunningTask { taskId: string; frameworkId: string; state: TaskState; resources: string }
export interface Register {
  agentId: string;
  hostname: string;
  ip: string;
  httpPort: number;
  resources: string;
  attributes: { name: string; value: string }[];
  tasks: RunningTask[];
  version: string;
  /** How tasks are isolated here, in words; '' from older agents. */
  isolation?: string;
  /** The HTTP endpoint serves HTTPS; false from older agents. */
  https?: boolean;
}
export interface GpuUse { index: number; utilizationPercent: number; memoryUsedMib: number; memoryTotalMib: number }
export interface UsageReport {
  timestampMs: number;
  tasks: number;
  cpusUsed: number;
  cpusLimit: number;
  memoryBytes: number;
  memoryLimitBytes: number;
  gpus: GpuUse[];
  unhealthyGpus: number[];
}
export interface DrainOrder { draining: boolean; hasDeadline: boolean; deadlineAtMs: number }
/** The order that ends a drain, or says there is none. */
export const NOT_DRAINING: DrainOrder = Object.freeze({ draining: false, hasDeadline: false, deadlineAtMs: 0 });

export type AgentToMaster =
  | { register: Register }
  | { statusUpdate: StatusUpdate }
  | { pong: { sentMs: number } }
  | { usage: UsageReport };

export type MasterToAgent =
  | { registered: { agentId: string; lostTaskIds: string[]; pingIntervalMs: number; drain?: DrainOrder | null } }
  | { ping: { sentMs: number } }
  | { launch: { tasks: TaskInfo[] } }
  /** `reason`/`message`: '' for a plain kill; else what the task's end reports (a preemption). */
  | { kill: { taskId: string; frameworkId: string; graceMs: number; reason?: string; message?: string } }
  | { ack: { uuid: Uint8Array; taskId: string } }
  | { error: { code: string; message: string } }
  | { drain: DrainOrder };
