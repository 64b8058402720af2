// A real cluster on loopback: `cairn master` and `cairn agent` as separate processes,
// real tasks as their children, and a plain Mesos v1 client as the framework.

import { afterEach, describe, expect, it } from 'vitest';
import { Cleanup, startAgentProcess, startCairn, startMasterProcess, waitFor, freePort } from '../harness/processes.ts';
import { autoAck, RawScheduler, taskInfo } from '../harness/raw-scheduler.ts';
import { authFetch } from '../harness/credentials.ts';

const cleanup = new Cleanup();
const schedulers: RawScheduler[] = [];
afterEach(async () => {
  for (const s of schedulers.splice(0)) s.close();
  await cleanup.run();
});

async function subscribe(masterUrl: string, info: Record<string, unknown> = {}): Promise<RawScheduler> {
  const s = new RawScheduler(masterUrl);
  schedulers.push(s);
  const r = await s.subscribe({ user: '', name: 'test-fw', ...info });
  expect(r.status).toBe(200);
  return s;
}

async function state(masterUrl: string): Promise<any> {
  return (await authFetch(`${masterUrl}/api/v1/state`)).json();
}

function stateOf(s: RawScheduler, taskId: string): string | undefined {
  const ups = s.events.filter((e) => e.type === 'UPDATE' && e.update.status.task_id.value === taskId);
  return ups.length ? ups[ups.length - 1].update.status.state : undefined;
}

describe('a real cluster on loopback', () => {
  it('runs 20 tasks at once on one agent, each with its own ports', async () => {
    const master = await startMasterProcess(cleanup);
    await startAgentProcess(cleanup, master.url, { resources: 'cpus:4;mem:4096;ports:[33000-33100]' });
    const s = await subscribe(master.url);
    autoAck(s);
    const offer = (await s.next((e) => e.type === 'OFFERS')).offers.offers[0];
    const tasks = Array.from({ length: 20 }, (_, i) =>
      taskInfo(`port-${i}`, offer.agent_id.value, { cpus: 0.1, mem: 32, ports: [[33000 + 2 * i, 33001 + 2 * i]] }, 'echo "PORT=$PORT PORT0=$PORT0 PORT1=$PORT1 PORTS=$PORTS TASK=$CAIRN_TASK_ID"; sleep 30'),
    );
    const r = await s.call({ type: 'ACCEPT', accept: { offer_ids: [offer.id], operations: [{ type: 'LAUNCH', launch: { task_infos: tasks } }] } });
    expect(r.status).toBe(202);
    await waitFor('20 running', () => tasks.every((t) => stateOf(s, t.task_id.value) === 'TASK_RUNNING'), 20_000);
    for (let i = 0; i < 20; i++) {
      const log = await waitFor(`output of port-${i}`, async () => {
        const chunk = await (await authFetch(`${master.url}/api/v1/tasks/port-${i}/logs?stream=stdout&offset=0`)).json();
        return chunk.data ? chunk.data : undefined;
      });
      const p = 33000 + 2 * i;
      expect(log.trim()).toBe(`PORT=${p} PORT0=${p} PORT1=${p + 1} PORTS=${p},${p + 1} TASK=port-${i}`);
    }
    const st = await state(master.url);
    expect(st.agents[0].used).toBe('cpus:2;mem:640;ports:[33000-33039]');
  });

  it('shares one agent between two frameworks in two roles by DRF (the DRF paper example)', async () => {
    const master = await startMasterProcess(cleanup, { extra: ['--offer-timeout', '1m'] });
    // 9 CPUs, 18 GB. A's tasks <1 CPU, 4 GB>; B's tasks <3 CPU, 1 GB>.
    await startAgentProcess(cleanup, master.url, { resources: 'cpus:9;mem:18432;disk:1000' });
    const launched: Record<string, number> = { a: 0, b: 0 };
    const need = { a: { cpus: 1, mem: 4096 }, b: { cpus: 3, mem: 1024 } };
    let lastLaunch = Date.now();
    const fws = await Promise.all((['a', 'b'] as const).map(async (role) => {
      const s = await subscribe(master.url, { name: `fw-${role}`, roles: [role], capabilities: [{ type: 'MULTI_ROLE' }] });
      autoAck(s);
      s.onEvent((e) => {
        if (e.type !== 'OFFERS') return;
        for (const offer of e.offers.offers) {
          const cpus = offer.resources.find((x: any) => x.name === 'cpus')?.scalar.value ?? 0;
          const mem = offer.resources.find((x: any) => x.name === 'mem')?.scalar.value ?? 0;
          if (cpus >= need[role].cpus && mem >= need[role].mem) {
            const id = `${role}-${launched[role]++}`;
            lastLaunch = Date.now();
            void s.call({ type: 'ACCEPT', accept: { offer_ids: [offer.id], operations: [{ type: 'LAUNCH', launch: { task_infos: [taskInfo(id, offer.agent_id.value, need[role], 'sleep 60')] } }], filters: { refuse_seconds: 0 } } });
          } else {
            void s.call({ type: 'DECLINE', decline: { offer_ids: [offer.id], filters: { refuse_seconds: 0.2 } } });
          }
        }
      });
      return s;
    }));
    await waitFor('allocation to settle', () => launched.a + launched.b >= 5 && Date.now() - lastLaunch > 1500, 20_000);
    // Progressive filling by dominant share: A reaches 2/3 of memory, B 2/3 of CPUs.
    expect(launched).toEqual({ a: 3, b: 2 });
    await waitFor('all running', () => ['a-0', 'a-1', 'a-2', 'b-0', 'b-1'].every((id) => fws.some((s) => stateOf(s, id) === 'TASK_RUNNING')));
  });

  it('marks an agent killed with SIGKILL unreachable within the ping window; a restart re-registers with the same id', async () => {
    const master = await startMasterProcess(cleanup, { extra: ['--ping-interval', '200ms', '--max-missed-pings', '3'] });
    const workDir = cleanup.dir('cairn-agent-');
    const port = await freePort();
    const agent = await startAgentProcess(cleanup, master.url, { workDir, port, resources: 'cpus:2;mem:1024' });
    const s = await subscribe(master.url, { failover_timeout: 3600 });
    autoAck(s);
    const offer = (await s.next((e) => e.type === 'OFFERS')).offers.offers[0];
    const agentId = offer.agent_id.value;
    await s.call({ type: 'ACCEPT', accept: { offer_ids: [offer.id], operations: [{ type: 'LAUNCH', launch: { task_infos: [taskInfo('victim', agentId, { cpus: 0.5, mem: 32 }, 'exec sleep 2')] } }] } });
    await waitFor('running', () => stateOf(s, 'victim') === 'TASK_RUNNING');

    const killedAt = Date.now();
    await agent.kill('SIGKILL');
    await waitFor('unreachable', () => stateOf(s, 'victim') === 'TASK_UNREACHABLE', 5_000, 20);
    const elapsed = Date.now() - killedAt;
    // 3 missed pings at 200 ms: the window is 600-800 ms; allow scheduling slack, but far
    // below what the defaults (15 s × 5) would take.
    expect(elapsed).toBeLessThan(2_500);
    expect((await state(master.url)).agents[0].reachable).toBe(false);

    await startAgentProcess(cleanup, master.url, { workDir, port, resources: 'cpus:2;mem:1024' });
    await waitFor('re-registered', async () => {
      const st = await state(master.url);
      return st.agents.length === 1 && st.agents[0].reachable && st.agents[0].id === agentId ? true : undefined;
    });
    // The new agent process recovers the task (it ran on, detached from the dead agent)
    // and reports its real end: `sleep 2` exits 0.
    await waitFor('finished', () => stateOf(s, 'victim') === 'TASK_FINISHED');
  });

  it('a master restarted on the same data dir still knows its agents, frameworks and tasks', async () => {
    const dataDir = cleanup.dir('cairn-master-');
    const port = await freePort();
    let master = await startMasterProcess(cleanup, { dataDir, port });
    await startAgentProcess(cleanup, master.url, { resources: 'cpus:2;mem:1024' });
    const s = await subscribe(master.url, { failover_timeout: 3600, name: 'survivor' });
    autoAck(s);
    const offer = (await s.next((e) => e.type === 'OFFERS')).offers.offers[0];
    await s.call({ type: 'ACCEPT', accept: { offer_ids: [offer.id], operations: [{ type: 'LAUNCH', launch: { task_infos: [taskInfo('keeper', offer.agent_id.value, { cpus: 0.5, mem: 32 }, 'sleep 60')] } }] } });
    await waitFor('running', () => stateOf(s, 'keeper') === 'TASK_RUNNING');
    const before = await state(master.url);

    await master.kill('SIGKILL');
    s.close();
    master = await startMasterProcess(cleanup, { dataDir, port });
    const after = await state(master.url);
    expect(after.agents.map((a: any) => a.id)).toEqual(before.agents.map((a: any) => a.id));
    expect(after.frameworks.map((f: any) => [f.id, f.name])).toEqual([[s.frameworkId, 'survivor']]);
    expect(after.tasks.map((t: any) => [t.id, t.state])).toEqual([['keeper', 'TASK_RUNNING']]);

    // The agent reconnects by itself; the framework resubscribes with its id; the task runs on.
    await waitFor('agent back', async () => ((await state(master.url)).agents[0].connected ? true : undefined), 15_000);
    const again = new RawScheduler(master.url);
    schedulers.push(again);
    expect((await again.subscribe({ user: '', name: 'survivor', failover_timeout: 3600, id: { value: s.frameworkId } }, s.frameworkId)).status).toBe(200);
    await again.call({ type: 'RECONCILE', reconcile: { tasks: [{ task_id: { value: 'keeper' } }] } });
    const rec = await again.next((e) => e.type === 'UPDATE' && e.update.status.task_id.value === 'keeper');
    expect(rec.update.status.state).toBe('TASK_RUNNING');
  });

  it('refuses an agent --resources string that does not parse, naming the flag', async () => {
    const p = cleanup.track(startCairn(['agent', '--master', 'http://127.0.0.1:1', '--resources', 'cpus:lots', '--work-dir', cleanup.dir()], 'http://127.0.0.1:1'));
    const exit = await new Promise<number | null>((r) => (p.child.exitCode !== null ? r(p.child.exitCode) : p.child.once('exit', (c) => r(c))));
    expect(exit).not.toBe(0);
    expect(p.output).toMatch(/resources/);
    expect(p.output).toMatch(/cpus/);
  });
});
