// DNS throughput and freshness against one master (in this process; simulated agent and a
// raw framework, 100 RUNNING tasks with two ports each).
// 1. Queries/s for in-domain A and SRV lookups, load from a second process on loopback
//    (bench/_dns-load.ts: UDP, a window of outstanding queries, round-robin over the
//    tasks' names), with the master's CPU use over the run (one core is the budget).
// 2. RUNNING-to-resolvable: from the agent sending a task's RUNNING update to the first
//    answer with its A record (the update goes through the registry, fsync included), and
//    end-to-gone: from the agent sending FINISHED to the first NXDOMAIN. Median and p99
//    over repeated tasks; the name is asked in a tight loop from this process.

import { execFile } from 'node:child_process';
import dgram from 'node:dgram';
import { rmSync } from 'node:fs';
import { cpus } from 'node:os';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import dnsPacket from 'dns-packet';
import { startMaster, type MasterHandle } from '../master/server.ts';
import { silentLogger } from '../shared/logger.ts';
import { FakeAgent } from '../test/harness/fake-agent.ts';
import { tempDir } from '../test/harness/processes.ts';
import { RawScheduler, taskInfo, type RawEvent } from '../test/harness/raw-scheduler.ts';
import { MasterAuth } from '../master/auth/master-auth.ts';

const TASKS = 100;
const LOAD_SECONDS = 5;
const WINDOW = 64;
const LATENCY_RUNS = 50;
const FRAMEWORK = 'bench';
const ROOT = fileURLToPath(new URL('..', import.meta.url));

function percentile(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return Number(s[Math.min(s.length - 1, Math.floor(p * s.length))].toFixed(2));
}

/** Offers already answered (the scheduler keeps every event it received). */
const usedOffers = new Set<string>();

async function nextOffer(s: RawScheduler): Promise<any> {
  const ev = await s.next((e: RawEvent) => e.type === 'OFFERS' && e.offers.offers.some((o: any) => !usedOffers.has(o.id.value)), 10_000);
  const offer = ev.offers.offers.find((o: any) => !usedOffers.has(o.id.value));
  usedOffers.add(offer.id.value);
  return offer;
}

/** Launches the named tasks, up to 50 per offer, each with two ports when `ports`. */
async function launchTasks(s: RawScheduler, agent: FakeAgent, names: string[], ports: boolean): Promise<void> {
  let i = 0;
  while (i < names.length) {
    const offer = await nextOffer(s);
    const batch = names.slice(i, i + 50);
    const infos = batch.map((name, k) => taskInfo(`${name}-${Date.now()}-${k}`, agent.agentId, { cpus: 0.01, mem: 1, ports: ports ? [[31000 + 2 * (i + k), 31001 + 2 * (i + k)]] : undefined }, 'sleep 1000', { name }));
    const r = await s.call({ type: 'ACCEPT', accept: { offer_ids: [offer.id], operations: [{ type: 'LAUNCH', launch: { task_infos: infos } }], filters: { refuse_seconds: 0 } } });
    if (r.status !== 202) throw new Error(`ACCEPT failed: ${r.status} ${r.body}`);
    i += batch.length;
  }
}

async function load(handle: MasterHandle, type: 'A' | 'SRV', names: string[]) {
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  const { stdout } = await promisify(execFile)(
    process.execPath,
    ['bin/run-ts.js', 'bench/_dns-load.ts', '--port', String(handle.dnsPort), '--type', type, '--seconds', String(LOAD_SECONDS), '--window', String(WINDOW), ...names],
    { cwd: ROOT, maxBuffer: 1 << 20 },
  );
  const wall = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  const result = JSON.parse(stdout.trim().split('\n').pop()!) as Record<string, unknown>;
  // The master's CPU over the client's whole run (start-up and warm-up included), in cores.
  return { ...result, masterCpuCores: Number(((cpu.user + cpu.system) / 1e6 / wall).toFixed(2)) };
}

/** Sends `name` A queries back to back until `done(rcode, answers)`; resolves with the time. */
function askUntil(port: number, name: string, done: (rcode: number, answers: number) => boolean): Promise<number> {
  const socket = dgram.createSocket('udp4');
  const query = dnsPacket.encode({ type: 'query', id: 7, questions: [{ name, type: 'A' }] });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      socket.close();
      reject(new Error(`no expected answer for ${name} within 10 s`));
    }, 10_000);
    socket.on('message', (msg) => {
      if (done(msg[3] & 0x0f, msg.readUInt16BE(6))) {
        const at = performance.now();
        clearTimeout(timer);
        socket.close();
        resolve(at);
      } else {
        socket.send(query, port, '127.0.0.1');
      }
    });
    socket.send(query, port, '127.0.0.1');
  });
}

async function freshness(handle: MasterHandle, s: RawScheduler, agent: FakeAgent) {
  const runningSent = new Map<string, number>();
  const update = agent.update.bind(agent);
  agent.update = (taskId, frameworkId, state, exitCode) => {
    if (state === 'TASK_RUNNING') runningSent.set(taskId, performance.now());
    return update(taskId, frameworkId, state, exitCode);
  };
  const toResolvable: number[] = [];
  const toGone: number[] = [];
  for (let i = 0; i < LATENCY_RUNS; i++) {
    const name = `fresh-${i}`;
    const fqdn = `${name}.${FRAMEWORK}.cairn`;
    const taskId = `${name}-task`;
    const resolvable = askUntil(handle.dnsPort, fqdn, (rcode, answers) => rcode === 0 && answers > 0);
    const offer = await nextOffer(s);
    const accepted = await s.call({ type: 'ACCEPT', accept: { offer_ids: [offer.id], operations: [{ type: 'LAUNCH', launch: { task_infos: [taskInfo(taskId, agent.agentId, { cpus: 0.01, mem: 1 }, 'sleep 1', { name })] } }], filters: { refuse_seconds: 0 } } });
    if (accepted.status !== 202) throw new Error(`ACCEPT failed: ${accepted.status} ${accepted.body}`);
    const resolvedAt = await resolvable;
    toResolvable.push(resolvedAt - runningSent.get(taskId)!);
    const gone = askUntil(handle.dnsPort, fqdn, (rcode) => rcode === 3);
    const endedAt = performance.now();
    agent.update(taskId, s.frameworkId, 'TASK_FINISHED');
    toGone.push((await gone) - endedAt);
  }
  return {
    runs: LATENCY_RUNS,
    runningToResolvableMs: { median: percentile(toResolvable, 0.5), p99: percentile(toResolvable, 0.99), max: percentile(toResolvable, 1) },
    endToGoneMs: { median: percentile(toGone, 0.5), p99: percentile(toGone, 0.99), max: percentile(toGone, 1) },
  };
}

export async function run(): Promise<unknown> {
  const dir = tempDir('cairn-bench-');
  const handle = await startMaster({ auth: MasterAuth.off(), dataDir: dir, port: 0, host: '127.0.0.1', dnsPort: 0, dnsResolvers: [], logger: silentLogger(), allocationIntervalMs: 50 });
  const agent = new FakeAgent({ masterUrl: handle.url, hostname: 'bench', resources: 'cpus:64;mem:65536;disk:1000;ports:[31000-32999]' });
  await agent.connect();
  const s = new RawScheduler(handle.url);
  const ackAll = (e: RawEvent) => {
    if (e.type !== 'UPDATE') return;
    const st = e.update.status;
    if (st.uuid) void s.call({ type: 'ACKNOWLEDGE', acknowledge: { agent_id: st.agent_id, task_id: st.task_id, uuid: st.uuid } });
  };
  s.onEvent(ackAll);
  await s.subscribe({ user: 'bench', name: FRAMEWORK });
  try {
    const names = Array.from({ length: TASKS }, (_, i) => `svc-${i}`);
    await launchTasks(s, agent, names, true);
    const aNames = names.map((n) => `${n}.${FRAMEWORK}.cairn`);
    const srvNames = names.map((n) => `_${n}._tcp.${FRAMEWORK}.cairn`);
    // Every name resolving before the load starts.
    await askUntil(handle.dnsPort, aNames[TASKS - 1], (rcode, answers) => rcode === 0 && answers > 0);
    const a = await load(handle, 'A', aNames);
    const srv = await load(handle, 'SRV', srvNames);
    const fresh = await freshness(handle, s, agent);
    return {
      benchmark: 'dns',
      machine: { cpus: cpus().length, model: cpus()[0]?.model ?? 'unknown', node: process.version },
      runningTasks: TASKS,
      queries: { A: a, SRV: srv },
      freshness: fresh,
    };
  } finally {
    s.close();
    await agent.close();
    await handle.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}
