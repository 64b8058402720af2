// Issue 22 finding 1, as the attacker ran it: an image carrying a setuid-root program, and a
// volume mounting the host's root to read a root-only file. A master and a root agent as
// real processes, the agent allowing one host directory (--host-path-allow). The `/` mount is
// refused at submit, naming the field, through the scheduler API, Marathon's /v2/apps, a job
// and a TFJob's hostPath; a host path the master cannot judge but the agent does not allow
// fails the task at launch naming the path and the flag; the allowed directory mounts, and
// the setuid program there cannot become root (no-new-privileges, no capabilities), so a
// 0600 root file in it stays unread. A control run straight through Docker, with its
// defaults, shows the same program does become root: the refusal is Cairn's.

import Docker from 'dockerode';
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { Cleanup, startAgentProcess, startMasterProcess, waitFor } from '../harness/processes.ts';
import { autoAck, RawScheduler, taskInfo } from '../harness/raw-scheduler.ts';
import { buildSetuidImage, dockerUnavailable, setuidImageUnbuildable } from '../harness/docker.ts';
import { parseUidRange } from '../../agent/task-uids.ts';
import { AGENT_DEFAULTS } from '../../shared/agent-defaults.ts';
import { marathon } from '../harness/marathon.ts';
import { authFetch } from '../harness/credentials.ts';

const why = (await dockerUnavailable()) ?? setuidImageUnbuildable() ?? (process.getuid?.() === 0 ? undefined : 'the agent must run as root to run tasks as another user');
if (why && process.env.CI) throw new Error(`CI must run the container escape tests: ${why}`);
if (why) console.warn(`skipping the container escape tests: ${why}`);

const IMAGE = `cairn-test/setuid:${randomBytes(4).toString('hex')}`;
const SECRET = 'root-only-secret';
const cleanup = new Cleanup();
const schedulers: RawScheduler[] = [];
let frameworkId: string | undefined;

afterAll(async () => {
  for (const s of schedulers.splice(0)) s.close();
  await cleanup.run();
  if (why) return;
  const docker = new Docker();
  if (frameworkId) {
    for (const c of await docker.listContainers({ all: true, filters: { label: [`cairn.framework-id=${frameworkId}`] } })) {
      await docker.getContainer(c.Id).remove({ force: true }).catch(() => undefined);
    }
  }
  await docker.getImage(IMAGE).remove({ force: true }).catch(() => undefined);
});

/** Runs `cmd` in the image straight through Docker, with its defaults but a non-root user. */
async function dockerDefaultsRun(docker: Docker, hostDir: string, cmd: string): Promise<string> {
  const c = await docker.createContainer({ Image: IMAGE, User: '65534:65534', Entrypoint: ['/bin/sh', '-c'], Cmd: [cmd], HostConfig: { Binds: [`${hostDir}:/h:ro`], NetworkMode: 'none' } });
  try {
    await c.start();
    await c.wait();
    const logs = (await c.logs({ stdout: true, stderr: true })) as unknown as Buffer;
    // Strip the 8-byte frame headers of the multiplexed stream.
    let out = '';
    for (let i = 0; i + 8 <= logs.length; ) {
      const len = logs.readUInt32BE(i + 4);
      out += logs.subarray(i + 8, i + 8 + len).toString();
      i += 8 + len;
    }
    return out;
  } finally {
    await c.remove({ force: true });
  }
}

function updatesOf(s: RawScheduler, taskId: string): any[] {
  return s.events.filter((e) => e.type === 'UPDATE' && e.update.status.task_id.value === taskId).map((e) => e.update.status);
}

describe.skipIf(!!why)('a setuid-root image and a host mount', () => {
  it('is refused at submit through every API, outside the allow-list at launch, and cannot gain root where it mounts', async () => {
    buildSetuidImage(IMAGE);
    const allowed = cleanup.dir('cairn-allowed-');
    chmodSync(allowed, 0o755);
    writeFileSync(join(allowed, 'secret'), `${SECRET}\n`, { mode: 0o600 });
    chmodSync(join(allowed, 'secret'), 0o600);
    const docker = new Docker();

    // Control: with Docker's defaults the program becomes root and reads the file.
    expect(await dockerDefaultsRun(docker, allowed, '/suid/escalate "id -u; cat /h/secret"')).toBe(`0\n${SECRET}\n`);

    const master = await startMasterProcess(cleanup);
    const outside = join(cleanup.dir('cairn-not-allowed-'), 'data');
    mkdirSync(outside);
    await startAgentProcess(cleanup, master.url, { resources: 'cpus:2;mem:1024', extra: ['--host-path-allow', allowed] });

    // The scheduler API: a task with a `/` volume is refused on its own, as Mesos answers an
    // invalid task (TASK_ERROR, REASON_TASK_INVALID, naming the field); it is never recorded.
    const s = new RawScheduler(master.url);
    schedulers.push(s);
    expect((await s.subscribe({ user: '', name: 'escape', failover_timeout: 3600 })).status).toBe(200);
    frameworkId = s.frameworkId;
    autoAck(s);
    const offer = (await s.next((e) => e.type === 'OFFERS', 20_000)).offers.offers[0];
    const agentId = offer.agent_id.value as string;
    const boxed = (id: string, hostPath: string, cmd: string) =>
      taskInfo(id, agentId, { cpus: 0.1, mem: 32 }, cmd, { container: { type: 'DOCKER', docker: { image: IMAGE, network: 'HOST', pull_policy: 'never' }, volumes: [{ host_path: hostPath, container_path: '/h', mode: 'RO' }] } });
    const accept = (offerId: unknown, infos: unknown[]) => s.call({ type: 'ACCEPT', accept: { offer_ids: [offerId], operations: [{ type: 'LAUNCH', launch: { task_infos: infos } }] } });
    const bads = ['/', '/var/run/docker.sock', '/etc', '/srv/../'];
    const mark = s.events.length;
    const refused = await accept(offer.id, bads.map((bad, i) => boxed(`root-mount-${i}`, bad, 'cat /h/etc/shadow')));
    expect(refused.status, refused.body).toBe(202);
    for (const [i, bad] of bads.entries()) {
      const e = await s.next((ev) => ev.type === 'UPDATE' && ev.update.status.task_id.value === `root-mount-${i}`, 20_000);
      expect(e.update.status, bad).toMatchObject({ state: 'TASK_ERROR', reason: 'REASON_TASK_INVALID', source: 'SOURCE_MASTER' });
      expect(e.update.status.message, bad).toMatch(new RegExp(`task_infos\\[${i}\\]\\.container\\.volumes\\[0\\]\\.host_path`));
    }
    // Nothing of a refused task was launched or recorded.
    const tasks = (await (await authFetch(`${master.url}/api/v1/tasks`)).json()) as { tasks?: unknown[] } | unknown[];
    expect(JSON.stringify(tasks)).not.toContain('root-mount');
    for (const [i] of bads.entries()) expect(updatesOf(s, `root-mount-${i}`).map((u) => u.state)).toEqual(['TASK_ERROR']);

    // Marathon: 422 naming /container/volumes(0)/hostPath; no app made.
    const app = await marathon(master.url, 'POST', '/v2/apps', { id: '/escape', cmd: 'cat /h/etc/shadow', cpus: 0.1, mem: 32, container: { type: 'DOCKER', docker: { image: IMAGE }, volumes: [{ containerPath: '/h', hostPath: '/', mode: 'RO' }] } });
    expect(app.status).toBe(422);
    expect(JSON.stringify(app.body)).toContain('/container/volumes(0)/hostPath');
    expect((await marathon(master.url, 'GET', '/v2/apps/escape')).status).toBe(404);

    // A job, and a TFJob's hostPath volume: 400 naming the field; no job made.
    const job = await authFetch(`${master.url}/api/v1/jobs`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name: 'escape', groups: [{ name: 'worker', template: { command: 'cat /h/etc/shadow', image: IMAGE, cpus: 0.1, mem: 32, volumes: [{ containerPath: '/h', hostPath: '/', mode: 'RO' }] } }] }) });
    expect(job.status).toBe(400);
    expect(await job.text()).toMatch(/groups\[0\]\.template\.volumes\[0\]\.hostPath/);
    const tfjob = await authFetch(`${master.url}/api/v1/jobs`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({
      apiVersion: 'kubeflow.org/v1', kind: 'TFJob', metadata: { name: 'escape-tf' },
      spec: { tfReplicaSpecs: { Worker: { replicas: 1, template: { spec: {
        containers: [{ name: 'tensorflow', image: IMAGE, command: ['cat', '/h/etc/shadow'], volumeMounts: [{ name: 'host', mountPath: '/h' }] }],
        volumes: [{ name: 'host', hostPath: { path: '/' } }],
      } } } } },
    }) });
    expect(tfjob.status).toBe(400);
    expect(await tfjob.text()).toMatch(/volumes\[0\]\.hostPath|volumeMounts\[0\]/);
    for (const name of ['escape', 'escape-tf']) expect((await authFetch(`${master.url}/api/v1/jobs/${name}`)).status).toBe(404);

    // A path the master cannot judge, outside the agent's allow-list: TASK_FAILED at launch,
    // REASON_TASK_INVALID, naming the path and the flag. Beside it, the allowed directory
    // mounts; the setuid program cannot become root there, and the root-only file stays
    // unread (the task runs as its principal's own non-root uid, from the agent's range).
    const inside = 'id -u; /suid/escalate "id -u; cat /h/secret"; echo "escalate=$?"; cat /h/secret; echo "cat=$?"; echo "after=$(id -u)"; ls /h';
    const again = (await s.next((e) => e.type === 'OFFERS' && e.offers.offers.some((o: any) => o.agent_id.value === agentId), 30_000, mark)).offers.offers.find((o: any) => o.agent_id.value === agentId);
    const launched = await accept(again.id, [boxed('outside', outside, 'true'), boxed('inside', allowed, inside)]);
    expect(launched.status, launched.body).toBe(202);
    await waitFor('outside failed', () => updatesOf(s, 'outside').some((u) => u.state === 'TASK_FAILED'), 30_000);
    const failed = updatesOf(s, 'outside').at(-1);
    expect(failed.reason).toBe('REASON_TASK_INVALID');
    expect(failed.message).toContain(outside);
    expect(failed.message).toContain('--host-path-allow');

    await waitFor('inside ended', () => updatesOf(s, 'inside').some((u) => ['TASK_FINISHED', 'TASK_FAILED'].includes(u.state)), 30_000);
    const out = (await (await authFetch(`${master.url}/api/v1/tasks/inside/logs?stream=stdout`)).json()) as { data: string };
    const err = (await (await authFetch(`${master.url}/api/v1/tasks/inside/logs?stream=stderr`)).json()) as { data: string };
    const uid = Number(out.data.split('\n')[0]);
    const range = parseUidRange(AGENT_DEFAULTS.taskUidRange)!;
    expect(uid >= range.first && uid <= range.last, `uid ${uid} from the range`).toBe(true);
    expect(out.data).toBe(`${uid}\nescalate=1\ncat=1\nafter=${uid}\nsecret\n`);
    expect(err.data).toMatch(/escalate: setuid\(0\): Operation not permitted/);
    expect(out.data + err.data).not.toContain(SECRET);
    expect(updatesOf(s, 'inside').at(-1).state).toBe('TASK_FINISHED');
  });
});
