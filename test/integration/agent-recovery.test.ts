// An agent killed with SIGKILL and started again, as real processes: a real master, a real
// `cairn agent`, a plain Mesos v1 client as the framework. The tasks outlive the agent;
// the restarted agent re-attaches to the one still running and reports the one that
// exited meanwhile with its real exit code.

import { afterEach, describe, expect, it } from 'vitest';
import { existsSync, readdirSync, rmdirSync } from 'node:fs';
import { join } from 'node:path';
import { agentCgroupName } from '../../agent/isolation/cgroups.ts';
import { Cleanup, freePort, startAgentProcess, startMasterProcess, waitFor } from '../harness/processes.ts';
import { autoAck, RawScheduler, taskInfo } from '../harness/raw-scheduler.ts';
import { dockerUnavailable, ensureTestImage, TEST_IMAGE } from '../harness/docker.ts';
import { authFetch } from '../harness/credentials.ts';

const cleanup = new Cleanup();
const schedulers: RawScheduler[] = [];
const workDirs: string[] = [];
afterEach(async () => {
  for (const s of schedulers.splice(0)) s.close();
  await cleanup.run();
  for (const d of workDirs.splice(0)) removeAgentCgroups(d);
});

/** Agents killed with SIGKILL leave their (by now empty) cgroup directories behind. */
function removeAgentCgroups(workDir: string): void {
  for (const h of ['memory', 'cpu', 'cpuacct', 'unified', '']) {
    const dir = join('/sys/fs/cgroup', h, 'cairn', agentCgroupName(workDir));
    if (!existsSync(dir)) continue;
    for (const child of readdirSync(dir, { withFileTypes: true })) if (child.isDirectory()) rmSyncDir(join(dir, child.name));
    rmSyncDir(dir);
  }
}

function rmSyncDir(dir: string): void {
  try {
    rmdirSync(dir);
  } catch {
    // still in use; left for the next run
  }
}

function agentDir(): string {
  const d = cleanup.dir('cairn-agent-');
  workDirs.push(d);
  return d;
}

function updatesOf(s: RawScheduler, taskId: string): string[] {
  return s.events.filter((e) => e.type === 'UPDATE' && e.update.status.task_id.value === taskId).map((e) => e.update.status.state as string);
}

async function logSize(masterUrl: string, taskId: string): Promise<number> {
  let offset = 0;
  for (;;) {
    const r = await authFetch(`${masterUrl}/api/v1/tasks/${taskId}/logs?stream=stdout&offset=${offset}`);
    if (!r.ok) throw new Error(`logs: ${r.status} ${await r.text()}`);
    const chunk = (await r.json()) as { nextOffset: number; data: string };
    if (chunk.nextOffset === offset) return offset;
    offset = chunk.nextOffset;
  }
}

async function masterTask(masterUrl: string, taskId: string): Promise<any> {
  const st = (await (await authFetch(`${masterUrl}/api/v1/state`)).json()) as { tasks: any[] };
  return st.tasks.find((t) => t.id === taskId);
}

/** A task spec: a shell command, or one run in the test image's container. */
type Spec = [id: string, cmd: string] | [id: string, cmd: string, 'container'];

async function launch(masterUrl: string, tasks: Spec[]): Promise<{ s: RawScheduler; agentId: string }> {
  const s = new RawScheduler(masterUrl);
  schedulers.push(s);
  expect((await s.subscribe({ user: '', name: 'recovery', failover_timeout: 3600 })).status).toBe(200);
  autoAck(s);
  const offer = (await s.next((e) => e.type === 'OFFERS')).offers.offers[0];
  const agentId = offer.agent_id.value as string;
  const infos = tasks.map(([id, cmd, kind]) =>
    taskInfo(id, agentId, { cpus: 0.1, mem: 32 }, cmd, kind === 'container' ? { container: { type: 'DOCKER', docker: { image: TEST_IMAGE, network: 'HOST', pull_policy: 'never' } } } : {}),
  );
  const r = await s.call({ type: 'ACCEPT', accept: { offer_ids: [offer.id], operations: [{ type: 'LAUNCH', launch: { task_infos: infos } }] } });
  expect(r.status).toBe(202);
  await waitFor('tasks running', () => tasks.every(([id]) => updatesOf(s, id).includes('TASK_RUNNING')));
  return { s, agentId };
}

/** A master and an agent on a fixed port and work dir, so that it can be started again as the same agent. */
async function masterAndAgent() {
  const master = await startMasterProcess(cleanup);
  const agentOpts = { workDir: agentDir(), port: await freePort(), resources: 'cpus:2;mem:1024' };
  const agent = await startAgentProcess(cleanup, master.url, agentOpts);
  return { master, agent, agentOpts };
}

describe('agent recovery (real processes)', () => {
  it('survives SIGKILL: a running task stays RUNNING with its log growing, one that exited meanwhile is reported with its exit code', async () => {
    const { master, agent, agentOpts } = await masterAndAgent();
    const { s, agentId } = await launch(master.url, [
      ['survivor', 'while true; do echo "tick $(date +%s%N)"; sleep 0.05; done'],
      ['seven', 'sleep 1.5; exit 7'],
    ]);
    const sizeBefore = await waitFor('some output', async () => ((await logSize(master.url, 'survivor')) > 0 ? logSize(master.url, 'survivor') : undefined));

    await agent.kill('SIGKILL');
    // 'seven' exits while no agent runs.
    await new Promise((r) => setTimeout(r, 2000));
    await startAgentProcess(cleanup, master.url, agentOpts);

    await waitFor('seven failed', () => updatesOf(s, 'seven').includes('TASK_FAILED'), 15_000);
    const failed = s.events.find((e) => e.type === 'UPDATE' && e.update.status.task_id.value === 'seven' && e.update.status.state === 'TASK_FAILED')!;
    expect(failed.update.status.message).toBe('exited with code 7');
    expect(failed.update.status.agent_id.value).toBe(agentId);
    expect(await masterTask(master.url, 'seven')).toMatchObject({ state: 'TASK_FAILED', exitCode: 7 });

    // The survivor never left RUNNING, its log kept growing and is readable through the master.
    const st = (await (await authFetch(`${master.url}/api/v1/state`)).json()) as { agents: any[] };
    expect(st.agents.map((a) => [a.id, a.reachable])).toEqual([[agentId, true]]);
    expect(await masterTask(master.url, 'survivor')).toMatchObject({ state: 'TASK_RUNNING' });
    const sizeAfter = await logSize(master.url, 'survivor');
    expect(sizeAfter).toBeGreaterThan(sizeBefore);
    await new Promise((r) => setTimeout(r, 300));
    expect(await logSize(master.url, 'survivor')).toBeGreaterThan(sizeAfter);

    // Killed through the master, the recovered task ends as any other would.
    const k = await s.call({ type: 'KILL', kill: { task_id: { value: 'survivor' }, agent_id: { value: agentId } } });
    expect(k.status).toBe(202);
    await waitFor('survivor killed', () => updatesOf(s, 'survivor').includes('TASK_KILLED'), 10_000);
    expect(updatesOf(s, 'survivor')).toEqual(['TASK_RUNNING', 'TASK_KILLED']);
  });

  it('--recover=cleanup kills the tasks it finds', async () => {
    const { master, agent, agentOpts } = await masterAndAgent();
    const { s } = await launch(master.url, [['leftover', 'sleep 60']]);
    await agent.kill('SIGKILL');
    await startAgentProcess(cleanup, master.url, { ...agentOpts, extra: ['--recover', 'cleanup'] });
    await waitFor('leftover killed', () => updatesOf(s, 'leftover').includes('TASK_KILLED'), 15_000);
    const killed = s.events.find((e) => e.type === 'UPDATE' && e.update.status.state === 'TASK_KILLED')!;
    expect(killed.update.status.message).toMatch(/--recover=cleanup/);
  });
});

const why = await dockerUnavailable();
if (why && process.env.CI) throw new Error(`CI must run the Docker tests: ${why}`);
if (why) console.warn(`skipping agent recovery with containers: ${why}`);

describe.skipIf(!!why)('agent recovery with a container and a process (real processes)', () => {
  it('SIGKILL of the agent: both stay RUNNING throughout, their logs go on, a container that exited meanwhile is reported with its exit code', async () => {
    await ensureTestImage();
    const { master, agent, agentOpts } = await masterAndAgent();
    const { s, agentId } = await launch(master.url, [
      ['proc', 'while true; do echo "p $(date +%s%N)"; sleep 0.05; done'],
      ['box', 'i=0; while true; do echo "c $i"; i=$((i+1)); sleep 0.05; done', 'container'],
      ['box-seven', 'sleep 1.5; exit 7', 'container'],
    ]);
    const before = { proc: await logSize(master.url, 'proc'), box: await logSize(master.url, 'box') };
    await waitFor('some output', async () => ((await logSize(master.url, 'box')) > 0 && (await logSize(master.url, 'proc')) > 0) || undefined);

    await agent.kill('SIGKILL');
    // While no agent runs, the master keeps both RUNNING; box-seven exits meanwhile.
    const seen = new Set<string>();
    for (let i = 0; i < 10; i++) {
      for (const id of ['proc', 'box']) seen.add(`${id}:${(await masterTask(master.url, id)).state}`);
      await new Promise((r) => setTimeout(r, 200));
    }
    expect([...seen].sort()).toEqual(['box:TASK_RUNNING', 'proc:TASK_RUNNING']);
    await startAgentProcess(cleanup, master.url, agentOpts);

    await waitFor('box-seven failed', () => updatesOf(s, 'box-seven').includes('TASK_FAILED'), 20_000);
    const failed = s.events.find((e) => e.type === 'UPDATE' && e.update.status.task_id.value === 'box-seven' && e.update.status.state === 'TASK_FAILED')!;
    expect(failed.update.status.message).toBe('exited with code 7');
    expect(await masterTask(master.url, 'box-seven')).toMatchObject({ state: 'TASK_FAILED', exitCode: 7 });
    for (const id of ['proc', 'box'] as const) {
      expect(await masterTask(master.url, id)).toMatchObject({ state: 'TASK_RUNNING' });
      expect(updatesOf(s, id)).toEqual(['TASK_RUNNING']);
      const after = await logSize(master.url, id);
      expect(after).toBeGreaterThan(before[id]);
      await waitFor(`${id} log grows`, async () => (await logSize(master.url, id)) > after || undefined, 10_000);
    }
    const st = (await (await authFetch(`${master.url}/api/v1/state`)).json()) as { agents: any[] };
    expect(st.agents.map((a) => [a.id, a.reachable])).toEqual([[agentId, true]]);

    // Killed through the master, the recovered container ends as any other would.
    const k = await s.call({ type: 'KILL', kill: { task_id: { value: 'box' }, agent_id: { value: agentId } } });
    expect(k.status).toBe(202);
    await waitFor('box killed', () => updatesOf(s, 'box').includes('TASK_KILLED'), 15_000);
    expect(updatesOf(s, 'box')).toEqual(['TASK_RUNNING', 'TASK_KILLED']);
  });
});
