// Replicated masters: commit latency, throughput and failover.
// 1. Three masters in this process, replicating over loopback WebSockets with SQLite
//    (synchronous=FULL) underneath: commit latency of one client (p50/p99) and committed
//    commands/s with 64 concurrent clients, both proposing registry commands on the leader
//    and waiting for each to be durable on a quorum and applied. The same through the REST
//    API (PUT /api/v1/roles/:role) for one client, to show what HTTP adds.
// 2. Three master processes: one client's write latency and 64 clients' writes/s through
//    REST; then SIGKILL the leader and time until the first write acknowledged by a new
//    leader; median over 10 runs, with the default election timeout (1 s).

import http from 'node:http';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startMaster, type MasterHandle } from '../master/server.ts';
import { silentLogger } from '../shared/logger.ts';
import { Cleanup, freePort, startCairn, tempDir, waitFor, type CairnProcess } from '../test/harness/processes.ts';
import { MasterAuth } from '../master/auth/master-auth.ts';
import { registryWriteFigures } from './_registry-writes.ts';
import { raftTlsCost } from './tls.ts';
import { hasOpenssl } from '../test/harness/tls-certs.ts';
import { parseCredentials } from '../master/auth/credentials.ts';
import { authHeaders, authFetch, TEST_USER } from '../test/harness/credentials.ts';

const SECRET = 'bench-secret-of-enough-bytes-0123456789';

function pct(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return Number(s[Math.min(s.length - 1, Math.floor(s.length * p))].toFixed(3));
}

/** A master group that authenticates every call (the test principal), or none. */
function benchAuth(on: boolean): MasterAuth {
  return on ? MasterAuth.on({ credentials: parseCredentials(JSON.stringify({ credentials: [{ ...TEST_USER }] })) }) : MasterAuth.off();
}

async function inProcessGroup(auth = false): Promise<{ masters: MasterHandle[]; dir: string }> {
  const dir = tempDir('cairn-raft-bench-');
  const ports = [await freePort(), await freePort(), await freePort()];
  const members = new Map(ports.map((p, i) => [i + 1, `http://127.0.0.1:${p}`] as [number, string]));
  const masters = await Promise.all(ports.map((port, i) =>
    startMaster({ auth: benchAuth(auth), port, host: '127.0.0.1', dataDir: join(dir, `m${i + 1}`), logger: silentLogger(), dnsPort: null, raft: { id: i + 1, members, secret: SECRET } }),
  ));
  await waitFor('a leader', () => masters.find((m) => m.raft!.status().role === 'leader'), 20_000);
  return { masters, dir };
}

const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
function put(url: string, role: string, weight: number): Promise<number> {
  const body = JSON.stringify({ weight });
  return new Promise((resolve, reject) => {
    const req = http.request(`${url}/api/v1/roles/${role}`, { method: 'PUT', agent, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), ...authHeaders() } }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
    req.end(body);
  });
}

async function commitFigures(): Promise<unknown> {
  const { masters, dir } = await inProcessGroup();
  const leader = masters.find((m) => m.raft!.status().role === 'leader')!;
  const { lat, perSecond } = await registryWriteFigures(leader.context.registry, 3000);
  // One client through the REST API.
  const httpLat: number[] = [];
  for (let i = 0; i < 1000; i++) {
    const s = performance.now();
    const code = await put(leader.url, `h${i % 100}`, 1 + (i % 5));
    if (code !== 200) throw new Error(`PUT answered ${code}`);
    httpLat.push(performance.now() - s);
  }
  for (const m of masters) await m.stop();
  rmSync(dir, { recursive: true, force: true });
  return {
    oneClient: { writes: lat.length, p50Ms: pct(lat, 0.5), p99Ms: pct(lat, 0.99) },
    clients64: { commandsPerSecond: Math.round(perSecond) },
    oneClientRest: { writes: httpLat.length, p50Ms: pct(httpLat, 0.5), p99Ms: pct(httpLat, 0.99) },
  };
}

/** Committed writes/s through the REST API of master processes, 64 clients at once. */
async function restThroughput(urls: string[], leader: number, seconds: number): Promise<number> {
  let done = 0;
  const until = performance.now() + seconds * 1000;
  const t0 = performance.now();
  await Promise.all(Array.from({ length: 64 }, async (_, c) => {
    let i = c;
    while (performance.now() < until) {
      const code = await put(urls[leader], `t${i % 500}`, 1 + (i % 9));
      if (code !== 200) throw new Error(`PUT answered ${code}`);
      i += 64;
      done++;
    }
  }));
  return Math.round(done / ((performance.now() - t0) / 1000));
}

async function failover(runs: number): Promise<unknown> {
  const cleanup = new Cleanup();
  const base = cleanup.dir('cairn-raft-failover-');
  const secretFile = join(base, 'secret');
  writeFileSync(secretFile, SECRET);
  const ports = [await freePort(), await freePort(), await freePort()];
  const urls = ports.map((p) => `http://127.0.0.1:${p}`);
  const peers = urls.map((u, i) => `${i + 1}=${u}`).join(',');
  const procs: (CairnProcess | undefined)[] = [undefined, undefined, undefined];
  const start = async (i: number) => {
    procs[i] = cleanup.track(startCairn(['master', '--id', String(i + 1), '--peers', peers, '--secret-file', secretFile, '--port', String(ports[i]), '--host', '127.0.0.1', '--data-dir', join(base, `m${i}`), '--dns-port', '0'], urls[i]));
    await procs[i]!.waitHealthy();
  };
  const role = async (i: number) => ((await (await authFetch(`${urls[i]}/api/v1/state`, { signal: AbortSignal.timeout(500) })).json()) as any).master.role as string;
  try {
    await Promise.all([0, 1, 2].map(start));
    const first = await waitFor('a leader', async () => {
      for (const i of [0, 1, 2]) if ((await role(i).catch(() => '')) === 'leader') return i + 1;
      return undefined;
    }, 20_000, 20).then((x) => x - 1);
    const restLat: number[] = [];
    for (let i = 0; i < 1000; i++) {
      const s = performance.now();
      const code = await put(urls[first], `p${i % 100}`, 1 + (i % 5));
      if (code !== 200) throw new Error(`PUT answered ${code}`);
      restLat.push(performance.now() - s);
    }
    const restCommandsPerSecond = await restThroughput(urls, first, 5);
    const times: number[] = [];
    for (let run = 0; run < runs; run++) {
      const leader = await waitFor('a leader', async () => {
        for (const i of [0, 1, 2]) if ((await role(i).catch(() => '')) === 'leader') return i + 1;
        return undefined;
      }, 20_000, 20).then((x) => x - 1);
      await put(urls[leader], 'failover', 1 + run); // the leader is taking writes
      const t0 = performance.now();
      await procs[leader]!.kill('SIGKILL');
      // Writers try every survivor until one acknowledges: that is the new leader serving.
      const survivors = [0, 1, 2].filter((i) => i !== leader);
      await waitFor('a write on a new leader', async () => {
        for (const i of survivors) {
          const code = await new Promise<number>((resolve) => {
            const body = JSON.stringify({ weight: 2 + run });
            const req = http.request(`${urls[i]}/api/v1/roles/failover`, { method: 'PUT', headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), ...authHeaders() }, timeout: 500 }, (res) => {
              res.resume();
              res.on('end', () => resolve(res.statusCode ?? 0));
            });
            req.on('error', () => resolve(0));
            req.on('timeout', () => req.destroy());
            req.end(body);
          });
          if (code === 200) return true;
        }
        return undefined;
      }, 20_000, 10);
      times.push(performance.now() - t0);
      await start(leader);
    }
    return { restOneClient: { writes: restLat.length, p50Ms: pct(restLat, 0.5), p99Ms: pct(restLat, 0.99) }, restCommandsPerSecond64Clients: restCommandsPerSecond, runs, medianMs: pct(times, 0.5), minMs: pct(times, 0), maxMs: pct(times, 1), allMs: times.map((t) => Math.round(t)) };
  } finally {
    await cleanup.run();
  }
}

/**
 * What authentication costs: REST writes (one client, then 64) to an in-process group that
 * authenticates every call and to one that authenticates none, in alternating rounds on the
 * same machine; medians of the rounds.
 */
async function authCost(rounds: number): Promise<unknown> {
  const figures: Record<'off' | 'on', { p50Ms: number[]; perSecond: number[] }> = { off: { p50Ms: [], perSecond: [] }, on: { p50Ms: [], perSecond: [] } };
  for (let r = 0; r < rounds; r++) {
    // Which goes first alternates, so neither always follows the other's teardown.
    for (const mode of r % 2 === 0 ? (['off', 'on'] as const) : (['on', 'off'] as const)) {
      const { masters, dir } = await inProcessGroup(mode === 'on');
      const leader = masters.find((m) => m.raft!.status().role === 'leader')!;
      const lat: number[] = [];
      for (let i = 0; i < 500; i++) {
        const s = performance.now();
        if ((await put(leader.url, `a${i % 50}`, 1 + (i % 5))) !== 200) throw new Error('PUT refused');
        lat.push(performance.now() - s);
      }
      figures[mode].p50Ms.push(pct(lat, 0.5));
      figures[mode].perSecond.push(await restThroughput(masters.map((m) => m.url), masters.indexOf(leader), 3));
      for (const m of masters) await m.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  }
  const med = (xs: number[]) => pct(xs, 0.5);
  return {
    rounds,
    withoutAuth: { oneClientRestP50Ms: med(figures.off.p50Ms), restWritesPerSecond64Clients: med(figures.off.perSecond), runs: figures.off },
    withTokens: { oneClientRestP50Ms: med(figures.on.p50Ms), restWritesPerSecond64Clients: med(figures.on.perSecond), runs: figures.on },
    throughputRatio: Number((med(figures.on.perSecond) / med(figures.off.perSecond)).toFixed(3)),
    target: 'with tokens at most 10% lower throughput (ratio >= 0.9)',
  };
}

export async function run(): Promise<unknown> {
  if (process.env.RAFT_BENCH === 'auth') return { bench: 'raft', authCost: await authCost(3) };
  const auth = await authCost(3);
  const commit = await commitFigures();
  const fail = await failover(10);
  return {
    bench: 'raft',
    masters: 3,
    commit,
    authCost: auth,
    tlsCost: hasOpenssl() ? await raftTlsCost() : 'openssl missing: no certificates to measure TLS with',
    failover: fail,
    targets: { oneClientP50Ms: 2, commandsPerSecond: 20_000, failoverMedianMs: 1500 },
  };
}

if (import.meta.url === `file://${process.argv[1]}`) console.log(JSON.stringify(await run(), null, 2));
