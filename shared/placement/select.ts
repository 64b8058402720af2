// Selection: what exactly a demand takes from the candidate chosen for it — its scalars and
// port numbers: fixed ones as asked, its previous ones back on its previous agent, the rest
// the lowest free.

import { Resources } from '../resources.ts';
import type { Candidate } from './candidate.ts';
import type { Demand } from './demand.ts';

export interface Taken {
  /** Scalars and ports together, as the task's resources. */
  taken: Resources;
  /** The port numbers in the demand's order (PORT0 first). */
  ports: number[];
}

const NONE: readonly number[] = [];

function portSet(ports: readonly number[]): Resources {
  return Resources.of({ ports: ports.map((p) => ({ begin: p, end: p })) });
}

/** The ports `demand` gets from `left` on `agentId`, or undefined when they are not free. */
export function selectPorts(demand: Demand, left: Resources, agentId: string): { set: Resources; list: number[] } | undefined {
  const fixed = demand.ports.some((p) => p > 0) ? demand.ports.filter((p) => p > 0) : NONE;
  const prev = demand.previous;
  if (fixed.length === 0 && prev && prev.agentId === agentId && prev.ports.length === demand.ports.length) {
    const same = portSet(prev.ports);
    if (left.contains(same)) return { set: same, list: same.portList() };
  }
  if (fixed.length === 0) {
    // Any ports only (the common case): the lowest free, in order.
    const any = left.takePorts(demand.ports.length);
    return any === undefined ? undefined : { set: any, list: any.portList() };
  }
  const fixedSet = portSet(fixed);
  if (new Set(fixed).size !== fixed.length || !left.contains(fixedSet)) return undefined;
  const any = left.subtract(fixedSet).takePorts(demand.ports.length - fixed.length);
  if (any === undefined) return undefined;
  const anyList = any.portList();
  return { set: fixedSet.add(any), list: demand.ports.map((p) => (p > 0 ? p : anyList.shift()!)) };
}

/** Takes `demand` from `candidate.left` (the checks have passed), or undefined when its ports are not free. */
export function select(demand: Demand, candidate: Candidate): Taken | undefined {
  const ports = selectPorts(demand, candidate.left, candidate.agentId);
  if (ports === undefined) return undefined;
  const taken = ports.set.isEmpty() ? demand.scalars : demand.scalars.add(ports.set);
  candidate.left = candidate.left.subtract(taken);
  return { taken, ports: ports.list };
}
