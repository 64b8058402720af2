// The small pure parts of sharing: priority classes (ranks, the default, refusals), the quota
// policy the leader reads (headroom in units, guarantees of a team, what a role may take
// back) and the usage view (subtrees, shares, principals, samples).

import { describe, expect, it } from 'vitest';
import { PriorityClasses } from '../../shared/sharing/priority-classes.ts';
import { compileQuotas } from '../../master/sharing/quota-policy.ts';
import { QuotaTable } from '../../master/sharing/quotas.ts';
import { usageView } from '../../master/sharing/usage-view.ts';
import type { FrameworkRecord, TaskRecord } from '../../master/registry/commands.ts';
import { Resources } from '../../shared/resources.ts';

const R = (s: string) => Resources.parse(s);

describe('priority classes', () => {
  it('ranks highest first, defaults to the lowest, resolves and refuses by name', () => {
    const c = new PriorityClasses();
    expect(c.names).toEqual(['production', 'iteration', 'research']);
    expect([c.rank('production'), c.rank('iteration'), c.rank('research')]).toEqual([2, 1, 0]);
    expect(c.defaultClass).toBe('research');
    expect(c.resolve(undefined, 'f')).toBe('research');
    expect(() => c.resolve('urgent', 'spec.priorityClassName')).toThrowError(expect.objectContaining({ field: 'spec.priorityClassName', message: expect.stringMatching(/unknown priority class 'urgent'/) }));
    expect(new PriorityClasses(['gold', 'silver'], 'gold').defaultClass).toBe('gold');
    expect(() => new PriorityClasses(['gold', 'gold'])).toThrowError(/named twice/);
    expect(() => new PriorityClasses(['Gold'])).toThrowError(/not a class name/);
    expect(() => new PriorityClasses(['gold'], 'silver')).toThrowError(expect.objectContaining({ field: 'defaultPriorityClass' }));
  });

  it("takes seed 002's names in any case as aliases (Production, Iteration, PTR), stores Cairn's, and refuses an unknown one naming it", () => {
    const c = new PriorityClasses();
    for (const [given, stored] of [['Production', 'production'], ['ITERATION', 'iteration'], ['PTR', 'research'], ['ptr', 'research'], ['Research', 'research']]) {
      expect(c.resolve(given, 'f'), given).toBe(stored);
      expect(c.has(given!), given).toBe(true);
    }
    expect(c.rank('PTR')).toBe(0);
    expect(c.rank('Production')).toBe(2);
    expect(c.orDefault('Iteration')).toBe('iteration');
    // Work of the default class is stored with no class.
    expect(c.stored('PTR', 'f')).toBeUndefined();
    expect(c.stored('Production', 'f')).toBe('production');
    expect(() => c.resolve('Urgent', 'priorityClassName')).toThrowError(expect.objectContaining({ field: 'priorityClassName', message: expect.stringMatching(/unknown priority class 'Urgent'.*PTR is research/) }));
    // Seed 002's default, Iteration, set by its name.
    expect(new PriorityClasses(undefined, 'Iteration').defaultClass).toBe('iteration');
    expect(new PriorityClasses(undefined, 'PTR').defaultClass).toBe('research');
    // Where the cluster has no research class, PTR names nothing, and the refusal says why.
    const other = new PriorityClasses(['gold', 'silver']);
    expect(() => other.resolve('PTR', 'labels')).toThrowError(/'PTR', an alias of 'research', which this cluster does not have/);
    expect(() => new PriorityClasses(['gold', 'silver'], 'PTR')).toThrowError(expect.objectContaining({ field: 'defaultPriorityClass' }));
    // A class of the cluster's own spelt like an alias is that class.
    expect(new PriorityClasses(['production', 'ptr', 'research']).resolve('PTR', 'f')).toBe('ptr');
  });
});

describe('the quota policy', () => {
  const q = compileQuotas([
    { role: 'team', guarantee: { cpus: 4 }, limit: { cpus: 8, gpus: 2 } },
    { role: 'team/a', limit: { gpus: 1 } },
  ]);
  it('gives headroom in units, counting the team: a child is bounded by its parent', () => {
    const allocated = new Map([['team/b', R('cpus:6;gpus:1')]]);
    expect(q.headroom('team/a', allocated)).toEqual({ cpus: 2, gpus: 1 });
    expect(q.headroom('other', allocated)).toBeUndefined();
  });
  it('is below a guarantee for the whole team, and lets a role take back only what the guarantee lacks', () => {
    const some = new Map([['team/b', R('cpus:1;mem:4096')]]);
    expect(q.belowGuarantee('team/a', some)).toBe(true);
    expect(q.mayReclaim('team/a', R('cpus:3;mem:999999'), some)).toBe(true); // mem is not guaranteed: it does not count
    expect(q.mayReclaim('team/a', R('cpus:4'), some)).toBe(false); // only 3 cpus lacking
    expect(q.mayReclaim('team/a', R('mem:512'), some)).toBe(false); // nothing guaranteed asked for
    expect(q.mayReclaim('other', R('cpus:1'), some)).toBe(false);
    const met = new Map([['team/b', R('cpus:4')]]);
    expect(q.belowGuarantee('team/a', met)).toBe(false);
    expect(q.mayReclaim('team/a', R('cpus:1'), met)).toBe(false);
  });
  it('leaves out a stored quota that no longer checks instead of stopping', () => {
    const c = compileQuotas([{ role: 'p', limit: { cpus: 2 } }, { role: 'p/c', limit: { cpus: 4 } }]);
    expect(c.table.entries().map(([r]) => r)).toEqual(['p']);
  });
});

describe('the usage view', () => {
  const fw = (id: string, role: string, principal: string): FrameworkRecord => ({ id, name: id, user: '', role, principal, failoverTimeoutS: 0, registeredAtMs: 0 });
  const task = (id: string, frameworkId: string, resources: string, state: TaskRecord['state'] = 'TASK_RUNNING'): TaskRecord => ({
    id, name: id, frameworkId, agentId: 'a', resources, command: { shell: true, value: 'x', arguments: [], environment: [] }, labels: [], killGraceMs: 0,
    state, message: '', launchedAtMs: 0, updatedAtMs: 0,
  });
  it('sums a role with its sub-roles, shares against the counted agents, and attributes principals', () => {
    const frameworks = new Map([['f1', fw('f1', 'team/a', 'alice')], ['f2', fw('f2', 'team/b', 'bob')], ['f3', fw('f3', 'other', 'carol')]]);
    const view = usageView({
      frameworks,
      tasks: [task('t1', 'f1', 'cpus:2;mem:1024'), task('t2', 'f2', 'cpus:1;mem:512;gpus:1'), task('t3', 'f3', 'cpus:1'), task('t4', 'f3', 'cpus:8', 'TASK_FINISHED')],
      agentTotals: [{ resources: 'cpus:8;mem:8192;gpus:2', counted: true }, { resources: 'cpus:8;mem:8192', counted: false }],
      weights: new Map([['team', 2]]),
      quotas: new QuotaTable(),
      ownerOf: (t) => frameworks.get(t.frameworkId)!.principal,
      usage: new Map([['t1', { cpus: 1.5, memMb: 300, gpus: 0 }]]),
    });
    expect(view.total).toEqual({ cpus: 8, mem: 8192, disk: 0, gpus: 2 });
    const team = view.roles.find((r) => r.role === 'team')!;
    expect(team.allocated).toEqual({ cpus: 3, mem: 1536, disk: 0, gpus: 1 });
    expect(team.share).toBe(0.5); // gpus 1 of 2
    expect(team.weightedShare).toBe(0.25);
    expect(team.used).toEqual({ cpus: 1.5, memMb: 300, gpus: 0 });
    expect(view.roles.find((r) => r.role === 'other')!.allocated.cpus).toBe(1); // the finished task holds nothing
    expect(view.roles.find((r) => r.role === 'team/b')!.used).toBeNull();
    expect(view.principals.map((p) => p.principal)).toEqual(['bob', 'alice', 'carol']);
  });
});
