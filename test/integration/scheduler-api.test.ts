// The Mesos v1 scheduler API end to end against a real master (in this process) and
// simulated agents speaking the real agent protocol: subscription, offers, launch, status
// updates with acknowledgement, decline filters, kill, reconcile, and bad input.

import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { rmSync } from 'node:fs';
import { startMaster, type MasterHandle } from '../../master/server.ts';
import { silentLogger } from '../../shared/logger.ts';
import { FakeAgent } from '../harness/fake-agent.ts';
import { tempDir, waitFor } from '../harness/processes.ts';
import { RawScheduler, taskInfo } from '../harness/raw-scheduler.ts';
import { MasterAuth } from '../../master/auth/master-auth.ts';

let master: MasterHandle;
let dir: string;
const agents: FakeAgent[] = [];
const schedulers: RawScheduler[] = [];

async function agent(opts: Partial<ConstructorParameters<typeof FakeAgent>[0]> = {}): Promise<FakeAgent> {
  const a = new FakeAgent({ masterUrl: master.url, ...opts });
  agents.push(a);
  await a.connect();
  return a;
}

async function framework(info: Record<string, unknown> = {}): Promise<RawScheduler> {
  const s = new RawScheduler(master.url);
  schedulers.push(s);
  const r = await s.subscribe({ user: 'test', name: 'fw', roles: null, role: null, failover_timeout: null, ...info });
  expect(r.status).toBe(200);
  return s;
}

beforeEach(async () => {
  dir = tempDir();
  master = await startMaster({ auth: MasterAuth.off(), dataDir: dir, port: 0, host: '127.0.0.1', logger: silentLogger(), allocationIntervalMs: 50 });
});

afterEach(async () => {
  for (const s of schedulers.splice(0)) s.close();
  await Promise.all(agents.splice(0).map((a) => a.close()));
  await master.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe('scheduler API', () => {
  it('subscribes, offers the agent with its url, launches, and delivers acknowledged updates', async () => {
    const a = await agent({ hostname: 'host-a' });
    const s = await framework();
    expect(s.streamId).toMatch(/[0-9a-f-]{36}/);
    const offersEv = await s.next((e) => e.type === 'OFFERS');
    const offer = offersEv.offers.offers[0];
    expect(offer.agent_id.value).toBe(a.agentId);
    expect(offer.url).toEqual({ scheme: 'http', address: { hostname: 'host-a', ip: '127.0.0.1', port: 1 }, path: '/' });
    expect(offer.resources.find((r: any) => r.name === 'cpus').scalar.value).toBe(8);

    const accept = await s.call({
      type: 'ACCEPT',
      accept: { offer_ids: [offer.id], operations: [{ type: 'LAUNCH', launch: { task_infos: [taskInfo('t1', a.agentId, { cpus: 0.5, mem: 64, ports: [[31000, 31000]] }, 'true')] } }], filters: null },
    });
    expect(accept.status).toBe(202);
    await waitFor('launch on the agent', () => a.launched.length === 1);
    expect(a.launched[0].resources).toBe('cpus:0.5;mem:64;ports:[31000-31000]');
    const up = await s.next((e) => e.type === 'UPDATE' && e.update.status.state === 'TASK_RUNNING');
    expect(up.update.status.task_id.value).toBe('t1');
    expect(Buffer.from(up.update.status.uuid, 'base64')).toHaveLength(16);
    // The agent got its acknowledgement from the master once the update was durable.
    await waitFor('agent ack', () => a.acked.size === 1);

    const ack = await s.call({ type: 'ACKNOWLEDGE', acknowledge: { agent_id: { value: a.agentId }, task_id: { value: 't1' }, uuid: up.update.status.uuid } });
    expect(ack.status).toBe(202);
    const state = await (await fetch(`${master.url}/api/v1/state`)).json();
    expect(state.tasks).toEqual([expect.objectContaining({ id: 't1', state: 'TASK_RUNNING', agentId: a.agentId })]);
    expect(state.agents[0].used).toBe('cpus:0.5;mem:64;ports:[31000-31000]');
    await waitFor('unacked cleared', () => !master.master.registry.state.tasks.get('t1')!.unacked);
  });

  it('does not re-offer a declined agent to that framework within refuse_seconds', async () => {
    await agent();
    const s = await framework();
    const first = (await s.next((e) => e.type === 'OFFERS')).offers.offers[0];
    const mark = s.events.length;
    const t0 = Date.now();
    expect((await s.call({ type: 'DECLINE', decline: { offer_ids: [first.id], filters: { refuse_seconds: 1 } } })).status).toBe(202);
    await s.next((e) => e.type === 'OFFERS', 5_000, mark);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(950);
  });

  it('refuses bad calls with a 4xx naming the field, and changes nothing', async () => {
    const a = await agent();
    const s = await framework();
    const offer = (await s.next((e) => e.type === 'OFFERS')).offers.offers[0];
    const post = (body: string, headers: Record<string, string> = {}) =>
      fetch(`${master.url}/api/v1/scheduler`, { method: 'POST', headers: { 'content-type': 'application/json', 'mesos-stream-id': s.streamId, ...headers }, body });

    const malformed = await post('{"type": "ACCEPT", ');
    expect(malformed.status).toBe(400);
    expect((await malformed.json()).field).toBe('body');

    const unknown = await s.call({ type: 'FROBNICATE' });
    expect(unknown.status).toBe(400);
    expect(JSON.parse(unknown.body)).toMatchObject({ code: 'CAIRN_UNKNOWN_CALL', field: 'type' });

    const tooMuch = await s.call({
      type: 'ACCEPT',
      accept: { offer_ids: [offer.id], operations: [{ type: 'LAUNCH', launch: { task_infos: [taskInfo('big', a.agentId, { cpus: 64, mem: 64 }, 'true')] } }] },
    });
    expect(tooMuch.status).toBe(400);
    expect(JSON.parse(tooMuch.body)).toMatchObject({ code: 'CAIRN_INSUFFICIENT_RESOURCES', field: 'accept.operations.launch.task_infos[0].resources' });

    const noStream = await post(JSON.stringify({ type: 'REVIVE', framework_id: { value: s.frameworkId } }), { 'mesos-stream-id': 'nope' });
    expect(noStream.status).toBe(400);
    expect((await noStream.json()).field).toBe('Mesos-Stream-Id');

    // Nothing above launched anything or consumed the offer.
    expect(a.launched).toHaveLength(0);
    expect(master.master.registry.state.tasks.size).toBe(0);
    expect(master.master.offers.get(offer.id.value)).toBeDefined();

    // A launch on an offer that has been rescinded is refused with that reason.
    master.master.offers.get(offer.id.value)!.createdAtMs = 0; // let the offer time out now
    await s.next((e) => e.type === 'RESCIND', 5_000);
    const late = await s.call({
      type: 'ACCEPT',
      accept: { offer_ids: [offer.id], operations: [{ type: 'LAUNCH', launch: { task_infos: [taskInfo('late', a.agentId, { cpus: 1, mem: 32 }, 'true')] } }] },
    });
    expect(late.status).toBe(400);
    expect(JSON.parse(late.body)).toMatchObject({ code: 'CAIRN_OFFER_RESCINDED', field: 'accept.offer_ids[0]' });
    expect(master.master.registry.state.tasks.size).toBe(0);

    // A task that is wrong in itself is refused on its own, as Mesos does: TASK_ERROR naming the
    // field; the ACCEPT is taken (the offer's resources go back) and nothing launches.
    const fresh = (await s.next((e) => e.type === 'OFFERS' && e.offers.offers.some((o: any) => o.id.value !== offer.id.value), 10_000)).offers.offers[0];
    const badResources = await s.call({
      type: 'ACCEPT',
      accept: { offer_ids: [fresh.id], operations: [{ type: 'LAUNCH', launch: { task_infos: [{ ...taskInfo('x', a.agentId, { cpus: 1, mem: 1 }, 'true'), resources: [{ name: 'cpus', type: 'SCALAR', scalar: { value: -1 } }] }] } }] },
    });
    expect(badResources.status).toBe(202);
    const error = await s.next((e) => e.type === 'UPDATE' && e.update.status.task_id.value === 'x');
    expect(error.update.status).toMatchObject({ state: 'TASK_ERROR', reason: 'REASON_TASK_INVALID' });
    expect(error.update.status.message).toMatch(/^accept\.operations\[0\]\.launch\.task_infos\[0\]\.resources\[0\]\.scalar\.value: /);
    expect(a.launched).toHaveLength(0);
    expect(master.master.registry.state.tasks.size).toBe(0);
  });

  it('kills a task and reconciles unknown ones as lost', async () => {
    const a = await agent();
    const s = await framework();
    const offer = (await s.next((e) => e.type === 'OFFERS')).offers.offers[0];
    await s.call({ type: 'ACCEPT', accept: { offer_ids: [offer.id], operations: [{ type: 'LAUNCH', launch: { task_infos: [taskInfo('k1', a.agentId, { cpus: 1, mem: 32 }, 'sleep 100')] } }] } });
    await s.next((e) => e.type === 'UPDATE' && e.update.status.state === 'TASK_RUNNING');
    expect((await s.call({ type: 'KILL', kill: { task_id: { value: 'k1' }, agent_id: { value: a.agentId } } })).status).toBe(202);
    await s.next((e) => e.type === 'UPDATE' && e.update.status.state === 'TASK_KILLED');
    expect(a.killed).toEqual(['k1']);
    await s.call({ type: 'RECONCILE', reconcile: { tasks: [{ task_id: { value: 'ghost' } }] } });
    const rec = await s.next((e) => e.type === 'UPDATE' && e.update.status.task_id.value === 'ghost');
    expect(rec.update.status.state).toBe('TASK_LOST');
  });

  it('refuses a garbage frame from an agent and keeps serving', async () => {
    const good = await agent();
    const bad = new FakeAgent({ masterUrl: master.url });
    agents.push(bad);
    await bad.connect();
    bad.sendRaw(Buffer.from([0xff, 0xff, 0xff, 0x07, 0x01]));
    await waitFor('bad agent disconnected', () => !bad.isOpen);
    const err = bad.received.find((m) => 'error' in m) as { error: { code: string; message: string } } | undefined;
    expect(err?.error.code).toBe('CAIRN_BAD_FRAME');
    const state = await (await fetch(`${master.url}/api/v1/state`)).json();
    expect(state.agents.map((x: any) => x.id).sort()).toEqual([good.agentId, bad.agentId].sort());
    expect((await fetch(`${master.url}/health`)).ok).toBe(true);
  });
  it('keeps a disconnected framework for its failover_timeout, then kills its tasks and removes it', async () => {
    const a = await agent();
    const s = await framework({ failover_timeout: 1 });
    const offer = (await s.next((e) => e.type === 'OFFERS')).offers.offers[0];
    await s.call({ type: 'ACCEPT', accept: { offer_ids: [offer.id], operations: [{ type: 'LAUNCH', launch: { task_infos: [taskInfo('f1', a.agentId, { cpus: 1, mem: 32 }, 'sleep 100')] } }] } });
    await s.next((e) => e.type === 'UPDATE' && e.update.status.state === 'TASK_RUNNING');

    // Disconnect and come back within the timeout: the task is untouched.
    s.close();
    await waitFor('disconnected', () => !master.master.frameworkConnected(s.frameworkId));
    const back = new RawScheduler(master.url);
    schedulers.push(back);
    expect((await back.subscribe({ user: 'test', name: 'fw', failover_timeout: 1, id: { value: s.frameworkId } }, s.frameworkId)).status).toBe(200);
    expect(back.frameworkId).toBe(s.frameworkId);
    await new Promise((r) => setTimeout(r, 1300));
    expect(a.killed).toEqual([]);

    // Disconnect for longer than the timeout: the tasks are killed and the framework is gone.
    back.close();
    await waitFor('tasks killed', () => a.killed.includes('f1'), 5_000);
    await waitFor('framework removed', async () => ((await (await fetch(`${master.url}/api/v1/state`)).json()).frameworks.length === 0 ? true : undefined));
    const again = new RawScheduler(master.url);
    schedulers.push(again);
    const refused = await again.subscribe({ user: 'test', name: 'fw', id: { value: s.frameworkId } }, s.frameworkId);
    expect(refused.status).toBe(403);
    expect(JSON.parse(refused.body!).code).toBe('CAIRN_UNKNOWN_FRAMEWORK');
  });

  it('serves Prometheus metrics', async () => {
    await agent();
    const s = await framework();
    await s.next((e) => e.type === 'OFFERS');
    const text = await (await fetch(`${master.url}/metrics`)).text();
    expect(text).toContain('# TYPE cairn_master_agents gauge');
    expect(text).toMatch(/^cairn_master_agents\{state="reachable"\} 1$/m);
    expect(text).toMatch(/^cairn_master_frameworks\{state="connected"\} 1$/m);
    expect(text).toMatch(/^cairn_master_offers_outstanding 1$/m);
    expect(text).toMatch(/^cairn_master_cpus\{kind="total"\} 8$/m);
  });
  it('sets role weights through REST, durably, and refuses bad ones naming the field', async () => {
    const put = (role: string, body: unknown) => fetch(`${master.url}/api/v1/roles/${role}`, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    expect((await put('ml', { weight: 2.5 })).status).toBe(200);
    const bad = await put('ml', { weight: -1 });
    expect(bad.status).toBe(400);
    expect((await bad.json()).field).toBe('weight');
    expect((await put('bad role!', { weight: 1 })).status).toBe(400);
    // Mesos' /weights answer is kept in the usage view, with the role's row beside it.
    const view = await (await fetch(`${master.url}/api/v1/roles?usage=false`)).json();
    expect(view.weights).toEqual({ ml: 2.5 });
    expect(view.roles.find((r: { role: string }) => r.role === 'ml')).toMatchObject({ role: 'ml', weight: 2.5, guarantee: null, limit: null });
    expect(master.master.registry.state.snapshot().roleWeights).toEqual({ ml: 2.5 });
  });
});
