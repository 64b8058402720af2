// Bounds on what clients send the master: deeply nested JSON answers 400 (it used to
// overflow the stack: 500), over-long strings answer 400 naming the field, an oversized
// body is refused; nothing of it is stored, and the master keeps serving.

import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { rmSync } from 'node:fs';
import { startMaster, type MasterHandle } from '../../master/server.ts';
import { MasterAuth } from '../../master/auth/master-auth.ts';
import { MAX_BODY_BYTES, MAX_JSON_DEPTH } from '../../shared/json-body.ts';
import { silentLogger } from '../../shared/logger.ts';
import { FakeAgent } from '../harness/fake-agent.ts';
import { tempDir, waitFor } from '../harness/processes.ts';
import { RawScheduler, taskInfo } from '../harness/raw-scheduler.ts';

let master: MasterHandle;
let dir: string;
const closers: (() => unknown)[] = [];

beforeEach(async () => {
  dir = tempDir();
  master = await startMaster({ auth: MasterAuth.off(), dataDir: dir, port: 0, host: '127.0.0.1', dnsPort: null, logger: silentLogger(), allocationIntervalMs: 50 });
});

afterEach(async () => {
  for (const c of closers.splice(0).reverse()) await c();
  await master.stop();
  rmSync(dir, { recursive: true, force: true });
});

const post = (path: string, body: string, headers: Record<string, string> = {}) =>
  fetch(`${master.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });

async function subscribe(info: Record<string, unknown>): Promise<{ status: number; body: any; scheduler: RawScheduler }> {
  const s = new RawScheduler(master.url);
  closers.push(() => s.close());
  const r = await s.subscribe({ user: 'test', name: 'fw', ...info });
  return { status: r.status, body: r.body ? JSON.parse(r.body) : undefined, scheduler: s };
}

describe('bounds on client input', () => {
  it('answers 400 to deeply nested JSON on every route, and keeps serving', async () => {
    const nested = '['.repeat(100_000) + ']'.repeat(100_000);
    for (const path of ['/api/v1/scheduler', '/api/v1/agents/a1/drain', '/api/v1/tasks/t1/kill', '/api/v1/masters']) {
      const r = await post(path, nested);
      expect(r.status).toBe(400);
      expect(await r.json()).toMatchObject({ code: 'CAIRN_BAD_REQUEST', field: 'body', message: expect.stringContaining(`more than ${MAX_JSON_DEPTH} deep`) });
    }
    // Nested inside a real call, with a charset in the content type, and inside an object.
    const deepCall = `{"type":"SUBSCRIBE","subscribe":{"framework_info":{"user":"u","name":"n","labels":${'{"a":'.repeat(10_000)}1${'}'.repeat(10_000)}}}}`;
    const r2 = await post('/api/v1/scheduler', deepCall, { 'content-type': 'application/json; charset=utf-8' });
    expect(r2.status).toBe(400);
    expect((await r2.json()).field).toBe('body');
    const r3 = await fetch(`${master.url}/api/v1/roles/ml`, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: nested });
    expect(r3.status).toBe(400);

    // Still serving, and ordinary JSON still parses (a __proto__ key is still refused).
    expect((await fetch(`${master.url}/health`)).status).toBe(200);
    const { status, scheduler } = await subscribe({});
    expect(status).toBe(200);
    expect(scheduler.frameworkId).not.toBe('');
    const proto = await post('/api/v1/scheduler', '{"type":"SUBSCRIBE","__proto__":{"x":1}}');
    expect(proto.status).toBe(400);
    const state = await (await fetch(`${master.url}/api/v1/state`)).json();
    expect(state.frameworks).toHaveLength(1);
  });

  it('refuses over-long names naming the field, and stores nothing', async () => {
    const fi = 'subscribe.framework_info';
    for (const [info, field] of [
      [{ name: 'n'.repeat(15 * 1024 * 1024 / 4) }, `${fi}.name`],
      [{ user: 'u'.repeat(100_000) }, `${fi}.user`],
      [{ principal: 'p'.repeat(100_000) }, `${fi}.principal`],
      [{ roles: ['r'.repeat(100_000)] }, `${fi}.roles[0]`],
    ] as const) {
      const r = await subscribe(info);
      expect(r.status).toBe(400);
      expect(r.body).toMatchObject({ code: 'CAIRN_BAD_REQUEST', field, message: expect.stringMatching(/is too long: \d+ characters, at most \d+/) });
    }
    expect((await (await fetch(`${master.url}/api/v1/state`)).json()).frameworks).toHaveLength(0);

    const agent = new FakeAgent({ masterUrl: master.url });
    closers.push(() => agent.close());
    await agent.connect();
    const { scheduler: s } = await subscribe({});
    const offer = (await s.next((e) => e.type === 'OFFERS')).offers.offers[0];
    const t = (i: number) => `accept.operations[0].launch.task_infos[${i}]`;
    const base = (id: string) => taskInfo(id, agent.agentId, { cpus: 0.1, mem: 16 }, 'true');
    const bad = [
      [{ ...base('b0'), name: 'x'.repeat(100_000) }, `${t(0)}.name`],
      [{ ...base('b1'), task_id: { value: 'x'.repeat(100_000) } }, `${t(1)}.task_id.value`],
      [{ ...base('b2'), command: { shell: true, value: 'x'.repeat(65 * 1024) } }, `${t(2)}.command.value`],
      [{ ...base('b3'), command: { shell: true, value: 'true', environment: { variables: [{ name: 'V', value: 'v'.repeat(65 * 1024) }] } } }, `${t(3)}.command.environment.variables[0].value`],
      [{ ...base('b4'), labels: { labels: [{ key: 'k'.repeat(100_000), value: '' }] } }, `${t(4)}.labels.labels[0].key`],
    ] as const;
    // Each over-long task is refused on its own (TASK_ERROR naming its field, as Mesos answers an
    // invalid task), and the task within the bounds in the same ACCEPT launches.
    const ok = await s.call({ type: 'ACCEPT', accept: { offer_ids: [offer.id], operations: [{ type: 'LAUNCH', launch: { task_infos: [...bad.map(([task]) => task), { ...base('ok'), name: 'n'.repeat(1024) }] } }] } });
    expect(ok.status).toBe(202);
    for (const [task, field] of bad) {
      const e = await s.next((x) => x.type === 'UPDATE' && x.update.status.task_id.value === task.task_id.value);
      expect(e.update.status).toMatchObject({ state: 'TASK_ERROR', reason: 'REASON_TASK_INVALID' });
      expect(e.update.status.message).toMatch(new RegExp(`^${field.replace(/[[\].]/g, '\\$&')}: `));
    }
    await waitFor('the launch reached the agent', () => agent.launched.length === 1);
    expect(agent.launched[0]!.taskId).toBe('ok');
    expect([...master.master.registry.state.tasks.keys()]).toEqual(['ok']);
  });

  it('refuses an agent registration with an over-long hostname, naming the field; stores nothing', async () => {
    const bad = new FakeAgent({ masterUrl: master.url, hostname: 'h'.repeat(100_000) });
    closers.push(() => bad.close());
    await expect(bad.connect()).rejects.toThrow(/closed by the master/);
    expect(bad.received).toContainEqual({ error: expect.objectContaining({ code: 'CAIRN_BAD_FRAME', message: expect.stringContaining('register.hostname: is too long: 100000 characters') }) });
    expect(master.master.registry.state.agents.size).toBe(0);
    const good = new FakeAgent({ masterUrl: master.url, hostname: 'h'.repeat(253) });
    closers.push(() => good.close());
    await good.connect();
    expect(master.master.registry.state.agents.get(good.agentId)?.hostname).toBe('h'.repeat(253));
  });

  it('refuses a body over the limit with 413, and keeps serving', async () => {
    const body = JSON.stringify({ type: 'SUBSCRIBE', subscribe: { framework_info: { user: 'u', name: 'x'.repeat(MAX_BODY_BYTES) } } });
    const r = await post('/api/v1/scheduler', body);
    expect(r.status).toBe(413);
    expect(await r.json()).toMatchObject({ code: 'CAIRN_BAD_REQUEST', field: 'body' });
    expect((await fetch(`${master.url}/health`)).status).toBe(200);
    expect((await (await fetch(`${master.url}/api/v1/state`)).json()).frameworks).toHaveLength(0);
  });
});
