// Per-principal quotas on stored objects as a framework meets them: before it stores an app,
// a job or an experiment, its route asks the host to admit the change against the owner's
// quota (master/sharing/quota-gate.ts holds the ledger; master/sharing/object-quota.ts counts).

import type { ObjectLimits } from '../sharing/object-limits.ts';

/** An object's ledger key: its kind and its name. */
export const objectKey = {
  app: (id: string) => `app:${id}`,
  job: (name: string) => `job:${name}`,
  experiment: (name: string) => `experiment:${name}`,
  secret: (name: string) => `secret:${name}`,
};

export interface Admission {
  /** The principal charged: the object's owner ('' charges no one). */
  owner: string;
  /** The object's ledger key (objectKey.app(id), ...). */
  key: string;
  /** Its bytes after the change, given its bytes now (undefined for a new object). */
  bytesAfter(current: number | undefined): number;
  /** The object in words, for the refusal ("app '/x'"). */
  what: string;
  /** The field a refusal names. */
  field: string;
}

export interface ObjectQuotas {
  /** The master's limits: quotas and the cap on a task's environment (`quotas.limits`). */
  readonly limits: ObjectLimits;
  /** The JSON bytes of a value, as the registry keeps it. */
  sizeOf(value: unknown): number;
  /**
   * Throws CAIRN_QUOTA_EXCEEDED (403) when the change would take its owner past a quota;
   * otherwise reserves it until `write` settles, and returns what `write` returns.
   */
  admit<T>(a: Admission, write: () => Promise<T>): Promise<T>;
}
