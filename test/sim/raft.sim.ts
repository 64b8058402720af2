// Deterministic simulation of Raft groups. One seed decides everything: group size (3 or
// 5), timings and clock drift, message loss, duplication, delay (hence reordering),
// partitions (symmetric and one-way), crashes with and without the unsynced tail, restarts,
// membership changes (add a learner, promote it, remove a voter: a replacement), leadership
// transfers, snapshots and compaction, and the clients' put/get/cas operations.
//
// A run has two phases. Safety: faults on; Election Safety, Log Matching, Leader
// Completeness and State Machine Safety are checked at every step (raft-invariants.ts).
// Liveness: faults off, crashed nodes back; within a bound a leader must lead every live
// member, every client's operation must be answered, and a final proposal must be applied
// everywhere. At the end the clients' history must be linearizable (WGL checker).
//
// `npm run sim -- raft --seeds N` runs seeds 1..N; `--seed S` runs one. A failure says
// `reproduce with --seed S`.

import { forbidNondeterminism } from './determinism.ts';
import { SeededRandom } from '../../shared/random.ts';
import type { NodeId } from '../../shared/raft/types.ts';
import { checkLinearizable, operationsOf } from './linearizability.ts';
import { kvModel } from './kv.ts';
import { SimCluster, type ClusterStats, type SimParams } from './raft-cluster.ts';
import { RELIABLE, type NetworkConditions } from './raft-network.ts';
import { wireRoundTrip } from './raft-wire-route.ts';

export interface SeedOptions {
  /** Steps with faults on. */
  safetySteps?: number;
  /** Most steps the group may take to converge once faults stop. */
  livenessBound?: number;
}

export interface SeedResult {
  seed: number;
  voters: number;
  profile: string;
  steps: number;
  livenessSteps: number;
  leaders: number;
  maxTerm: number;
  committed: number;
  operations: number;
  network: { sent: number; lost: number; duplicated: number; cut: number };
  cluster: ClusterStats;
  linearizable: true | 'unknown';
}

interface Faults {
  profile: 'calm' | 'lossy' | 'stormy';
  conditions: NetworkConditions;
  crashRate: number;
  partitionRate: number;
  operatorRate: number;
  /** Per step: the leader (the node clients trust most) crashes, is cut off, or stalls. */
  leaderCrashRate: number;
  leaderIsolateRate: number;
  pauseRate: number;
}

function paramsFor(rng: SeededRandom): { params: SimParams; faults: Faults } {
  const voters = rng.chance(0.5) ? 3 : 5;
  const spares = 2;
  const tickRates: number[] = [];
  for (let i = 0; i < voters + spares; i++) tickRates.push(0.25 + rng.float() * 0.35);
  const keyCount = rng.range(1, 3);
  const params: SimParams = {
    voters,
    spares,
    electionTicks: 10,
    heartbeatTicks: rng.range(1, 3),
    maxMessageBytes: rng.pick([64, 512, 1 << 20]),
    maxInflightMessages: rng.pick([1, 4, 64]),
    tickRates,
    syncChance: 0.3 + rng.float() * 0.7,
    snapshotEvery: rng.range(5, 80),
    snapshotKeep: rng.range(0, 20),
    clients: rng.range(3, 6),
    keys: ['a', 'b', 'c'].slice(0, keyCount),
    invokeChance: 0.05 + rng.float() * 0.25,
    clientTimeout: rng.range(60, 400),
    wireEvery: rng.pick([0, 7, 50]),
  };
  // Three kinds of weather: calm (rare faults), lossy (a bad network), stormy (leaders
  // crash, stall and get cut off often, messages linger long enough to arrive from old terms).
  const profile = rng.pick(['calm', 'lossy', 'stormy'] as const);
  const stormy = profile === 'stormy';
  const faults: Faults = {
    profile,
    conditions: {
      loss: profile === 'calm' ? rng.float() * 0.02 : rng.float() * 0.2,
      duplicate: rng.float() * 0.1,
      minDelay: 1,
      maxDelay: stormy ? rng.range(5, 25) : rng.range(1, 10),
    },
    crashRate: rng.float() * (stormy ? 0.006 : 0.003),
    partitionRate: rng.float() * (profile === 'calm' ? 0.003 : 0.01),
    operatorRate: rng.float() * 0.01,
    leaderCrashRate: stormy ? rng.float() * 0.01 : rng.float() * 0.002,
    leaderIsolateRate: stormy ? rng.float() * 0.01 : rng.float() * 0.002,
    pauseRate: stormy ? rng.float() * 0.01 : rng.float() * 0.002,
  };
  return { params, faults };
}

function injectFaults(c: SimCluster, f: Faults, rng: SeededRandom): void {
  for (const n of c.nodes.values()) {
    if (n.up && rng.chance(f.crashRate)) c.crash(n, rng.range(10, 300));
  }
  if (rng.chance(f.partitionRate)) {
    c.stats.partitions++;
    const ids = [...c.nodes.keys()];
    const roll = rng.float();
    if (roll < 0.35) {
      c.network.heal();
    } else if (roll < 0.55) {
      const lone = rng.pick(ids);
      c.network.partition([[lone], ids.filter((id) => id !== lone)]);
    } else if (roll < 0.8) {
      const a: NodeId[] = [];
      const b: NodeId[] = [];
      for (const id of ids) (rng.chance(0.5) ? a : b).push(id);
      c.network.partition([a, b]);
    } else {
      // One-way cuts: some links drop messages in one direction only.
      c.network.heal();
      const cuts = rng.range(1, ids.length);
      for (let i = 0; i < cuts; i++) {
        const from = rng.pick(ids);
        const to = rng.pick(ids);
        if (from !== to) c.network.cut(from, to);
      }
    }
  }
  if (rng.chance(f.operatorRate)) c.operate();
  const leader = c.leader();
  if (leader !== undefined) {
    if (rng.chance(f.leaderCrashRate)) c.crash(leader, rng.range(5, 200));
    else if (rng.chance(f.leaderIsolateRate)) {
      c.stats.partitions++;
      c.network.partition([[leader.id], [...c.nodes.keys()].filter((id) => id !== leader.id)]);
    }
  }
  if (rng.chance(f.pauseRate)) {
    // Usually the leader: a leader that stalls past its lease and wakes up still believing
    // it leads is the classic source of stale reads.
    const victim = leader !== undefined && rng.chance(0.7) ? leader : rng.pick([...c.nodes.values()]);
    if (victim.up) {
      victim.pausedUntil = c.now + rng.range(20, 120);
      c.stats.pauses++;
    }
  }
}

function stepOnce(c: SimCluster, allowInvoke: boolean): void {
  c.lifecycle();
  c.deliver();
  c.tick();
  c.clientsStep(allowInvoke);
  c.process();
}

/** Whether every live member of the leader's configuration follows it and has applied all it committed. */
function converged(c: SimCluster): boolean {
  const l = c.leader();
  if (l === undefined || !c.clientsIdle()) return false;
  const st = l.node.status();
  if (st.commit !== st.lastIndex) return false;
  for (const id of [...st.config.voters, ...st.config.learners]) {
    const n = c.nodes.get(id);
    if (n === undefined || n.decommissioned) continue;
    if (!n.up || n.node.leader !== l.id || n.applied !== st.commit || n.writing !== undefined) return false;
  }
  return true;
}

export function runSeed(seed: number, options: SeedOptions = {}): SeedResult {
  const safetySteps = options.safetySteps ?? 3000;
  const livenessBound = options.livenessBound ?? 2000;
  const rng = new SeededRandom(seed);
  const { params, faults } = paramsFor(rng);
  const c = new SimCluster(params, rng.fork());
  const faultRng = rng.fork();
  if (params.wireEvery > 0) {
    let count = 0;
    c.transform = (m) => (++count % params.wireEvery === 0 ? wireRoundTrip(m) : m);
  }

  let step = 0;
  const restore = forbidNondeterminism();
  try {
    c.network.conditions = faults.conditions;
    for (; step < safetySteps; step++) {
      c.now = step;
      stepOnce(c, true);
      injectFaults(c, faults, faultRng);
      if (step % 50 === 0) c.checkLogs();
    }

    // Liveness: the faults stop; the group must come back together within the bound.
    c.liveness = true;
    c.network.heal();
    c.network.conditions = RELIABLE;
    for (const n of c.nodes.values()) {
      n.restartAt = Math.min(n.restartAt, step);
      n.pausedUntil = Math.min(n.pausedUntil, step);
    }
    const livenessStart = step;
    const invokeUntil = step + 200;
    let probe: { index: number; leader: NodeId } | undefined;
    let done = false;
    for (; step < livenessStart + livenessBound; step++) {
      c.now = step;
      stepOnce(c, step < invokeUntil);
      if (step % 50 === 0) c.checkLogs();
      if (step < invokeUntil) continue;
      if (probe === undefined) {
        if (converged(c)) {
          const l = c.leader()!;
          try {
            probe = { index: l.node.propose(new TextEncoder().encode(JSON.stringify({ id: 'probe', input: { op: 'put', key: 'probe', value: 0 } }))), leader: l.id };
          } catch {
            // Leadership is moving (a transfer finishing); try again next step.
          }
        }
      } else if (converged(c) && c.leader()!.applied >= probe.index) {
        done = true;
        break;
      }
    }
    if (!done) {
      const l = c.leader();
      throw new Error(
        `liveness: no convergence within ${livenessBound} steps after faults stopped ` +
          `(leader ${l?.id ?? 'none'}, term ${l?.node.term ?? '-'}, probe ${probe ? `at ${probe.index}` : 'not proposed'}, ` +
          `clients idle ${c.clientsIdle()}, ` +
          `nodes ${[...c.nodes.values()].map((n) => `${n.id}:${n.decommissioned ? 'gone' : n.up ? `${n.node.role[0]}${n.node.term}/${n.applied}/${n.node.commitIndex}/${n.node.lastIndex}` : 'down'}`).join(' ')})`,
      );
    }
    if (c.livenessTimeouts > 0) {
      throw new Error(`liveness: ${c.livenessTimeouts} operations invoked after the faults stopped were never answered: ${c.timeoutNotes.join('; ')}`);
    }
    c.checkLogs();
  } catch (err) {
    restore();
    const e = err as Error;
    throw new Error(`raft simulation failed at step ${step}: ${e.message}\nreproduce with --seed ${seed}`, { cause: e });
  }
  restore();

  const ops = operationsOf(c.history);
  const lin = checkLinearizable(kvModel, ops);
  if (lin.linearizable === false) {
    const lines = lin.partition.map((op) => kvModel.describe!(op));
    throw new Error(
      `history is not linearizable (${lin.partition.length} operations on one key, ` +
        `${lin.longestPrefix.length} linearized before the search got stuck):\n  ${lines.slice(0, 60).join('\n  ')}` +
        `\nreproduce with --seed ${seed}`,
    );
  }

  return {
    seed,
    voters: params.voters,
    profile: faults.profile,
    steps: step,
    livenessSteps: step - safetySteps,
    leaders: c.safety.leadersSeen,
    maxTerm: c.safety.maxTerm,
    committed: c.safety.maxCommitted,
    operations: ops.length,
    network: { sent: c.network.stats.sent, lost: c.network.stats.lost, duplicated: c.network.stats.duplicated, cut: c.network.stats.cut },
    cluster: c.stats,
    linearizable: lin.linearizable,
  };
}

export async function run(opts: { seeds: number; seed?: number }): Promise<unknown> {
  const seeds = opts.seed !== undefined ? [opts.seed] : Array.from({ length: opts.seeds }, (_, i) => i + 1);
  const started = performance.now();
  let steps = 0;
  let operations = 0;
  // Seeds whose history was too tangled to decide within the checker's budget.
  const unknown: number[] = [];
  let maxTerm = 0;
  let leaders = 0;
  const totals: Record<string, number> = {};
  const single: SeedResult[] = [];
  const failures: { seed: number; message: string }[] = [];
  for (const s of seeds) {
    let r: SeedResult;
    try {
      r = runSeed(s);
    } catch (err) {
      failures.push({ seed: s, message: (err as Error).message });
      continue;
    }
    steps += r.steps;
    operations += r.operations;
    leaders += r.leaders;
    maxTerm = Math.max(maxTerm, r.maxTerm);
    if (r.linearizable === 'unknown') unknown.push(s);
    for (const [k, v] of Object.entries(r.cluster)) {
      if (typeof v === 'number') totals[k] = (totals[k] ?? 0) + v;
      else for (const [code, n] of Object.entries(v as Record<string, number>)) totals[code] = (totals[code] ?? 0) + n;
    }
    if (opts.seed !== undefined) single.push(r);
  }
  if (failures.length > 0) {
    throw new Error(
      `${failures.length} of ${seeds.length} seeds failed: ${failures.map((f) => f.seed).join(', ')}\n` +
        failures.map((f) => `seed ${f.seed}: ${f.message}`).join('\n'),
    );
  }
  return {
    seeds: seeds.length,
    steps,
    operations,
    leadersElected: leaders,
    maxTerm,
    linearizabilityUnknown: unknown,
    totals,
    seconds: Math.round((performance.now() - started) / 100) / 10,
    ...(single.length > 0 ? { result: single[0] } : {}),
  };
}
