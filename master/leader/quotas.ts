// The roles' quotas as the leader holds them: compiled from the registry's records for the
// allocator and preemption, with what tasks hold on agents the allocator does not have
// counted in.

import { Resources } from '../../shared/resources.ts';
import type { QuotaPolicy } from '../allocator/allocator.ts';
import type { QuotaRecord } from '../registry/commands.ts';
import { compileQuotas } from '../sharing/quota-policy.ts';
import { parseQuotaJson } from '../sharing/quotas.ts';
import type { LeaderState } from './leader-state.ts';

export function setQuotas(leader: LeaderState, records: QuotaRecord[]): void {
  leader.quotas = records.length > 0 ? compileQuotas(records) : undefined;
  leader.allocator.setQuotas(leader.quotas && countingElsewhere(leader.quotas, () => leader.heldElsewhere));
}

/**
 * Checked before it is durable, against every other quota: a child above its parent, a
 * negative amount, a guarantee above the limit never reach the log. Throws naming the field.
 */
export function checkQuota(leader: LeaderState, role: string, quota: QuotaRecord | null): void {
  const current = leader.quotas?.table ?? compileQuotas([]).table;
  if (quota === null) current.withRemoved(role);
  else current.withSet(role, parseQuotaJson({ ...quota, role }).quota);
}

/** Before an allocation: what tasks hold on agents the allocator does not have, when there are quotas to count it in. */
export function refreshHeldElsewhere(leader: LeaderState): void {
  if (leader.quotas) leader.heldElsewhere = holdingsElsewhere(leader);
}

/** Per role, what the registry's live tasks hold on agents the allocator does not have. */
function holdingsElsewhere(leader: LeaderState): Map<string, Resources> {
  const state = leader.registry();
  const out = new Map<string, Resources>();
  for (const a of state.agents.values()) {
    if (leader.allocator.hasAgent(a.id)) continue;
    for (const t of state.activeTasksOn(a.id)) {
      let r: Resources;
      try {
        r = Resources.parse(t.resources);
      } catch {
        continue;
      }
      const role = state.frameworks.get(t.frameworkId)?.role ?? '*';
      out.set(role, (out.get(role) ?? Resources.EMPTY).add(Resources.of({ cpus: r.cpus, mem: r.mem, disk: r.disk, gpus: r.gpus })));
    }
  }
  return out;
}

/**
 * The quotas as the allocator reads them: what it holds itself, plus what tasks hold on agents
 * it does not have. After a leader change an agent is missing until it registers with the new
 * leader, and one unreachable since before keeps its tasks, which may come back; left out,
 * their roles would be offered past their limits (and seem below their guarantees).
 */
function countingElsewhere(policy: QuotaPolicy, elsewhere: () => ReadonlyMap<string, Resources>): QuotaPolicy {
  const withElsewhere = (allocated: ReadonlyMap<string, Resources>): ReadonlyMap<string, Resources> => {
    const extra = elsewhere();
    if (extra.size === 0) return allocated;
    const all = new Map(allocated);
    for (const [role, r] of extra) all.set(role, (all.get(role) ?? Resources.EMPTY).add(r));
    return all;
  };
  return {
    headroom: (role, allocated) => policy.headroom(role, withElsewhere(allocated)),
    belowGuarantee: (role, allocated) => policy.belowGuarantee(role, withElsewhere(allocated)),
  };
}
