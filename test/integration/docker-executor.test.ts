// The Docker executor against a real Docker daemon, with an image made locally by
// `docker import` (nothing is pulled). Outside CI the file is skipped, with the reason
// printed, when no daemon answers; in CI it must run.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import Docker from 'dockerode';
import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { TaskInfo } from '../../shared/agent-protocol.ts';
import { DockerExecutor, type DockerTaskInfo } from '../../agent/executors/docker/docker-executor.ts';
import type { TaskStatusChange } from '../../agent/executors/process/executor.ts';
import { GpuPool } from '../../agent/resources/gpu-pool.ts';
import { workDirInstance } from '../../agent/executors/docker/ownership.ts';
import { dockerRuntimeMissing, dockerUnavailable, ensureTestImage, TEST_IMAGE } from '../harness/docker.ts';
import { startAgent } from '../../agent/agent.ts';
import { silentLogger } from '../../shared/logger.ts';
import { freePort, freePortRun, tempDir, waitFor } from '../harness/processes.ts';
import { HostPathAllowList } from '../../agent/executors/docker/host-path-allow.ts';
import { authFetch } from '../harness/credentials.ts';

const why = await dockerUnavailable();
if (why && process.env.CI) throw new Error(`CI must run the Docker tests: ${why}`);
if (why) console.warn(`skipping Docker executor tests: ${why}`);
// crun, a second OCI runtime (CI registers it with the daemon; see .ci/run).
const noCrun = why ? undefined : await dockerRuntimeMissing('crun');
if (noCrun && process.env.CI) throw new Error(`CI must run the crun tests: ${noCrun}`);
if (noCrun) console.warn(`skipping the crun runtime tests: ${noCrun}`);

/**
 * This run's framework id and task ids: containers are found and removed by them, so a run
 * touches no container of another run, another cluster or another program (and its
 * container names, made from task ids, never collide with theirs).
 */
const RUN = randomBytes(4).toString('hex');
const FRAMEWORK = `fw-docker-${RUN}`;
const T = (name: string): string => `${name}-${RUN}`;

let workDir: string;
/** Where the volumes tests mount come from: the one directory the executors allow (never inside the work dir). */
let volumesDir: string;
let statuses: TaskStatusChange[];
let executors: DockerExecutor[] = [];

function executor(agentId = 'agent-docker-test', cpuQuota = false, runtime?: string): DockerExecutor {
  // A log stream whose end went unseen would hold each status back this long: past every wait below.
  const logDrainMs = 120_000;
  const hostPaths = HostPathAllowList.compile([volumesDir], { dockerSocket: '/var/run/docker.sock', ownDirs: [workDir] });
  const e = new DockerExecutor({ workDir, hostname: 'docker-host', agentId: () => agentId, gpuPool: new GpuPool([]), defaultKillGraceMs: 1000, cpuQuota, logDrainMs, hostPaths, ...(runtime ? { runtime } : {}), onStatus: (s) => statuses.push(s) });
  executors.push(e);
  return e;
}

function task(id: string, command: string, opts: { resources?: string; network?: 'host' | 'bridge'; mappings?: { hostPort: number; containerPort: number }[]; volumes?: { hostPath: string; containerPath: string; readOnly: boolean }[]; image?: string; pull?: 'never' | 'if-not-present' | 'always' } = {}): DockerTaskInfo {
  const t: TaskInfo = {
    taskId: id,
    frameworkId: FRAMEWORK,
    name: id,
    resources: opts.resources ?? 'cpus:0.5;mem:64',
    command: { shell: true, value: command, arguments: [], environment: [{ name: 'GREETING', value: 'hello' }] },
    killGraceMs: 1000,
    labels: [],
    container: {
      type: 'docker',
      docker: { image: opts.image ?? TEST_IMAGE, network: opts.network ?? 'host', portMappings: (opts.mappings ?? []).map((m) => ({ ...m, protocol: 'tcp' as const })), pullPolicy: opts.pull ?? 'never' },
      volumes: opts.volumes ?? [],
    },
  };
  return t as DockerTaskInfo;
}

/** Stops the executors, removes their containers and the work dir. */
async function cleanUp(): Promise<void> {
  for (const e of executors) await e.shutdown({ killTasks: true, timeoutMs: 5000 });
  executors = [];
  const docker = new Docker();
  for (const c of await docker.listContainers({ all: true, filters: { label: [`cairn.framework-id=${FRAMEWORK}`] } })) {
    await docker.getContainer(c.Id).remove({ force: true }).catch(() => undefined);
  }
  if (workDir) rmSync(workDir, { recursive: true, force: true });
  if (volumesDir) rmSync(volumesDir, { recursive: true, force: true });
}

const final = (id: string) => statuses.filter((s) => s.taskId === id).at(-1);

describe.skipIf(!!why)('Docker executor', () => {
  beforeAll(async () => {
    await ensureTestImage();
    workDir = tempDir('cairn-docker-');
    volumesDir = tempDir('cairn-docker-volumes-');
  });
  afterAll(cleanUp);

  it('runs a container with its env and ports, writes to a mounted volume, and logs into the sandbox', async () => {
    statuses = [];
    const e = executor();
    const vol = join(volumesDir, 'vol');
    mkdirSync(vol);
    const port = await freePortRun(2);
    e.launch(task(T('c-env'), 'echo "$GREETING port=$PORT ports=$PORTS task=$CAIRN_TASK_ID sandbox=$MESOS_SANDBOX"; echo written > /data/out.txt; echo to-stderr >&2', {
      resources: `cpus:0.5;mem:64;ports:[${port}-${port + 1}]`,
      network: 'bridge',
      mappings: [{ hostPort: 0, containerPort: 8080 }],
      volumes: [{ hostPath: vol, containerPath: '/data', readOnly: false }],
    }));
    await waitFor('finished', () => final(T('c-env'))?.state === 'TASK_FINISHED', 30_000);
    expect(statuses.filter((s) => s.taskId === T('c-env')).map((s) => s.state)).toEqual(['TASK_RUNNING', 'TASK_FINISHED']);
    expect(readFileSync(join(vol, 'out.txt'), 'utf8')).toBe('written\n');
    const out = await e.readLog(T('c-env'), 'stdout', 0, 1 << 20);
    expect(out.data).toBe(`hello port=${port} ports=${port},${port + 1} task=${T('c-env')} sandbox=/mnt/mesos/sandbox\n`);
    expect((await e.readLog(T('c-env'), 'stderr', 0, 1 << 20)).data).toBe('to-stderr\n');
  });

  it('binds the mapped host port and applies the resource limits', async () => {
    statuses = [];
    const e = executor('agent-docker-test', true);
    const port = await freePort();
    e.launch(task(T('c-limits'), 'sleep 30', { resources: `cpus:0.25;mem:48;ports:[${port}-${port}]`, network: 'bridge', mappings: [{ hostPort: port, containerPort: 80 }] }));
    await waitFor('running', () => final(T('c-limits'))?.state === 'TASK_RUNNING', 30_000);
    const c = (await new Docker().listContainers({ filters: { label: [`cairn.task-id=${T('c-limits')}`] } }))[0];
    const info = await new Docker().getContainer(c.Id).inspect();
    expect(info.HostConfig.Memory).toBe(48 * 1024 * 1024);
    expect(info.HostConfig.CpuQuota).toBe(25_000);
    expect(info.HostConfig.CpuShares).toBe(256);
    expect(info.HostConfig.PortBindings).toEqual({ '80/tcp': [{ HostIp: '', HostPort: String(port) }] });
    expect(info.Config.Labels['cairn.framework-id']).toBe(FRAMEWORK);
    expect(e.kill(T('c-limits'), 1000)).toBe('killing');
    await waitFor('killed', () => final(T('c-limits'))?.state === 'TASK_KILLED', 30_000);
  });

  it('reports a container that allocates past its memory limit as TASK_FAILED with the memory reason', async () => {
    statuses = [];
    const e = executor();
    e.launch(task(T('c-oom'), 'dd if=/dev/zero of=/dev/null bs=64M count=1', { resources: 'cpus:0.5;mem:16' }));
    await waitFor('failed', () => final(T('c-oom')) && final(T('c-oom'))!.state !== 'TASK_RUNNING', 30_000);
    expect(final(T('c-oom'))).toMatchObject({ state: 'TASK_FAILED', reason: 'REASON_CONTAINER_LIMITATION_MEMORY' });
    expect(final(T('c-oom'))!.message).toMatch(/memory limit/);
  });

  it('replaces a container an earlier attempt left under the task\'s name', async () => {
    statuses = [];
    const e = executor();
    // As an earlier attempt of this agent leaves it: with this work dir's instance.
    const stale = await new Docker().createContainer({ name: DockerExecutor.containerName(T('c-stale')), Image: TEST_IMAGE, Cmd: ['true'], Labels: { 'cairn.framework-id': FRAMEWORK, 'cairn.task-id': T('c-stale'), 'cairn.agent-id': 'agent-docker-test', 'cairn.agent-instance': workDirInstance(workDir) } });
    e.launch(task(T('c-stale'), 'echo fresh'));
    await waitFor('finished', () => final(T('c-stale'))?.state === 'TASK_FINISHED', 30_000);
    expect((await e.readLog(T('c-stale'), 'stdout', 0, 1 << 20)).data).toBe('fresh\n');
    await expect(stale.inspect()).rejects.toMatchObject({ statusCode: 404 });
  });

  it('fails clearly when the image cannot be had', async () => {
    statuses = [];
    const e = executor();
    e.launch(task(T('c-noimage'), 'true', { image: 'cairn-test/missing:1', pull: 'never' }));
    await waitFor('failed', () => final(T('c-noimage'))?.state === 'TASK_FAILED', 30_000);
    expect(final(T('c-noimage'))!.message).toMatch(/cairn-test\/missing:1 is not present and the pull policy is never/);
    e.launch(task(T('c-nopull'), 'true', { image: 'cairn-test/missing:2', pull: 'if-not-present' }));
    await waitFor('failed', () => final(T('c-nopull'))?.state === 'TASK_FAILED', 60_000);
    expect(final(T('c-nopull'))!.message).toMatch(/cannot pull image cairn-test\/missing:2/);
  });

  it('finds its running containers again after a restart, and reports one that ended meanwhile with its exit code', async () => {
    statuses = [];
    const first = executor('agent-recover');
    first.launch(task(T('c-keep'), 'i=0; while true; do echo tick $i; i=$((i+1)); sleep 0.2; done'));
    first.launch(task(T('c-exit'), 'sleep 1; exit 7'));
    await waitFor('both running', () => final(T('c-keep'))?.state === 'TASK_RUNNING' && final(T('c-exit'))?.state === 'TASK_RUNNING', 30_000);
    // The agent goes away without stopping its containers.
    await first.shutdown({ killTasks: false });
    statuses = [];
    await new Promise((r) => setTimeout(r, 1500));

    const second = executor('agent-recover');
    const running = await second.recover();
    expect(running.map((t) => t.taskId)).toEqual([T('c-keep')]);
    await waitFor('exit reported', () => final(T('c-exit'))?.state === 'TASK_FAILED', 15_000);
    expect(final(T('c-exit'))).toMatchObject({ hasExitCode: true, exitCode: 7 });
    const before = (await second.readLog(T('c-keep'), 'stdout', 0, 1 << 20)).data.length;
    await waitFor('log grows', async () => (await second.readLog(T('c-keep'), 'stdout', 0, 1 << 20)).data.length > before + 20, 10_000);
    second.kill(T('c-keep'), 1000);
    await waitFor('killed', () => final(T('c-keep'))?.state === 'TASK_KILLED', 30_000);
  });
});

describe.skipIf(!!why || !!noCrun)('Docker executor under the crun runtime (--docker-runtime crun)', () => {
  beforeAll(async () => {
    await ensureTestImage();
    workDir = tempDir('cairn-crun-');
    volumesDir = tempDir('cairn-crun-volumes-');
  });
  afterAll(cleanUp);

  it('starts the container with crun: its env, its limits, a clean kill', async () => {
    statuses = [];
    const e = executor('agent-crun-test', false, 'crun');
    e.launch(task(T('crun-env'), 'echo "$GREETING from $CAIRN_TASK_ID"; sleep 30', { resources: 'cpus:0.25;mem:48' }));
    await waitFor('running', () => final(T('crun-env'))?.state === 'TASK_RUNNING', 30_000);
    const c = (await new Docker().listContainers({ filters: { label: [`cairn.task-id=${T('crun-env')}`] } }))[0];
    const info = await new Docker().getContainer(c.Id).inspect();
    expect(info.HostConfig.Runtime).toBe('crun');
    expect(info.HostConfig.Memory).toBe(48 * 1024 * 1024);
    await waitFor('logged', async () => (await e.readLog(T('crun-env'), 'stdout', 0, 1 << 20)).data === `hello from ${T('crun-env')}\n`, 10_000);
    expect(e.kill(T('crun-env'), 1000)).toBe('killing');
    await waitFor('killed', () => final(T('crun-env'))?.state === 'TASK_KILLED', 30_000);
  });

  it('reports an OOM kill under crun as TASK_FAILED with the memory reason', async () => {
    statuses = [];
    const e = executor('agent-crun-test', false, 'crun');
    e.launch(task(T('crun-oom'), 'dd if=/dev/zero of=/dev/null bs=64M count=1', { resources: 'cpus:0.5;mem:16' }));
    await waitFor('failed', () => final(T('crun-oom')) && final(T('crun-oom'))!.state !== 'TASK_RUNNING', 30_000);
    expect(final(T('crun-oom'))).toMatchObject({ state: 'TASK_FAILED', reason: 'REASON_CONTAINER_LIMITATION_MEMORY' });
  });

  it('an agent names its runtime in /health, and refuses to start with one the daemon lacks, naming the flag', async () => {
    const dir = tempDir('cairn-crun-agent-');
    try {
      await expect(startAgent({ masterUrl: 'http://127.0.0.1:1', workDir: dir, httpPort: 0, logger: silentLogger(), dockerRuntime: 'no-such-runtime' }))
        .rejects.toMatchObject({ code: 'CAIRN_BAD_FLAG', field: 'dockerRuntime', message: expect.stringMatching(/no runtime 'no-such-runtime' \(it has: .*crun/) });
      const agent = await startAgent({ masterUrl: 'http://127.0.0.1:1', workDir: dir, httpPort: 0, logger: silentLogger(), dockerRuntime: 'crun' });
      try {
        const health = (await (await authFetch(`${agent.httpUrl}/health`)).json()) as { isolation: { containers: { enabled: boolean; runtime: string } } };
        expect(health.isolation.containers).toMatchObject({ enabled: true, runtime: 'crun' });
      } finally {
        await agent.stop({ killTasks: true });
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
