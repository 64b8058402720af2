// A strict Marathon client against Cairn: a realistic session (apps created, scaled,
// restarted, killed, failed, locked, forced, rolled back and deleted; the queue, info,
// leader, groups, errors and the event stream) where every /v2 answer and every event is
// decoded into Marathon 1.9's types (test/harness/marathon-types.ts) — an unknown or a
// missing field fails it. Then Marathon's query conventions (booleans in any case,
// repeated event_type, DELETE forcing by default), Cairn's extras behind `?cairn=true`,
// and a follower passing /v2 requests on to the leader.

import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { randomBytes, randomUUID } from 'node:crypto';
import { rmSync } from 'node:fs';
import { startMaster, type MasterHandle } from '../../master/server.ts';
import { MasterAuth } from '../../master/auth/master-auth.ts';
import { silentLogger } from '../../shared/logger.ts';
import { FakeAgent } from '../harness/fake-agent.ts';
import { tempDir, waitFor } from '../harness/processes.ts';
import { marathon, openEvents, waitForNoDeployments, waitForRunning } from '../harness/marathon.ts';
import { startMasterGroup } from '../harness/master-group.ts';
import * as T from '../harness/marathon-types.ts';

let masters: MasterHandle[] = [];
let dir: string;
let agents: FakeAgent[] = [];
let streams: { close(): void }[] = [];

async function addAgent(url: string, hostname: string): Promise<FakeAgent> {
  const a = new FakeAgent({ masterUrl: url, hostname, resources: 'cpus:8;mem:16384;disk:100000;ports:[31000-32000]' });
  agents.push(a);
  await a.connect();
  return a;
}


/** Every mismatch a strict client met, with the call it met it on. */
let mismatches: string[] = [];

/** A /v2 call whose answer must decode into `type` (and have `status`). */
async function strict(url: string, method: string, path: string, status: number, type: T.Type, body?: unknown): Promise<any> {
  const r = await marathon(url, method, path, body);
  expect(r.status, `${method} ${path}: ${JSON.stringify(r.body)}`).toBe(status);
  for (const m of T.decode(type, r.body)) mismatches.push(`${method} ${path}: ${m}`);
  return r.body;
}

beforeEach(() => {
  dir = tempDir();
  mismatches = [];
});

afterEach(async () => {
  for (const s of streams) s.close();
  streams = [];
  await Promise.all(agents.map((a) => a.close()));
  agents = [];
  await Promise.all(masters.map((m) => m.stop()));
  masters = [];
  rmSync(dir, { recursive: true, force: true });
});

describe('the strict decoder', () => {
  it('fails on an unknown field, a missing required one and a wrong type', () => {
    const task = { id: 't', appId: '/a', host: 'h', state: 'TASK_RUNNING', role: '*' };
    expect(T.decode(T.Task, task)).toEqual([]);
    expect(T.decode(T.Task, { ...task, agentId: 'x' })).toEqual(['/agentId: unknown field of Task']);
    const { role: _r, ...noRole } = task;
    expect(T.decode(T.Task, noRole)).toEqual(['/role: missing (required in Task)']);
    expect(T.decode(T.Task, { ...task, ports: ['80'] })).toEqual(['/ports/0: expected an integer, got "80"']);
    expect(T.decode(T.AppInfo, { id: '/a', tasksWaiting: 1 })).toEqual(['/tasksWaiting: unknown field of AppInfo']);
    expect(T.decode(T.EVENTS.deployment_info!, { eventType: 'deployment_info', timestamp: new Date().toISOString(), plan: { id: 'd', version: new Date().toISOString(), steps: [], affectedApps: [] }, currentStep: { actions: [] } }))
      .toEqual(['/plan/affectedApps: unknown field of DeploymentPlan']);
    expect(T.decode(T.App, { id: '/a', container: null })).toEqual(['/container: expected Container, got null']);
  });
});

describe('a strict Marathon client', { timeout: 120_000 }, () => {
  it('decodes every answer and every event of a session into Marathon 1.9\'s types', async () => {
    const master = await startMaster({ auth: MasterAuth.off(), dataDir: dir, port: 0, host: '127.0.0.1', dnsPort: null, logger: silentLogger() });
    masters.push(master);
    const url = master.url;
    const h1 = await addAgent(url, 'h1');
    await addAgent(url, 'h2');
    const all = await openEvents(url);
    // Marathon's way of asking for two kinds: the parameter twice.
    const two = await openEvents(url, '?event_type=deployment_info&event_type=deployment_success');
    streams.push(all, two);

    await strict(url, 'GET', '/v2/info', 200, T.MarathonInfo);
    expect((await strict(url, 'GET', '/v2/leader', 200, T.LeaderInfo)).leader).toBe(new URL(url).host);

    // A process app with a health check and a Docker app on the bridge network.
    const web = await strict(url, 'POST', '/v2/apps', 201, T.AppInfo, {
      id: '/dev/web', cmd: 'sleep 1000', cpus: 0.1, mem: 32, instances: 2, labels: { team: 'x' },
      portDefinitions: [{ port: 0, name: 'http' }],
    });
    expect(web).toMatchObject({ role: '*', networks: [{ mode: 'host' }] });
    const bridged = await strict(url, 'POST', '/v2/apps', 201, T.AppInfo, {
      id: '/dev/db', cpus: 0.1, mem: 32, container: { type: 'DOCKER', docker: { image: 'busybox', network: 'BRIDGE', portMappings: [{ containerPort: 5432, servicePort: 10001 }] } },
      healthChecks: [{ protocol: 'TCP', portIndex: 0 }],
    });
    expect(bridged).toMatchObject({ networks: [{ mode: 'container/bridge' }], container: { portMappings: [{ containerPort: 5432 }] } });
    expect(bridged.container.docker.network).toBeUndefined();
    await waitForRunning(url, '/dev/web', 2);
    const [dbTask] = await waitForRunning(url, '/dev/db', 1);
    // A health report, as the agent's checker sends it (the deployment waits for it).
    const fw = (h1.launched[0] ?? agents[1]!.launched[0]!).frameworkId;
    const agentOf = agents.find((a) => a.launched.some((t) => t.taskId === dbTask.id))!;
    agentOf.send({ statusUpdate: { uuid: randomBytes(16), taskId: dbTask.id, frameworkId: fw, state: 'TASK_RUNNING', message: '', reason: '', hasExitCode: false, exitCode: 0, timestampMs: Date.now(), hasHealthy: true, healthy: true } });
    await waitFor('the task healthy', async () => ((await waitForRunning(url, '/dev/db', 1, 10_000, true)).length === 1 ? true : undefined), 10_000);
    await strict(url, 'GET', '/v2/apps/dev/db', 200, T.AppSingle);
    await waitForNoDeployments(url);

    await strict(url, 'GET', '/v2/apps', 200, T.AppList);
    await strict(url, 'GET', '/v2/apps?embed=apps.tasks&embed=apps.lastTaskFailure&label=team==x', 200, T.AppList);
    await strict(url, 'GET', '/v2/apps/dev/*', 200, T.AppList);
    const one = (await strict(url, 'GET', '/v2/apps/dev/web', 200, T.AppSingle)).app;
    expect(one.tasks[0]).toMatchObject({ role: '*', servicePorts: [0] });
    await strict(url, 'GET', '/v2/tasks', 200, T.TaskList);
    await strict(url, 'GET', '/v2/tasks?status=running&status=staging', 200, T.TaskList);
    await strict(url, 'GET', '/v2/apps/dev/web/tasks', 200, T.TaskList);
    const versions = (await strict(url, 'GET', '/v2/apps/dev/web/versions', 200, T.VersionList)).versions;
    await strict(url, 'GET', `/v2/apps/dev/web/versions/${versions[0]}`, 200, T.App);
    const root = await strict(url, 'GET', '/v2/groups', 200, T.GroupInfo);
    expect(root.groups.map((g: { id: string }) => g.id)).toEqual(['/dev']);
    expect((await strict(url, 'GET', '/v2/groups/dev', 200, T.GroupInfo)).apps.map((a: { id: string }) => a.id).sort()).toEqual(['/dev/db', '/dev/web']);
    await strict(url, 'GET', '/v2/groups/nowhere', 404, T.Message);

    // Scale, restart, kill one task (replaced), a task that fails (the app's lastTaskFailure).
    await strict(url, 'PUT', '/v2/apps/dev/web', 200, T.DeploymentResult, { instances: 3 });
    await waitForRunning(url, '/dev/web', 3);
    await waitForNoDeployments(url);
    await strict(url, 'POST', '/v2/apps/dev/web/restart', 200, T.DeploymentResult);
    await waitForNoDeployments(url);
    const [victim] = await waitForRunning(url, '/dev/web', 3);
    await strict(url, 'DELETE', `/v2/apps/dev/web/tasks/${victim.id}`, 200, T.TaskSingle);
    const [failing] = (await waitForRunning(url, '/dev/web', 3)).filter((t) => t.id !== victim.id);
    const failingAgent = agents.find((a) => a.launched.some((t) => t.taskId === failing.id))!;
    failingAgent.update(failing.id, fw, 'TASK_FAILED');
    const failure = await waitFor('the last task failure', async () => (await marathon(url, 'GET', '/v2/apps/dev/web')).body.app.lastTaskFailure, 10_000);
    expect(failure).toMatchObject({ taskId: failing.id, state: 'TASK_FAILED', appId: '/dev/web' });
    await strict(url, 'GET', '/v2/apps/dev/web', 200, T.AppSingle);
    await waitForRunning(url, '/dev/web', 3);
    await waitForNoDeployments(url);
    await strict(url, 'DELETE', '/v2/apps/dev/web/tasks?scale=true', 200, T.DeploymentResult);
    await waitForNoDeployments(url);

    // An app that cannot be placed: a deployment in flight, the queue, a 409, a forced change, a rollback.
    await strict(url, 'POST', '/v2/apps', 201, T.AppInfo, { id: '/stuck', cmd: 'sleep 1', cpus: 0.1, mem: 16, constraints: [['rack', 'IS', 'nowhere']] });
    await strict(url, 'GET', '/v2/deployments', 200, T.DeploymentList);
    await waitFor('the queue lists it', async () => ((await marathon(url, 'GET', '/v2/queue')).body.queue.length > 0 ? true : undefined), 10_000);
    await waitFor('an offer declined', async () => ((await marathon(url, 'GET', '/v2/queue')).body.queue[0].processedOffersSummary.unusedOffersCount > 0 ? true : undefined), 10_000);
    await strict(url, 'GET', '/v2/queue', 200, T.Queue);
    await strict(url, 'PUT', '/v2/apps/stuck', 409, T.LockedError, { instances: 2 });
    await strict(url, 'PUT', '/v2/apps/stuck?force=True', 200, T.DeploymentResult, { instances: 2 });
    const [dep] = await strict(url, 'GET', '/v2/deployments', 200, T.DeploymentList);
    await strict(url, 'GET', `/v2/deployments/${dep.id}`, 200, T.DeploymentStepInfo);
    await strict(url, 'DELETE', `/v2/deployments/${dep.id}`, 200, T.DeploymentResult);
    await strict(url, 'GET', '/v2/apps/nope', 404, T.Message);
    await strict(url, 'POST', '/v2/apps', 422, T.ErrorBody, { id: '/bad', cmd: 'x', cpus: -1 });
    await strict(url, 'POST', '/v2/apps', 409, T.Message, { id: '/stuck', cmd: 'sleep 1' });
    // Marathon 1.9 deletes over a running deployment unless told force=false.
    await strict(url, 'DELETE', '/v2/apps/stuck?force=false', 409, T.LockedError);
    await strict(url, 'DELETE', '/v2/apps/stuck', 200, T.DeploymentResult);
    // What a GET answers, sent back whole, is the same app (networks read as docker.network was).
    const asGot = (await marathon(url, 'GET', '/v2/apps/dev/db')).body.app;
    const { tasks: _t, tasksStaged: _s, tasksRunning: _r, tasksHealthy: _h, tasksUnhealthy: _u, deployments: _d, lastTaskFailure: _f, ...definition } = asGot;
    await strict(url, 'PUT', '/v2/apps/dev/db?partialUpdate=false', 200, T.DeploymentResult, definition);
    expect((await marathon(url, 'GET', '/v2/apps/dev/db')).body.app).toMatchObject({ networks: [{ mode: 'container/bridge' }], container: { portMappings: [{ containerPort: 5432 }] } });
    expect((await marathon(url, 'POST', '/v2/apps', { id: '/named', cmd: 'x', networks: [{ mode: 'container', name: 'dcos' }] })).body.details).toEqual([{ path: '/networks(0)/mode', errors: [expect.stringMatching(/not supported/)] }]);
    await strict(url, 'DELETE', '/v2/apps/dev/db', 200, T.DeploymentResult);
    await waitForNoDeployments(url);

    const dbStopped = (f: any) => f.eventType === 'deployment_success' && f.plan.steps[0].actions[0].app === '/dev/db' && f.plan.steps[0].actions[0].action === 'StopApplication';
    await waitFor('the stream has the last deployment', () => (all.frames().some(dbStopped) ? true : undefined), 10_000);
    const seen = new Set<string>();
    const names = all.names();
    all.frames().forEach((data, i) => {
      const event = names[i]!;
      seen.add(event);
      expect(data.eventType).toBe(event);
      const type = T.EVENTS[event];
      if (!type) mismatches.push(`event ${event}: not an event Marathon sends`);
      else for (const m of T.decode(type, data)) mismatches.push(`event ${event}: ${m}`);
    });
    expect([...seen].sort()).toEqual(['api_post_event', 'deployment_failed', 'deployment_info', 'deployment_success', 'event_stream_attached', 'health_status_changed_event', 'status_update_event']);
    expect(new Set(two.names())).toEqual(new Set(['deployment_info', 'deployment_success']));
    expect(mismatches).toEqual([]);
  });

  it('reads booleans in any case, refuses others naming them, and shows Cairn\'s extras only when asked', async () => {
    const master = await startMaster({ auth: MasterAuth.off(), dataDir: dir, port: 0, host: '127.0.0.1', dnsPort: null, logger: silentLogger() });
    masters.push(master);
    const url = master.url;
    await addAgent(url, 'h1');
    const created = await marathon(url, 'POST', '/v2/apps', { id: '/w', cmd: 'sleep 1', cpus: 0.1, mem: 16, instances: 2, constraints: [['hostname', 'UNIQUE']], fancy: 1 });
    expect(created.status).toBe(201);
    expect(created.body.fancy).toBeUndefined();
    expect(created.body.ignoredFields).toBeUndefined();
    expect(created.headers.get('cairn-ignored-fields')).toBe('/fancy');
    for (const [force, status] of [['TRUE', 200], ['True', 200], ['1', 200]] as const) {
      expect((await marathon(url, 'PUT', `/v2/apps/w?force=${force}`, { instances: 2 })).status, force).toBe(status);
    }
    const bad = await marathon(url, 'PUT', '/v2/apps/w?force=yes', { instances: 2 });
    expect(bad.status).toBe(400);
    expect(bad.body.message).toMatch(/'force'/);
    expect((await marathon(url, 'PUT', '/v2/apps/w?force=FALSE', { instances: 2 })).status).toBe(409);

    const plain = (await marathon(url, 'GET', '/v2/apps/w')).body.app;
    expect(plain.tasksWaiting).toBeUndefined();
    const extra = (await marathon(url, 'GET', '/v2/apps/w?cairn=true')).body.app;
    expect(extra).toMatchObject({ tasksWaiting: 1, fancy: 1 });
    const q = await waitFor('the queue says why', async () => {
      const item = (await marathon(url, 'GET', '/v2/queue?cairn=true')).body.queue[0];
      return item?.waitingOn?.length > 0 ? item : undefined;
    }, 10_000);
    expect(q.waitingOn[0].reason).toBe('UnfulfilledConstraint');
    expect((await marathon(url, 'GET', '/v2/queue')).body.queue[0].waitingOn).toBeUndefined();
    expect((await marathon(url, 'GET', '/v2/info')).body.cairn).toBeUndefined();
    expect((await marathon(url, 'GET', '/v2/info?cairn=true')).body.cairn).toEqual({ leading: true, subscribed: true });
  });

  it('has a follower pass /v2 requests on to the leader, the event stream included', async () => {
    masters = await startMasterGroup(dir, 3, randomUUID());
    const leader = await waitFor('a leader', async () => masters.find((m) => m.context.master() !== undefined), 20_000);
    const follower = masters.find((m) => m !== leader)!;
    await waitFor('the follower knows the leader', async () => (follower.context.leaderUrl() ? true : undefined), 20_000);
    await addAgent(leader.url, 'h1');
    const events = await openEvents(follower.url, '?event_type=deployment_success');
    streams.push(events);
    const created = await fetch(`${follower.url}/v2/apps`, {
      method: 'POST', redirect: 'manual', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ id: '/p', cmd: 'sleep 1000', cpus: 0.1, mem: 16 }),
    });
    // Passed on, not redirected.
    expect(created.status).toBe(201);
    expect(created.headers.get('x-marathon-leader')).toBe(leader.url);
    await waitForRunning(follower.url, '/p', 1);
    await waitFor('the success through the follower', () => (events.names().includes('deployment_success') ? true : undefined), 20_000);
    expect((await strict(follower.url, 'GET', '/v2/leader', 200, T.LeaderInfo)).leader).toBe(new URL(leader.url).host);
    expect((await strict(follower.url, 'GET', '/v2/info', 200, T.MarathonInfo)).elected).toBe(true);
    expect((await strict(follower.url, 'DELETE', '/v2/apps/p', 200, T.DeploymentResult)).deploymentId).toBeTypeOf('string');
    expect(mismatches).toEqual([]);
  });
});
