// The jobs the whole-cluster simulation submits when it runs the jobs framework: two gangs
// that each need 3/4 of the cluster's cpus (so they must run one after the other), a small
// batch job whose failures restart the whole job, a ps-lite gang (a scheduler or server that
// ends restarts the gang), one job larger than any agent (Unschedulable), and one that runs
// until its activeDeadlineSeconds fails it. Drawn from the
// seed: sizes follow the number of agents, submission times are spread over the first 20 s.

import type { SeededRandom } from '../../shared/random.ts';
import type { JobKind, JobSpec, ReplicaGroup, RestartPolicy } from '../../shared/jobs/model.ts';

function group(name: string, replicas: number, cpus: number, restartPolicy: RestartPolicy = 'OnFailure'): ReplicaGroup {
  return { name, replicas, restartPolicy, template: { command: 'true', cpus, memMb: 64, diskMb: 0, gpus: 0, ports: 1, env: {}, volumes: [] } };
}

function job(name: string, kind: JobKind, groups: ReplicaGroup[], more: Partial<JobSpec> = {}): JobSpec {
  const total = groups.reduce((n, g) => n + g.replicas, 0);
  return { name, kind, groups, minAvailable: total, successPolicy: 'Default', failurePolicies: [], backoffLimit: 40, cleanupPolicy: 'All', role: '*', priority: 0, ...more };
}

/** Agents have 2 cpus each (cluster.sim.ts). */
export function jobsWorkload(rng: SeededRandom, agentCount: number): { atMs: number; spec: JobSpec }[] {
  const threeQuarters = Math.ceil(agentCount * 2 * 0.75);
  const specs = [
    job('gang-a', 'batch', [group('worker', threeQuarters, 1)]),
    job('gang-b', 'batch', [group('worker', threeQuarters, 1)]),
    job('small', 'batch', [group('worker', 3, 0.25, 'Never')], { failurePolicies: [{ event: 'TaskFailed', action: 'RestartJob' }] }),
    job('ps', 'pslite', [group('scheduler', 1, 0.25), group('server', 1, 0.25), group('worker', 2, 0.25)], { backoffLimit: 10 }),
    job('huge', 'batch', [group('worker', 2, 3)]),
    // Its task runs until the deadline ends it (cluster.sim.ts lifetimeOf).
    job('deadline', 'batch', [group('worker', 1, 0.25)], { activeDeadlineSeconds: 20 }),
  ];
  return specs.map((spec) => ({ atMs: rng.range(0, 20_000), spec }));
}
