// The cluster view as a queued gang's explanation reads it (shared/sdk/why-queued.ts): each
// agent's total, whether offers can come from it, and who holds what on it.

import type { RoomAgent } from '../sdk/why-queued.ts';
import type { ClusterView } from './contract.ts';

export function roomAgents(cluster: ClusterView): RoomAgent[] {
  return [...cluster.agents().values()].map((a) => ({
    id: a.id,
    hostname: a.hostname,
    resources: a.resources,
    available: a.reachable && !a.drain,
    holders: cluster.holders(a.id).map((h) => ({ name: h.name, priorityClass: h.priorityClass, preemptible: h.preemptible, resources: h.resources })),
  }));
}
