// Gossip membership at 100 and 1,000 simulated members (test/sim/gossip-network.ts: seeded
// loss 1%, one-way delay 1-20 ms, default LAN configuration: 1 s probes, 200 ms gossip):
// - detection: 20 crashes 10 s apart; crash to first suspicion, and to the last survivor
//   declaring the member dead;
// - spread: one newcomer's join to every member knowing it;
// - formation: members joining at 50/s through one random member each, last join to every view
//   complete.
// Times are simulated milliseconds (median and p99 over the samples); wallMs is what the
// simulation took to run here.

import { detection, joins, spread } from '../test/sim/gossip.sim.ts';

const SEED = 1;

function one(members: number): unknown {
  const d = detection({ seed: SEED, members, crashes: 20, crashEveryMs: 10_000 });
  const s = spread({ seed: SEED, members, joins: 20 });
  const f = joins({ seed: SEED, members, joinsPerSecond: 50 });
  return {
    members,
    detection: {
      crashes: d.crashes,
      firstDetectionMedianMs: d.firstDetectionMs.median,
      firstDetectionP99Ms: d.firstDetectionMs.p99,
      firstDetectionMeanPeriods: d.firstDetectionPeriods.mean,
      allDeadMedianMs: d.allDeadMs.median,
      allDeadP99Ms: d.allDeadMs.p99,
      suspicionMinMs: d.suspicionMinMs,
      suspicionMaxMs: d.suspicionMaxMs,
    },
    spread: { joins: s.joins, everyoneKnowsMedianMs: s.everyoneKnowsMs.median, everyoneKnowsP99Ms: s.everyoneKnowsMs.p99 },
    formation: { joinsPerSecond: f.joinsPerSecond, convergedAfterLastJoinMs: f.convergedAfterLastJoinMs },
    wallMs: d.wallMs + s.wallMs + f.wallMs,
  };
}

export async function run(): Promise<unknown> {
  return { bench: 'gossip', seed: SEED, lossRate: 0.01, results: [one(100), one(1_000)] };
}

if (import.meta.url === `file://${process.argv[1]}`) console.log(JSON.stringify(await run(), null, 2));
