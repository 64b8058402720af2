// How long one full allocation cycle takes: every agent free, offered to frameworks in 10 roles.
// After each measured cycle all offers are given back (not timed) so the next cycle offers
// everything again. Reports the median and p90 over the repetitions, in milliseconds.

import { performance } from 'node:perf_hooks';
import { Allocator } from '../master/allocator/allocator.ts';
import { Resources } from '../shared/resources.ts';

const AGENT = Resources.parse('cpus:32;mem:262144;disk:1000000;ports:[31000-32000]');
const ROLES = 10;
const WARMUP = 3;
const REPETITIONS = 15;

function percentile(sorted: number[], p: number): number {
  const i = Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1);
  return sorted[Math.max(0, i)];
}

function round(ms: number): number {
  return Math.round(ms * 1000) / 1000;
}

function measure(agents: number, frameworks: number): { agents: number; frameworks: number; medianMs: number; p90Ms: number; offersPerCycle: number } {
  const a = new Allocator({ roleWeights: { role0: 2 } });
  for (let i = 0; i < agents; i++) a.addAgent(`agent-${i}`, AGENT);
  for (let i = 0; i < frameworks; i++) a.addFramework(`framework-${i}`, `role${i % ROLES}`);
  const times: number[] = [];
  let offersPerCycle = 0;
  for (let rep = 0; rep < WARMUP + REPETITIONS; rep++) {
    const now = rep * 1000;
    const t0 = performance.now();
    const offers = a.allocate(now);
    const t1 = performance.now();
    if (rep >= WARMUP) times.push(t1 - t0);
    offersPerCycle = offers.length;
    for (const o of offers) a.recoverResources(o.frameworkId, o.agentId, o.resources, 0, now);
  }
  times.sort((x, y) => x - y);
  return { agents, frameworks, medianMs: round(percentile(times, 50)), p90Ms: round(percentile(times, 90)), offersPerCycle };
}

export async function run(): Promise<unknown> {
  const results = [];
  for (const agents of [1_000, 10_000]) {
    for (const frameworks of [10, 100, 1_000]) results.push(measure(agents, frameworks));
  }
  return { bench: 'allocator', repetitions: REPETITIONS, results };
}

if (import.meta.url === `file://${process.argv[1]}`) console.log(JSON.stringify(await run(), null, 2));
