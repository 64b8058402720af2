// The whole-cluster simulation with the jobs framework: the production jobs framework, on the
// production framework runtime over the simulated network (cluster-jobs.ts), placing
// gangs through leader crashes, partitions, agent losses, its own crashes, wiped masters and
// wall-clock steps of the masters it runs on, with the invariants "no replica index of a job runs twice
// at once" and "no job fails DeadlineExceeded early" checked at every step, and every job
// ended (succeeded or failed) once the faults stop.
//
// `npm run sim -- jobs --seeds N`; a failing seed says `reproduce with --seed N`.

import { runSeedAsync, type SeedResult } from './cluster.sim.ts';
import type { StoreBug } from './sim-store.ts';

export function runJobsSeed(seed: number, opts: { trace?: string; plant?: StoreBug } = {}): Promise<SeedResult> {
  // Three minutes to settle: a gang restarted up to its backoffLimit, 8 s back-offs apiece,
  // can end only after two (seed 157 settled at 120.7 s, its ps gang's eleventh restart).
  return runSeedAsync(seed, { jobs: true, livenessMs: 180_000, ...(opts.trace !== undefined ? { trace: opts.trace } : {}), ...(opts.plant ? { jobsPlant: opts.plant } : {}) });
}

export async function run(opts: { seeds: number; seed?: number; trace?: string }): Promise<unknown> {
  const seeds = opts.seed !== undefined ? [opts.seed] : Array.from({ length: opts.seeds }, (_, i) => i + 1);
  const started = performance.now();
  const failed: { seed: number; error: string }[] = [];
  const jobs = { succeeded: 0, failed: 0, launches: 0, crashes: 0, restarts: 0 };
  let leaderships = 0;
  for (const seed of seeds) {
    try {
      const r = await runJobsSeed(seed, opts.trace !== undefined ? { trace: opts.trace } : {});
      leaderships += r.leaderships;
      for (const k of Object.keys(jobs) as (keyof typeof jobs)[]) jobs[k] += r.jobs![k];
    } catch (err) {
      failed.push({ seed, error: (err as Error).message });
    }
  }
  const summary = { seeds: seeds.length, failed: failed.length, leaderships, jobs, wallMs: Math.round(performance.now() - started) };
  if (failed.length > 0) throw new Error(`${failed.length} of ${seeds.length} seeds failed (${JSON.stringify(summary)}):\n${failed.map((f) => `seed ${f.seed}: ${f.error}`).join('\n')}`);
  return { ...summary, ok: true };
}
