// Packing tasks into one offer: a pure helper for frameworks, on the placement pipeline
// (shared/placement/). Take tasks in the order given and place every one that still fits
// in what is left (first fit), giving each its own ports from the offer's ranges.
// Arithmetic goes through Resources, so it is exact: ten tasks of 0.1 cpus fit in an offer
// of 1 cpu.

import { Resources, type MesosResource } from '../resources.ts';
import { offerRole } from '../placement/offer-role.ts';
import { demandOf, requirementResources, type TaskRequirement } from '../placement/demand.ts';
import { place } from '../placement/pipeline.ts';

export { offerRole, requirementResources, type TaskRequirement };

export interface PlacedTask {
  /** Position of the task in the requirements list. */
  index: number;
  /** The task's resources as Mesos v1 JSON, ready for TaskInfo.resources. */
  resources: MesosResource[];
  /** The port numbers given to the task, in order (PORT0, PORT1, …). */
  ports: number[];
  /** The same resources as a value. */
  taken: Resources;
}

export interface OfferFit {
  placed: PlacedTask[];
  /** Indexes of the tasks that did not fit. */
  unplaced: number[];
  /** What is left of the offer. */
  remaining: Resources;
}

export interface FitOptions {
  /** Role written on the task resources; defaults to the offer's role (one role) or `*`. */
  role?: string;
  /** Stop after this many placed tasks. */
  limit?: number;
}

/**
 * Places as many of `requirements` as fit in `offer` (Mesos JSON resources or a
 * Resources value), first fit in the given order.
 */
export function fitTasks(
  offer: readonly MesosResource[] | Resources,
  requirements: readonly TaskRequirement[],
  options: FitOptions = {},
): OfferFit {
  const role = options.role ?? (offer instanceof Resources ? '*' : offerRole(offer));
  const left = offer instanceof Resources ? offer : Resources.fromMesos(offer, 'offer.resources');
  const demands = requirements.map((req, index) => demandOf(req, index, `tasks[${index}]`));
  const candidate = { id: 'offer', agentId: '', hostname: '', attributes: {}, role, offerIds: [], left };
  const r = place({ demands, candidates: [candidate], ...(options.limit !== undefined ? { limit: options.limit } : {}) });
  return {
    placed: r.placed.map((p) => ({ index: p.demand.key, resources: p.taken.toMesos(role), ports: p.ports, taken: p.taken })),
    unplaced: r.unplaced.map((u) => u.demand.key),
    remaining: candidate.left,
  };
}
