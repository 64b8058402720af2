// The roles' quotas as the leader uses them: compiled once from the registry's records each
// time they change, and read by the allocator (limits, guarantees first) and by preemption
// (what a guarantee protects, what a role may take back).

import { SCALAR_NAMES, type Resources, type ScalarName } from '../../shared/resources.ts';
import type { QuotaPolicy } from '../allocator/allocator.ts';
import type { QuotaRecord } from '../registry/commands.ts';
import { ancestorsOf, parseQuotaJson, QuotaTable, type Quota } from './quotas.ts';

export interface CompiledQuotas extends QuotaPolicy {
  readonly table: QuotaTable;
  guaranteeKeys(role: string): string[];
  guaranteeBudgets(allocated: ReadonlyMap<string, Resources>): Map<string, Resources>;
  withinLimits(role: string, extra: Resources, allocated: ReadonlyMap<string, Resources>): boolean;
  /**
   * Whether the role may take `need` back from others: its guarantee (or its nearest unmet
   * one above) lacks at least that much of every scalar it guarantees and `need` asks for.
   * Scalars the guarantee does not name are not its to take back, and do not count.
   */
  mayReclaim(role: string, need: Resources, allocated: ReadonlyMap<string, Resources>): boolean;
}

/**
 * The records as a table. They were checked before they were written; one that no longer
 * checks (a log from another version) is left out rather than stopping the leader.
 */
export function compileQuotas(records: readonly QuotaRecord[]): CompiledQuotas {
  let table = new QuotaTable();
  const sorted = [...records].sort((a, b) => a.role.split('/').length - b.role.split('/').length || (a.role < b.role ? -1 : 1));
  for (const r of sorted) {
    try {
      const { role, quota } = parseQuotaJson(r);
      table = table.withSet(role, quota);
    } catch {
      // left out, as said above
    }
  }
  return policyOf(table);
}

export function policyOf(table: QuotaTable): CompiledQuotas {
  /** What the role's guarantee, or the nearest guarantee above it that is not met, still lacks. */
  const unmet = (role: string, allocated: ReadonlyMap<string, Resources>): Resources => {
    let lack = table.unmetGuarantee(role, allocated);
    for (const a of ancestorsOf(role)) {
      if (!lack.isEmpty()) break;
      lack = table.unmetGuarantee(a, allocated);
    }
    return lack;
  };
  return {
    table,
    headroom(role, allocated) {
      const caps = table.headroom(role, allocated);
      if (caps === undefined) return undefined;
      // The table counts in thousandths; the allocator in units.
      const out: Partial<Record<ScalarName, number>> = {};
      for (const [n, v] of Object.entries(caps) as [ScalarName, number][]) out[n] = v / 1000;
      return out;
    },
    belowGuarantee: (role, allocated) => !unmet(role, allocated).isEmpty(),
    guaranteeKeys: (role) => table.guaranteeKeys(role),
    guaranteeBudgets: (allocated) => table.guaranteeBudgets(allocated),
    withinLimits: (role, extra, allocated) => table.withinLimits(role, extra, allocated),
    mayReclaim(role, need, allocated) {
      for (const r of [role, ...ancestorsOf(role)]) {
        const lack = table.unmetGuarantee(r, allocated);
        if (lack.isEmpty()) continue;
        const guarantee = table.get(r)!.guarantee;
        let touches = false;
        for (const n of SCALAR_NAMES) {
          if (guarantee.getMilli(n) === 0 || need.getMilli(n) === 0) continue;
          touches = true;
          if (need.getMilli(n) > lack.getMilli(n)) return false;
        }
        return touches;
      }
      return false;
    },
  };
}

export type { Quota };
