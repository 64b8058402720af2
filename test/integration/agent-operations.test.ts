// Operating agents through the master, as real processes: a drain (`cairn agent drain`) stops
// offers of the host and ends its tasks by the deadline; usage sums reach the master's state
// and a task's usage is read through the master; a container task launched by a plain Mesos
// v1 framework runs on the agent's Docker executor with its env, ports, volume and the
// masters' DNS, and its log is read through the master.

import { afterEach, describe, expect, it } from 'vitest';
import { chmodSync, existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Cleanup, freePort, getJson, runCairn, startAgentProcess, startMasterProcess, waitFor } from '../harness/processes.ts';
import { autoAck, RawScheduler, taskInfo, type RawEvent } from '../harness/raw-scheduler.ts';
import { dockerUnavailable, ensureTestImage, TEST_IMAGE } from '../harness/docker.ts';
import { authFetch } from '../harness/credentials.ts';

const cleanup = new Cleanup();
const schedulers: RawScheduler[] = [];
afterEach(async () => {
  for (const s of schedulers.splice(0)) s.close();
  await cleanup.run();
});

function cairn(args: string[], masterUrl: string): ReturnType<typeof runCairn> {
  return runCairn(args, { CAIRN_MASTER: masterUrl });
}

function updatesOf(s: RawScheduler, taskId: string): RawEvent[] {
  return s.events.filter((e) => e.type === 'UPDATE' && e.update.status.task_id.value === taskId);
}

async function subscribe(masterUrl: string, name: string): Promise<RawScheduler> {
  const s = new RawScheduler(masterUrl);
  schedulers.push(s);
  expect((await s.subscribe({ user: '', name, failover_timeout: 600 })).status).toBe(200);
  autoAck(s);
  return s;
}

async function launch(s: RawScheduler, offer: any, infos: unknown[]): Promise<void> {
  const r = await s.call({ type: 'ACCEPT', accept: { offer_ids: [offer.id], operations: [{ type: 'LAUNCH', launch: { task_infos: infos } }], filters: { refuse_seconds: 0.1 } } });
  expect(r.status).toBe(202);
}

describe('agent operations through the master', () => {
  it('drains an agent: no more offers of it, tasks killed at the deadline, bad requests refused; undrained it is offered again', async () => {
    const master = await startMasterProcess(cleanup);
    await startAgentProcess(cleanup, master.url, { resources: 'cpus:2;mem:1024', extra: ['--usage-interval', '200ms'] });
    const s = await subscribe(master.url, 'drainer');
    const offer = (await s.next((e) => e.type === 'OFFERS')).offers.offers[0];
    const agentId = offer.agent_id.value as string;
    await launch(s, offer, [taskInfo('sleeper', agentId, { cpus: 0.5, mem: 64 }, 'sleep 60')]);
    await waitFor('running', () => updatesOf(s, 'sleeper').some((e) => e.update.status.state === 'TASK_RUNNING'));

    // Usage: the agent's sums reach the master's state; one task's usage reads through the master.
    // (The first sample can come before the task's memory is charged to its cgroup: wait for one after.)
    const usage = await waitFor('usage in state', async () => {
      const u = (await getJson(`${master.url}/api/v1/state`)).agents[0].usage;
      return (u?.tasks === 1 && u.memoryBytes > 0) || undefined;
    });
    expect(usage).toBe(true);
    const st0 = await getJson(`${master.url}/api/v1/state`);
    expect(st0.agents[0]).toMatchObject({ usage: { tasks: 1, cpusLimit: 0.5, memoryLimitBytes: 64 * 1024 * 1024 }, draining: null, isolation: expect.stringMatching(/processes/) });
    expect(st0.agents[0].usage.memoryBytes).toBeGreaterThan(0);
    expect(await getJson(`${master.url}/api/v1/tasks/sleeper/usage`)).toMatchObject({ taskId: 'sleeper', cpusLimit: 0.5, memoryLimitBytes: 64 * 1024 * 1024 });
    expect((await authFetch(`${master.url}/api/v1/tasks/nope/usage`)).status).toBe(404);

    // Bad drains change nothing.
    const post = (id: string, body: unknown) => authFetch(`${master.url}/api/v1/agents/${id}/drain`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    const bad = await post(agentId, { deadlineMs: -1 });
    expect(bad.status).toBe(400);
    expect(await bad.json()).toMatchObject({ field: 'deadlineMs' });
    expect(await (await post(agentId, { deadline: 5 })).json()).toMatchObject({ field: 'deadline' });
    expect((await post('no-such-agent', {})).status).toBe(404);
    expect((await getJson(`${master.url}/api/v1/state`)).agents[0].draining).toBeNull();
    expect((await cairn(['agent', 'drain', 'no-such-host'], master.url)).code).toBe(1);

    // The drain, by host name, through the command line.
    const t0 = Date.now();
    const r = await cairn(['agent', 'drain', 'localhost', '--deadline', '1500ms'], master.url);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/draining agent localhost/);
    const st1 = await getJson(`${master.url}/api/v1/state`);
    expect(st1.agents[0].draining).toMatchObject({ deadlineAtMs: expect.any(Number) });
    expect(st1.offers).toEqual([]);
    // Counted from here: an offer made before the drain was committed may still have been on its way.
    const offersBefore = s.events.length;
    const killed = await waitFor('killed at the deadline', () => updatesOf(s, 'sleeper').find((e) => e.update.status.state === 'TASK_KILLED'), 10_000);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(1400);
    expect(killed.update.status.message).toMatch(/drained/);
    // Resources freed by the kill are not offered while the drain lasts.
    await new Promise((res) => setTimeout(res, 600));
    expect(s.events.slice(offersBefore).filter((e) => e.type === 'OFFERS')).toEqual([]);

    const u = await cairn(['agent', 'undrain', agentId], master.url);
    expect(u.code).toBe(0);
    await s.call({ type: 'REVIVE' });
    const again = await s.next((e) => e.type === 'OFFERS', 10_000, offersBefore);
    expect(again.offers.offers[0].agent_id.value).toBe(agentId);
    expect((await getJson(`${master.url}/api/v1/state`)).agents[0].draining).toBeNull();
  });
});

const why = await dockerUnavailable();
if (why && process.env.CI) throw new Error(`CI must run the Docker tests: ${why}`);
if (why) console.warn(`skipping container tasks through the master: ${why}`);

describe.skipIf(!!why)('container tasks through the master', () => {
  it('runs a container task from a Mesos v1 framework: env, ports, volume, logs through the master; the agent says containers run', async () => {
    await ensureTestImage();
    const master = await startMasterProcess(cleanup);
    const p0 = await freePort();
    const vol = cleanup.dir('cairn-vol-');
    await startAgentProcess(cleanup, master.url, { resources: `cpus:2;mem:1024;ports:[${p0}-${p0}]`, extra: ['--host-path-allow', vol] });
    const s = await subscribe(master.url, 'containers');
    const offer = (await s.next((e) => e.type === 'OFFERS')).offers.offers[0];
    const agentId = offer.agent_id.value as string;
    // The container runs as the agent's default task user (nobody), who must be able to write there.
    chmodSync(vol, 0o777);
    const info = taskInfo('boxed', agentId, { cpus: 0.2, mem: 64, ports: [[p0, p0]] }, 'echo "port=$PORT task=$CAIRN_TASK_ID greeting=$GREETING"; echo saved > /data/out.txt', {
      command: { value: 'echo "port=$PORT task=$CAIRN_TASK_ID greeting=$GREETING"; echo saved > /data/out.txt', shell: true, environment: { variables: [{ name: 'GREETING', value: 'hi' }] } },
      container: { type: 'DOCKER', docker: { image: TEST_IMAGE, network: 'HOST', pull_policy: 'never' }, volumes: [{ host_path: vol, container_path: '/data', mode: 'RW' }] },
    });
    await launch(s, offer, [info]);
    await waitFor('finished', () => updatesOf(s, 'boxed').some((e) => e.update.status.state === 'TASK_FINISHED'), 30_000);
    expect(updatesOf(s, 'boxed').map((e) => e.update.status.state)).toEqual(['TASK_RUNNING', 'TASK_FINISHED']);
    const log = await getJson(`${master.url}/api/v1/tasks/boxed/logs?stream=stdout`);
    expect(log.data).toBe(`port=${p0} task=boxed greeting=hi\n`);
    expect(readFileSync(join(vol, 'out.txt'), 'utf8')).toBe('saved\n');
    const st = await getJson(`${master.url}/api/v1/state`);
    expect(st.agents[0].isolation).toMatch(/containers through Docker/);
    expect(existsSync(vol)).toBe(true);
  });
});
