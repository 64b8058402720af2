// Feasibility: may this demand go to this candidate at all? Each check is one question with
// one reason to give when the answer is no, as Nomad's feasibility iterators are. A caller
// lists the checks it needs in the order their reasons should win (the first that fails is
// the candidate's reason); the resource checks are the same for every framework.

import type { Resources } from '../resources.ts';
import type { Candidate } from './candidate.ts';
import type { ConstraintTracker } from './constraints.ts';
import type { Demand } from './demand.ts';

/** What a task asks for, in the order they are named. */
export const RESOURCE_NAMES = ['cpus', 'mem', 'disk', 'gpus', 'ports'] as const;
export type ResourceName = (typeof RESOURCE_NAMES)[number];

/** Why a candidate cannot take a demand. */
export type Reason = 'role' | 'constraint' | ResourceName | 'unreachable' | 'draining';

export interface Check {
  /** What the candidate lacks when `test` says no. */
  reason: Reason;
  test(demand: Demand, candidate: Candidate): boolean;
  /** Told of each placement made, for checks that count what is placed where (constraints). */
  placed?(demand: Demand, candidate: Candidate): void;
}

/** How much of `name` there is in `r` (ports: how many). */
export function amountOf(r: Resources, name: ResourceName): number {
  return name === 'ports' ? r.portCount() : r.get(name);
}

/** Whether `left` has too little of one resource for `demand` (ports: too few, whatever numbers). */
export function isShort(demand: Demand, left: Resources, name: ResourceName): boolean {
  if (name === 'ports') return left.portCount() < demand.ports.length;
  return demand.scalars.getMilli(name) > left.getMilli(name);
}

/**
 * Every resource `left` has too little of for `demand`: how much it has and how much is
 * needed (what a person is told a declined offer lacked).
 */
export function shortfall(demand: Demand, left: Resources): Map<ResourceName, { free: number; needed: number }> {
  const short = new Map<ResourceName, { free: number; needed: number }>();
  for (const name of RESOURCE_NAMES) {
    if (isShort(demand, left, name)) short.set(name, { free: amountOf(left, name), needed: name === 'ports' ? demand.ports.length : demand.scalars.get(name) });
  }
  return short;
}

function resourceCheck(name: ResourceName): Check {
  return { reason: name, test: (d, c) => !isShort(d, c.left, name) };
}

/** cpus, mem, disk, gpus, then the number of ports; which port numbers is the selection's part. */
export const RESOURCE_CHECKS: readonly Check[] = RESOURCE_NAMES.map(resourceCheck);

/** Resources reserved for another role are not the framework's to use. */
export function roleCheck(frameworkRole: string): Check {
  return { reason: 'role', test: (_d, c) => c.role === '*' || c.role === frameworkRole };
}

/** Marathon's constraints over where a group's instances already are; each placement counts. */
export function constraintCheck(tracker: ConstraintTracker): Check {
  return { reason: 'constraint', test: (_d, c) => tracker.broken(c) === undefined, placed: (_d, c) => tracker.add(c) };
}

/** Node filters: an agent out of reach, or draining, takes nothing now. */
export const REACHABLE: Check = { reason: 'unreachable', test: (_d, c) => c.unreachable !== true };
export const NOT_DRAINING: Check = { reason: 'draining', test: (_d, c) => c.draining !== true };

/** The first check `candidate` fails for `demand`, or undefined when it passes them all. */
export function firstFailure(demand: Demand, candidate: Candidate, checks: readonly Check[]): Reason | undefined {
  for (const check of checks) if (!check.test(demand, candidate)) return check.reason;
  return undefined;
}
