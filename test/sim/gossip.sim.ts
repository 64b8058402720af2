// Gossip (SWIM + Lifeguard) simulations: `npm run sim -- gossip [--seeds N] [--seed S]`.
//
// Per seed:
// - detection: a formed cluster of 1,000 members with seeded loss and delay; members crash one
//   after another. Each must be suspected, then declared dead by every other member. Reports
//   the time to first detection (first suspicion), first and all-members death, and checks them
//   against SWIM's bound (first detection in about e/(e-1) ≈ 1.6 periods in expectation, then
//   the suspicion timeout).
// - lifeguard: 10% packet loss and one slow member (stalls of up to 14 s) for 10 minutes: no
//   healthy member may be declared dead, by anyone. Then the same seed with SWIM's fixed
//   suspicion timeout, local health awareness on and off, to show what it buys: with it off
//   the slow member declares healthy members dead; with it on it must not. (With fixed timeouts
//   a healthy member that missed a refutation may still time out on its own now and then; that
//   is what the dynamic suspicion of the first run removes.)
// - join: members join one by one through one random member each; every view must converge.
// Invariants are checked on every event: only crashed members are ever declared dead where
// there are no slow members, and views converge once faults stop.
// `--seed S` alone also runs the lifeguard scenario at 1,000 members (about 100 s).

import { SimNetwork, formedCluster, summary, round, type SimMember, type Stalls } from './gossip-network.ts';
import type { GossipConfigOptions } from '../../shared/gossip/config.ts';
import { defaultGossipConfig } from '../../shared/gossip/config.ts';
import { suspicionTimeoutMs } from '../../shared/gossip/math.ts';
import { randomFloat, randomInt } from '../../shared/random.ts';
import { splitMix32 } from './splitmix32.ts';

const E_OVER_E_MINUS_1 = Math.E / (Math.E - 1);

export class SimFailure extends Error {
  constructor(scenario: string, seed: number, detail: string) {
    super(`gossip ${scenario}: ${detail} (reproduce with --seed ${seed})`);
  }
}

// ---- detection -----------------------------------------------------------------------------

export interface DetectionOptions {
  readonly seed: number;
  readonly members: number;
  readonly crashes: number;
  /** Time between two crashes (default 5 s; 10 s keeps each failure alone, as SWIM's bound assumes). */
  readonly crashEveryMs?: number;
  readonly lossRate?: number;
  readonly delayMs?: { min: number; max: number };
  readonly config?: GossipConfigOptions;
}

export interface DetectionResult {
  members: number;
  crashes: number;
  lossRate: number;
  probeIntervalMs: number;
  /** Crash to the first member suspecting it. */
  firstDetectionMs: ReturnType<typeof summary>;
  firstDetectionPeriods: { mean: number; median: number; p99: number };
  /** Crash to the first member declaring it dead. */
  firstDeadMs: ReturnType<typeof summary>;
  /** Crash to the last live member declaring it dead. */
  allDeadMs: ReturnType<typeof summary>;
  suspicionMinMs: number;
  suspicionMaxMs: number;
  bounds: { firstDetectionMeanPeriods: number; allDeadAfterFirstDetectionMs: number };
  wallMs: number;
}

/**
 * SWIM's expected time to first detection is e/(e-1) periods, counted in synchronous rounds
 * from the start of the round in which the member fails. Here members probe out of phase and
 * crashes fall anywhere in a period, and a probe raises its suspicion at the end of its own
 * period: the mean is checked against e/(e-1) + 1 periods (allowing two standard errors). The 99th percentile is reported, not
 * bounded: the probe order is a shuffled round-robin, whose gaps are exponential (p99 about
 * 1 + ln(100) periods for a lone failure) and whose worst case is SWIM's 2n - 1 periods.
 * Every survivor must have declared the member dead within the longest suspicion after the
 * first detection, plus two seconds for the news to spread.
 */
export function detection(o: DetectionOptions): DetectionResult {
  const t0 = performance.now();
  const config = { ...defaultGossipConfig(), ...o.config };
  const net = new SimNetwork({ seed: o.seed, lossRate: o.lossRate ?? 0.01, delayMs: o.delayMs ?? { min: 1, max: 20 }, config: o.config });
  const members = formedCluster(net, o.members);
  const crashedAt = new Map<string, number>();
  const firstSuspect = new Map<string, number>();
  const firstDead = new Map<string, number>();
  const lastDead = new Map<string, number>();
  const deadBy = new Map<string, number>();
  net.onEvent = (observer, e, now) => {
    const name = e.member.name;
    const at = crashedAt.get(name);
    if (e.type === 'dead' || e.type === 'leave') {
      if (at === undefined) throw new SimFailure('detection', o.seed, `${observer.name} declared live member ${name} ${e.type} at ${round(now)} ms`);
      if (!firstDead.has(name)) firstDead.set(name, now - at);
      lastDead.set(name, now - at);
      deadBy.set(name, (deadBy.get(name) ?? 0) + 1);
    } else if (e.type === 'suspect' && at !== undefined && !firstSuspect.has(name)) {
      firstSuspect.set(name, now - at);
    }
  };

  // Let the cluster settle (staggered probe phases), then crash members spread over the ring.
  net.run(5_000);
  const every = o.crashEveryMs ?? 5_000;
  const victims: SimMember[] = [];
  const stride = Math.max(1, Math.floor(o.members / (o.crashes + 1)));
  for (let i = 0; i < o.crashes; i++) {
    const v = members[(i + 1) * stride];
    victims.push(v);
    // A random instant within the period, so crashes are not in phase with anyone's probes.
    net.run(net.nowMs + every - 1_000 + Math.floor(randomFloat(net.random) * 1_000));
    net.crash(v);
    crashedAt.set(v.name, net.nowMs);
  }
  const n = o.members;
  const minMs = suspicionTimeoutMs(config.suspicionMult, n, config.probeIntervalMs);
  const maxMs = config.dynamicSuspicion ? config.suspicionMaxTimeoutMult * minMs : minMs;
  // Liveness: faults stop (no more crashes); run until every survivor has declared every
  // victim dead, within the bound.
  const deadline = net.nowMs + maxMs + 30_000;
  const survivors = members.filter((m) => !m.crashed);
  const allDone = (): boolean => victims.every((v) => (deadBy.get(v.name) ?? 0) >= survivors.length);
  while (net.nowMs < deadline && !allDone()) net.run(net.nowMs + 1_000);
  for (const v of victims) {
    const by = deadBy.get(v.name) ?? 0;
    if (by < survivors.length) throw new SimFailure('detection', o.seed, `${v.name} declared dead by ${by} of ${survivors.length} survivors`);
  }
  // Views converged: every survivor sees every survivor alive and every victim dead.
  for (const m of survivors) {
    if (m.node.liveCount() !== survivors.length) {
      throw new SimFailure('detection', o.seed, `${m.name} sees ${m.node.liveCount()} live members, ${survivors.length} are`);
    }
  }

  const period = config.probeIntervalMs;
  const first = victims.map((v) => firstSuspect.get(v.name)!);
  const fd = summary(first);
  const allDead = summary(victims.map((v) => lastDead.get(v.name)!));
  const bounds = {
    firstDetectionMeanPeriods: round(E_OVER_E_MINUS_1 + 1),
    allDeadAfterFirstDetectionMs: maxMs + 2_000,
  };
  // The sample mean of a few dozen crashes wanders: it fails only when it is above the bound by
  // more than two standard errors.
  const sd = Math.sqrt(first.reduce((a, x) => a + (x - fd.mean) ** 2, 0) / Math.max(1, first.length - 1));
  const meanLowMs = fd.mean - (2 * sd) / Math.sqrt(first.length);
  if (meanLowMs / period > bounds.firstDetectionMeanPeriods) {
    throw new SimFailure('detection', o.seed, `mean first detection ${fd.mean} ms (${round(meanLowMs)} ms less two standard errors) is above ${bounds.firstDetectionMeanPeriods} periods`);
  }
  for (const v of victims) {
    const after = lastDead.get(v.name)! - firstSuspect.get(v.name)!;
    if (after > bounds.allDeadAfterFirstDetectionMs) {
      throw new SimFailure('detection', o.seed, `${v.name}: last survivor declared it dead ${after} ms after the first detection`);
    }
  }
  return {
    members: n,
    crashes: o.crashes,
    lossRate: o.lossRate ?? 0.01,
    probeIntervalMs: period,
    firstDetectionMs: fd,
    firstDetectionPeriods: { mean: round(fd.mean / period), median: round(fd.median / period), p99: round(fd.p99 / period) },
    firstDeadMs: summary(victims.map((v) => firstDead.get(v.name)!)),
    allDeadMs: allDead,
    suspicionMinMs: minMs,
    suspicionMaxMs: maxMs,
    bounds,
    wallMs: Math.round(performance.now() - t0),
  };
}

// ---- lifeguard -------------------------------------------------------------------------------

export interface LifeguardOptions {
  readonly seed: number;
  readonly members: number;
  readonly durationMs?: number;
  readonly lossRate?: number;
  readonly config?: GossipConfigOptions;
}

export interface LifeguardResult {
  members: number;
  durationMs: number;
  lossRate: number;
  localHealthAwareness: boolean;
  dynamicSuspicion: boolean;
  /** Healthy members declared dead, counted per observer that declared it. */
  falsePositives: number;
  falsePositivesBySlowMember: number;
  falsePositivesByHealthyMembers: number;
  firstFalsePositives: string[];
  /** Suspicion events about healthy members, per observer (10% loss makes many, all refuted). */
  falseSuspicionEvents: number;
  slowMember: { stalledFraction: number; probes: number; accusations: number; maxHealthScore: number; declaredDeadEvents: number };
  /** From the faults stopping to every view having everyone alive. */
  settledMs: number;
  wallMs: number;
}

/** The slow member's stalls: runs of 0.2-1 s, stalls of 0.3-1.8 s, one in five of 4-14 s. */
export function slowMemberStalls(seed: number, untilMs: number): Stalls {
  const r = splitMix32(seed * 7_919 + 1);
  const stalls: [number, number][] = [];
  let t = 2_000;
  while (t < untilMs) {
    t += 200 + randomFloat(r) * 800;
    const len = randomFloat(r) < 0.2 ? 4_000 + randomFloat(r) * 10_000 : 300 + randomFloat(r) * 1_500;
    stalls.push([t, t + len]);
    t += len;
  }
  return stalls;
}

/**
 * The slow member may stand declared dead when the faults stop; it hears of it through gossip to
 * the dead (30 s) or a reconnection (every 30 s) and refutes.
 */
const LIFEGUARD_SETTLE_MS = 120_000;

export function lifeguard(o: LifeguardOptions): LifeguardResult {
  const t0 = performance.now();
  const durationMs = o.durationMs ?? 600_000;
  const lossRate = o.lossRate ?? 0.1;
  const config = { ...defaultGossipConfig(), ...o.config };
  const net = new SimNetwork({ seed: o.seed, lossRate, delayMs: { min: 1, max: 20 }, config: o.config });
  const members = formedCluster(net, o.members);
  const slow = members[members.length - 1];
  slow.stalls = slowMemberStalls(o.seed, durationMs);
  let bySlow = 0;
  let byHealthy = 0;
  let falseSuspicions = 0;
  let slowDeclaredDead = 0;
  const first: string[] = [];
  net.onEvent = (observer, e, now) => {
    const name = e.member.name;
    if (e.type === 'dead' || e.type === 'leave') {
      if (name === slow.name) {
        slowDeclaredDead++;
        return;
      }
      if (observer === slow) bySlow++;
      else byHealthy++;
      if (first.length < 5) first.push(`${observer.name} declared ${name} ${e.type} at ${round(now / 1000)} s`);
    } else if (e.type === 'suspect' && name !== slow.name) {
      falseSuspicions++;
    }
  };
  let maxHealth = 0;
  net.run(durationMs, () => {
    const h = slow.node.healthScore();
    if (h > maxHealth) maxHealth = h;
  });
  let stalled = 0;
  for (const [a, b] of slow.stalls) stalled += Math.min(b, durationMs) - Math.min(a, durationMs);
  // Liveness: the faults stop (no loss, the slow member keeps up); every view, the slow member
  // included, must converge on everyone alive.
  net.lossRate = 0;
  slow.stalls = [];
  const settleBy = net.nowMs + LIFEGUARD_SETTLE_MS;
  const converged = (): boolean => members.every((m) => m.node.liveCount() === o.members && m.node.stateOf(slow.name) === 'alive');
  while (!converged()) {
    if (net.nowMs >= settleBy) {
      const behind = members.filter((m) => m.node.liveCount() !== o.members).map((m) => `${m.name} sees ${m.node.liveCount()}`);
      throw new SimFailure('lifeguard', o.seed, `views did not converge within ${LIFEGUARD_SETTLE_MS} ms of the faults stopping: ${behind.slice(0, 5).join(', ')}`);
    }
    net.run(net.nowMs + 500);
  }
  const settledMs = Math.round(net.nowMs - durationMs);
  return {
    members: o.members,
    durationMs,
    lossRate,
    localHealthAwareness: config.localHealthAwareness,
    dynamicSuspicion: config.dynamicSuspicion,
    falsePositives: bySlow + byHealthy,
    falsePositivesBySlowMember: bySlow,
    falsePositivesByHealthyMembers: byHealthy,
    firstFalsePositives: first,
    falseSuspicionEvents: falseSuspicions,
    slowMember: {
      stalledFraction: round(stalled / durationMs),
      probes: slow.node.stats.probes,
      accusations: slow.node.stats.suspicionsRaised,
      maxHealthScore: maxHealth,
      declaredDeadEvents: slowDeclaredDead,
    },
    settledMs,
    wallMs: Math.round(performance.now() - t0),
  };
}

// ---- joins -------------------------------------------------------------------------------------

export interface JoinOptions {
  readonly seed: number;
  readonly members: number;
  readonly joinsPerSecond: number;
  readonly lossRate?: number;
  readonly config?: GossipConfigOptions;
}

export interface JoinResult {
  members: number;
  joinsPerSecond: number;
  lossRate: number;
  /** Last join to every member seeing every other alive. */
  convergedAfterLastJoinMs: number;
  wallMs: number;
}

/** Members join one at a time, each through one random member that already joined. */
export function joins(o: JoinOptions): JoinResult {
  const t0 = performance.now();
  const lossRate = o.lossRate ?? 0.01;
  const net = new SimNetwork({ seed: o.seed, lossRate, delayMs: { min: 1, max: 20 }, config: o.config });
  net.onEvent = (observer, e, now) => {
    if (e.type === 'dead' || e.type === 'leave') {
      throw new SimFailure('join', o.seed, `${observer.name} declared ${e.member.name} ${e.type} at ${round(now)} ms; nobody failed`);
    }
  };
  const members = [net.add('m0')];
  for (let i = 1; i < o.members; i++) {
    net.run(net.nowMs + 1_000 / o.joinsPerSecond);
    const via = members[randomInt(net.random, members.length)];
    members.push(net.add(`m${i}`, { join: [via.address] }));
  }
  const lastJoin = net.nowMs;
  const limit = lastJoin + 300_000;
  const converged = (): boolean => members.every((m) => m.node.liveCount() === o.members);
  while (!converged()) {
    if (net.nowMs >= limit) {
      const behind = members.filter((m) => m.node.liveCount() !== o.members).length;
      throw new SimFailure('join', o.seed, `${behind} members still miss someone 300 s after the last join`);
    }
    net.run(net.nowMs + 100);
  }
  return {
    members: o.members,
    joinsPerSecond: o.joinsPerSecond,
    lossRate,
    convergedAfterLastJoinMs: Math.round(net.nowMs - lastJoin),
    wallMs: Math.round(performance.now() - t0),
  };
}

// ---- news spreading -----------------------------------------------------------------------

export interface SpreadResult {
  members: number;
  joins: number;
  lossRate: number;
  /** A newcomer's join to every member knowing it. */
  everyoneKnowsMs: ReturnType<typeof summary>;
  wallMs: number;
}

/** Newcomers join a formed cluster one at a time; how long until every member knows each. */
export function spread(o: { seed: number; members: number; joins: number; lossRate?: number }): SpreadResult {
  const t0 = performance.now();
  const lossRate = o.lossRate ?? 0.01;
  const net = new SimNetwork({ seed: o.seed, lossRate, delayMs: { min: 1, max: 20 } });
  const members = formedCluster(net, o.members);
  const known = new Map<string, number>();
  const done = new Map<string, number>();
  const joinedAt = new Map<string, number>();
  let population = o.members;
  net.onEvent = (observer, e, now) => {
    if (e.type === 'dead' || e.type === 'leave') throw new SimFailure('spread', o.seed, `${e.member.name} declared ${e.type}; nobody failed`);
    if (e.type !== 'join' || !joinedAt.has(e.member.name)) return;
    const n = (known.get(e.member.name) ?? 0) + 1;
    known.set(e.member.name, n);
    // Everyone there when it joined (the newcomer itself excluded) knows it.
    if (n === population - 1 && !done.has(e.member.name)) done.set(e.member.name, now - joinedAt.get(e.member.name)!);
  };
  net.run(5_000);
  for (let i = 0; i < o.joins; i++) {
    const name = `new${i}`;
    const via = members[randomInt(net.random, members.length)];
    joinedAt.set(name, net.nowMs);
    members.push(net.add(name, { join: [via.address] }));
    population++;
    // Alone in the cluster as news, so each figure is one join's spread.
    const start = net.nowMs;
    while (!done.has(name) && net.nowMs < start + 120_000) net.run(net.nowMs + 100);
    if (!done.has(name)) throw new SimFailure('spread', o.seed, `${name} known by ${known.get(name) ?? 0} of ${population - 1} after 120 s`);
    net.run(net.nowMs + 2_000);
  }
  return {
    members: o.members,
    joins: o.joins,
    lossRate,
    everyoneKnowsMs: summary([...done.values()]),
    wallMs: Math.round(performance.now() - t0),
  };
}

// ---- runner ------------------------------------------------------------------------------------

/** Lifeguard's ablation on one seed: SWIM's fixed suspicion timeout, local health on and off. */
export function lifeguardAblation(seed: number, members: number): { on: LifeguardResult; off: LifeguardResult } {
  return {
    on: lifeguard({ seed, members, config: { dynamicSuspicion: false } }),
    off: lifeguard({ seed, members, config: { dynamicSuspicion: false, localHealthAwareness: false } }),
  };
}

export async function run(opts: { seeds: number; seed?: number }): Promise<unknown> {
  const seeds = opts.seed !== undefined ? [opts.seed] : Array.from({ length: opts.seeds }, (_, i) => i + 1);
  const results: unknown[] = [];
  let ablationOffFalsePositives = 0;
  for (const seed of seeds) {
    const d = detection({ seed, members: 1_000, crashes: 10 });
    const lg = lifeguard({ seed, members: 100 });
    if (lg.falsePositives > 0) throw new SimFailure('lifeguard', seed, `healthy members declared dead: ${lg.firstFalsePositives.join('; ')}`);
    const ablation = lifeguardAblation(seed, 100);
    if (ablation.on.falsePositivesBySlowMember > 0) {
      throw new SimFailure('lifeguard', seed, `with fixed suspicion timeouts and local health on, the slow member: ${ablation.on.firstFalsePositives.join('; ')}`);
    }
    ablationOffFalsePositives += ablation.off.falsePositivesBySlowMember;
    const j = joins({ seed, members: 1_000, joinsPerSecond: 50 });
    const big = opts.seed !== undefined ? lifeguard({ seed, members: 1_000 }) : undefined;
    if (big !== undefined && big.falsePositives > 0) {
      throw new SimFailure('lifeguard', seed, `1,000 members: healthy members declared dead: ${big.firstFalsePositives.join('; ')}`);
    }
    results.push({
      seed,
      detection: {
        firstDetectionMs: d.firstDetectionMs, firstDetectionPeriods: d.firstDetectionPeriods,
        firstDeadMs: d.firstDeadMs, allDeadMs: d.allDeadMs, suspicionMinMs: d.suspicionMinMs,
      },
      lifeguard: { falsePositives: lg.falsePositives, falseSuspicionEvents: lg.falseSuspicionEvents, slowMember: lg.slowMember, settledMs: lg.settledMs },
      lifeguard1000: big,
      fixedSuspicionTimeout: {
        localHealthOn: {
          bySlowMember: ablation.on.falsePositivesBySlowMember,
          byHealthyMembers: ablation.on.falsePositivesByHealthyMembers,
          slowAccusations: ablation.on.slowMember.accusations,
        },
        localHealthOff: {
          bySlowMember: ablation.off.falsePositivesBySlowMember,
          byHealthyMembers: ablation.off.falsePositivesByHealthyMembers,
          slowAccusations: ablation.off.slowMember.accusations,
        },
      },
      join: { convergedAfterLastJoinMs: j.convergedAfterLastJoinMs },
    });
  }
  return { seeds: seeds.length, fixedTimeoutLocalHealthOffSlowMemberFalsePositives: ablationOffFalsePositives, results };
}
