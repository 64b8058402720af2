// `--open scheduler`: a Mesos v1 framework that never authenticates (a raw HTTP client
// speaking the JSON scheduler API, with no Authorization header, as framework libraries do
// against Mesos with --authenticate_http_frameworks=false) subscribes, gets offers and runs a
// task to TASK_FINISHED on `cairn up --open scheduler`, as the principal `anonymous` that the
// ACLs confine; the same client is refused by a master without --open; DC/OS-style
// `Authorization: token=SECRET` is taken wherever Bearer is. Real processes on loopback.

import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Cleanup, freePort, runCairn, startCairn, startMasterProcess, waitFor, type CairnProcess } from '../harness/processes.ts';
import { TEST_AGENT, TEST_USER } from '../harness/credentials.ts';
import { RawScheduler, autoAck, taskInfo } from '../harness/raw-scheduler.ts';

const cleanup = new Cleanup();
const schedulers: RawScheduler[] = [];
let up: CairnProcess;
let url: string;
let agentId: string;
let agentUrl: string;

/** A framework that sends no Authorization header at all. */
function anonymous(): RawScheduler {
  const s = new RawScheduler(url, {});
  schedulers.push(s);
  return s;
}

async function state(): Promise<any> {
  return (await fetch(`${url}/api/v1/state`, { headers: { authorization: `token=${TEST_USER.secret}` } })).json();
}

/** A framework's principal, as Mesos' /master/state shows it. */
async function principalOf(frameworkId: string): Promise<string | undefined> {
  const s: any = await (await fetch(`${url}/master/state`, { headers: { authorization: `token=${TEST_USER.secret}` } })).json();
  return s.frameworks.find((f: any) => f.id === frameworkId)?.principal;
}

beforeAll(async () => {
  const dir = cleanup.dir('cairn-open-');
  // Nothing is permitted but what a rule grants: `anonymous` may register only in role
  // `public`, and run tasks only as nobody; the test's own principal may do everything.
  const acls = join(dir, 'acls.json');
  const everything = { principals: { values: [TEST_USER.principal] } };
  writeFileSync(acls, JSON.stringify({
    permissive: false,
    register_frameworks: [{ principals: { values: ['anonymous'] }, roles: { values: ['public'] } }, { ...everything, roles: { type: 'ANY' } }],
    run_tasks: [{ principals: { values: ['anonymous'] }, users: { values: ['nobody'] } }, { ...everything, users: { type: 'ANY' } }],
    view_tasks: [{ ...everything, framework_principals: { type: 'ANY' } }],
    kill_tasks: [{ ...everything, framework_principals: { type: 'ANY' } }],
    teardown_frameworks: [{ ...everything, framework_principals: { type: 'ANY' } }],
  }));
  const port = await freePort();
  const agentPort = await freePort();
  url = `http://127.0.0.1:${port}`;
  agentUrl = `http://127.0.0.1:${agentPort}`;
  up = cleanup.track(startCairn(['up', '--port', String(port), '--agent-port', String(agentPort), '--data-dir', join(dir, 'data'), '--dns-port', '0', '--resources', 'cpus:2;mem:1024', '--open', 'scheduler', '--acls', acls], url));
  await up.waitHealthy();
  agentId = await waitFor('the agent registered', async () => (await state()).agents?.find((a: any) => a.connected)?.id, 60_000);
}, 120_000);

afterAll(async () => {
  for (const s of schedulers.splice(0)) s.close();
  await cleanup.run();
});

describe('cairn up --open scheduler', () => {
  it('lets a framework without a credential subscribe as anonymous, get offers and run a task to TASK_FINISHED', async () => {
    const fw = anonymous();
    autoAck(fw);
    const sub = await fw.subscribe({ user: 'nobody', name: 'unauthenticated-fw', role: 'public' });
    expect(sub).toEqual({ status: 200 });
    const offer = (await fw.next((e) => e.type === 'OFFERS', 30_000)).offers.offers[0];
    expect(offer.agent_id.value).toBe(agentId);
    const r = await fw.call({ type: 'ACCEPT', accept: { offer_ids: [offer.id], operations: [{ type: 'LAUNCH', launch: { task_infos: [taskInfo('anon-task', agentId, { cpus: 0.1, mem: 32 }, 'echo from-anonymous')] } }] } });
    expect(r.status).toBe(202);
    const finished = await fw.next((e) => e.type === 'UPDATE' && e.update.status.task_id.value === 'anon-task' && ['TASK_FINISHED', 'TASK_FAILED', 'TASK_LOST', 'TASK_ERROR'].includes(e.update.status.state), 60_000);
    expect(finished.update.status.state).toBe('TASK_FINISHED');
    // Its framework is anonymous's, and every later call of it was taken (ACCEPT, ACKNOWLEDGE).
    expect(await principalOf(fw.frameworkId)).toBe('anonymous');
    expect((await fw.call({ type: 'DECLINE', decline: { offer_ids: [] } })).status).toBe(202);
  }, 120_000);

  it('holds anonymous to the ACLs: no role or user they do not grant, no principal of its own choosing', async () => {
    const role = await anonymous().subscribe({ user: 'nobody', name: 'x', role: 'ml' });
    expect(role.status).toBe(403);
    expect(role.body).toMatch(/register_frameworks.*'anonymous'.*'ml'/);
    const user = await anonymous().subscribe({ user: 'root', name: 'x', role: 'public' });
    expect(user.status).toBe(403);
    expect(user.body).toMatch(/run_tasks.*'anonymous'.*'root'/);
    const claimed = await anonymous().subscribe({ user: 'nobody', name: 'x', role: 'public', principal: TEST_USER.principal });
    expect(claimed.status).toBe(403);
    expect(claimed.body).toContain('framework_info.principal');
  });

  it('opens the scheduler API only: reads and other changes still need a credential, and a wrong one is refused', async () => {
    expect((await fetch(`${url}/api/v1/state`)).status).toBe(401);
    expect((await fetch(`${url}/api/v1/frameworks`)).status).toBe(401);
    expect((await fetch(`${url}/v2/apps`)).status).toBe(401);
    const wrong = await new RawScheduler(url, { authorization: 'Bearer not-a-secret-of-anyone' }).subscribe({ user: 'nobody', name: 'x', role: 'public' });
    expect(wrong.status).toBe(401);
    // A framework that authenticates keeps its own principal.
    const named = new RawScheduler(url, { authorization: `token=${TEST_USER.secret}` });
    schedulers.push(named);
    expect((await named.subscribe({ user: 'nobody', name: 'named', role: 'ml' })).status).toBe(200);
    expect(await principalOf(named.frameworkId)).toBe(TEST_USER.principal);
  });

  it("keeps one anonymous caller's framework from a caller with a credential", async () => {
    const fw = anonymous();
    expect((await fw.subscribe({ user: 'nobody', name: 'anon-2', role: 'public' })).status).toBe(200);
    const other = new RawScheduler(url, { authorization: `Bearer ${TEST_USER.secret}` });
    other.frameworkId = fw.frameworkId;
    other.streamId = fw.streamId;
    const r = await other.call({ type: 'TEARDOWN' });
    expect(r.status).toBe(403);
    expect(r.body).toContain("belongs to principal 'anonymous'");
  });
});

describe('Authorization: token=SECRET (DC/OS)', () => {
  it("is taken by the master's REST and Marathon APIs and by the agent's, as Bearer is", async () => {
    for (const path of ['/api/v1/state', '/v2/apps', '/api/v1/jobs']) {
      expect((await fetch(`${url}${path}`, { headers: { authorization: `token=${TEST_USER.secret}` } })).status, path).toBe(200);
      expect((await fetch(`${url}${path}`, { headers: { authorization: 'token=not-a-secret-of-anyone' } })).status, path).toBe(401);
    }
    expect((await fetch(`${agentUrl}/metrics`, { headers: { authorization: `token=${TEST_AGENT.secret}` } })).status).toBe(200);
    expect((await fetch(`${agentUrl}/metrics`, { headers: { authorization: 'token=not-the-agent-secret' } })).status).toBe(401);
    // The CLI's users hold a token; a login link for the dashboard is made from it.
    const link = await fetch(`${url}/api/v1/ui/links`, { method: 'POST', headers: { authorization: `token=${TEST_USER.secret}` } });
    expect(link.status).toBe(201);
  });
});

describe('closed by default', () => {
  it('refuses the same unauthenticated framework with 401 on a master without --open scheduler', async () => {
    const master = await startMasterProcess(cleanup, { extra: ['--dns-port', '0', '--open', 'metrics'] });
    const s = new RawScheduler(master.url, {});
    schedulers.push(s);
    const r = await s.subscribe({ user: 'nobody', name: 'x', role: 'public' });
    expect(r.status).toBe(401);
    expect(r.body).toContain('CAIRN_UNAUTHENTICATED');
  }, 60_000);

  it('refuses an --open value it does not know, naming it, and a credential named anonymous beside --open scheduler', async () => {
    const bad = await runCairn(['master', '--open', 'scheduler,operator', '--port', '0']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain("'operator' cannot be opened (known: metrics, dns-api, scheduler)");
    const dir = cleanup.dir('cairn-open-anon-');
    const credentials = join(dir, 'credentials.json');
    writeFileSync(credentials, JSON.stringify({ credentials: [{ principal: 'anonymous', secret: 'anonymous-secret-0123456789' }, { ...TEST_AGENT, agent: true }] }), { mode: 0o600 });
    const refused = await runCairn(['master', '--open', 'scheduler', '--port', '0', '--dns-port', '0', '--data-dir', join(dir, 'm'), '--credentials', credentials]);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toMatch(/principal 'anonymous'.*--open scheduler/);
  }, 60_000);
});
