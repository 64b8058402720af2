// What `cairn job wait` prints while it waits: new conditions, a changed reason within a
// phase (not the retry countdown), and the replicas running.

import { describe, expect, it } from 'vitest';
import { jobProgress } from '../../bin/commands/jobs/wait-progress.ts';
import type { JobPhase, JobView, ReplicaStatus } from '../../shared/jobs/model.ts';

function view(phase: JobPhase, message: string, conditions: [JobPhase, string, string][], running = 0, replicas = 2): JobView {
  const reps: ReplicaStatus[] = Array.from({ length: replicas }, (_, i) => ({ group: 'worker', index: i, state: i < running ? 'Running' : 'Pending', restarts: 0, ports: [] }) as ReplicaStatus);
  return {
    name: 'pt', kind: 'pytorch', phase, message, restarts: 0, ignored: [], createdAtMs: 0, replicas: reps,
    conditions: conditions.map(([type, reason, m], i) => ({ type, reason, message: m, atMs: i })),
    spec: {} as JobView['spec'],
  };
}

describe('jobProgress', () => {
  const created: [JobPhase, string, string] = ['Created', 'JobCreated', 'job pt was submitted'];
  const queued: [JobPhase, string, string] = ['Queued', 'WaitingForGang', 'waiting to place its gang of 2 replicas'];

  it('first look: where the job stands and why', () => {
    const v = view('Queued', 'its gang of 2 replicas does not fit: needs cpus 1; /dev/web holds cpus 0.2 there; gathering offers', [created, queued]);
    expect(jobProgress(undefined, v)).toEqual([
      'pt: Queued (WaitingForGang): waiting to place its gang of 2 replicas',
      'pt: Queued: its gang of 2 replicas does not fit: needs cpus 1; /dev/web holds cpus 0.2 there; gathering offers',
    ]);
  });

  it('says a changed reason, but not the retry countdown of the same one', () => {
    const a = view('Queued', 'its gang of 2 replicas does not fit: X; gathering offers', [created, queued]);
    const b = view('Queued', 'its gang of 2 replicas does not fit: X; trying again in 8000 ms (attempt 3)', [created, queued]);
    const c = view('Queued', 'its gang of 2 replicas does not fit: Y; trying again in 8000 ms (attempt 4)', [created, queued]);
    expect(jobProgress(a, b)).toEqual([]);
    expect(jobProgress(b, c)).toEqual(['pt: Queued: its gang of 2 replicas does not fit: Y; trying again in 8000 ms (attempt 4)']);
  });

  it('says each new condition and the replicas running', () => {
    const a = view('Queued', 'x', [created, queued]);
    const b = view('Running', '2 of 2 replicas running', [created, queued, ['Running', 'GangRunning', '2 of 2 replicas running']], 2);
    expect(jobProgress(a, b)).toEqual(['pt: Running (GangRunning): 2 of 2 replicas running', 'pt: replicas 2/2 running']);
    expect(jobProgress(b, view('Running', '2 of 2 replicas running', b.conditions.map((c) => [c.type, c.reason, c.message]), 1))).toEqual(['pt: replicas 1/2 running']);
  });
});
