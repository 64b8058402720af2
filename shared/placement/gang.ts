// Placing a gang: every replica of it on the offers held, or none. The pipeline with the
// offers pooled per agent, the largest replicas first, each on the first agent where it
// still fits, and a replica that ran before tried on its previous agent first with its old
// ports. The same placement against the agents' totals tells a gang that can never fit.

import { Resources, type MesosResource } from '../resources.ts';
import type { HeldOffer } from '../sdk/held-offer.ts';
import { poolByAgent } from './candidate.ts';
import { anyPorts, type Demand } from './demand.ts';
import { place } from './pipeline.ts';
import { demandSize, largestFirst, previousAgentFirst } from './rank.ts';

/** One replica of a gang. */
export interface GangMember {
  /** The caller's key for it (its position in the record's replicas). */
  key: number;
  template: { cpus: number; memMb: number; diskMb: number; gpus: number; ports: number };
  /** Where it ran before, to get the same ports back on the same agent. */
  previous?: { agentId: string; ports: number[] };
}

export interface MemberPlacement {
  key: number;
  agentId: string;
  hostname: string;
  ip: string;
  ports: number[];
  resources: MesosResource[];
}

export interface AgentLaunch {
  agentId: string;
  offerIds: string[];
  members: MemberPlacement[];
}

export function scalarNeed(t: GangMember['template']): Resources {
  return Resources.of({ cpus: t.cpus, mem: t.memMb, disk: t.diskMb, gpus: t.gpus });
}

function memberDemand(m: GangMember): Demand {
  return { key: m.key, scalars: scalarNeed(m.template), ports: anyPorts(m.template.ports), ...(m.previous ? { previous: m.previous } : {}) };
}

/** Every member placed on the offers, grouped by agent; undefined when they do not all fit. */
export function placeGang(members: readonly GangMember[], offers: readonly HeldOffer[]): AgentLaunch[] | undefined {
  const r = placeMembers(members, offers, false);
  return r.unplaced.length > 0 ? undefined : r.launches;
}

/**
 * Places what fits; with `partial` false it stops at the first member that does not fit
 * (the caller then launches nothing) and lists it and every member after it as unplaced.
 */
export function placeMembers(members: readonly GangMember[], offers: readonly HeldOffer[], partial: boolean): { launches: AgentLaunch[]; unplaced: number[] } {
  const pools = poolByAgent(offers);
  const r = place({ demands: largestFirst(members.map(memberDemand)), candidates: pools, rank: previousAgentFirst, stopAtFirstMiss: !partial });
  const byAgent = new Map<string, MemberPlacement[]>();
  for (const p of r.placed) {
    const c = p.candidate;
    const list = byAgent.get(c.agentId) ?? [];
    list.push({ key: p.demand.key, agentId: c.agentId, hostname: c.hostname, ip: c.ip ?? c.hostname, ports: p.ports, resources: p.taken.toMesos(c.role) });
    byAgent.set(c.agentId, list);
  }
  const launches = pools.filter((p) => byAgent.has(p.agentId)).map((p) => ({ agentId: p.agentId, offerIds: p.offerIds, members: byAgent.get(p.agentId)!.sort((a, b) => a.key - b.key) }));
  return { launches, unplaced: r.unplaced.map((u) => u.demand.key) };
}

/**
 * Why the gang can never fit in the cluster as it is (each agent's total resources), or
 * undefined when it could, once the agents are free.
 */
export function neverFits(members: readonly GangMember[], agentTotals: readonly Resources[]): string | undefined {
  const offers: HeldOffer[] = agentTotals.map((r, i) => ({ id: `total-${i}`, agentId: `agent-${i}`, hostname: '', ip: '', resources: r, role: '*' }));
  if (placeGang(members, offers) !== undefined) return undefined;
  let need = Resources.EMPTY;
  let ports = 0;
  for (const m of members) {
    need = need.add(scalarNeed(m.template));
    ports += m.template.ports;
  }
  const total = agentTotals.reduce((a, r) => a.add(r), Resources.EMPTY);
  const size = (m: GangMember) => demandSize(memberDemand(m));
  const largest = members.reduce((a, m) => (size(m) > size(a) ? m : a), members[0]!);
  return (
    `its gang of ${members.length} replicas needs ${need.toString()} and ${ports} ports, ` +
    `its largest replica ${scalarNeed(largest.template).toString()}, but the cluster's ${agentTotals.length} agents ` +
    `have ${total.toString().replace(/;?ports:\[[^\]]*\]/, '')} in all and cannot hold them together`
  );
}
