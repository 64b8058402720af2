// What a framework is given, and what it gives back: the whole boundary between the
// frameworks (master/frameworks/*) and the master that hosts them (master/framework-host/host.ts).
// A framework imports shared/ only. It sees the cluster through a read-only view, keeps what
// it must not lose in its own replicated store, subscribes through a scheduler client like
// any other framework, and checks its callers through the access rules handed to it; what
// one framework needs of another goes through the API the other exports (tuning submits its
// distributed trials through the jobs framework's JobsApi). The host builds all of it from
// the master's context, and composes the frameworks from one list (master/framework-host/all.ts).

import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import type { TaskState } from '../agent-messages.ts';
import type { FrameworkInfo } from '../mesos-v1.ts';
import type { SchedulerClientOptions } from '../sdk/scheduler-client.ts';
import type { PriorityClasses } from '../sharing/priority-classes.ts';
import type { Clock } from '../steady-clock.ts';
import type { JobsApi } from '../jobs/api.ts';
import type { ObjectQuotas } from './quotas.ts';
import type { FrameworkStore } from './store.ts';

/** An agent as a framework reads it. */
export interface ClusterAgent {
  readonly id: string;
  readonly hostname: string;
  readonly ip: string;
  readonly resources: string;
  readonly attributes: Readonly<Record<string, string>>;
  readonly reachable: boolean;
  /** Set while an operator drains the agent. */
  readonly drain?: unknown;
}

/** A task as a framework reads it. */
export interface ClusterTask {
  readonly id: string;
  readonly frameworkId: string;
  readonly agentId: string;
  readonly resources: string;
  readonly labels: readonly { readonly name: string; readonly value: string }[];
  readonly state: TaskState;
  readonly message: string;
  readonly exitCode?: number;
  readonly healthy?: boolean;
  readonly launchedAtMs: number;
  readonly updatedAtMs: number;
  /** Its status changes, oldest first (absent in records written before they were kept). */
  readonly history?: readonly { readonly state: TaskState; readonly atMs: number }[];
}

/**
 * A task that holds resources on an agent, as a queued gang's explanation names it
 * (shared/sdk/why-queued.ts): who it is, and whether a waiting class may preempt it.
 */
export interface ClusterHolder {
  readonly taskId: string;
  /** What it runs for, as people name it: an app's id (`/dev/web`), `job mnist`; else `<framework> task <name>`. */
  readonly name: string;
  /** Its framework's name. */
  readonly framework: string;
  readonly role: string;
  /** The class preemption compares: its framework's, or the higher one its labels name. */
  readonly priorityClass: string;
  /** False when its labels keep it from ever being preempted. */
  readonly preemptible: boolean;
  readonly resources: string;
}

/** The cluster as this master's copy of the registry holds it, read-only. */
export interface ClusterView {
  tasks(): ReadonlyMap<string, ClusterTask>;
  agents(): ReadonlyMap<string, ClusterAgent>;
  /** The tasks still running (or starting) on an agent, with their holders' names; [] for an unknown agent. */
  holders(agentId: string): readonly ClusterHolder[];
}

/** Which master leads, as this one knows it. */
export interface Leadership {
  /** This master leads (its framework instances run here). */
  leads(): boolean;
  /** This master's own base URL. */
  selfUrl(): string;
  /** The leader's base URL when another master leads; undefined when unknown or this one. */
  leaderUrl(): string | undefined;
  /** Every master of the group (this one alone without replication). */
  masterUrls(): string[];
  /** How this master dials the others (their certificates checked against its CA). */
  readonly fetch: typeof fetch;
}

/** Who calls a route: the request's principal (the host authenticates it). */
export interface Caller {
  readonly name: string;
}

export type OwnerAction = 'view_tasks' | 'kill_tasks' | 'teardown_frameworks';

/** Who may do what with a framework's objects (master/framework-host/owner-access.ts). */
export interface ObjectAccess {
  /** The owner a new object records: none on a master that authenticates no one. */
  ownerFor(principal: Caller): string;
  may(principal: Caller, action: OwnerAction, owner: string | undefined): boolean;
  /** Throws CAIRN_FORBIDDEN unless `principal` may do `action` on `what`, owned by `owner`. */
  require(principal: Caller, action: OwnerAction, what: string, owner: string | undefined, field: string): void;
  /** The check a framework of class `priorityClass` meets, made against the submitter. */
  requireClass(principal: Caller, priorityClass: string | undefined, defaultClass: string, field: string): void;
  /** The check a framework subscribing in `role` meets. */
  requireCreate(principal: Caller, role: string, roleField: string): void;
}

/** The stored secrets a caller may name (pull credentials). */
export interface SecretUse {
  /** Returns if `principal` may use the secret; otherwise throws what `refuse(message)` makes. */
  require<E extends Error>(principal: Caller, name: string, refuse: (message: string) => E): void;
}

/** What a framework's instance gets on the leading master. */
export interface FrameworkEnv {
  /** The framework's name; its store's owner. */
  readonly name: string;
  readonly store: FrameworkStore;
  readonly cluster: ClusterView;
  /** The cluster's priority classes. */
  readonly priorityClasses: PriorityClasses;
  /** Options for a SchedulerClient of this master, authenticated as the built-in principal. */
  schedulerOptions(frameworkInfo: FrameworkInfo): SchedulerClientOptions;
  /**
   * A GET of `path` on an agent's own API, authenticated as the masters are; undefined when
   * the cluster has no such agent.
   */
  agentFetch(agentId: string, path: string, init?: { signal?: AbortSignal }): Promise<Response> | undefined;
  /** The DNS zone tasks are named in (`cairn` by default), undefined when the master serves no DNS. */
  readonly domain: string | undefined;
  readonly log: Logger;
  /**
   * This leadership's clock (the leader core's): deadlines, back-offs and time-outs run on
   * it, immune to wall-clock steps; its readings are epoch milliseconds.
   */
  readonly now: Clock;
  /** The API another framework exports, while it runs on this master (FrameworkApis). */
  api<K extends keyof FrameworkApis>(name: K): FrameworkApis[K] | undefined;
}

/**
 * The APIs frameworks export to each other, by framework name: a framework that uses another
 * needs only this, never the other's internals.
 */
export interface FrameworkApis {
  jobs: JobsApi;
}

export interface FrameworkInstance {
  /** Ends its subscription and timers; its tasks keep running for the next leader's instance. */
  stop(): void | Promise<void>;
}

/** What the REST routes of a framework get, on every master. */
export interface FrameworkRoutesEnv<I extends FrameworkInstance> {
  readonly store: FrameworkStore;
  readonly cluster: ClusterView;
  readonly leadership: Leadership;
  readonly priorityClasses: PriorityClasses;
  readonly quotas: ObjectQuotas;
  readonly access: ObjectAccess;
  readonly secrets: SecretUse;
  /** Where every change is written with its principal. */
  readonly audit: Logger;
  /**
   * The running instance on the leader; on a follower, answers the request with a redirect to
   * the leader (307) or 503 while none is known, and returns undefined.
   */
  leading(req: FastifyRequest, reply: FastifyReply): I | undefined;
  /** The running instance if this master leads, without answering anything. */
  instance(): I | undefined;
}

/** A task's owner as its framework's records say: the principal the master's task routes act as. */
export interface TaskOwnership {
  /** Whether a framework of this name is this framework's (its own, or one of its experiments'). */
  runs(frameworkName: string): boolean;
  /** The owner of the object the task belongs to ('' when none, or it is gone). */
  ownerOf(labels: readonly { readonly name: string; readonly value: string }[], get: (key: string) => unknown): string;
  /** The object the task runs for, as people name it (`/dev/web`, `job mnist`); undefined when its labels name none. */
  nameOf?(labels: readonly { readonly name: string; readonly value: string }[]): string | undefined;
}

/**
 * What a framework adds to the master's `GET /metrics`, on every master: families in the
 * Prometheus text format (shared/prometheus.ts writes them), named `cairn_<what>` with base
 * units, each family once. Built once per master, when the host is, so what it follows
 * (its store's changes) it follows from the master's start; `nowMs` is the scrape's time on
 * the clock the framework's records are written with.
 */
export interface FrameworkMetrics {
  families(nowMs: number): string[];
}

/** A framework as its host composes it: its name, its instance on the leader, its routes on every master. */
export interface HostedFramework<I extends FrameworkInstance = FrameworkInstance> {
  readonly name: string;
  start(env: FrameworkEnv): I;
  routes(app: FastifyInstance, env: FrameworkRoutesEnv<I>): void;
  /**
   * The API this framework exports to the others (FrameworkApis[name]): reads from its store,
   * changes through its instance while one runs on this master.
   */
  api?(host: { store: FrameworkStore; instance(): I | undefined }): unknown;
  /**
   * Its figures for `/metrics`: read from its store (every master answers them alike) and,
   * for what only the running instance knows, from the instance while one runs here.
   */
  metrics?(host: { store: FrameworkStore; instance(): I | undefined }): FrameworkMetrics;
  /** Whose its tasks are; absent for a framework whose tasks act as the built-in principal alone. */
  readonly tasks?: TaskOwnership;
}
