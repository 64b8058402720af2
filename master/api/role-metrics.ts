// Per-role figures for the master's /metrics: what each role's unfinished tasks hold (its
// sub-roles' included: `team` counts `team/a`, as `cairn roles` shows it), beside its quota's
// guarantee and limit, one family per resource in its base unit. From the registry, so every
// master answers alike. A scalar a quota does not name has no guarantee or limit sample
// (unguaranteed, unlimited), rather than a 0 that would read as "none allowed".

import type { ScalarName } from '../../shared/resources.ts';
import { promFamily, type Sample } from '../../shared/prometheus.ts';
import type { RoleRow } from '../../shared/sharing/views.ts';
import type { RegistryStateMachine } from '../registry/state-machine.ts';
import { compileQuotas } from '../sharing/quota-policy.ts';
import { usageView } from '../sharing/usage-view.ts';

const MIB = 1024 * 1024;

/** Each resource's family, and the factor from the scalar's own unit (MB for mem and disk) to it. */
const FAMILIES: readonly { scalar: ScalarName; name: string; unit: number; what: string }[] = [
  { scalar: 'cpus', name: 'cairn_master_role_cpus', unit: 1, what: 'CPUs' },
  { scalar: 'mem', name: 'cairn_master_role_memory_bytes', unit: MIB, what: 'Memory, in bytes,' },
  { scalar: 'disk', name: 'cairn_master_role_disk_bytes', unit: MIB, what: 'Disk, in bytes,' },
  { scalar: 'gpus', name: 'cairn_master_role_gpus', unit: 1, what: 'GPUs' },
];

export function roleRows(state: RegistryStateMachine): RoleRow[] {
  return usageView({
    frameworks: state.frameworks,
    tasks: state.tasks.values(),
    agentTotals: [...state.agents.values()].map((a) => ({ resources: a.resources, counted: a.reachable && !a.drain })),
    weights: state.roleWeights,
    quotas: compileQuotas([...state.quotas.values()]).table,
    // Per principal is not exported: a series per user would grow without bound.
    ownerOf: () => '',
    usage: new Map(),
  }).roles;
}

export function roleFamilies(rows: readonly RoleRow[]): string[] {
  return FAMILIES.map((f) => {
    const samples: Sample[] = [];
    for (const r of rows) {
      samples.push({ labels: { role: r.role, kind: 'allocated' }, value: r.allocated[f.scalar] * f.unit });
      const g = r.guarantee?.[f.scalar];
      if (g !== undefined) samples.push({ labels: { role: r.role, kind: 'guarantee' }, value: g * f.unit });
      const l = r.limit?.[f.scalar];
      if (l !== undefined) samples.push({ labels: { role: r.role, kind: 'limit' }, value: l * f.unit });
    }
    return promFamily(f.name, 'gauge', `${f.what} per role: what its unfinished tasks and its sub-roles' hold (allocated), and its quota's guarantee and limit where the quota names them.`, samples);
  });
}

