// Sharing in the whole-cluster simulation: frameworks of three priority classes, each in a
// role under quotas, running gang jobs on agents with GPUs. A framework here is a scripted
// client of the scheduler API: it queues the gangs that arrive for it (oldest first), holds
// offers until the gang at the head of its queue fits in them whole and launches it in one
// go, declines what it has held too long, sends REQUEST for the head gang once it has waited
// without fitting, and puts a gang back in the queue when one of its tasks is preempted
// (without counting a failure; the rest of the gang is killed). The quotas are set through
// the operator API before any framework subscribes.
//
// SimSharing also keeps what the invariants need: every preemption committed (the registry
// keeps only the latest) and when, which tasks were labelled non-preemptible, and how long
// each head gang has waited. `check` runs the checks of sharing-invariants.ts against the
// leader, with the two that need time: a gang of a higher class waits no longer than
// waitBoundMs while preemption could make room for it, and a committed preemption's victims
// end within victimBoundMs.

import { isTerminal, type TaskState } from '../../shared/agent-messages.ts';
import type { SchedulerEvent } from '../../shared/mesos-v1.ts';
import type { SeededRandom } from '../../shared/random.ts';
import { Resources } from '../../shared/resources.ts';
import type { FrameworkSpec, TaskSpec } from '../../master/scheduler-calls.ts';
import type { LeaderConfig } from '../../master/leader/config.ts';
import type { SchedulerCall } from '../../master/leader/messages.ts';
import type { PreemptionRecord, RegistryCommand } from '../../master/registry/commands.ts';
import { PREEMPTIBLE_LABEL, PriorityClasses } from '../../shared/sharing/priority-classes.ts';
import { planPreemption, type AgentView } from '../../master/sharing/victims.ts';
import type { FrameworkWorld } from './cluster-framework.ts';
import { NOT_LEADER_CLOSE, sendSchedulerCall, type SimMaster, type StreamConn } from './cluster-master.ts';
import { preemptionViolations, quotaViolations, runningByRole, starvation } from './sharing-invariants.ts';
import type { FrameworkPlan, GangSpec, SharingWorkload } from './sharing-workload.ts';

/** Bugs the sharing simulation can plant, to show that its invariants catch them. */
export type SharingBug =
  /** The masters rank research above iteration: their preemptions take from a class the workload ranks higher. */
  | 'classes-misordered'
  /** Frameworks never send REQUEST: a higher class waits for lower-class tasks to end by themselves. */
  | 'no-request'
  /**
   * An operator lowers team/a's limit under what it holds, mid-run. Nothing is preempted for
   * a limit, so the role stays over it until its tasks end: the quota check must say so.
   */
  | 'limit-lowered';

export interface SharingOptions {
  /** The cluster and its work, drawn from the seed's generator. */
  workload: (rng: SeededRandom) => SharingWorkload;
  plant?: SharingBug;
  /**
   * Inject the cluster simulation's faults while gangs arrive. The waiting check then starts
   * once they stop, and a kill without a preemption's reason is no longer a bug (an agent
   * back from a partition has its written-off tasks killed).
   */
  faults?: boolean;
  /** Ends the run once these gangs have run whole (a benchmark's measurement), not once every gang has finished. */
  untilRunning?: string[];
}

/** The classes as the workload means them, highest first: what the invariants judge by. */
export const INTENDED_CLASSES = new PriorityClasses();

const TICK_MS = 250;
/** After the first REQUEST, the head gang asks again this often while it still does not fit. */
const REQUEST_EVERY_MS = 2_000;
/** An offer held this long without the head gang fitting is declined, for others to use. */
const GATHER_MS = 3_000;
const DECLINE_REFUSE_MS = 500;
const IDLE_REFUSE_MS = 5_000;
const RECONCILE_LAUNCHING_MS = 5_000;
const CHECK_EVERY_MS = 100;
const LOWER_LIMIT_AFTER_MS = 20_000;
/** A proposal commits within a few Raft round trips on the simulated network. */
const COMMIT_SLACK_MS = 1_000;

/**
 * How long a head gang of a class above the lowest may go on waiting once preempting
 * lower-class tasks could make room for it, before it counts as starved. Its framework sends
 * REQUEST once it has waited `requestAfterMs` and again every REQUEST_EVERY_MS; the leader
 * makes room for one gang per framework at a time, so an earlier preemption of the same
 * framework may hold the request back for up to its grace and earmark; the request's own
 * preemption then commits, its victims end within the grace, the freed agents are offered at
 * the next allocations, and the framework may have to decline and gather again once. Each
 * term a retry can repeat is counted twice; a wait beyond the sum is one the cluster manager
 * left standing.
 */
export function waitBoundMs(config: LeaderConfig, requestAfterMs: number): number {
  return requestAfterMs + 2 * REQUEST_EVERY_MS + 2 * (config.preemptionGraceMs + config.earmarkMs) + 3 * config.allocationIntervalMs + GATHER_MS + COMMIT_SLACK_MS;
}

/**
 * How long a victim may go on running once its preemption is committed: the kill reaches its
 * agent at once and the task ends within the grace. With faults, its agent may be down or
 * cut off and a new leader may have to find it again: agent restarts and partitions last up
 * to 8 s, an agent is written off after its missed pings, and an election takes seconds.
 */
export function victimBoundMs(config: LeaderConfig, faults: boolean): number {
  const calm = config.preemptionGraceMs + COMMIT_SLACK_MS + config.allocationIntervalMs;
  return faults ? calm + 30_000 : calm;
}

export interface SharingWorld extends FrameworkWorld {
  leaders(): SimMaster[];
}

interface Gang {
  readonly spec: GangSpec;
  readonly member: Resources;
  /** Launch attempts so far; task ids carry it, so that a relaunch never reuses one. */
  attempt: number;
  phase: 'due' | 'waiting' | 'launched' | 'done';
  /** Since when it waits: its arrival, or the end of the attempt that was preempted. */
  waitingSinceMs: number;
  /** The current attempt's tasks and their last known states. */
  readonly states: Map<string, TaskState | 'LAUNCHING'>;
  launchedAtMs: number;
  submittedAtMs?: number;
  firstRequestAtMs?: number;
  /** When every member first ran at once. */
  runningAtMs?: number;
  finishedAtMs?: number;
  preempted: number;
}

interface HeldOffer {
  agentId: string;
  resources: Resources;
  heldSinceMs: number;
}

/** What a framework tells SimSharing of its tasks. */
interface Launches {
  launched(taskId: string, gang: GangSpec): void;
  /** One of its running gang's tasks was killed, and not by a preemption. */
  killedUnasked(what: string): void;
}

/** One framework of the sharing workload: a class, a role, a queue of gangs. */
export class SimGangFramework {
  readonly name: string;
  readonly role: string;
  readonly priorityClass: string;
  frameworkId: string | undefined;
  stream: StreamConn | undefined;
  subscribed = false;
  readonly gangs: Gang[];
  readonly stats = { subscriptions: 0, requests: 0, launches: 0, requeued: 0, failures: 0, declines: 0 };
  private readonly offers = new Map<string, HeldOffer>();
  /** Every task it launched: its gang and the attempt it was part of. */
  private readonly taskOf = new Map<string, { gang: Gang; attempt: number }>();
  private head: Gang | undefined;
  private headSinceMs = 0;
  private lastRequestMs = -Infinity;
  private lastReconcileMs = 0;
  private hint: number | undefined;
  private nextMaster = 0;

  constructor(
    plan: FrameworkPlan,
    private readonly world: SharingWorld,
    private readonly rng: SeededRandom,
    private readonly requestAfterMs: number,
    private readonly plant: SharingBug | undefined,
    private readonly sink: Launches,
  ) {
    this.name = plan.name;
    this.role = plan.role;
    this.priorityClass = plan.priorityClass;
    this.gangs = plan.gangs.map((spec) => ({ spec, member: Resources.parse(spec.member), attempt: 0, phase: 'due', waitingSinceMs: 0, states: new Map(), launchedAtMs: 0, preempted: 0 }));
    for (const g of this.gangs) this.world.clock.at(g.spec.atMs, () => this.arrive(g));
    this.subscribe();
    const tick = () => {
      this.tick();
      this.world.clock.after(TICK_MS, tick);
    };
    this.world.clock.after(TICK_MS, tick);
  }

  get done(): boolean {
    return this.gangs.every((g) => g.phase === 'done');
  }

  /** The gang at the head of the queue and how long it has waited there, if one waits. */
  waiting(nowMs: number): { gang: Gang; waitedMs: number } | undefined {
    const g = this.head;
    return g ? { gang: g, waitedMs: nowMs - Math.max(g.waitingSinceMs, this.headSinceMs) } : undefined;
  }

  // ------------------------------------------------------------------ the subscription

  /** The stream breaks (a proxy, a restart of the framework's process): it resubscribes. */
  disconnect(): void {
    const s = this.stream;
    if (!s) return;
    this.lost(s);
    s.close('peer', 1006, 'framework disconnected', false);
  }

  private lost(stream: StreamConn): void {
    if (this.stream !== stream) return;
    this.stream = undefined;
    this.subscribed = false;
    // The master takes back whatever it had offered over the lost stream.
    this.offers.clear();
    this.world.clock.after(this.rng.range(100, 1_000), () => this.subscribe());
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
      onMessage: (event, sentAtMs) => {
        if (this.stream === stream) this.onEvent(event, sentAtMs);
      },
      onClose: (code, reason) => {
        if (this.stream !== stream) return;
        if (code === NOT_LEADER_CLOSE && reason !== '0') this.hint = Number(reason);
        this.lost(stream);
      },
    };
    const spec: FrameworkSpec = {
      name: this.name,
      user: 'sim',
      role: this.role,
      principal: this.name,
      failoverTimeoutS: 3_600,
      capabilities: ['GPU_RESOURCES'],
      priorityClass: this.priorityClass,
      ...(this.frameworkId ? { id: this.frameworkId } : {}),
    };
    this.stats.subscriptions++;
    this.world.clock.after(this.world.net.delay(), () => {
      if (this.stream === stream) target.acceptSubscription(stream, spec);
    });
  }

  private call(call: SchedulerCall): void {
    sendSchedulerCall(this.world, this.stream, this.subscribed, call);
  }

  private onEvent(event: SchedulerEvent, sentAtMs: number): void {
    switch (event.type) {
      case 'SUBSCRIBED': {
        this.frameworkId = event.subscribed.framework_id.value;
        this.subscribed = true;
        const current = this.gangs.filter((g) => g.phase === 'launched').flatMap((g) => [...g.states.keys()]);
        if (current.length > 0) this.call({ type: 'RECONCILE', frameworkId: this.frameworkId, taskIds: current });
        this.call({ type: 'REVIVE', frameworkId: this.frameworkId });
        return;
      }
      case 'OFFERS':
        for (const o of event.offers.offers) this.offers.set(o.id.value, { agentId: o.agent_id.value, resources: Resources.fromMesos(o.resources), heldSinceMs: this.world.clock.nowMs });
        this.place();
        return;
      case 'RESCIND':
        this.offers.delete(event.rescind.offer_id.value);
        return;
      case 'UPDATE': {
        const s = event.update.status;
        this.world.updateReceived(this, { taskId: s.task_id.value, state: s.state, uuid: s.uuid }, sentAtMs);
        if (s.uuid && this.frameworkId) this.call({ type: 'ACKNOWLEDGE', frameworkId: this.frameworkId, taskId: s.task_id.value, agentId: '', uuid: s.uuid });
        this.onUpdate(s.task_id.value, s.state, s.reason ?? '', s.message ?? '');
        return;
      }
      default:
        return;
    }
  }

  // ------------------------------------------------------------------ the queue

  private arrive(g: Gang): void {
    g.phase = 'waiting';
    g.waitingSinceMs = this.world.clock.nowMs;
    g.submittedAtMs = this.world.clock.nowMs;
    if (this.frameworkId) this.call({ type: 'REVIVE', frameworkId: this.frameworkId });
    this.refreshHead();
    this.place();
  }

  /** Oldest waiting first; a gang put back after a preemption waits from then. */
  private firstWaiting(): Gang | undefined {
    let best: Gang | undefined;
    for (const g of this.gangs) {
      if (g.phase !== 'waiting') continue;
      if (!best || g.waitingSinceMs < best.waitingSinceMs) best = g;
    }
    return best;
  }

  private refreshHead(): void {
    const g = this.firstWaiting();
    if (g !== this.head) {
      this.head = g;
      this.headSinceMs = this.world.clock.nowMs;
      this.lastRequestMs = -Infinity;
    }
  }

  /**
   * Launches head gangs while each fits whole in the offers held, all of one round's tasks on
   * an agent in one ACCEPT of its offers; with none waiting, gives every offer back.
   */
  private place(): void {
    if (!this.frameworkId || !this.subscribed) return;
    const free = new Map<string, Resources>();
    for (const o of this.offers.values()) free.set(o.agentId, (free.get(o.agentId) ?? Resources.EMPTY).add(o.resources));
    const batch = new Map<string, TaskSpec[]>();
    for (;;) {
      const g = this.head;
      if (!g) break;
      const agentOf = this.fit(g, free);
      if (!agentOf) break;
      this.launch(g, agentOf, batch);
      for (const agentId of agentOf) free.set(agentId, free.get(agentId)!.subtract(g.member));
      this.refreshHead();
    }
    for (const [agentId, tasks] of batch) {
      const offerIds = [...this.offers].filter(([, o]) => o.agentId === agentId).map(([id]) => id);
      for (const id of offerIds) this.offers.delete(id);
      this.stats.launches += tasks.length;
      this.call({ type: 'ACCEPT', frameworkId: this.frameworkId, offerIds, tasks, refuseMs: 200 });
    }
    if (!this.head) this.decline([...this.offers.keys()], IDLE_REFUSE_MS);
  }

  /** Where each member goes in what is free of the offers held: the planner's own packing, so a gang the leader says fits, fits here. */
  private fit(g: Gang, free: ReadonlyMap<string, Resources>): string[] | undefined {
    if (free.size === 0) return undefined;
    const agents: AgentView[] = [...free].map(([agentId, total]) => ({ agentId, total, used: Resources.EMPTY, active: true }));
    const members = Array.from({ length: g.spec.members }, () => g.member);
    const plan = planPreemption({ frameworkId: this.frameworkId!, role: this.role, classRank: 0, members }, agents, []);
    if (plan.kind !== 'fits') return undefined;
    const out: string[] = new Array(members.length);
    for (const p of plan.placements) out[p.member] = p.agentId;
    return out;
  }

  /** Names the gang's tasks for this attempt and adds them to the round's launches. */
  private launch(g: Gang, agentOf: string[], batch: Map<string, TaskSpec[]>): void {
    g.attempt++;
    g.phase = 'launched';
    g.launchedAtMs = this.world.clock.nowMs;
    g.states.clear();
    const labels = g.spec.preemptible ? [] : [{ name: PREEMPTIBLE_LABEL, value: 'false' }];
    agentOf.forEach((agentId, m) => {
      const taskId = `${g.spec.name}.a${g.attempt}.m${m}`;
      g.states.set(taskId, 'LAUNCHING');
      this.taskOf.set(taskId, { gang: g, attempt: g.attempt });
      this.sink.launched(taskId, g.spec);
      const list = batch.get(agentId) ?? [];
      list.push({ taskId, name: `${g.spec.name}-${m}`, agentId, resources: g.member, command: { shell: true, value: 'train', arguments: [], environment: [] }, labels, killGraceMs: 1_000 });
      batch.set(agentId, list);
    });
  }

  private onUpdate(taskId: string, state: TaskState, reason: string, message: string): void {
    const known = this.taskOf.get(taskId);
    if (!known) return;
    const g = known.gang;
    if (known.attempt !== g.attempt || g.phase !== 'launched') {
      // A member of an attempt already given up: it must not hold on to what it has.
      if (!isTerminal(state) && state !== 'TASK_UNREACHABLE' && this.frameworkId) this.call({ type: 'KILL', frameworkId: this.frameworkId, taskId });
      return;
    }
    g.states.set(taskId, state);
    const now = this.world.clock.nowMs;
    if (state === 'TASK_RUNNING') {
      if (g.runningAtMs === undefined && [...g.states.values()].every((s) => s === 'TASK_RUNNING')) g.runningAtMs = now;
    } else if (state === 'TASK_FINISHED') {
      if ([...g.states.values()].every((s) => s === 'TASK_FINISHED')) {
        g.phase = 'done';
        g.finishedAtMs = now;
      }
    } else if (isTerminal(state)) {
      const preempted = reason === 'REASON_CONTAINER_PREEMPTED';
      if (state === 'TASK_KILLED' && !preempted) this.sink.killedUnasked(`task ${taskId} of ${this.name} was killed without being asked to (reason '${reason}', message '${message}'): only a preemption kills a running gang`);
      this.requeue(g, preempted);
    }
  }

  /** The gang's attempt is over: its other members are killed and it waits again. */
  private requeue(g: Gang, preempted: boolean): void {
    for (const [id, s] of g.states) {
      if (s !== 'LAUNCHING' && !isTerminal(s) && this.frameworkId) this.call({ type: 'KILL', frameworkId: this.frameworkId, taskId: id });
    }
    g.states.clear();
    g.phase = 'waiting';
    g.waitingSinceMs = this.world.clock.nowMs;
    if (preempted) g.preempted++;
    else this.stats.failures++;
    this.stats.requeued++;
    this.refreshHead();
    this.place();
  }

  // ------------------------------------------------------------------ time

  private tick(): void {
    if (!this.frameworkId || !this.subscribed) return;
    const now = this.world.clock.nowMs;
    const stale = [...this.offers].filter(([, o]) => now - o.heldSinceMs >= GATHER_MS).map(([id]) => id);
    if (stale.length > 0) this.decline(stale, DECLINE_REFUSE_MS);
    const w = this.waiting(now);
    if (w && w.waitedMs >= this.requestAfterMs && now - this.lastRequestMs >= REQUEST_EVERY_MS && this.plant !== 'no-request') {
      this.lastRequestMs = now;
      this.stats.requests++;
      w.gang.firstRequestAtMs ??= now;
      this.call({ type: 'REQUEST', frameworkId: this.frameworkId, members: Array.from({ length: w.gang.spec.members }, () => w.gang.member), for: w.gang.spec.name });
    }
    // A launch whose ACCEPT was refused (an offer rescinded meanwhile) is never heard of: ask.
    const unheard = this.gangs.filter((g) => g.phase === 'launched' && now - g.launchedAtMs >= RECONCILE_LAUNCHING_MS).flatMap((g) => [...g.states].filter(([, s]) => s === 'LAUNCHING').map(([id]) => id));
    if (unheard.length > 0 && now - this.lastReconcileMs >= RECONCILE_LAUNCHING_MS) {
      this.lastReconcileMs = now;
      this.call({ type: 'RECONCILE', frameworkId: this.frameworkId, taskIds: unheard });
    }
  }

  private decline(offerIds: string[], refuseMs: number): void {
    if (offerIds.length === 0 || !this.frameworkId) return;
    for (const id of offerIds) this.offers.delete(id);
    this.stats.declines++;
    this.call({ type: 'DECLINE', frameworkId: this.frameworkId, offerIds, refuseMs });
  }
}

/** One gang's history, for the figures a run reports. */
export interface GangOutcome {
  name: string;
  priorityClass: string;
  members: number;
  submittedAtMs: number | undefined;
  firstRequestAtMs: number | undefined;
  runningAtMs: number | undefined;
  finishedAtMs: number | undefined;
  preempted: number;
  /** Tasks preempted for it. */
  victims: number;
}

export interface SharingStats {
  gangs: number;
  finished: number;
  preemptions: number;
  victims: number;
  guaranteeReclaims: number;
  requests: number;
  requeued: number;
  failures: number;
  /** The longest a head gang of each class waited, in simulated ms. */
  longestWaitMs: Record<string, number>;
  /** The longest a head gang above the lowest class waited while preemption could have made room for it. */
  longestStarvedMs: number;
  outcomes: GangOutcome[];
}

/** The sharing workload on the simulated cluster, and the checks of sharing-invariants.ts. */
export class SimSharing {
  readonly frameworks: SimGangFramework[] = [];
  /** Every preemption committed in the run, in commit order. */
  readonly preemptions: PreemptionRecord[] = [];
  readonly violations: string[] = [];
  readonly boundMs: number;
  private readonly recorded = new Set<string>();
  /** Victims of committed preemptions not yet seen ended, with their preemption. */
  private readonly dying = new Map<string, { record: PreemptionRecord; committedAtMs: number }>();
  private readonly victimBoundMs: number;
  private readonly plant: SharingBug | undefined;
  private readonly faults: boolean;
  private readonly durations = new Map<string, number>();
  private readonly nonPreemptible = new Set<string>();
  private readonly longestWaitMs: Record<string, number> = {};
  /** Per framework, since when its head gang could have had room made by preemption, checked without a break. */
  private readonly starvedSince = new Map<SimGangFramework, { gang: Gang; waitingSinceMs: number; sinceMs: number }>();
  private longestStarvedMs = 0;
  private started = false;
  private nextCheckMs = 0;
  /** Whether waits are judged: from the start without faults, from when they stop with them. */
  private judgingWaits: boolean;

  constructor(
    private readonly world: SharingWorld,
    private readonly rng: SeededRandom,
    readonly workload: SharingWorkload,
    config: LeaderConfig,
    private readonly opts: SharingOptions,
  ) {
    this.plant = opts.plant;
    this.faults = opts.faults === true;
    this.judgingWaits = !this.faults;
    this.boundMs = waitBoundMs(config, workload.requestAfterMs);
    this.victimBoundMs = victimBoundMs(config, this.faults);
    this.setQuotas();
  }

  get done(): boolean {
    if (!this.started) return false;
    const until = this.opts.untilRunning;
    if (until) return until.every((name) => this.frameworks.some((f) => f.gangs.some((g) => g.spec.name === name && g.runningAtMs !== undefined)));
    return this.frameworks.every((f) => f.done);
  }

  /** The operator sets every quota (again, until the registry has them all); the frameworks start once it does. */
  private setQuotas(): void {
    if (this.started) return;
    const leader = this.world.leaders()[0];
    if (leader) {
      const missing = this.workload.quotas.filter((q) => JSON.stringify(leader.state.quotas.get(q.role)) !== JSON.stringify(q));
      if (missing.length === 0) return this.start();
      for (const q of missing) leader.operator({ type: 'set_quota', role: q.role, quota: q });
    }
    this.world.clock.after(500, () => this.setQuotas());
  }

  private start(): void {
    this.started = true;
    if (this.plant === 'limit-lowered') this.world.clock.after(LOWER_LIMIT_AFTER_MS, () => this.lowerLimit());
    const sink: Launches = {
      launched: (taskId, gang) => {
        this.durations.set(taskId, gang.durationMs);
        if (!gang.preemptible) this.nonPreemptible.add(taskId);
      },
      killedUnasked: (what) => {
        if (!this.faults) this.violations.push(what);
      },
    };
    for (const plan of this.workload.frameworks) {
      this.frameworks.push(new SimGangFramework(plan, this.world, this.rng.fork(), this.workload.requestAfterMs, this.plant, sink));
    }
  }

  /** The planted 'limit-lowered': once team/a holds GPUs, its limit is set one under that. */
  private lowerLimit(): void {
    const leader = this.world.leaders()[0];
    const held = leader ? (runningByRole(leader.state).get('team/a')?.gpus ?? 0) : 0;
    if (!leader || held < 1 || !leader.operator({ type: 'set_quota', role: 'team/a', quota: { role: 'team/a', limit: { gpus: held - 1 } } })) {
      this.world.clock.after(1_000, () => this.lowerLimit());
    }
  }

  /** The faults have stopped: from now on a gang's wait counts. */
  faultsOver(): void {
    this.judgingWaits = true;
    this.starvedSince.clear();
  }

  /** Told of every command any master applies: each preemption is kept once, with when it was first committed. */
  applied(command: RegistryCommand): void {
    if (command.type !== 'preemption' || this.recorded.has(command.record.id)) return;
    this.recorded.add(command.record.id);
    this.preemptions.push(command.record);
    for (const v of command.record.victims) this.dying.set(v.taskId, { record: command.record, committedAtMs: this.world.clock.nowMs });
  }

  /** A gang's task runs for its gang's duration and succeeds. */
  lifetimeOf(taskId: string, nowMs: number): { endsAtMs: number; succeeds: boolean } | undefined {
    const d = this.durations.get(taskId);
    return d === undefined ? undefined : { endsAtMs: nowMs + d, succeeds: true };
  }

  /** How long a task takes to stop after SIGTERM: mostly promptly, now and then the whole grace. */
  stopDelayMs(graceMs: number, rng: SeededRandom): number {
    const s = this.workload.stopping;
    if (rng.chance(s.wholeGrace)) return graceMs;
    return Math.min(graceMs, rng.range(s.promptMs[0], s.promptMs[1]));
  }

  /** The invariants, every CHECK_EVERY_MS of simulated time, on the leader's registry. */
  check(): string[] {
    if (this.violations.length > 0) return this.violations;
    const now = this.world.clock.nowMs;
    if (now < this.nextCheckMs) return [];
    this.nextCheckMs = now + CHECK_EVERY_MS;
    const leader = this.world.leaders()[0];
    if (!leader) return [];
    const state = leader.state;
    const out = [...quotaViolations(state), ...preemptionViolations(this.preemptions, INTENDED_CLASSES, this.nonPreemptible)];
    for (const [taskId, d] of this.dying) {
      const t = state.tasks.get(taskId);
      // A task out of reach cannot be stopped; it is killed once it is back.
      if (t && t.state === 'TASK_UNREACHABLE') continue;
      if (!t || isTerminal(t.state)) {
        this.dying.delete(taskId);
      } else if (now - d.committedAtMs > this.victimBoundMs) {
        out.push(`task ${taskId} still runs ${now - d.committedAtMs} ms after preemption ${d.record.id} for ${d.record.preemptor.for} was committed, over the bound of ${this.victimBoundMs} ms: a committed preemption's victims are killed`);
      }
    }
    const claims = new Map<string, string>();
    for (const r of this.preemptions) {
      for (const v of r.victims) {
        const t = state.tasks.get(v.taskId);
        if (t && !isTerminal(t.state)) claims.set(v.taskId, r.preemptor.frameworkId);
      }
    }
    for (const f of this.frameworks) {
      const w = f.waiting(now);
      if (!w || !f.frameworkId) {
        this.starvedSince.delete(f);
        continue;
      }
      this.longestWaitMs[f.priorityClass] = Math.max(this.longestWaitMs[f.priorityClass] ?? 0, w.waitedMs);
      if (!this.judgingWaits || INTENDED_CLASSES.rank(f.priorityClass) === 0) continue;
      const members = Array.from({ length: w.gang.spec.members }, () => w.gang.member);
      const v = starvation(state, INTENDED_CLASSES, { name: w.gang.spec.name, frameworkId: f.frameworkId, members }, claims);
      if (v.kind !== 'starved') {
        this.starvedSince.delete(f);
        continue;
      }
      // The clock runs while preemption could make room for this very wait of this gang; any check that finds it could not starts it again.
      const since = this.starvedSince.get(f);
      if (!since || since.gang !== w.gang || since.waitingSinceMs !== w.gang.waitingSinceMs) {
        this.starvedSince.set(f, { gang: w.gang, waitingSinceMs: w.gang.waitingSinceMs, sinceMs: now });
        continue;
      }
      const starvedMs = now - since.sinceMs;
      this.longestStarvedMs = Math.max(this.longestStarvedMs, starvedMs);
      if (starvedMs > this.boundMs) {
        out.push(`gang ${w.gang.spec.name} (${f.priorityClass}, role ${f.role}) has waited ${starvedMs} ms while preempting lower-class tasks would make room for it, over the bound of ${this.boundMs} ms (it has waited ${w.waitedMs} ms in all; victims now: ${v.victims.slice(0, 5).join(', ')}${v.victims.length > 5 ? `, and ${v.victims.length - 5} more` : ''})`);
      }
    }
    return out;
  }

  /** What is left, for a run that does not finish. */
  describe(): string {
    if (!this.started) return 'sharing: quotas never all set';
    const left = this.frameworks.flatMap((f) => f.gangs.filter((g) => g.phase !== 'done').map((g) => `${g.spec.name} ${g.phase}${g.phase === 'launched' ? ` (${[...g.states.values()].join(',')})` : ''}`));
    return `sharing: ${left.length} gangs unfinished: ${left.slice(0, 10).join('; ')}`;
  }

  stats(): SharingStats {
    const victimsFor = new Map<string, number>();
    for (const r of this.preemptions) victimsFor.set(r.preemptor.for, (victimsFor.get(r.preemptor.for) ?? 0) + r.victims.length);
    const outcomes: GangOutcome[] = this.frameworks.flatMap((f) =>
      f.gangs.map((g) => ({
        name: g.spec.name,
        priorityClass: f.priorityClass,
        members: g.spec.members,
        submittedAtMs: g.submittedAtMs,
        firstRequestAtMs: g.firstRequestAtMs,
        runningAtMs: g.runningAtMs,
        finishedAtMs: g.finishedAtMs,
        preempted: g.preempted,
        victims: victimsFor.get(g.spec.name) ?? 0,
      })),
    );
    const sum = (k: keyof SimGangFramework['stats']) => this.frameworks.reduce((n, f) => n + f.stats[k], 0);
    return {
      gangs: outcomes.length,
      finished: outcomes.filter((o) => o.finishedAtMs !== undefined).length,
      preemptions: this.preemptions.length,
      victims: this.preemptions.reduce((n, r) => n + r.victims.length, 0),
      guaranteeReclaims: this.preemptions.filter((r) => r.cause === 'guarantee').length,
      requests: sum('requests'),
      requeued: sum('requeued'),
      failures: sum('failures'),
      longestWaitMs: { ...this.longestWaitMs },
      longestStarvedMs: this.longestStarvedMs,
      outcomes,
    };
  }
}
