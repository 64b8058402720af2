// Process launches on one agent: a real agent in this process (its executor, supervisor,
// checkpoints and, where the host allows, cgroups) and a stand-in master speaking the real
// agent protocol over a WebSocket (register, launch, status updates, acks).
// 1. Throughput: 600 tasks sent in launch frames of 20 as fast as the socket takes them;
//    timed from the first frame to the last TASK_RUNNING. Tasks are `sleep 2`: each is a
//    supervisor shell plus the task's own process, alive long enough to overlap.
// 2. Launch-to-RUNNING: one `true` task at a time, 60 times; from the launch frame
//    leaving the master to its TASK_RUNNING arriving (the checkpoint fsync included).
// Each is run with cgroups (where usable) and without.
// 3. Containers, where a Docker daemon answers: 60 container tasks (the locally imported
//    busybox image, host network, `sleep 5`) sent in frames of 20, timed to the last
//    TASK_RUNNING; then 20 single launches, launch frame to TASK_RUNNING. Side by side, the
//    daemon's own ceiling: the same 60 containers created and started straight through the
//    Engine API (8 at a time, no agent), which bounds what any executor can reach.
//    Once with the daemon's default runtime (runc) and, where the daemon has it registered,
//    once with crun (the agent's --docker-runtime crun).

import { readdirSync, readFileSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { WebSocketServer, type WebSocket } from 'ws';
import { decodeAgentToMaster, encodeMasterToAgent, type MasterToAgent, type TaskInfo } from '../shared/agent-protocol.ts';
import { startAgent } from '../agent/agent.ts';
import { silentLogger } from '../shared/logger.ts';
import Docker from 'dockerode';
import { tempDir } from '../test/harness/processes.ts';
import { dockerRuntimeMissing, dockerUnavailable, ensureTestImage, TEST_IMAGE } from '../test/harness/docker.ts';

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
}

function percentile(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(s.length * p))];
}

/** A master that registers the agent, acknowledges every update and tells when a task is RUNNING. */
class StandInMaster {
  private readonly wss: WebSocketServer;
  private socket: WebSocket | undefined;
  private registered!: () => void;
  readonly ready = new Promise<void>((r) => (this.registered = r));
  private readonly waiters = new Map<string, () => void>();
  readonly runningAt = new Map<string, number>();
  ended = 0;

  private constructor(wss: WebSocketServer) {
    this.wss = wss;
    wss.on('connection', (ws) => {
      this.socket = ws;
      ws.on('message', (data) => {
        const msg = decodeAgentToMaster(new Uint8Array(data as Buffer));
        if ('register' in msg) {
          this.send({ registered: { agentId: 'bench-agent', lostTaskIds: [], pingIntervalMs: 60_000 } });
          this.registered();
        } else if ('statusUpdate' in msg) {
          const u = msg.statusUpdate;
          this.send({ ack: { uuid: u.uuid, taskId: u.taskId } });
          if (u.state === 'TASK_RUNNING') {
            this.runningAt.set(u.taskId, performance.now());
            this.waiters.get(u.taskId)?.();
          } else {
            this.ended++;
          }
        }
      });
    });
  }

  static async start(): Promise<StandInMaster> {
    const wss = new WebSocketServer({ host: '127.0.0.1', port: 0, path: '/api/v1/agent' });
    await new Promise<void>((r) => wss.once('listening', () => r()));
    return new StandInMaster(wss);
  }

  get url(): string {
    return `http://127.0.0.1:${(this.wss.address() as AddressInfo).port}`;
  }

  send(msg: MasterToAgent): void {
    this.socket?.send(encodeMasterToAgent(msg), { binary: true });
  }

  running(taskId: string): Promise<void> {
    if (this.runningAt.has(taskId)) return Promise.resolve();
    return new Promise((r) => this.waiters.set(taskId, r));
  }

  async close(): Promise<void> {
    for (const c of this.wss.clients) c.terminate();
    await new Promise((r) => this.wss.close(r));
  }
}

// Every task is a tenant's, as under an authenticating master: a root agent runs it under its
// principal's own uid from the task uid range, in a 0700 sandbox of that uid (the isolation
// between tenants is on the path this bench times).
function task(id: string, cmd: string, container: boolean): TaskInfo {
  return {
    taskId: id, frameworkId: 'bench', name: id, principal: 'bench-tenant', resources: 'cpus:0.01;mem:32', command: { shell: true, value: cmd, arguments: [], environment: [] }, killGraceMs: 0, labels: [],
    ...(container ? { container: { type: 'docker' as const, docker: { image: TEST_IMAGE, network: 'host' as const, portMappings: [], pullPolicy: 'never' as const }, volumes: [] } } : {}),
  };
}

interface Figures {
  isolation: string;
  /**
   * agentCpuMsPerLaunch: CPU time of this process (the agent) per task during the burst;
   * daemonCpuMsPerLaunch: of dockerd and containerd (containers only).
   */
  throughput: { tasks: number; seconds: number; launchesPerSecond: number; agentCpuMsPerLaunch: number; daemonCpuMsPerLaunch?: number };
  launchToRunning: { samples: number; medianMs: number; p90Ms: number; minMs: number };
}

/** `container`: false for process tasks; else the runtime the agent names (undefined: the daemon's default). */
async function measure(cgroups: boolean, container: false | { runtime: string | undefined } = false): Promise<Figures> {
  const dir = tempDir('cairn-bench-exec-');
  const master = await StandInMaster.start();
  const agent = await startAgent({
    masterUrl: master.url, workDir: dir, httpPort: 0, hostname: 'localhost', resources: 'cpus:2;mem:2048', logger: silentLogger(), cgroups,
    ...(container && container.runtime !== undefined ? { dockerRuntime: container.runtime } : {}),
  });
  try {
    await master.ready;
    const health = (await (await fetch(`${agent.httpUrl}/health`)).json()) as { isolation: { cgroups: boolean; version?: number; reason?: string } };
    const isolation = health.isolation.cgroups ? `cgroups v${health.isolation.version}` : `none (${health.isolation.reason})`;

    // Throughput.
    const total = container ? 60 : 600;
    const frame = 20;
    const ids = Array.from({ length: total }, (_, i) => `burst-${i}`);
    const cpu0 = process.cpuUsage();
    const daemon0 = container ? daemonCpuMs() : 0;
    const t0 = performance.now();
    for (let i = 0; i < total; i += frame) {
      master.send({ launch: { tasks: ids.slice(i, i + frame).map((id) => task(id, container ? 'sleep 5' : 'sleep 2', !!container)) } });
      // Let the socket drain between frames, as a master sending to many agents would.
      await new Promise((r) => setImmediate(r));
    }
    await Promise.all(ids.map((id) => master.running(id)));
    const seconds = (Math.max(...ids.map((id) => master.runningAt.get(id)!)) - t0) / 1000;
    const cpu = process.cpuUsage(cpu0);
    const daemonMs = container ? daemonCpuMs() - daemon0 : 0;
    // Let the burst end before timing single launches.
    while (master.ended < total) await new Promise((r) => setTimeout(r, 100));

    // Launch-to-RUNNING, one at a time.
    const latencies: number[] = [];
    for (let i = 0; i < (container ? 20 : 60); i++) {
      const id = `one-${i}`;
      const sent = performance.now();
      master.send({ launch: { tasks: [task(id, 'true', !!container)] } });
      await master.running(id);
      latencies.push(master.runningAt.get(id)! - sent);
      await new Promise((r) => setTimeout(r, 20));
    }
    // Containers end (and are removed) after RUNNING; let them go before stopping.
    if (container) while (master.ended < total + latencies.length) await new Promise((r) => setTimeout(r, 100));
    return {
      isolation: container ? 'containers' : isolation,
      throughput: { tasks: total, seconds: Number(seconds.toFixed(3)), launchesPerSecond: Math.round(total / seconds), agentCpuMsPerLaunch: Number(((cpu.user + cpu.system) / 1000 / total).toFixed(2)), ...(container ? { daemonCpuMsPerLaunch: Math.round(daemonMs / total) } : {}) },
      launchToRunning: {
        samples: latencies.length,
        medianMs: Number(median(latencies).toFixed(2)),
        p90Ms: Number(percentile(latencies, 0.9).toFixed(2)),
        minMs: Number(Math.min(...latencies).toFixed(2)),
      },
    };
  } finally {
    await agent.stop({ killTasks: true });
    await master.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** CPU time (ms) so far of the Docker daemon and containerd, found by name in /proc; 0 where absent. */
function daemonCpuMs(): number {
  let ticks = 0;
  for (const pid of readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
    try {
      if (!['dockerd', 'containerd'].includes(readFileSync(`/proc/${pid}/comm`, 'utf8').trim())) continue;
      const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
      ticks += Number(f[11]) + Number(f[12]);
    } catch {
      // gone meanwhile
    }
  }
  return ticks * 10; // USER_HZ is 100
}

/** The machine's CPU counters (all cores), in clock ticks. */
function cpuTicks(): { idle: number; total: number } {
  const f = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
  return { idle: f[3]! + f[4]!, total: f.reduce((a, b) => a + b, 0) };
}

/**
 * Containers created and started per second straight through the Engine API: the daemon's
 * ceiling. With how busy the machine's CPUs were meanwhile and the CPU time each container
 * cost (daemon, containerd, shim and runc together), which show whether the ceiling is the
 * machine's CPUs.
 */
async function daemonCeiling(total: number, concurrency: number, runtime: string | undefined): Promise<{ tasks: number; seconds: number; launchesPerSecond: number; cpuBusyFraction: number; cpuMsPerContainer: number; daemonCpuMsPerContainer: number }> {
  const docker = new Docker();
  const ids: string[] = [];
  let next = 0;
  const before = cpuTicks();
  const daemon0 = daemonCpuMs();
  const t0 = performance.now();
  const worker = async () => {
    while (next < total) {
      next++;
      const c = await docker.createContainer({
        Image: TEST_IMAGE, Entrypoint: ['/bin/sh', '-c'], Cmd: ['sleep 5'], Labels: { 'cairn.bench': 'ceiling' },
        HostConfig: { NetworkMode: 'host', ...(runtime !== undefined ? { Runtime: runtime } : {}), Memory: 32 * 1024 * 1024, MemorySwap: 32 * 1024 * 1024, CpuShares: 10 },
      });
      await c.start();
      ids.push(c.id);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  const seconds = (performance.now() - t0) / 1000;
  const after = cpuTicks();
  const daemonMs = daemonCpuMs() - daemon0;
  const busyTicks = after.total - before.total - (after.idle - before.idle);
  const tickMs = 1000 / 100; // USER_HZ is 100 on Linux
  await Promise.all(ids.map((id) => docker.getContainer(id).remove({ force: true }).catch(() => undefined)));
  return {
    tasks: total, seconds: Number(seconds.toFixed(3)), launchesPerSecond: Math.round(total / seconds),
    cpuBusyFraction: Number((busyTicks / (after.total - before.total)).toFixed(2)), cpuMsPerContainer: Math.round((busyTicks * tickMs) / total),
    daemonCpuMsPerContainer: Math.round(daemonMs / total),
  };
}

export async function run(): Promise<unknown> {
  const withCgroups = await measure(true);
  const without = await measure(false);
  const why = await dockerUnavailable();
  let containers: Record<string, (Figures & { runtime: string; daemonCeiling: unknown; ofCeiling: number }) | { skipped: string }>;
  if (why) {
    containers = { skipped: { skipped: why } };
  } else {
    await ensureTestImage();
    const info = (await new Docker().info()) as { DefaultRuntime?: string };
    const crunMissing = await dockerRuntimeMissing('crun');
    const runtimes: { key: string; runtime: string | undefined; name: string }[] = [
      { key: 'defaultRuntime', runtime: undefined, name: info.DefaultRuntime ?? 'runc' },
      ...(crunMissing ? [] : [{ key: 'crun', runtime: 'crun', name: 'crun' }]),
    ];
    containers = {};
    for (const r of runtimes) {
      const ceiling = await daemonCeiling(60, 8, r.runtime);
      const figures = await measure(true, { runtime: r.runtime });
      containers[r.key] = { runtime: r.name, ...figures, daemonCeiling: ceiling, ofCeiling: Number((figures.throughput.launchesPerSecond / ceiling.launchesPerSecond).toFixed(2)) };
    }
    if (crunMissing) containers.crun = { skipped: crunMissing };
  }
  return {
    bench: 'executor',
    targets: { processLaunchesPerSecond: 200, containerLaunchesPerSecond: 30, containerLaunchToRunningMedianMs: 300 },
    withCgroups,
    withoutCgroups: without,
    containers,
  };
}

if (import.meta.url === `file://${process.argv[1]}`) console.log(JSON.stringify(await run(), null, 2));
