// "Who uses the cluster": per role and per principal, what its running tasks hold, what they
// use (from the agents' usage samples), the role's quota and its dominant share (DRF). The view
// YARN's scheduler page gives, as `GET /api/v1/roles`, `cairn roles` and `cairn usage` show it.
// Pure: the registry's state, the quotas and the usage samples in; rows out. Any master can
// answer it, since none of it needs the leader's allocator.

import { isTerminal } from '../../shared/agent-messages.ts';
import { Resources, SCALAR_NAMES, type ScalarName } from '../../shared/resources.ts';
import type { FrameworkRecord, TaskRecord } from '../registry/commands.ts';
import { ancestorsOf, quotaToJson, type QuotaTable } from './quotas.ts';
import type { Amounts, PrincipalRow, RoleRow, TaskUse } from '../../shared/sharing/views.ts';

export interface UsageViewInput {
  frameworks: ReadonlyMap<string, FrameworkRecord>;
  tasks: Iterable<TaskRecord>;
  /** Every agent's total, counted if reachable and not draining. */
  agentTotals: Iterable<{ resources: string; counted: boolean }>;
  weights: ReadonlyMap<string, number>;
  quotas: QuotaTable;
  /** Whose a task is (its framework's principal, or a built-in's owner). */
  ownerOf: (task: TaskRecord) => string;
  /** Usage per task id; absent: not sampled. */
  usage: ReadonlyMap<string, TaskUse>;
}

export interface UsageView {
  total: Amounts;
  roles: RoleRow[];
  principals: PrincipalRow[];
}

const ZERO: Amounts = { cpus: 0, mem: 0, disk: 0, gpus: 0 };

function amounts(r: Resources): Amounts {
  return { cpus: r.cpus, mem: r.mem, disk: r.disk, gpus: r.gpus };
}

function add(a: Amounts, b: Amounts): Amounts {
  return { cpus: a.cpus + b.cpus, mem: a.mem + b.mem, disk: a.disk + b.disk, gpus: a.gpus + b.gpus };
}

function addUse(a: TaskUse | null, b: TaskUse | undefined): TaskUse | null {
  if (b === undefined) return a;
  return { cpus: (a?.cpus ?? 0) + b.cpus, memMb: (a?.memMb ?? 0) + b.memMb, gpus: (a?.gpus ?? 0) + b.gpus };
}

/** The largest fraction of the total any scalar takes (0 for an empty cluster). */
export function dominantShare(allocated: Amounts, total: Amounts): number {
  let share = 0;
  for (const n of SCALAR_NAMES) if (total[n] > 0) share = Math.max(share, allocated[n] / total[n]);
  return share;
}

export function usageView(inp: UsageViewInput): UsageView {
  let total = ZERO;
  for (const a of inp.agentTotals) {
    if (!a.counted) continue;
    try {
      total = add(total, amounts(Resources.parse(a.resources)));
    } catch {
      // an agent record that cannot be read counts for nothing
    }
  }
  const roles = new Map<string, { allocated: Amounts; used: TaskUse | null; tasks: number; frameworks: Set<string> }>();
  const roleEntry = (role: string) => {
    let e = roles.get(role);
    if (e === undefined) roles.set(role, (e = { allocated: ZERO, used: null, tasks: 0, frameworks: new Set() }));
    return e;
  };
  const principals = new Map<string, { allocated: Amounts; used: TaskUse | null; tasks: number; roles: Set<string> }>();
  for (const fw of inp.frameworks.values()) if (fw.removedAtMs === undefined) roleEntry(fw.role).frameworks.add(fw.id);
  for (const t of inp.tasks) {
    if (isTerminal(t.state) || t.state === 'TASK_UNREACHABLE') continue;
    const fw = inp.frameworks.get(t.frameworkId);
    const role = fw?.role ?? '*';
    let held: Amounts;
    try {
      held = amounts(Resources.parse(t.resources));
    } catch {
      continue;
    }
    const use = inp.usage.get(t.id);
    // A task counts in its role and every role above it: `team`'s row is its whole subtree.
    for (const r of [role, ...ancestorsOf(role)]) {
      const e = roleEntry(r);
      e.allocated = add(e.allocated, held);
      e.used = addUse(e.used, use);
      e.tasks++;
      e.frameworks.add(t.frameworkId);
    }
    const who = inp.ownerOf(t);
    let p = principals.get(who);
    if (p === undefined) principals.set(who, (p = { allocated: ZERO, used: null, tasks: 0, roles: new Set() }));
    p.allocated = add(p.allocated, held);
    p.used = addUse(p.used, use);
    p.tasks++;
    p.roles.add(role);
  }
  for (const [role] of inp.quotas.entries()) roleEntry(role);
  for (const role of inp.weights.keys()) roleEntry(role);
  const roleRows: RoleRow[] = [...roles].map(([role, e]) => {
    const weight = inp.weights.get(role) ?? 1;
    const q = inp.quotas.get(role);
    const json = q ? quotaToJson(role, q) : undefined;
    const share = dominantShare(e.allocated, total);
    return {
      role,
      weight,
      allocated: e.allocated,
      used: e.used,
      guarantee: json?.guarantee && Object.keys(json.guarantee).length > 0 ? json.guarantee : null,
      limit: json?.limit && Object.keys(json.limit).length > 0 ? json.limit : null,
      share,
      weightedShare: share / weight,
      tasks: e.tasks,
      frameworks: e.frameworks.size,
    };
  });
  roleRows.sort((a, b) => (a.role < b.role ? -1 : a.role > b.role ? 1 : 0));
  const principalRows: PrincipalRow[] = [...principals].map(([principal, p]) => ({
    principal,
    allocated: p.allocated,
    used: p.used,
    share: dominantShare(p.allocated, total),
    tasks: p.tasks,
    roles: [...p.roles].sort(),
  }));
  principalRows.sort((a, b) => b.share - a.share || (a.principal < b.principal ? -1 : 1));
  return { total, roles: roleRows, principals: principalRows };
}
