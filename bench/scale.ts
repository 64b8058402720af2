// Scale: three master processes as a Raft group, 10,000 simulated agents in child processes,
// one framework launching 100,000 short tasks, then the leader SIGKILLed.
//
// - Masters: real `cairn master` processes (--id/--peers/--secret-file/--data-dir, SQLite with
//   synchronous=FULL), started as the raft bench starts them (test/harness/processes.ts). Agent
//   liveness is relaxed by flags so that a loaded leader does not write agents off spuriously
//   (see MASTER_FLAGS, printed in the output). Each master has bench/_scale-probe.cjs preloaded
//   (NODE_OPTIONS) so the bench can read its heap after a full GC and its event-loop use.
// - Agents: SCALE_AGENT_PROCS child processes (bench/_scale-agents.ts), each running its share
//   of SCALE_AGENTS agents over real WebSockets with the real agent's MasterLink (reconnects,
//   follows 4001 to the leader) and the real agent protocol; a launched task is reported
//   TASK_RUNNING and at once TASK_FINISHED. Their first connection goes to the leader.
// - Framework: one SchedulerClient (shared/sdk) given all three masters, in this process. It
//   accepts offers with as many 0.1-CPU/32-MiB tasks as fit (fitTasks) while fewer than
//   SCALE_WINDOW tasks are launched and not RUNNING, acknowledges every update, reconciles and
//   relaunches after a leader change, suppresses offers once everything is launched.
// - Figures: registration time; launch throughput (first ACCEPT to the last TASK_RUNNING /
//   TASK_FINISHED at the framework, and the leader's applied task_launched count over time);
//   allocation cycle times from /metrics; the leader's RSS and heap before agents, after agents
//   and after tasks; CPU of every process, of each master's JavaScript thread (on a CPU,
//   waiting for one, in disk wait, idle) and of the machine during each phase, and from that
//   the limiting resource in words; every leader change; then failover: SIGKILL of the leader
//   until a survivor leads, until every agent has registered with it, until the framework's
//   calls are taken again. A run that fails says in which phase and keeps what it measured.
//
// Environment: SCALE_AGENTS (10000), SCALE_TASKS (100000), SCALE_AGENT_PROCS (agents/2500,
// 1..8), SCALE_RUNS (1; figures are then medians over the runs), SCALE_TIMEOUT_S (1800, per
// phase), SCALE_FINISH (immediate: FINISHED right after RUNNING; later: every task stays
// RUNNING until all are, the leader's memory is read then, and the agents finish them, each
// agent at a random moment within SCALE_FINISH_SPREAD_S (100; 0: all in the same instant)),
// SCALE_PROFILE=1 (CPU profiles of the leader during the registration and the launch and of
// the new leader during the failover, summarised), SCALE_CONNECTING (200: agents connecting
// and registering at once, over all processes), SCALE_WINDOW (5000: tasks the framework keeps
// launched and not yet RUNNING at most; 0: no limit, every offer is used at once),
// SCALE_STATE_POLL_MS (5000: the pause between two reads of the new leader's /api/v1/state
// during the failover; 0: none. The agents' own registration times are measured either way),
// SCALE_LEADER_STALL_AT (0: none; N: once the framework has N tasks accepted, the leader is
// SIGSTOPped for SCALE_LEADER_STALL_MS (5000) and continued, so that the followers elect
// another while the window of launches is full — the leader change a loaded machine makes by
// chance, made on purpose to test what the framework and the masters do after it).
//
// The masters authenticate as every master does (the harness gives them its credentials
// file): the agents register with the harness's agent credential, the framework and the
// bench's own requests bear the harness user's token.

import { fork, type ChildProcess } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { OfferInterest } from '../shared/framework-runtime/offer-interest.ts';
import { fitTasks, type TaskRequirement } from '../shared/sdk/offer-fit.ts';
import { SchedulerClient } from '../shared/sdk/scheduler-client.ts';
import type { OfferJson, TaskInfoJson, TaskStatusJson } from '../shared/mesos-v1.ts';
import { Cleanup, freePort, startCairn, waitFor, type CairnProcess } from '../test/harness/processes.ts';
import { authFetch, TEST_AGENT, TEST_USER } from '../test/harness/credentials.ts';
import { authorizationHeader } from '../agent/credential.ts';
import type { ScaleAgentsReport, ScaleAgentsStart } from './_scale-agents.ts';

const RUN_TS = fileURLToPath(new URL('../bin/run-ts.js', import.meta.url));
const AGENTS_FILE = fileURLToPath(new URL('./_scale-agents.ts', import.meta.url));
const PROBE_FILE = fileURLToPath(new URL('./_scale-probe.cjs', import.meta.url));
const SECRET = 'scale-bench-secret-of-enough-bytes-0123456789';
const TASK: TaskRequirement = { cpus: 0.1, mem: 32 };
const TERMINAL = new Set(['TASK_FINISHED', 'TASK_FAILED', 'TASK_KILLED', 'TASK_LOST', 'TASK_ERROR', 'TASK_GONE', 'TASK_DROPPED']);
const TARGETS = { tasksPerSecond: 10_000, failoverMs: 3_000, leaderBytesPerAgent: 10 * 1024 };

/**
 * Flags the masters run with. Liveness is relaxed (Mesos' defaults are 15 s × 5): a leader
 * whose one thread is busy with 100,000 launches answers late, and an agent written off
 * spuriously would spoil the figures. Offers live 10 minutes instead of 1, for the same reason.
 */
const MASTER_FLAGS = ['--ping-interval', '30s', '--max-missed-pings', '10', '--offer-timeout', '10m', '--dns-port', '0', '--dns-resolvers', '', '--gossip-port', '0'];
/** The simulated agents' connection settings: the real agent's defaults (agent/options.ts). */
const AGENT_LINK = { reconnectMinMs: 100, reconnectMaxMs: 2000, registrationTimeoutMs: 10_000, missedPingsAllowed: 5, resendMs: 2000 };

function envInt(name: string, fallback: number): number {
  const v = process.env[name];
  if (v === undefined || v === '') return fallback;
  const n = Number(v);
  if (!Number.isInteger(n) || n <= 0) throw new Error(`${name} must be a positive integer, got '${v}'`);
  return n;
}

interface Config { agents: number; tasks: number; procs: number; runs: number; timeoutS: number; profile: boolean; statePollMs: number; finishAtOnce: boolean; finishSpreadS: number; connecting: number; window: number; leaderStallAt: number; leaderStallMs: number }

function config(): Config {
  const agents = envInt('SCALE_AGENTS', 10_000);
  return {
    agents,
    tasks: envInt('SCALE_TASKS', 100_000),
    procs: Math.min(agents, envInt('SCALE_AGENT_PROCS', Math.min(8, Math.max(1, Math.ceil(agents / 2500))))),
    runs: envInt('SCALE_RUNS', 1),
    timeoutS: envInt('SCALE_TIMEOUT_S', 1800),
    profile: process.env.SCALE_PROFILE === '1',
    statePollMs: process.env.SCALE_STATE_POLL_MS === '0' ? 0 : envInt('SCALE_STATE_POLL_MS', 5000),
    finishAtOnce: (process.env.SCALE_FINISH ?? 'immediate') !== 'later',
    finishSpreadS: process.env.SCALE_FINISH_SPREAD_S === '0' ? 0 : envInt('SCALE_FINISH_SPREAD_S', 100),
    connecting: envInt('SCALE_CONNECTING', 200),
    window: process.env.SCALE_WINDOW === '0' ? 0 : envInt('SCALE_WINDOW', 5000),
    leaderStallAt: process.env.SCALE_LEADER_STALL_AT === '0' ? 0 : envInt('SCALE_LEADER_STALL_AT', 0),
    leaderStallMs: envInt('SCALE_LEADER_STALL_MS', 5000),
  };
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
const round = (x: number, digits = 0) => Number(x.toFixed(digits));
function median(xs: number[]): number {
  const s = xs.filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
  if (s.length === 0) return NaN;
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
}

// ------------------------------------------------------------------ /proc readings

const CLK_TCK = 100;

/** CPU seconds (user + system) of a process, or of one of its threads. */
function cpuSeconds(pid: number, tid?: number): number {
  try {
    const s = readFileSync(tid === undefined ? `/proc/${pid}/stat` : `/proc/${pid}/task/${tid}/stat`, 'utf8');
    const f = s.slice(s.lastIndexOf(')') + 2).split(' ');
    return (Number(f[11]) + Number(f[12])) / CLK_TCK;
  } catch {
    return NaN;
  }
}

function memoryOf(pid: number): { rssBytes: number; hwmBytes: number } {
  try {
    const s = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (k: string) => Number(new RegExp(`^${k}:\\s+(\\d+) kB`, 'm').exec(s)?.[1] ?? NaN) * 1024;
    return { rssBytes: kb('VmRSS'), hwmBytes: kb('VmHWM') };
  } catch {
    return { rssBytes: NaN, hwmBytes: NaN };
  }
}

interface MachineCpu { busy: number; iowait: number; total: number }
function machineCpu(): MachineCpu {
  const line = readFileSync('/proc/stat', 'utf8').split('\n')[0]!;
  const [user, nice, system, idle, iowait, irq, softirq, steal] = line.trim().split(/\s+/).slice(1, 9).map(Number) as number[];
  return { busy: user! + nice! + system! + irq! + softirq! + steal!, iowait: iowait!, total: user! + nice! + system! + idle! + iowait! + irq! + softirq! + steal! };
}

// ------------------------------------------------------------------ the masters' probe

interface ProbeAnswer {
  seq: number;
  gcMs?: number;
  memory: { rss: number; heapTotal: number; heapUsed: number; external: number; arrayBuffers: number };
  elu: { idleMs: number; activeMs: number };
  loopDelayMs: { p50: number; p99: number; max: number };
}

let probeSeq = 0;
/** One request at a time per process: the request and answer files are per process. */
const probeQueue = new Map<number, Promise<unknown>>();
function probe(dir: string, pid: number, req: { gc?: boolean; profile?: 'start' | 'stop' } = {}, timeoutMs = 120_000): Promise<ProbeAnswer> {
  const prev = probeQueue.get(pid) ?? Promise.resolve();
  const next = prev.catch(() => undefined).then(() => probeOnce(dir, pid, req, timeoutMs));
  probeQueue.set(pid, next);
  return next;
}

async function probeOnce(dir: string, pid: number, req: { gc?: boolean; profile?: 'start' | 'stop' }, timeoutMs: number): Promise<ProbeAnswer> {
  const seq = ++probeSeq;
  writeFileSync(join(dir, `${pid}.req`), JSON.stringify({ seq, ...req }));
  process.kill(pid, 'SIGUSR2');
  return waitFor(`the probe of process ${pid}`, () => {
    try {
      const a = JSON.parse(readFileSync(join(dir, `${pid}.json`), 'utf8')) as ProbeAnswer;
      return a.seq === seq ? a : undefined;
    } catch {
      return undefined;
    }
  }, timeoutMs, 10);
}

interface MemoryPoint { rssBytes: number; heapUsedBytes: number; heapTotalBytes: number; externalBytes: number; gcMs: number }
async function leaderMemory(dir: string, pid: number): Promise<MemoryPoint> {
  const a = await probe(dir, pid, { gc: true });
  // RSS from /proc after the GC (the probe's own figure is the same number, read earlier).
  const rss = memoryOf(pid).rssBytes;
  return { rssBytes: rss, heapUsedBytes: a.memory.heapUsed, heapTotalBytes: a.memory.heapTotal, externalBytes: a.memory.external, gcMs: round(a.gcMs ?? 0, 1) };
}

// ------------------------------------------------------------------ /metrics

type Metrics = Map<string, number>;
async function metrics(url: string, timeoutMs = 30_000): Promise<Metrics> {
  const r = await authFetch(`${url}/metrics`, { signal: AbortSignal.timeout(timeoutMs) });
  const text = await r.text();
  const out: Metrics = new Map();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const i = line.lastIndexOf(' ');
    out.set(line.slice(0, i), Number(line.slice(i + 1)));
  }
  return out;
}
const metric = (m: Metrics | undefined, key: string) => m?.get(key) ?? 0;
const K = {
  launchedApplied: 'cairn_master_registry_commands_total{type="task_launched"}',
  updatesApplied: 'cairn_master_registry_commands_total{type="status_update"}',
  acksApplied: 'cairn_master_registry_commands_total{type="status_acknowledged"}',
  agentsRegisteredApplied: 'cairn_master_registry_commands_total{type="agent_registered"}',
  launchedCounter: 'cairn_master_tasks_launched_total',
  statusUpdatesReceived: 'cairn_master_status_updates_total',
  offers: 'cairn_master_offers_total',
  reachable: 'cairn_master_agents{state="reachable"}',
  unreachable: 'cairn_master_agents{state="unreachable"}',
  allocRuns: 'cairn_master_allocation_duration_seconds_count',
  allocSum: 'cairn_master_allocation_duration_seconds_sum',
  allocLast: 'cairn_master_allocation_last_duration_seconds',
  term: 'cairn_master_raft_term',
  isLeader: 'cairn_master_is_leader',
  commit: 'cairn_master_raft_commit_index',
  applied: 'cairn_master_raft_applied_index',
  acceptCalls: 'cairn_master_scheduler_calls_total{type="ACCEPT"}',
  ackCalls: 'cairn_master_scheduler_calls_total{type="ACKNOWLEDGE"}',
};

// ------------------------------------------------------------------ CPU over a phase

interface Proc { name: string; pid: number; mainThread?: boolean }

/** A thread's time on a CPU and waiting for one (runnable, not running), in ns (/proc/.../schedstat). */
function schedstat(pid: number, tid: number): { cpuNs: number; waitNs: number } {
  try {
    const [cpu, wait] = readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').trim().split(/\s+/).map(Number);
    return { cpuNs: cpu!, waitNs: wait! };
  } catch {
    return { cpuNs: NaN, waitNs: NaN };
  }
}

/**
 * Samples the state of the masters' main threads every 10 ms: R (running or runnable), S
 * (sleeping: waiting for I/O in the event loop), D (uninterruptible: in the kernel on the
 * disk, i.e. SQLite's fsync, which both SQLite engines (node:sqlite, better-sqlite3) do on the
 * JavaScript thread).
 */
class ThreadStates {
  private readonly counts = new Map<number, Record<string, number>>();
  private readonly timer: NodeJS.Timeout;

  constructor(pids: () => number[]) {
    this.timer = setInterval(() => {
      for (const pid of pids()) {
        let st = '?';
        try {
          const s = readFileSync(`/proc/${pid}/task/${pid}/stat`, 'utf8');
          st = s.charAt(s.lastIndexOf(')') + 2);
        } catch {
          continue;
        }
        const c = this.counts.get(pid) ?? {};
        c[st] = (c[st] ?? 0) + 1;
        this.counts.set(pid, c);
      }
    }, 10);
    this.timer.unref();
  }

  snapshot(pid: number): Record<string, number> {
    return { ...(this.counts.get(pid) ?? {}) };
  }

  stop(): void {
    clearInterval(this.timer);
  }
}

interface ProcMark { total: number; main: number; sched?: { cpuNs: number; waitNs: number }; states?: Record<string, number> }
interface CpuMark { atMs: number; procs: Map<string, ProcMark>; machine: MachineCpu; selfUs: number }

function cpuMark(procs: Proc[], states?: ThreadStates): CpuMark {
  const m = new Map<string, ProcMark>();
  for (const p of procs) {
    m.set(p.name, {
      total: cpuSeconds(p.pid),
      main: p.mainThread ? cpuSeconds(p.pid, p.pid) : NaN,
      ...(p.mainThread ? { sched: schedstat(p.pid, p.pid), ...(states ? { states: states.snapshot(p.pid) } : {}) } : {}),
    });
  }
  const u = process.cpuUsage();
  return { atMs: performance.now(), procs: m, machine: machineCpu(), selfUs: u.user + u.system };
}

/** Where a master's JavaScript thread spent a phase, as fractions of the wall time. */
interface ThreadTime { onCpu: number; waitingForCpu: number; inDiskWait: number; sleeping: number }

interface PhaseCpu {
  seconds: number;
  /** Cores used (CPU seconds / wall seconds) by each process; `…MainThread` for a master's JS thread. */
  cores: Record<string, number>;
  /** The masters' JavaScript threads: on a CPU, runnable but waiting for one, in fsync (D), idle (S). */
  threads: Record<string, ThreadTime>;
  /** The machine's busy cores, and what of that other processes used (the machine is shared). */
  machine: { cores: number; busyFraction: number; iowaitFraction: number; busyCores: number; otherProcessesCores: number };
}

function phaseCpu(a: CpuMark, b: CpuMark): PhaseCpu {
  const s = (b.atMs - a.atMs) / 1000;
  const cores: Record<string, number> = {};
  const threads: Record<string, ThreadTime> = {};
  for (const [name, x] of b.procs) {
    const y = a.procs.get(name);
    if (!y) continue;
    if (Number.isFinite(x.total - y.total)) cores[name] = round((x.total - y.total) / s, 2);
    if (Number.isFinite(x.main - y.main)) cores[`${name}MainThread`] = round((x.main - y.main) / s, 2);
    if (x.sched && y.sched && Number.isFinite(x.sched.cpuNs - y.sched.cpuNs)) {
      const onCpu = (x.sched.cpuNs - y.sched.cpuNs) / 1e9 / s;
      const waiting = (x.sched.waitNs - y.sched.waitNs) / 1e9 / s;
      const n = (k: string) => (x.states?.[k] ?? 0) - (y.states?.[k] ?? 0);
      const samples = Object.keys(x.states ?? {}).reduce((acc, k) => acc + n(k), 0);
      threads[name] = {
        onCpu: round(onCpu, 3),
        waitingForCpu: round(waiting, 3),
        inDiskWait: samples > 0 ? round(n('D') / samples, 3) : NaN,
        sleeping: samples > 0 ? round(n('S') / samples, 3) : NaN,
      };
    }
  }
  cores.benchFramework = round((b.selfUs - a.selfUs) / 1e6 / s, 2);
  const total = b.machine.total - a.machine.total;
  const busyFraction = (b.machine.busy - a.machine.busy) / total;
  const busyCores = busyFraction * cpus().length;
  const ours = Object.entries(cores).filter(([k]) => !k.endsWith('MainThread')).reduce((acc, [, v]) => acc + v, 0);
  return {
    seconds: round(s, 2),
    cores,
    threads,
    machine: { cores: cpus().length, busyFraction: round(busyFraction, 3), iowaitFraction: round((b.machine.iowait - a.machine.iowait) / total, 3), busyCores: round(busyCores, 2), otherProcessesCores: round(Math.max(0, busyCores - ours), 2) },
  };
}

const pct = (x: number) => `${Math.round(x * 100)}%`;

/** Names what limited a phase, from what was measured (no guesses). */
function limitingResource(cpu: PhaseCpu, leaderElu: number | undefined, leaderName: string): string {
  const procs = Object.entries(cpu.cores).filter(([k]) => !k.endsWith('MainThread')).sort((x, y) => y[1] - x[1]);
  const top = procs.slice(0, 5).map(([k, v]) => `${k} ${v}`).join(', ');
  const t = cpu.threads[leaderName];
  const parts: string[] = [];
  if (t) {
    parts.push(`${leaderName}'s JavaScript thread: on a CPU ${pct(t.onCpu)}, runnable but waiting for a CPU ${pct(t.waitingForCpu)}, in disk wait (fsync) ${pct(t.inDiskWait)}, idle ${pct(t.sleeping)} of the phase`);
    if (t.waitingForCpu >= 0.2) parts.push(`so the limit is the machine's CPU: the leader had work but no core ${pct(t.waitingForCpu)} of the time`);
    else if (t.onCpu >= 0.8) parts.push('so the limit is the leader\'s one thread, CPU-bound on its core');
    else if (t.inDiskWait >= 0.2) parts.push('so the limit is the disk (the leader\'s fsyncs, on its JavaScript thread)');
    if (t.sleeping >= 0.3) parts.push(`the leader also sat idle ${pct(t.sleeping)} of the time, waiting on other processes (followers' commits, agents, their reconnect back-off)`);
  }
  if (leaderElu !== undefined) parts.push(`the leader's event loop was busy ${pct(leaderElu)} of the time`);
  parts.push(`machine ${pct(cpu.machine.busyFraction)} busy on ${cpu.machine.cores} cores (cores used: ${top}; processes outside the bench ${cpu.machine.otherProcessesCores})`);
  const saturated = procs.filter(([k, v]) => v >= 0.9 && k !== leaderName).map(([k, v]) => `${k} (${v} cores)`);
  if (saturated.length > 0) parts.push(`processes near a full core: ${saturated.join(', ')}`);
  return parts.join('; ');
}

// ------------------------------------------------------------------ agent processes

class AgentProcesses {
  private readonly children: { child: ChildProcess; waiters: ((r: ScaleAgentsReport) => void)[] }[] = [];

  get pids(): number[] {
    return this.children.map((c) => c.child.pid!).filter((p) => p !== undefined);
  }

  async start(n: number): Promise<void> {
    for (let i = 0; i < n; i++) {
      const child = fork(RUN_TS, [AGENTS_FILE], { execArgv: [], stdio: ['ignore', 'inherit', 'inherit', 'ipc'], env: { ...process.env, NODE_OPTIONS: '' } });
      const entry = { child, waiters: [] as ((r: ScaleAgentsReport) => void)[] };
      this.children.push(entry);
      const ready = new Promise<void>((resolve, reject) => {
        child.once('exit', (code) => reject(new Error(`agent process ${i} exited with ${code} before it was ready`)));
        child.on('message', (m: { type: string }) => {
          if (m.type === 'ready') resolve();
          else if (m.type === 'report') entry.waiters.shift()?.(m as ScaleAgentsReport);
        });
      });
      await ready;
    }
  }

  /** Splits `agents` over the processes and starts them connecting. */
  begin(agents: number, base: Omit<ScaleAgentsStart, 'type' | 'count' | 'first'>): void {
    let first = 0;
    this.children.forEach(({ child }, i) => {
      const count = Math.floor(agents / this.children.length) + (i < agents % this.children.length ? 1 : 0);
      const msg: ScaleAgentsStart = { type: 'start', count, first, ...base };
      child.send(msg);
      first += count;
    });
  }

  async reports(sinceMs = Number.MAX_SAFE_INTEGER, times = false, timeoutMs = 60_000): Promise<ScaleAgentsReport[]> {
    return Promise.all(this.children.map(({ child, waiters }, i) => new Promise<ScaleAgentsReport>((resolve, reject) => {
      const t = setTimeout(() => reject(new Error(`agent process ${i} did not report within ${timeoutMs} ms`)), timeoutMs);
      waiters.push((r) => {
        clearTimeout(t);
        resolve(r);
      });
      child.send({ type: 'report', sinceMs, times });
    })));
  }

  finish(spreadMs: number): void {
    for (const { child } of this.children) child.send({ type: 'finish', spreadMs });
  }

  async stop(): Promise<void> {
    await Promise.all(this.children.map(({ child }) => new Promise<void>((resolve) => {
      if (child.exitCode !== null || child.signalCode !== null) return resolve();
      const t = setTimeout(() => child.kill('SIGKILL'), 5000);
      child.once('exit', () => {
        clearTimeout(t);
        resolve();
      });
      try {
        child.send({ type: 'stop' });
      } catch {
        child.kill('SIGKILL');
      }
    })));
  }

  killNow(): void {
    for (const { child } of this.children) if (child.exitCode === null) child.kill('SIGKILL');
  }
}

function sumReports(rs: ScaleAgentsReport[]) {
  const sum = (k: keyof ScaleAgentsReport) => rs.reduce((acc, r) => acc + (r[k] as number), 0);
  return {
    registeredNow: sum('registeredNow'),
    registeredSince: sum('registeredSince'),
    lastRegisteredAtMs: Math.max(...rs.map((r) => r.lastRegisteredAtMs)),
    firstRegistered: sum('firstRegistered'),
    startedAtMs: Math.min(...rs.map((r) => r.startedAtMs)),
    allFirstRegisteredAtMs: Math.max(...rs.map((r) => r.allFirstRegisteredAtMs)),
    registrations: sum('registrations'),
    disconnects: sum('disconnects'),
    launchFrames: sum('launchFrames'),
    tasksLaunched: sum('tasksLaunched'),
    updatesSent: sum('updatesSent'),
    updatesResent: sum('updatesResent'),
    acks: sum('acks'),
    pendingUpdates: sum('pendingUpdates'),
    pings: sum('pings'),
    notLeaderCloses: sum('notLeaderCloses'),
    failedAttempts: sum('failedAttempts'),
    rssBytes: sum('rssBytes'),
  };
}

// ------------------------------------------------------------------ the framework

/**
 * The framework, as a careful Mesos framework is written: it launches from offers, counts each
 * task once however often its updates come (the master re-sends unacknowledged ones), and
 * after a leader change reconciles the tasks it has heard nothing of: a launch answered 202
 * whose task_launched never committed is unknown to the new leader (TASK_LOST "unknown task")
 * and is launched again under the same id; a task that ended otherwise than FINISHED (lost
 * with its agent's connection, say) is launched again as a new attempt (`tN.1`, `tN.2`...).
 * With a window, at most that many tasks are launched and not yet RUNNING (or ended) at once;
 * offers that come meanwhile are held (offers live 10 minutes here) and used as tasks start.
 */
class Framework {
  readonly client: SchedulerClient;
  private next = 0;
  /** Attempt ids to launch again. */
  private readonly retry: string[] = [];
  /** Latest attempt per logical task (absent: attempt 0, the logical id itself). */
  private readonly attempt = new Map<string, number>();
  /** Attempts answered 202 and not heard of since, with when. */
  private readonly unheard = new Map<string, number>();
  private readonly runningSeen = new Set<string>();
  private readonly endedSeen = new Set<string>();
  /**
   * Offers while something is left to launch, SUPPRESS once an offer comes and nothing is.
   * SUPPRESS and REVIVE go on connections of their own, so a REVIVE sent just after a
   * SUPPRESS may reach the master first and leave it suppressed with tasks still to launch:
   * while offers are wanted and none has come for 10 s, REVIVE is sent again.
   */
  private readonly interest = new OfferInterest<'offers'>({ reviveAgainMs: 10_000, suppressOnOffer: true });
  private readonly offerSwitch = { revive: () => this.client.revive(), suppress: () => this.client.suppress() };
  private reconcileTimer: NodeJS.Timeout | undefined;
  /** Attempts launched (ACCEPT sent) and not yet RUNNING or ended. */
  private readonly inFlight = new Set<string>();
  /** Offers held while the window is full. */
  private held: OfferJson[] = [];
  maxInFlight = 0;
  firstAcceptAt = 0;
  allRunningAt = 0;
  allEndedAt = 0;
  acceptCalls = 0;
  acceptedTasks = 0;
  acceptErrors = 0;
  lastAcceptError = '';
  declined = 0;
  updates = 0;
  duplicateUpdates = 0;
  staleUpdates = 0;
  acksDone = 0;
  ackErrors = 0;
  acksInFlight = 0;
  resubscriptions = 0;
  reconciled = 0;
  unknownRelaunched = 0;
  relaunched = 0;
  readonly endStates = new Map<string, number>();
  /** Milliseconds from the first ACCEPT to each tenth of the tasks RUNNING. */
  readonly runningDeciles: number[] = [];
  private onAllEnded: () => void = () => undefined;
  readonly allEnded = new Promise<void>((r) => (this.onAllEnded = r));
  private onAllRunning: () => void = () => undefined;
  readonly allRunning = new Promise<void>((r) => (this.onAllRunning = r));

  constructor(masters: string[], private readonly total: number, private readonly window: number) {
    this.client = new SchedulerClient({
      masterUrl: masters.join(','),
      frameworkInfo: { user: 'bench', name: 'scale-bench', failover_timeout: 3600 },
      autoAcknowledge: false, // acknowledged below, the same call, so that completion can be counted
      maxBackoffMs: 1000,
      token: TEST_USER.secret,
    });
    this.client.on('offers', (offers) => {
      this.held.push(...offers);
      this.pump();
      this.wantOffers(offers.length);
    });
    this.client.on('rescind', (id) => {
      this.held = this.held.filter((o) => o.id.value !== id);
    });
    this.client.on('update', (s) => this.onUpdate(s));
    this.client.on('subscribed', (_id, info) => {
      // A new subscription is offered unasked: a new leader knows nothing of the old one's suppression.
      this.interest.subscribed('offers', true, performance.now());
      if (!info.resubscribed) return;
      this.resubscriptions++;
      this.held = []; // nor of the old one's offers
      this.reconcile(0);
    });
    this.reconcileTimer = setInterval(() => {
      this.reconcile(10_000);
      this.wantOffers();
    }, 10_000);
  }

  stop(): void {
    clearInterval(this.reconcileTimer);
    this.client.close();
  }

  private get toLaunch(): number {
    return this.total - this.next + this.retry.length;
  }

  /** Launches on held offers while the window has room; declines them when nothing is left to launch. */
  private pump(): void {
    while (this.held.length > 0) {
      if (this.toLaunch > 0 && this.window > 0 && this.inFlight.size >= this.window) return;
      this.onOffer(this.held.shift()!);
    }
  }

  private landed(id: string): void {
    if (this.inFlight.delete(id) && this.held.length > 0) this.pump();
  }

  private onOffer(o: OfferJson): void {
    if (this.toLaunch === 0) {
      this.declined++;
      this.client.decline([o.id.value], 3600).catch(() => undefined);
      return;
    }
    // A whole offer is used while the window has room (it may overshoot by one offer's tasks):
    // splitting offers would only send their rest back and make more offers and ACCEPTs.
    const fit = fitTasks(o.resources, Array.from({ length: Math.min(this.toLaunch, 64) }, () => TASK));
    const ids: string[] = [];
    while (ids.length < fit.placed.length && this.retry.length > 0) ids.push(this.retry.pop()!);
    while (ids.length < fit.placed.length && this.next < this.total) ids.push(`t${this.next++}`);
    if (ids.length === 0) {
      this.declined++;
      this.client.decline([o.id.value]).catch(() => undefined);
      return;
    }
    const tasks: TaskInfoJson[] = ids.map((id, i) => ({
      name: id,
      task_id: { value: id },
      agent_id: { value: o.agent_id.value },
      resources: fit.placed[i]!.resources,
      command: { value: 'true', shell: true },
    }));
    if (this.firstAcceptAt === 0) this.firstAcceptAt = performance.now();
    this.acceptCalls++;
    for (const id of ids) this.inFlight.add(id);
    this.maxInFlight = Math.max(this.maxInFlight, this.inFlight.size);
    this.client.accept([o.id.value], tasks).then(
      () => {
        this.acceptedTasks += ids.length;
        const now = performance.now();
        for (const id of ids) if (this.isCurrent(id) && !this.endedSeen.has(logicalOf(id))) this.unheard.set(id, now);
      },
      (err: Error) => {
        this.acceptErrors++;
        this.lastAcceptError = err.message;
        // A task id the master already has is not launched again (its updates will come). It
        // is asked about again with the others not heard of: the master may hold it as a launch
        // still being recorded, which it answers as unknown after 30 s and which may then never
        // be recorded (its leader lost its place); waited on without asking, it would never run.
        const taken = /task id '([^']+)' is already in use/.exec(err.message)?.[1];
        for (const id of ids) if (id !== taken) this.inFlight.delete(id);
        if (taken !== undefined && this.isCurrent(taken) && !this.endedSeen.has(logicalOf(taken))) this.unheard.set(taken, performance.now());
        this.requeue(ids.filter((id) => id !== taken));
        this.pump();
      },
    );
  }

  private requeue(ids: string[]): void {
    if (ids.length === 0) return;
    this.retry.push(...ids);
    this.wantOffers();
  }

  /** REVIVE or SUPPRESS as what is left to launch asks (after `offers` offers arrived). */
  private wantOffers(offers = 0): void {
    void this.interest.adjust('offers', this.offerSwitch, this.toLaunch > 0, performance.now(), offers);
  }

  /** Asks the leader for tasks answered 202 at least `olderThanMs` ago and not heard of since. */
  private reconcile(olderThanMs: number): void {
    if (!this.client.connected) return;
    const now = performance.now();
    const ids = [...this.unheard].filter(([, at]) => now - at >= olderThanMs).map(([id]) => id);
    for (let i = 0; i < ids.length; i += 5000) {
      const chunk = ids.slice(i, i + 5000);
      this.reconciled += chunk.length;
      this.client.reconcile(chunk.map((taskId) => ({ taskId }))).catch(() => undefined);
    }
  }

  private isCurrent(id: string): boolean {
    const logical = logicalOf(id);
    const k = this.attempt.get(logical) ?? 0;
    return id === (k === 0 ? logical : `${logical}.${k}`);
  }

  private onUpdate(s: TaskStatusJson): void {
    this.updates++;
    const id = s.task_id.value;
    const logical = logicalOf(id);
    if (s.uuid) {
      this.acksInFlight++;
      this.client.acknowledge(s).then(
        () => this.acksDone++,
        () => this.ackErrors++,
      ).finally(() => this.acksInFlight--);
    }
    if (!this.isCurrent(id) || this.endedSeen.has(logical)) {
      if (this.endedSeen.has(logical) && TERMINAL.has(s.state)) this.duplicateUpdates++;
      else this.staleUpdates++;
      return;
    }
    if (s.state === 'TASK_STAGING' || s.state === 'TASK_STARTING') return; // a reconciliation answer: on its way
    this.unheard.delete(id);
    this.landed(id);
    if (s.state === 'TASK_RUNNING') {
      if (this.runningSeen.has(logical)) this.duplicateUpdates++;
      else {
        this.runningSeen.add(logical);
        const n = this.runningSeen.size;
        if (n % Math.max(1, Math.floor(this.total / 10)) === 0 && this.runningDeciles.length < 10) this.runningDeciles.push(Math.round(performance.now() - this.firstAcceptAt));
        if (n === this.total) {
          this.allRunningAt = performance.now();
          this.onAllRunning();
        }
      }
    } else if (s.state === 'TASK_FINISHED') {
      this.endedSeen.add(logical);
      this.endStates.set(s.state, (this.endStates.get(s.state) ?? 0) + 1);
      if (this.endedSeen.size === this.total) {
        this.allEndedAt = performance.now();
        if (this.allRunningAt === 0) {
          this.allRunningAt = this.allEndedAt;
          this.onAllRunning();
        }
        this.onAllEnded();
      }
    } else if (TERMINAL.has(s.state)) {
      if (s.state === 'TASK_LOST' && s.reason === 'REASON_RECONCILIATION' && s.message === 'unknown task') {
        // Answered 202 by a leader that lost its place before the launch committed.
        this.unknownRelaunched++;
        this.requeue([id]);
        return;
      }
      const key = `${s.state}${s.reason ? `/${s.reason}` : ''}`;
      this.endStates.set(key, (this.endStates.get(key) ?? 0) + 1);
      const k = (this.attempt.get(logical) ?? 0) + 1;
      this.attempt.set(logical, k);
      this.relaunched++;
      this.requeue([`${logical}.${k}`]);
    }
  }

  get running(): number {
    return this.runningSeen.size;
  }

  get ended(): number {
    return this.endedSeen.size;
  }
}

function logicalOf(id: string): string {
  const dot = id.indexOf('.');
  return dot === -1 ? id : id.slice(0, dot);
}

// ------------------------------------------------------------------ an induced leader change

/**
 * Once `due()` holds, SIGSTOPs the leader for `ms` and continues it: its followers hear
 * nothing past the election timeout and elect another while its launches are in flight.
 * `stop()` continues a leader still stopped, so that no run leaves a master frozen.
 */
function stallLeaderOnce(due: () => boolean, leader: () => Promise<{ pid: number; name: string }>, ms: number, log: (msg: string) => void): { stop(): void } {
  let stopped: number | undefined;
  let resume: NodeJS.Timeout | undefined;
  const cont = () => {
    if (stopped === undefined) return;
    try {
      process.kill(stopped, 'SIGCONT');
    } catch {
      // gone already
    }
    log(`leader (pid ${stopped}) continued`);
    stopped = undefined;
  };
  let armed = true;
  const check = setInterval(() => {
    if (!armed || !due()) return;
    armed = false;
    clearInterval(check);
    void leader().then((l) => {
      process.kill(l.pid, 'SIGSTOP');
      stopped = l.pid;
      log(`leader ${l.name} (pid ${l.pid}) stopped for ${ms} ms`);
      resume = setTimeout(cont, ms);
    }, (err: Error) => log(`no leader to stall: ${err.message}`));
  }, 20);
  return {
    stop() {
      clearInterval(check);
      clearTimeout(resume);
      cont();
    },
  };
}

// ------------------------------------------------------------------ one run

interface Masters { procs: CairnProcess[]; urls: string[] }

async function startMasters(cleanup: Cleanup, base: string, probeDir: string): Promise<Masters> {
  const secretFile = join(base, 'secret');
  writeFileSync(secretFile, SECRET);
  const ports = [await freePort(), await freePort(), await freePort()];
  const urls = ports.map((p) => `http://127.0.0.1:${p}`);
  const peers = urls.map((u, i) => `${i + 1}=${u}`).join(',');
  // Errors only: under overload the masters warn once per failed proposal, and writing those
  // lines (pino, synchronously, to a pipe this process reads) would be a load of its own.
  const env = { NODE_OPTIONS: `--require ${PROBE_FILE}`, CAIRN_SCALE_PROBE_DIR: probeDir, CAIRN_LOG_LEVEL: 'error' };
  const procs = urls.map((url, i) => cleanup.track(startCairn(
    ['master', '--id', String(i + 1), '--peers', peers, '--secret-file', secretFile, '--port', String(ports[i]), '--host', '127.0.0.1', '--data-dir', join(base, `m${i + 1}`), ...MASTER_FLAGS],
    url,
    env,
  )));
  await Promise.all(procs.map((p) => p.waitHealthy(60_000)));
  return { procs, urls };
}

async function timed<T>(what: string, timeoutS: number, p: Promise<T>): Promise<T> {
  let t: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([p, new Promise<never>((_, reject) => (t = setTimeout(() => reject(new Error(`${what}: not done within ${timeoutS} s`)), timeoutS * 1000)))]);
  } finally {
    clearTimeout(t);
  }
}

/** Summarises a CPU profile: the functions with the most self time. */
function profileSummary(file: string, top = 15): { selfPercent: number; fn: string }[] {
  const p = JSON.parse(readFileSync(file, 'utf8')) as { nodes: { id: number; callFrame: { functionName: string; url: string; lineNumber: number } }[]; samples: number[] };
  const counts = new Map<number, number>();
  for (const s of p.samples) counts.set(s, (counts.get(s) ?? 0) + 1);
  const byFn = new Map<string, number>();
  for (const n of p.nodes) {
    const c = counts.get(n.id) ?? 0;
    if (c === 0) continue;
    const url = n.callFrame.url.replace(/^.*\/(node_modules\/|work\/main\/)/, '');
    const key = `${n.callFrame.functionName || '(anonymous)'} ${url}:${n.callFrame.lineNumber + 1}`;
    byFn.set(key, (byFn.get(key) ?? 0) + c);
  }
  const total = p.samples.length;
  return [...byFn].sort((a, b) => b[1] - a[1]).slice(0, top).map(([fn, c]) => ({ selfPercent: round((100 * c) / total, 1), fn }));
}

interface Leader { idx: number; pid: number; url: string; name: string }

/** Which master leads, and in which term, as the first master that answers says. */
async function groupView(urls: string[]): Promise<{ leader: number; term: number } | undefined> {
  for (const url of urls) {
    try {
      const r = await authFetch(`${url}/api/v1/masters`, { signal: AbortSignal.timeout(2000) });
      const v = (await r.json()) as { leader: number; term: number };
      if (typeof v.term === 'number') return { leader: v.leader, term: v.term };
    } catch {
      // down or busy: ask the next
    }
  }
  return undefined;
}

/** A master's role as its /health says (cheap at any size). */
async function role(url: string): Promise<string> {
  const r = await fetch(`${url}/health`, { signal: AbortSignal.timeout(2000) });
  return ((await r.json()) as { role: string }).role;
}

const eluBetween = (a: ProbeAnswer['elu'], b: ProbeAnswer['elu']) => (b.activeMs - a.activeMs) / (b.activeMs + b.idleMs - a.activeMs - a.idleMs);

async function oneRun(cfg: Config, runIndex: number, registerKill: (pids: () => number[], dirs: string[]) => void): Promise<Record<string, any>> {
  const cleanup = new Cleanup();
  const agentProcs = new AgentProcesses();
  let framework: Framework | undefined;
  const base = cleanup.dir('cairn-scale-');
  const probeDir = join(base, 'probe');
  mkdirSync(probeDir);
  let masters: Masters | undefined;
  let states: ThreadStates | undefined;
  let watch: NodeJS.Timeout | undefined;
  /** The master whose CPU profile is being taken, to summarise it even if the phase fails. */
  let profiling: number | undefined;
  registerKill(() => [...(masters?.procs.map((p) => p.child.pid!) ?? []), ...agentProcs.pids], [base]);
  const log = (msg: string) => process.stderr.write(`[scale run ${runIndex + 1}] ${msg}\n`);
  const result: Record<string, any> = { run: runIndex + 1 };
  let phase = 'start';
  try {
    masters = await startMasters(cleanup, base, probeDir);
    const m = masters;
    const alive = (i: number) => m.procs[i]!.child.exitCode === null && m.procs[i]!.child.signalCode === null;
    states = new ThreadStates(() => m.procs.filter((_, i) => alive(i)).map((p) => p.child.pid!));
    // Which master leads, asked of /health (its role): the harness's waitForLeader reads
    // /api/v1/state, tens of megabytes at this size, every 50 ms — a load of its own.
    const leaderNow = (timeoutMs = 120_000): Promise<Leader> => waitFor('a leader', async () => {
      for (let idx = 0; idx < m.procs.length; idx++) {
        if (!alive(idx)) continue;
        if ((await role(m.urls[idx]!).catch(() => '')) === 'leader') return { idx, pid: m.procs[idx]!.child.pid!, url: m.urls[idx]!, name: `master${idx + 1}` };
      }
      return undefined;
    }, timeoutMs, 50);
    const procList = (): Proc[] => [
      ...m.procs.map((p, i) => ({ name: `master${i + 1}`, pid: p.child.pid!, mainThread: true })).filter((_, i) => alive(i)),
      ...agentProcs.pids.map((pid, i) => ({ name: `agents${i + 1}`, pid })),
    ];
    /** Every master's memory after a full GC (the leader's deltas are what the figures use). */
    const allMemory = async (): Promise<(MemoryPoint | undefined)[]> => {
      const out: (MemoryPoint | undefined)[] = [];
      for (let i = 0; i < 3; i++) out.push(alive(i) ? await leaderMemory(probeDir, m.procs[i]!.child.pid!) : undefined);
      return out;
    };

    // Leader changes, whenever they happen: under load a leader's loop can stall past the
    // 1 s election timeout (there is no flag to raise it) and the followers elect another.
    const runT0 = performance.now();
    const leaderChanges: { phase: string; atS: number; term: number; leader: number }[] = [];
    let view: { leader: number; term: number } | undefined;
    let watching = false;
    watch = setInterval(() => {
      if (watching) return;
      watching = true;
      groupView(m.urls.filter((_, i) => alive(i))).then((v) => {
        if (v && v.leader !== 0 && (!view || v.term !== view.term || v.leader !== view.leader)) {
          if (view) {
            leaderChanges.push({ phase, atS: round((performance.now() - runT0) / 1000, 1), term: v.term, leader: v.leader });
            log(`the leader changed (${phase}): master ${v.leader} leads in term ${v.term}`);
          }
          view = v;
        }
      }).finally(() => (watching = false));
    }, 1000);
    const changesIn = (p: string) => leaderChanges.filter((c) => c.phase === p).length;
    result.leaderChanges = leaderChanges;

    // ---- registration
    phase = 'registration';
    const L0 = await leaderNow(30_000);
    view = await groupView(m.urls);
    log(`leader is master ${L0.idx + 1} (pid ${L0.pid})`);
    await sleep(1000);
    const memBefore = await allMemory();
    await agentProcs.start(cfg.procs);
    const slots = Math.ceil(cfg.tasks / cfg.agents);
    const resources = `cpus:${(slots * TASK.cpus).toFixed(1)};mem:${slots * TASK.mem};disk:1000`;
    const concurrency = Math.max(1, Math.round(cfg.connecting / cfg.procs));
    const mReg0 = await metrics(L0.url);
    const cpuReg0 = cpuMark(procList(), states);
    const eluReg0 = (await probe(probeDir, L0.pid, cfg.profile ? { profile: 'start' } : {})).elu;
    const regT0 = performance.now();
    agentProcs.begin(cfg.agents, { masters: m.urls, firstUrl: L0.url, resources, concurrency, finishAtOnce: cfg.finishAtOnce, authorization: authorizationHeader(TEST_AGENT), ...AGENT_LINK });
    let regReport = sumReports(await agentProcs.reports());
    let lastLog = Date.now();
    while (regReport.registeredNow < cfg.agents) {
      if (performance.now() - regT0 > cfg.timeoutS * 1000) throw new Error(`${regReport.registeredNow} of ${cfg.agents} agents registered (${regReport.firstRegistered} at least once) within ${cfg.timeoutS} s`);
      await sleep(200);
      regReport = sumReports(await agentProcs.reports());
      if (Date.now() - lastLog >= 10_000) {
        lastLog = Date.now();
        log(`registered ${regReport.registeredNow} (${regReport.firstRegistered} at least once), connections lost ${regReport.disconnects}, attempts failed ${regReport.failedAttempts}, sent on by followers ${regReport.notLeaderCloses}`);
      }
    }
    const allRegisteredMs = performance.now() - regT0;
    const cpuReg1 = cpuMark(procList(), states);
    const eluReg1 = (await probe(probeDir, L0.pid, cfg.profile ? { profile: 'stop' } : {}).catch(() => undefined))?.elu;
    const regProfile = cfg.profile ? (() => {
      try {
        return profileSummary(join(probeDir, `${L0.pid}.cpuprofile`));
      } catch {
        return undefined;
      }
    })() : undefined;
    const L1 = await leaderNow();
    const mReg1 = await waitFor('the leader to count every agent reachable', async () => {
      const mm = await metrics(L1.url);
      return metric(mm, K.reachable) >= cfg.agents ? mm : undefined;
    }, 120_000, 500);
    const registrationMs = changesIn('registration') === 0 ? regReport.allFirstRegisteredAtMs - regReport.startedAtMs : allRegisteredMs;
    log(`${cfg.agents} agents registered in ${Math.round(registrationMs)} ms`);
    const regCpu = phaseCpu(cpuReg0, cpuReg1);
    const regElu = eluReg1 ? eluBetween(eluReg0, eluReg1) : undefined;
    const allocReg = { runs: metric(mReg1, K.allocRuns) - (L1.idx === L0.idx ? metric(mReg0, K.allocRuns) : 0), seconds: metric(mReg1, K.allocSum) - (L1.idx === L0.idx ? metric(mReg0, K.allocSum) : 0) };
    result.registration = {
      agents: cfg.agents,
      agentProcesses: cfg.procs,
      connectingAtOnce: concurrency * cfg.procs,
      ms: Math.round(registrationMs),
      agentsPerSecond: Math.round(cfg.agents / (registrationMs / 1000)),
      leader: L0.idx + 1,
      leaderChanges: changesIn('registration'),
      ...(changesIn('registration') > 0 ? { caveat: `the leader changed during the registration; ms is until every agent was registered at once (with master ${L1.idx + 1})` } : {}),
      connectionsLost: regReport.disconnects,
      failedAttempts: regReport.failedAttempts,
      redirectsFromFollowers: regReport.notLeaderCloses,
      agentRegisteredCommandsApplied: metric(mReg1, K.agentsRegisteredApplied) - metric(mReg0, K.agentsRegisteredApplied),
      allocation: { cycles: allocReg.runs, meanMs: round((allocReg.seconds * 1000) / Math.max(1, allocReg.runs), 3) },
      ...(regElu !== undefined ? { leaderEventLoopUtilization: round(regElu, 3) } : {}),
      cpu: regCpu,
      limitedBy: limitingResource(regCpu, regElu, L0.name),
      ...(regProfile ? { leaderProfileTopSelf: regProfile } : {}),
    };
    await sleep(2000); // let pings and allocation settle
    const memAgents = await allMemory();
    const mib = (x: number | undefined) => (x === undefined ? '?' : (x / 2 ** 20).toFixed(1));
    log(`leader memory (RSS/heap MiB): before agents ${mib(memBefore[L1.idx]?.rssBytes)}/${mib(memBefore[L1.idx]?.heapUsedBytes)}, after ${mib(memAgents[L1.idx]?.rssBytes)}/${mib(memAgents[L1.idx]?.heapUsedBytes)}`);
    const leaderMem = (arr: (MemoryPoint | undefined)[], idx: number) => arr[idx];
    result.memory = {
      leader: L1.idx + 1,
      leaderBeforeAgents: leaderMem(memBefore, L1.idx),
      leaderAfterAgents: leaderMem(memAgents, L1.idx),
      rssBytesPerAgent: Math.round((memAgents[L1.idx]!.rssBytes - memBefore[L1.idx]!.rssBytes) / cfg.agents),
      heapBytesPerAgent: Math.round((memAgents[L1.idx]!.heapUsedBytes - memBefore[L1.idx]!.heapUsedBytes) / cfg.agents),
      followersRssBytesPerAgent: [0, 1, 2].filter((i) => i !== L1.idx && memAgents[i] && memBefore[i]).map((i) => Math.round((memAgents[i]!.rssBytes - memBefore[i]!.rssBytes) / cfg.agents)),
    };

    // ---- launch
    phase = 'launch';
    const L2 = await leaderNow();
    const mLaunch0 = await metrics(L2.url);
    const eluLaunch0 = (await probe(probeDir, L2.pid, cfg.profile ? { profile: 'start' } : {})).elu;
    const cpuLaunch0 = cpuMark(procList(), states);
    framework = new Framework(m.urls, cfg.tasks, cfg.window);
    const fw = framework;
    const subscribeAt = performance.now();
    await fw.client.subscribe();
    // Once a second: the leader's applied task_launched count (committed through Raft), its loop.
    const samples: { tMs: number; launchedApplied: number; updatesApplied: number; running: number; ended: number; elu: number; loopDelayMaxMs: number; metricsMs: number; term: number; leads: number }[] = [];
    // Kept in the result as they come, so that a launch that fails still shows its course.
    result.launchSamplesSoFar = samples;
    profiling = cfg.profile ? L2.pid : undefined;
    let sampling = true;
    let sampled = L2;
    let lastElu = eluLaunch0;
    const sampler = (async () => {
      while (sampling) {
        await sleep(1000);
        if (!sampling) break;
        try {
          const t = performance.now();
          const mm = await metrics(sampled.url);
          const metricsMs = performance.now() - t;
          const sinceAccept = Math.round(t - (fw.firstAcceptAt || t));
          if (metric(mm, K.isLeader) !== 1) {
            sampled = await leaderNow();
            lastElu = (await probe(probeDir, sampled.pid, {}, 10_000)).elu;
            continue;
          }
          const p = await probe(probeDir, sampled.pid, {}, 10_000);
          const elu = eluBetween(lastElu, p.elu);
          lastElu = p.elu;
          samples.push({ tMs: sinceAccept, launchedApplied: metric(mm, K.launchedApplied) - metric(mLaunch0, K.launchedApplied), updatesApplied: metric(mm, K.updatesApplied) - metric(mLaunch0, K.updatesApplied), running: fw.running, ended: fw.ended, elu: round(elu, 3), loopDelayMaxMs: round(p.loopDelayMs.max, 1), metricsMs: Math.round(metricsMs), term: metric(mm, K.term), leads: sampled.idx + 1 });
        } catch (err) {
          log(`sample failed: ${(err as Error).message}`);
        }
      }
    })();
    const progress = setInterval(() => log(`running ${fw.running}, ended ${fw.ended}, accepted ${fw.acceptedTasks}, acks ${fw.acksDone}`), 10_000);
    const stall = cfg.leaderStallAt > 0 ? stallLeaderOnce(() => fw.acceptedTasks >= cfg.leaderStallAt, () => leaderNow(), cfg.leaderStallMs, log) : undefined;
    try {
      await timed('the launch', cfg.timeoutS, cfg.finishAtOnce ? fw.allEnded : fw.allRunning);
    } catch (err) {
      const a = await agentProcs.reports().then(sumReports).catch((e: Error) => e.message);
      log(`stuck: framework ${JSON.stringify({ running: fw.running, ended: fw.ended, accepted: fw.acceptedTasks, acceptErrors: fw.acceptErrors, lastAcceptError: fw.lastAcceptError, updates: fw.updates, acks: fw.acksDone, ackErrors: fw.ackErrors, connected: fw.client.connected })}`);
      log(`stuck: agents ${JSON.stringify(a)}`);
      throw err;
    } finally {
      clearInterval(progress);
      stall?.stop();
      sampling = false;
    }
    const cpuLaunch1 = cpuMark(procList(), states);
    const eluLaunch1 = (await probe(probeDir, L2.pid, cfg.profile ? { profile: 'stop' } : {}).catch(() => undefined))?.elu;
    profiling = undefined;
    delete result.launchSamplesSoFar;
    await sampler;
    const L3 = await leaderNow();
    const launchChanged = L3.idx !== L2.idx || changesIn('launch') > 0;
    const mLaunch1 = await metrics(L3.url);
    const launchS = (fw.allRunningAt - fw.firstAcceptAt) / 1000;
    const endedS = (fw.allEndedAt - fw.firstAcceptAt) / 1000;
    log(`${cfg.tasks} tasks RUNNING in ${launchS.toFixed(2)} s${cfg.finishAtOnce ? `, all ended in ${endedS.toFixed(2)} s` : ''}`);
    // When the applied task_launched count reached every task (interpolated between samples).
    let appliedAllMs = NaN;
    for (let i = 0; i < samples.length; i++) {
      const x = samples[i]!;
      if (x.launchedApplied >= cfg.tasks) {
        const prev = samples[i - 1];
        appliedAllMs = prev ? prev.tMs + ((cfg.tasks - prev.launchedApplied) / (x.launchedApplied - prev.launchedApplied)) * (x.tMs - prev.tMs) : x.tMs;
        break;
      }
    }
    // Past the last sample: every launch was applied by the time its task was RUNNING.
    if (!Number.isFinite(appliedAllMs)) appliedAllMs = fw.allRunningAt - fw.firstAcceptAt;
    let peakPerS = 0;
    for (let i = 1; i < samples.length; i++) {
      const d = (samples[i]!.launchedApplied - samples[i - 1]!.launchedApplied) / ((samples[i]!.tMs - samples[i - 1]!.tMs) / 1000);
      peakPerS = Math.max(peakPerS, d);
    }
    const launchCpu = phaseCpu(cpuLaunch0, cpuLaunch1);
    const launchElu = eluLaunch1 ? eluBetween(eluLaunch0, eluLaunch1) : undefined;
    let launchProfile: unknown;
    if (cfg.profile) {
      try {
        launchProfile = profileSummary(join(probeDir, `${L2.pid}.cpuprofile`));
      } catch (err) {
        launchProfile = `no profile: ${(err as Error).message}`;
      }
    }
    // The leader's own counters start at zero on each new leader: after a change, those of
    // the leader at the end (since it took over).
    const leaderDelta = (mm: Metrics, key: string) => metric(mm, key) - (launchChanged ? 0 : metric(mLaunch0, key));
    // Everything acknowledged and replicated before the memory reading and the failover: every
    // ACK call answered, the leader's log quiet (commit index unchanged for a second) and applied.
    const settle = async (url: string): Promise<Metrics> => {
      await waitFor('every acknowledgement answered', () => (fw.acksInFlight === 0 ? true : undefined), 600_000, 100);
      let last = await metrics(url);
      await waitFor('the leader\'s log to settle', async () => {
        await sleep(1000);
        const mm = await metrics(url);
        const settled = metric(mm, K.commit) === metric(last, K.commit) && metric(mm, K.applied) === metric(mm, K.commit);
        last = mm;
        return settled ? true : undefined;
      }, 600_000, 0);
      return last;
    };
    const quiet = await settle(L3.url);
    const agentsAfterLaunch = sumReports(await agentProcs.reports());
    const fwAtLaunchEnd = {
      window: cfg.window,
      maxTasksInFlight: fw.maxInFlight,
      acceptCalls: fw.acceptCalls,
      acceptErrors: fw.acceptErrors,
      ...(fw.lastAcceptError ? { lastAcceptError: fw.lastAcceptError } : {}),
      declined: fw.declined,
      updates: fw.updates,
      duplicateUpdates: fw.duplicateUpdates,
      staleUpdates: fw.staleUpdates,
      resubscriptions: fw.resubscriptions,
      reconciledTasks: fw.reconciled,
      relaunchedUnknown: fw.unknownRelaunched,
      relaunchedAfterLoss: fw.relaunched,
      acks: fw.acksDone,
      ackErrors: fw.ackErrors,
      endStates: Object.fromEntries(fw.endStates),
    };
    const allocLaunch = { runs: leaderDelta(mLaunch1, K.allocRuns), seconds: leaderDelta(mLaunch1, K.allocSum) };
    result.launch = {
      tasks: cfg.tasks,
      tasksPerAgent: slots,
      agentResources: resources,
      leader: L2.idx + 1,
      leaderChanges: changesIn('launch'),
      subscribeMs: Math.round(fw.firstAcceptAt - subscribeAt),
      firstAcceptToAllRunningS: round(launchS, 3),
      tasksPerSecond: Math.round(cfg.tasks / launchS),
      ...(cfg.finishAtOnce ? { firstAcceptToAllFinishedS: round(endedS, 3), finishedPerSecond: Math.round(cfg.tasks / endedS) } : {}),
      runningDecilesMs: fw.runningDeciles,
      master: {
        taskLaunchedCommittedAllAtS: round(appliedAllMs / 1000, 2),
        taskLaunchedCommittedPerSecond: Math.round(cfg.tasks / (appliedAllMs / 1000)),
        taskLaunchedCommittedPeakPerSecond: Math.round(peakPerS),
        tasksLaunchedTotal: leaderDelta(mLaunch1, K.launchedCounter),
        taskLaunchedApplied: metric(mLaunch1, K.launchedApplied) - metric(mLaunch0, K.launchedApplied),
        statusUpdatesReceived: leaderDelta(mLaunch1, K.statusUpdatesReceived),
        statusUpdatesApplied: metric(mLaunch1, K.updatesApplied) - metric(mLaunch0, K.updatesApplied),
        acceptCalls: leaderDelta(mLaunch1, K.acceptCalls),
        acknowledgeCalls: leaderDelta(quiet, K.ackCalls),
        acknowledgementsApplied: metric(quiet, K.acksApplied) - metric(mLaunch0, K.acksApplied),
        raftEntriesCommitted: metric(quiet, K.commit) - metric(mLaunch0, K.commit),
        offersMade: leaderDelta(mLaunch1, K.offers),
        ...(launchChanged ? { note: 'the leader changed: the leader-only counters (launched, received, calls, offers, allocation) are the last leader\'s since it took over' } : {}),
      },
      allocation: {
        cycles: allocLaunch.runs,
        meanMs: round((allocLaunch.seconds * 1000) / Math.max(1, allocLaunch.runs), 3),
        lastMs: round(metric(mLaunch1, K.allocLast) * 1000, 3),
      },
      framework: fwAtLaunchEnd,
      agents: {
        launchFrames: agentsAfterLaunch.launchFrames,
        tasksLaunched: agentsAfterLaunch.tasksLaunched,
        updatesSent: agentsAfterLaunch.updatesSent,
        updatesResent: agentsAfterLaunch.updatesResent,
        connectionsLost: agentsAfterLaunch.disconnects - regReport.disconnects,
        pendingUpdates: agentsAfterLaunch.pendingUpdates,
      },
      ...(launchElu !== undefined ? { leaderEventLoopUtilization: round(launchElu, 3) } : {}),
      cpu: launchCpu,
      limitedBy: limitingResource(launchCpu, launchElu, L2.name),
      samples: samples.map((x) => [x.tMs, x.launchedApplied, x.updatesApplied, x.running, x.ended, x.elu, x.loopDelayMaxMs, x.metricsMs, x.term, x.leads]),
      samplesColumns: ['msSinceFirstAccept', 'taskLaunchedApplied', 'statusUpdatesApplied', 'runningAtFramework', 'endedAtFramework', 'leaderEventLoopUtilization', 'leaderLoopDelayMaxMs', 'metricsRequestMs', 'raftTerm', 'leader'],
      ...(launchProfile ? { leaderProfileTopSelf: launchProfile } : {}),
    };
    await sleep(1000);
    const memTasks = await allMemory();
    // The registry keeps every active task and the latest 10,000 ended ones (MAX_COMPLETED_TASKS).
    const mTasks = await metrics(L3.url);
    const retainedTasks = [...mTasks].filter(([k]) => k.startsWith('cairn_master_tasks{')).reduce((acc, [, v]) => acc + v, 0);
    log(`leader memory (RSS/heap MiB) with ${retainedTasks} tasks in the registry: ${mib(memTasks[L3.idx]?.rssBytes)}/${mib(memTasks[L3.idx]?.heapUsedBytes)}`);
    Object.assign(result.memory, {
      leaderAfterTasks: memTasks[L3.idx],
      tasksRetainedByRegistry: retainedTasks,
      rssBytesPerRetainedTask: Math.round((memTasks[L3.idx]!.rssBytes - memAgents[L3.idx]!.rssBytes) / retainedTasks),
      heapBytesPerRetainedTask: Math.round((memTasks[L3.idx]!.heapUsedBytes - memAgents[L3.idx]!.heapUsedBytes) / retainedTasks),
      ...(L3.idx !== L1.idx ? { caveat: `master ${L3.idx + 1} led after the launch, master ${L1.idx + 1} after the registration: each figure is the then leader's own difference` } : {}),
    });

    // ---- with SCALE_FINISH=later: every task RUNNING now; the agents finish them all at once
    if (!cfg.finishAtOnce) {
      phase = 'finish';
      const cpuF0 = cpuMark(procList(), states);
      const tF = performance.now();
      agentProcs.finish(cfg.finishSpreadS * 1000);
      await timed('the finish', cfg.timeoutS, fw.allEnded);
      const seconds = (fw.allEndedAt - tF) / 1000;
      const cpuF1 = cpuMark(procList(), states);
      const L4 = await leaderNow();
      const mF1 = await settle(L4.url);
      await sleep(1000);
      const mem = await allMemory();
      const cpu = phaseCpu(cpuF0, cpuF1);
      log(`${cfg.tasks} tasks FINISHED in ${seconds.toFixed(2)} s`);
      result.finish = {
        toAllFinishedS: round(seconds, 3),
        finishedPerSecond: Math.round(cfg.tasks / seconds),
        leaderChanges: changesIn('finish'),
        statusUpdatesApplied: metric(mF1, K.updatesApplied) - metric(quiet, K.updatesApplied),
        acknowledgementsApplied: metric(mF1, K.acksApplied) - metric(quiet, K.acksApplied),
        leaderAfterFinish: mem[L4.idx],
        cpu,
        limitedBy: limitingResource(cpu, undefined, L4.name),
      };
    }
    const agentsBeforeFailover = sumReports(await agentProcs.reports());

    // ---- failover
    phase = 'failover';
    const K0 = await leaderNow();
    const survivors = [0, 1, 2].filter((i) => i !== K0.idx);
    const survivorProcs = (): Proc[] => [
      ...survivors.map((i) => ({ name: `master${i + 1}`, pid: m.procs[i]!.child.pid!, mainThread: true })),
      ...agentProcs.pids.map((pid, i) => ({ name: `agents${i + 1}`, pid })),
    ];
    let resubscribedMs = NaN;
    const t0 = performance.now();
    fw.client.once('subscribed', () => (resubscribedMs = performance.now() - t0));
    const cpuFail0 = cpuMark(survivorProcs(), states);
    const t0Wall = Date.now();
    await m.procs[K0.idx]!.kill('SIGKILL');
    const killedMs = performance.now() - t0;
    log(`leader (master ${K0.idx + 1}) SIGKILLed; waiting for a new leader and ${cfg.agents} agents`);
    const elected = waitFor('a new leader', async () => {
      for (const i of survivors) if ((await role(m.urls[i]!).catch(() => '')) === 'leader') return { idx: i, ms: performance.now() - t0 };
      return undefined;
    }, 120_000, 10);
    const deadline = cfg.timeoutS * 1000;
    const agentsBack = (async () => {
      let lastLogAt = performance.now();
      for (;;) {
        const r = sumReports(await agentProcs.reports(t0Wall));
        if (r.registeredSince >= cfg.agents) return { ms: r.lastRegisteredAtMs - t0Wall, report: r };
        if (performance.now() - t0 > deadline) throw new Error(`${r.registeredSince} of ${cfg.agents} agents registered again within ${cfg.timeoutS} s`);
        if (performance.now() - lastLogAt > 10_000) {
          lastLogAt = performance.now();
          log(`registered again ${r.registeredSince}, attempts failed ${r.failedAttempts - agentsBeforeFailover.failedAttempts}`);
        }
        await sleep(25);
      }
    })();
    const callWorks = (async () => {
      let attempts = 0;
      let lastError = '';
      for (;;) {
        if (fw.client.connected) {
          attempts++;
          try {
            await fw.client.suppress();
            return { ms: performance.now() - t0, attempts, lastError };
          } catch (err) {
            lastError = (err as Error).message;
          }
        }
        if (performance.now() - t0 > deadline) throw new Error(`no scheduler call taken within ${cfg.timeoutS} s (${lastError})`);
        await sleep(10);
      }
    })();
    const newLeader = await elected;
    const newLeaderUrl = m.urls[newLeader.idx]!;
    const newLeaderPid = m.procs[newLeader.idx]!.child.pid!;
    log(`master ${newLeader.idx + 1} leads after ${Math.round(newLeader.ms)} ms`);
    if (cfg.profile) await probe(probeDir, newLeaderPid, { profile: 'start' }).catch(() => undefined);
    // The issue's way of seeing the agents back: the new leader's /api/v1/state, one request
    // at a time with a pause between; each answer holds every agent and every task, so asking
    // costs the new leader (the answers' sizes and times are printed). The agents' own
    // registration times are the figure; this confirms it from the master's side.
    const statePolls: { atMs: number; tookMs: number; bytes: number; connected: number }[] = [];
    const statePoll = cfg.statePollMs > 0 ? (async () => {
      for (;;) {
        const started = performance.now();
        try {
          const r = await authFetch(`${newLeaderUrl}/api/v1/state`, { signal: AbortSignal.timeout(60_000) });
          const text = await r.text();
          const st = JSON.parse(text) as { agents: { connected: boolean }[] };
          const connected = st.agents.filter((x) => x.connected).length;
          statePolls.push({ atMs: Math.round(started - t0), tookMs: Math.round(performance.now() - started), bytes: text.length, connected });
          if (connected >= cfg.agents) return { ms: started - t0, tookMs: performance.now() - started };
        } catch {
          // the new leader is busy or not serving yet
        }
        if (performance.now() - t0 > deadline) throw new Error('the new leader\'s state never showed every agent connected');
        await sleep(cfg.statePollMs);
      }
    })() : Promise.resolve(undefined);
    const [back, call, state] = await Promise.all([agentsBack, callWorks, statePoll]);
    const cpuFail1 = cpuMark(survivorProcs(), states);
    let failoverProfile: unknown;
    if (cfg.profile) {
      try {
        await probe(probeDir, newLeaderPid, { profile: 'stop' });
        failoverProfile = profileSummary(join(probeDir, `${newLeaderPid}.cpuprofile`));
      } catch (err) {
        failoverProfile = `no profile: ${(err as Error).message}`;
      }
    }
    const backTimes = (await agentProcs.reports(t0Wall, true)).flatMap((r) => r.registeredAtMsList ?? []).map((t) => t - t0Wall).sort((x, y) => x - y);
    const pctile = (q: number) => backTimes[Math.min(backTimes.length - 1, Math.floor(q * backTimes.length))] ?? NaN;
    log(`agents back after ${back.ms} ms, scheduler call after ${Math.round(call.ms)} ms`);
    const mFail = await metrics(newLeaderUrl);
    const memNewLeader = await leaderMemory(probeDir, newLeaderPid);
    const failCpu = phaseCpu(cpuFail0, cpuFail1);
    result.failover = {
      killed: K0.idx + 1,
      sigkillReturnedMs: round(killedMs, 1),
      newLeaderMs: Math.round(newLeader.ms),
      newLeader: newLeader.idx + 1,
      allAgentsReregisteredMs: back.ms,
      agentsReregisteredPercentilesMs: { p10: pctile(0.1), p50: pctile(0.5), p90: pctile(0.9), p99: pctile(0.99) },
      frameworkResubscribedMs: Math.round(resubscribedMs),
      schedulerCallTakenMs: Math.round(call.ms),
      schedulerCallAttempts: call.attempts,
      ...(state ? { stateShowedAllConnectedMs: Math.round(state.ms), statePolls: statePolls.map((x) => [x.atMs, x.tookMs, x.bytes, x.connected]), statePollsColumns: ['msSinceKill', 'tookMs', 'bytes', 'agentsConnected'] } : {}),
      agentReconnects: back.report.registrations - agentsBeforeFailover.registrations,
      redirectsFromFollowers: back.report.notLeaderCloses - agentsBeforeFailover.notLeaderCloses,
      failedAttempts: back.report.failedAttempts - agentsBeforeFailover.failedAttempts,
      leaderChangesAfterTheKill: Math.max(0, changesIn('failover') - 1),
      newLeaderAgentsReachable: metric(mFail, K.reachable),
      newLeaderAgentsUnreachable: metric(mFail, K.unreachable),
      newLeaderAllocation: { cycles: metric(mFail, K.allocRuns), meanMs: round((metric(mFail, K.allocSum) * 1000) / Math.max(1, metric(mFail, K.allocRuns)), 3) },
      newLeaderMemory: memNewLeader,
      ms: Math.round(Math.max(newLeader.ms, back.ms)),
      cpu: failCpu,
      limitedBy: limitingResource(failCpu, undefined, `master${newLeader.idx + 1}`),
      ...(failoverProfile ? { newLeaderProfileTopSelf: failoverProfile } : {}),
    };
    phase = 'done';
  } catch (err) {
    result.error = { phase, message: (err as Error).message };
    log(`failed in the ${phase}: ${(err as Error).message}`);
    if (profiling !== undefined) {
      try {
        await probe(probeDir, profiling, { profile: 'stop' }, 30_000);
        result.error.leaderProfileTopSelf = profileSummary(join(probeDir, `${profiling}.cpuprofile`));
      } catch {
        // the process is gone or does not answer
      }
    }
    if (result.launchSamplesSoFar) {
      result.launchSamplesColumns = ['msSinceFirstAccept', 'taskLaunchedApplied', 'statusUpdatesApplied', 'runningAtFramework', 'endedAtFramework', 'leaderEventLoopUtilization', 'leaderLoopDelayMaxMs', 'metricsRequestMs', 'raftTerm', 'leader'];
      result.launchSamplesSoFar = (result.launchSamplesSoFar as any[]).map((x) => [x.tMs, x.launchedApplied, x.updatesApplied, x.running, x.ended, x.elu, x.loopDelayMaxMs, x.metricsMs, x.term, x.leads]);
    }
    for (const [i, p] of (masters?.procs ?? []).entries()) log(`master ${i + 1} output tail: ${p.output.slice(-2000)}`);
  } finally {
    clearInterval(watch);
    states?.stop();
    framework?.stop();
    await agentProcs.stop().catch(() => agentProcs.killNow());
    await cleanup.run();
  }
  return result;
}

export async function run(): Promise<unknown> {
  const cfg = config();
  // Whatever happens (an error, Ctrl-C), no master or agent process and no data dir is left.
  let pids: () => number[] = () => [];
  let dirs: string[] = [];
  const killAll = () => {
    for (const pid of pids()) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // gone
      }
    }
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  };
  const onSignal = (sig: NodeJS.Signals) => {
    killAll();
    process.exit(sig === 'SIGINT' ? 130 : 143);
  };
  process.on('exit', killAll);
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  const runs: Record<string, any>[] = [];
  try {
    for (let i = 0; i < cfg.runs; i++) {
      runs.push(await oneRun(cfg, i, (p, d) => {
        pids = p;
        dirs = d;
      }));
    }
  } finally {
    process.off('exit', killAll);
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
  const med = (f: (r: Record<string, any>) => number | undefined) => median(runs.map((r) => {
    try {
      return f(r) ?? NaN;
    } catch {
      return NaN;
    }
  }));
  const tasksPerSecond = med((r) => r.launch.tasksPerSecond);
  const failoverMs = med((r) => r.failover.ms);
  const rssPerAgent = med((r) => r.memory.rssBytesPerAgent);
  return {
    bench: 'scale',
    machine: { cores: cpus().length, cpu: cpus()[0]?.model ?? '?', memoryGiB: round(totalmem() / 2 ** 30, 1), node: process.version },
    setup: {
      masters: 3,
      masterFlags: MASTER_FLAGS.join(' '),
      masterFlagsWhy: 'agent liveness relaxed (ping every 30 s, 10 missed allowed: a 5-minute window instead of 75 s) and offers kept 10 minutes, so that a loaded leader writes off no agent and rescinds no offer spuriously; Raft timing is the default (100 ms ticks, 1 s election timeout): no flag of cairn master sets it',
      registry: 'Raft log in SQLite, synchronous=FULL (fsync per batch)',
      masterLogLevel: 'error (CAIRN_LOG_LEVEL)',
      agents: cfg.agents,
      agentProcesses: cfg.procs,
      connectingAtOnce: cfg.connecting,
      frameworkWindow: cfg.window,
      agentLink: AGENT_LINK,
      tasks: cfg.tasks,
      task: TASK,
      finish: cfg.finishAtOnce ? 'immediate: each agent reports a task FINISHED right after RUNNING' : `later: tasks stay RUNNING until all are, then each agent finishes its tasks at a random moment within ${cfg.finishSpreadS} s`,
      runs: cfg.runs,
    },
    summary: {
      completedRuns: runs.filter((r) => !r.error).length,
      errors: runs.filter((r) => r.error).map((r) => ({ run: r.run, ...r.error })),
      registrationMs: med((r) => r.registration.ms),
      agentsPerSecond: med((r) => r.registration.agentsPerSecond),
      tasksPerSecond: { median: tasksPerSecond, target: TARGETS.tasksPerSecond, met: tasksPerSecond >= TARGETS.tasksPerSecond },
      taskLaunchedCommittedPerSecond: med((r) => r.launch.master.taskLaunchedCommittedPerSecond),
      finishedPerSecond: med((r) => r.launch.finishedPerSecond ?? r.finish?.finishedPerSecond),
      allocationCycleMeanMs: med((r) => r.launch.allocation.meanMs),
      failoverMs: { median: failoverMs, target: TARGETS.failoverMs, met: failoverMs < TARGETS.failoverMs, what: 'SIGKILL of the leader until every agent has registered with the new one' },
      newLeaderMs: med((r) => r.failover.newLeaderMs),
      schedulerCallTakenMs: med((r) => r.failover.schedulerCallTakenMs),
      leaderRssBytesPerAgent: { median: rssPerAgent, target: TARGETS.leaderBytesPerAgent, met: rssPerAgent < TARGETS.leaderBytesPerAgent },
      leaderHeapBytesPerAgent: med((r) => r.memory.heapBytesPerAgent),
      leaderRssBytesPerRetainedTask: med((r) => r.memory.rssBytesPerRetainedTask),
      leaderHeapBytesPerRetainedTask: med((r) => r.memory.heapBytesPerRetainedTask),
      leaderChanges: runs.map((r) => ({ registration: r.registration?.leaderChanges, launch: r.launch?.leaderChanges, failoverAfterTheKill: r.failover?.leaderChangesAfterTheKill })),
      limitedBy: { registration: runs.map((r) => r.registration?.limitedBy), launch: runs.map((r) => r.launch?.limitedBy), failover: runs.map((r) => r.failover?.limitedBy) },
    },
    runs,
  };
}

if (import.meta.url === `file://${process.argv[1]}`) console.log(JSON.stringify(await run(), null, 2));
