// The placement pipeline (shared/placement/): each feasibility check and the reason it gives,
// the ranking orders, selection of ports, and what comes back for what did not fit.

import { describe, expect, it } from 'vitest';
import { Resources } from '../../shared/resources.ts';
import type { Candidate } from '../../shared/placement/candidate.ts';
import { poolByAgent } from '../../shared/placement/candidate.ts';
import { constraintCheck, NOT_DRAINING, REACHABLE, RESOURCE_CHECKS, roleCheck, shortfall } from '../../shared/placement/checks.ts';
import { ConstraintTracker, type Constraint } from '../../shared/placement/constraints.ts';
import { anyPorts, demandOf, repeatDemand, type Demand } from '../../shared/placement/demand.ts';
import { countReasons, place } from '../../shared/placement/pipeline.ts';
import { inGivenOrder, largestFirst, previousAgentFirst } from '../../shared/placement/rank.ts';
import { placeGang, placeMembers } from '../../shared/placement/gang.ts';

function cand(id: string, resources: string, extra: Partial<Candidate> = {}): Candidate {
  return { id, agentId: id, hostname: `host-${id}`, attributes: {}, role: '*', offerIds: [`offer-${id}`], left: Resources.parse(resources), ...extra };
}

function demand(key: number, scalars: string, ports: number[] = [], previous?: Demand['previous']): Demand {
  return { key, scalars: Resources.parse(scalars), ports, ...(previous ? { previous } : {}) };
}

const TASK = 'cpus:1;mem:128;disk:10;gpus:1';

describe('feasibility: each check gives its own reason', () => {
  it('names the one resource a candidate lacks', () => {
    const cases: [string, string][] = [
      ['cpus', 'cpus:0.5;mem:128;disk:10;gpus:1;ports:[1-2]'],
      ['mem', 'cpus:1;mem:127;disk:10;gpus:1;ports:[1-2]'],
      ['disk', 'cpus:1;mem:128;disk:9;gpus:1;ports:[1-2]'],
      ['gpus', 'cpus:1;mem:128;disk:10;ports:[1-2]'],
      ['ports', 'cpus:1;mem:128;disk:10;gpus:1;ports:[1-1]'],
    ];
    for (const [reason, resources] of cases) {
      const r = place({ demands: [demand(0, TASK, anyPorts(2))], candidates: [cand('a', resources)] });
      expect(r.placed, reason).toEqual([]);
      expect(r.unplaced[0]!.reasons.get('a'), resources).toBe(reason);
    }
    const fits = place({ demands: [demand(0, TASK, anyPorts(2))], candidates: [cand('a', 'cpus:1;mem:128;disk:10;gpus:1;ports:[1-2]')] });
    expect(fits.placed.map((p) => p.candidate.id)).toEqual(['a']);
  });

  it('refuses resources reserved for another role, and takes unreserved or its own', () => {
    const checks = [roleCheck('analytics'), ...RESOURCE_CHECKS];
    const r = place({
      demands: [demand(0, 'cpus:1'), demand(1, 'cpus:1')],
      candidates: [cand('other', 'cpus:4', { role: 'web' }), cand('mine', 'cpus:1', { role: 'analytics' }), cand('any', 'cpus:1')],
      checks,
    });
    expect(r.placed.map((p) => [p.demand.key, p.candidate.id])).toEqual([[0, 'mine'], [1, 'any']]);
  });

  it('gives the first failing check in the order listed: role before resources', () => {
    const r = place({ demands: [demand(0, 'cpus:8')], candidates: [cand('a', 'cpus:1', { role: 'web' })], checks: [roleCheck('ml'), ...RESOURCE_CHECKS] });
    expect(r.unplaced[0]!.reasons.get('a')).toBe('role');
    const later = place({ demands: [demand(0, 'cpus:8')], candidates: [cand('a', 'cpus:1', { role: 'web' })], checks: [...RESOURCE_CHECKS, roleCheck('ml')] });
    expect(later.unplaced[0]!.reasons.get('a')).toBe('cpus');
  });

  it('filters out agents that are unreachable or draining', () => {
    const r = place({
      demands: [demand(0, 'cpus:1')],
      candidates: [cand('gone', 'cpus:4', { unreachable: true }), cand('drain', 'cpus:4', { draining: true }), cand('ok', 'cpus:4')],
      checks: [...RESOURCE_CHECKS, REACHABLE, NOT_DRAINING],
    });
    expect(r.placed[0]!.candidate.id).toBe('ok');
    const none = place({ demands: [demand(0, 'cpus:1')], candidates: [cand('gone', 'cpus:4', { unreachable: true }), cand('drain', 'cpus:4', { draining: true })], checks: [REACHABLE, NOT_DRAINING] });
    expect([...none.unplaced[0]!.reasons]).toEqual([['gone', 'unreachable'], ['drain', 'draining']]);
  });

  it('shortfall lists every short resource with what is free and what is needed', () => {
    const short = shortfall(demandOf({ cpus: 2, mem: 64, ports: 3 }, 0), Resources.parse('cpus:0.5;mem:128;ports:[1-2]'));
    expect([...short]).toEqual([['cpus', { free: 0.5, needed: 2 }], ['ports', { free: 2, needed: 3 }]]);
  });
});

describe('feasibility: constraints over where a group already is', () => {
  const agents = [
    cand('a', 'cpus:8', { hostname: 'a', attributes: { rack: 'r1', zone: 'east' } }),
    cand('b', 'cpus:8', { hostname: 'b', attributes: { rack: 'r1' } }),
    cand('c', 'cpus:8', { hostname: 'c', attributes: { rack: 'r2', zone: 'west' } }),
  ];
  const fresh = () => agents.map((a) => ({ ...a }));
  function run(constraints: Constraint[], count: number) {
    const known = new Map<string, Set<string>>([['rack', new Set(['r1', 'r2'])], ['zone', new Set(['east', 'west'])]]);
    const tracker = new ConstraintTracker(constraints, known);
    const r = place({ demands: repeatDemand({ scalars: Resources.parse('cpus:1'), ports: [] }, count), candidates: fresh(), checks: [constraintCheck(tracker), ...RESOURCE_CHECKS], rank: inGivenOrder });
    return { hosts: r.placed.map((p) => p.candidate.hostname), reasons: r.unplaced.map((u) => [...u.reasons.values()]) };
  }

  it('UNIQUE hostname puts one per host, then says constraint', () => {
    const r = run([{ field: 'hostname', operator: 'UNIQUE' }], 4);
    expect(r.hosts).toEqual(['a', 'b', 'c']);
    expect(r.reasons).toEqual([['constraint', 'constraint', 'constraint']]);
  });

  it('CLUSTER with a value keeps to it; without one, to the first value placed', () => {
    expect(run([{ field: 'rack', operator: 'CLUSTER', value: 'r2' }], 2).hosts).toEqual(['c', 'c']);
    expect(run([{ field: 'rack', operator: 'CLUSTER' }], 3).hosts).toEqual(['a', 'a', 'a']);
  });

  it('GROUP_BY spreads evenly over the known values', () => {
    expect(run([{ field: 'rack', operator: 'GROUP_BY' }], 4).hosts).toEqual(['a', 'c', 'a', 'c']);
  });

  it('MAX_PER caps each value', () => {
    const r = run([{ field: 'rack', operator: 'MAX_PER', value: '1' }], 3);
    expect(r.hosts).toEqual(['a', 'c']);
    expect(r.reasons).toEqual([['constraint', 'constraint', 'constraint']]);
  });

  it('LIKE and IS need the attribute; UNLIKE passes an agent without it', () => {
    expect(run([{ field: 'zone', operator: 'LIKE', value: 'w.*' }], 1).hosts).toEqual(['c']);
    expect(run([{ field: 'zone', operator: 'IS', value: 'east' }], 1).hosts).toEqual(['a']);
    expect(run([{ field: 'zone', operator: 'UNLIKE', value: 'east' }], 2).hosts).toEqual(['b', 'b']);
  });
});

describe('ranking', () => {
  it('first fit tries candidates in the order given', () => {
    const r = place({ demands: [demand(0, 'cpus:2'), demand(1, 'cpus:2')], candidates: [cand('small', 'cpus:1'), cand('big', 'cpus:8'), cand('late', 'cpus:8')] });
    expect(r.placed.map((p) => p.candidate.id)).toEqual(['big', 'big']);
    expect(r.placed[0]!.candidate.left.cpus).toBe(4);
  });

  it('a demand with a previous agent tries it first', () => {
    const cs = [cand('a', 'cpus:8'), cand('b', 'cpus:8'), cand('c', 'cpus:8')];
    const d = demand(0, 'cpus:1', [], { agentId: 'c', ports: [] });
    expect(previousAgentFirst(d, cs).map((c) => c.id)).toEqual(['c', 'a', 'b']);
    expect(previousAgentFirst(demand(1, 'cpus:1'), cs).map((c) => c.id)).toEqual(['a', 'b', 'c']);
  });

  it('largest demands first: gpus outrank cpus, cpus outrank memory, ties by key', () => {
    const ds = [demand(0, 'cpus:1;mem:10'), demand(1, 'cpus:4;mem:1'), demand(2, 'cpus:0.1;gpus:1'), demand(3, 'cpus:1;mem:20'), demand(4, 'cpus:1;mem:10')];
    expect(largestFirst(ds).map((d) => d.key)).toEqual([2, 1, 3, 0, 4]);
  });
});

describe('selection of ports', () => {
  it('gives fixed ports as asked and the lowest free for the rest, in the demand order', () => {
    const c = cand('a', 'cpus:4;ports:[31000-31010]');
    const r = place({ demands: [demand(0, 'cpus:1', [0, 31005, 0])], candidates: [c] });
    expect(r.placed[0]!.ports).toEqual([31000, 31005, 31001]);
    expect(c.left.portList()).toEqual([31002, 31003, 31004, 31006, 31007, 31008, 31009, 31010]);
  });

  it('refuses a fixed port that is not free, or asked twice', () => {
    const taken = place({ demands: [demand(0, 'cpus:1', [80])], candidates: [cand('a', 'cpus:4;ports:[31000-31010]')] });
    expect(taken.unplaced[0]!.reasons.get('a')).toBe('ports');
    const twice = place({ demands: [demand(0, 'cpus:1', [31001, 31001])], candidates: [cand('a', 'cpus:4;ports:[31000-31010]')] });
    expect(twice.unplaced[0]!.reasons.get('a')).toBe('ports');
  });

  it('gives a replica its previous ports back on its previous agent, when they are free', () => {
    const back = place({ demands: [demand(0, 'cpus:1', anyPorts(2), { agentId: 'a', ports: [31007, 31004] })], candidates: [cand('a', 'cpus:4;ports:[31000-31010]')] });
    expect(back.placed[0]!.ports).toEqual([31004, 31007]);
    const elsewhere = place({ demands: [demand(0, 'cpus:1', anyPorts(2), { agentId: 'b', ports: [31007, 31004] })], candidates: [cand('a', 'cpus:4;ports:[31000-31010]')] });
    expect(elsewhere.placed[0]!.ports).toEqual([31000, 31001]);
    const busy = place({ demands: [demand(0, 'cpus:1', anyPorts(2), { agentId: 'a', ports: [31007, 31004] })], candidates: [cand('a', 'cpus:4;ports:[31000-31005]')] });
    expect(busy.placed[0]!.ports).toEqual([31000, 31001]);
  });
});

describe('what did not fit', () => {
  it('has each candidate tried, with its reason, and counts by reason', () => {
    const r = place({ demands: [demand(0, 'cpus:2;mem:512')], candidates: [cand('a', 'cpus:1;mem:1024'), cand('b', 'cpus:4;mem:256'), cand('c', 'cpus:1;mem:64')] });
    expect([...r.unplaced[0]!.reasons]).toEqual([['a', 'cpus'], ['b', 'mem'], ['c', 'cpus']]);
    expect([...countReasons(r.unplaced)]).toEqual([['cpus', 2], ['mem', 1]]);
  });

  it('a limit leaves the rest unplaced, untried', () => {
    const r = place({ demands: [demand(0, 'cpus:1'), demand(1, 'cpus:1'), demand(2, 'cpus:1')], candidates: [cand('a', 'cpus:8')], limit: 2 });
    expect(r.placed.map((p) => p.demand.key)).toEqual([0, 1]);
    expect(r.unplaced.map((u) => [u.demand.key, u.reasons.size])).toEqual([[2, 0]]);
  });

  it('stopAtFirstMiss tries nothing after the first demand that fits nowhere', () => {
    const ds = [demand(0, 'cpus:1'), demand(1, 'cpus:8'), demand(2, 'cpus:1')];
    const stop = place({ demands: ds, candidates: [cand('a', 'cpus:2')], stopAtFirstMiss: true });
    expect(stop.placed.map((p) => p.demand.key)).toEqual([0]);
    expect(stop.unplaced.map((u) => [u.demand.key, u.reasons.size])).toEqual([[1, 1], [2, 0]]);
    const on = place({ demands: ds, candidates: [cand('a', 'cpus:2')] });
    expect(on.placed.map((p) => p.demand.key)).toEqual([0, 2]);
  });
});

describe('gangs on the pipeline', () => {
  const offer = (id: string, agentId: string, resources: string) => ({ id, agentId, hostname: `h-${agentId}`, ip: `10.0.0.${agentId.length}`, resources: Resources.parse(resources), role: '*' });
  const member = (key: number, cpus: number, ports = 0, previous?: { agentId: string; ports: number[] }) => ({ key, template: { cpus, memMb: 64, diskMb: 0, gpus: 0, ports }, ...(previous ? { previous } : {}) });

  it('pools an agent\'s offers and places the whole gang, or none', () => {
    const offers = [offer('o1', 'a', 'cpus:2;mem:512'), offer('o2', 'a', 'cpus:2;mem:512'), offer('o3', 'b', 'cpus:1;mem:512')];
    expect(poolByAgent(offers).map((p) => [p.agentId, p.offerIds, p.left.cpus])).toEqual([['a', ['o1', 'o2'], 4], ['b', ['o3'], 1]]);
    // Largest first packs: the 3-cpu replica, then the 1-cpu one in what is left of agent a.
    const launches = placeGang([member(0, 1), member(1, 3)], offers)!;
    expect(launches.map((l) => [l.agentId, l.offerIds, l.members.map((m) => m.key)])).toEqual([['a', ['o1', 'o2'], [0, 1]]]);
    const spread = placeGang([member(0, 1), member(1, 4)], offers)!;
    expect(spread.map((l) => [l.agentId, l.members.map((m) => m.key)])).toEqual([['a', [1]], ['b', [0]]]);
    expect(placeGang([member(0, 3), member(1, 3)], offers)).toBeUndefined();
    expect(placeMembers([member(0, 3), member(1, 3)], offers, true).unplaced).toEqual([1]);
  });

  it('puts a restarted replica on its previous agent with its old ports', () => {
    const offers = [offer('o1', 'a', 'cpus:4;mem:512;ports:[100-110]'), offer('o2', 'b', 'cpus:4;mem:512;ports:[100-110]')];
    const launches = placeGang([member(0, 1, 1), member(1, 1, 1, { agentId: 'b', ports: [105] })], offers)!;
    const placed = launches.flatMap((l) => l.members.map((m) => [m.key, m.agentId, m.ports]));
    expect(placed).toEqual([[0, 'a', [100]], [1, 'b', [105]]]);
  });
});
