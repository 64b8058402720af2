// The role an offer's resources carry: what a launch from it is charged to, and what the
// role check (checks.ts) compares with the framework's.

import type { MesosResource } from '../resources.ts';

/** The role of an offer's resources when they all share one, else `*`. */
export function offerRole(resources: readonly MesosResource[]): string {
  const roles = new Set(resources.map((r) => r.role ?? '*'));
  return roles.size === 1 ? [...roles][0] : '*';
}
