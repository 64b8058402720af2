// Per-principal quotas on stored objects (issue 22, finding 7): the ledger read from the
// registry's records under their real keys, the refusal naming the quota and its flag, and
// the gate's reservations, which keep a burst of concurrent creates from all passing on the
// same count.

import { describe, expect, it } from 'vitest';
import { objectKey, objectLedger, quotaRefusal, usageOf, type QuotaState } from '../../master/sharing/object-quota.ts';
import { compileObjectLimits, DEFAULT_OBJECT_LIMITS, envBytes } from '../../shared/sharing/object-limits.ts';
import { QuotaGate } from '../../master/sharing/quota-gate.ts';
import { appKey, versionKey } from '../../master/frameworks/services/records.ts';
import { jobKey, JOBS_FRAMEWORK_NAME } from '../../master/frameworks/jobs/runtime.ts';
import { experimentKey, trialKey } from '../../master/frameworks/tuning/record.ts';
import { CairnError } from '../../shared/errors.ts';

const size = (v: unknown) => JSON.stringify(v).length;

interface TestState extends QuotaState {
  builtin: Map<string, Map<string, unknown>>;
  secrets: Map<string, { owner: string }>;
}

function state(): TestState {
  return { builtin: new Map(), secrets: new Map() };
}

function put(s: TestState, store: string, key: string, value: unknown): void {
  if (!s.builtin.has(store)) s.builtin.set(store, new Map());
  s.builtin.get(store)!.set(key, value);
}

describe('the object ledger', () => {
  it("charges each owner its apps (with their versions), jobs, experiments (with their trials) and secrets, under the stores' real keys", () => {
    const s = state();
    const app = { app: { id: '/team/web', env: { A: 'x'.repeat(100) } }, version: 'v2', configVersion: 'v1', owner: 'bob' };
    put(s, 'marathon', appKey('/team/web'), app);
    put(s, 'marathon', versionKey('/team/web', '2024-01-01T00:00:00.000Z'), app.app);
    put(s, 'marathon', versionKey('/team/web', '2024-01-02T00:00:00.000Z'), app.app);
    // A nested app's versions are its own, not its parent path's.
    put(s, 'marathon', appKey('/team/web/api'), { app: { id: '/team/web/api' }, owner: 'alice' });
    put(s, 'marathon', versionKey('/team/web/api', '2024-01-01T00:00:00.000Z'), { id: '/team/web/api' });
    put(s, 'marathon', 'instance/team_web.1', { appId: '/team/web' });
    put(s, JOBS_FRAMEWORK_NAME, jobKey('train'), { spec: { name: 'train' }, owner: 'bob' });
    put(s, 'tuning', experimentKey('search'), { spec: { name: 'search' }, owner: 'bob' });
    put(s, 'tuning', trialKey('search', 1), { index: 1 });
    put(s, 'tuning', trialKey('search', 2), { index: 2 });
    s.secrets.set('pull', { owner: 'bob' });
    // Made before owners were kept: no one's.
    put(s, 'marathon', appKey('/old'), { app: { id: '/old' } });

    const ledger = objectLedger(s, size);
    const bob = ledger.get('bob')!;
    expect([...bob.keys()].sort()).toEqual([objectKey.app('/team/web'), objectKey.experiment('search'), objectKey.job('train'), objectKey.secret('pull')].sort());
    expect(bob.get(objectKey.app('/team/web'))).toBe(size(app) + 2 * size(app.app));
    expect(bob.get(objectKey.experiment('search'))).toBe(size({ spec: { name: 'search' }, owner: 'bob' }) + size({ index: 1 }) + size({ index: 2 }));
    expect(ledger.get('alice')!.get(objectKey.app('/team/web/api'))).toBe(size({ app: { id: '/team/web/api' }, owner: 'alice' }) + size({ id: '/team/web/api' }));
    expect(ledger.has('')).toBe(false);
    expect(usageOf(bob).objects).toBe(4);
  });

  it('refuses growth past either quota, naming it and its flag; shrinking always passes', () => {
    const limits = compileObjectLimits({ maxObjectsPerPrincipal: 2, maxObjectBytesPerPrincipal: 2048 });
    const more = quotaRefusal('bob', { objects: 2, bytes: 10 }, { objects: 3, bytes: 20 }, limits, "app '/c'", 'id');
    expect(more).toBeInstanceOf(CairnError);
    expect(more).toMatchObject({ code: 'CAIRN_QUOTA_EXCEEDED', field: 'id' });
    expect(more!.message).toMatch(/principal 'bob' owns 2 objects.*app '\/c' would make 3.*at most 2 \(the master's --max-objects-per-principal\)/);
    const bigger = quotaRefusal('bob', { objects: 1, bytes: 1900 }, { objects: 1, bytes: 2100 }, limits, "app '/a'", 'id');
    expect(bigger!.message).toMatch(/stores 1900 bytes.*would store 2100.*at most 2048 \(the master's --max-object-bytes-per-principal/);
    // Over a lowered quota already: deleting and shrinking are not refused.
    expect(quotaRefusal('bob', { objects: 5, bytes: 5000 }, { objects: 5, bytes: 4000 }, limits, 'x', 'id')).toBeUndefined();
  });
});

describe('the limits', () => {
  it('fills defaults and refuses a bad value naming the flag', () => {
    expect(compileObjectLimits()).toEqual(DEFAULT_OBJECT_LIMITS);
    expect(DEFAULT_OBJECT_LIMITS).toEqual({ maxObjectsPerPrincipal: 1000, maxObjectBytesPerPrincipal: 64 * 1024 * 1024, maxTaskEnvBytes: 128 * 1024 });
    expect(() => compileObjectLimits({ maxObjectsPerPrincipal: 0 })).toThrow(/--max-objects-per-principal: must be a whole number from 1/);
    expect(() => compileObjectLimits({ maxTaskEnvBytes: 10 * 1024 * 1024 })).toThrow(/--max-task-env/);
  });

  it('sizes an environment as execve copies it, in UTF-8', () => {
    expect(envBytes([['A', 'b']])).toBe(4);
    expect(envBytes([['A', 'é']])).toBe(5);
    expect(envBytes([['A', '😀']])).toBe(7);
  });
});

describe('the quota gate', () => {
  it('holds an admitted change until its write settles, so a burst cannot pass on one count; a refused change writes nothing', async () => {
    const s = state();
    const gate = new QuotaGate(() => s, compileObjectLimits({ maxObjectsPerPrincipal: 3 }));
    let writes = 0;
    const releases: (() => void)[] = [];
    const create = (name: string) => gate.admit({ owner: 'bob', key: objectKey.job(name), bytesAfter: () => 10, what: `job '${name}'`, field: 'name' }, () => {
      writes++;
      return new Promise<void>((resolve) => releases.push(() => {
        put(s, 'jobs', jobKey(name), { owner: 'bob' });
        resolve();
      }));
    });
    // Ten at once, none durable yet: three pass, seven are refused.
    const burst = Array.from({ length: 10 }, (_, i) => create(`j${i}`));
    const refused = await Promise.allSettled(burst.slice(3));
    expect(refused.every((r) => r.status === 'rejected' && (r.reason as CairnError).code === 'CAIRN_QUOTA_EXCEEDED')).toBe(true);
    expect(writes).toBe(3);
    for (const r of releases.splice(0)) r();
    await Promise.all(burst.slice(0, 3));
    // Now durable: the count comes from the registry, and still holds at three.
    await expect(create('j11')).rejects.toMatchObject({ code: 'CAIRN_QUOTA_EXCEEDED' });
    // Alice is not bob.
    await gate.admit({ owner: 'alice', key: objectKey.job('a'), bytesAfter: () => 10, what: 'a', field: 'name' }, async () => undefined);
    // Deleting frees the quota.
    s.builtin.get('jobs')!.delete(jobKey('j0'));
    const p = create('j12');
    releases.splice(0).forEach((r) => r());
    await p;
    expect(writes).toBe(4);
  });

  it('charges no one for an object without an owner', async () => {
    const gate = new QuotaGate(() => state(), compileObjectLimits({ maxObjectsPerPrincipal: 1, maxObjectBytesPerPrincipal: 1024 }));
    await expect(gate.admit({ owner: '', key: 'job:x', bytesAfter: () => 1e9, what: 'x', field: 'name' }, async () => 'ok')).resolves.toBe('ok');
  });
});
