// The whole-cluster simulation with the services framework: the production framework on the
// production runtime over the simulated network (cluster-services.ts), keeping
// apps at their instance counts through leader crashes, partitions, agent losses, lost and
// duplicated calls and its own crashes, while apps are created, scaled, restarted (rolling)
// and deleted. Checked at every step: no task of it runs twice, launches keep an app within
// Marathon's ceilings, a deployment's kills keep enough instances ready; once the faults stop,
// every app runs its instances and every deployment has finished.
//
// `npm run sim -- services --seeds N`; a failing seed says `reproduce with --seed N`.

import { runSeedAsync, type SeedResult } from './cluster.sim.ts';
import type { ServicesBug } from './cluster-services.ts';

export function runServicesSeed(seed: number, opts: { trace?: string; plant?: ServicesBug } = {}): Promise<SeedResult> {
  return runSeedAsync(seed, { services: true, ...(opts.trace !== undefined ? { trace: opts.trace } : {}), ...(opts.plant ? { servicesPlant: opts.plant } : {}) });
}

export async function run(opts: { seeds: number; seed?: number; trace?: string }): Promise<unknown> {
  const seeds = opts.seed !== undefined ? [opts.seed] : Array.from({ length: opts.seeds }, (_, i) => i + 1);
  const started = performance.now();
  const failed: { seed: number; error: string }[] = [];
  const services = { apps: 0, changes: 0, launches: 0, kills: 0, crashes: 0, rounds: 0 };
  const faults: Record<string, number> = {};
  let leaderships = 0;
  let maxSettleMs = 0;
  for (const seed of seeds) {
    try {
      const r = await runServicesSeed(seed, opts.trace !== undefined ? { trace: opts.trace } : {});
      leaderships += r.leaderships;
      maxSettleMs = Math.max(maxSettleMs, r.settledAfterMs);
      for (const k of Object.keys(services) as (keyof typeof services)[]) services[k] += r.services![k];
      for (const [k, v] of Object.entries(r.faults)) faults[k] = (faults[k] ?? 0) + v;
    } catch (err) {
      failed.push({ seed, error: (err as Error).message });
    }
  }
  const summary = { seeds: seeds.length, failed: failed.length, leaderships, services, faults, maxSettleMs, wallMs: Math.round(performance.now() - started) };
  if (failed.length > 0) throw new Error(`${failed.length} of ${seeds.length} seeds failed (${JSON.stringify(summary)}):\n${failed.map((f) => `seed ${f.seed}: ${f.error}`).join('\n')}`);
  return { ...summary, ok: true };
}
