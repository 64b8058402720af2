// The job engine's core: every job's lifecycle, its replicas and their tasks, gang placement
// on offers, restarts, deadlines and TTLs. Deterministic and free of I/O: the shell (and the
// simulator) feed it submissions, task updates, offers and ticks with the time, then take
// its effects — records to write (first: nothing is done that is not durable), tasks to
// launch and kill, offers to decline.
//
// Gangs without deadlock: one job at a time gathers offers. It holds every offer it is sent
// (accepting nothing) until its whole gang fits, then accepts them all at once; if the
// gathering window ends first it declines everything and waits with exponential backoff
// while the next job gathers. So two jobs that each need more than half the cluster never
// both hold half of it. A gang larger than the agents' totals is Unschedulable.

import { isTerminal, type TaskState } from '../../../shared/agent-messages.ts';
import type { MesosResource, Resources } from '../../../shared/resources.ts';
import { DEFAULT_RESTART_BACKOFF, nextRestart, type RestartBackoffPolicy } from '../../../shared/sdk/restart-backoff.ts';
import { neverFits, placeGang, placeMembers, scalarNeed, type AgentLaunch, type GangMember } from '../../../shared/placement/gang.ts';
import type { HeldOffer } from '../../../shared/sdk/held-offer.ts';
import { replicaEnvironment, type JobPlacement } from './kind-env.ts';
import { laneOf, type IgnoredField, type JobSpec, type ReplicaStatus, type TaskTemplate } from '../../../shared/jobs/model.ts';
import { alwaysStopped, decideOnEnd, jobSucceeded, type EndDecision } from './policies.ts';
import { isFinished, newJobRecord, replicaTaskName, setPhase, type JobRecord } from './record.ts';

/** One task of a waiting gang as the explanation reads it (shared/sdk/why-queued.ts WaitingMember, restated: a core imports no SDK module). */
export interface WaitingTask {
  /** How it is named: `worker-0`, `a trial`. */
  label: string;
  cpus: number;
  mem: number;
  disk?: number;
  gpus?: number;
  ports?: number;
}

export interface EngineOptions {
  /** The DNS zone replicas are named in. */
  domain: string;
  /** How long a job may hold offers while its gang does not fit. */
  gatherMs: number;
  /** First wait after a gang did not fit; doubled each time, up to backoffMaxMs. */
  backoffBaseMs: number;
  backoffMaxMs: number;
  /** The rank of a job's priority class (higher first); absent: every job ranks 0. */
  classRank?: (priorityClass: string | undefined) => number;
  /** The wait before a replica or a gang starts again, for jobs whose spec names none; absent: DEFAULT_RESTART_BACKOFF. */
  restartBackoff?: RestartBackoffPolicy;
  /**
   * Why a gang does not fit in what the agents have free now, naming who holds it
   * (shared/sdk/why-queued.ts); undefined when it would fit. Absent: the message says only
   * that the offers gathered were too small.
   */
  explainWait?: (members: WaitingTask[], priorityClass: string | undefined) => string | undefined;
}

/** A job's restart back-off: its spec's, else the engine's default. */
export function restartBackoffOf(spec: Pick<JobSpec, 'restartBackoff'>, fallback: RestartBackoffPolicy = DEFAULT_RESTART_BACKOFF): RestartBackoffPolicy {
  const b = spec.restartBackoff;
  if (!b) return fallback;
  return { initialMs: b.initialSeconds * 1000, factor: b.factor, maxMs: b.maxSeconds * 1000, resetAfterMs: b.resetAfterSeconds * 1000 };
}

/** A wait as people say it: `800 ms`, `10 s`, `2.5 s`. */
function waitText(ms: number): string {
  return ms < 1000 ? `${ms} ms` : `${Math.round(ms / 100) / 10} s`;
}

/** The reason a task's end carries when the master preempted it. */
export const PREEMPTED_REASON = 'REASON_CONTAINER_PREEMPTED';

export const DEFAULT_ENGINE_OPTIONS: Omit<EngineOptions, 'domain'> = {
  // Long enough for every agent's offer of an allocation round (1 s) to arrive.
  gatherMs: 2_000,
  backoffBaseMs: 1_000,
  backoffMaxMs: 8_000,
};

export interface TaskLaunch {
  taskId: string;
  /** `<job>-<group>-<index>`: its DNS label. */
  name: string;
  job: string;
  group: string;
  index: number;
  resources: MesosResource[];
  ports: number[];
  env: Record<string, string>;
  template: TaskTemplate;
}

export interface LaunchEffect {
  /** The job's role: the subscription whose offers these are. */
  role: string;
  agentId: string;
  offerIds: string[];
  tasks: TaskLaunch[];
}

export interface Effects {
  /** Records to make durable before anything else; null removes the job. */
  writes: Map<string, JobRecord | null>;
  launches: LaunchEffect[];
  /** `role`: the subscription the task was launched through. */
  kills: { taskId: string; agentId?: string; role: string }[];
  declines: string[];
  /**
   * Gangs that did not fit, for the master to make room for by preemption (Mesos' REQUEST):
   * each member's scalars, through the job's subscription.
   */
  requests: { role: string; job: string; members: Resources[] }[];
}

export interface TaskEvent {
  taskId: string;
  agentId?: string;
  state: TaskState;
  /** A signal's end comes as 128 + its number. */
  exitCode?: number;
  message: string;
  /** The role of the subscription it came through (to kill a task no replica owns); default `*`. */
  role?: string;
  /** Mesos' reason for the state, when it gave one (REASON_CONTAINER_PREEMPTED). */
  reason?: string;
}

const LIVE = new Set<ReplicaStatus['state']>(['Starting', 'Running']);

function isLive(r: ReplicaStatus): boolean {
  return LIVE.has(r.state);
}

/** A replica to place now: pending, and not waiting out its restart back-off. */
/** A running deadline's active time is written at most this far apart (ACTIVE_CHECKPOINT_MAX_MS), a tenth of it when shorter, at least a second. */
export const ACTIVE_CHECKPOINT_MAX_MS = 60_000;
export function activeCheckpointMs(deadlineS: number): number {
  return Math.min(ACTIVE_CHECKPOINT_MAX_MS, Math.max(1_000, deadlineS * 100));
}

function readyToPlace(r: ReplicaStatus, nowMs: number): boolean {
  return r.state === 'Pending' && (r.restartAtMs ?? 0) <= nowMs;
}

export class JobEngine {
  private readonly jobs = new Map<string, JobRecord>();
  /** Tasks that run (or may) for a replica: task id → job and replica position. */
  private readonly taskIndex = new Map<string, { job: string; key: number }>();
  private readonly held = new Map<string, HeldOffer>();
  private gathering: { job: string; sinceMs: number } | undefined;
  /** Set by load(): the back-off instants of the records are still on the clock of the leader that wrote them (see rebase). */
  private unbased = false;
  /** Per started job (name/uid): the time on this engine's clock its active time counts from (soft: see activeMsOf). */
  private readonly activeFrom = new Map<string, number>();
  /** When each task still Starting was launched (soft: a resumed engine counts from 0). */
  private readonly launchedAt = new Map<string, number>();
  /** The time of the input being handled, for what placement records. */
  private nowMs = 0;
  private totals: Resources[] = [];
  private effects: Effects = emptyEffects();

  constructor(private readonly opts: EngineOptions) {}

  /** Resumes from the records a previous leader wrote; kills it had decided are sent again. */
  load(records: readonly JobRecord[]): void {
    for (const rec of records) {
      const r = structuredClone(rec) as JobRecord;
      this.jobs.set(r.spec.name, r);
      r.replicas.forEach((rep, key) => {
        if (rep.taskId !== undefined && isLive(rep)) this.taskIndex.set(rep.taskId, { job: r.spec.name, key });
      });
      for (const taskId of r.killing) this.kill(taskId, this.agentOf(r, taskId), laneOf(r.spec));
    }
    this.unbased = records.length > 0;
  }

  /**
   * A resumed engine's first look at the waits it inherited (restart back-offs, gang retries):
   * their instants are on the clock of the leader that wrote them, which may read hours apart
   * from this one's (a wall-clock step before it began to lead, masters whose clocks
   * disagree). None is left further ahead than the longest wait it can stand for: a wait cut
   * short is a retry a little early; one left alone could hold a job for hours.
   */
  private rebase(nowMs: number): void {
    if (!this.unbased) return;
    this.unbased = false;
    for (const r of this.jobs.values()) {
      const longest = nowMs + this.backoffOf(r).maxMs;
      if (r.restartAtMs !== undefined) r.restartAtMs = Math.min(r.restartAtMs, longest);
      for (const rep of r.replicas) if (rep.restartAtMs !== undefined) rep.restartAtMs = Math.min(rep.restartAtMs, longest);
      r.nextTryAtMs = Math.min(r.nextTryAtMs, nowMs + this.opts.backoffMaxMs);
    }
  }

  get(name: string): JobRecord | undefined {
    return this.jobs.get(name);
  }

  names(): string[] {
    return [...this.jobs.keys()];
  }

  /** Every task the engine thinks may run, to reconcile after (re)subscribing. */
  liveTasks(): { taskId: string; agentId?: string; role: string }[] {
    const out: { taskId: string; agentId?: string; role: string }[] = [];
    for (const [taskId, { job, key }] of this.taskIndex) {
      const r = this.jobs.get(job);
      const agentId = r?.replicas[key]?.agentId;
      const role = r ? laneOf(r.spec) : '*';
      out.push(agentId ? { taskId, agentId, role } : { taskId, role });
    }
    return out;
  }

  /**
   * Tasks launched at least `ageMs` ago that never reported: the launch may have been lost
   * (a leader died with it). Reconciling them explicitly makes the master say what it knows,
   * or that it knows nothing (then launchFailed).
   */
  startingSince(nowMs: number, ageMs: number): { taskId: string; agentId?: string; role: string }[] {
    const out: { taskId: string; agentId?: string; role: string }[] = [];
    for (const [taskId, { job, key }] of this.taskIndex) {
      const r = this.jobs.get(job);
      const rep = r?.replicas[key];
      if (!r || rep?.state !== 'Starting' || (this.launchedAt.get(taskId) ?? 0) > nowMs - ageMs) continue;
      out.push(rep.agentId ? { taskId, agentId: rep.agentId, role: laneOf(r.spec) } : { taskId, role: laneOf(r.spec) });
    }
    return out;
  }

  /** The roles of the jobs that are not finished or still run something: one subscription each. */
  roles(): string[] {
    const out = new Set<string>();
    for (const r of this.jobs.values()) if (!isFinished(r) || r.replicas.some(isLive)) out.add(laneOf(r.spec));
    return [...out].sort();
  }

  /**
   * Whether any job (of `role`, when given) needs offers now (queued, or a replica to place);
   * one waiting out its restart back-off does not until its time (as of the latest input).
   */
  wantsOffers(role?: string): boolean {
    const nowMs = this.nowMs;
    for (const r of this.jobs.values()) {
      if (role !== undefined && laneOf(r.spec) !== role) continue;
      if (r.phase === 'Queued' && r.placedAtMs === undefined && (r.restartAtMs ?? 0) <= nowMs) return true;
      if (r.placedAtMs !== undefined && !isFinished(r) && r.phase !== 'Restarting' && r.replicas.some((x) => readyToPlace(x, nowMs))) return true;
    }
    return false;
  }

  /** The agents' total resources, for telling a gang that can never fit. */
  setClusterTotals(totals: Resources[]): void {
    this.totals = totals;
  }

  /** A new job; 'exists' while a job of that name has not finished. A finished one is replaced. `owner`: '' for none. */
  submit(spec: JobSpec, ignored: IgnoredField[], uid: string, nowMs: number, owner = ''): JobRecord | 'exists' {
    const old = this.jobs.get(spec.name);
    if (old && !isFinished(old)) return 'exists';
    if (old) this.dropJob(old);
    const r = newJobRecord(spec, ignored, uid, nowMs, owner);
    this.jobs.set(spec.name, r);
    this.dirty(r);
    this.schedule(nowMs);
    return r;
  }

  /** Kills a job's tasks and forgets it; false when there is no such job. */
  remove(name: string, nowMs: number): boolean {
    const r = this.jobs.get(name);
    if (!r) return false;
    this.dropJob(r);
    this.schedule(nowMs);
    return true;
  }

  offers(offers: readonly HeldOffer[], nowMs: number): void {
    for (const o of offers) this.held.set(o.id, o);
    this.schedule(nowMs);
  }

  rescind(offerId: string): void {
    this.held.delete(offerId);
  }

  /** Deadlines, TTLs, the gathering window and backoffs. */
  tick(nowMs: number): void {
    for (const r of [...this.jobs.values()]) {
      const deadline = r.spec.activeDeadlineSeconds;
      if (!isFinished(r) && deadline !== undefined && r.startedAtMs !== undefined) {
        const activeMs = this.activeMsOf(r, nowMs);
        if (activeMs >= deadline * 1000) {
          this.finish(r, 'Failed', 'DeadlineExceeded', `ran longer than its activeDeadlineSeconds (${deadline} s)`, nowMs);
        } else if (activeMs - (r.activeMs ?? 0) >= activeCheckpointMs(deadline)) {
          // Durable now and then, so that a new leader goes on from about here.
          r.activeMs = activeMs;
          this.dirty(r);
        }
      }
      const ttl = r.spec.ttlSecondsAfterFinished;
      if (isFinished(r) && ttl !== undefined && r.finishedAtMs !== undefined && nowMs >= r.finishedAtMs + ttl * 1000) this.dropJob(r);
    }
    this.schedule(nowMs);
  }

  taskUpdate(ev: TaskEvent, nowMs: number): void {
    const at = this.taskIndex.get(ev.taskId);
    const r = at ? this.jobs.get(at.job) : undefined;
    const rep = at && r ? r.replicas[at.key] : undefined;
    if (!at || !r || !rep || rep.taskId !== ev.taskId) {
      // Not a task any replica runs now (an earlier attempt, a deleted job): it must not run.
      if (!isTerminal(ev.state) && ev.state !== 'TASK_UNREACHABLE') this.kill(ev.taskId, ev.agentId, ev.role ?? '*');
      if (at && isTerminal(ev.state)) this.taskIndex.delete(ev.taskId);
      return;
    }
    if (!isTerminal(ev.state)) {
      this.launchedAt.delete(ev.taskId);
      const next = ev.state === 'TASK_RUNNING' ? 'Running' : ev.state === 'TASK_UNREACHABLE' ? rep.state : 'Starting';
      const unreachable = 'its agent is unreachable';
      // Back from an unreachable agent: that is no longer news.
      const message = ev.state === 'TASK_UNREACHABLE' ? `${unreachable}: ${ev.message}` : rep.message?.startsWith(unreachable) ? '' : rep.message;
      if (next !== rep.state || message !== rep.message) {
        if (next === 'Running' && rep.state !== 'Running') rep.runningSinceMs = nowMs;
        rep.state = next;
        if (message !== undefined) rep.message = message;
        this.dirty(r);
      }
      if (r.phase === 'Queued' && r.placedAtMs !== undefined) this.checkGangRunning(r, nowMs);
      return;
    }
    this.taskIndex.delete(ev.taskId);
    this.launchedAt.delete(ev.taskId);
    const killedOnPurpose = r.killing.includes(ev.taskId);
    if (killedOnPurpose) r.killing = r.killing.filter((t) => t !== ev.taskId);
    rep.message = ev.message;
    if (ev.exitCode !== undefined) rep.exitCode = ev.exitCode;
    else delete rep.exitCode;
    this.dirty(r);
    if (ev.reason === PREEMPTED_REASON && !killedOnPurpose && !isFinished(r) && r.phase !== 'Restarting') {
      this.preempted(r, rep, ev.message, nowMs);
      this.schedule(nowMs);
      return;
    }
    if (killedOnPurpose || isFinished(r) || r.phase === 'Restarting') {
      rep.state = ev.state === 'TASK_FINISHED' ? 'Succeeded' : ev.state === 'TASK_KILLED' || killedOnPurpose ? 'Killed' : 'Failed';
      if (r.phase === 'Restarting') this.requeueIfStopped(r, nowMs);
      this.schedule(nowMs);
      return;
    }
    const succeeded = ev.state === 'TASK_FINISHED';
    rep.state = succeeded ? 'Succeeded' : 'Failed';
    const decision = decideOnEnd(r.spec, rep.group, rep.index, succeeded ? { outcome: 'succeeded' } : { outcome: 'failed', ...(ev.exitCode !== undefined ? { exitCode: ev.exitCode } : {}) });
    this.apply(r, rep, decision, nowMs);
    this.schedule(nowMs);
  }

  /**
   * An ACCEPT the master refused (an offer rescinded meanwhile): those tasks never started.
   * Their replicas wait for offers again without counting a restart; a gang not yet running
   * is stopped and placed again whole.
   */
  launchFailed(taskIds: readonly string[], message: string, nowMs: number): void {
    for (const taskId of taskIds) {
      const at = this.taskIndex.get(taskId);
      const r = at ? this.jobs.get(at.job) : undefined;
      const rep = at && r ? r.replicas[at.key] : undefined;
      this.taskIndex.delete(taskId);
      if (!r || !rep || rep.taskId !== taskId || isFinished(r)) continue;
      this.launchedAt.delete(taskId);
      r.killing = r.killing.filter((t) => t !== taskId);
      rep.state = 'Pending';
      rep.message = `its launch failed: ${message}`;
      this.dirty(r);
      if (r.phase === 'Queued' && r.placedAtMs !== undefined) this.restartJob(r, 'LaunchFailed', `a launch of its gang failed (${message}); placing the gang again`, nowMs);
      else if (r.phase === 'Restarting') this.requeueIfStopped(r, nowMs);
    }
    this.schedule(nowMs);
  }

  /** What the shell must do now, in order: write, then kill and launch, then decline. */
  takeEffects(): Effects {
    const e = this.effects;
    this.effects = emptyEffects();
    return e;
  }

  // ---- decisions --------------------------------------------------------------------

  /**
   * A replica the master preempted for work of a higher class: no fault of the job's, so no
   * restart is counted against its backoffLimit. A gang that must run whole starts again
   * whole (from its checkpoints); a replica that may run alone waits to be placed again.
   */
  private preempted(r: JobRecord, rep: ReplicaStatus, message: string, nowMs: number): void {
    const why = `${rep.group} ${rep.index} was preempted (${message}); waiting to be placed again`;
    if (r.spec.minAvailable > 1 || r.phase === 'Queued') {
      rep.state = 'Killed';
      this.restartJob(r, 'Preempted', why, nowMs);
      return;
    }
    rep.state = 'Pending';
    rep.message = why;
    r.message = why;
  }

  private apply(r: JobRecord, rep: ReplicaStatus, d: EndDecision, nowMs: number): void {
    switch (d.action) {
      case 'none': {
        const why = jobSucceeded(r.spec, r.replicas);
        if (why) this.finish(r, 'Succeeded', 'JobSucceeded', why, nowMs);
        else if (!r.replicas.some((x) => isLive(x) || x.state === 'Pending')) {
          // Nothing runs and nothing will: the kind's success rule cannot be met any more.
          this.finish(r, 'Failed', 'NoReplicaLeft', 'every replica has ended without meeting the success policy', nowMs);
        }
        return;
      }
      case 'RestartTask': {
        if (!this.countRestart(r, d.message, nowMs)) return;
        // Not at once: after its back-off, written as a time so a new leader waits the same.
        const ranMs = rep.runningSinceMs !== undefined ? nowMs - rep.runningSinceMs : 0;
        const next = nextRestart(this.backoffOf(r), rep.backoffRestarts ?? 0, ranMs, nowMs);
        rep.state = 'Pending';
        rep.restarts++;
        rep.backoffRestarts = next.inRow;
        rep.restartAtMs = next.restartAtMs;
        delete rep.runningSinceMs;
        rep.message = `${d.message}; back-off ${waitText(next.delayMs)}`;
        r.message = rep.message;
        return;
      }
      case 'RestartJob': {
        if (!this.countRestart(r, d.message, nowMs)) return;
        const ranMs = r.runningSinceMs !== undefined ? nowMs - r.runningSinceMs : 0;
        const next = nextRestart(this.backoffOf(r), r.backoffRestarts ?? 0, ranMs, nowMs);
        r.backoffRestarts = next.inRow;
        r.restartAtMs = next.restartAtMs;
        this.restartJob(r, d.reason, `${d.message}; back-off ${waitText(next.delayMs)}`, nowMs);
        return;
      }
      case 'AbortJob':
        this.finish(r, 'Failed', d.reason, d.message, nowMs);
        return;
      case 'CompleteJob':
        this.finish(r, 'Succeeded', d.reason, d.message, nowMs);
        return;
    }
  }

  private backoffOf(r: JobRecord): RestartBackoffPolicy {
    return restartBackoffOf(r.spec, this.opts.restartBackoff);
  }

  /** Counts a restart; false (and the job failed) once backoffLimit is exceeded. */
  private countRestart(r: JobRecord, why: string, nowMs: number): boolean {
    // A restart refused is not one made: `restarts` counts only those that happened.
    if (r.restarts >= r.spec.backoffLimit) {
      this.finish(r, 'Failed', 'BackoffLimitExceeded', `${why}; but it has already been restarted ${r.restarts} times (backoffLimit ${r.spec.backoffLimit})`, nowMs);
      return false;
    }
    r.restarts++;
    return true;
  }

  private restartJob(r: JobRecord, reason: string, message: string, nowMs: number): void {
    setPhase(r, 'Restarting', reason, message, nowMs);
    this.releaseGathering(r.spec.name);
    for (const rep of r.replicas) if (isLive(rep) && rep.taskId !== undefined) this.killReplica(r, rep);
    this.requeueIfStopped(r, nowMs);
  }

  /** A restarting job whose replicas have all stopped goes back in the queue for its gang. */
  private requeueIfStopped(r: JobRecord, nowMs: number): void {
    if (r.replicas.some(isLive)) return;
    for (const rep of r.replicas) {
      rep.state = 'Pending';
      rep.restarts++;
      delete rep.runningSinceMs;
      delete rep.restartAtMs;
    }
    r.gangAttempts = 0;
    r.nextTryAtMs = nowMs;
    delete r.placedAtMs;
    delete r.runningSinceMs;
    const waitMs = (r.restartAtMs ?? 0) - nowMs;
    const when = waitMs > 0 ? ` after its back-off (${waitText(waitMs)})` : '';
    setPhase(r, 'Queued', 'Restarted', `every replica stopped; waiting to place the gang again${when} (restart ${r.restarts})`, nowMs);
    this.dirty(r);
  }

  private finish(r: JobRecord, phase: 'Succeeded' | 'Failed', reason: string, message: string, nowMs: number): void {
    setPhase(r, phase, reason, message, nowMs);
    r.finishedAtMs = nowMs;
    this.activeFrom.delete(`${r.spec.name}/${r.uid}`);
    this.releaseGathering(r.spec.name);
    for (const rep of r.replicas) {
      if (rep.state === 'Pending') {
        rep.state = 'Killed';
        rep.message = 'not started: the job ended';
      } else if (isLive(rep) && (r.spec.cleanupPolicy !== 'None' || alwaysStopped(r.spec, rep.group))) {
        this.killReplica(r, rep);
      }
    }
    this.dirty(r);
    // What it held is free again: jobs waiting in backoff may try at once.
    for (const other of this.jobs.values()) if (other.phase === 'Queued') other.nextTryAtMs = Math.min(other.nextTryAtMs, nowMs);
  }

  private killReplica(r: JobRecord, rep: ReplicaStatus): void {
    if (rep.taskId === undefined) return;
    if (!r.killing.includes(rep.taskId)) r.killing.push(rep.taskId);
    this.kill(rep.taskId, rep.agentId, laneOf(r.spec));
  }

  /**
   * How long a started job has been active, on this engine's clock: from when this engine
   * started it, or — a job resumed from a record — from the activeMs its record holds as this
   * engine first looks (a record of a version without activeMs: from startedAtMs).
   */
  private activeMsOf(r: JobRecord, nowMs: number): number {
    const key = `${r.spec.name}/${r.uid}`;
    let from = this.activeFrom.get(key);
    if (from === undefined) {
      from = nowMs - (r.activeMs ?? Math.max(0, nowMs - (r.startedAtMs ?? nowMs)));
      this.activeFrom.set(key, from);
    }
    return nowMs - from;
  }

  private dropJob(r: JobRecord): void {
    this.activeFrom.delete(`${r.spec.name}/${r.uid}`);
    this.releaseGathering(r.spec.name);
    for (const rep of r.replicas) {
      if (rep.taskId !== undefined && isLive(rep)) {
        this.kill(rep.taskId, rep.agentId, laneOf(r.spec));
        this.taskIndex.delete(rep.taskId);
      }
    }
    for (const t of r.killing) this.taskIndex.delete(t);
    this.jobs.delete(r.spec.name);
    this.effects.writes.set(r.spec.name, null);
  }

  private checkGangRunning(r: JobRecord, nowMs: number): void {
    const running = r.replicas.filter((x) => x.state === 'Running').length;
    if (running >= r.spec.minAvailable) {
      r.runningSinceMs ??= nowMs;
      setPhase(r, 'Running', 'GangRunning', `${running} of ${r.replicas.length} replicas running`, nowMs);
      this.dirty(r);
    }
  }

  // ---- placement --------------------------------------------------------------------

  private schedule(nowMs: number): void {
    this.rebase(nowMs);
    this.nowMs = nowMs;
    this.placePending(nowMs);
    for (let guard = 0; guard < this.jobs.size + 1; guard++) {
      if (this.gathering && (this.jobs.get(this.gathering.job)?.phase !== 'Queued' || this.jobs.get(this.gathering.job)?.placedAtMs !== undefined)) this.gathering = undefined;
      const next = this.nextToGather(nowMs);
      const current = this.gathering ? this.jobs.get(this.gathering.job) : undefined;
      // A job of higher priority takes over the offers held; the one it displaces stays queued.
      if (next && (!current || this.outranks(next, current))) {
        this.gathering = { job: next.spec.name, sinceMs: nowMs };
        this.sayWhyWaiting(next);
      }
      if (!this.gathering) break;
      const r = this.jobs.get(this.gathering.job)!;
      if (this.tryGang(r, nowMs)) {
        this.gathering = undefined;
        continue;
      }
      if (nowMs - this.gathering.sinceMs >= this.opts.gatherMs) {
        r.gangAttempts++;
        // The master may make room (a higher class preempts, a role takes back its guarantee):
        // it is asked, and a job it can make room for tries again soon rather than backing off.
        const members = this.gangMembers(r).map((m) => scalarNeed(m.template));
        this.effects.requests.push({ role: laneOf(r.spec), job: r.spec.name, members });
        const waitMs = this.rank(r) > 0 ? this.opts.backoffBaseMs : Math.min(this.opts.backoffBaseMs * 2 ** (r.gangAttempts - 1), this.opts.backoffMaxMs);
        r.nextTryAtMs = nowMs + waitMs;
        const why = this.whyWaiting(r) ?? `did not fit in the offers gathered for ${this.opts.gatherMs} ms`;
        r.message = `its gang of ${r.spec.minAvailable} replicas ${why}; trying again in ${waitMs} ms (attempt ${r.gangAttempts})`;
        this.dirty(r);
        this.gathering = undefined;
        this.declineHeld();
        continue;
      }
      break;
    }
    // What the gathering job cannot use (nothing, when none gathers) is let go.
    const gatheringJob = this.gathering ? this.jobs.get(this.gathering.job) : undefined;
    const keep = gatheringJob ? laneOf(gatheringJob.spec) : undefined;
    this.declineHeld(keep);
  }

  /** The next queued job to gather for: highest priority, then oldest; Unschedulable ones are settled on the way. */
  private nextToGather(nowMs: number): JobRecord | undefined {
    const queued = [...this.jobs.values()]
      .filter((r) => r.phase === 'Queued' && r.placedAtMs === undefined && r.nextTryAtMs <= nowMs && (r.restartAtMs ?? 0) <= nowMs)
      .sort((a, b) => this.rank(b) - this.rank(a) || b.spec.priority - a.spec.priority || a.createdAtMs - b.createdAtMs || (a.spec.name < b.spec.name ? -1 : 1));
    for (const r of queued) {
      const why = this.totals.length > 0 ? neverFits(this.gangMembers(r), this.totals) : undefined;
      if (why === undefined) return r;
      this.unschedulable(r, why, nowMs);
    }
    return undefined;
  }

  private rank(r: JobRecord): number {
    return this.opts.classRank?.(r.spec.priorityClass) ?? 0;
  }

  /** A higher class, or a higher priority within the class. */
  private outranks(a: JobRecord, b: JobRecord): boolean {
    return this.rank(a) > this.rank(b) || (this.rank(a) === this.rank(b) && a.spec.priority > b.spec.priority);
  }

  private unschedulable(r: JobRecord, why: string, nowMs: number): void {
    const policy = r.spec.failurePolicies.find((p) => p.event === 'Unschedulable');
    // A job submitted knowing it does not fit waits for the cluster to grow.
    const action = policy?.action ?? (r.spec.allowUnschedulable ? 'RestartJob' : 'AbortJob');
    const message = `Unschedulable: ${why}`;
    if (action === 'AbortJob') this.finish(r, 'Failed', 'Unschedulable', message, nowMs);
    else if (action === 'CompleteJob') this.finish(r, 'Succeeded', 'Unschedulable', message, nowMs);
    else {
      // Restart: wait for the cluster to grow, and look again later.
      r.nextTryAtMs = nowMs + this.opts.backoffMaxMs;
      if (r.message !== message) {
        r.message = message;
        this.dirty(r);
      }
    }
  }

  /** What keeps the gang from fitting in what is free now, naming who holds it; undefined when nothing does, or no one can say. */
  private whyWaiting(r: JobRecord): string | undefined {
    if (!this.opts.explainWait) return undefined;
    const members = this.gangMembers(r).map((m) => {
      const rep = r.replicas[m.key]!;
      const t = m.template;
      return { label: `${rep.group}-${rep.index}`, cpus: t.cpus, mem: t.memMb, disk: t.diskMb, gpus: t.gpus, ports: t.ports };
    });
    const why = this.opts.explainWait(members, r.spec.priorityClass);
    return why === undefined ? undefined : `does not fit: ${why}`;
  }

  /**
   * As a job starts gathering, says at once what keeps its gang from fitting (the gathering
   * window would say it only when it ends); a gang that fits in what is free keeps its message.
   */
  private sayWhyWaiting(r: JobRecord): void {
    const why = this.whyWaiting(r);
    if (why === undefined) return;
    const message = `its gang of ${r.spec.minAvailable} replicas ${why}; gathering offers`;
    if (r.message === message) return;
    r.message = message;
    this.dirty(r);
  }

  /** The replicas that must start together: the first minAvailable, in group order. */
  private gangMembers(r: JobRecord): GangMember[] {
    return r.replicas.slice(0, r.spec.minAvailable).map((rep, key) => this.member(r, rep, key));
  }

  private member(r: JobRecord, rep: ReplicaStatus, key: number): GangMember {
    const template = r.spec.groups.find((g) => g.name === rep.group)!.template;
    const m: GangMember = { key, template };
    if (rep.agentId !== undefined && rep.ports.length > 0) m.previous = { agentId: rep.agentId, ports: rep.ports };
    return m;
  }

  private tryGang(r: JobRecord, nowMs: number): boolean {
    const placement = placeGang(this.gangMembers(r), this.offersFor(laneOf(r.spec)));
    if (!placement) return false;
    if (r.startedAtMs === undefined) {
      r.startedAtMs = nowMs;
      r.activeMs = 0;
      this.activeFrom.set(`${r.spec.name}/${r.uid}`, nowMs);
    }
    r.placedAtMs = nowMs;
    delete r.restartAtMs;
    r.gangAttempts = 0;
    r.message = `gang of ${r.spec.minAvailable} replicas placed on ${placement.length} agents; starting`;
    this.launch(r, placement);
    return true;
  }

  /** Replicas of started jobs waiting alone (restarted, or beyond the gang): whatever fits. */
  private placePending(nowMs: number): void {
    for (const r of this.jobs.values()) {
      if (r.placedAtMs === undefined || isFinished(r) || r.phase === 'Restarting' || this.held.size === 0) continue;
      const members = r.replicas.map((rep, key) => (readyToPlace(rep, nowMs) ? this.member(r, rep, key) : undefined)).filter((m): m is GangMember => m !== undefined);
      if (members.length === 0) continue;
      const { launches } = placeMembers(members, this.offersFor(laneOf(r.spec)), true);
      if (launches.length > 0) this.launch(r, launches);
    }
  }

  private launch(r: JobRecord, placement: AgentLaunch[]): void {
    const placed: { key: number; launch: AgentLaunch }[] = [];
    for (const a of placement) {
      for (const offerId of a.offerIds) this.held.delete(offerId);
      for (const m of a.members) {
        const rep = r.replicas[m.key]!;
        r.launches++;
        rep.taskId = `${r.spec.name}.${rep.group}-${rep.index}.${r.uid}.${r.launches}`;
        rep.agentId = m.agentId;
        rep.host = m.hostname;
        rep.ip = m.ip;
        rep.ports = m.ports;
        rep.state = 'Starting';
        delete rep.exitCode;
        delete rep.restartAtMs;
        delete rep.runningSinceMs;
        this.taskIndex.set(rep.taskId, { job: r.spec.name, key: m.key });
        this.launchedAt.set(rep.taskId, this.nowMs);
        placed.push({ key: m.key, launch: a });
      }
    }
    const where = this.placementOf(r);
    for (const a of placement) {
      const tasks = a.members.map((m): TaskLaunch => {
        const rep = r.replicas[m.key]!;
        const template = r.spec.groups.find((g) => g.name === rep.group)!.template;
        const env = { ...replicaEnvironment(r.spec, rep.group, rep.index, where, this.opts.domain), ...template.env };
        return { taskId: rep.taskId!, name: replicaTaskName(r.spec.name, rep.group, rep.index), job: r.spec.name, group: rep.group, index: rep.index, resources: m.resources, ports: m.ports, env, template };
      });
      this.effects.launches.push({ role: laneOf(r.spec), agentId: a.agentId, offerIds: a.offerIds, tasks });
    }
    this.dirty(r);
  }

  /** Where every replica of the job is (or last was), by group and index. */
  private placementOf(r: JobRecord): JobPlacement {
    const out: JobPlacement = {};
    for (const g of r.spec.groups) out[g.name] = [];
    for (const rep of r.replicas) out[rep.group]![rep.index] = { host: rep.host ?? '', ip: rep.ip ?? '', ports: rep.ports };
    return out;
  }

  private releaseGathering(job: string): void {
    if (this.gathering?.job === job) this.gathering = undefined;
  }

  /** Declines every offer held, but those of role `keep`. */
  private declineHeld(keep?: string): void {
    for (const [id, o] of this.held) {
      if ((o.lane ?? o.role) === keep) continue;
      this.effects.declines.push(id);
      this.held.delete(id);
    }
  }

  /** A job draws on the offers of its own role: those its role's subscription is sent. */
  private offersFor(role: string): HeldOffer[] {
    return [...this.held.values()].filter((o) => (o.lane ?? o.role) === role);
  }

  private kill(taskId: string, agentId: string | undefined, role: string): void {
    this.effects.kills.push(agentId ? { taskId, agentId, role } : { taskId, role });
  }

  private agentOf(r: JobRecord, taskId: string): string | undefined {
    return r.replicas.find((x) => x.taskId === taskId)?.agentId;
  }

  private dirty(r: JobRecord): void {
    this.effects.writes.set(r.spec.name, r);
  }
}

function emptyEffects(): Effects {
  return { writes: new Map(), launches: [], kills: [], declines: [], requests: [] };
}
