// Packing tasks into one offer: a pure helper for frameworks.
//
// Given what an offer holds and what each task needs, take tasks in the order given and
// place every one that still fits in what is left (first fit), giving each its own ports
// from the offer's ranges. Arithmetic goes through Resources, so it is exact: ten tasks of
// 0.1 cpus fit in an offer of 1 cpu.

import { CairnError } from '../errors.ts';
import { Resources, type MesosResource } from '../resources.ts';

export interface TaskRequirement {
  cpus: number;
  /** MiB */
  mem: number;
  /** MiB */
  disk?: number;
  gpus?: number;
  /** How many ports the task needs (any numbers from the offer's ranges). */
  ports?: number;
}

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

/** The role of an offer's resources when they all share one, else `*`. */
export function offerRole(resources: readonly MesosResource[]): string {
  const roles = new Set(resources.map((r) => r.role ?? '*'));
  return roles.size === 1 ? [...roles][0] : '*';
}

/** The scalar part of a requirement as Resources; validates the numbers. */
export function requirementResources(req: TaskRequirement, field = 'task'): Resources {
  const ports = req.ports ?? 0;
  if (!Number.isInteger(ports) || ports < 0) {
    throw new CairnError('CAIRN_BAD_RESOURCES', `must be a non-negative integer, got ${ports}`, `${field}.ports`);
  }
  try {
    return Resources.of({ cpus: req.cpus, mem: req.mem, disk: req.disk ?? 0, gpus: req.gpus ?? 0 });
  } catch (err) {
    if (err instanceof CairnError && err.field !== undefined) {
      throw new CairnError(err.code, err.message.replace(`${err.field}: `, ''), `${field}.${err.field}`);
    }
    throw err;
  }
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
  let remaining = offer instanceof Resources ? offer : Resources.fromMesos(offer, 'offer.resources');
  const limit = options.limit ?? Infinity;
  const placed: PlacedTask[] = [];
  const unplaced: number[] = [];
  requirements.forEach((req, index) => {
    const scalars = requirementResources(req, `tasks[${index}]`);
    if (placed.length >= limit || !remaining.contains(scalars)) {
      unplaced.push(index);
      return;
    }
    const ports = remaining.takePorts(req.ports ?? 0);
    if (ports === undefined) {
      unplaced.push(index);
      return;
    }
    const taken = scalars.add(ports);
    remaining = remaining.subtract(taken);
    placed.push({ index, resources: taken.toMesos(role), ports: ports.portList(), taken });
  });
  return { placed, unplaced, remaining };
}
