// A job as the engine keeps it in the replicated store: the spec as submitted and everything
// the engine has decided about it (phase, conditions, replicas and their tasks, restarts).
// One record per job, written whole, so a new leader reads back exactly what the last one
// decided. Pure: no I/O, time passed in.

import { FINISHED_PHASES, isFinished, type IgnoredField, type JobCondition, type JobPhase, type JobSpec, type JobView, type ReplicaStatus } from '../../../shared/jobs/model.ts';

export interface JobRecord {
  spec: JobSpec;
  ignored: IgnoredField[];
  /** Tells this job's tasks from those of an earlier job of the same name. */
  uid: string;
  phase: JobPhase;
  conditions: JobCondition[];
  replicas: ReplicaStatus[];
  /** Restarts of a replica or of the whole job; the job fails once they exceed backoffLimit. */
  restarts: number;
  createdAtMs: number;
  /** When its gang was first placed (shown; activeDeadlineSeconds counts from here, by activeMs). */
  startedAtMs?: number;
  /**
   * How long it had been active (since startedAtMs) when last written, on the monotonic clock
   * of the leader that wrote it: a new leader counts activeDeadlineSeconds on from this, not
   * from startedAtMs on its own clock, so neither a wall-clock step nor masters whose clocks
   * disagree fails a job early. Written at least every ACTIVE_CHECKPOINT_MAX_MS while a deadline
   * runs (engine.ts): after a leader change a deadline fires at most that much late.
   */
  activeMs?: number;
  /** When the gang of the current attempt was placed; absent while it waits for one. */
  placedAtMs?: number;
  /** When the gang of the current attempt was all running (how long it ran decides whether the back-off starts over). */
  runningSinceMs?: number;
  /** Restarts of the whole gang in a row without a stable run: the next one waits longer. */
  backoffRestarts?: number;
  /** A restarted gang is placed again no earlier than this (its back-off). */
  restartAtMs?: number;
  finishedAtMs?: number;
  message: string;
  /** Tasks launched so far: the last part of each task id, so no id is used twice. */
  launches: number;
  /** Gang placements that did not fit in a row, and when the next may start. */
  gangAttempts: number;
  nextTryAtMs: number;
  /** Task ids killed on purpose (restart, cleanup): their end is no failure. */
  killing: string[];
  /**
   * The principal that submitted it; absent on jobs submitted before owners were kept, or on
   * a master without authentication: then no one owns it, and only the ACLs let anyone act on it.
   */
  owner?: string;
}

export { FINISHED_PHASES, isFinished };

/** A new job: Created, then at once Queued for its gang. */
export function newJobRecord(spec: JobSpec, ignored: IgnoredField[], uid: string, nowMs: number, owner = ''): JobRecord {
  const replicas: ReplicaStatus[] = [];
  for (const g of spec.groups) {
    for (let index = 0; index < g.replicas; index++) replicas.push({ group: g.name, index, state: 'Pending', ports: [], restarts: 0 });
  }
  const r: JobRecord = {
    spec,
    ignored,
    uid,
    phase: 'Created',
    conditions: [],
    replicas,
    restarts: 0,
    createdAtMs: nowMs,
    message: '',
    launches: 0,
    gangAttempts: 0,
    nextTryAtMs: nowMs,
    killing: [],
  };
  if (owner !== '') r.owner = owner;
  setPhase(r, 'Created', 'JobCreated', `job ${spec.name} (${spec.kind}, ${replicas.length} replicas) was submitted`, nowMs);
  setPhase(r, 'Queued', 'WaitingForGang', `waiting to place its gang of ${spec.minAvailable} replicas`, nowMs);
  return r;
}

/** Moves the job to `phase`, recording why; the same phase again only updates the message. */
export function setPhase(r: JobRecord, phase: JobPhase, reason: string, message: string, nowMs: number): void {
  r.message = message;
  if (r.phase === phase && r.conditions.length > 0) return;
  r.phase = phase;
  r.conditions.push({ type: phase, reason, message, atMs: nowMs });
}

export function jobView(r: JobRecord): JobView {
  const v: JobView = {
    name: r.spec.name,
    kind: r.spec.kind,
    phase: r.phase,
    conditions: r.conditions,
    replicas: r.replicas,
    restarts: r.restarts,
    ignored: r.ignored,
    spec: r.spec,
    createdAtMs: r.createdAtMs,
    message: r.message,
  };
  if (r.startedAtMs !== undefined) v.startedAtMs = r.startedAtMs;
  if (r.finishedAtMs !== undefined) v.finishedAtMs = r.finishedAtMs;
  if (r.restartAtMs !== undefined && r.placedAtMs === undefined && !isFinished(r)) v.restartAtMs = r.restartAtMs;
  if (r.owner !== undefined) v.owner = r.owner;
  return v;
}

/** A replica's name, which is also its task's name and so its DNS label. */
export function replicaTaskName(job: string, group: string, index: number): string {
  return `${job}-${group}-${index}`;
}
