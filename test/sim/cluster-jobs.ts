// The jobs framework in the whole-cluster simulation: the production JobEngine behind a
// simulated scheduler-API client, with its records kept in a store that survives the
// framework's crashes (as the replicated store survives a leader's). It subscribes (again
// with its id after a lost stream or a leader change), reconciles every task, gathers offers
// for gangs, launches, kills and declines through datagrams that may be lost, duplicated or
// late, and asks about launches it never heard of. A crash throws away everything but the
// store: the next instance resumes from the records, as a new leader's does. Its engine runs
// on a steady clock anchored, at each start, on its host's wall clock, which clock-step faults
// move by hours: no job may fail DeadlineExceeded before it has run its activeDeadlineSeconds
// of simulated (monotonic) time.

import { isTerminal } from '../../shared/agent-messages.ts';
import type { SchedulerEvent } from '../../shared/mesos-v1.ts';
import type { SeededRandom } from '../../shared/random.ts';
import { Resources } from '../../shared/resources.ts';
import { offerRole } from '../../shared/sdk/offer-fit.ts';
import type { FrameworkSpec, TaskSpec } from '../../master/api/scheduler-calls.ts';
import type { SchedulerCall } from '../../master/leader/messages.ts';
import { DEFAULT_ENGINE_OPTIONS, JobEngine, type Effects } from '../../master/frameworks/jobs/engine.ts';
import type { JobSpec } from '../../shared/jobs/model.ts';
import { isFinished, type JobRecord } from '../../master/frameworks/jobs/record.ts';
import { steadyClock, type Clock } from '../../shared/steady-clock.ts';
import { SimWallClock } from './cluster-clock.ts';
import type { FrameworkWorld } from './cluster-framework.ts';
import { NOT_LEADER_CLOSE, sendSchedulerCall, type StreamConn } from './cluster-master.ts';

const TICK_MS = 200;
const RECONCILE_STARTING_MS = 5_000;

/** The replica a jobs task runs: `<job>.<group>-<index>.<uid>.<n>` → `<job>/<group>-<index>`. */
export function replicaOfTask(taskId: string): string | undefined {
  const parts = taskId.split('.');
  return parts.length === 4 ? `${parts[0]}/${parts[1]}` : undefined;
}

export class SimJobs {
  readonly name = 'jobs';
  frameworkId: string | undefined;
  stream: StreamConn | undefined;
  subscribed = false;
  /** What a replicated store holds: survives crashes. */
  readonly store = new Map<string, JobRecord>();
  private engine!: JobEngine;
  private hint: number | undefined;
  private nextMaster = 0;
  private generation = 0;
  private pendingKills: { taskId: string }[] = [];
  readonly stats = { subscriptions: 0, launches: 0, crashes: 0, gangs: 0 };
  /** The wall clock of the master it runs on; its engine's clock is anchored on it at each start. */
  readonly wall: SimWallClock;
  private now: Clock;
  /** When (simulated time) each job (name/uid) was first started, from its records. */
  private readonly startedAt = new Map<string, number>();
  readonly violations: string[] = [];

  constructor(
    private readonly world: FrameworkWorld,
    private readonly rng: SeededRandom,
    private readonly totals: () => Resources[],
    jobs: { atMs: number; spec: JobSpec }[],
  ) {
    this.wall = new SimWallClock(world.clock);
    this.now = () => world.clock.nowMs;
    this.boot();
    for (const j of jobs) {
      this.world.clock.after(j.atMs, () => {
        this.engine.setClusterTotals(this.totals());
        this.engine.submit(j.spec, [], `u${this.rng.range(0, 1e6)}`, this.now());
        this.flush();
      });
    }
  }

  /** Every job submitted so far has ended. */
  get done(): boolean {
    return [...this.store.values()].every(isFinished);
  }

  records(): JobRecord[] {
    return [...this.store.values()];
  }

  /** The framework's process dies: soft state (offers held, gathering) is lost; the store is not. */
  crash(): void {
    this.stats.crashes++;
    const s = this.stream;
    this.stream = undefined;
    this.subscribed = false;
    s?.close('peer', 1006, 'jobs framework crashed', false);
    this.boot();
  }

  private boot(): void {
    const gen = ++this.generation;
    // As BuiltinEnv.now: the leader's steady clock, read from its wall clock once, at start.
    const clock = this.world.clock;
    this.now = steadyClock(this.wall.nowMs(), () => clock.nowMs);
    // Restarts back off as in production, scaled down so a run's restarts fit its liveness phase.
    this.engine = new JobEngine({ ...DEFAULT_ENGINE_OPTIONS, domain: 'cairn', restartBackoff: { initialMs: 1_000, factor: 2, maxMs: 8_000, resetAfterMs: 60_000 } });
    this.engine.load([...this.store.values()].map((r) => structuredClone(r)));
    this.pendingKills = [];
    this.flush();
    let ticks = 0;
    const tick = () => {
      if (gen !== this.generation) return;
      this.engine.setClusterTotals(this.totals());
      this.engine.tick(this.now());
      if (++ticks % (RECONCILE_STARTING_MS / TICK_MS) === 0) this.reconcileStarting();
      this.flush();
      this.world.clock.after(TICK_MS, tick);
    };
    this.world.clock.after(TICK_MS, tick);
    this.world.clock.after(this.rng.range(10, 300), () => {
      if (gen === this.generation) this.subscribe();
    });
  }

  private subscribe(): void {
    if (this.stream) return;
    const masters = this.world.masters();
    const target = (this.hint !== undefined ? masters.find((m) => m.id === this.hint) : undefined) ?? masters[this.nextMaster++ % masters.length];
    this.hint = undefined;
    const stream = this.world.net.connect<never, SchedulerEvent>(target.id);
    this.stream = stream;
    this.subscribed = false;
    stream.peer = {
      onMessage: (event) => {
        if (this.stream === stream) this.onEvent(event);
      },
      onClose: (code, reason) => {
        if (this.stream !== stream) return;
        if (code === NOT_LEADER_CLOSE && reason !== '0') this.hint = Number(reason);
        this.stream = undefined;
        this.subscribed = false;
        const gen = this.generation;
        this.world.clock.after(this.rng.range(100, 1_000), () => {
          if (gen === this.generation) this.subscribe();
        });
      },
    };
    const spec: FrameworkSpec = { name: this.name, user: 'sim', role: '*', principal: this.name, failoverTimeoutS: 7 * 24 * 3600, capabilities: [], ...(this.frameworkId ? { id: this.frameworkId } : {}) };
    this.stats.subscriptions++;
    this.world.clock.after(this.world.net.delay(), () => {
      if (this.stream === stream) target.acceptSubscription(stream, spec);
    });
  }

  private call(call: SchedulerCall): void {
    sendSchedulerCall(this.world, this.stream, this.subscribed, call);
  }

  private onEvent(event: SchedulerEvent): void {
    const now = this.now();
    switch (event.type) {
      case 'SUBSCRIBED':
        this.frameworkId = event.subscribed.framework_id.value;
        this.subscribed = true;
        this.call({ type: 'RECONCILE', frameworkId: this.frameworkId, taskIds: [] });
        this.call({ type: 'REVIVE', frameworkId: this.frameworkId });
        this.flush();
        return;
      case 'OFFERS':
        this.engine.setClusterTotals(this.totals());
        this.engine.offers(event.offers.offers.map((o) => ({ id: o.id.value, agentId: o.agent_id.value, hostname: o.hostname, ip: o.url.address.ip, resources: Resources.fromMesos(o.resources), role: offerRole(o.resources) })), now);
        this.flush();
        return;
      case 'RESCIND':
        this.engine.rescind(event.rescind.offer_id.value);
        return;
      case 'UPDATE': {
        const s = event.update.status;
        if (s.uuid && this.frameworkId) this.call({ type: 'ACKNOWLEDGE', frameworkId: this.frameworkId, taskId: s.task_id.value, agentId: '', uuid: s.uuid });
        if (s.state === 'TASK_LOST' && s.reason === 'REASON_RECONCILIATION') this.engine.launchFailed([s.task_id.value], s.message ?? '', now);
        else this.engine.taskUpdate({ taskId: s.task_id.value, state: s.state, ...(s.agent_id ? { agentId: s.agent_id.value } : {}), ...(isTerminal(s.state) ? { exitCode: s.state === 'TASK_FINISHED' ? 0 : 1 } : {}), message: s.message ?? '' }, now);
        this.flush();
        return;
      }
      default:
        return;
    }
  }

  /** A job failed DeadlineExceeded has run its activeDeadlineSeconds, on the simulated clock. */
  private checkDeadline(r: JobRecord): void {
    const key = `${r.spec.name}/${r.uid}`;
    if (r.startedAtMs !== undefined && !this.startedAt.has(key)) this.startedAt.set(key, this.world.clock.nowMs);
    const deadlineS = r.spec.activeDeadlineSeconds;
    if (deadlineS === undefined || r.phase !== 'Failed' || r.conditions.at(-1)?.reason !== 'DeadlineExceeded') return;
    const ranMs = this.world.clock.nowMs - (this.startedAt.get(key) ?? this.world.clock.nowMs);
    if (ranMs < deadlineS * 1000) this.violations.push(`job ${r.spec.name} failed DeadlineExceeded after ${ranMs} ms, before its activeDeadlineSeconds (${deadlineS} s)`);
  }

  private reconcileStarting(): void {
    const stale = this.engine.startingSince(this.now(), RECONCILE_STARTING_MS);
    if (stale.length > 0 && this.frameworkId) this.call({ type: 'RECONCILE', frameworkId: this.frameworkId, taskIds: stale.map((t) => t.taskId) });
  }

  /** Carries out the engine's effects: the records first (durable at once here), then the calls. */
  private flush(): void {
    const e: Effects = this.engine.takeEffects();
    for (const [name, r] of e.writes) {
      if (r === null) this.store.delete(name);
      else {
        this.store.set(name, structuredClone(r));
        this.checkDeadline(r);
      }
    }
    this.pendingKills.push(...e.kills);
    if (!this.subscribed || !this.frameworkId) {
      const ids = e.launches.flatMap((l) => l.tasks.map((t) => t.taskId));
      if (ids.length > 0) this.world.clock.after(1, () => {
        this.engine.launchFailed(ids, 'not subscribed', this.now());
        this.flush();
      });
      return;
    }
    const frameworkId = this.frameworkId;
    for (const k of this.pendingKills.splice(0)) this.call({ type: 'KILL', frameworkId, taskId: k.taskId });
    for (const l of e.launches) {
      this.stats.gangs++;
      const tasks: TaskSpec[] = l.tasks.map((t) => ({
        taskId: t.taskId,
        name: t.name,
        agentId: l.agentId,
        resources: Resources.fromMesos(t.resources),
        command: { shell: true, value: t.template.command, arguments: [], environment: Object.entries(t.env).map(([name, value]) => ({ name, value })) },
        labels: [{ name: 'cairn.job', value: t.job }],
        killGraceMs: 1_000,
      }));
      this.stats.launches += tasks.length;
      this.call({ type: 'ACCEPT', frameworkId, offerIds: l.offerIds, tasks, refuseMs: 500 });
    }
    if (e.declines.length > 0) this.call({ type: 'DECLINE', frameworkId, offerIds: e.declines, refuseMs: this.engine.wantsOffers() ? 500 : 5_000 });
  }
}
