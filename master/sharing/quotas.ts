// Per-role quotas over hierarchical roles, as in Mesos quota and YARN's capacity scheduler:
// a guarantee (what the role's subtree is promised when it asks) and a limit (what the
// subtree may never exceed). `team/user` is a child of `team`; a quota on `team` covers what
// every role under it holds. `*`, the default role, stands alone: no parent, no children.
//
// Pure: the table is an immutable value checked as a whole on every change, so a refused
// change leaves nothing half applied, and the questions the allocator asks (headroom, unmet
// guarantee, what may be taken back) are answered from an allocation passed in.
//
// Amounts are compared in thousandths (Resources' fixed point) so that a limit of 0.3 cpus
// holds exactly 0.1 + 0.2 cpus. Ports are not covered: quotas are over scalars only.

import { CairnError } from '../../shared/errors.ts';
import { Resources, SCALAR_NAMES, type ScalarName } from '../../shared/resources.ts';
import { describeValue as describe, validRoleName } from '../../shared/sharing/roles.ts';
import type { QuotaJson } from '../../shared/sharing/views.ts';

/**
 * Caps per scalar, in thousandths (the unit of `Resources.getMilli`). A scalar that is not a
 * key is not capped at all; a key holding 0 caps it at nothing. A `Resources` cannot be used
 * here because it has no way to say "no cap on this one" other than 0, which means the opposite.
 */
export type ScalarCaps = Readonly<Partial<Record<ScalarName, number>>>;

/** A role's quota. The guarantee and the limit both bound the role's whole subtree. */
export interface Quota {
  /** Reserved for the role's subtree when it asks for it; 0 on a scalar promises nothing. Scalars only. */
  readonly guarantee: Resources;
  /** Never more than this, per capped scalar; undefined (or no keys) = no limit at all. */
  readonly limit?: ScalarCaps;
}

type Amounts = Partial<Record<ScalarName, number>>;

/** One capped scalar of one role whose subtree holds more than its limit. */
export interface QuotaViolation {
  role: string;
  scalar: ScalarName;
  /** What the role's subtree holds, in the scalar's unit. */
  allocated: number;
  /** The role's limit on the scalar, in the scalar's unit. */
  limit: number;
}

const MILLI = 1000;
const QUOTA_KEYS = ['role', 'guarantee', 'limit'];

function bad(field: string, message: string): CairnError {
  return new CairnError('CAIRN_BAD_REQUEST', message, field);
}

function isScalarName(name: string): name is ScalarName {
  return (SCALAR_NAMES as readonly string[]).includes(name);
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** An amount as an operator reads it: "4 cpus", "16384 MB mem". */
function amount(name: ScalarName, milli: number): string {
  const v = milli / MILLI;
  return name === 'mem' || name === 'disk' ? `${v} MB ${name}` : `${v} ${name}`;
}

function fromMilli(m: Record<ScalarName, number>): Resources {
  return Resources.of({ cpus: m.cpus / MILLI, mem: m.mem / MILLI, disk: m.disk / MILLI, gpus: m.gpus / MILLI });
}

function zeroMilli(): Record<ScalarName, number> {
  return { cpus: 0, mem: 0, disk: 0, gpus: 0 };
}

/** The role one level up: 'a/b/c' -> 'a/b'; a top-level role and '*' have none. */
export function parentOf(role: string): string | undefined {
  const slash = role.lastIndexOf('/');
  return slash <= 0 ? undefined : role.slice(0, slash);
}

/** Every role above `role`, nearest first: 'a/b/c' -> ['a/b', 'a']. */
export function ancestorsOf(role: string): string[] {
  const out: string[] = [];
  for (let p = parentOf(role); p !== undefined; p = parentOf(p)) out.push(p);
  return out;
}

/** Whether `role` lies strictly under `ancestor`. */
function isUnder(role: string, ancestor: string): boolean {
  return ancestor !== '*' && role.startsWith(`${ancestor}/`);
}

/**
 * Converts amounts in the scalar's own unit ({gpus: 8}) to caps in thousandths, refusing
 * unknown scalars and amounts that are not finite non-negative numbers (field `${field}.<scalar>`).
 */
export function limitsOf(amounts: Readonly<Amounts>, field = 'limit'): ScalarCaps {
  const caps: Amounts = {};
  for (const [name, v] of Object.entries(readAmounts(amounts, field))) caps[name as ScalarName] = v;
  return Object.freeze(caps);
}

/** Amounts object -> thousandths per named scalar, with the checks of parseQuotaJson. */
function readAmounts(raw: unknown, field: string): Amounts {
  if (!isPlainObject(raw)) throw bad(field, `must be an object of amounts such as {"cpus": 4}, not ${describe(raw)}`);
  const out: Amounts = {};
  for (const [name, v] of Object.entries(raw)) {
    const f = `${field}.${name}`;
    if (!isScalarName(name)) throw bad(f, `unknown scalar '${name}': quotas cover ${SCALAR_NAMES.join(', ')}`);
    if (typeof v !== 'number' || !Number.isFinite(v) || v < 0) {
      throw bad(f, `must be a finite non-negative number, not ${describe(v)}`);
    }
    const milli = Resources.of({ [name]: v }).getMilli(name);
    if (!Number.isSafeInteger(milli)) throw bad(f, `${v} is too large`);
    out[name] = milli;
  }
  return out;
}

/**
 * Reads a quota as REST and the replicated log carry it (see QuotaJson). Refuses, with a
 * CairnError naming the field: a body that is not an object ("body"), a missing or bad role
 * ("role"), unknown keys ("guarantee.foo"), amounts that are not finite non-negative numbers
 * ("limit.mem"), and a guarantee above the limit ("guarantee.gpus").
 */
export function parseQuotaJson(body: unknown): { role: string; quota: Quota } {
  if (!isPlainObject(body)) {
    throw bad('body', `must be an object such as {"role": "team/a", "guarantee": {"cpus": 4}, "limit": {"cpus": 8}}, not ${describe(body)}`);
  }
  for (const key of Object.keys(body)) {
    if (!QUOTA_KEYS.includes(key)) throw bad(key, `unknown key '${key}': a quota has ${QUOTA_KEYS.join(', ')}`);
  }
  if (body.role === undefined) throw bad('role', 'is required');
  validRoleName(body.role as string, 'role');
  const role = body.role as string;

  const g = body.guarantee === undefined ? {} : readAmounts(body.guarantee, 'guarantee');
  const guarantee = fromMilli({ ...zeroMilli(), ...g });
  const limit = body.limit === undefined || body.limit === null ? undefined : readAmounts(body.limit, 'limit');
  const quota = normalize({ guarantee, limit });
  checkGuaranteeWithinLimit(role, quota);
  return { role, quota };
}

/** The JSON form of a quota; parseQuotaJson reads it back to an equal quota. Zero guarantees are left out. */
export function quotaToJson(role: string, q: Quota): QuotaJson {
  const guarantee: Amounts = {};
  for (const name of SCALAR_NAMES) {
    const m = q.guarantee.getMilli(name);
    if (m > 0) guarantee[name] = m / MILLI;
  }
  const out: QuotaJson = { role, guarantee };
  if (q.limit !== undefined && Object.keys(q.limit).length > 0) {
    const limit: Amounts = {};
    for (const name of SCALAR_NAMES) {
      const m = q.limit[name];
      if (m !== undefined) limit[name] = m / MILLI;
    }
    out.limit = limit;
  }
  return out;
}

/** A frozen copy with an empty limit made undefined, so equal quotas look alike. */
function normalize(q: Quota): Quota {
  const limit = q.limit === undefined || Object.keys(q.limit).length === 0 ? undefined : Object.freeze({ ...q.limit });
  return Object.freeze(limit === undefined ? { guarantee: q.guarantee } : { guarantee: q.guarantee, limit });
}

function checkShape(q: Quota): void {
  if (typeof q !== 'object' || q === null) throw bad('quota', `must be an object with a guarantee, not ${describe(q)}`);
  if (!(q.guarantee instanceof Resources)) throw bad('guarantee', 'must be a Resources');
  if (q.guarantee.ports.length > 0) throw bad('guarantee.ports', `quotas cover ${SCALAR_NAMES.join(', ')}, not ports`);
  if (q.limit === undefined) return;
  if (!isPlainObject(q.limit)) throw bad('limit', `must be caps per scalar, not ${describe(q.limit)}`);
  for (const [name, v] of Object.entries(q.limit)) {
    const f = `limit.${name}`;
    if (!isScalarName(name)) throw bad(f, `unknown scalar '${name}': quotas cover ${SCALAR_NAMES.join(', ')}`);
    if (!Number.isSafeInteger(v) || (v as number) < 0) throw bad(f, `must be a non-negative whole number of thousandths, not ${describe(v)}`);
  }
}

function checkGuaranteeWithinLimit(role: string, q: Quota): void {
  if (q.limit === undefined) return;
  for (const name of SCALAR_NAMES) {
    const cap = q.limit[name];
    const g = q.guarantee.getMilli(name);
    if (cap !== undefined && g > cap) {
      throw bad(`guarantee.${name}`, `role '${role}' asks a guarantee of ${amount(name, g)}, which exceeds its own limit of ${cap / MILLI}`);
    }
  }
}

/** Sums what each role holds into what each subtree holds, in thousandths. */
function subtreeSums(allocated: ReadonlyMap<string, Resources>): Map<string, Record<ScalarName, number>> {
  const sums = new Map<string, Record<ScalarName, number>>();
  for (const [role, r] of allocated) {
    for (const holder of [role, ...ancestorsOf(role)]) {
      let s = sums.get(holder);
      if (s === undefined) sums.set(holder, (s = zeroMilli()));
      for (const name of SCALAR_NAMES) s[name] += r.getMilli(name);
    }
  }
  return sums;
}

/** Roles whose quota applies to `role`'s tasks: itself, then its ancestors, nearest first. */
function chainOf(role: string): string[] {
  return [role, ...ancestorsOf(role)];
}

/** A table of per-role quotas. Immutable: every change returns a new table. */
export class QuotaTable {
  private readonly quotas: ReadonlyMap<string, Quota>;

  /**
   * A table holding `entries`, checked as a whole (role names, each quota, the hierarchy) as
   * withSet would check them; throws a CairnError naming the field when they do not hold.
   * A role given twice keeps its last quota.
   */
  constructor(entries: Iterable<[string, Quota]> = []) {
    const m = new Map<string, Quota>();
    for (const [role, q] of entries) {
      validRoleName(role, 'role');
      checkShape(q);
      m.set(role, normalize(q));
    }
    this.quotas = m;
    for (const role of m.keys()) this.checkAgainst(m, role);
  }

  /** The quota set on exactly `role`, if any. */
  get(role: string): Quota | undefined {
    return this.quotas.get(role);
  }

  /** Every role's quota, sorted by role name. */
  entries(): [string, Quota][] {
    return [...this.quotas.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  }

  /** Validates setting `role` to `q` without changing anything; throws a CairnError naming the field. */
  checkSet(role: string, q: Quota): void {
    this.candidate(role, q);
  }

  /** checkSet, then a new table with `role` set to `q`; this table is left as it was. */
  withSet(role: string, q: Quota): QuotaTable {
    return new QuotaTable(this.candidate(role, q));
  }

  /**
   * A new table without `role`'s quota. Refused (field "role") while a role under it still has
   * a quota, since that quota was checked against this one. Removing a role with none is a no-op.
   */
  withRemoved(role: string): QuotaTable {
    if (!this.quotas.has(role)) return this;
    const under = [...this.quotas.keys()].filter((r) => isUnder(r, role)).sort();
    if (under.length > 0) {
      throw bad('role', `role '${role}' still has roles with quotas under it (${under.map((r) => `'${r}'`).join(', ')}); remove theirs first`);
    }
    const m = new Map(this.quotas);
    m.delete(role);
    return new QuotaTable(m);
  }

  /**
   * How much more `role` may be given, per scalar, in thousandths: the least, over the role and
   * its ancestors that cap the scalar, of (limit - what that role's subtree holds), floored at 0.
   * A scalar that is not a key has no cap anywhere on the way up. Undefined when nothing caps
   * the role at all. `allocated` maps each role (leaf or not) to what exactly that role holds.
   */
  headroom(role: string, allocated: ReadonlyMap<string, Resources>): ScalarCaps | undefined {
    const sums = subtreeSums(allocated);
    const out: Amounts = {};
    for (const r of chainOf(role)) {
      const limit = this.quotas.get(r)?.limit;
      if (limit === undefined) continue;
      const held = sums.get(r) ?? zeroMilli();
      for (const name of SCALAR_NAMES) {
        const cap = limit[name];
        if (cap === undefined) continue;
        const left = Math.max(0, cap - held[name]);
        out[name] = Math.min(out[name] ?? left, left);
      }
    }
    return Object.keys(out).length === 0 ? undefined : Object.freeze(out);
  }

  /**
   * Whether giving `extra` to `role` keeps it and every ancestor within its limit. Only the
   * scalars `extra` adds to are judged, so a role over its gpus limit (after the limit was
   * lowered) may still be given cpus.
   */
  withinLimits(role: string, extra: Resources, allocated: ReadonlyMap<string, Resources>): boolean {
    const room = this.headroom(role, allocated);
    if (room === undefined) return true;
    return SCALAR_NAMES.every((name) => {
      const cap = room[name];
      return cap === undefined || extra.getMilli(name) <= cap;
    });
  }

  /** What `role`'s subtree still lacks of the role's guarantee (floored at 0 per scalar); EMPTY when none. */
  unmetGuarantee(role: string, allocated: ReadonlyMap<string, Resources>): Resources {
    const q = this.quotas.get(role);
    if (q === undefined) return Resources.EMPTY;
    const held = subtreeSums(allocated).get(role) ?? zeroMilli();
    const m = zeroMilli();
    for (const name of SCALAR_NAMES) m[name] = Math.max(0, q.guarantee.getMilli(name) - held[name]);
    return fromMilli(m);
  }

  /**
   * The budget keys (see guaranteeBudgets) a task of `role` counts against: the role and each
   * ancestor, nearest first, that has a quota with a non-empty guarantee.
   */
  guaranteeKeys(role: string): string[] {
    return chainOf(role).filter((r) => this.hasGuarantee(r));
  }

  /**
   * For each role with a non-empty guarantee: how much may be taken from its subtree before it
   * drops below its guarantee, per scalar (subtree allocation - guarantee, floored at 0). On a
   * scalar the role does not guarantee the budget is the whole subtree allocation, so nothing
   * there is protected.
   */
  guaranteeBudgets(allocated: ReadonlyMap<string, Resources>): Map<string, Resources> {
    const sums = subtreeSums(allocated);
    const out = new Map<string, Resources>();
    for (const [role, q] of this.entries()) {
      if (!this.hasGuarantee(role)) continue;
      const held = sums.get(role) ?? zeroMilli();
      const m = zeroMilli();
      for (const name of SCALAR_NAMES) m[name] = Math.max(0, held[name] - q.guarantee.getMilli(name));
      out.set(role, fromMilli(m));
    }
    return out;
  }

  /** Every capped scalar of every role whose subtree holds more than its limit, sorted by role then scalar. */
  violations(allocated: ReadonlyMap<string, Resources>): QuotaViolation[] {
    const sums = subtreeSums(allocated);
    const out: QuotaViolation[] = [];
    for (const [role, q] of this.entries()) {
      if (q.limit === undefined) continue;
      const held = sums.get(role) ?? zeroMilli();
      for (const name of SCALAR_NAMES) {
        const cap = q.limit[name];
        if (cap !== undefined && held[name] > cap) {
          out.push({ role, scalar: name, allocated: held[name] / MILLI, limit: cap / MILLI });
        }
      }
    }
    return out;
  }

  private hasGuarantee(role: string): boolean {
    const q = this.quotas.get(role);
    return q !== undefined && SCALAR_NAMES.some((n) => q.guarantee.getMilli(n) > 0);
  }

  /** The map this table would hold with `role` set to `q`, or the error that refuses it. */
  private candidate(role: string, q: Quota): Map<string, Quota> {
    validRoleName(role, 'role');
    checkShape(q);
    const m = new Map(this.quotas);
    m.set(role, normalize(q));
    this.checkAgainst(m, role);
    return m;
  }

  /**
   * Checks every rule that setting `role` can break in `m`, worded from `role`'s side: its
   * guarantee within its limit; its limit within every ancestor's and above every descendant's;
   * for it and each ancestor, the guarantees beneath within its guarantee and its limit.
   * The rules of roles under `role` only involve their own subtrees, which `role` does not change.
   */
  private checkAgainst(m: ReadonlyMap<string, Quota>, role: string): void {
    const q = m.get(role)!;
    checkGuaranteeWithinLimit(role, q);
    if (role === '*') return;
    const ancestors = ancestorsOf(role);

    for (const name of SCALAR_NAMES) {
      const cap = q.limit?.[name];
      if (cap === undefined) continue;
      for (const a of ancestors) {
        const theirs = m.get(a)?.limit?.[name];
        if (theirs !== undefined && cap > theirs) {
          throw bad(`limit.${name}`, `role '${role}' asks a limit of ${amount(name, cap)}, above its ${kin(role, a, 'parent', 'ancestor')} '${a}''s limit of ${theirs / MILLI}`);
        }
      }
      for (const [d, dq] of [...m].sort(([x], [y]) => (x < y ? -1 : 1))) {
        const theirs = dq.limit?.[name];
        if (isUnder(d, role) && theirs !== undefined && theirs > cap) {
          throw bad(`limit.${name}`, `role '${role}' asks a limit of ${amount(name, cap)}, below its ${kin(d, role, 'child', 'descendant')} '${d}''s limit of ${theirs / MILLI}`);
        }
      }
    }

    const chain = [role, ...ancestors];
    for (const name of SCALAR_NAMES) {
      for (const a of chain) {
        const g = m.get(a)?.guarantee.getMilli(name) ?? 0;
        if (g === 0) continue;
        const beneath = topGuarantors(m, a, name);
        const total = beneath.reduce((sum, [, v]) => sum + v, 0);
        if (total <= g) continue;
        const parts = beneath.map(([r, v]) => `'${r}' ${v / MILLI}`).join(', ');
        if (a === role) {
          throw bad(`guarantee.${name}`, `role '${role}' asks a guarantee of ${amount(name, g)}, below the ${total / MILLI} the roles under it guarantee (${parts})`);
        }
        throw bad(`guarantee.${name}`, `role '${role}' asks a guarantee of ${amount(name, q.guarantee.getMilli(name))}; the guarantees under '${a}' would total ${total / MILLI} (${parts}), above '${a}''s guarantee of ${g / MILLI}`);
      }
    }

    for (const name of SCALAR_NAMES) {
      for (const a of chain) {
        const cap = m.get(a)?.limit?.[name];
        if (cap === undefined) continue;
        const beneath = topGuarantors(m, a, name);
        const total = beneath.reduce((sum, [, v]) => sum + v, 0);
        if (total <= cap) continue;
        const parts = beneath.map(([r, v]) => `'${r}' ${v / MILLI}`).join(', ');
        if (a === role) {
          throw bad(`limit.${name}`, `role '${role}' asks a limit of ${amount(name, cap)}, below the ${total / MILLI} the roles under it guarantee (${parts})`);
        }
        throw bad(`guarantee.${name}`, `role '${role}' asks a guarantee of ${amount(name, q.guarantee.getMilli(name))}; the guarantees under '${a}' would total ${total / MILLI} (${parts}), above its ${kin(role, a, 'parent', 'ancestor')} '${a}''s limit of ${cap / MILLI}`);
      }
    }
  }
}

function kin(lower: string, upper: string, near: string, far: string): string {
  return parentOf(lower) === upper ? near : far;
}

/**
 * The roles strictly under `top` that guarantee `name` with no guaranteeing role between
 * them and `top`, with their amounts, sorted by role. Their sum is what `top`'s subtree is
 * already promised below `top` itself.
 */
function topGuarantors(m: ReadonlyMap<string, Quota>, top: string, name: ScalarName): [string, number][] {
  const out: [string, number][] = [];
  for (const [r, q] of m) {
    const g = q.guarantee.getMilli(name);
    if (g === 0 || !isUnder(r, top)) continue;
    const between = ancestorsOf(r).filter((a) => isUnder(a, top));
    if (between.some((a) => (m.get(a)?.guarantee.getMilli(name) ?? 0) > 0)) continue;
    out.push([r, g]);
  }
  return out.sort(([a], [b]) => (a < b ? -1 : 1));
}
