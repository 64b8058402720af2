// The whole-cluster simulator: three masters (the Raft core, the registry state machine and
// the leader core, all production code), agents and frameworks on a simulated network and
// clock, one seed for everything. A safety phase injects faults — leader and master
// crashes, Raft partitions, agent crashes, lost hosts and silent partitions, framework
// disconnects, lost, duplicated and late datagrams, a master whose data dir is wiped (and
// later re-added as an operator would), wall clocks stepped by hours — with the invariants
// checked at every step; then a liveness phase with the faults off, in which every framework
// must finish its work and the cluster settle into a state that agents, registry and
// frameworks agree on, every master a caught-up voter again.
//
// `npm run sim -- cluster --seeds N`; a failing seed says `reproduce with --seed N`, and
// `--seed N --trace ID` prints what happened to one task or agent on the way. The jobs,
// services and sharing simulations are this one with their workloads plugged in.

import { MemoryStorage } from '../../shared/raft/memory-storage.ts';
import type { Message, NodeId } from '../../shared/raft/types.ts';
import { SeededRandom } from '../../shared/random.ts';
import { DEFAULT_LEADER_CONFIG, type LeaderConfig } from '../../master/leader/config.ts';
import type { RegistryCommand } from '../../master/registry/commands.ts';
import type { RegistryEvent } from '../../master/registry/state-machine.ts';
import type { TaskState } from '../../shared/agent-messages.ts';
import { SimAgent, type AgentWorld } from './cluster-agent.ts';
import { SimClock } from './cluster-clock.ts';
import { SimFramework, type FrameworkWorld } from './cluster-framework.ts';
import { checkReplicasOnce, checkSettled, checkStep, checkTasksOnce } from './cluster-invariants.ts';
import { SimJobs } from './cluster-jobs.ts';
import { jobsWorkload } from './jobs-workload.ts';
import type { StoreBug } from './sim-store.ts';
import { SimServices, type ServicesBug } from './cluster-services.ts';
import { SimSharing, type SharingOptions, type SharingStats } from './cluster-sharing.ts';
import { servicesWorkload } from './services-workload.ts';
import { SimMaster, type MasterWorld, type PlantedBug } from './cluster-master.ts';
import { ClusterHistory, livenessBoundMs } from './cluster-history.ts';
import { MemberReAdd, WIPE_REFUSED_START } from './cluster-wipe.ts';
import { CALM, SimNet, type NetConditions } from './cluster-net.ts';
import { forbidNondeterminism } from './determinism.ts';

export interface ClusterSimOptions {
  plant?: PlantedBug;
  /** Prints what happens to this task or agent id. */
  trace?: string;
  /** Simulated time with faults on. */
  safetyMs?: number;
  /** How long, after the faults, the cluster may take to finish and settle. */
  livenessMs?: number;
  /** Adds the jobs framework (the production framework on the production runtime) with a workload of gangs: run with runSeedAsync. */
  jobs?: boolean;
  /** A bug planted in the jobs framework's store, to show the invariants catch it. */
  jobsPlant?: StoreBug;
  /** Adds the services framework (the production framework on the production runtime) with apps created, scaled, restarted and deleted: run with runSeedAsync. */
  services?: boolean;
  /** A bug planted in the services framework, to show the invariants catch it. */
  servicesPlant?: ServicesBug;
  /**
   * Frameworks of three priority classes sharing agents with GPUs under quotas, instead of
   * alpha and beta; faults only if it asks for them (its check that no gang of a higher class
   * waits long while it could preempt has a bound that faults would void).
   */
  sharing?: SharingOptions;
  /** Settings of the leader that differ from the simulation's. */
  config?: Partial<LeaderConfig>;
  /** Wall-clock steps among the faults (default: whenever there are faults). */
  clockSteps?: boolean;
  /** Wiped masters among the faults (default: whenever there are faults). */
  wipes?: boolean;
}

/** The leader's settings in the simulation: the daemon's, with short periods so a run is brief. */
const SIM_CONFIG: LeaderConfig = {
  pingIntervalMs: 1_000,
  maxMissedPings: 3,
  offerTimeoutMs: 10_000,
  allocationIntervalMs: 1_000,
  defaultRefuseMs: 1_000,
  frameworkHeartbeatMs: 5_000,
  updateRetryMs: 2_000,
  frameworkReregisterGraceMs: 30_000,
  roleWeights: {},
  priorityClasses: DEFAULT_LEADER_CONFIG.priorityClasses,
  preemptionGraceMs: 2_000,
  earmarkMs: 5_000,
};

const STEP_MS = 10;

class ClusterSim implements MasterWorld, AgentWorld, FrameworkWorld {
  readonly clock = new SimClock();
  readonly net: SimNet;
  readonly masterList: SimMaster[] = [];
  readonly agents: SimAgent[] = [];
  readonly frameworks: SimFramework[] = [];
  jobs: SimJobs | undefined;
  services: SimServices | undefined;
  sharing: SimSharing | undefined;
  /** Services run until killed, or fail now and then while the faults last. */
  servicesFail = true;
  /** Masters whose Raft traffic is cut off from the others. */
  readonly raftCut = new Set<NodeId>();
  /** Datagram conditions apply to Raft and scheduler calls; connections only take the delays. */
  private readonly launchedOn = new Map<string, string>();
  /** When each acknowledgement was first committed (first applied by any master). */
  private readonly ackCommittedAt = new Map<string, number>();
  readonly violations: string[] = [];
  readonly stats = { launches: 0, updates: 0, faults: {} as Record<string, number> };
  /** Committed entries, leaders per term and silent agents, for the invariants (cluster-history.ts). */
  readonly history = new ClusterHistory();
  /** Wiped masters on their way back into the group, one at a time. */
  reAdd: MemberReAdd | undefined;

  constructor(
    readonly rng: SeededRandom,
    readonly plant: PlantedBug | undefined,
    readonly config: LeaderConfig,
  ) {
    this.net = new SimNet(this.clock, rng.fork());
  }

  masters(): SimMaster[] {
    return this.masterList;
  }

  sendRaft(from: NodeId, m: Message): void {
    const src = this.masterList.find((x) => x.id === from);
    // The sender's incarnation travels with its connection: a message sent before a wipe is the old storage's.
    const sentBy = src?.disk.incarnation ?? '';
    this.net.datagram(() => {
      const to = this.masterList.find((x) => x.id === m.to);
      if (!to || !src || this.raftCut.has(from) !== this.raftCut.has(m.to)) return;
      // The peer handshake (peer-transport.ts): each side judges the other's storage
      // incarnation; the one known by another is told so in the welcome and keeps out.
      const admitted = to.admit(from, sentBy);
      if (!src.admit(m.to, to.disk.incarnation) || !admitted) {
        const knownOfSrc = to.knownIncarnation(from);
        if (knownOfSrc !== undefined && knownOfSrc !== sentBy && sentBy === src.disk.incarnation) src.selfLost();
        const knownOfTo = src.knownIncarnation(m.to);
        if (knownOfTo !== undefined && knownOfTo !== to.disk.incarnation) to.selfLost();
        return;
      }
      if (this.reAdd?.unadmitted(from, sentBy) && (m.type === 'voteResponse' || m.type === 'preVoteResponse' || m.type === 'appendResponse' || m.type === 'heartbeatResponse') && !('reject' in m && m.reject)) {
        this.violations.push(`master ${from}, whose storage was wiped and which was not re-added, had its ${m.type} accepted by master ${m.to}`);
      }
      to.raftMessage(m);
    });
  }

  appliedEntry(masterId: NodeId, index: number, term: number, data: Uint8Array): void {
    const v = this.history.applied(masterId, index, term, data);
    if (v) this.violations.push(v);
  }

  /** Set to a task or agent id to print what happens to it (debugging a failing seed). */
  traceId: string | undefined;

  trace(what: string): void {
    if (this.traceId !== undefined && what.includes(this.traceId)) console.log(`[${this.clock.nowMs}] ${what}`);
  }

  applied(masterId: NodeId, command: RegistryCommand, events: RegistryEvent[]): void {
    if (this.traceId !== undefined) this.trace(`master ${masterId} applied ${JSON.stringify(command)} -> ${events.map((e) => `${e.task.id}:${e.update.state}`).join(',')}`);
    if (command.type === 'status_acknowledged' && !this.ackCommittedAt.has(command.uuid)) this.ackCommittedAt.set(command.uuid, this.clock.nowMs);
    this.sharing?.applied(command);
  }

  launched(agent: SimAgent, taskId: string): void {
    this.stats.launches++;
    const before = this.launchedOn.get(taskId);
    if (before !== undefined) this.violations.push(`task ${taskId} launched twice: on ${before}, then on ${agent.hostname}`);
    this.launchedOn.set(taskId, agent.hostname);
  }

  updateReceived(fw: { readonly name: string }, s: { taskId: string; state: TaskState; uuid: string | undefined }, sentAtMs: number): void {
    this.stats.updates++;
    if (s.uuid === undefined) return;
    const ackedAt = this.ackCommittedAt.get(s.uuid);
    if (ackedAt !== undefined && sentAtMs > ackedAt) {
      this.violations.push(`framework ${fw.name} got update ${s.state} of task ${s.taskId} (${s.uuid}) again, sent at ${sentAtMs} ms after its acknowledgement was committed at ${ackedAt} ms`);
    }
  }

  lifetimeOf(taskId: string, rng: SeededRandom): { endsAtMs: number; succeeds: boolean } | undefined {
    if (this.sharing) return this.sharing.lifetimeOf(taskId, this.clock.nowMs);
    // The jobs workload's job with a deadline runs until its deadline ends it.
    if (this.jobs && taskId.startsWith('deadline.')) return { endsAtMs: Infinity, succeeds: false };
    if (!this.services || !taskId.startsWith('svc_')) return undefined;
    if (this.servicesFail && rng.chance(0.1)) return { endsAtMs: this.clock.nowMs + rng.range(500, 10_000), succeeds: false };
    return { endsAtMs: Infinity, succeeds: false };
  }

  stopDelayMs(_taskId: string, graceMs: number, rng: SeededRandom): number | undefined {
    return this.sharing?.stopDelayMs(graceMs, rng);
  }

  leaders(): SimMaster[] {
    return this.masterList.filter((m) => m.isLeading);
  }

  countFault(name: string): void {
    this.stats.faults[name] = (this.stats.faults[name] ?? 0) + 1;
  }
}

export interface SeedResult {
  seed: number;
  simulatedMs: number;
  settledAfterMs: number;
  leaderships: number;
  launches: number;
  updates: number;
  faults: Record<string, number>;
  net: { datagrams: number; lost: number; duplicated: number; connections: number };
  /** With the jobs framework: how its jobs ended. */
  jobs?: { succeeded: number; failed: number; launches: number; crashes: number; restarts: number };
  /** With the services framework: what it did. */
  services?: { apps: number; changes: number; launches: number; kills: number; crashes: number; rounds: number };
  /** With the sharing workload: its gangs, preemptions and waits. */
  sharing?: SharingStats;
}

/** One seed: throws with `reproduce with --seed N` when an invariant breaks. Not for the jobs or services frameworks (runSeedAsync). */
export function runSeed(seed: number, opts: ClusterSimOptions = {}): SeedResult {
  if (opts.jobs || opts.services) throw new Error('the jobs and services frameworks run on promises: run their seeds with runSeedAsync');
  const run = seedRun(seed, opts);
  for (;;) {
    const r = run.next();
    if (r.done) return r.value;
  }
}

/**
 * One seed of a simulation whose frameworks run on promises (the production framework
 * runtime): after each event of the simulated clock, the promise jobs it started run to
 * their end before the next event — no timer or I/O of the host runs meanwhile, so one seed
 * still gives one history.
 */
export async function runSeedAsync(seed: number, opts: ClusterSimOptions = {}): Promise<SeedResult> {
  const run = seedRun(seed, opts);
  for (;;) {
    const r = run.next();
    if (r.done) return r.value;
    for (let i = 0; i < MICROTASK_TURNS; i++) await Promise.resolve();
  }
}

/** Promise turns run after each clock event: deeper than any chain of the framework runtime's. */
const MICROTASK_TURNS = 64;

/** The seed's run, pausing after each clock event when it has the jobs or services framework (their promises run then). */
function* seedRun(seed: number, opts: ClusterSimOptions): Generator<void, SeedResult, void> {
  const rng = new SeededRandom(seed);
  const sim = new ClusterSim(rng, opts.plant, { ...SIM_CONFIG, ...opts.config });
  sim.traceId = opts.trace;
  const safetyMs = opts.safetyMs ?? 30_000;
  const livenessMs = opts.livenessMs ?? 120_000;
  const faultRng = rng.fork();
  const conditions: NetConditions = {
    minDelayMs: 1,
    maxDelayMs: faultRng.pick([5, 30, 80, 150]),
    loss: faultRng.pick([0, 0.01, 0.05]),
    duplicate: faultRng.pick([0, 0.02, 0.1]),
  };
  let phase = 'setup';
  const pause = opts.jobs === true || opts.services === true;
  const restore = forbidNondeterminism();
  try {
    const ids: NodeId[] = [1, 2, 3];
    for (const id of ids) {
      const storage = new MemoryStorage();
      storage.bootstrap(ids);
      sim.masterList.push(new SimMaster(id, { storage, incarnation: `${id}.0`, peers: new Map() }, sim, rng.fork()));
    }
    const agentCount = faultRng.range(3, 6);
    if (opts.sharing) {
      const workload = opts.sharing.workload(rng.fork());
      workload.agents.forEach((r, i) => sim.agents.push(new SimAgent(`agent-${i}`, `10.0.${(i >> 8) + 1}.${(i & 255) + 1}`, r, sim, rng.fork())));
      sim.sharing = new SimSharing(sim, rng.fork(), workload, sim.config, opts.sharing);
    } else {
      for (let i = 0; i < agentCount; i++) sim.agents.push(new SimAgent(`agent-${i}`, `10.0.1.${i + 1}`, 'cpus:2;mem:2048;ports:[31000-31009]', sim, rng.fork()));
      sim.frameworks.push(new SimFramework('alpha', 'team-a', faultRng.range(40, 120), sim, rng.fork()));
      sim.frameworks.push(new SimFramework('beta', 'team-b', faultRng.range(40, 120), sim, rng.fork()));
    }
    if (opts.jobs) sim.jobs = new SimJobs(sim, rng.fork(), jobsWorkload(rng.fork(), agentCount), opts.jobsPlant);
    if (opts.services) sim.services = new SimServices(sim, rng.fork(), opts.servicesPlant, servicesWorkload(rng.fork(), agentCount, safetyMs));

    phase = 'safety';
    const faults = !opts.sharing || opts.sharing.faults === true;
    // Without faults the network still delays, but loses and duplicates nothing.
    sim.net.conditions = faults ? conditions : { ...CALM, maxDelayMs: conditions.maxDelayMs };
    let nextFaultMs = faults ? faultRng.range(1_000, 3_000) : Infinity;
    // Wipes and clock steps draw from a stream of their own, so the other faults of a seed
    // come as they did before these existed.
    const extraRng = new SeededRandom((seed * 2_654_435_761) >>> 0);
    const extra = faults && (opts.clockSteps !== false || opts.wipes !== false);
    let nextExtraMs = extra ? extraRng.range(2_000, 6_000) : Infinity;
    const heals: { atMs: number; fn: () => void }[] = [];
    for (let t = 0; t < safetyMs; t += STEP_MS) {
      yield* stepTo(sim, t + STEP_MS, pause);
      for (const h of heals.filter((h) => h.atMs <= sim.clock.nowMs)) h.fn();
      heals.splice(0, heals.length, ...heals.filter((h) => h.atMs > sim.clock.nowMs));
      if (sim.clock.nowMs >= nextFaultMs) {
        injectFault(sim, faultRng, heals);
        nextFaultMs = sim.clock.nowMs + faultRng.range(300, 2_500);
      }
      if (sim.clock.nowMs >= nextExtraMs) {
        injectStorageOrClockFault(sim, extraRng, heals, { wipes: opts.wipes !== false, clockSteps: opts.clockSteps !== false });
        nextExtraMs = sim.clock.nowMs + extraRng.range(1_500, 6_000);
      }
    }

    // Liveness: every fault healed, the network calm; the work must finish and settle.
    phase = 'liveness';
    for (const h of heals) h.fn();
    sim.net.conditions = CALM;
    sim.raftCut.clear();
    // A wiped master comes back only through its re-add (started by its heal above).
    for (const m of sim.masterList) if (!sim.reAdd?.holdsDown(m.id)) m.restart();
    for (const m of sim.masterList) m.wall.offsetMs = 0;
    if (sim.jobs) sim.jobs.wall.offsetMs = 0;
    for (const a of sim.agents) {
      a.heal();
      a.restart();
    }
    // The jobs framework's crashes have stopped too; its work must finish. Services stop failing.
    sim.servicesFail = false;
    sim.sharing?.faultsOver();
    const livenessStart = sim.clock.nowMs;
    let settledAt: number | undefined;
    while (sim.clock.nowMs < livenessStart + livenessMs) {
      yield* stepTo(sim, sim.clock.nowMs + STEP_MS, pause);
      if (settledAt === undefined && settled(sim)) settledAt = sim.clock.nowMs;
      // Quiet for a few seconds more: late retries and re-sends must change nothing.
      if (settledAt !== undefined && sim.clock.nowMs >= settledAt + 5_000) break;
    }
    if (settledAt === undefined) {
      const leader = sim.leaders()[0];
      throw new Error(
        `liveness: not settled within ${livenessMs} ms after the faults stopped (leader ${leader?.id ?? 'none'}; ` +
          `frameworks ${sim.frameworks.map((f) => `${f.name} ${f.jobs.filter((j) => j.finished).length}/${f.jobs.length} done, ${f.subscribed ? 'subscribed' : 'not subscribed'}`).join(', ')}; ` +
          (sim.jobs ? `jobs ${sim.jobs.records().map((r) => `${r.spec.name} ${r.phase} (${r.message})`).join(', ')}, ${sim.jobs.subscribed ? 'subscribed' : 'not subscribed'}; ` : '') +
          (sim.services && leader ? `services: ${sim.services.problems(leader).join('; ') || 'settled'} (${sim.services.describe(leader)}); ` : '') +
          (sim.sharing ? `${sim.sharing.describe()}; ` : '') +
          (sim.reAdd ? `re-adding master ${sim.reAdd.describe()}; ` : '') +
          `masters ${sim.masterList.map((m) => `${m.id} ${m.up ? (m.keptOut ? 'kept out' : m.node.role) : 'down'} applied ${m.node.status().applied}`).join(', ')}; ` +
          `agents ${sim.agents.map((a) => `${a.hostname} ${a.up ? '' : 'down '}${a.registered ? 'registered' : 'unregistered'}${a.conn ? ` on ${a.conn.id}${a.conn.usable ? '' : ' (closed)'}${a.conn.blackholed ? ' (cut)' : ''}` : ' unconnected'} ${a.pending.size} pending`).join(', ')}; ` +
          `problems: ${leader ? checkSettled(leader, sim.agents, sim.frameworks).slice(0, 5).join('; ') || 'none' : 'no leader'})`,
      );
    }
    phase = 'settled';
    const leader = sim.leaders()[0];
    const problems = checkSettled(leader, sim.agents, sim.frameworks);
    if (problems.length > 0) throw new Error(`after the faults: ${problems.slice(0, 10).join('; ')}`);
    return {
      seed,
      simulatedMs: sim.clock.nowMs,
      settledAfterMs: settledAt - livenessStart,
      leaderships: sim.masterList.reduce((n, m) => n + m.stats.leaderships, 0),
      launches: sim.stats.launches,
      updates: sim.stats.updates,
      faults: sim.stats.faults,
      net: { ...sim.net.stats },
      ...(sim.jobs
        ? {
            jobs: {
              succeeded: sim.jobs.records().filter((r) => r.phase === 'Succeeded').length,
              failed: sim.jobs.records().filter((r) => r.phase === 'Failed').length,
              launches: sim.jobs.stats.launches,
              crashes: sim.jobs.stats.crashes,
              restarts: sim.jobs.records().reduce((n, r) => n + r.restarts, 0),
            },
          }
        : {}),
      ...(sim.services
        ? {
            services: {
              apps: sim.services.records.apps().length,
              changes: sim.services.stats.changes,
              launches: sim.services.stats.launches,
              kills: sim.services.stats.kills,
              crashes: sim.services.stats.crashes,
              rounds: sim.services.stats.rounds,
            },
          }
        : {}),
      ...(sim.sharing ? { sharing: sim.sharing.stats() } : {}),
    };
  } catch (err) {
    const e = err as Error;
    throw new Error(`cluster simulation failed in the ${phase} phase at ${sim.clock.nowMs} ms: ${e.message}\nreproduce with --seed ${seed}${opts.plant ? ` (planted bug: ${opts.plant})` : ''}${opts.servicesPlant ? ` (planted bug: ${opts.servicesPlant})` : ''}${opts.jobsPlant ? ` (planted bug: ${opts.jobsPlant})` : ''}${opts.sharing?.plant ? ` (planted bug: ${opts.sharing.plant})` : ''}`, { cause: e });
  } finally {
    restore();
  }
}

/** Runs the clock to `untilMs`, then checks the invariants of this step. */
function* stepTo(sim: ClusterSim, untilMs: number, pause: boolean): Generator<void, void, void> {
  while (sim.clock.runNext(untilMs)) {
    if (pause) yield;
    if (sim.violations.length > 0) throw new Error(sim.violations.join('; '));
  }
  const raft = sim.history.checkLeaders(sim.masterList, sim.clock.nowMs);
  if (raft.length > 0) throw new Error(raft.join('; '));
  const live = sim.history.checkLiveness(sim.leaders(), sim.agents, sim.clock.nowMs, livenessBoundMs(sim.config));
  if (live.length > 0) throw new Error(live.join('; '));
  for (const m of sim.leaders()) {
    const v = checkStep(m);
    if (v.length > 0) throw new Error(v.join('; '));
  }
  if (sim.jobs) {
    const v = [...sim.jobs.violations, ...checkReplicasOnce(sim.agents)];
    if (v.length > 0) throw new Error(v.join('; '));
  }
  if (sim.services) {
    const v = [...sim.services.violations, ...checkTasksOnce(sim.agents, 'svc_')];
    if (v.length > 0) throw new Error(v.join('; '));
  }
  if (sim.sharing) {
    const v = sim.sharing.check();
    if (v.length > 0) throw new Error(v.join('; '));
  }
}

/** Done and quiet: all work finished, everyone connected, nothing left unacknowledged. */
function settled(sim: ClusterSim): boolean {
  const leaders = sim.leaders();
  if (leaders.length !== 1) return false;
  const leader = leaders[0];
  if (!sim.frameworks.every((f) => f.done && f.subscribed)) return false;
  if (sim.jobs && !(sim.jobs.done && sim.jobs.subscribed)) return false;
  if (sim.services && sim.services.problems(leader).length > 0) return false;
  if (sim.sharing && !sim.sharing.done) return false;
  // Every master back as a caught-up voter: a wiped one re-added, none kept out.
  if (sim.reAdd) return false;
  const cs = leader.node.status();
  if (sim.masterList.some((m) => !m.up || m.keptOut || !cs.config.voters.includes(m.id) || m.node.status().applied < cs.commit)) return false;
  if (!sim.agents.every((a) => a.registered && a.pending.size === 0)) return false;
  for (const t of leader.state.tasks.values()) if (t.unacked) return false;
  return checkSettled(leader, sim.agents, sim.frameworks).length === 0;
}

function injectFault(sim: ClusterSim, rng: SeededRandom, heals: { atMs: number; fn: () => void }[]): void {
  const later = (minMs: number, maxMs: number, fn: () => void) => heals.push({ atMs: sim.clock.nowMs + rng.range(minMs, maxMs), fn });
  // A master being re-added is out until it votes again: while it is a learner, the voters
  // left are the others, and losing one of them would leave no quorum.
  const upMasters = sim.masterList.filter((m) => m.up && !m.keptOut && !sim.raftCut.has(m.id) && sim.reAdd?.master !== m);
  if (sim.jobs && rng.chance(0.15)) {
    sim.countFault('jobs-framework-crash');
    sim.jobs.crash();
    return;
  }
  if (sim.services && rng.chance(0.15)) {
    sim.countFault('services-framework-crash');
    sim.services.crash();
    return;
  }
  const kind = rng.pick(['leader-crash', 'leader-crash', 'master-crash', 'raft-partition', 'agent-crash', 'agent-host-lost', 'agent-partition', 'agent-partition', 'framework-disconnect'] as const);
  // At most one master is out at a time, so a quorum remains and the work can go on.
  if ((kind === 'leader-crash' || kind === 'master-crash' || kind === 'raft-partition') && upMasters.length < sim.masterList.length) return;
  sim.countFault(kind);
  switch (kind) {
    case 'leader-crash': {
      const m = sim.leaders()[0] ?? rng.pick(upMasters);
      m.crash();
      later(300, 4_000, () => m.restart());
      return;
    }
    case 'master-crash': {
      const m = rng.pick(upMasters);
      m.crash();
      later(300, 4_000, () => m.restart());
      return;
    }
    case 'raft-partition': {
      const m = rng.chance(0.5) ? (sim.leaders()[0] ?? rng.pick(upMasters)) : rng.pick(upMasters);
      sim.raftCut.add(m.id);
      later(500, 5_000, () => sim.raftCut.delete(m.id));
      return;
    }
    case 'agent-crash': {
      const a = rng.pick(sim.agents);
      a.crash();
      later(200, 5_000, () => a.restart());
      return;
    }
    case 'agent-host-lost': {
      const a = rng.pick(sim.agents);
      a.hostLost();
      later(200, 5_000, () => a.restart());
      return;
    }
    case 'agent-partition': {
      const a = rng.pick(sim.agents);
      a.partition();
      later(500, 8_000, () => a.heal());
      return;
    }
    case 'framework-disconnect': {
      // The sharing frameworks start only once their quotas are set.
      const frameworks: { disconnect(): void }[] = [...sim.frameworks, ...(sim.sharing?.frameworks ?? [])];
      if (frameworks.length > 0) rng.pick(frameworks).disconnect();
      return;
    }
  }
}

/**
 * The faults of their own stream: a master's data dir wiped — it restarts with its usual
 * peers, and refuses to start when a peer knows it (or, no peer answering in time, founds
 * alone and is kept out) until the operator removes it and adds it back started with
 * --new-member; or a host's wall clock stepped an hour or two either way (sometimes set
 * right again later), the monotonic clock running on.
 */
function injectStorageOrClockFault(sim: ClusterSim, rng: SeededRandom, heals: { atMs: number; fn: () => void }[], kinds: { wipes: boolean; clockSteps: boolean }): void {
  const later = (minMs: number, maxMs: number, fn: () => void) => heals.push({ atMs: sim.clock.nowMs + rng.range(minMs, maxMs), fn });
  const allIn = sim.masterList.every((m) => m.up && !m.keptOut && !sim.raftCut.has(m.id));
  // Any master: each knows every member by the incarnation the log records (incarnations.ts),
  // a master re-added since it last heard from the wiped one included.
  if (rng.chance(0.35) && kinds.wipes && allIn && !sim.reAdd) {
    sim.countFault('master-wipe');
    const m = rng.pick(sim.masterList);
    sim.reAdd = new MemberReAdd(sim, m, rng.fork(), () => {
      sim.reAdd = undefined;
    });
    later(300, 2_000, () => sim.reAdd?.restartWithPeers(rng.chance(WIPE_REFUSED_START)));
    later(2_500, 6_000, () => sim.reAdd?.begin());
    return;
  }
  if (!kinds.clockSteps) return;
  sim.countFault('clock-step');
  const hosts = [...sim.masterList.map((m) => m.wall), ...(sim.jobs ? [sim.jobs.wall] : [])];
  const wall = rng.pick(hosts);
  const stepMs = (rng.chance(0.5) ? 1 : -1) * rng.range(3_600_000, 7_200_000);
  wall.offsetMs += stepMs;
  if (rng.chance(0.5)) later(500, 5_000, () => (wall.offsetMs -= stepMs));
}

export async function run(opts: { seeds: number; seed?: number; trace?: string }): Promise<unknown> {
  const seeds = opts.seed !== undefined ? [opts.seed] : Array.from({ length: opts.seeds }, (_, i) => i + 1);
  const started = performance.now();
  let launches = 0;
  let updates = 0;
  let leaderships = 0;
  let maxSettle = 0;
  const faults: Record<string, number> = {};
  // Every seed runs; the failing ones are listed at the end, each with how to replay it.
  const failed: { seed: number; error: string }[] = [];
  for (const seed of seeds) {
    let r: SeedResult;
    try {
      r = runSeed(seed, { trace: opts.trace });
    } catch (err) {
      failed.push({ seed, error: (err as Error).message });
      continue;
    }
    launches += r.launches;
    updates += r.updates;
    leaderships += r.leaderships;
    maxSettle = Math.max(maxSettle, r.settledAfterMs);
    for (const [k, v] of Object.entries(r.faults)) faults[k] = (faults[k] ?? 0) + v;
  }
  const summary = { seeds: seeds.length, failed: failed.length, launches, updates, leaderships, faults, maxSettleMs: maxSettle, wallMs: Math.round(performance.now() - started) };
  if (failed.length > 0) {
    throw new Error(`${failed.length} of ${seeds.length} seeds failed (${JSON.stringify(summary)}):\n${failed.map((f) => `seed ${f.seed}: ${f.error}`).join('\n')}`);
  }
  return { ...summary, ok: true };
}
