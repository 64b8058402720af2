// The whole-cluster simulation with frameworks of three priority classes sharing agents with
// GPUs under quotas (cluster-sharing.ts): seeded arrivals of gang jobs, higher classes asking
// for room with REQUEST, the leader preempting lower classes for them. Checked every 100 ms
// of simulated time (sharing-invariants.ts): no role's subtree ever holds more than its
// limit; no preemption takes a task of an equal or higher class, of its own framework, or
// labelled non-preemptible, no task is preempted twice and no two frameworks preempt each
// other; no gang of a higher class waits past a stated bound while preempting lower-class
// tasks would make room for it; a committed preemption's victims end. Once arrivals stop,
// every gang must finish. With `faults`, the safety phase injects the cluster simulation's
// faults (leader and agent crashes, partitions, lost datagrams); waits are judged once they stop.
//
// `npm run sim -- sharing --seeds N` runs each seed calm and with faults; a failing seed says
// `reproduce with --seed N` (and whether it had faults).

import { PriorityClasses } from '../../shared/sharing/priority-classes.ts';
import { runSeed, type SeedResult } from './cluster.sim.ts';
import type { SharingBug } from './cluster-sharing.ts';
import { ARRIVALS_MS, sharingWorkload } from './sharing-workload.ts';

/** Long enough for the research backlog left when arrivals stop, preempted reruns included. */
const DRAIN_MS = 400_000;

/** One seed of the sharing workload; throws with `reproduce with --seed N` when an invariant breaks. */
export function runSharingSeed(seed: number, opts: { plant?: SharingBug; trace?: string; faults?: boolean } = {}): SeedResult {
  return runSeed(seed, {
    sharing: { workload: sharingWorkload, faults: opts.faults === true, ...(opts.plant ? { plant: opts.plant } : {}) },
    safetyMs: ARRIVALS_MS + 5_000,
    livenessMs: DRAIN_MS,
    // The planted misconfiguration: masters that rank research above iteration.
    ...(opts.plant === 'classes-misordered' ? { config: { priorityClasses: new PriorityClasses(['production', 'research', 'iteration']) } } : {}),
    ...(opts.trace !== undefined ? { trace: opts.trace } : {}),
  });
}

/** Every seed runs twice: on a calm network with every check on, then with the cluster simulation's faults. */
export async function run(opts: { seeds: number; seed?: number; trace?: string }): Promise<unknown> {
  const seeds = opts.seed !== undefined ? [opts.seed] : Array.from({ length: opts.seeds }, (_, i) => i + 1);
  const started = performance.now();
  const failed: { seed: number; faults: boolean; error: string }[] = [];
  const totals = { gangs: 0, finished: 0, preemptions: 0, victims: 0, guaranteeReclaims: 0, requests: 0, requeued: 0, failures: 0 };
  const longestWaitMs: Record<string, number> = {};
  let longestStarvedMs = 0;
  let leaderships = 0;
  for (const seed of seeds) {
    for (const faults of [false, true]) {
      try {
        const r = runSharingSeed(seed, { faults, ...(opts.trace !== undefined ? { trace: opts.trace } : {}) });
        const s = r.sharing!;
        leaderships += r.leaderships;
        for (const k of Object.keys(totals) as (keyof typeof totals)[]) totals[k] += s[k];
        for (const [c, ms] of Object.entries(s.longestWaitMs)) longestWaitMs[c] = Math.max(longestWaitMs[c] ?? 0, ms);
        longestStarvedMs = Math.max(longestStarvedMs, s.longestStarvedMs);
      } catch (err) {
        failed.push({ seed, faults, error: (err as Error).message });
      }
    }
  }
  const summary = { seeds: seeds.length, runs: seeds.length * 2, failed: failed.length, leaderships, ...totals, longestWaitMs, longestStarvedMs, wallMs: Math.round(performance.now() - started) };
  if (failed.length > 0) {
    throw new Error(`${failed.length} of ${seeds.length * 2} runs failed (${JSON.stringify(summary)}):\n${failed.map((f) => `seed ${f.seed}${f.faults ? ' with faults' : ''}: ${f.error}`).join('\n')}`);
  }
  return { ...summary, ok: true };
}
