// Admission of objects against their owner's quota (master/sharing/object-quota.ts), on the
// leader, for every route that creates or grows an app, a job, an experiment or a secret.
// A change admitted but not yet durable is held as a reservation until its write resolves,
// so a burst of concurrent creates cannot all pass on the same stale count; what the write
// stored then counts from the registry. Sizes are JSON bytes, computed once per stored value
// (registry values are frozen and replaced, never changed in place).

import { objectLedger, quotaRefusal, usageOf, type QuotaState } from './object-quota.ts';
import type { ObjectLimits } from '../../shared/sharing/object-limits.ts';
import type { Admission, ObjectQuotas } from '../../shared/framework-host/quotas.ts';

export type { Admission };

export class QuotaGate implements ObjectQuotas {
  private readonly sizes = new WeakMap<object, number>();
  private readonly pending = new Map<string, Map<string, { bytes: number; token: symbol }>>();

  constructor(
    private readonly state: () => QuotaState,
    readonly limits: ObjectLimits,
  ) {}

  /** The JSON bytes of a value, as the registry keeps it. */
  sizeOf = (value: unknown): number => {
    if (typeof value !== 'object' || value === null) return Buffer.byteLength(JSON.stringify(value) ?? '');
    const known = this.sizes.get(value);
    if (known !== undefined) return known;
    const n = Buffer.byteLength(JSON.stringify(value));
    this.sizes.set(value, n);
    return n;
  };

  /**
   * Throws CAIRN_QUOTA_EXCEEDED (403) when the change would take its owner past a quota;
   * otherwise reserves it until `write` settles, and returns what `write` returns.
   */
  async admit<T>(a: Admission, write: () => Promise<T>): Promise<T> {
    if (a.owner === '') return write();
    const stored = objectLedger(this.state(), this.sizeOf).get(a.owner);
    const mine = new Map(stored);
    for (const [k, p] of this.pending.get(a.owner) ?? []) mine.set(k, Math.max(mine.get(k) ?? 0, p.bytes));
    const before = usageOf(mine);
    const after = new Map(mine).set(a.key, a.bytesAfter(mine.get(a.key)));
    const refusal = quotaRefusal(a.owner, before, usageOf(after), this.limits, a.what, a.field);
    if (refusal) throw refusal;
    const token = Symbol(a.key);
    let held = this.pending.get(a.owner);
    if (!held) this.pending.set(a.owner, (held = new Map()));
    held.set(a.key, { bytes: after.get(a.key)!, token });
    try {
      return await write();
    } finally {
      // Only this admission's own reservation goes: a later one for the key keeps its own.
      if (held.get(a.key)?.token === token) held.delete(a.key);
      if (held.size === 0 && this.pending.get(a.owner) === held) this.pending.delete(a.owner);
    }
  }
}
