// The JSON shapes of Mesos' v1 scheduler HTTP API (scheduler.proto / mesos.proto), as
// Cairn speaks them on `POST /api/v1/scheduler`. Field names are Mesos' own snake_case so
// an existing Mesos v1 framework client works against Cairn unchanged.

import type { MesosResource } from './resources.ts';
import type { TaskState } from './agent-messages.ts';

export interface Id { value: string }

export interface Label { key: string; value?: string }

export interface FrameworkInfo {
  user?: string;
  name?: string;
  id?: Id;
  failover_timeout?: number;
  checkpoint?: boolean;
  role?: string;
  roles?: string[];
  hostname?: string;
  principal?: string;
  capabilities?: { type: string }[];
  labels?: { labels: Label[] };
}

export interface Filters { refuse_seconds?: number }

export interface CommandInfoJson {
  value?: string;
  shell?: boolean;
  arguments?: string[];
  environment?: { variables: { name: string; value?: string; type?: string }[] };
  uris?: unknown[];
}

/** Mesos' ContainerInfo as Cairn takes it (master/scheduler-calls.ts checks it): Docker only. */
export interface ContainerInfoJson {
  type: 'DOCKER';
  docker: {
    image: string;
    network?: 'HOST' | 'BRIDGE';
    force_pull_image?: boolean;
    pull_policy?: 'always' | 'if-not-present' | 'never';
    port_mappings?: { host_port?: number; container_port: number; protocol?: string }[];
    /** Cairn's: names of credentials stored in the cluster to pull the image with (the framework's principal must own them). */
    pull_secrets?: string[];
  };
  volumes?: { host_path: string; container_path: string; mode?: 'RO' | 'RW' }[];
}

export interface TaskInfoJson {
  name: string;
  task_id: Id;
  agent_id: Id;
  resources: MesosResource[];
  command?: CommandInfoJson;
  container?: ContainerInfoJson;
  labels?: { labels: Label[] };
  kill_policy?: { grace_period?: { nanoseconds: number } };
  health_check?: HealthCheckJson;
}

/**
 * Mesos v1's HealthCheck: run by the agent next to the task while it runs. HTTP is healthy
 * on 200-399 (or one of `statuses`), TCP on a connection, COMMAND on exit 0 (sh -c in the
 * task's sandbox, environment and user; `docker exec` for a container). Durations in
 * seconds; the defaults are Mesos' own.
 */
export interface HealthCheckJson {
  type: 'HTTP' | 'TCP' | 'COMMAND';
  http?: { port: number; path?: string; scheme?: 'http' | 'https'; statuses?: number[] };
  tcp?: { port: number };
  command?: { value: string };
  /** Before the first check (default 15). */
  delay_seconds?: number;
  /** Between the end of one check and the start of the next (default 10). */
  interval_seconds?: number;
  /** A check that takes longer has failed (default 20). */
  timeout_seconds?: number;
  /** Failures in a row that get the task killed (default 3; 0: never killed). */
  consecutive_failures?: number;
  /** From the task's start: failures before the first success do not count (default 10). */
  grace_period_seconds?: number;
}

export interface OfferJson {
  id: Id;
  framework_id: Id;
  agent_id: Id;
  hostname: string;
  url: { scheme: string; address: { hostname: string; ip: string; port: number }; path?: string };
  resources: MesosResource[];
  attributes: { name: string; type: 'TEXT'; text: { value: string } }[];
}

export interface TaskStatusJson {
  task_id: Id;
  state: TaskState;
  agent_id?: Id;
  message?: string;
  source?: 'SOURCE_MASTER' | 'SOURCE_AGENT' | 'SOURCE_EXECUTOR';
  reason?: string;
  /** base64 of the update's 16-byte uuid; absent for updates that need no acknowledgement. */
  uuid?: string;
  timestamp?: number;
  /** The task's health check result, on updates of tasks that have one once it has a result. */
  healthy?: boolean;
}

export type SchedulerEvent =
  | { type: 'SUBSCRIBED'; subscribed: { framework_id: Id; heartbeat_interval_seconds: number } }
  | { type: 'OFFERS'; offers: { offers: OfferJson[] } }
  | { type: 'RESCIND'; rescind: { offer_id: Id } }
  | { type: 'UPDATE'; update: { status: TaskStatusJson } }
  | { type: 'FAILURE'; failure: { agent_id?: Id; status?: number } }
  | { type: 'ERROR'; error: { message: string } }
  | { type: 'HEARTBEAT' };

export interface OfferOperationJson {
  type: 'LAUNCH' | string;
  launch?: { task_infos: TaskInfoJson[] };
}

export type SchedulerCall =
  | { type: 'SUBSCRIBE'; framework_id?: Id; subscribe: { framework_info: FrameworkInfo } }
  | { type: 'ACCEPT'; framework_id: Id; accept: { offer_ids: Id[]; operations: OfferOperationJson[]; filters?: Filters } }
  | { type: 'DECLINE'; framework_id: Id; decline: { offer_ids: Id[]; filters?: Filters } }
  | { type: 'REVIVE'; framework_id: Id; revive?: { roles?: string[] } }
  | { type: 'SUPPRESS'; framework_id: Id; suppress?: { roles?: string[] } }
  | { type: 'KILL'; framework_id: Id; kill: { task_id: Id; agent_id?: Id } }
  | { type: 'ACKNOWLEDGE'; framework_id: Id; acknowledge: { agent_id: Id; task_id: Id; uuid: string } }
  | { type: 'RECONCILE'; framework_id: Id; reconcile: { tasks: { task_id: Id; agent_id?: Id }[] } }
  | { type: 'TEARDOWN'; framework_id: Id }
  /** Room for a gang the framework cannot place (one request per task); `for` names it. */
  | { type: 'REQUEST'; framework_id: Id; request: { requests: { resources: MesosResource[] }[]; for?: string } };

export const STREAM_ID_HEADER = 'mesos-stream-id';
