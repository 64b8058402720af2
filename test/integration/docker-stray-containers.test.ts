// Containers an agent did not launch, against a real Docker daemon. One Docker daemon is
// shared by everything on a host; containers with Cairn's labels left by another agent (an
// empty agent id, another agent's id, a sandbox that is not in this work dir) must be left
// alone — not adopted, not removed, not written for — and the agent keeps running and
// launching. Also: an error in one container's I/O (its sandbox gone, the container
// removed under it) ends that task at most, never the executor. Outside CI the file is
// skipped, with the reason printed, when no daemon answers; in CI it must run.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import Docker from 'dockerode';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import pino from 'pino';
import { DockerExecutor, type DockerTaskInfo } from '../../agent/executors/docker/docker-executor.ts';
import type { TaskStatusChange } from '../../agent/executors/process/executor.ts';
import { GpuPool } from '../../agent/resources/gpu-pool.ts';
import { startAgent, type AgentHandle } from '../../agent/agent.ts';
import { writeAgentId } from '../../agent/agent-id.ts';
import { workDirInstance } from '../../agent/executors/docker/ownership.ts';
import { startMaster, type MasterHandle } from '../../master/server.ts';
import { MasterAuth } from '../../master/auth/master-auth.ts';
import { silentLogger } from '../../shared/logger.ts';
import { dockerUnavailable, ensureTestImage, TEST_IMAGE } from '../harness/docker.ts';
import { tempDir, waitFor } from '../harness/processes.ts';
import { RawScheduler, taskInfo } from '../harness/raw-scheduler.ts';

const why = await dockerUnavailable();
if (why && process.env.CI) throw new Error(`CI must run the Docker tests: ${why}`);
if (why) console.warn(`skipping the stray container tests: ${why}`);

/**
 * This run's own: every container these tests make carries its framework id (cleanup finds
 * them all by it and removes nothing else), and its task ids and container names end in RUN,
 * so that containers of another cluster or another run on the host are neither counted nor
 * touched.
 */
const RUN = randomBytes(4).toString('hex');
const FRAMEWORK = `fw-stray-test-${RUN}`;
const AGENT_ID = `stray-test-agent-${RUN}-S1`;
const T = (name: string): string => `${name}-${RUN}`;
/** Log records about this run's containers only. */
const isOurs = (r: Record<string, any>): boolean => String(r.taskId ?? '').endsWith(`-${RUN}`);
const docker = new Docker();
const dirs: string[] = [];

async function removeOurContainers(): Promise<void> {
  const ours = () => docker.listContainers({ all: true, filters: { label: [`cairn.framework-id=${FRAMEWORK}`] } });
  await waitFor('the test containers removed', async () => {
    for (const c of await ours()) await docker.getContainer(c.Id).remove({ force: true }).catch(() => undefined);
    return (await ours()).length === 0 || undefined;
  }, 60_000, 200);
}

/** A running container with Cairn's labels, as another agent (or an older Cairn) would leave it. */
async function stray(name: string, labels: Record<string, string>, binds: string[] = []): Promise<Docker.Container> {
  const c = await docker.createContainer({
    name, Image: TEST_IMAGE, Cmd: ['sh', '-c', 'while true; do echo stray; sleep 0.2; done'],
    Labels: { 'cairn.framework-id': FRAMEWORK, 'cairn.resources': 'cpus:0.1;mem:16', ...labels },
    HostConfig: { Binds: binds },
  });
  await c.start();
  return c;
}

function dir(prefix: string): string {
  const d = tempDir(prefix);
  dirs.push(d);
  return d;
}

/** A logger whose records the test can read. */
function recordingLogger(): { logger: pino.Logger; records: Record<string, any>[] } {
  const records: Record<string, any>[] = [];
  const logger = pino({ level: 'info' }, { write: (line: string) => void records.push(JSON.parse(line)) });
  return { logger, records };
}

function dockerTask(id: string, command: string): DockerTaskInfo {
  return {
    taskId: id, frameworkId: FRAMEWORK, name: id, resources: 'cpus:0.1;mem:32', killGraceMs: 1000, labels: [],
    command: { shell: true, value: command, arguments: [], environment: [] },
    container: { type: 'docker', docker: { image: TEST_IMAGE, network: 'host', portMappings: [], pullPolicy: 'never' }, volumes: [] },
  } as DockerTaskInfo;
}

describe.skipIf(!!why)('containers an agent did not launch', () => {
  beforeAll(async () => {
    await ensureTestImage();
    await removeOurContainers();
  });
  afterAll(async () => {
    await removeOurContainers();
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  });

  it('an agent leaves stray containers alone, logs each once, and keeps running and launching', async () => {
    const masterDir = dir('cairn-stray-master-');
    const workDir = dir('cairn-stray-agent-');
    const elsewhere = dir('cairn-stray-elsewhere-');
    mkdirSync(join(elsewhere, 'sb'));
    // The agent will have this id (stored before it starts): strays can claim it too.
    await writeAgentId(workDir, AGENT_ID);
    const strays = {
      emptyId: await stray(T('cairn-stray-empty-id'), { 'cairn.task-id': T('stray-empty'), 'cairn.agent-id': '' }),
      otherAgent: await stray(T('cairn-stray-other-agent'), { 'cairn.task-id': T('stray-other'), 'cairn.agent-id': 'some-other-agent-S9' }),
      // This agent's id, but launched from another work dir: another install on the host.
      otherWorkDir: await stray(T('cairn-stray-other-dir'), { 'cairn.task-id': T('stray-dir'), 'cairn.agent-id': AGENT_ID, 'cairn.agent-instance': 'f'.repeat(32) }),
      // This agent's id and no instance (an older Cairn), its sandbox somewhere else.
      otherSandbox: await stray(T('cairn-stray-other-sandbox'), { 'cairn.task-id': T('stray-sandbox'), 'cairn.agent-id': AGENT_ID }, [`${join(elsewhere, 'sb')}:/mnt/mesos/sandbox:rw`]),
      // In the way of a task this agent will be asked to launch, under the name it would use.
      inTheWay: await stray(DockerExecutor.containerName(T('wanted')), { 'cairn.task-id': T('wanted'), 'cairn.agent-id': '' }),
    };

    let master: MasterHandle | undefined;
    let agent: AgentHandle | undefined;
    const scheduler: { s?: RawScheduler } = {};
    try {
      master = await startMaster({ auth: MasterAuth.off(), dataDir: masterDir, port: 0, host: '127.0.0.1', dnsPort: null, logger: silentLogger(), allocationIntervalMs: 50 });
      const { logger, records } = recordingLogger();
      const start = () => startAgent({ masterUrl: master!.url, workDir, httpPort: 0, ip: '127.0.0.1', hostname: 'stray-host', resources: 'cpus:2;mem:512', cgroups: false, logger });
      agent = await start();
      await waitFor('the agent registered', () => master!.master.registry.state.agents.has(AGENT_ID) || undefined, 30_000);

      // None of them was taken for this agent's: the agent reports no task, each was logged once.
      const leftAlone = () => records.filter((r) => r.msg === "a container with Cairn's labels is not this agent's: left alone" && isOurs(r));
      expect(leftAlone().map((r) => r.taskId).sort()).toEqual([T('stray-dir'), T('stray-empty'), T('stray-other'), T('stray-sandbox'), T('wanted')]);
      expect(leftAlone().find((r) => r.taskId === T('stray-empty'))!.why).toBe('it carries no agent id');
      expect(leftAlone().find((r) => r.taskId === T('stray-other'))!.why).toBe('it belongs to agent some-other-agent-S9');
      expect(leftAlone().find((r) => r.taskId === T('stray-sandbox'))!.why).toMatch(/is not in this agent's work dir/);
      expect(master.master.registry.state.tasks.size).toBe(0);
      expect(existsSync(join(workDir, 'sandboxes', T('stray-empty')))).toBe(false);

      // The agent launches: a container task runs to its end.
      const s = new RawScheduler(master.url);
      scheduler.s = s;
      expect((await s.subscribe({ user: 'nobody', name: 'stray-fw' })).status).toBe(200);
      const offer = await s.next((e) => e.type === 'OFFERS', 20_000).then((e) => e.offers.offers[0]);
      const container = { type: 'DOCKER', docker: { image: TEST_IMAGE, network: 'HOST', pull_policy: 'never' } };
      const accepted = await s.call({
        type: 'ACCEPT',
        accept: {
          offer_ids: [offer.id], filters: { refuse_seconds: 0 },
          operations: [{ type: 'LAUNCH', launch: { task_infos: [
            taskInfo(T('fresh'), AGENT_ID, { cpus: 0.1, mem: 32 }, 'echo launched fine', { container }),
            taskInfo(T('wanted'), AGENT_ID, { cpus: 0.1, mem: 32 }, 'echo should not run', { container }),
          ] } }],
        },
      });
      expect(accepted.status).toBe(202);
      const final = (id: string) => s.next((e) => e.type === 'UPDATE' && e.update.status.task_id.value === id && ['TASK_FINISHED', 'TASK_FAILED', 'TASK_KILLED', 'TASK_LOST', 'TASK_ERROR'].includes(e.update.status.state), 60_000);
      expect((await final(T('fresh'))).update.status.state).toBe('TASK_FINISHED');
      await waitFor('the output in the sandbox', () => readFileSync(join(workDir, 'sandboxes', T('fresh'), 'stdout'), 'utf8') === 'launched fine\n' || undefined, 10_000);
      // A container that is not this agent's, in the way of a launch, fails that launch and stays.
      const wanted = (await final(T('wanted'))).update.status;
      expect(wanted.state).toBe('TASK_FAILED');
      expect(wanted.message).toMatch(new RegExp(`a container named cairn-${T('wanted')} that is not this agent's is in the way \\(it carries no agent id\\)`));

      // A restart of the agent: still none of them is adopted.
      await agent.stop({ killTasks: false });
      agent = undefined;
      records.length = 0;
      agent = await start();
      expect(leftAlone()).toHaveLength(5);
      expect(master.master.registry.state.tasks.get(T('stray-empty'))).toBeUndefined();

      // A fresh agent (no id yet: the case where a container labelled with an empty id used to
      // be taken for its own, and its logs written into a sandbox that was not there).
      const fresh = recordingLogger();
      const freshDir = dir('cairn-stray-fresh-');
      const second = await startAgent({ masterUrl: master.url, workDir: freshDir, httpPort: 0, ip: '127.0.0.1', hostname: 'stray-host-2', resources: 'cpus:1;mem:256', cgroups: false, logger: fresh.logger });
      try {
        await waitFor('the fresh agent registered', () => (second.agentId() !== undefined && master!.master.registry.state.agents.has(second.agentId()!)) || undefined, 30_000);
        expect(fresh.records.filter((r) => r.msg === "a container with Cairn's labels is not this agent's: left alone" && isOurs(r)).map((r) => r.taskId).sort())
          .toEqual([T('stray-dir'), T('stray-empty'), T('stray-other'), T('stray-sandbox'), T('wanted')]);
        // No sandbox was made for any of them (the sandboxes' root itself is made at start).
        const sandboxes = join(freshDir, 'sandboxes');
        expect(existsSync(sandboxes) ? readdirSync(sandboxes) : []).toEqual([]);
      } finally {
        await second.stop({ killTasks: true });
      }
      expect(master.master.registry.state.tasks.get(T('stray-empty'))).toBeUndefined();

      // Every stray is still there and running, untouched.
      for (const c of Object.values(strays)) expect((await c.inspect()).State.Running).toBe(true);
      // Nothing was written into the other agent's sandbox.
      expect(readdirSync(join(elsewhere, 'sb'))).toEqual([]);
    } finally {
      scheduler.s?.close();
      await agent?.stop({ killTasks: true });
      await master?.stop();
      await removeOurContainers();
    }
  }, 180_000);

  it('an error in one container\'s I/O ends that task at most: a sandbox gone, a container removed under the executor', async () => {
    const workDir = dir('cairn-stray-io-');
    const statuses: TaskStatusChange[] = [];
    const { logger, records } = recordingLogger();
    const executors: DockerExecutor[] = [];
    const executor = () => {
      const e = new DockerExecutor({ workDir, hostname: 'h', agentId: () => AGENT_ID, gpuPool: new GpuPool([]), defaultKillGraceMs: 1000, logDrainMs: 120_000, onStatus: (s) => statuses.push(s), logger });
      executors.push(e);
      return e;
    };
    const final = (id: string) => statuses.filter((s) => s.taskId === id).at(-1);
    try {
      // Its own container, whose sandbox is removed while the agent is away: followed again into a new one.
      const first = executor();
      first.launch(dockerTask(T('io-keep'), 'i=0; while true; do echo tick $i; i=$((i+1)); sleep 0.2; done'));
      await waitFor('running', () => final(T('io-keep'))?.state === 'TASK_RUNNING' || undefined, 30_000);
      await first.shutdown({ killTasks: false });
      rmSync(join(workDir, 'sandboxes'), { recursive: true, force: true });
      const second = executor();
      expect((await second.recover()).map((t) => t.taskId)).toEqual([T('io-keep')]);
      await waitFor('the log written again', async () => (await second.readLog(T('io-keep'), 'stdout', 0, 1 << 20)).data.includes('tick') || undefined, 15_000);

      // The container removed from under the executor: that task fails, the executor goes on.
      const [c] = await docker.listContainers({ filters: { label: [`cairn.task-id=${T('io-keep')}`] } });
      // It carries the id of the work dir it was launched from, and its agent's id.
      expect(c.Labels).toMatchObject({ 'cairn.agent-instance': workDirInstance(workDir), 'cairn.agent-id': AGENT_ID });
      await docker.getContainer(c.Id).remove({ force: true });
      await waitFor('the task ended', () => final(T('io-keep'))?.state === 'TASK_FAILED' || final(T('io-keep'))?.state === 'TASK_KILLED' || undefined, 30_000);
      second.launch(dockerTask(T('io-next'), 'echo still launching'));
      await waitFor('the next task finished', () => final(T('io-next'))?.state === 'TASK_FINISHED' || undefined, 30_000);
      expect((await second.readLog(T('io-next'), 'stdout', 0, 1 << 20)).data).toBe('still launching\n');
      expect(records.filter((r) => r.level >= 50)).toEqual([]);
    } finally {
      for (const e of executors) await e.shutdown({ killTasks: true, timeoutMs: 5000 });
      await removeOurContainers();
    }
  }, 120_000);
});
