// The work the sharing simulation runs: agents with GPUs, six frameworks of the three
// priority classes in flat and hierarchical roles, the quotas an operator sets before any of
// them subscribes, and seeded arrivals of gang jobs. Drawn from the seed so that sizes follow
// the cluster: a gang always fits on the agents and within every limit above its role, so each
// one can run eventually, and the research load alone is more than the cluster holds, so the
// higher classes have to preempt to get in.

import type { SeededRandom } from '../../shared/random.ts';
import type { QuotaRecord } from '../../master/registry/commands.ts';

export type ClassName = 'production' | 'iteration' | 'research';

/** One gang job: `members` tasks of `member` each, all placed at once or none. */
export interface GangSpec {
  name: string;
  /** When it is submitted, from the start of the run. */
  atMs: number;
  members: number;
  /** One member's resources, as Resources.parse reads them. */
  member: string;
  /** How long each member runs once launched. */
  durationMs: number;
  /** false: every member carries the label cairn.preemptible=false. */
  preemptible: boolean;
}

export interface FrameworkPlan {
  name: string;
  priorityClass: ClassName;
  role: string;
  gangs: GangSpec[];
}

export interface SharingWorkload {
  /** Each agent's resources, as Resources.parse reads them. */
  agents: string[];
  frameworks: FrameworkPlan[];
  /** Set through the operator API before any framework subscribes. */
  quotas: QuotaRecord[];
  /** How long a gang waits without fitting before its framework sends REQUEST. */
  requestAfterMs: number;
  /** How a task stops on SIGTERM: within promptMs, or, with the chance wholeGrace, only when the grace runs out. */
  stopping: { promptMs: [number, number]; wholeGrace: number };
}

/** Gangs arrive over this much of the run; then arrivals stop and everything must finish. */
export const ARRIVALS_MS = 60_000;
const FIRST_ARRIVAL_MS = 3_000;

interface Shape {
  count: [number, number];
  members: [number, number];
  gpus: readonly number[];
  /** Chance that a member needs no GPU at all. */
  cpuOnly: number;
  durationMs: [number, number];
  /** Chance that a gang may never be preempted. */
  pinned: number;
  /** The most GPUs one gang may hold, as a fraction of the cluster's. */
  maxShare: number;
}

const SHAPES: Record<ClassName, Shape> = {
  production: { count: [3, 6], members: [1, 4], gpus: [2, 4, 8], cpuOnly: 0, durationMs: [8_000, 25_000], pinned: 0, maxShare: 0.5 },
  iteration: { count: [4, 8], members: [1, 3], gpus: [1, 2, 4], cpuOnly: 0.1, durationMs: [8_000, 25_000], pinned: 0, maxShare: 0.3 },
  research: { count: [6, 12], members: [1, 4], gpus: [1, 2], cpuOnly: 0.2, durationMs: [20_000, 60_000], pinned: 0.25, maxShare: 0.3 },
};

const FRAMEWORKS: readonly { name: string; priorityClass: ClassName; role: string }[] = [
  { name: 'prod', priorityClass: 'production', role: 'prod' },
  { name: 'iter-a', priorityClass: 'iteration', role: 'team/a' },
  { name: 'iter-b', priorityClass: 'iteration', role: 'team/b' },
  { name: 'res-a', priorityClass: 'research', role: 'team/a' },
  { name: 'res-g', priorityClass: 'research', role: 'lab/g' },
  { name: 'res-h', priorityClass: 'research', role: 'lab/h' },
];

/** A member of `gpus` GPUs takes a matching share of an agent's cpus and memory (agents: 4 cpus and 16 GB per GPU). */
function memberOf(gpus: number): string {
  return gpus === 0 ? 'cpus:2;mem:4096' : `cpus:${gpus * 3};mem:${gpus * 12_000};gpus:${gpus}`;
}

/**
 * The quotas, in GPUs of the cluster's `g`: a limit on production; a limit on `team` with
 * lower limits on its two children, one of which is also guaranteed two GPUs; a guarantee on
 * `lab` covering both research roles under it.
 */
function quotasFor(g: number): QuotaRecord[] {
  return [
    { role: 'prod', limit: { gpus: Math.ceil(g * 0.75) } },
    { role: 'team', limit: { gpus: Math.ceil(g * 0.6) } },
    { role: 'team/a', limit: { gpus: Math.ceil(g * 0.4) } },
    { role: 'team/b', guarantee: { gpus: 2 }, limit: { gpus: Math.ceil(g * 0.4) } },
    { role: 'lab', guarantee: { gpus: Math.max(2, Math.floor(g / 8)) } },
  ];
}

/** The most GPUs a gang of `role` may hold at once: the least limit on its way up. */
function ceilingOf(role: string, quotas: readonly QuotaRecord[], g: number): number {
  let cap = g;
  for (const q of quotas) {
    const gpus = q.limit?.gpus;
    if (gpus !== undefined && (role === q.role || role.startsWith(`${q.role}/`))) cap = Math.min(cap, gpus);
  }
  return cap;
}

function gangsFor(rng: SeededRandom, plan: { name: string; priorityClass: ClassName; role: string }, maxAgentGpus: number, ceiling: number, g: number): GangSpec[] {
  const shape = SHAPES[plan.priorityClass];
  const limit = Math.min(ceiling, Math.max(1, Math.floor(g * shape.maxShare)));
  const out: GangSpec[] = [];
  const count = rng.range(...shape.count);
  for (let i = 0; i < count; i++) {
    const gpus = rng.chance(shape.cpuOnly) ? 0 : rng.pick(shape.gpus.filter((n) => n <= Math.min(maxAgentGpus, limit)));
    const most = gpus === 0 ? shape.members[1] : Math.max(1, Math.min(shape.members[1], Math.floor(limit / gpus)));
    out.push({
      name: `${plan.name}-g${i}`,
      atMs: rng.range(FIRST_ARRIVAL_MS, ARRIVALS_MS),
      members: rng.range(Math.min(shape.members[0], most), most),
      member: memberOf(gpus),
      durationMs: rng.range(...shape.durationMs),
      preemptible: !rng.chance(shape.pinned),
    });
  }
  return out.sort((a, b) => a.atMs - b.atMs);
}

/** The seed's cluster and work. */
export function sharingWorkload(rng: SeededRandom): SharingWorkload {
  const agents: string[] = [];
  const count = rng.range(4, 7);
  let g = 0;
  let maxAgentGpus = 0;
  for (let i = 0; i < count; i++) {
    const gpus = rng.pick([4, 8]);
    g += gpus;
    maxAgentGpus = Math.max(maxAgentGpus, gpus);
    agents.push(`cpus:${gpus * 4};mem:${gpus * 16_384};gpus:${gpus}`);
  }
  const quotas = quotasFor(g);
  const frameworks = FRAMEWORKS.map((f) => ({ ...f, gangs: gangsFor(rng, f, maxAgentGpus, ceilingOf(f.role, quotas, g), g) }));
  return { agents, frameworks, quotas, requestAfterMs: 2_000, stopping: { promptMs: [50, 500], wholeGrace: 0.2 } };
}
