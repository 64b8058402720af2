// The allocator's sharing rules: priority classes before DRF, quota limits that cut offers
// down, guarantees served first, and agents earmarked for a preemptor.

import { describe, expect, it } from 'vitest';
import { Allocator, type Offer, type QuotaPolicy } from '../../master/allocator/allocator.ts';
import { Resources, type ScalarName } from '../../shared/resources.ts';

const R = (text: string) => Resources.parse(text);
const who = (offers: Offer[]) => offers.map((o) => `${o.frameworkId}@${o.agentId}`).sort();

function recoverAll(a: Allocator, offers: Offer[], nowMs = 0): void {
  for (const o of offers) a.recoverResources(o.frameworkId, o.agentId, o.resources, 0, nowMs);
}

/** A policy over flat roles: limits and guarantees per role, in units. */
function quotas(limits: Record<string, Partial<Record<ScalarName, number>>>, guarantees: Record<string, Partial<Record<ScalarName, number>>> = {}): QuotaPolicy {
  return {
    headroom(role, allocated) {
      const limit = limits[role];
      if (limit === undefined) return undefined;
      const have = allocated.get(role) ?? Resources.EMPTY;
      return Object.fromEntries(Object.entries(limit).map(([n, v]) => [n, Math.max(0, v - have.get(n as ScalarName))]));
    },
    belowGuarantee(role, allocated) {
      const g = guarantees[role];
      if (g === undefined) return false;
      const have = allocated.get(role) ?? Resources.EMPTY;
      return Object.entries(g).some(([n, v]) => have.get(n as ScalarName) < v);
    },
  };
}

describe('Allocator: priority classes', () => {
  it('offers every agent to the higher class first, whatever the shares', () => {
    const a = new Allocator();
    for (let i = 0; i < 4; i++) a.addAgent(`a${i}`, R('cpus:4;mem:4096'));
    a.addFramework('research', 'r', { classRank: 0 });
    a.addFramework('prod', 'p', { classRank: 2 });
    // prod already holds a lot: by DRF alone research would come first.
    expect(who(a.allocate(0))).toEqual(['prod@a0', 'prod@a1', 'prod@a2', 'prod@a3']);
  });

  it('gives the lower class what the higher one does not take (suppressed or filtered)', () => {
    const a = new Allocator();
    a.addAgent('a0', R('cpus:4;mem:4096'));
    a.addAgent('a1', R('cpus:4;mem:4096'));
    a.addFramework('research', 'r', { classRank: 0 });
    a.addFramework('prod', 'p', { classRank: 1 });
    const first = a.allocate(0);
    expect(who(first)).toEqual(['prod@a0', 'prod@a1']);
    // prod declines a0 with a filter: research gets a0, prod is offered a1 again.
    a.recoverResources('prod', 'a0', first.find((o) => o.agentId === 'a0')!.resources, 10_000, 0);
    a.recoverResources('prod', 'a1', first.find((o) => o.agentId === 'a1')!.resources, 0, 0);
    expect(who(a.allocate(1))).toEqual(['prod@a1', 'research@a0']);
  });

  it('orders roles by weighted share within one class, as before', () => {
    const a = new Allocator({ roleWeights: { heavy: 3 } });
    for (let i = 0; i < 8; i++) a.addAgent(`a${i}`, R('cpus:1;mem:1024'));
    a.addFramework('h', 'heavy', { classRank: 1 });
    a.addFramework('l', 'light', { classRank: 1 });
    a.addFramework('low', 'light', { classRank: 0 });
    const offers = a.allocate(0);
    const count = (f: string) => offers.filter((o) => o.frameworkId === f).length;
    expect(count('h')).toBe(6);
    expect(count('l')).toBe(2);
    expect(count('low')).toBe(0);
  });

  it('forgets a class when its last framework leaves', () => {
    const a = new Allocator();
    a.addAgent('a0', R('cpus:4;mem:4096'));
    a.addFramework('prod', 'p', { classRank: 2 });
    a.addFramework('research', 'p', { classRank: 0 });
    a.removeFramework('prod');
    expect(who(a.allocate(0))).toEqual(['research@a0']);
    expect(a.classRankOf('research')).toBe(0);
  });
});

describe('Allocator: quotas', () => {
  it('cuts an offer down to the role limit, and offers nothing at the limit', () => {
    const a = new Allocator();
    a.addAgent('a0', R('cpus:8;mem:8192;gpus:4'));
    a.addAgent('a1', R('cpus:8;mem:8192;gpus:4'));
    a.addFramework('f', 'team', { gpuAware: true });
    a.setQuotas(quotas({ team: { gpus: 6, cpus: 10 } }));
    const offers = a.allocate(0);
    const total = offers.reduce((acc, o) => acc.add(o.resources), Resources.EMPTY);
    expect(total.gpus).toBe(6);
    expect(total.cpus).toBe(10);
    expect(a.roleAllocations().get('team')!.gpus).toBe(6);
    // At its limit on cpus: nothing more, even though memory is free.
    expect(a.allocate(1)).toEqual([]);
    recoverAll(a, offers);
    expect(a.roleAllocations().has('team')).toBe(false);
  });

  it('serves a role below its guarantee before a higher class', () => {
    const a = new Allocator();
    a.addAgent('a0', R('cpus:4;mem:4096'));
    a.addAgent('a1', R('cpus:4;mem:4096'));
    a.addFramework('prod', 'p', { classRank: 2 });
    a.addFramework('g', 'guaranteed', { classRank: 0 });
    a.setQuotas(quotas({}, { guaranteed: { cpus: 4 } }));
    // The guaranteed role gets its first agent first; then it has its guarantee, and prod the rest.
    expect(who(a.allocate(0))).toEqual(['g@a0', 'prod@a1']);
  });
});

describe('Allocator: earmarks', () => {
  it('offers an earmarked agent only to its framework until it launches there or the earmark ends', () => {
    const a = new Allocator();
    a.addAgent('a0', R('cpus:4;mem:4096'));
    a.addFramework('prod', 'p', { classRank: 1 });
    a.addFramework('research', 'r', { classRank: 0 });
    a.suppress('prod');
    a.earmark('a0', 'prod', 5_000);
    expect(a.allocate(0)).toEqual([]); // research may not take it
    a.revive('prod');
    const offers = a.allocate(1);
    expect(who(offers)).toEqual(['prod@a0']);
    // Declined: still kept for prod.
    recoverAll(a, offers);
    expect(a.earmarkOf('a0')).toBe('prod');
    a.suppress('prod');
    expect(a.allocate(2)).toEqual([]);
    a.revive('prod');
    const again = a.allocate(3);
    a.clearEarmark('a0', 'research'); // not research's to clear
    expect(a.earmarkOf('a0')).toBe('prod');
    a.clearEarmark('a0', 'prod'); // prod launched there
    expect(a.earmarkOf('a0')).toBeUndefined();
    recoverAll(a, again);
    a.suppress('prod');
    a.earmark('a0', 'prod', 5_000);
    expect(who(a.allocate(6_000))).toEqual(['research@a0']); // expired
  });
});
