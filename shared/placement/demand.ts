// What one task asks of a placement: scalars, ports (fixed numbers or any), and where it ran
// before. Every framework turns its own spec (a Marathon app, a job's replica, a trial, a
// `cairn run` task) into Demands, so the pipeline needs to know none of them.

import { CairnError } from '../errors.ts';
import { Resources } from '../resources.ts';

export interface Demand {
  /** The caller's key for it (a position in its list, a replica's number). */
  key: number;
  /** cpus, mem, disk and gpus; ports are in `ports`. */
  scalars: Resources;
  /** One entry per port the task needs, PORT0 first: a fixed host port, or 0 for any. */
  ports: readonly number[];
  /**
   * Where it ran before: on that agent it gets the same ports back when they are all free,
   * so its peers' addresses stay right. Used only when `ports` fixes none.
   */
  previous?: { agentId: string; ports: readonly number[] };
}

/** A task as the SDK's callers describe it (sizes in MiB, a count of ports). */
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

/** `count` ports, any numbers. */
export function anyPorts(count: number): number[] {
  return new Array<number>(count).fill(0);
}

/** A requirement as a Demand (validated; `field` names it in errors). */
export function demandOf(req: TaskRequirement, key: number, field = 'task'): Demand {
  const scalars = requirementResources(req, field);
  return { key, scalars, ports: anyPorts(req.ports ?? 0) };
}

/** `count` copies of one demand, keyed 0…count−1 (a service's instances of one config). */
export function repeatDemand(demand: Omit<Demand, 'key'>, count: number): Demand[] {
  return Array.from({ length: count }, (_, key) => ({ ...demand, key }));
}
