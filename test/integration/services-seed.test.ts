// The project's seed scenario, end to end: the three Marathon app files of the ps-lite
// word2vec deployment exactly as the founding documents print them (../shared/seeds/
// 000-pslite-word2vec/, copied byte for byte to examples/services/pslite-word2vec/), changed
// only in `image` and `forcePullImage`, POSTed to /v2/apps of a master started with
// `--dns-domain mesos`; two agents run the six containers (HOST network, `cmd: null` so the
// image's own command runs, the workers' read-only /mnt/dcos). Each task records what it was
// given (test/harness/recorder-image.ts): Marathon's variables, its ports and host, its data
// file, and what `sw2vscheduler.marathon.mesos` resolves to through the system resolver
// (glibc's getaddrinfo, `getent ahostsv4`) of its container — whose one nameserver is its
// agent's task resolver (agent/task-dns/), which sends the zone to the masters' DNS on
// whatever port it serves. Each agent advertises an address of its own on loopback, so that
// "the scheduler's host" is one address among several.
//
// Outside CI the file is skipped, with the reason printed, when Docker does not answer or the
// test is not root (the task resolver listens on port 53); in CI it must run.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import Docker from 'dockerode';
import { Resolver } from 'node:dns/promises';
import { existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startAgent, type AgentHandle } from '../../agent/agent.ts';
import { LABEL_AGENT_INSTANCE } from '../../agent/executors/docker/container-config.ts';
import { workDirInstance } from '../../agent/executors/docker/ownership.ts';
import { silentLogger } from '../../shared/logger.ts';
import { agentAuthHeaders, authFetch, TEST_AGENT } from '../harness/credentials.ts';
import { autoAck, RawScheduler, taskInfo } from '../harness/raw-scheduler.ts';
import { dockerUnavailable } from '../harness/docker.ts';
import { Cleanup, freePort, startCairn, waitFor, type CairnProcess } from '../harness/processes.ts';
import { ensureRecorderImage, parseTaskRecord, RECORDER, type TaskRecord } from '../harness/recorder-image.ts';

const SEED_DIR = fileURLToPath(new URL('../../examples/services/pslite-word2vec/', import.meta.url));
const SEED_FILES = ['sw2vscheduler.json', 'sw2vserver.json', 'sw2vworker.json'];
/** The founding documents' own copies: the example's files must be these, byte for byte. */
const PRINTED_DIR = fileURLToPath(new URL('../../../shared/seeds/000-pslite-word2vec/', import.meta.url));

// Addresses of this test's own on loopback (all of 127/8 is local on Linux): the master's
// (its API, gossip and DNS) and one per agent.
const NET = `127.53.${1 + Math.floor(Math.random() * 250)}`;
const MASTER_IP = `${NET}.1`;
const AGENT_IPS = [`${NET}.11`, `${NET}.12`];
const TASK_DNS = /^169\.254\.53\.\d+$/;

const why = (await dockerUnavailable()) ?? (process.getuid?.() === 0 ? undefined : 'the task resolver needs root (it listens on port 53)');
if (why && process.env.CI) throw new Error(`CI must run the seed scenario: ${why}`);
if (why) console.warn(`skipping the services seed scenario: ${why}`);

/** A seed app file as its user wrote it. */
function seedApp(file: string): any {
  return JSON.parse(readFileSync(join(SEED_DIR, file), 'utf8'));
}

/**
 * The one change made to a seed file to run it here (the README of the example shows the
 * same with jq): the image is a local one, and it is not pulled (no registry is reachable).
 */
function withLocalImage(app: any, image: string): any {
  const copy = structuredClone(app);
  copy.container.docker.image = image;
  copy.container.docker.forcePullImage = false;
  return copy;
}

/** Paths (a.b.c) where two JSON values differ. */
function differences(a: unknown, b: unknown, path = ''): string[] {
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return Object.is(a, b) ? [] : [path];
  const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
  return [...keys].flatMap((k) => differences((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k], path ? `${path}.${k}` : k));
}

interface MarathonTask {
  id: string;
  appId: string;
  host: string;
  ports: number[];
  servicePorts: number[];
  state: string;
}

it.skipIf(!existsSync(PRINTED_DIR))('keeps the seed files in the example byte for byte as printed', () => {
  for (const file of SEED_FILES) expect(readFileSync(join(SEED_DIR, file)).equals(readFileSync(join(PRINTED_DIR, file))), file).toBe(true);
});

describe.skipIf(!!why)('the services seed: ps-lite word2vec as three Marathon apps', () => {
  const cleanup = new Cleanup();
  const agents: AgentHandle[] = [];
  const agentDirs: string[] = [];
  let master: CairnProcess;
  let image: string;
  /** The masters' DNS (`ip:port`, a port from the OS) as gossip tells the agents. */
  let mastersDns: string;
  /** Agent address → the address its task resolver answers on. */
  const taskResolverOf = new Map<string, string>();
  /** The data set directory the worker file mounts read-only, and what this test made for it (removed after). */
  let dataDir: string;
  let madeForData: string | undefined;

  beforeAll(async () => {
    image = await ensureRecorderImage();
    const workerVolume = seedApp('sw2vworker.json').container.volumes[0];
    dataDir = workerVolume.hostPath;
    if (!existsSync(dataDir)) {
      // The first missing ancestor is what this test makes, and removes.
      let top = dataDir;
      while (!existsSync(join(top, '..'))) top = join(top, '..');
      madeForData = top;
      mkdirSync(dataDir, { recursive: true });
      writeFileSync(join(dataDir, 'text8'), 'anarchism originated as a term of abuse first used against early working class radicals\n');
    }

    const secretFile = join(cleanup.dir('cairn-seed-secret-'), 'secret');
    const secret = 'seed-scenario-secret-0123456789abcdef';
    writeFileSync(secretFile, `${secret}\n`, { mode: 0o600 });
    const port = await freePort();
    const gossipPort = await freePort();
    const url = `http://${MASTER_IP}:${port}`;
    master = cleanup.track(startCairn([
      'master', '--host', MASTER_IP, '--port', String(port), '--data-dir', cleanup.dir('cairn-seed-master-'),
      '--dns-domain', 'mesos', '--dns-port', '0', '--dns-resolvers', '',
      '--secret-file', secretFile, '--gossip-port', String(gossipPort),
    ], url));
    await master.waitHealthy(60_000);

    for (const [i, ip] of AGENT_IPS.entries()) {
      const workDir = cleanup.dir('cairn-seed-agent-');
      agentDirs.push(workDir);
      agents.push(await startAgent({
        masterUrl: url,
        workDir,
        httpPort: 0,
        // The host name is the address, as on many Mesos clusters: HOST is then reachable.
        ip,
        hostname: ip,
        credential: TEST_AGENT,
        // 6 cpus and 1840 MiB of tasks: more cpus than one agent has, so they spread over both.
        // The files' ports are service ports (no requirePorts): host ports come from the range.
        resources: `cpus:4;mem:4096;disk:2048;ports:[${31000 + 100 * i}-${31049 + 100 * i}]`,
        // Names outside the zone go nowhere: this test sends nothing off the machine.
        dnsResolvers: [],
        // The data set the worker file mounts.
        hostPathAllow: [dataDir],
        gossip: { port: 0, host: ip, secret, join: [`${MASTER_IP}:${gossipPort}`] },
        logger: silentLogger(),
      }));
      taskResolverOf.set(ip, readFileSync(join(workDir, 'task-dns', 'address'), 'utf8').trim());
    }
    expect([...taskResolverOf.values()].every((a) => TASK_DNS.test(a))).toBe(true);
    expect(new Set(taskResolverOf.values()).size).toBe(AGENT_IPS.length);
    await waitFor('both agents registered', async () => {
      const state = await (await authFetch(`${url}/api/v1/state`)).json() as { agents?: { hostname: string; active?: boolean }[] };
      return AGENT_IPS.every((ip) => state.agents?.some((a) => a.hostname === ip)) || undefined;
    }, 60_000, 200);
    // A task resolver sends the zone to the masters' DNS that gossip has told its agent of.
    for (const a of agents) {
      mastersDns = await waitFor(`the master's DNS in the gossip view of ${a.httpUrl}`, async () => {
        const view = await (await fetch(`${a.httpUrl}/api/v1/members`, { headers: agentAuthHeaders() })).json() as { members: { role: string; state: string; meta: Record<string, string> }[] };
        return view.members.find((m) => m.role === 'master' && m.state === 'alive' && m.meta.dns?.startsWith(`${MASTER_IP}:`))?.meta.dns;
      }, 60_000, 200);
    }
  }, 240_000);

  afterAll(async () => {
    for (const a of agents.splice(0)) await a.stop({ killTasks: true }).catch(() => undefined);
    // Whatever an agent left (a failed stop, a launch in flight) goes too: only these agents' containers.
    const docker = new Docker();
    for (const dir of agentDirs) {
      const mine = await docker.listContainers({ all: true, filters: { label: [`${LABEL_AGENT_INSTANCE}=${workDirInstance(dir)}`] } }).catch(() => []);
      for (const c of mine) await docker.getContainer(c.Id).remove({ force: true }).catch(() => undefined);
    }
    await cleanup.run();
    if (madeForData) rmSync(madeForData, { recursive: true, force: true });
  }, 120_000);

  it('changes nothing in the seed files but image and forcePullImage', () => {
    for (const file of SEED_FILES) {
      const app = seedApp(file);
      expect(differences(app, withLocalImage(app, image)).sort()).toEqual(['container.docker.forcePullImage', 'container.docker.image']);
    }
  });

  // Not the scenario itself: what it stands on, through the scheduler API alone. When this
  // passes and the scenario fails, the services framework is at fault, not the cluster.
  it('gives a container on these agents its agent\'s task resolver, which answers the cluster\'s names', async () => {
    const s = new RawScheduler(master.url);
    try {
      expect((await s.subscribe({ name: 'seed-probe', failover_timeout: 0 })).status).toBe(200);
      autoAck(s);
      const offer = (await s.next((e) => e.type === 'OFFERS', 30_000)).offers.offers[0];
      const probe = taskInfo('seed-probe', offer.agent_id.value, { cpus: 0.1, mem: 32 }, RECORDER, {
        container: { type: 'DOCKER', docker: { image, network: 'HOST', pull_policy: 'never' } },
      });
      probe.command = { ...probe.command, environment: { variables: [{ name: 'DMLC_PS_ROOT_URI', value: 'leader.mesos' }] } } as typeof probe.command;
      const accept = await s.call({ type: 'ACCEPT', accept: { offer_ids: [offer.id], operations: [{ type: 'LAUNCH', launch: { task_infos: [probe] } }] } });
      expect(accept.status, accept.body).toBe(202);
      await s.next((e) => e.type === 'UPDATE' && e.update.status.state === 'TASK_RUNNING', 120_000);
      const rec = await waitFor('the probe\'s record', async () => {
        const r = await authFetch(`${master.url}/api/v1/tasks/seed-probe/logs?stream=stdout`);
        return r.ok ? parseTaskRecord(((await r.json()) as { data: string }).data) : undefined;
      }, 120_000, 500);
      expect(rec.resolvers).toEqual([taskResolverOf.get(offer.hostname)]);
      expect(rec.resolved).toEqual({ name: 'leader.mesos', address: MASTER_IP });
      expect(await s.call({ type: 'TEARDOWN' })).toMatchObject({ status: 202 });
      await waitFor('the probe killed', async () => {
        const state = (await (await authFetch(`${master.url}/api/v1/state`)).json()) as { tasks: { id: string; state: string }[] };
        return state.tasks.find((t) => t.id === 'seed-probe')?.state === 'TASK_KILLED' || undefined;
      }, 60_000, 200);
    } finally {
      s.close();
    }
  }, 240_000);

  it('runs all six tasks as printed; each sees its ports, HOST and Marathon\'s variables; every one resolves sw2vscheduler.marathon.mesos to the scheduler\'s host', async () => {
    const apps = SEED_FILES.map(seedApp);
    for (const app of apps) {
      const r = await authFetch(`${master.url}/v2/apps`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(withLocalImage(app, image)) });
      const body = await r.text();
      expect(r.status, `POST /v2/apps ${app.id}: ${body}`).toBe(201);
      const created = JSON.parse(body);
      expect(created).toMatchObject({ id: app.id, instances: app.instances });
      expect(created.cmd ?? null, app.id).toBeNull();
      // Every field of the seed is honoured: none comes back listed as ignored.
      expect(r.headers.get('cairn-ignored-fields'), `${app.id}: fields ignored`).toBeNull();
    }

    // Six tasks RUNNING: 1 scheduler, 1 server, 4 workers.
    const tasksOf = new Map<string, MarathonTask[]>();
    await waitFor('all six tasks running', async () => {
      for (const app of apps) {
        const r = await authFetch(`${master.url}/v2/apps${app.id}/tasks`);
        if (!r.ok) return undefined;
        const running = ((await r.json()) as { tasks: MarathonTask[] }).tasks.filter((t) => t.state === 'TASK_RUNNING');
        tasksOf.set(app.id, running);
      }
      return apps.every((app) => tasksOf.get(app.id)!.length === app.instances) || undefined;
    }, 180_000, 500);
    const all = apps.flatMap((app) => tasksOf.get(app.id)!);
    expect(all).toHaveLength(6);
    expect(new Set(all.map((t) => t.id)).size).toBe(6);

    // What each task recorded (its stdout, read through the master).
    const records = new Map<string, TaskRecord>();
    await waitFor('every task\'s record', async () => {
      for (const t of all) {
        if (records.has(t.id)) continue;
        const r = await authFetch(`${master.url}/api/v1/tasks/${encodeURIComponent(t.id)}/logs?stream=stdout`);
        if (!r.ok) continue;
        const rec = parseTaskRecord(((await r.json()) as { data: string }).data);
        if (rec) records.set(t.id, rec);
      }
      return records.size === all.length || undefined;
    }, 180_000, 500);

    const versions = new Map<string, string>();
    for (const app of apps) versions.set(app.id, ((await (await authFetch(`${master.url}/v2/apps${app.id}`)).json()) as { app: { version: string } }).app.version);
    const [scheduler] = tasksOf.get('/sw2vscheduler')!;
    const schedulerHost = records.get(scheduler!.id)!.env.HOST;
    expect(AGENT_IPS).toContain(schedulerHost);
    const text8 = join(dataDir, 'text8');
    const text8Bytes = existsSync(text8) ? statSync(text8).size : null;

    for (const app of apps) {
      const declared: number = app.portDefinitions[0].port;
      for (const t of tasksOf.get(app.id)!) {
        const rec = records.get(t.id)!;
        const env = rec.env;
        const where = `${app.id} task ${t.id}`;
        // The task's own identity and where it runs.
        expect(env.MESOS_TASK_ID, where).toBe(t.id);
        expect(env.HOST, where).toBe(t.host);
        expect(AGENT_IPS, where).toContain(env.HOST);
        // The image's own command ran (cmd: null), with no arguments.
        expect(rec.args, where).toBe('');
        // Its ports: the file's port is a service port (no requirePorts), the host port is the
        // offer's: PORT = PORT0 = PORTS = PORT_<the file's port>, as Marathon sets them.
        expect(t.servicePorts, where).toEqual([declared]);
        expect(t.ports, where).toHaveLength(1);
        const port = String(t.ports[0]);
        expect(env.PORT, where).toBe(port);
        expect(env.PORT0, where).toBe(port);
        expect(env.PORTS, where).toBe(port);
        expect(env[`PORT_${declared}`], where).toBe(port);
        // Marathon's variables.
        expect(env.MARATHON_APP_ID, where).toBe(app.id);
        expect(env.MARATHON_APP_VERSION, where).toBe(versions.get(app.id));
        expect(env.MARATHON_APP_DOCKER_IMAGE, where).toBe(image);
        expect(Number(env.MARATHON_APP_RESOURCE_CPUS), where).toBe(app.cpus);
        expect(Number(env.MARATHON_APP_RESOURCE_MEM), where).toBe(app.mem);
        expect(Number(env.MARATHON_APP_RESOURCE_DISK), where).toBe(app.disk);
        expect(Number(env.MARATHON_APP_RESOURCE_GPUS), where).toBe(0);
        expect(env.MARATHON_APP_LABELS, where).toBe('');
        // The file's own environment, unchanged (DMLC_PS_ROOT_PORT 18001 among it).
        for (const [k, v] of Object.entries(app.env as Record<string, string>)) expect(env[k], where).toBe(v);
        // Its one nameserver is its agent's task resolver, and through getaddrinfo the
        // scheduler's name is the scheduler's host.
        expect(rec.resolvers, where).toEqual([taskResolverOf.get(env.HOST!)]);
        expect(rec.unresolved, where).toBeUndefined();
        expect(rec.resolved, where).toEqual({ name: 'sw2vscheduler.marathon.mesos', address: schedulerHost });
        // The workers read the data set through the read-only volume; the server's file names
        // SW2V_DATA but mounts no volume, so it has no such file; the scheduler names none.
        const volume = app.container.volumes[0]?.containerPath as string | undefined;
        if (volume) expect(rec.mounts[volume]?.split(','), where).toContain('ro');
        else expect(rec.mounts['/mnt/dcos'], where).toBeUndefined();
        if (app.env.SW2V_DATA) expect(rec.data, where).toEqual({ path: app.env.SW2V_DATA, bytes: volume ? text8Bytes : null });
        else expect(rec.data, where).toBeUndefined();
      }
    }
    expect(tasksOf.get('/sw2vworker')).toHaveLength(4);

    // 6 cpus of tasks do not fit one agent's 4: some run on the other host, and find the scheduler across hosts.
    expect(all.filter((t) => records.get(t.id)!.env.HOST !== schedulerHost).length).toBeGreaterThan(0);

    // What any client on the cluster sees: the masters' DNS answers the name the same way.
    const resolver = new Resolver();
    resolver.setServers([mastersDns]);
    expect(await resolver.resolve4('sw2vscheduler.marathon.mesos')).toEqual([schedulerHost]);
  }, 420_000);
});
