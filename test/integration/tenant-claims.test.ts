// What one tenant could claim of another's under strict ACLs (issue 22, findings 3-5): an
// in-process master with principals alice, bob and admin and a simulated agent. Bob may not
// use the production class (subscribe label, job, experiment, app), while Alice's job of that
// class is checked against her, not against the built-in framework that runs it; Bob may not
// name his framework `marathon` (or any built-in's name, or a name Alice holds); the agent's
// usage (the latest sample and the history) shows each caller only the tasks it may view; Bob's flood of login links leaves
// Alice's `cairn ui` working.

import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { rmSync } from 'node:fs';
import pino from 'pino';
import { startMaster, type MasterHandle } from '../../master/server.ts';
import { MAX_LINKS_PER_PRINCIPAL } from '../../master/ui/login-links.ts';
import { FakeAgent } from '../harness/fake-agent.ts';
import { RawScheduler } from '../harness/raw-scheduler.ts';
import { tempDir, waitFor } from '../harness/processes.ts';
import { marathon } from '../harness/marathon.ts';
import { strictTenantAuth, TENANT_AGENT as AGENT, tenantBearer as bearer, tenantSecret as secret, type Tenant as User } from '../harness/tenants.ts';

const PRODUCTION = { labels: [{ key: 'cairn.priority-class', value: 'production' }] };

let master: MasterHandle;
let agent: FakeAgent;
let usageServer: Server;
let dir: string;
const schedulers: RawScheduler[] = [];

function scheduler(u: User): RawScheduler {
  const s = new RawScheduler(master.url, bearer(u));
  schedulers.push(s);
  return s;
}

async function send(u: User, method: string, path: string, body?: unknown): Promise<{ status: number; body: any }> {
  const res = await fetch(`${master.url}${path}`, {
    method,
    headers: { ...bearer(u), ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  const text = await res.text();
  return { status: res.status, body: text === '' ? undefined : JSON.parse(text) };
}

/** A /v2 call, its refusal in Cairn's shape (code from the header, field from details). */
async function app(u: User, method: string, path: string, body?: unknown): Promise<{ status: number; body: any }> {
  const r = await marathon(master.url, method, path, body, bearer(u));
  const code = r.headers.get('cairn-error-code');
  return code === null ? r : { ...r, body: { ...r.body, code, field: String(r.body.details?.[0]?.path ?? '/').slice(1) } };
}

const JOB = (name: string, extra: Record<string, unknown> = {}) => ({
  name, kind: 'batch', role: '*', ...extra,
  groups: [{ name: 'w', replicas: 1, template: { command: 'sleep 1000', cpus: 0.1, mem: 32 } }],
});

const EXPERIMENT = (name: string, priorityClassName: string) => ({
  metadata: { name },
  spec: { priorityClassName, objective: { metricName: 'loss', type: 'minimize' }, algorithm: { algorithmName: 'random' }, parameters: [{ name: 'x', parameterType: 'double', feasibleSpace: { min: '0', max: '1' } }], trialTemplate: { command: 'echo loss=${x}' } },
});

beforeAll(async () => {
  dir = tempDir();
  const auth = strictTenantAuth({ use_priority_classes: [{ principals: { values: ['alice'] }, priority_classes: { values: ['production'] } }] });
  // The agent's usage API, as the real agent answers it: a sample of every task it was given.
  usageServer = createServer((req, res) => {
    if ((req.url !== '/api/v1/usage' && req.url !== '/api/v1/usage/history') || req.headers.authorization !== `Bearer ${AGENT.secret}`) {
      res.writeHead(404).end();
      return;
    }
    const tasks = agent.launched.map((t) => ({ taskId: t.taskId, frameworkId: t.frameworkId, timestampMs: 1, source: 'proc', cpuSeconds: 1, cpusUsed: 0.5, cpusLimit: 0.1, memoryBytes: 1000, rssBytes: 900, memoryLimitBytes: 32 << 20, gpus: [] }));
    if (req.url === '/api/v1/usage/history') {
      // One point of the agent's history (agent/usage/history.ts): its sums and each task's share.
      const point = { timestampMs: 1, cpusUsed: 0.5 * tasks.length, cpusLimit: 0.1 * tasks.length, memoryBytes: 1000 * tasks.length, memoryLimitBytes: (32 << 20) * tasks.length, gpus: [], tasks: tasks.map((t) => ({ taskId: t.taskId, frameworkId: t.frameworkId, cpusUsed: 0.5, cpusLimit: 0.1, memoryBytes: 1000, memoryLimitBytes: 32 << 20, gpuIndices: [] })) };
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ intervalMs: 1000, points: [point] }));
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({
      agentId: agent.agentId, timestampMs: 1, intervalMs: 1000, tasks, gpus: [], unhealthyGpus: [],
      total: { tasks: tasks.length, cpusUsed: 0.5 * tasks.length, cpusLimit: 0.1 * tasks.length, memoryBytes: 1000 * tasks.length, rssBytes: 900 * tasks.length, memoryLimitBytes: (32 << 20) * tasks.length, gpus: 0, gpuMemoryUsedMiB: 0 },
    }));
  });
  await new Promise<void>((resolve) => usageServer.listen(0, '127.0.0.1', resolve));
  master = await startMaster({ auth, dataDir: dir, port: 0, host: '127.0.0.1', dnsPort: null, logger: pino({ level: 'silent' }) });
  agent = new FakeAgent({ masterUrl: master.url, hostname: 'h1', resources: 'cpus:8;mem:16384;disk:100000;ports:[31000-32000]', headers: { authorization: `Bearer ${AGENT.secret}` }, httpPort: (usageServer.address() as AddressInfo).port });
  await agent.connect();
}, 60_000);

// A framework that holds its offers would keep the services' apps waiting: each test closes its own.
afterEach(() => {
  for (const s of schedulers.splice(0)) s.close();
});

afterAll(async () => {
  await agent?.close();
  await master?.stop();
  await new Promise((resolve) => usageServer?.close(resolve));
  rmSync(dir, { recursive: true, force: true });
});

describe('what one tenant may claim of another', { timeout: 120_000 }, () => {
  it('refuses a priority class its principal may not use, wherever it is named; the default class is everyone\'s', async () => {
    // Bob subscribes with the production class, as he did to preempt Alice: refused at SUBSCRIBE.
    const sub = await scheduler('bob').subscribe({ user: 'nobody', name: 'bob-prod', labels: PRODUCTION });
    expect(sub.status).toBe(403);
    expect(JSON.parse(sub.body!)).toMatchObject({ code: 'CAIRN_FORBIDDEN', field: 'subscribe.framework_info.labels' });
    expect(JSON.parse(sub.body!).message).toMatch(/use_priority_classes.*'bob'.*priority_class 'production'/);
    // Bob's job, experiment and app of that class (any spelling): refused, naming the field.
    const job = await send('bob', 'POST', '/api/v1/jobs', JOB('bob-prod', { priorityClassName: 'Production' }));
    expect(job.status).toBe(403);
    expect(job.body).toMatchObject({ code: 'CAIRN_FORBIDDEN', field: 'priorityClassName' });
    expect(job.body.message).toMatch(/use_priority_classes/);
    const exp = await send('bob', 'POST', '/api/v1/experiments', EXPERIMENT('bob-prod', 'production'));
    expect(exp.status).toBe(403);
    expect(exp.body).toMatchObject({ code: 'CAIRN_FORBIDDEN', field: 'spec.priorityClassName' });
    const a = await app('bob', 'POST', '/v2/apps', { id: '/bob/web', cmd: 'sleep 1000', cpus: 0.1, mem: 32, labels: { 'cairn.priority-class': 'production' } });
    expect(a.status).toBe(403);
    expect(a.body).toMatchObject({ code: 'CAIRN_FORBIDDEN', field: 'labels/cairn.priority-class' });
    const state = await send('admin', 'GET', '/api/v1/state');
    expect(state.body.frameworks.some((f: any) => f.name === 'bob-prod')).toBe(false);
    expect((await send('admin', 'GET', '/api/v1/jobs/bob-prod')).status).toBe(404);

    // The default class (named or not) is everyone's.
    expect((await scheduler('bob').subscribe({ user: 'nobody', name: 'bob-batch', labels: { labels: [{ key: 'cairn.priority-class', value: 'research' }] } })).status).toBe(200);
    expect((await send('bob', 'POST', '/api/v1/jobs', JOB('bob-batch'))).status).toBe(201);

    // Alice's production job runs on the built-in jobs framework, and is checked against her.
    const mine = await send('alice', 'POST', '/api/v1/jobs', JOB('alice-prod', { priorityClassName: 'production' }));
    expect(mine.status, JSON.stringify(mine.body)).toBe(201);
    expect((await scheduler('alice').subscribe({ user: 'nobody', name: 'alice-prod', labels: PRODUCTION })).status).toBe(200);
  });

  it('reserves the built-ins\' framework names and a name another principal holds', async () => {
    for (const name of ['marathon', 'Marathon', 'jobs', 'tuning', 'web.jobs', 'x.slave']) {
      const r = await scheduler('bob').subscribe({ user: 'nobody', name });
      expect(r.status, name).toBe(403);
      expect(JSON.parse(r.body!), name).toMatchObject({ code: 'CAIRN_FORBIDDEN', field: 'subscribe.framework_info.name' });
      expect(JSON.parse(r.body!).message).toMatch(/reserved/);
    }
    // A name is its first live principal's: Bob cannot answer under Alice's framework's name.
    expect((await scheduler('alice').subscribe({ user: 'nobody', name: 'alice-svc' })).status).toBe(200);
    for (const name of ['alice-svc', 'ALICE_SVC', 'bob.alice-svc']) {
      const r = await scheduler('bob').subscribe({ user: 'nobody', name });
      expect(r.status, name).toBe(403);
      expect(JSON.parse(r.body!)).toMatchObject({ code: 'CAIRN_FORBIDDEN', field: 'subscribe.framework_info.name' });
      expect(JSON.parse(r.body!).message).toMatch(/principal 'alice'/);
    }
    // Alice may run a second framework of her own name.
    expect((await scheduler('alice').subscribe({ user: 'nobody', name: 'alice-svc' })).status).toBe(200);
  });

  it("shows an agent's usage only for the tasks the caller may view", async () => {
    expect((await app('alice', 'POST', '/v2/apps', { id: '/alice/web', cmd: 'sleep 1000', cpus: 0.1, mem: 32, instances: 2 })).status).toBe(201);
    expect((await app('bob', 'POST', '/v2/apps', { id: '/bob/web', cmd: 'sleep 1000', cpus: 0.1, mem: 32, instances: 1 })).status).toBe(201);
    const running = (u: User, id: string) => async () => {
      const r = await app(u, 'GET', `/v2/apps${id}`);
      return r.status === 200 ? (r.body.app.tasks as any[]).filter((t) => t.state === 'TASK_RUNNING').map((t) => t.id as string) : [];
    };
    const aliceTasks = await waitFor('alice\'s 2 tasks', async () => ((await running('alice', '/alice/web')()).length === 2 ? running('alice', '/alice/web')() : undefined), 30_000, 100);
    const bobTasks = await waitFor('bob\'s task', async () => ((await running('bob', '/bob/web')()).length === 1 ? running('bob', '/bob/web')() : undefined), 30_000, 100);

    const asBob = await send('bob', 'GET', `/api/v1/agents/${agent.agentId}/usage`);
    expect(asBob.status).toBe(200);
    const bobSees = (asBob.body.tasks as any[]).map((t) => t.taskId);
    expect(bobSees).toEqual(expect.arrayContaining(bobTasks));
    for (const t of aliceTasks) expect(bobSees).not.toContain(t);
    expect(asBob.body.total.tasks).toBe(bobSees.length);
    expect(asBob.body.hiddenTasks).toBeGreaterThanOrEqual(2);

    const asAdmin = await send('admin', 'GET', `/api/v1/agents/${agent.agentId}/usage`);
    expect((asAdmin.body.tasks as any[]).map((t) => t.taskId)).toEqual(expect.arrayContaining([...aliceTasks, ...bobTasks]));
    expect(asAdmin.body.hiddenTasks).toBeUndefined();

    // The history the dashboard charts: the same tasks, and sums over those alone.
    const bobHistory = await send('bob', 'GET', `/api/v1/agents/${agent.agentId}/usage/history`);
    expect(bobHistory.status).toBe(200);
    const [bobPoint] = bobHistory.body.points as any[];
    expect(bobPoint.tasks.map((t: any) => t.taskId).sort()).toEqual([...bobSees].sort());
    expect(bobPoint.cpusUsed).toBeCloseTo(0.5 * bobSees.length);
    expect(bobPoint.memoryBytes).toBe(1000 * bobSees.length);
    const adminHistory = await send('admin', 'GET', `/api/v1/agents/${agent.agentId}/usage/history`);
    expect((adminHistory.body.points[0].tasks as any[]).map((t) => t.taskId)).toEqual(expect.arrayContaining([...aliceTasks, ...bobTasks]));
    // A task's own history is refused to who may not view the task.
    expect((await send('bob', 'GET', `/api/v1/tasks/${encodeURIComponent(aliceTasks[0]!)}/usage/history`)).status).toBe(403);
  });

  it("keeps one principal's flood of login links from locking out another", async () => {
    let refused: { status: number; body: any } | undefined;
    for (let i = 0; i <= MAX_LINKS_PER_PRINCIPAL && !refused; i++) {
      const r = await send('bob', 'POST', '/api/v1/ui/links', {});
      if (r.status !== 201) refused = r;
    }
    expect(refused?.status).toBe(400);
    expect(refused?.body.message).toMatch(/principal 'bob'/);
    const link = await send('alice', 'POST', '/api/v1/ui/links', {});
    expect(link.status).toBe(201);
    const redeemed = await fetch(`${master.url}/api/v1/ui/redeem`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ code: link.body.code }) });
    expect(redeemed.status).toBe(200);
    expect(((await redeemed.json()) as { token: string }).token).toBe(secret('alice'));
  });
});
