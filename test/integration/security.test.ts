// The attacks of the security review, each against a real master and agent (processes on
// loopback) started with a credentials file and ACLs: every one is refused (401/403 or a
// refused connection) and changes nothing; the same call with the right credential works.

import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Cleanup, freePort, runCairn, startAgentProcess, startCairn, startMasterProcess, waitFor, type CairnProcess } from '../harness/processes.ts';
import { authorizationHeader } from '../../agent/credential.ts';
import { FakeAgent } from '../harness/fake-agent.ts';
import { RawScheduler, taskInfo } from '../harness/raw-scheduler.ts';

const secret = (name: string) => `${name}-secret-0123456789abcdef`;
const bearer = (name: string) => ({ authorization: `Bearer ${secret(name)}` });
/** HTTP Basic, as agents (and Mesos clients) send it. */
const basic = (name: string) => ({ authorization: authorizationHeader({ principal: name, secret: secret(name) }) });

const cleanup = new Cleanup();
const schedulers: RawScheduler[] = [];
const fakes: FakeAgent[] = [];
let master: CairnProcess;
let agent: CairnProcess;
let url: string;
let alice: RawScheduler;
let aliceTask: string;
let agentId: string;

function req(path: string, init: RequestInit & { as?: string } = {}): Promise<Response> {
  const { as, ...rest } = init;
  return fetch(`${url}${path}`, { ...rest, headers: { ...(as ? bearer(as) : {}), ...(rest.headers as Record<string, string> | undefined) } });
}

async function state(as: string): Promise<any> {
  return (await req('/api/v1/state', { as })).json();
}

function scheduler(as: string | undefined): RawScheduler {
  const s = new RawScheduler(url, as ? bearer(as) : {});
  schedulers.push(s);
  return s;
}

async function taskState(id: string): Promise<string | undefined> {
  return (await state('admin')).tasks.find((t: any) => t.id === id)?.state;
}

beforeAll(async () => {
  const dir = cleanup.dir('cairn-sec-');
  const credentials = join(dir, 'credentials.json');
  writeFileSync(credentials, JSON.stringify({
    credentials: [
      { principal: 'admin', secret: secret('admin') },
      { principal: 'alice', secret: secret('alice') },
      { principal: 'bob', secret: secret('bob') },
      { principal: 'agent-1', secret: secret('agent-1'), agent: true },
      { principal: 'agent-2', secret: secret('agent-2'), agent: true },
    ],
  }), { mode: 0o600 });
  const acls = join(dir, 'acls.json');
  writeFileSync(acls, JSON.stringify({
    permissive: false,
    register_frameworks: [{ principals: { values: ['alice', 'bob'] }, roles: { values: ['ml', '*'] } }],
    run_tasks: [{ principals: { type: 'ANY' }, users: { values: ['nobody'] } }],
    view_tasks: [{ principals: { values: ['admin'] }, framework_principals: { type: 'ANY' } }],
    kill_tasks: [{ principals: { values: ['admin'] }, framework_principals: { type: 'ANY' } }],
    teardown_frameworks: [{ principals: { values: ['admin'] }, framework_principals: { type: 'ANY' } }],
    drain_agents: [{ principals: { values: ['admin'] }, agents: { type: 'ANY' } }],
    update_masters: [{ principals: { values: ['admin'] }, masters: { type: 'ANY' } }],
    update_weights: [{ principals: { values: ['admin'] }, roles: { type: 'ANY' } }],
  }));
  const agentCredential = join(dir, 'agent-1.json');
  writeFileSync(agentCredential, JSON.stringify({ principal: 'agent-1', secret: secret('agent-1') }), { mode: 0o600 });
  master = await startMasterProcess(cleanup, { extra: ['--credentials', credentials, '--acls', acls, '--dns-port', '0'] });
  url = master.url;
  agent = await startAgentProcess(cleanup, url, { resources: 'cpus:2;mem:1024;ports:[31000-31010]', extra: ['--credential', agentCredential] });
  agentId = await waitFor('the agent registered', async () => (await state('admin')).agents.find((a: any) => a.connected)?.id);

  // Alice's framework runs one task that prints and keeps running.
  alice = scheduler('alice');
  expect((await alice.subscribe({ user: 'nobody', name: 'alice-fw', role: 'ml', failover_timeout: 3600 })).status).toBe(200);
  const offer = (await alice.next((e) => e.type === 'OFFERS')).offers.offers[0];
  aliceTask = 'alice-task';
  const r = await alice.call({ type: 'ACCEPT', accept: { offer_ids: [offer.id], operations: [{ type: 'LAUNCH', launch: { task_infos: [taskInfo(aliceTask, offer.agent_id.value, { cpus: 0.1, mem: 32 }, 'echo alice-private-output; exec sleep 600')] } }] } });
  expect(r.status).toBe(202);
  await waitFor('alice-task running', async () => (await taskState(aliceTask)) === 'TASK_RUNNING');
}, 120_000);

afterAll(async () => {
  for (const s of schedulers.splice(0)) s.close();
  for (const f of fakes.splice(0)) await f.close();
  await cleanup.run();
});

describe('a master with credentials and ACLs', () => {
  it('refuses every call without a credential, or with a wrong one, and changes nothing', async () => {
    for (const [method, path, body] of [
      ['GET', '/api/v1/state'],
      ['GET', `/api/v1/tasks/${aliceTask}`],
      ['GET', `/api/v1/tasks/${aliceTask}/logs`],
      ['POST', `/api/v1/tasks/${aliceTask}/kill`],
      ['POST', `/api/v1/agents/${agentId}/drain`, '{}'],
      ['DELETE', '/api/v1/masters/2'],
      ['PUT', '/api/v1/roles/ml', '{"weight": 9}'],
      ['GET', '/metrics'],
    ] as const) {
      const headers: Record<string, string> = body ? { 'content-type': 'application/json' } : {};
      const anonymous = await req(path, { method, headers, body });
      expect(anonymous.status, `${method} ${path}`).toBe(401);
      expect((await anonymous.json()).code).toBe('CAIRN_UNAUTHENTICATED');
      const wrong = await req(path, { method, headers: { ...headers, authorization: 'Bearer not-a-secret-of-this-master' }, body });
      expect(wrong.status, `${method} ${path} with a wrong token`).toBe(401);
    }
    // Health stays open, for probes.
    expect((await req('/health')).status).toBe(200);
    const sub = await scheduler(undefined).subscribe({ user: 'nobody', name: 'intruder' });
    expect(sub.status).toBe(401);
    expect(await taskState(aliceTask)).toBe('TASK_RUNNING');
    expect((await state('admin')).agents[0].draining).toBeNull();
    expect((await (await req('/api/v1/roles', { as: 'admin' })).json()).weights.ml).toBeUndefined();
  });

  it('takes the CLI\'s --token over CAIRN_TOKEN', async () => {
    const ok = await runCairn(['--token', secret('admin'), 'tasks', '--master', url], { CAIRN_TOKEN: 'not-a-secret-of-this-master' });
    expect(ok.stderr).toBe('');
    expect(ok.code).toBe(0);
    expect(ok.stdout).toContain(aliceTask);
    const bad = await runCairn(['--token', 'not-a-secret-of-this-master', 'tasks', '--master', url]);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toMatch(/credential is not valid/);
  });

  it('takes HTTP Basic as Mesos clients send it', async () => {
    const r = await fetch(`${url}/api/v1/state`, { headers: basic('admin') });
    expect(r.status).toBe(200);
    const wrong = await fetch(`${url}/api/v1/state`, { headers: { authorization: `Basic ${Buffer.from(`admin:${secret('bob')}`).toString('base64')}` } });
    expect(wrong.status).toBe(401);
  });

  it("keeps one principal's frameworks, tasks and logs from another, as the ACLs say", async () => {
    const bobView = await state('bob');
    expect(bobView.frameworks).toEqual([]);
    expect(bobView.tasks).toEqual([]);
    expect(bobView.agents).toHaveLength(1);
    expect((await req(`/api/v1/tasks/${aliceTask}`, { as: 'bob' })).status).toBe(403);
    const logs = await req(`/api/v1/tasks/${aliceTask}/logs`, { as: 'bob' });
    expect(logs.status).toBe(403);
    expect(await logs.text()).not.toContain('alice-private-output');
    expect((await req(`/api/v1/tasks/${aliceTask}/kill`, { method: 'POST', as: 'bob' })).status).toBe(403);
    // The owner and the admin (view_tasks) read it.
    const own = await req(`/api/v1/tasks/${aliceTask}/logs`, { as: 'alice' });
    expect(own.status).toBe(200);
    expect((await own.json()).data).toContain('alice-private-output');
    expect((await state('admin')).tasks.map((t: any) => t.id)).toContain(aliceTask);
    expect(await taskState(aliceTask)).toBe('TASK_RUNNING');
  });

  it('refuses a resubscription or a call with a stolen framework id', async () => {
    const bob = scheduler('bob');
    const stolen = await bob.subscribe({ user: 'nobody', name: 'alice-fw', role: 'ml', id: { value: alice.frameworkId } }, alice.frameworkId);
    expect(stolen.status).toBe(403);
    expect(stolen.body).toContain('belongs to principal');
    // With a framework of his own, bob still cannot act for alice's.
    expect((await bob.subscribe({ user: 'nobody', name: 'bob-fw', role: 'ml' })).status).toBe(200);
    for (const call of [
      { type: 'TEARDOWN', framework_id: { value: alice.frameworkId } },
      { type: 'KILL', framework_id: { value: alice.frameworkId }, kill: { task_id: { value: aliceTask } } },
    ]) {
      const r = await bob.call(call);
      expect(r.status, call.type).toBe(403);
    }
    const fw = (await state('admin')).frameworks.find((f: any) => f.id === alice.frameworkId);
    expect(fw.connected).toBe(true);
    expect(await taskState(aliceTask)).toBe('TASK_RUNNING');
  });

  it('registers frameworks only in allowed roles, as allowed users, under their own principal', async () => {
    const role = await scheduler('bob').subscribe({ user: 'nobody', name: 'x', role: 'production' });
    expect(role.status).toBe(403);
    expect(role.body).toContain('role');
    const root = await scheduler('bob').subscribe({ user: 'root', name: 'x', role: 'ml' });
    expect(root.status).toBe(403);
    expect(root.body).toContain('user');
    const other = await scheduler('bob').subscribe({ user: 'nobody', name: 'x', role: 'ml', principal: 'alice' });
    expect(other.status).toBe(403);
    // The admin may act, but may not register frameworks: no rule lets it.
    expect((await scheduler('admin').subscribe({ user: 'nobody', name: 'x', role: 'ml' })).status).toBe(403);
  });

  it('refuses cross-site requests, even with a valid credential, and keeps CORS closed', async () => {
    const kill = await req(`/api/v1/tasks/${aliceTask}/kill`, { method: 'POST', as: 'admin', headers: { origin: 'http://evil.example' } });
    expect(kill.status).toBe(403);
    expect((await kill.json()).code).toBe('CAIRN_CROSS_SITE');
    const fetchMeta = await req(`/api/v1/tasks/${aliceTask}/kill`, { method: 'POST', as: 'admin', headers: { 'sec-fetch-site': 'cross-site' } });
    expect(fetchMeta.status).toBe(403);
    const preflight = await req(`/api/v1/tasks/${aliceTask}/kill`, { method: 'OPTIONS', headers: { origin: 'http://evil.example', 'access-control-request-method': 'POST' } });
    expect(preflight.status).toBe(403);
    expect(preflight.headers.get('access-control-allow-origin')).toBeNull();
    expect(await taskState(aliceTask)).toBe('TASK_RUNNING');
  });

  it('lets only the ACLs\' operators drain agents, set weights and change masters', async () => {
    expect((await req(`/api/v1/agents/${agentId}/drain`, { method: 'POST', as: 'alice', headers: { 'content-type': 'application/json' }, body: '{}' })).status).toBe(403);
    expect((await req('/api/v1/roles/ml', { method: 'PUT', as: 'alice', headers: { 'content-type': 'application/json' }, body: '{"weight": 9}' })).status).toBe(403);
    expect((await req('/api/v1/masters/2', { method: 'DELETE', as: 'bob' })).status).toBe(403);
    expect((await state('admin')).agents[0].draining).toBeNull();
    // The admin may: a drain without a deadline, then undrained.
    expect((await req(`/api/v1/agents/${agentId}/drain`, { method: 'POST', as: 'admin', headers: { 'content-type': 'application/json' }, body: '{}' })).status).toBe(200);
    expect((await req(`/api/v1/agents/${agentId}/drain`, { method: 'DELETE', as: 'admin' })).status).toBe(200);
    // Every change is in the audit log with its principal, refused ones too.
    await waitFor('audit lines', () => (/"component":"audit".*"principal":"admin".*"path":"\/api\/v1\/agents\/[^"]+\/drain"/.test(master.output) ? true : undefined));
    expect(master.output).toMatch(/"component":"audit".*"principal":"alice".*"status":403/);
    expect(master.output).toMatch(/"component":"audit".*"principal":"bob".*"call":"TEARDOWN".*"refused":"CAIRN_FORBIDDEN"/);
  });

  it('refuses agents without an agent credential, and an agent speaking for another', async () => {
    const before = (await state('admin')).agents.length;
    const anonymous = new FakeAgent({ masterUrl: url, hostname: 'fake', resources: 'cpus:64;mem:1048576' });
    fakes.push(anonymous);
    await expect(anonymous.connect()).rejects.toThrow(/401/);
    const user = new FakeAgent({ masterUrl: url, hostname: 'fake', resources: 'cpus:64;mem:1048576', headers: basic('alice') });
    fakes.push(user);
    await expect(user.connect()).rejects.toThrow(/403/);
    // agent-2 is a real agent credential, but agent-1 registered this id.
    const impostor = new FakeAgent({ masterUrl: url, hostname: 'localhost', agentId, headers: basic('agent-2') });
    fakes.push(impostor);
    await expect(impostor.connect()).rejects.toThrow(/closed by the master/);
    expect(impostor.launched).toEqual([]);
    expect(impostor.received.some((m) => 'error' in m && /registered by principal 'agent-1'/.test(m.error.message))).toBe(true);
    const after = await state('admin');
    expect(after.agents).toHaveLength(before);
    expect(after.agents.find((a: any) => a.id === agentId).connected).toBe(true);
    expect(await taskState(aliceTask)).toBe('TASK_RUNNING');
  });

  it("serves an agent's logs only to its masters", async () => {
    const agentUrl = (await state('admin')).agents[0].url;
    const direct = await fetch(`${agentUrl}/api/v1/tasks/${aliceTask}/logs`);
    expect(direct.status).toBe(401);
    expect(await direct.text()).not.toContain('alice-private-output');
    const userToken = await fetch(`${agentUrl}/api/v1/tasks/${aliceTask}/logs`, { headers: bearer('admin') });
    expect(userToken.status).toBe(401);
    expect((await fetch(`${agentUrl}/health`)).status).toBe(200);
  });

  it('lets only the owner and the ACLs\' operator tear a framework down', async () => {
    const bob = scheduler('bob');
    expect((await bob.subscribe({ user: 'nobody', name: 'bob-doomed', role: 'ml' })).status).toBe(200);
    const alicesView = await req(`/api/v1/frameworks/${bob.frameworkId}/teardown`, { method: 'POST', as: 'alice' });
    expect(alicesView.status).toBe(403);
    expect((await state('admin')).frameworks.some((f: any) => f.id === bob.frameworkId)).toBe(true);
    expect((await req(`/api/v1/frameworks/${alice.frameworkId}/teardown`, { method: 'POST', as: 'bob' })).status).toBe(403);
    expect((await req('/api/v1/frameworks/no-such-framework/teardown', { method: 'POST', as: 'admin' })).status).toBe(404);
    const r = await runCairn(['--token', secret('admin'), 'teardown', bob.frameworkId, '--master', url]);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect((await state('admin')).frameworks.some((f: any) => f.id === bob.frameworkId)).toBe(false);
    // Its id never subscribes again.
    expect((await scheduler('bob').subscribe({ user: 'nobody', name: 'bob-doomed', role: 'ml', id: { value: bob.frameworkId } }, bob.frameworkId)).status).toBe(403);
    expect(await taskState(aliceTask)).toBe('TASK_RUNNING');
  });

  it('lets the owner and the ACLs\' operator kill', async () => {
    const r = await req(`/api/v1/tasks/${aliceTask}/kill`, { method: 'POST', as: 'admin' });
    expect(r.status).toBe(202);
    await waitFor('alice-task killed', async () => ((await taskState(aliceTask)) === 'TASK_KILLED' ? true : undefined), 30_000);
  });
});

describe('a master started without --credentials', () => {
  it('makes a bootstrap credentials file once and still refuses the anonymous', async () => {
    const dataDir = cleanup.dir('cairn-boot-');
    const port = await freePort();
    const m = await startMasterProcess(cleanup, { dataDir, port, extra: ['--dns-port', '0'] , env: { CAIRN_CREDENTIALS: '' } });
    expect((await fetch(`${m.url}/api/v1/state`)).status).toBe(401);
    const doc = JSON.parse((await import('node:fs')).readFileSync(join(dataDir, 'credentials.json'), 'utf8'));
    const admin = doc.credentials.find((c: any) => c.principal === 'admin');
    expect((await fetch(`${m.url}/api/v1/state`, { headers: { authorization: `Bearer ${admin.secret}` } })).status).toBe(200);
    expect((await import('node:fs')).statSync(join(dataDir, 'credentials.json')).mode & 0o077).toBe(0);
  });
});

describe('the embedded default', () => {
  it('cairn up, then cairn run with no flag: the token is found in the user\'s credentials file', async () => {
    const home = cleanup.dir('cairn-home-');
    // No credential from the test harness: only what `cairn up` writes.
    const env = { CAIRN_CREDENTIALS: '', CAIRN_AGENT_CREDENTIAL: '', CAIRN_TOKEN: '', CAIRN_CONFIG_DIR: join(home, 'config') };
    const port = await freePort();
    const masterUrl = `http://127.0.0.1:${port}`;
    const up = cleanup.track(startCairn(['up', '--port', String(port), '--agent-port', String(await freePort()), '--data-dir', join(home, 'data'), '--dns-port', '0', '--resources', 'cpus:1;mem:512'], masterUrl, env));
    await up.waitHealthy();
    // Saved once the master answers, a moment after it listens.
    const saved = await waitFor('the token saved', async () => JSON.parse((await import('node:fs')).readFileSync(join(home, 'config', 'credentials'), 'utf8')));
    expect(Object.keys(saved.masters)).toEqual([masterUrl]);
    expect((await fetch(`${masterUrl}/api/v1/state`)).status).toBe(401);
    const r = await runCairn(['run', '--master', masterUrl, '--', 'sh', '-c', 'echo embedded-ok'], env, 60_000);
    expect(r.stderr).not.toMatch(/error|401/i);
    expect(r.stdout).toBe('embedded-ok\n');
    expect(r.code).toBe(0);
    // Without the file, the same command is refused, saying how to authenticate.
    const refused = await runCairn(['tasks', '--master', masterUrl], { ...env, CAIRN_CONFIG_DIR: join(home, 'elsewhere') });
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toMatch(/credential/);
  });
});
