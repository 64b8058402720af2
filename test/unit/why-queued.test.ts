// Why a queued gang waits: what is short on the agent it misses by the least, who holds it
// there, and whether the waiting work's class may preempt them.

import { describe, expect, it } from 'vitest';
import { explainQueued, type RoomAgent, type RoomHolder, type WaiterClass } from '../../shared/sdk/why-queued.ts';
import { neverFitsAnyAgent } from '../../shared/sdk/never-fits.ts';
import { PriorityClasses } from '../../shared/sharing/priority-classes.ts';

const classes = new PriorityClasses();
const as = (name: string): WaiterClass => ({ name, rank: (c) => classes.rank(c) });

function holder(name: string, resources: string, extra: Partial<RoomHolder> = {}): RoomHolder {
  return { name, priorityClass: 'research', preemptible: true, resources, ...extra };
}

function agent(hostname: string, resources: string, holders: RoomHolder[], available = true): RoomAgent {
  return { id: `id-${hostname}`, hostname, resources, available, holders };
}

describe('explainQueued', () => {
  it('names what is short, by how much, who holds it, and that the same class may not preempt it', () => {
    const agents = [agent('small', 'cpus:1;mem:1024', [holder('/dev/web', 'cpus:0.2;mem:32')])];
    const gang = [{ label: 'master-0', cpus: 0.5, mem: 64 }, { label: 'worker-0', cpus: 0.5, mem: 64 }];
    expect(explainQueued(gang, agents, as('research'))).toBe(
      "worker-0 needs cpus 0.5; the best agent, small, has cpus 0.3 free after the gang's other replicas; /dev/web holds cpus 0.2 there; research class may preempt it: no (it is research class too)",
    );
  });

  it('a single task is not named; a higher class may preempt a lower one, never one marked not preemptible', () => {
    const agents = [agent('a', 'cpus:2;mem:1024', [holder('/dev/web', 'cpus:0.2;mem:32')])];
    expect(explainQueued([{ label: 'x', cpus: 2, mem: 64 }], agents, as('production'))).toBe(
      'needs cpus 2; the best agent, a, has cpus 1.8 free; /dev/web holds cpus 0.2 there; production class may preempt it: yes',
    );
    const pinned = [agent('a', 'cpus:2;mem:1024', [holder('/dev/web', 'cpus:0.2;mem:32', { preemptible: false })])];
    expect(explainQueued([{ label: 'x', cpus: 2, mem: 64 }], pinned, as('production'))).toMatch(/may preempt it: no \(it is not preemptible\)$/);
    const higher = [agent('a', 'cpus:2;mem:1024', [holder('/dev/web', 'cpus:0.2;mem:32', { priorityClass: 'production' })])];
    expect(explainQueued([{ label: 'x', cpus: 2, mem: 64 }], higher, as('research'))).toMatch(/research class may preempt it: no \(it is production class, higher\)$/);
  });

  it('picks the agent the task misses by the least, and groups an app\'s tasks, largest holder first', () => {
    const agents = [
      agent('far', 'cpus:4;mem:4096', [holder('job big', 'cpus:3.7;mem:100')]),
      agent('near', 'cpus:2;mem:4096', [holder('/web', 'cpus:0.3;mem:10'), holder('/web', 'cpus:0.3;mem:10'), holder('/db', 'cpus:0.9;mem:10', { priorityClass: 'iteration' }), holder('/mem-only', 'mem:100')]),
    ];
    expect(explainQueued([{ label: 'x', cpus: 1, mem: 64 }], agents, as('iteration'))).toBe(
      'needs cpus 1; the best agent, near, has cpus 0.5 free; /db holds cpus 0.9, /web holds cpus 0.6 (2 tasks) there; iteration class may preempt them: only /web',
    );
  });

  it('names every short resource, and ports', () => {
    const agents = [agent('a', 'cpus:1;mem:256;ports:[31000-31001]', [holder('/p', 'cpus:0.5;mem:200;ports:[31000-31001]')])];
    expect(explainQueued([{ label: 'x', cpus: 0.5, mem: 128, ports: 1 }], agents, as('research'))).toBe(
      'needs mem 128 MiB and ports 1; the best agent, a, has mem 56 MiB and ports 0 free; /p holds mem 200 MiB and ports 2 there; research class may preempt it: no (it is research class too)',
    );
  });

  it('counts an agent whose holders claim more than its total as having nothing of it free', () => {
    const agents = [agent('a', 'cpus:1;mem:256', [holder('/w', 'cpus:0.8;mem:32'), holder('/v', 'cpus:0.8;mem:32')])];
    expect(explainQueued([{ label: 'x', cpus: 0.5, mem: 64 }], agents, as('research'))).toBe(
      'needs cpus 0.5; the best agent, a, has cpus 0 free; /v holds cpus 0.8, /w holds cpus 0.8 there; research class may preempt them: no (none is of a lower class and preemptible)',
    );
  });

  it('says nothing when the gang fits in what is free, when no available agent could ever hold it, or on unavailable agents', () => {
    const agents = [agent('a', 'cpus:2;mem:1024', [holder('/w', 'cpus:1;mem:32')])];
    expect(explainQueued([{ label: 'x', cpus: 1, mem: 64 }], agents, as('research'))).toBeUndefined();
    expect(explainQueued([{ label: 'x', cpus: 4, mem: 64 }], agents, as('research'))).toBeUndefined();
    expect(explainQueued([{ label: 'x', cpus: 2, mem: 64 }], [agent('a', 'cpus:2;mem:1024', [holder('/w', 'cpus:1;mem:32')], false)], as('research'))).toBeUndefined();
  });
});

describe('neverFitsAnyAgent', () => {
  const agents = [
    { id: 'a1', hostname: 'small', resources: 'cpus:1;mem:512;ports:[31000-31009]' },
    { id: 'a2', hostname: 'big', resources: 'cpus:2;mem:1024;ports:[31000-31009]' },
  ];

  it('names the largest agent and its size when a task is bigger than every agent', () => {
    expect(neverFitsAnyAgent({ cpus: 4, mem: 256 }, agents)).toBe('needs cpus 4, mem 256 MiB, more than any agent has in all: the largest of 2 agents, big (a2), has cpus 2, mem 1024 MiB');
    expect(neverFitsAnyAgent({ cpus: 1, mem: 64, gpus: 1 }, [agents[0]!])).toBe('needs cpus 1, mem 64 MiB, gpus 1, more than any agent has in all: the only agent, small (a1), has cpus 1, mem 512 MiB, gpus 0');
  });

  it('says nothing when some agent could hold it once free, or when no agent is known yet', () => {
    expect(neverFitsAnyAgent({ cpus: 2, mem: 1024, ports: 10 }, agents)).toBeUndefined();
    expect(neverFitsAnyAgent({ cpus: 4, mem: 256 }, [])).toBeUndefined();
  });
});
