// Placing a gang: every replica of it on the offers held, or none. Largest replicas first,
// each on the first agent where it still fits (packing, so what is left stays in large
// pieces for the next gang); a replica that asks for its previous agent and ports gets them
// when they are offered, so its peers' addresses stay right. The same packing against the
// agents' totals tells a gang that can never fit. Pure: no I/O.

import { Resources, type MesosResource } from '../../../shared/resources.ts';
import type { TaskTemplate } from '../../../shared/jobs/model.ts';
import type { HeldOffer } from '../../../shared/sdk/held-offer.ts';

export type { HeldOffer };

/** An offer as the engine holds it. */
export interface GangMember {
  /** The caller's key for it (its position in the record's replicas). */
  key: number;
  template: Pick<TaskTemplate, 'cpus' | 'memMb' | 'diskMb' | 'gpus' | 'ports'>;
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

interface AgentPool {
  agentId: string;
  hostname: string;
  ip: string;
  role: string;
  offerIds: string[];
  left: Resources;
  members: MemberPlacement[];
}

function size(t: GangMember['template']): number {
  // GPUs are the scarcest; then cpus, then memory.
  return t.gpus * 1e9 + t.cpus * 1e5 + t.memMb;
}

function take(pool: AgentPool, m: GangMember): MemberPlacement | undefined {
  const scalars = scalarNeed(m.template);
  if (!pool.left.contains(scalars)) return undefined;
  let ports: Resources | undefined;
  const prev = m.previous;
  if (prev && prev.agentId === pool.agentId && prev.ports.length === m.template.ports) {
    const wanted = Resources.of({ ports: prev.ports.map((p) => ({ begin: p, end: p })) });
    if (pool.left.contains(wanted)) ports = wanted;
  }
  ports ??= pool.left.takePorts(m.template.ports);
  if (ports === undefined) return undefined;
  const taken = scalars.add(ports);
  pool.left = pool.left.subtract(taken);
  return { key: m.key, agentId: pool.agentId, hostname: pool.hostname, ip: pool.ip, ports: ports.portList(), resources: taken.toMesos(pool.role) };
}

/** Every member placed on the offers, grouped by agent; undefined when they do not all fit. */
export function placeGang(members: readonly GangMember[], offers: readonly HeldOffer[]): AgentLaunch[] | undefined {
  const r = placeMembers(members, offers, false);
  return r.unplaced.length > 0 ? undefined : r.launches;
}

/**
 * Places what fits; with `partial` false it stops at the first member that does not fit
 * (the caller then launches nothing).
 */
export function placeMembers(members: readonly GangMember[], offers: readonly HeldOffer[], partial: boolean): { launches: AgentLaunch[]; unplaced: number[] } {
  const pools = new Map<string, AgentPool>();
  for (const o of offers) {
    const p = pools.get(o.agentId);
    if (p) {
      p.offerIds.push(o.id);
      p.left = p.left.add(o.resources);
    } else {
      pools.set(o.agentId, { agentId: o.agentId, hostname: o.hostname, ip: o.ip, role: o.role, offerIds: [o.id], left: o.resources, members: [] });
    }
  }
  const order = [...pools.values()];
  const sorted = [...members].sort((a, b) => size(b.template) - size(a.template) || a.key - b.key);
  const unplaced: number[] = [];
  for (const m of sorted) {
    let placed: MemberPlacement | undefined;
    // Its previous agent first, so a restarted replica keeps its address when it can.
    const prevPool = m.previous ? pools.get(m.previous.agentId) : undefined;
    if (prevPool) {
      placed = take(prevPool, m);
      if (placed) prevPool.members.push(placed);
    }
    for (const p of order) {
      if (placed) break;
      placed = take(p, m);
      if (placed) p.members.push(placed);
    }
    if (!placed) {
      unplaced.push(m.key);
      if (!partial) break;
    }
  }
  const launches = order.filter((p) => p.members.length > 0).map((p) => ({ agentId: p.agentId, offerIds: p.offerIds, members: p.members.sort((a, b) => a.key - b.key) }));
  return { launches, unplaced };
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
  const largest = members.reduce((a, m) => (size(m.template) > size(a.template) ? m : a), members[0]!);
  return (
    `its gang of ${members.length} replicas needs ${need.toString()} and ${ports} ports, ` +
    `its largest replica ${scalarNeed(largest.template).toString()}, but the cluster's ${agentTotals.length} agents ` +
    `have ${total.toString().replace(/;?ports:\[[^\]]*\]/, '')} in all and cannot hold them together`
  );
}
