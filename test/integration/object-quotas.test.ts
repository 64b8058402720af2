// What one tenant could cost the others by storing objects (issue 22, finding 7), against an
// in-process master with strict ACLs, principals alice and bob and a simulated agent:
// - bob's hundred apps with 900 KB of environment each are refused at submit (the task
//   environment cap), and nothing of them is kept; an app id of 5,000 characters and
//   `instances: 1e8` are refused with Marathon's 422 naming the field;
// - with small apps, bob's creates past his object and byte quotas are refused (403 naming the
//   quota and its flag), through Marathon, jobs and secrets alike, while alice still creates;
//   deleting frees his quota;
// - an app of bob's with a 5,000-character id that got stored anyway (by an older master) no
//   longer stalls alice's scale-up: the services framework's ACCEPT that carries both is
//   refused only for bob's task (TASK_ERROR naming the label), and alice's tasks launch;
// - a framework's ACCEPT of a good task and one with an over-long label launches the good one
//   and answers the other TASK_ERROR naming the field.

import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { rmSync } from 'node:fs';
import pino from 'pino';
import { startMaster, type MasterHandle } from '../../master/server.ts';
import { parseApp } from '../../master/frameworks/services/app-parse.ts';
import { appKey } from '../../master/frameworks/services/records.ts';
import type { JsonValue } from '../../master/registry/commands.ts';
import { FakeAgent } from '../harness/fake-agent.ts';
import { RawScheduler, taskInfo } from '../harness/raw-scheduler.ts';
import { tempDir, waitFor } from '../harness/processes.ts';
import { marathon } from '../harness/marathon.ts';
import { strictTenantAuth, TENANT_AGENT, tenantBearer as bearer, type Tenant as User } from '../harness/tenants.ts';

/** Small enough to reach in a test; the defaults are 1,000 objects and 64 MiB. */
const MAX_OBJECTS = 5;
const MAX_BYTES = 512 * 1024;

let master: MasterHandle;
let agent: FakeAgent | undefined;
let dir: string;
const schedulers: RawScheduler[] = [];

async function rest(u: User, method: string, path: string, body?: unknown): Promise<{ status: number; body: any }> {
  const res = await fetch(`${master.url}${path}`, {
    method,
    headers: { ...bearer(u), ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  const text = await res.text();
  return { status: res.status, body: text === '' ? undefined : JSON.parse(text) };
}

const app = (u: User, method: string, path: string, body?: unknown) => marathon(master.url, method, path, body, bearer(u));
const small = (id: string, extra: Record<string, unknown> = {}) => ({ id, cmd: 'sleep 1000', cpus: 0.01, mem: 8, instances: 0, ...extra });
/** The services framework's store, as every master holds it in memory. */
const servicesStore = () => master.context.registry.state.builtin.get('marathon') ?? new Map<string, JsonValue>();

async function connectAgent(): Promise<FakeAgent> {
  agent = new FakeAgent({ masterUrl: master.url, hostname: 'h1', resources: 'cpus:8;mem:16384;disk:100000;ports:[31000-32000]', headers: { authorization: `Bearer ${TENANT_AGENT.secret}` } });
  await agent.connect();
  return agent;
}

beforeAll(async () => {
  dir = tempDir();
  master = await startMaster({
    auth: strictTenantAuth(), dataDir: dir, port: 0, host: '127.0.0.1', dnsPort: null, logger: pino({ level: 'silent' }),
    objectLimits: { maxObjectsPerPrincipal: MAX_OBJECTS, maxObjectBytesPerPrincipal: MAX_BYTES },
  });
}, 60_000);

afterEach(() => {
  for (const s of schedulers.splice(0)) s.close();
});

afterAll(async () => {
  await agent?.close();
  await master?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe("one tenant's objects and the others", { timeout: 180_000 }, () => {
  it("no longer stalls alice's scale-up behind an app of bob's whose tasks no ACCEPT could carry", async () => {
    // Bob's app with a 5,000-character id, as a master before these limits stored it: its
    // tasks carry the id as a label past the scheduler API's 4,096 characters.
    const longId = `/${'b'.repeat(5000)}`;
    const bad = { ...parseApp(small('bob-bad', { instances: 2 })).app, id: longId };
    const version = new Date().toISOString();
    await master.context.registry.submit({ type: 'builtin_state', owner: 'marathon', puts: [{ key: appKey(longId), value: { app: bad, version, configVersion: version, owner: 'bob' } as unknown as JsonValue }] });
    // Alice's app, scaled up from 1 to 3, all before the agent offers anything: the first
    // offer's ACCEPT carries bob's tasks and hers together.
    expect((await app('alice', 'POST', '/v2/apps', small('/alice/web', { instances: 1 }))).status).toBe(201);
    expect((await app('alice', 'PUT', '/v2/apps/alice/web?force=true', { instances: 3 })).status).toBe(200);
    const a = await connectAgent();
    const started = Date.now();
    await waitFor("alice's three tasks", () => (a.launched.filter((t) => t.taskId.startsWith('alice_web.')).length >= 3 ? true : undefined), 30_000);
    const took = Date.now() - started;
    // Bob's never reach the agent; each was answered TASK_ERROR naming the label at fault.
    expect(a.launched.filter((t) => t.taskId.startsWith('bbbb')).length).toBe(0);
    const failure = await waitFor("bob's task failure", async () => {
      const r = await app('bob', 'GET', `/v2/apps${longId}`);
      return r.body?.app?.lastTaskFailure;
    }, 15_000);
    expect(failure.state).toBe('TASK_ERROR');
    expect(failure.message).toMatch(/labels\.labels\[0\]\.value.*5001 characters, at most 4096/);
    console.log(`alice's scale-up to 3 with bob's unlaunchable app beside it: ${took} ms`);
    // Bob deletes it (it is his); alice's app runs on.
    expect((await app('bob', 'DELETE', `/v2/apps${longId}`)).status).toBe(200);
  });

  it('refuses a 5,000-character app id and instances: 1e8 at submit, 422 naming the field', async () => {
    const id = await app('bob', 'POST', '/v2/apps', small('a'.repeat(5000)));
    expect(id.status).toBe(422);
    expect(id.body.details.map((d: any) => d.path)).toEqual(['/id']);
    expect(id.body.details[0].errors[0]).toMatch(/5001 characters; an app id is at most 219/);
    const inst = await app('bob', 'POST', '/v2/apps', '{"id": "/bob/many", "cmd": "sleep 1", "instances": 1e8}');
    expect(inst.status).toBe(422);
    expect(inst.body.details).toEqual([{ path: '/instances', errors: ['got 100000000, expected 10000 or less'] }]);
    // A PUT that scales there is refused the same way.
    expect((await app('bob', 'POST', '/v2/apps', small('/bob/scaled'))).status).toBe(201);
    const put = await app('bob', 'PUT', '/v2/apps/bob/scaled', '{"instances": 1e8}');
    expect(put.status).toBe(422);
    expect(put.body.details[0].path).toBe('/instances');
    expect((await app('bob', 'DELETE', '/v2/apps/bob/scaled')).status).toBe(200);
  });

  it("refuses bob's hundred apps of 900 KB of environment at submit, and keeps nothing of them", async () => {
    const before = process.memoryUsage().heapUsed;
    const env = { BIG: 'x'.repeat(900 * 1024) };
    for (let i = 0; i < 100; i++) {
      const r = await app('bob', 'POST', '/v2/apps', small(`/bob/fat-${i}`, { env }));
      expect(r.status).toBe(422);
      const paths = r.body.details.map((d: any) => d.path);
      expect(paths).toEqual(['/env/BIG', '/env']);
      expect(r.body.details[1].errors[0]).toMatch(/a task carries at most 131072 \(the master's --max-task-env\)/);
    }
    // A job's replicas and a framework's task meet the same cap.
    const job = await rest('bob', 'POST', '/api/v1/jobs', { name: 'fat', kind: 'batch', groups: [{ name: 'w', template: { command: 'true', cpus: 0.1, mem: 8, env } }] });
    expect(job.status).toBe(400);
    expect(job.body).toMatchObject({ code: 'CAIRN_INVALID_JOB', field: 'groups[0].template.env.BIG' });
    // Nothing of bob's is kept: the services' store holds no app of his.
    const store = servicesStore();
    expect([...store.keys()].filter((k) => k.includes('/bob/fat'))).toEqual([]);
    expect(Buffer.byteLength(JSON.stringify([...store]))).toBeLessThan(200 * 1024);
    console.log(`heap after 100 refused 900 KB apps: ${Math.round((process.memoryUsage().heapUsed - before) / 2 ** 20)} MiB more (garbage not yet collected included)`);
  });

  it("refuses bob's creates past his object and byte quotas, naming the quota and its flag, while alice still creates; deleting frees his", async () => {
    // Two apps of 100 KB of environment: each is kept twice (the app and its version).
    const env = { D1: 'x'.repeat(50 * 1024), D2: 'x'.repeat(50 * 1024) };
    expect((await app('bob', 'POST', '/v2/apps', small('/bob/data-1', { env }))).status).toBe(201);
    expect((await app('bob', 'POST', '/v2/apps', small('/bob/data-2', { env }))).status).toBe(201);
    const bytes = await app('bob', 'POST', '/v2/apps', small('/bob/data-3', { env }));
    expect(bytes.status).toBe(403);
    expect(bytes.headers.get('cairn-error-code')).toBe('CAIRN_QUOTA_EXCEEDED');
    expect(bytes.body.details[0].path).toBe('/id');
    expect(bytes.body.message).toMatch(/principal 'bob' stores \d+ bytes.*at most 524288 \(the master's --max-object-bytes-per-principal/);

    // Small objects up to the count: 2 apps + 2 more apps + a secret = 5.
    expect((await app('bob', 'POST', '/v2/apps', small('/bob/s-1'))).status).toBe(201);
    expect((await app('bob', 'POST', '/v2/apps', small('/bob/s-2'))).status).toBe(201);
    const dockerConfig = { auths: { 'registry.example:5000': { auth: Buffer.from('u:p').toString('base64') } } };
    expect((await rest('bob', 'POST', '/api/v1/secrets', { name: 'bob-pull', dockerConfig })).status).toBe(201);
    const count = await app('bob', 'POST', '/v2/apps', small('/bob/s-3'));
    expect(count.status).toBe(403);
    expect(count.headers.get('cairn-error-code')).toBe('CAIRN_QUOTA_EXCEEDED');
    expect(count.body.message).toMatch(/principal 'bob' owns 5 objects.*at most 5 \(the master's --max-objects-per-principal\)/);
    // Jobs and secrets count with apps, and are refused the same way.
    const job = await rest('bob', 'POST', '/api/v1/jobs', { name: 'one-more', kind: 'batch', groups: [{ name: 'w', template: { command: 'true', cpus: 0.1, mem: 8 } }] });
    expect(job.status).toBe(403);
    expect(job.body).toMatchObject({ code: 'CAIRN_QUOTA_EXCEEDED', field: 'name' });
    expect(job.body.message).toMatch(/--max-objects-per-principal/);
    expect((await rest('bob', 'POST', '/api/v1/secrets', { name: 'bob-pull-2', dockerConfig })).body).toMatchObject({ code: 'CAIRN_QUOTA_EXCEEDED' });
    // A change that makes nothing larger still passes (bob can scale what he has).
    expect((await app('bob', 'PUT', '/v2/apps/bob/s-1', { instances: 0, cmd: 'sleep 1000' })).status).toBe(200);

    // Alice is not bob.
    expect((await app('alice', 'POST', '/v2/apps', small('/alice/other'))).status).toBe(201);
    expect((await rest('alice', 'POST', '/api/v1/jobs', { name: 'alice-job', kind: 'batch', groups: [{ name: 'w', template: { command: 'true', cpus: 0.1, mem: 8 } }] })).status).toBe(201);

    // Deleting frees the quota.
    expect((await app('bob', 'DELETE', '/v2/apps/bob/data-1')).status).toBe(200);
    expect((await app('bob', 'POST', '/v2/apps', small('/bob/s-3'))).status).toBe(201);
  });

  it("launches a framework's good task and answers the one with an over-long label TASK_ERROR naming it", async () => {
    const a = agent ?? (await connectAgent());
    const s = new RawScheduler(master.url, bearer('alice'));
    schedulers.push(s);
    expect((await s.subscribe({ user: '', name: 'alice-raw' })).status).toBe(200);
    const offer = (await s.next((e) => e.type === 'OFFERS', 20_000)).offers.offers[0];
    const agentId = offer.agent_id.value;
    const good = taskInfo('alice-good', agentId, { cpus: 0.1, mem: 16 }, 'sleep 100');
    const bad = taskInfo('alice-bad', agentId, { cpus: 0.1, mem: 16 }, 'sleep 100', { labels: { labels: [{ key: 'team', value: 'x'.repeat(5000) }] } });
    const r = await s.call({ type: 'ACCEPT', accept: { offer_ids: [offer.id], operations: [{ type: 'LAUNCH', launch: { task_infos: [bad, good] } }] } });
    expect(r.status).toBe(202);
    const error = await s.next((e) => e.type === 'UPDATE' && e.update.status.task_id.value === 'alice-bad');
    expect(error.update.status).toMatchObject({ state: 'TASK_ERROR', reason: 'REASON_TASK_INVALID', source: 'SOURCE_MASTER' });
    expect(error.update.status.message).toMatch(/task_infos\[0\]\.labels\.labels\[0\]\.value.*5000 characters, at most 4096/);
    await waitFor('the good task on the agent', () => (a.launched.some((t) => t.taskId === 'alice-good') ? true : undefined));
    expect(a.launched.some((t) => t.taskId === 'alice-bad')).toBe(false);
    expect(master.context.registry.state.tasks.has('alice-bad')).toBe(false);
  });
});
