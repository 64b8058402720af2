// What TLS costs, without and with it side by side in one run (certificates made with
// openssl in a temp dir, removed after):
// 1. Three masters in this process replicating over ws:// or wss:// (SQLite underneath, as
//    in bench/raft.ts): one client's commit latency (p50/p99), committed commands/s with 64
//    concurrent clients, and one client's writes through the REST API (HTTP or HTTPS,
//    keep-alive).
// 2. Task launches/s through the scheduler API: one master, 20 simulated agents on
//    WebSockets, one framework (the SDK's SchedulerClient) launching 2,000 tasks from its
//    offers; the time from subscribing until every task is RUNNING. Median of 3 runs per
//    mode, the modes alternating.
// Both modes present the same certificate and verify against the same CA; mutual TLS
// differs only in the handshake, which keep-alive connections pay once.

import http from 'node:http';
import https from 'node:https';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { MasterAuth } from '../master/auth/master-auth.ts';
import { startMaster, type MasterHandle } from '../master/server.ts';
import { silentLogger } from '../shared/logger.ts';
import { SchedulerClient } from '../shared/sdk/scheduler-client.ts';
import { loadTls, TlsClient, type TlsMaterial } from '../shared/tls.ts';
import { FakeAgent } from '../test/harness/fake-agent.ts';
import { freePort, tempDir, waitFor } from '../test/harness/processes.ts';
import { taskInfo } from '../test/harness/raw-scheduler.ts';
import { hasOpenssl, makeCerts } from '../test/harness/tls-certs.ts';
import { registryWriteFigures } from './_registry-writes.ts';

const SECRET = 'bench-secret-of-enough-bytes-0123456789';
const TASK = { cpus: 0.1, mem: 32 };

function pct(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return Number(s[Math.min(s.length - 1, Math.floor(p * s.length))]!.toFixed(3));
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
}

async function raftFigures(tls: TlsMaterial | undefined): Promise<unknown> {
  const dir = tempDir('cairn-bench-tls-');
  const scheme = tls ? 'https' : 'http';
  const ports = [await freePort(), await freePort(), await freePort()];
  const members = new Map(ports.map((p, i) => [i + 1, `${scheme}://127.0.0.1:${p}`] as [number, string]));
  const masters: MasterHandle[] = await Promise.all(ports.map((port, i) =>
    startMaster({ auth: MasterAuth.off(), port, host: '127.0.0.1', dataDir: join(dir, `m${i + 1}`), logger: silentLogger(), dnsPort: null, raft: { id: i + 1, members, secret: SECRET }, ...(tls ? { tls } : {}) }),
  ));
  try {
    const leader = await waitFor('a leader', () => masters.find((m) => m.raft!.status().role === 'leader'), 20_000);
    const { lat, perSecond } = await registryWriteFigures(leader.context.registry, 2000);
    // One client through the REST API, on one keep-alive connection.
    const agent = tls ? new https.Agent({ keepAlive: true, maxSockets: 1, ...new TlsClient(tls).connectOptions() }) : new http.Agent({ keepAlive: true, maxSockets: 1 });
    const put = (role: string, weight: number) => new Promise<number>((resolve, reject) => {
      const body = JSON.stringify({ weight });
      const req = (tls ? https : http).request(`${leader.url}/api/v1/roles/${role}`, { method: 'PUT', agent, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } }, (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      });
      req.on('error', reject);
      req.end(body);
    });
    const restLat: number[] = [];
    for (let i = 0; i < 1000; i++) {
      const s = performance.now();
      const code = await put(`h${i % 100}`, 1 + (i % 5));
      if (code !== 200) throw new Error(`PUT answered ${code}`);
      restLat.push(performance.now() - s);
    }
    agent.destroy();
    return {
      oneClient: { writes: lat.length, p50Ms: pct(lat, 0.5), p99Ms: pct(lat, 0.99) },
      clients64: { commandsPerSecond: Math.round(perSecond) },
      oneClientRest: { writes: restLat.length, p50Ms: pct(restLat, 0.5), p99Ms: pct(restLat, 0.99) },
    };
  } finally {
    for (const m of masters) await m.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

async function launches(tls: TlsMaterial | undefined, agentCount: number, taskCount: number): Promise<number> {
  const dir = tempDir('cairn-bench-tls-');
  const handle = await startMaster({ auth: MasterAuth.off(), dataDir: dir, port: 0, host: '127.0.0.1', logger: silentLogger(), allocationIntervalMs: 100, dnsPort: null, ...(tls ? { tls } : {}) });
  const client = new TlsClient(tls);
  const perAgent = Math.ceil(taskCount / agentCount);
  const agents = Array.from({ length: agentCount }, (_, i) => new FakeAgent({
    masterUrl: handle.url,
    hostname: `sim-${i}`,
    resources: `cpus:${(perAgent * TASK.cpus).toFixed(1)};mem:${perAgent * TASK.mem};disk:1000`,
    tls: client.connectOptions(),
  }));
  try {
    await Promise.all(agents.map((a) => a.connect()));
    const fw = new SchedulerClient({ masterUrl: handle.url, frameworkInfo: { user: 'bench', name: 'tls-launch-bench' }, tls: client });
    let launched = 0;
    let running = 0;
    let allRunning: () => void = () => undefined;
    const done = new Promise<void>((r) => (allRunning = r));
    fw.on('offers', (offers) => {
      for (const offer of offers) {
        const cpus = offer.resources.find((r) => r.name === 'cpus')?.scalar?.value ?? 0;
        const n = Math.min(Math.floor(cpus / TASK.cpus + 1e-9), taskCount - launched);
        const tasks = Array.from({ length: n }, () => taskInfo(`t${launched++}`, offer.agent_id.value, TASK, 'true'));
        void fw.accept([offer.id.value], tasks as never).catch(() => undefined);
      }
    });
    fw.on('update', (st) => {
      if (st.state === 'TASK_RUNNING' && ++running === taskCount) allRunning();
    });
    const t0 = performance.now();
    await fw.subscribe();
    await done;
    const seconds = (performance.now() - t0) / 1000;
    fw.close();
    return Math.round(taskCount / seconds);
  } finally {
    await Promise.all(agents.map((a) => a.close()));
    await handle.stop();
    await client.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Runs `body` with a node certificate signed by a fresh CA, removed after. */
async function withCerts<T>(body: (tls: TlsMaterial) => Promise<T>): Promise<T> {
  if (!hasOpenssl()) throw new Error('bench tls needs openssl to make its certificates');
  const certDir = tempDir('cairn-bench-certs-');
  try {
    const certs = makeCerts(certDir);
    return await body(loadTls({ cert: certs.nodeCert, key: certs.nodeKey, ca: certs.ca })!);
  } finally {
    rmSync(certDir, { recursive: true, force: true });
  }
}

/** Raft commits and REST writes without and with TLS (the raft bench shows it too). */
export function raftTlsCost(): Promise<unknown> {
  return withCerts(async (tls) => ({ plain: await raftFigures(undefined), tls: await raftFigures(tls) }));
}

/** Task launches/s through the scheduler API without and with TLS, alternating, medians of 3 (the launch bench shows it too). */
export function launchTlsCost(): Promise<unknown> {
  return withCerts(async (tls) => {
    const runs: { plain: number[]; tls: number[] } = { plain: [], tls: [] };
    for (let i = 0; i < 3; i++) {
      runs.plain.push(await launches(undefined, 20, 2000));
      runs.tls.push(await launches(tls, 20, 2000));
    }
    const plain = median(runs.plain);
    const withTls = median(runs.tls);
    return { agents: 20, tasks: 2000, plain, tls: withTls, ratio: Number((withTls / plain).toFixed(3)), runs };
  });
}

export async function run(): Promise<unknown> {
  return { bench: 'tls', raft: await raftTlsCost(), launchesPerSecond: await launchTlsCost() };
}

if (import.meta.url === `file://${process.argv[1]}`) console.log(JSON.stringify(await run(), null, 2));
