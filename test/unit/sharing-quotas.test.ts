// Per-role quotas over hierarchical roles: parsing and its refusals, the hierarchy rules a
// change must keep, and the questions the allocator asks of an allocation (headroom, unmet
// guarantee, what may be taken back, what is over its limit).

import { describe, expect, it } from 'vitest';
import {
  ancestorsOf,
  limitsOf,
  parentOf,
  parseQuotaJson,
  type Quota,
  QuotaTable,
  quotaToJson,
} from '../../master/sharing/quotas.ts';
import { validRoleName } from '../../shared/sharing/roles.ts';
import { Resources } from '../../shared/resources.ts';

const R = (text: string) => Resources.parse(text);

function expectRefused(fn: () => unknown, field: string, ...says: string[]): void {
  let caught: unknown;
  try {
    fn();
  } catch (e) {
    caught = e;
  }
  expect(caught, 'expected a refusal').toBeDefined();
  expect(caught).toMatchObject({ code: 'CAIRN_BAD_REQUEST', field });
  for (const s of says) expect((caught as Error).message).toContain(s);
}

/** A table built by setting each JSON quota in turn. */
function table(...bodies: unknown[]): QuotaTable {
  return bodies.reduce<QuotaTable>((t, b) => {
    const { role, quota } = parseQuotaJson(b);
    return t.withSet(role, quota);
  }, new QuotaTable());
}

function set(t: QuotaTable, body: unknown): QuotaTable {
  const { role, quota } = parseQuotaJson(body);
  return t.withSet(role, quota);
}

/** What each exact role holds. */
const alloc = (held: Record<string, string>) => new Map(Object.entries(held).map(([role, text]) => [role, R(text)] as [string, Resources]));

describe('role names', () => {
  it('accepts *, plain and nested names up to 256 characters', () => {
    for (const ok of ['*', 'team', 'team/a', 'a_b.c-d/e1/_x', '0', 'x'.repeat(256), `${'a'.repeat(127)}/${'b'.repeat(128)}`]) {
      expect(() => validRoleName(ok), ok).not.toThrow();
    }
  });

  it('refuses empty segments, dot segments, leading dash, spaces, * in a path and overlong names', () => {
    for (const badName of ['', '/a', 'a/', 'a//b', '.', '..', 'a/..', 'a/./b', '.hidden', '-a', 'a b', '*/a', 'a/*', '**', 'é', 'x'.repeat(257)]) {
      expectRefused(() => validRoleName(badName), 'role');
    }
  });

  it('names the field it is given', () => {
    expectRefused(() => validRoleName('a//b', 'framework.role'), 'framework.role', 'a//b');
  });

  it('parentOf and ancestorsOf walk up nearest first; * and top-level roles have none', () => {
    expect(parentOf('a/b/c')).toBe('a/b');
    expect(parentOf('a')).toBeUndefined();
    expect(parentOf('*')).toBeUndefined();
    expect(ancestorsOf('a/b/c')).toEqual(['a/b', 'a']);
    expect(ancestorsOf('a')).toEqual([]);
    expect(ancestorsOf('*')).toEqual([]);
  });
});

describe('parseQuotaJson', () => {
  it('reads the guarantee as Resources and the limit as caps in thousandths, naming only what it caps', () => {
    const { role, quota } = parseQuotaJson({ role: 'team/a', guarantee: { cpus: 4, gpus: 2 }, limit: { cpus: 8, mem: 16384, disk: 0 } });
    expect(role).toBe('team/a');
    expect(quota.guarantee.equals(R('cpus:4;gpus:2'))).toBe(true);
    // disk 0 caps at nothing; gpus, not named, is not capped.
    expect(quota.limit).toEqual({ cpus: 8000, mem: 16_384_000, disk: 0 });
    expect(quota.limit && 'gpus' in quota.limit).toBe(false);
  });

  it('a missing guarantee is empty; a missing, null or empty limit is no limit', () => {
    for (const limit of [undefined, null, {}]) {
      const { quota } = parseQuotaJson({ role: 'r', ...(limit === undefined ? {} : { limit }) });
      expect(quota.guarantee.isEmpty()).toBe(true);
      expect(quota.limit).toBeUndefined();
    }
  });

  it('refuses a body that is not an object', () => {
    for (const body of [null, undefined, [], 'team', 4]) expectRefused(() => parseQuotaJson(body), 'body');
  });

  it('refuses a missing or bad role', () => {
    expectRefused(() => parseQuotaJson({ guarantee: { cpus: 1 } }), 'role', 'required');
    expectRefused(() => parseQuotaJson({ role: 'team//a' }), 'role', 'team//a');
    expectRefused(() => parseQuotaJson({ role: 7 }), 'role');
  });

  it('refuses unknown keys, at the top and inside guarantee and limit', () => {
    expectRefused(() => parseQuotaJson({ role: 'r', limits: { cpus: 1 } }), 'limits', 'unknown');
    expectRefused(() => parseQuotaJson({ role: 'r', guarantee: { foo: 1 } }), 'guarantee.foo', "'foo'");
    expectRefused(() => parseQuotaJson({ role: 'r', limit: { ports: 10 } }), 'limit.ports');
  });

  it('refuses negative, non-number and non-finite amounts, naming the scalar', () => {
    expectRefused(() => parseQuotaJson({ role: 'r', guarantee: { cpus: -1 } }), 'guarantee.cpus', '-1');
    expectRefused(() => parseQuotaJson({ role: 'r', limit: { mem: '16384' } }), 'limit.mem');
    expectRefused(() => parseQuotaJson({ role: 'r', limit: { gpus: Number.POSITIVE_INFINITY } }), 'limit.gpus');
    expectRefused(() => parseQuotaJson({ role: 'r', guarantee: { disk: Number.NaN } }), 'guarantee.disk');
    expectRefused(() => parseQuotaJson({ role: 'r', limit: { cpus: 1e300 } }), 'limit.cpus', 'too large');
  });

  it('refuses guarantee and limit that are not objects', () => {
    expectRefused(() => parseQuotaJson({ role: 'r', guarantee: 'cpus:4' }), 'guarantee');
    expectRefused(() => parseQuotaJson({ role: 'r', limit: [8] }), 'limit');
  });

  it('refuses a guarantee above the limit on any scalar, and accepts one equal to it', () => {
    expectRefused(() => parseQuotaJson({ role: 'r', guarantee: { cpus: 1, gpus: 3 }, limit: { cpus: 8, gpus: 2 } }), 'guarantee.gpus', 'exceeds', '3 gpus', '2');
    expectRefused(() => parseQuotaJson({ role: 'r', guarantee: { mem: 1 }, limit: { mem: 0 } }), 'guarantee.mem');
    expect(() => parseQuotaJson({ role: 'r', guarantee: { gpus: 2 }, limit: { gpus: 2 } })).not.toThrow();
    // A scalar the limit does not name is not capped, so any guarantee of it fits.
    expect(() => parseQuotaJson({ role: 'r', guarantee: { cpus: 100 }, limit: { gpus: 2 } })).not.toThrow();
  });
});

describe('quotaToJson', () => {
  it('writes amounts in their own unit, leaving out zero guarantees and uncapped scalars', () => {
    const { quota } = parseQuotaJson({ role: 'team/a', guarantee: { cpus: 4, mem: 0, gpus: 2 }, limit: { cpus: 8, mem: 16384, disk: 0 } });
    expect(quotaToJson('team/a', quota)).toEqual({ role: 'team/a', guarantee: { cpus: 4, gpus: 2 }, limit: { cpus: 8, mem: 16384, disk: 0 } });
  });

  it('round-trips through parseQuotaJson, fractions and no-limit included', () => {
    const bodies = [
      { role: 'team/a', guarantee: { cpus: 0.1, mem: 512.5 }, limit: { cpus: 0.3, disk: 0 } },
      { role: '*', guarantee: { gpus: 1 } },
      { role: 'x', guarantee: {}, limit: { mem: 1024 } },
    ];
    for (const body of bodies) {
      const first = parseQuotaJson(body);
      const json = quotaToJson(first.role, first.quota);
      const again = parseQuotaJson(JSON.parse(JSON.stringify(json)));
      expect(again.role).toBe(first.role);
      expect(again.quota.guarantee.equals(first.quota.guarantee)).toBe(true);
      expect(again.quota.limit).toEqual(first.quota.limit);
      expect(quotaToJson(again.role, again.quota)).toEqual(json);
    }
    expect(quotaToJson('*', parseQuotaJson(bodies[1]).quota)).not.toHaveProperty('limit');
  });
});

describe('QuotaTable: hierarchy rules', () => {
  const team = { role: 'team', limit: { gpus: 8, cpus: 32 } };

  it("refuses a child's limit above its parent's, naming both roles and amounts", () => {
    const t = table(team);
    expectRefused(() => set(t, { role: 'team/a', limit: { gpus: 16 } }), 'limit.gpus', "role 'team/a' asks a limit of 16 gpus, above its parent 'team''s limit of 8");
    expect(() => set(t, { role: 'team/a', limit: { gpus: 8, mem: 1 << 20 } })).not.toThrow();
  });

  it("refuses a grandchild's limit above an ancestor's when the role between has no quota", () => {
    const t = table(team);
    expectRefused(() => set(t, { role: 'team/a/x', limit: { cpus: 33 } }), 'limit.cpus', "ancestor 'team'", '33 cpus', '32');
  });

  it("refuses lowering a parent's limit below a child's, naming the child", () => {
    const t = table(team, { role: 'team/a', limit: { gpus: 6 } }, { role: 'team/b', limit: { gpus: 2 } });
    expectRefused(() => set(t, { role: 'team', limit: { gpus: 4 } }), 'limit.gpus', "role 'team' asks a limit of 4 gpus", "'team/a'", '6');
    expect(() => set(t, { role: 'team', limit: { gpus: 6 } })).not.toThrow();
    // A parent that newly caps a scalar is held to its descendants' caps too.
    expectRefused(() => set(table({ role: 'a/b/c', limit: { mem: 2048 } }), { role: 'a', limit: { mem: 1024 } }), 'limit.mem', "descendant 'a/b/c'");
  });

  it("refuses children's guarantees summing above the parent's guarantee, naming the parent", () => {
    const t = table({ role: 'team', guarantee: { cpus: 4 } }, { role: 'team/a', guarantee: { cpus: 3 } });
    expectRefused(() => set(t, { role: 'team/b', guarantee: { cpus: 2 } }), 'guarantee.cpus', "'team'", '5', '4');
    expect(() => set(t, { role: 'team/b', guarantee: { cpus: 1 } })).not.toThrow();
    // Lowering the parent's guarantee below what its children hold is refused from the parent's side.
    expectRefused(() => set(t, { role: 'team', guarantee: { cpus: 2 } }), 'guarantee.cpus', "role 'team'", "'team/a' 3");
  });

  it('counts a grandchild guarantee against the nearest guaranteeing ancestor when the role between has none', () => {
    const t = table({ role: 'team', guarantee: { cpus: 4 } }, { role: 'team/a/x', guarantee: { cpus: 3 } });
    expectRefused(() => set(t, { role: 'team/b', guarantee: { cpus: 2 } }), 'guarantee.cpus', "'team'");
    // Once team/a guarantees 3 covering team/a/x, team/a counts once, not twice.
    const t2 = set(t, { role: 'team/a', guarantee: { cpus: 3 } });
    expect(() => set(t2, { role: 'team/b', guarantee: { cpus: 1 } })).not.toThrow();
  });

  it('only holds children to the scalars the parent guarantees', () => {
    const t = table({ role: 'team', guarantee: { cpus: 4 } });
    expect(() => set(t, { role: 'team/a', guarantee: { gpus: 2 } })).not.toThrow();
  });

  it("refuses a child's guarantee above an ancestor's limit, and siblings' guarantees summing above it", () => {
    const t = table(team);
    expectRefused(() => set(t, { role: 'team/a', guarantee: { gpus: 9 } }), 'guarantee.gpus', "'team'", '8');
    const t2 = set(t, { role: 'team/a', guarantee: { gpus: 5 } });
    expectRefused(() => set(t2, { role: 'team/b', guarantee: { gpus: 4 } }), 'guarantee.gpus', "parent 'team''s limit of 8");
    expectRefused(() => set(t2, { role: 'team', limit: { gpus: 4 } }), 'limit.gpus', "role 'team' asks a limit of 4 gpus", "'team/a' 5");
  });

  it('refuses a hand-built quota whose guarantee exceeds its own limit, or whose caps are malformed', () => {
    const t = new QuotaTable();
    expectRefused(() => t.withSet('r', { guarantee: R('cpus:2'), limit: { cpus: 1000 } }), 'guarantee.cpus', 'exceeds');
    expectRefused(() => t.withSet('r', { guarantee: Resources.EMPTY, limit: { cpus: 0.5 } }), 'limit.cpus');
    expectRefused(() => t.withSet('r', { guarantee: Resources.EMPTY, limit: { cpus: -1 } }), 'limit.cpus');
    expectRefused(() => t.withSet('r', { guarantee: Resources.EMPTY, limit: { ports: 1 } as never }), 'limit.ports');
    expectRefused(() => t.withSet('r', { guarantee: R('ports:[1-2]') }), 'guarantee.ports');
    expectRefused(() => t.withSet('r/', { guarantee: Resources.EMPTY }), 'role');
  });

  it('lets * have a quota with no hierarchy', () => {
    const t = table({ role: '*', guarantee: { cpus: 2 }, limit: { cpus: 4 } }, { role: 'a', guarantee: { cpus: 100 }, limit: { cpus: 200 } });
    expect(t.get('*')?.limit).toEqual({ cpus: 4000 });
    expect(t.guaranteeKeys('*')).toEqual(['*']);
    expect(t.headroom('a', alloc({ '*': 'cpus:4' }))).toEqual({ cpus: 200_000 });
  });

  it('checks the entries it is constructed from', () => {
    const child: Quota = { guarantee: Resources.EMPTY, limit: limitsOf({ gpus: 16 }) };
    const parent: Quota = { guarantee: Resources.EMPTY, limit: limitsOf({ gpus: 8 }) };
    expectRefused(() => new QuotaTable([['team/a', child], ['team', parent]]), 'limit.gpus');
    expect(new QuotaTable([['team/a', parent], ['team', child]]).entries().map(([r]) => r)).toEqual(['team', 'team/a']);
  });

  it('checkSet validates without changing the table', () => {
    const t = table(team);
    expect(() => t.checkSet('team/a', parseQuotaJson({ role: 'team/a', limit: { gpus: 4 } }).quota)).not.toThrow();
    expect(t.get('team/a')).toBeUndefined();
    expectRefused(() => t.checkSet('team/a', parseQuotaJson({ role: 'team/a', limit: { gpus: 9 } }).quota), 'limit.gpus');
  });
});

describe('QuotaTable: immutability and removal', () => {
  it('a refused withSet leaves the old table unchanged, and a good one leaves it too', () => {
    const t = table({ role: 'team', limit: { gpus: 8 } }, { role: 'team/a', limit: { gpus: 4 } });
    const before = JSON.stringify(t.entries().map(([r, q]) => quotaToJson(r, q)));
    expectRefused(() => set(t, { role: 'team', limit: { gpus: 2 } }), 'limit.gpus');
    expect(JSON.stringify(t.entries().map(([r, q]) => quotaToJson(r, q)))).toBe(before);
    const t2 = set(t, { role: 'team/b', guarantee: { gpus: 1 } });
    expect(t2).not.toBe(t);
    expect(t.get('team/b')).toBeUndefined();
    expect(t2.get('team/b')?.guarantee.gpus).toBe(1);
  });

  it('keeps its own copy of the caps it is given', () => {
    const caps: Record<string, number> = { gpus: 4000 };
    const t = new QuotaTable().withSet('r', { guarantee: Resources.EMPTY, limit: caps });
    caps.gpus = 99_000;
    expect(t.get('r')?.limit).toEqual({ gpus: 4000 });
  });

  it('lists entries sorted by role name', () => {
    const t = table({ role: 'b' }, { role: 'a/z' }, { role: '*' }, { role: 'a' }, { role: 'a-b' });
    expect(t.entries().map(([r]) => r)).toEqual(['*', 'a', 'a-b', 'a/z', 'b']);
  });

  it('refuses removing a role that still has roles with quotas under it, naming them', () => {
    const t = table({ role: 'team', limit: { gpus: 8 } }, { role: 'team/a/x', limit: { gpus: 4 } });
    expectRefused(() => t.withRemoved('team'), 'role', "'team/a/x'");
    expect(t.get('team')).toBeDefined();
    const t2 = t.withRemoved('team/a/x').withRemoved('team');
    expect(t2.entries()).toEqual([]);
    expect(t.entries()).toHaveLength(2);
    expect(t2.withRemoved('nobody').entries()).toEqual([]);
  });

  it('a role sharing a prefix is not under it', () => {
    const t = table({ role: 'team', limit: { gpus: 8 } }, { role: 'teammate', limit: { gpus: 16 } });
    expect(t.withRemoved('team').entries().map(([r]) => r)).toEqual(['teammate']);
  });
});

describe('QuotaTable: headroom and withinLimits', () => {
  const t = table(
    { role: 'team', limit: { cpus: 10, gpus: 4 } },
    { role: 'team/a', limit: { cpus: 6 } },
    { role: 'teammate', limit: { cpus: 1 } },
  );

  it('is undefined when neither the role nor an ancestor has a limit', () => {
    expect(t.headroom('other', alloc({}))).toBeUndefined();
    expect(new QuotaTable().headroom('team', alloc({ team: 'cpus:1' }))).toBeUndefined();
  });

  it("counts the role's, its children's, its parent's and its siblings' holdings against the parent's limit", () => {
    const held = alloc({ 'team/a': 'cpus:2', 'team/a/x': 'cpus:1;gpus:1', 'team/b': 'cpus:2.5;gpus:2', team: 'cpus:0.5', teammate: 'cpus:1', '*': 'cpus:50' });
    // team holds 6 cpus and 3 gpus in all; team/a's own limit leaves 6 - 3 = 3, team's leaves 4.
    expect(t.headroom('team/a', held)).toEqual({ cpus: 3000, gpus: 1000 });
    expect(t.headroom('team/a/x', held)).toEqual({ cpus: 3000, gpus: 1000 });
    expect(t.headroom('team/b', held)).toEqual({ cpus: 4000, gpus: 1000 });
    expect(t.headroom('team', held)).toEqual({ cpus: 4000, gpus: 1000 });
    expect(t.headroom('teammate', held)).toEqual({ cpus: 0 });
  });

  it('floors at 0 when a subtree holds more than its limit', () => {
    expect(t.headroom('team/b', alloc({ 'team/a': 'cpus:12;gpus:5' }))).toEqual({ cpus: 0, gpus: 0 });
  });

  it('withinLimits holds up to the headroom exactly and not a thousandth beyond', () => {
    const held = alloc({ 'team/a': 'cpus:2', 'team/b': 'cpus:0.1;gpus:3' });
    expect(t.withinLimits('team/a', R('cpus:4;gpus:1;mem:100000'), held)).toBe(true);
    expect(t.withinLimits('team/a', R('cpus:4.001'), held)).toBe(false);
    expect(t.withinLimits('team/b', R('gpus:1.001'), held)).toBe(false);
    expect(t.withinLimits('team/b', R('cpus:7.9'), held)).toBe(true);
    expect(t.withinLimits('team/b', R('cpus:7.901'), held)).toBe(false);
    expect(t.withinLimits('other', R('cpus:1000;gpus:1000'), held)).toBe(true);
  });

  it('withinLimits judges only the scalars it adds to', () => {
    const over = alloc({ team: 'gpus:6' });
    expect(t.withinLimits('team/a', R('cpus:1'), over)).toBe(true);
    expect(t.withinLimits('team/a', R('gpus:0.001'), over)).toBe(false);
  });

  it('a zero limit allows none of that scalar', () => {
    const z = table({ role: 'r', limit: { gpus: 0 } });
    expect(z.headroom('r', alloc({}))).toEqual({ gpus: 0 });
    expect(z.withinLimits('r', R('gpus:0.001'), alloc({}))).toBe(false);
    expect(z.withinLimits('r', R('cpus:64'), alloc({}))).toBe(true);
  });
});

describe('QuotaTable: guarantees', () => {
  const t = table(
    { role: 'team', guarantee: { cpus: 4, gpus: 2 } },
    { role: 'team/a/x', guarantee: { cpus: 1 } },
    { role: 'team/b', limit: { cpus: 2 } },
  );

  it("unmetGuarantee is the guarantee less the subtree's holdings, floored per scalar", () => {
    const held = alloc({ 'team/a/x': 'cpus:0.5', team: 'cpus:0.5;gpus:3', 'team/b': 'cpus:1;mem:2048', teammate: 'cpus:10' });
    expect(t.unmetGuarantee('team', held).equals(R('cpus:2'))).toBe(true);
    expect(t.unmetGuarantee('team/a/x', held).equals(R('cpus:0.5'))).toBe(true);
    expect(t.unmetGuarantee('team/b', held).isEmpty()).toBe(true);
    expect(t.unmetGuarantee('nobody', held).isEmpty()).toBe(true);
    expect(t.unmetGuarantee('team', alloc({})).equals(R('cpus:4;gpus:2'))).toBe(true);
  });

  it('guaranteeKeys are the role and its ancestors with a non-empty guarantee, nearest first', () => {
    expect(t.guaranteeKeys('team/a/x')).toEqual(['team/a/x', 'team']);
    expect(t.guaranteeKeys('team/a/x/deep')).toEqual(['team/a/x', 'team']);
    expect(t.guaranteeKeys('team/a')).toEqual(['team']);
    expect(t.guaranteeKeys('team/b')).toEqual(['team']);
    expect(t.guaranteeKeys('teammate')).toEqual([]);
  });

  it('guaranteeBudgets: what may be taken above each guarantee; unguaranteed scalars carry the whole subtree', () => {
    const held = alloc({ 'team/a/x': 'cpus:3', 'team/b': 'cpus:2;mem:1024;gpus:1', team: 'gpus:2', teammate: 'cpus:8' });
    const budgets = t.guaranteeBudgets(held);
    expect([...budgets.keys()]).toEqual(['team', 'team/a/x']);
    expect(budgets.get('team')!.equals(R('cpus:1;gpus:1;mem:1024'))).toBe(true);
    expect(budgets.get('team/a/x')!.equals(R('cpus:2'))).toBe(true);
  });

  it('guaranteeBudgets is empty for a guaranteed role below its guarantee and absent for roles without one', () => {
    const budgets = t.guaranteeBudgets(alloc({ 'team/a/x': 'cpus:0.5' }));
    expect(budgets.get('team')!.isEmpty()).toBe(true);
    expect(budgets.get('team/a/x')!.isEmpty()).toBe(true);
    expect(budgets.has('team/b')).toBe(false);
  });
});

describe('QuotaTable: violations', () => {
  const t = table({ role: 'team', limit: { gpus: 4, mem: 1024 } }, { role: 'team/a', limit: { gpus: 2 } }, { role: 'solo', limit: { cpus: 1 } });

  it('is empty when every subtree is within its limits', () => {
    expect(t.violations(alloc({ 'team/a': 'gpus:2', 'team/b': 'gpus:2;mem:1024;cpus:99', solo: 'cpus:1' }))).toEqual([]);
  });

  it('lists each role and scalar over its limit, subtree sums included, sorted by role', () => {
    const held = alloc({ 'team/a/x': 'gpus:3', 'team/b': 'gpus:2;mem:1024.5', solo: 'cpus:1.001' });
    expect(t.violations(held)).toEqual([
      { role: 'solo', scalar: 'cpus', allocated: 1.001, limit: 1 },
      { role: 'team', scalar: 'mem', allocated: 1024.5, limit: 1024 },
      { role: 'team', scalar: 'gpus', allocated: 5, limit: 4 },
      { role: 'team/a', scalar: 'gpus', allocated: 3, limit: 2 },
    ]);
  });
});
