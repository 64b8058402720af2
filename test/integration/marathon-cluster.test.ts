// The services framework on real daemons: a master process (or three replicated ones) and
// two agent processes running real tasks — a small HTTP server on $PORT0 with a health
// endpoint. Scale up and down; an app whose health check fails is killed by the agent and
// replaced; a rolling restart of 4 with minimumHealthCapacity 0.5 never has fewer than 2
// healthy (sampled throughout); UNIQUE hostnames on two agents run 2 of 3 and the queue says
// why; the leader SIGKILLed mid-deployment: the next leader finishes it, never over capacity.

import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Cleanup, freePort, startAgentProcess, startCairn, startMasterProcess, waitFor, waitForLeader, type CairnProcess } from '../harness/processes.ts';
import { authFetch, authHeaders } from '../harness/credentials.ts';
import { marathon, openEvents, runningTasks, waitForNoDeployments, waitForRunning } from '../harness/marathon.ts';

/** A task: answers 200 on /health, 404 elsewhere, on $PORT0. */
const SERVER = `exec ${JSON.stringify(process.execPath)} -e "require('http').createServer((q, s) => { s.statusCode = q.url === '/health' ? 200 : 404; s.end(); }).listen(+process.env.PORT0, '127.0.0.1')"`;

const app = (id: string, extra: Record<string, unknown> = {}) => ({
  id, cmd: SERVER, cpus: 0.1, mem: 48, instances: 1, backoffSeconds: 0.2, ...extra,
});
// Generous timeouts: on a loaded two-core machine a node task can take seconds to listen, and
// one slow probe would count as unhealthy.
const httpCheck = (path = '/health') => [{ protocol: 'HTTP', path, portIndex: 0, intervalSeconds: 1, timeoutSeconds: 5, gracePeriodSeconds: 5, maxConsecutiveFailures: 2 }];

/** Two agents, each with a port range of its own and a host name of its own. */
async function startAgents(cleanup: Cleanup, masterUrl: string): Promise<CairnProcess[]> {
  // Below Linux's ephemeral range (32768 and up), where any socket of the host may sit.
  const base = 20_000 + Math.floor(Math.random() * 12) * 1000;
  return Promise.all([0, 1].map((i) => startAgentProcess(cleanup, masterUrl, {
    resources: `cpus:4;mem:4096;disk:10000;ports:[${base + i * 500}-${base + i * 500 + 499}]`,
    extra: ['--hostname', `host-${i + 1}`],
  })));
}

describe('services on one master and two agents', () => {
  const cleanup = new Cleanup();
  let url = '';

  beforeAll(async () => {
    const master = await startMasterProcess(cleanup);
    url = master.url;
    await startAgents(cleanup, url);
    await waitFor('two agents', async () => ((await (await fetch(`${url}/health`)).ok) ? true : undefined));
  }, 60_000);

  afterAll(() => cleanup.run(), 60_000);

  afterEach(async () => {
    for (const a of (await marathon(url, 'GET', '/v2/apps')).body.apps ?? []) await marathon(url, 'DELETE', `/v2/apps${a.id}?force=true`);
    await waitForNoDeployments(url, 60_000);
  }, 90_000);

  it('scales up and down, and /v2/events delivers the deployments\' events', async () => {
    const events = await openEvents(url);
    try {
      await scaleUpAndDown();
      const types = events.frames().map((f) => f.eventType);
      for (const t of ['api_post_event', 'deployment_info', 'status_update_event', 'deployment_success']) expect(types).toContain(t);
      // One deployment_info and one deployment_success for each of the three deployments.
      expect(types.filter((t) => t === 'deployment_success').length).toBeGreaterThanOrEqual(3);
      const running = events.frames().filter((f) => f.eventType === 'status_update_event' && f.taskStatus === 'TASK_RUNNING');
      expect(running.length).toBeGreaterThanOrEqual(4);
      expect(running[0]).toMatchObject({ appId: '/svc/scale', host: expect.stringMatching(/^host-[12]$/) });
    } finally {
      events.close();
    }
  }, 180_000);

  async function scaleUpAndDown(): Promise<void> {
    expect((await marathon(url, 'POST', '/v2/apps', app('/svc/scale', { instances: 2 }))).status).toBe(201);
    const two = await waitForRunning(url, '/svc/scale', 2, 60_000);
    // Each task answers on the port it was handed (once its server listens: RUNNING is when it started).
    for (const t of two) await waitFor(`task ${t.id} answering on ${t.ports[0]}`, async () => ((await fetch(`http://127.0.0.1:${t.ports[0]}/health`)).status === 200 ? true : undefined), 20_000);
    await waitForNoDeployments(url);
    expect((await marathon(url, 'PUT', '/v2/apps/svc/scale', { instances: 4 })).status).toBe(200);
    const four = await waitForRunning(url, '/svc/scale', 4, 60_000);
    expect(new Set(four.map((t) => t.id)).size).toBe(4);
    await waitForNoDeployments(url);
    expect((await marathon(url, 'PUT', '/v2/apps/svc/scale', { instances: 1 })).status).toBe(200);
    const one = await waitForRunning(url, '/svc/scale', 1, 60_000);
    await waitForNoDeployments(url);
    // Youngest first: the survivor is one of the first two.
    expect(two.map((t) => t.id)).toContain(one[0].id);
  }

  it('replaces a task whose HTTP health check fails', async () => {
    const events = await openEvents(url);
    try {
      await sickReplaced();
      // The agent's verdict reached Marathon's event bus.
      await waitFor('health_status_changed_event', () => events.frames().find((f) => f.eventType === 'health_status_changed_event' && f.appId === '/svc/sick' && f.alive === false), 20_000);
    } finally {
      events.close();
    }
  }, 180_000);

  async function sickReplaced(): Promise<void> {
    expect((await marathon(url, 'POST', '/v2/apps', app('/svc/sick', { healthChecks: httpCheck('/missing') }))).status).toBe(201);
    const first = await waitFor('the first task', async () => (await marathon(url, 'GET', '/v2/apps/svc/sick')).body.app.tasks[0], 60_000);
    const killed = await waitFor('the first task replaced', async () => {
      const tasks = (await marathon(url, 'GET', '/v2/apps/svc/sick')).body.app.tasks as any[];
      return tasks.some((t) => t.id !== first.id) && !tasks.some((t) => t.id === first.id) ? tasks : undefined;
    }, 90_000);
    expect(killed[0].id).not.toBe(first.id);
    expect(killed[0].id).toMatch(/^svc_sick\./);
    // The agent killed it for its health: the registry has it KILLED, unhealthy.
    const ended = await (await authFetch(`${url}/api/v1/tasks/${first.id}`)).json() as any;
    expect(ended).toMatchObject({ state: 'TASK_KILLED', healthy: false });
  }

  it('never has fewer than 2 of 4 healthy during a rolling restart with minimumHealthCapacity 0.5', async () => {
    const spec = app('/svc/roll', { instances: 4, healthChecks: httpCheck(), upgradeStrategy: { minimumHealthCapacity: 0.5, maximumOverCapacity: 0 } });
    expect((await marathon(url, 'POST', '/v2/apps', spec)).status).toBe(201);
    const before = await waitForRunning(url, '/svc/roll', 4, 90_000, true);
    await waitForNoDeployments(url);
    const restart = await marathon(url, 'POST', '/v2/apps/svc/roll/restart');
    expect(restart.status).toBe(200);
    let minHealthy = Infinity;
    let maxTasks = 0;
    let samples = 0;
    // What each sample saw (healthy/all, with each task's state and health), for the failure message.
    const timeline: string[] = [];
    for (;;) {
      const r = await marathon(url, 'GET', '/v2/apps/svc/roll');
      const tasks = r.body.app.tasks as any[];
      const healthy = tasks.filter((t) => t.state === 'TASK_RUNNING' && t.healthCheckResults?.[0]?.alive === true).length;
      minHealthy = Math.min(minHealthy, healthy);
      maxTasks = Math.max(maxTasks, tasks.length);
      const line = `${healthy}/${tasks.length} ${tasks.map((t) => `${t.id.slice(9, 13)}:${t.state.slice(5, 9)}:${t.healthCheckResults?.[0]?.alive ?? '-'}`).join(' ')}`;
      if (timeline[timeline.length - 1] !== line) timeline.push(line);
      samples++;
      if (r.body.app.deployments.length === 0) break;
      await new Promise((res) => setTimeout(res, 50));
      if (samples > 4000) throw new Error('the restart did not finish');
    }
    const after = await waitForRunning(url, '/svc/roll', 4, 30_000, true);
    expect(after.every((t) => !before.some((b) => b.id === t.id))).toBe(true);
    expect(samples).toBeGreaterThan(5);
    expect(minHealthy, timeline.join('\n')).toBeGreaterThanOrEqual(2);
    expect(maxTasks, timeline.join('\n')).toBeLessThanOrEqual(4);
  }, 240_000);

  it('runs 2 of 3 UNIQUE instances on two hosts, and the queue says the third waits on the constraint', async () => {
    expect((await marathon(url, 'POST', '/v2/apps', app('/svc/uniq', { instances: 3, constraints: [['hostname', 'UNIQUE']] }))).status).toBe(201);
    const tasks = await waitForRunning(url, '/svc/uniq', 2, 60_000);
    expect(new Set(tasks.map((t) => t.host))).toEqual(new Set(['host-1', 'host-2']));
    const item = await waitFor('the queue naming the constraint', async () => {
      const q = (await marathon(url, 'GET', '/v2/queue?cairn=true')).body.queue as any[];
      const it = q.find((x) => x.app.id === '/svc/uniq');
      return it?.waitingOn?.[0]?.reason === 'UnfulfilledConstraint' ? it : undefined;
    }, 60_000);
    expect(item.count).toBe(1);
    expect((await runningTasks(url, '/svc/uniq')).length).toBe(2);
  }, 120_000);
});

describe('services across a leader change', () => {
  const cleanup = new Cleanup();
  afterAll(() => cleanup.run(), 60_000);

  it('finishes a deployment on the next leader after the leader is SIGKILLed, never over capacity', async () => {
    const base = cleanup.dir('cairn-marathon-masters-');
    const secretFile = join(base, 'secret');
    writeFileSync(secretFile, 'a-test-secret-of-enough-bytes\n');
    const ports = await Promise.all([1, 2, 3].map(() => freePort()));
    const members = ports.map((p, i) => ({ id: i + 1, url: `http://127.0.0.1:${p}` }));
    const peers = members.map((m) => `${m.id}=${m.url}`).join(',');
    const procs = members.map((m) => ({
      ...m,
      proc: cleanup.track(startCairn(['master', '--id', String(m.id), '--peers', peers, '--secret-file', secretFile, '--port', new URL(m.url).port, '--host', '127.0.0.1', '--data-dir', cleanup.dir('cairn-master-'), '--dns-port', '0', '--ping-interval', '500ms'], m.url)),
    }));
    await Promise.all(procs.map((p) => p.proc.waitHealthy()));
    const leader = await waitForLeader(procs, 30_000);
    await startAgents(cleanup, procs.map((p) => p.url).join(','));

    // 4 instances, at most 6 alive (maximumOverCapacity 0.5), never under 2 healthy.
    const spec = app('/svc/failover', { instances: 4, healthChecks: httpCheck(), upgradeStrategy: { minimumHealthCapacity: 0.5, maximumOverCapacity: 0.5 } });
    expect((await marathon(leader.url, 'POST', '/v2/apps', spec)).status).toBe(201);
    await waitForRunning(leader.url, '/svc/failover', 4, 90_000, true);
    await waitForNoDeployments(leader.url);

    // Sample every master that answers: alive tasks of the framework never exceed 6.
    let maxAlive = 0;
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        for (const m of procs) {
          try {
            const st = await (await fetch(`${m.url}/api/v1/state`, { headers: authHeaders(), signal: AbortSignal.timeout(1000) })).json() as any;
            const fw = st.frameworks.find((f: any) => f.name === 'marathon');
            const alive = st.tasks.filter((t: any) => t.frameworkId === fw?.id && !['TASK_FINISHED', 'TASK_FAILED', 'TASK_KILLED', 'TASK_LOST', 'TASK_ERROR', 'TASK_GONE', 'TASK_DROPPED'].includes(t.state)).length;
            maxAlive = Math.max(maxAlive, alive);
          } catch {
            // down or electing
          }
        }
        await new Promise((r) => setTimeout(r, 50));
      }
    })();

    const restart = await marathon(leader.url, 'POST', '/v2/apps/svc/failover/restart');
    expect(restart.status).toBe(200);
    const version = restart.body.version;
    // Mid-deployment: at least one new instance launched, the deployment still in flight.
    await waitFor('the deployment under way', async () => {
      const a = (await marathon(leader.url, 'GET', '/v2/apps/svc/failover')).body.app;
      return a.deployments.length > 0 && (a.tasks as any[]).some((t) => t.version === version) ? true : undefined;
    }, 60_000, 20);
    await leader.proc.kill('SIGKILL');
    const survivors = procs.filter((p) => p !== leader);
    const next = await waitForLeader(survivors, 30_000);

    await waitFor('the deployment finished on the new leader', async () => {
      const r = await marathon(next.url, 'GET', '/v2/apps/svc/failover');
      if (r.status !== 200 || r.body.app.deployments.length > 0) return undefined;
      const tasks = r.body.app.tasks as any[];
      return tasks.length === 4 && tasks.every((t) => t.state === 'TASK_RUNNING' && t.healthCheckResults?.[0]?.alive === true) ? true : undefined;
    }, 120_000, 200);
    sampling = false;
    await sampler;
    const final = (await marathon(next.url, 'GET', '/v2/apps/svc/failover')).body.app;
    expect(final.version).toBe(version);
    // Every instance now runs the restarted version: the new leader carried the rollout on.
    const state = await (await fetch(`${next.url}/api/v1/state`, { headers: authHeaders() })).json() as any;
    const fw = state.frameworks.find((f: any) => f.name === 'marathon');
    const alive = state.tasks.filter((t: any) => t.frameworkId === fw.id && t.state === 'TASK_RUNNING');
    expect(alive).toHaveLength(4);
    expect(final.tasks.every((t: any) => t.version >= version)).toBe(true);
    expect(maxAlive).toBeGreaterThanOrEqual(4);
    expect(maxAlive).toBeLessThanOrEqual(6);
  }, 300_000);
});
