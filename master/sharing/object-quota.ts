// Per-principal quotas on stored objects: how many apps, jobs, experiments and secrets each
// principal owns, and how many bytes of JSON they hold, read from the replicated state (an
// object's owner is the principal that created it: framework-host/owner-access.ts). An app's kept
// versions and an experiment's trials count towards it, since the masters keep those too.
// Marathon's groups are derived from app paths and stored nowhere: they count as nothing.
// Objects without an owner (made before owners were kept, or on a master that authenticates
// no one) are charged to no one.
//
// Pure: the shell passes the state and a function that sizes a value (it may cache sizes).

import { CairnError } from '../../shared/errors.ts';
import { OBJECT_LIMIT_FLAGS, type ObjectLimits } from '../../shared/sharing/object-limits.ts';
import { objectKey } from '../../shared/framework-host/quotas.ts';

/** What the ledger reads of the registry. */
export interface QuotaState {
  readonly builtin: ReadonlyMap<string, ReadonlyMap<string, unknown>>;
  readonly secrets: ReadonlyMap<string, { readonly owner: string }>;
}

/**
 * Where each kind of object lives: the built-in framework's store name and its keys
 * (services/records.ts, jobs/runtime.ts, tuning/record.ts; kept here as a pure core may import
 * no shell, and checked against those modules by test/unit/object-quota.test.ts).
 */
export const OBJECT_STORES = {
  services: { store: 'marathon', object: 'app/', parts: 'version/' },
  jobs: { store: 'jobs', object: 'job/', parts: undefined },
  tuning: { store: 'tuning', object: 'experiment/', parts: 'trial/' },
} as const;

/** An object's ledger key (one definition, in the frameworks' quota contract). */
export { objectKey };

/** Per owner, each object's bytes (its record and the parts kept with it). */
export type Ledger = Map<string, Map<string, number>>;

function charge(ledger: Ledger, owner: string, key: string, bytes: number): void {
  if (owner === '') return;
  let m = ledger.get(owner);
  if (!m) ledger.set(owner, (m = new Map()));
  m.set(key, (m.get(key) ?? 0) + bytes);
}

function ownerOf(value: unknown): string {
  const owner = (value as { owner?: unknown } | null)?.owner;
  return typeof owner === 'string' ? owner : '';
}

/**
 * Reads one kind from its store: objects under `object` (`app/<id>`), and parts under
 * `parts` (`version/<id>/<v>`, `trial/<name>/<n>`) charged to the object their key names.
 */
function readStore(ledger: Ledger, store: ReadonlyMap<string, unknown> | undefined, object: string, parts: string | undefined, kind: string, sizeOf: (v: unknown) => number): void {
  if (!store) return;
  const owners = new Map<string, string>();
  for (const [k, v] of store) {
    if (!k.startsWith(object)) continue;
    const name = k.slice(object.length);
    const owner = ownerOf(v);
    owners.set(name, owner);
    charge(ledger, owner, `${kind}:${name}`, sizeOf(v));
  }
  if (parts === undefined) return;
  for (const [k, v] of store) {
    if (!k.startsWith(parts)) continue;
    // The object's name is everything before the part's own last segment (app ids hold slashes).
    const name = k.slice(parts.length, k.lastIndexOf('/'));
    const owner = owners.get(name);
    if (owner !== undefined) charge(ledger, owner, `${kind}:${name}`, sizeOf(v));
  }
}

/** Every owned object's bytes, per owner. */
export function objectLedger(state: QuotaState, sizeOf: (v: unknown) => number): Ledger {
  const ledger: Ledger = new Map();
  const s = OBJECT_STORES;
  readStore(ledger, state.builtin.get(s.services.store), s.services.object, s.services.parts, 'app', sizeOf);
  readStore(ledger, state.builtin.get(s.jobs.store), s.jobs.object, s.jobs.parts, 'job', sizeOf);
  readStore(ledger, state.builtin.get(s.tuning.store), s.tuning.object, s.tuning.parts, 'experiment', sizeOf);
  for (const [name, secret] of state.secrets) charge(ledger, secret.owner, objectKey.secret(name), sizeOf(secret));
  return ledger;
}

export interface Usage {
  objects: number;
  bytes: number;
}

export function usageOf(objects: ReadonlyMap<string, number> | undefined): Usage {
  let bytes = 0;
  for (const b of objects?.values() ?? []) bytes += b;
  return { objects: objects?.size ?? 0, bytes };
}

/**
 * The refusal of a change that would leave `owner` with `after` (its objects, this one at its
 * new size), or undefined when it fits. A change that makes nothing larger always fits, so an
 * owner over a lowered quota can still shrink and delete. `what` names the object in words.
 */
export function quotaRefusal(owner: string, before: Usage, after: Usage, limits: ObjectLimits, what: string, field: string): CairnError | undefined {
  if (after.objects > before.objects && after.objects > limits.maxObjectsPerPrincipal) {
    return new CairnError('CAIRN_QUOTA_EXCEEDED',
      `principal '${owner}' owns ${before.objects} objects (apps, jobs, experiments and secrets together); ${what} would make ${after.objects}, and a principal owns at most ${limits.maxObjectsPerPrincipal} (the master's ${OBJECT_LIMIT_FLAGS.maxObjectsPerPrincipal}): delete one first`,
      field);
  }
  if (after.bytes > before.bytes && after.bytes > limits.maxObjectBytesPerPrincipal) {
    return new CairnError('CAIRN_QUOTA_EXCEEDED',
      `principal '${owner}' stores ${before.bytes} bytes of objects; with ${what} it would store ${after.bytes}, and a principal stores at most ${limits.maxObjectBytesPerPrincipal} (the master's ${OBJECT_LIMIT_FLAGS.maxObjectBytesPerPrincipal}; an app's kept versions count): delete or shrink something first`,
      field);
  }
  return undefined;
}
