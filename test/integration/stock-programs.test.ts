// Stock programs, unchanged, as Cairn jobs: they find their peers through the system resolver
// (getaddrinfo), as every ML framework's transport does, and nothing of Cairn's is inside them
// (test/fixtures/stock). A master and two agents as processes, joined by gossip; the agents'
// task resolvers forward names outside the zone to a stand-in upstream on loopback.
//   a. torch.distributed DDP, 4 ranks, init_method env:// (from `cairn job submit` flags) and
//      tcp:// (from a Kubeflow PyTorchJob).
//   b. the same under `python3 -m torch.distributed.run`, its rendezvous at the master's name.
//   c. a TF_CONFIG program whose replicas reach each other's host:port with plain sockets.
//   d. a ZeroMQ scheduler/server/worker program following ps-lite's DMLC contract.
//   e. getaddrinfo and getent of a replica's full name, short name and name under its job, and
//      of a name outside the zone, in a process task and in a container task.
//   And the DDP program on `cairn up` itself, with a private data dir.
// Needs root (the task resolver listens on port 53 and mounts each task's resolv.conf);
// skipped with the reason where /usr/bin/python3 lacks torch or zmq, except in CI.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { dockerUnavailable } from '../harness/docker.ts';
import { Cleanup, freePort, freePortRange, getJson, runCairn, startCairn, waitFor, type CairnProcess } from '../harness/processes.ts';
import { startGossipCluster } from '../harness/gossip-cluster.ts';
import { jobsApi, pytorchJobYaml, replicaOf } from '../harness/jobs-api.ts';
import { ensureResolverImage, RESOLVER_IMAGE } from '../harness/resolver-image.ts';
import { StandInDns } from '../harness/stand-in-dns.ts';
import type { JobView } from '../../shared/jobs/model.ts';

const PYTHON = '/usr/bin/python3';
const STOCK = fileURLToPath(new URL('../fixtures/stock/', import.meta.url));
const stock = (file: string) => join(STOCK, file);
/** A name outside the zone, answered only by the stand-in upstream. */
const OUTSIDE = 'outside.example';
const OUTSIDE_IP = '192.0.2.7';

const missing = (() => {
  if (process.getuid?.() !== 0) return 'the task resolver needs root';
  const r = spawnSync(PYTHON, ['-c', 'import torch, zmq'], { encoding: 'utf8' });
  return r.status === 0 ? undefined : `${PYTHON} cannot import torch and zmq; apt-get install python3-torch python3-zmq`;
})();
const skip = missing !== undefined && process.env.CI !== 'true';
if (skip) console.log(`skipping the stock programs tests: ${missing}`);

const cleanup = new Cleanup();
let master: CairnProcess;
let upstream: StandInDns;

beforeAll(async () => {
  if (skip) return;
  upstream = await StandInDns.start({ [OUTSIDE]: OUTSIDE_IP });
  // The programs listen on their replicas' ports: a range free on this host, found now.
  const first = await freePortRange(200);
  const resources = [0, 1].map((i) => `cpus:4;mem:6144;disk:2000;ports:[${first + i * 100}-${first + i * 100 + 99}]`);
  ({ master } = await startGossipCluster(cleanup, 'stock', resources, ['--dns-resolvers', upstream.address]));
}, 120_000);

afterAll(async () => {
  await cleanup.run();
  upstream?.close();
}, 60_000);

const api = jobsApi(() => master.url);
const job = api.job;
const taskLog = api.taskLog;
const replica = replicaOf;

async function submit(doc: unknown, contentType = 'application/json'): Promise<string> {
  return (await api.submit(doc, contentType)).name;
}

async function finished(name: string, timeoutMs = 180_000): Promise<JobView> {
  return api.finished(name, timeoutMs);
}

/** A failed job's story, with its replicas' stderr, for the assertion message. */
async function describeJob(j: JobView): Promise<string> {
  const parts = await Promise.all(j.replicas.map(async (r) => `${r.group}-${r.index} ${r.state} exit ${r.exitCode} restarts ${r.restarts}: ${r.taskId ? (await taskLog(r.taskId, 'stderr').catch(() => '')).slice(-600) : ''}`));
  return `${j.phase}: ${j.message}\n${parts.join('\n')}`;
}

async function succeeded(name: string): Promise<JobView> {
  const j = await finished(name);
  expect(j.phase, await describeJob(j)).toBe('Succeeded');
  // Nobody needed a second try: a replica that could not resolve its peers fails and restarts.
  for (const r of j.replicas) expect(r.restarts, `${r.group}-${r.index}`).toBe(0);
  return j;
}

/** The stdout of every replica of a job, by `group-index`. */
async function logsOf(j: JobView): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const r of j.replicas) out[`${r.group}-${r.index}`] = r.taskId ? await taskLog(r.taskId) : '';
  return out;
}

describe.skipIf(skip)('stock programs find their peers through the system resolver', () => {
  it('a. torch.distributed DDP, 4 ranks: env:// from `cairn job submit` flags, tcp:// from a PyTorchJob', async () => {
    const cli = await runCairn(['job', 'submit', '--master', master.url, '--kind', 'pytorch', '--replicas', '4', '--cpus', '0.25', '--mem', '512', '--name', 'ddp-env', '--', PYTHON, stock('ddp.py')]);
    expect(cli.code, cli.stderr).toBe(0);
    await submit(pytorchJobYaml('ddp-tcp', [PYTHON, stock('ddp.py'), 'tcp'], { cpu: '250m', memory: '512Mi' }), 'application/yaml');
    for (const [name, method] of [['ddp-env', 'env'], ['ddp-tcp', 'tcp']] as const) {
      const logs = Object.values(await logsOf(await succeeded(name)));
      const lines = logs.join('').split('\n').filter((l) => l.startsWith('rank '));
      // rank 0..3 each reduced 0+1+2+3 = 6, having met at the master replica's DNS name.
      expect(lines.map((l) => Number(/^rank (\d)/.exec(l)![1])).sort()).toEqual([0, 1, 2, 3]);
      for (const l of lines) expect(l).toMatch(new RegExp(`of 4: all_reduce sum 6 via ${method} at ${name}-master-0\\.jobs\\.cairn$`));
    }
  }, 300_000);

  it('b. the same program under python3 -m torch.distributed.run, its rendezvous at the master replica', async () => {
    // Two nodes of two processes each: the launcher reads the job's MASTER_ADDR/MASTER_PORT
    // and RANK (the node's rank), as a Kubeflow user writes it. `--redirects 1 --tee 1`:
    // Debian's torch 1.13 under Python 3.11 reads its own defaults ('0') as no stream set and
    // crashes before it starts anything; teeing stdout works, each line prefixed [defaultN]:.
    // `--monitor_interval 0.5`: torch 1.13's launcher looks at its workers every 5 s by default,
    // so each node would sit up to 5 s after its processes were done.
    const script = `exec ${PYTHON} -m torch.distributed.run --nnodes 2 --nproc_per_node 2 --node_rank "$RANK" --master_addr "$MASTER_ADDR" --master_port "$MASTER_PORT" --redirects 1 --tee 1 --monitor_interval 0.5 ${stock('ddp.py')}`;
    await submit({
      name: 'torchrun',
      kind: 'pytorch',
      groups: ['master', 'worker'].map((g) => ({ name: g, replicas: 1, template: { command: script, cpus: 0.5, mem: 1024 } })),
    });
    const logs = Object.values(await logsOf(await succeeded('torchrun'))).join('');
    const lines = logs.split('\n').map((l) => l.replace(/^\[default\d\]:/, '')).filter((l) => l.startsWith('rank '));
    expect(lines.map((l) => Number(/^rank (\d)/.exec(l)![1])).sort()).toEqual([0, 1, 2, 3]);
    for (const l of lines) expect(l).toMatch(/of 4: all_reduce sum 6 via env at torchrun-master-0\.jobs\.cairn$/);
  }, 300_000);

  it('c. a TF_CONFIG program: every worker reaches every other replica at its host:port with a plain socket', async () => {
    const template = { command: [PYTHON, stock('tf_sockets.py')], cpus: 0.2, mem: 256 };
    await submit({ name: 'tfsock', kind: 'tensorflow', groups: [{ name: 'ps', replicas: 2, template }, { name: 'worker', replicas: 3, template }] });
    const logs = await logsOf(await finished('tfsock'));
    for (const i of [0, 1, 2]) {
      const others = ['ps:0', 'ps:1', 'worker:0', 'worker:1', 'worker:2'].filter((x) => x !== `worker:${i}`);
      expect(logs[`worker-${i}`]).toContain(`worker:${i} reached ${JSON.stringify(others).replace(/"/g, "'").replace(/,/g, ', ')}`);
    }
  }, 300_000);

  it('d. ZeroMQ scheduler, servers and workers on the DMLC contract', async () => {
    const template = { command: [PYTHON, stock('dmlc_zmq.py')], cpus: 0.2, mem: 256 };
    await submit({ name: 'dmlc', kind: 'pslite', groups: [{ name: 'scheduler', replicas: 1, template }, { name: 'server', replicas: 2, template }, { name: 'worker', replicas: 3, template }] });
    const logs = await logsOf(await succeeded('dmlc'));
    expect(logs['scheduler-0']).toMatch(/^scheduler: \['server@127\.0\.0\.1', 'server@127\.0\.0\.1', 'worker@127\.0\.0\.1', 'worker@127\.0\.0\.1', 'worker@127\.0\.0\.1'\]$/m);
    for (const k of ['server-0', 'server-1', 'worker-0', 'worker-1', 'worker-2']) expect(logs[k]).toMatch(/^welcome (server|worker)@/m);
  }, 300_000);

  it('on `cairn up` (a private data dir), the same DDP program from `cairn job submit` flags', async () => {
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    // Only what keeps this test apart from others: its ports (the tasks' too: the replicas
    // listen on theirs) and its own data dir (0700, as mktemp makes it).
    const taskPorts = await freePortRange(10);
    const up = cleanup.track(startCairn(['up', '--port', String(port), '--agent-port', '0', '--dns-port', '0', '--data-dir', cleanup.dir('cairn-stock-up-'), '--resources', `ports:[${taskPorts}-${taskPorts + 9}]`], url));
    await up.waitHealthy();
    await waitFor('the agent registered', async () => ((await getJson(`${url}/api/v1/state`)).agents?.[0]?.connected ? true : undefined), 30_000);
    const submitted = await runCairn(['job', 'submit', '--master', url, '--kind', 'pytorch', '--replicas', '2', '--cpus', '0.25', '--mem', '512', '--name', 'ddp-up', '--', PYTHON, stock('ddp.py')]);
    expect(submitted.code, submitted.stderr).toBe(0);
    const waited = await runCairn(['job', 'wait', 'ddp-up', '--master', url, '--timeout', '120s'], {}, 150_000);
    expect(waited.code, `${waited.stdout}${waited.stderr}`).toBe(0);
    const j = (await getJson(`${url}/api/v1/jobs/ddp-up`)) as JobView;
    expect(j.replicas.map((r) => r.restarts)).toEqual([0, 0]);
    expect(await up.kill('SIGINT')).toBe(0);
  }, 240_000);

  it('e. full, short and job names and a forwarded name resolve through getaddrinfo and getent, in a process task and in a container', async () => {
    const noDocker = await dockerUnavailable();
    if (noDocker && process.env.CI !== 'true') console.log(`the container half is skipped: ${noDocker}`);
    const withContainer = noDocker === undefined || process.env.CI === 'true';
    if (withContainer) await ensureResolverImage();
    // The master waits for a connection from each prober; the probers look it up first.
    const listen = `import os, socket\ns = socket.create_server(('', int(os.environ['PORT'])))\nfor _ in range(${withContainer ? 2 : 1}):\n    c, _ = s.accept(); c.recv(16); c.close()`;
    await submit({
      name: 'peers',
      kind: 'pytorch',
      groups: [
        { name: 'master', replicas: 1, template: { command: [PYTHON, '-c', listen], cpus: 0.1, mem: 128 } },
        { name: 'worker', replicas: 1, template: { command: `${PYTHON} ${stock('resolve_peer.py')} peers-master-0.jobs.cairn peers-master-0 peers-master-0.peers ${OUTSIDE} && ${PYTHON} -c "import os, socket; socket.create_connection((os.environ['MASTER_ADDR'], int(os.environ['MASTER_PORT']))).sendall(b'hi')"`, cpus: 0.1, mem: 128 } },
      ],
    });
    if (withContainer) {
      const running = await waitFor('peers master running', async () => {
        const j = await job('peers');
        const m = replica(j, 'master', 0);
        return m.state === 'Running' && m.ports.length > 0 ? m : undefined;
      }, 60_000);
      const probe = [
        'cat /etc/resolv.conf',
        ...['peers-master-0.jobs.cairn', 'peers-master-0', 'peers-master-0.peers', OUTSIDE].map((n) => `echo "$(getent ahostsv4 ${n} | head -1 | cut -d' ' -f1) ${n}"`),
        `echo hi | nc "$(getent ahostsv4 peers-master-0 | head -1 | cut -d' ' -f1)" ${running.ports[0]}`,
      ].join('; ');
      await submit({ name: 'cpeers', kind: 'pytorch', groups: [{ name: 'master', replicas: 1, template: { image: RESOLVER_IMAGE, command: probe, cpus: 0.1, mem: 64 } }] });
    }
    const peers = await succeeded('peers');
    const found = JSON.parse((await logsOf(peers))['worker-0'].trim());
    expect(found).toEqual({
      'peers-master-0.jobs.cairn': ['127.0.0.1'],
      'getent peers-master-0.jobs.cairn': ['127.0.0.1'],
      'peers-master-0': ['127.0.0.1'],
      'getent peers-master-0': ['127.0.0.1'],
      'peers-master-0.peers': ['127.0.0.1'],
      'getent peers-master-0.peers': ['127.0.0.1'],
      [OUTSIDE]: [OUTSIDE_IP],
      [`getent ${OUTSIDE}`]: [OUTSIDE_IP],
    });
    expect(upstream.asked).toContain(`A ${OUTSIDE}`);
    // The zone's names were answered by the masters, never asked of the upstream.
    expect(upstream.asked.filter((q) => q.includes('peers-master-0.jobs.cairn') && !q.includes(OUTSIDE))).toEqual([]);
    if (withContainer) {
      const c = await succeeded('cpeers');
      const out = (await logsOf(c))['master-0'];
      expect(out).toMatch(/^nameserver 169\.254\.53\.\d+$/m);
      expect(out).toMatch(/^search cpeers-master-0\.jobs\.cairn|^search jobs\.cairn cairn/m);
      for (const n of ['peers-master-0.jobs.cairn', 'peers-master-0', 'peers-master-0.peers']) expect(out).toContain(`127.0.0.1 ${n}\n`);
      expect(out).toContain(`${OUTSIDE_IP} ${OUTSIDE}\n`);
    }
  }, 300_000);
});
