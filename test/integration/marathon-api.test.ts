// The services framework's REST API on an in-process master with simulated agents (which
// report every task RUNNING at once): apps posted, scaled, restarted and deleted; bad input
// refused Marathon's way with nothing changed; a locked app; the queue saying why an
// instance waits; events of a deployment.

import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { rmSync } from 'node:fs';
import { startMaster, type MasterHandle } from '../../master/server.ts';
import { MasterAuth } from '../../master/auth/master-auth.ts';
import { silentLogger } from '../../shared/logger.ts';
import { FakeAgent } from '../harness/fake-agent.ts';
import { tempDir, waitFor } from '../harness/processes.ts';
import { marathon, openEvents, waitForNoDeployments, waitForRunning } from '../harness/marathon.ts';

let master: MasterHandle;
let dir: string;
let agents: FakeAgent[] = [];

async function addAgent(hostname: string, resources = 'cpus:8;mem:16384;disk:100000;ports:[31000-32000]'): Promise<FakeAgent> {
  const a = new FakeAgent({ masterUrl: master.url, hostname, resources });
  agents.push(a);
  await a.connect();
  return a;
}

beforeEach(async () => {
  dir = tempDir();
  master = await startMaster({ auth: MasterAuth.off(), dataDir: dir, port: 0, host: '127.0.0.1', dnsPort: null, logger: silentLogger() });
});

afterEach(async () => {
  await Promise.all(agents.map((a) => a.close()));
  agents = [];
  await master.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe('Marathon REST API', { timeout: 120_000 }, () => {
  it('runs, scales, restarts and deletes an app', async () => {
    await addAgent('h1');
    await addAgent('h2');
    const created = await marathon(master.url, 'POST', '/v2/apps', { id: '/dev/web', cmd: 'sleep 1000', cpus: 0.1, mem: 32, instances: 3, labels: { team: 'x' }, fancy: { a: 1 } });
    expect(created.status).toBe(201);
    expect(created.headers.get('location')).toBe('/v2/apps/dev/web');
    expect(created.body).toMatchObject({ id: '/dev/web', instances: 3, backoffFactor: 1.15, portDefinitions: [{ port: 0, protocol: 'tcp' }] });
    // A field Marathon does not know is kept, named in a header, and shown only to ?cairn=true.
    expect(created.body.fancy).toBeUndefined();
    expect(created.headers.get('cairn-ignored-fields')).toBe('/fancy');
    expect((await marathon(master.url, 'GET', '/v2/apps/dev/web?cairn=true')).body.app.fancy).toEqual({ a: 1 });
    const tasks = await waitForRunning(master.url, '/dev/web', 3);
    expect(tasks[0].id).toMatch(/^dev_web\.[0-9a-f-]{36}$/);
    await waitForNoDeployments(master.url);

    const launched = agents.flatMap((a) => a.launched);
    expect(launched).toHaveLength(3);
    expect(launched[0]!.name).toBe('web-dev');

    const scaled = await marathon(master.url, 'PUT', '/v2/apps/dev/web', { instances: 1 });
    expect(scaled.status).toBe(200);
    expect(scaled.body.deploymentId).toBeTypeOf('string');
    await waitForRunning(master.url, '/dev/web', 1);
    await waitForNoDeployments(master.url);
    expect(agents.flatMap((a) => a.killed)).toHaveLength(2);

    // A task killed without scale=true is replaced.
    const victim = (await waitForRunning(master.url, '/dev/web', 1))[0].id;
    const killed = await marathon(master.url, 'DELETE', `/v2/apps/dev/web/tasks/${victim}`);
    expect(killed.status).toBe(200);
    expect(killed.body.task.id).toBe(victim);
    await waitFor('a replacement', async () => {
      const t = await waitForRunning(master.url, '/dev/web', 1);
      return t[0].id !== victim ? true : undefined;
    }, 20_000);
    expect((await marathon(master.url, 'GET', '/v2/apps/dev/web')).body.app.instances).toBe(1);

    const before = (await waitForRunning(master.url, '/dev/web', 1))[0].id;
    expect((await marathon(master.url, 'POST', '/v2/apps/dev/web/restart')).status).toBe(200);
    await waitFor('the restarted instance', async () => {
      const t = await waitForRunning(master.url, '/dev/web', 1);
      return t[0].id !== before ? true : undefined;
    }, 20_000);
    await waitForNoDeployments(master.url);

    const list = await marathon(master.url, 'GET', '/v2/apps?embed=apps.tasks&label=team==x');
    expect(list.body.apps).toHaveLength(1);
    expect(list.body.apps[0].tasks).toHaveLength(1);
    expect((await marathon(master.url, 'GET', '/v2/apps?label=team==y')).body.apps).toHaveLength(0);

    // Nested ids: /dev/web/api is an app of its own; deleting /dev/web leaves its versions alone.
    expect((await marathon(master.url, 'POST', '/v2/apps', { id: '/dev/web/api', cmd: 'sleep 1000', cpus: 0.1, mem: 16 })).status).toBe(201);
    await waitForNoDeployments(master.url);
    // Created, scaled, restarted.
    expect((await marathon(master.url, 'GET', '/v2/apps/dev/web/versions')).body.versions).toHaveLength(3);
    expect((await marathon(master.url, 'GET', '/v2/apps/dev/web/api/versions')).body.versions).toHaveLength(1);
    expect((await marathon(master.url, 'PATCH', '/v2/apps/dev/nothing', { instances: 2 })).status).toBe(404);
    expect((await marathon(master.url, 'GET', '/v2/apps/dev/*')).body.apps.map((a: { id: string }) => a.id)).toEqual(['/dev/web', '/dev/web/api']);
    const del = await marathon(master.url, 'DELETE', '/v2/apps/dev/web');
    expect(del.status).toBe(200);
    await waitForNoDeployments(master.url);
    expect((await marathon(master.url, 'GET', '/v2/apps/dev/web')).status).toBe(404);
    expect((await marathon(master.url, 'GET', '/v2/apps/dev/web/api/versions')).body.versions).toHaveLength(1);
    const left = (await marathon(master.url, 'GET', '/v2/tasks')).body.tasks;
    expect(left.map((t: { appId: string }) => t.appId)).toEqual(['/dev/web/api']);
  });

  it('refuses bad input Marathon\'s way and changes nothing', async () => {
    await addAgent('h1');
    const bad: [string, unknown, number, string][] = [
      ['missing id', { cmd: 'sleep 1' }, 422, '/id'],
      ['negative cpus', { id: '/a', cmd: 'sleep 1', cpus: -1 }, 422, '/cpus'],
      ['unknown constraint operator', { id: '/a', cmd: 'sleep 1', constraints: [['hostname', 'NEAR']] }, 422, '/constraints(0)'],
      ['port mapping in HOST mode', { id: '/a', cmd: 'sleep 1', container: { type: 'DOCKER', docker: { image: 'busybox', network: 'HOST', portMappings: [{ containerPort: 80 }] } } }, 422, '/container/docker/portMappings'],
      ['health check portIndex past the ports', { id: '/a', cmd: 'sleep 1', portDefinitions: [{ port: 0 }], healthChecks: [{ protocol: 'HTTP', portIndex: 1 }] }, 422, '/healthChecks(0)/portIndex'],
      ['malformed JSON', '{"id": "/a", "cmd": ', 400, '/'],
    ];
    for (const [what, body, status, path] of bad) {
      const r = await marathon(master.url, 'POST', '/v2/apps', body);
      expect(r.status, what).toBe(status);
      expect(r.body.message, what).toBeTypeOf('string');
      expect(r.body.details.map((d: { path: string }) => d.path), what).toContain(path);
    }
    expect((await marathon(master.url, 'GET', '/v2/apps')).body.apps).toEqual([]);
    expect(master.context.registry.state.builtin.get('marathon')?.size ?? 0).toBe(0);

    // A second change while the first deployment runs: 409 naming it, unless forced.
    expect((await marathon(master.url, 'POST', '/v2/apps', { id: '/slow', cmd: 'sleep 1', cpus: 0.1, mem: 16, instances: 1, constraints: [['rack', 'IS', 'nowhere']] })).status).toBe(201);
    const deps = (await marathon(master.url, 'GET', '/v2/deployments')).body;
    expect(deps).toHaveLength(1);
    const locked = await marathon(master.url, 'PUT', '/v2/apps/slow', { instances: 2 });
    expect(locked.status).toBe(409);
    expect(locked.body.deployments).toEqual([{ id: deps[0].id }]);
    expect((await marathon(master.url, 'GET', '/v2/apps/slow')).body.app.instances).toBe(1);
    expect((await marathon(master.url, 'POST', '/v2/apps', { id: '/slow', cmd: 'sleep 1' })).status).toBe(409);
    // An invalid change to an existing app is refused before the lock is looked at.
    const invalid = await marathon(master.url, 'PATCH', '/v2/apps/slow', { cpus: -2 });
    expect(invalid.status).toBe(422);
    const forced = await marathon(master.url, 'PUT', '/v2/apps/slow?force=true', { instances: 0 });
    expect(forced.status).toBe(200);
    await waitForNoDeployments(master.url);
    expect((await marathon(master.url, 'GET', '/v2/apps/slow')).body.app.instances).toBe(0);
    expect((await marathon(master.url, 'GET', '/v2/apps/nope')).status).toBe(404);

    // A scaling kill on a locked app: 409, and its task is neither killed nor marked.
    expect((await marathon(master.url, 'POST', '/v2/apps', { id: '/busy', cmd: 'sleep 1', cpus: 0.1, mem: 16 })).status).toBe(201);
    const [task] = await waitForRunning(master.url, '/busy', 1);
    await waitForNoDeployments(master.url);
    expect((await marathon(master.url, 'PUT', '/v2/apps/busy', { cpus: 100 })).status).toBe(200);
    const kill = await marathon(master.url, 'DELETE', `/v2/apps/busy/tasks/${task.id}?scale=true`);
    expect(kill.status).toBe(409);
    const rec = master.context.registry.state.builtin.get('marathon')!.get(`instance/${task.id}`) as { killRequested?: boolean };
    expect(rec.killRequested).toBeUndefined();
    expect((await marathon(master.url, 'GET', '/v2/apps/busy')).body.app.instances).toBe(1);
    // Two more rounds that looked at offers (the queue counts them): nothing killed it behind the 409.
    const processed = async () => (await marathon(master.url, 'GET', '/v2/queue')).body.queue.find((x: any) => x.app.id === '/busy')?.processedOffersSummary.processedOffersCount ?? 0;
    const p0 = await processed();
    const p1 = await waitFor('a round with offers', async () => { const p = await processed(); return p > p0 ? p : undefined; }, 20_000);
    await waitFor('another round with offers', async () => ((await processed()) > p1 ? true : undefined), 20_000);
    expect(agents.flatMap((a) => a.killed)).not.toContain(task.id);
    expect((await marathon(master.url, 'GET', '/ping')).body).toBe('pong');
    expect((await marathon(master.url, 'GET', '/v2/info')).body).toMatchObject({ name: 'marathon', elected: true });
  });

  it('keeps a third UNIQUE instance waiting on two hosts, and /v2/queue says it waits on the constraint', async () => {
    await addAgent('h1');
    await addAgent('h2');
    const r = await marathon(master.url, 'POST', '/v2/apps', { id: '/u', cmd: 'sleep 1000', cpus: 0.1, mem: 16, instances: 3, constraints: [['hostname', 'UNIQUE']] });
    expect(r.status).toBe(201);
    const tasks = await waitForRunning(master.url, '/u', 2);
    expect(new Set(tasks.map((t) => t.host))).toEqual(new Set(['h1', 'h2']));
    const item = await waitFor('the queue names the constraint', async () => {
      const q = (await marathon(master.url, 'GET', '/v2/queue?cairn=true')).body.queue;
      const it = q.find((x: any) => x.app.id === '/u');
      const row = it?.processedOffersSummary.rejectSummaryLastOffers.find((x: any) => x.reason === 'UnfulfilledConstraint');
      return row?.declined > 0 ? it : undefined;
    }, 20_000);
    expect(item.count).toBe(1);
    expect(item.waitingOn[0].reason).toBe('UnfulfilledConstraint');
    expect(item.processedOffersSummary.rejectSummaryLastOffers.find((x: any) => x.reason === 'InsufficientCpus').declined).toBe(0);
    expect((await runningTasksCount('/u'))).toBe(2);
  });

  it('streams a deployment\'s events, and rolls a deployment back', async () => {
    await addAgent('h1');
    const events = await openEvents(master.url);
    try {
      expect((await marathon(master.url, 'POST', '/v2/apps', { id: '/ev', cmd: 'sleep 1000', cpus: 0.1, mem: 16, instances: 2 })).status).toBe(201);
      await waitFor('deployment_success on the stream', () => (events.names().includes('deployment_success') ? true : undefined), 20_000);
      for (const e of ['api_post_event', 'deployment_info', 'status_update_event', 'deployment_success']) expect(events.names()).toContain(e);
      const data = events.frames().find((f) => f.eventType === 'deployment_success');
      expect(data).toMatchObject({ eventType: 'deployment_success', plan: { steps: [{ actions: [{ action: 'StartApplication', app: '/ev' }] }] } });

      // A scale to 5 that cannot finish (one agent runs at most 4 of these), rolled back to 2.
      expect((await marathon(master.url, 'PUT', '/v2/apps/ev', { instances: 5, mem: 16, cpus: 2 })).status).toBe(200);
      const dep = await waitFor('the deployment', async () => (await marathon(master.url, 'GET', '/v2/deployments')).body[0]);
      const rb = await marathon(master.url, 'DELETE', `/v2/deployments/${dep.id}`);
      expect(rb.status).toBe(200);
      expect(rb.body.deploymentId).not.toBe(dep.id);
      await waitForNoDeployments(master.url);
      const app = (await marathon(master.url, 'GET', '/v2/apps/ev')).body.app;
      expect(app).toMatchObject({ instances: 2, cpus: 0.1 });
      await waitForRunning(master.url, '/ev', 2);
    } finally {
      events.close();
    }
  });
  it('adopts, after a restart, a running task that no record names instead of starting another', async () => {
    const agent = await addAgent('h1');
    expect((await marathon(master.url, 'POST', '/v2/apps', { id: '/kept', cmd: 'sleep 1000', cpus: 0.1, mem: 16, instances: 1 })).status).toBe(201);
    const [task] = await waitForRunning(master.url, '/kept', 1);
    await waitForNoDeployments(master.url);
    const fw = [...master.context.registry.state.frameworks.values()].find((f) => f.name === 'marathon')!;
    // As if a leader's accept went through after its instance record was dropped.
    await master.context.registry.submit({ type: 'builtin_state', owner: 'marathon', puts: [{ key: `instance/${task.id}`, value: null }] });
    await agent.close();
    agents = [];
    await master.stop();
    master = await startMaster({ auth: MasterAuth.off(), dataDir: dir, port: 0, host: '127.0.0.1', dnsPort: null, logger: silentLogger() });
    const back = new FakeAgent({ masterUrl: master.url, hostname: 'h1', agentId: agent.agentId, running: [{ taskId: task.id, frameworkId: fw.id, state: 'TASK_RUNNING', resources: 'cpus:0.1;mem:16;ports:[31000-31000]' }] });
    agents.push(back);
    await back.connect();
    await waitFor('the task adopted', () => (master.context.registry.state.builtin.get('marathon')?.has(`instance/${task.id}`) ? true : undefined), 20_000);
    const tasks = await waitForRunning(master.url, '/kept', 1);
    expect(tasks[0].id).toBe(task.id);
    expect(back.launched).toEqual([]);
  });
  it('places again at once, after a restart, an instance an earlier leader recorded but never launched', async () => {
    const agent = await addAgent('h1');
    expect((await marathon(master.url, 'POST', '/v2/apps', { id: '/ghost', cmd: 'sleep 1000', cpus: 0.1, mem: 16, instances: 2, constraints: [['hostname', 'UNIQUE']] })).status).toBe(201);
    const [task] = await waitForRunning(master.url, '/ghost', 1);
    const store = () => master.context.registry.state.builtin.get('marathon')!;
    const real = store().get(`instance/${task.id}`) as Record<string, unknown>;
    // The record a leader writes before its ACCEPT, for a launch that never reached the log.
    const ghost = 'ghost.00000000-0000-4000-8000-000000000000';
    await master.context.registry.submit({ type: 'builtin_state', owner: 'marathon', puts: [{ key: `instance/${ghost}`, value: { ...real, taskId: ghost, agentId: 'elsewhere', hostname: 'h2', launchedAtMs: Date.now() } }] });
    const fw = [...master.context.registry.state.frameworks.values()].find((f) => f.name === 'marathon')!;
    await agent.close();
    agents = [];
    await master.stop();
    master = await startMaster({ auth: MasterAuth.off(), dataDir: dir, port: 0, host: '127.0.0.1', dnsPort: null, logger: silentLogger() });
    const back = new FakeAgent({ masterUrl: master.url, hostname: 'h1', agentId: agent.agentId, running: [{ taskId: task.id, frameworkId: fw.id, state: 'TASK_RUNNING', resources: 'cpus:0.1;mem:16;ports:[31000-31000]' }] });
    agents.push(back);
    await back.connect();
    const t0 = Date.now();
    // Well inside the 30 s a launch of this leader's own may take to reach the registry.
    await waitFor('the ghost forgotten', () => (store().has(`instance/${ghost}`) ? undefined : true), 10_000);
    expect(Date.now() - t0).toBeLessThan(10_000);
    const item = await waitFor('the second instance waiting again', async () => (await marathon(master.url, 'GET', '/v2/queue')).body.queue.find((x: any) => x.app.id === '/ghost'), 10_000);
    expect(item.count).toBe(1);
    expect(store().has(`instance/${task.id}`)).toBe(true);
  });
});

async function runningTasksCount(appId: string): Promise<number> {
  return (await marathon(master.url, 'GET', `/v2/apps${appId}`)).body.app.tasksRunning;
}
