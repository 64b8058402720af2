// A child process of the scale bench (bench/scale.ts): runs many simulated agents over real
// WebSockets, speaking the real agent protocol. Each agent keeps its connection with the real
// agent's MasterLink (agent/master-link.ts: reconnect with backoff, follows a follower's 4001
// close to the leader, tries the next master when one is gone), registers (again with its id
// after a reconnect, listing the tasks it still runs and those whose end the master has not
// acknowledged, as the real agent's reportedTasks does), answers pings, reports every launched
// task TASK_RUNNING and then at once TASK_FINISHED, keeps each update until the master acks
// it and re-sends the unacknowledged ones after each registration and every `resendMs`, as the
// real agent does (agent/agent.ts). It runs nothing. With `finishAtOnce` false, tasks stay
// RUNNING until the parent sends {type:'finish', spreadMs}: each agent then finishes its tasks
// at a random moment within spreadMs.
//
// Driven over the fork IPC channel: {type:'start', ...} starts the agents (at most
// `concurrency` registering at once), {type:'report', sinceMs, times?} asks for counters,
// {type:'finish', spreadMs} ends the tasks held RUNNING, {type:'stop'} closes everything and
// exits. The child also exits when the parent goes away.

import { randomBytes } from 'node:crypto';
import { MasterLink } from '../agent/master-link.ts';
import { silentLogger } from '../shared/logger.ts';
import type { MasterToAgent, RunningTask, StatusUpdate, TaskState } from '../shared/agent-protocol.ts';

export interface ScaleAgentsStart {
  type: 'start';
  /** Every master's base URL (http://host:port). */
  masters: string[];
  /** Where the first connection goes (the leader, as gossip would name it). */
  firstUrl: string;
  /** Agents in this process, and the index of the first (for host names). */
  count: number;
  first: number;
  resources: string;
  /** Agents connecting/registering at once during the first registration. */
  concurrency: number;
  /** Re-send unacknowledged updates this often (the real agent: 2000). */
  resendMs: number;
  reconnectMinMs: number;
  reconnectMaxMs: number;
  /** Silence allowed on a fresh connection before it is dropped (the real agent: 10 s). */
  registrationTimeoutMs: number;
  /** After registration: ping interval × this much silence drops the connection (real: 5). */
  missedPingsAllowed: number;
  /** Report a launched task FINISHED right after RUNNING; false: only on {type:'finish'}. */
  finishAtOnce: boolean;
  /** The Authorization header every agent dials with (agent/credential.ts), as a real agent's. */
  authorization: string;
}

export interface ScaleAgentsReport {
  type: 'report';
  /** Agents registered on their current connection. */
  registeredNow: number;
  /** Of those, registered at or after `sinceMs` (the request's); and the latest such time. */
  registeredSince: number;
  lastRegisteredAtMs: number;
  /** First registration of every agent: when the first started connecting, when the last finished. */
  firstRegistered: number;
  startedAtMs: number;
  allFirstRegisteredAtMs: number;
  registrations: number;
  disconnects: number;
  launchFrames: number;
  tasksLaunched: number;
  updatesSent: number;
  updatesResent: number;
  acks: number;
  pendingUpdates: number;
  pings: number;
  notLeaderCloses: number;
  /** Connections closed before the agent registered on them, other than a follower's 4001. */
  failedAttempts: number;
  rssBytes: number;
  /** With `times` in the request: each registered-since agent's registration time. */
  registeredAtMsList?: number[];
}

const log = silentLogger();

class Counters {
  registrations = 0;
  disconnects = 0;
  launchFrames = 0;
  tasksLaunched = 0;
  updatesSent = 0;
  updatesResent = 0;
  acks = 0;
  pings = 0;
  notLeaderCloses = 0;
  failedAttempts = 0;
  firstRegistered = 0;
  allFirstRegisteredAtMs = 0;
}

class SimAgent {
  agentId = '';
  /** The connection generation the agent registered on; -1 while not registered. */
  registeredOn = -1;
  registeredAtMs = 0;
  everRegistered = false;
  /** Updates sent and not yet acknowledged, by uuid (hex). */
  readonly pending = new Map<string, StatusUpdate>();
  /** Tasks launched here and not ended (listed on re-registration). */
  readonly running = new Map<string, RunningTask>();
  /** Tasks ended here whose end the master has not acknowledged, by task id: listed on re-registration too. */
  readonly ended = new Map<string, RunningTask>();
  readonly link: MasterLink;

  constructor(
    private readonly index: number,
    private readonly cfg: ScaleAgentsStart,
    private readonly counters: Counters,
    private readonly onFirstRegistration: () => void,
  ) {
    // Each agent connects first to the leader (as gossip would name it) and knows every
    // master, in a rotated order, as `--master a,b,c` on differently configured hosts would:
    // the reconnects after a failover do not all knock at one door.
    const toWs = (u: string) => u.replace(/^http/, 'ws') + '/api/v1/agent';
    const ws = cfg.masters.map(toWs);
    const rotated = ws.map((_, i) => ws[(i + index) % ws.length]!);
    this.link = new MasterLink({
      url: toWs(cfg.firstUrl),
      alternates: rotated,
      logger: log,
      reconnectMinMs: cfg.reconnectMinMs,
      reconnectMaxMs: cfg.reconnectMaxMs,
      initialLivenessMs: cfg.registrationTimeoutMs,
      headers: { authorization: cfg.authorization },
      onOpen: (gen) => this.register(gen),
      onMessage: (msg, gen) => this.onMessage(msg, gen),
      onClose: (gen, reason) => {
        if (reason.startsWith('closed (4001')) this.counters.notLeaderCloses++;
        if (this.registeredOn === gen) {
          this.registeredOn = -1;
          this.counters.disconnects++;
        } else if (!reason.startsWith('closed (4001')) {
          this.counters.failedAttempts++;
        }
      },
    });
  }

  get registered(): boolean {
    return this.registeredOn !== -1 && this.registeredOn === this.link.currentGeneration && this.link.isOpen;
  }

  private register(gen: number): void {
    if (gen !== this.link.currentGeneration) return;
    this.link.send({
      register: {
        agentId: this.agentId,
        hostname: `sim-${this.index}`,
        ip: '127.0.0.1',
        httpPort: 1,
        resources: this.cfg.resources,
        attributes: [],
        tasks: [...this.running.values(), ...this.ended.values()],
        version: 'scale-sim',
      },
    });
  }

  private onMessage(msg: MasterToAgent, gen: number): void {
    if ('registered' in msg) {
      this.agentId = msg.registered.agentId;
      this.registeredOn = gen;
      this.registeredAtMs = Date.now();
      this.counters.registrations++;
      this.link.markHealthy();
      if (msg.registered.pingIntervalMs > 0) this.link.setLivenessMs(msg.registered.pingIntervalMs * this.cfg.missedPingsAllowed);
      for (const id of msg.registered.lostTaskIds) this.running.delete(id);
      if (!this.everRegistered) {
        this.everRegistered = true;
        this.onFirstRegistration();
      }
      this.resendPending();
    } else if ('ping' in msg) {
      this.counters.pings++;
      this.link.send({ pong: { sentMs: msg.ping.sentMs } });
    } else if ('launch' in msg) {
      this.counters.launchFrames++;
      for (const t of msg.launch.tasks) {
        this.counters.tasksLaunched++;
        this.running.set(t.taskId, { taskId: t.taskId, frameworkId: t.frameworkId, state: 'TASK_RUNNING', resources: t.resources });
        this.update(t.taskId, t.frameworkId, 'TASK_RUNNING');
        if (this.cfg.finishAtOnce) this.finish(t.taskId);
      }
    } else if ('kill' in msg) {
      // As the real agent: a task that already ended changes nothing (its end is on its way),
      // one it never had is reported lost so that the master forgets it.
      const { taskId, frameworkId } = msg.kill;
      const t = this.running.get(taskId);
      if (t) {
        this.running.delete(taskId);
        this.ended.set(taskId, { ...t, state: 'TASK_KILLED' });
        this.update(taskId, frameworkId, 'TASK_KILLED');
      } else if (!this.ended.has(taskId)) {
        this.update(taskId, frameworkId, 'TASK_LOST');
      }
    } else if ('ack' in msg) {
      const key = Buffer.from(msg.ack.uuid).toString('hex');
      const u = this.pending.get(key);
      if (!u) return;
      this.pending.delete(key);
      this.counters.acks++;
      if (this.ended.get(u.taskId)?.state === u.state) this.ended.delete(u.taskId);
    }
  }

  finish(taskId: string): void {
    const t = this.running.get(taskId);
    if (!t) return;
    this.running.delete(taskId);
    // Named in its ended state until its end is acknowledged: left out of a re-registration,
    // the master would write off as lost a task that ran and finished (its FINISHED then
    // ignored), and the framework would run it a second time.
    this.ended.set(taskId, { ...t, state: 'TASK_FINISHED' });
    this.update(taskId, t.frameworkId, 'TASK_FINISHED', 0);
  }

  finishAll(): void {
    for (const id of [...this.running.keys()]) this.finish(id);
  }

  private update(taskId: string, frameworkId: string, state: TaskState, exitCode?: number): void {
    const uuid = new Uint8Array(randomBytes(16));
    const u: StatusUpdate = {
      uuid, taskId, frameworkId, state, message: '', reason: '',
      hasExitCode: exitCode !== undefined, exitCode: exitCode ?? 0, timestampMs: Date.now(),
    };
    this.pending.set(Buffer.from(uuid).toString('hex'), u);
    if (this.registered && this.link.send({ statusUpdate: u })) this.counters.updatesSent++;
  }

  resendPending(): void {
    if (!this.registered) return;
    for (const u of this.pending.values()) if (this.link.send({ statusUpdate: u })) this.counters.updatesResent++;
  }
}

let agents: SimAgent[] = [];
const counters = new Counters();
let startedAtMs = 0;
let resendTimer: NodeJS.Timeout | undefined;

function start(cfg: ScaleAgentsStart): void {
  startedAtMs = Date.now();
  let next = 0;
  let inFlight = 0;
  const launchMore = () => {
    while (inFlight < cfg.concurrency && next < agents.length) {
      inFlight++;
      agents[next++]!.link.start();
    }
  };
  agents = Array.from({ length: cfg.count }, (_, i) => new SimAgent(cfg.first + i, cfg, counters, () => {
    inFlight--;
    counters.firstRegistered++;
    if (counters.firstRegistered === cfg.count) counters.allFirstRegisteredAtMs = Date.now();
    launchMore();
  }));
  launchMore();
  // Each agent re-sends its pending updates every resendMs, as the real agent's own timer
  // does; the agents' timers are spread over the period rather than firing together.
  const slotMs = 100;
  const slots = Math.max(1, Math.round(cfg.resendMs / slotMs));
  let tick = 0;
  resendTimer = setInterval(() => {
    const slot = tick++ % slots;
    for (let i = slot; i < agents.length; i += slots) agents[i]!.resendPending();
  }, slotMs);
}

function report(sinceMs: number, times: boolean): ScaleAgentsReport {
  let registeredNow = 0;
  let registeredSince = 0;
  let lastRegisteredAtMs = 0;
  let pendingUpdates = 0;
  for (const a of agents) {
    pendingUpdates += a.pending.size;
    if (!a.registered) continue;
    registeredNow++;
    if (a.registeredAtMs >= sinceMs) {
      registeredSince++;
      lastRegisteredAtMs = Math.max(lastRegisteredAtMs, a.registeredAtMs);
    }
  }
  return {
    type: 'report',
    registeredNow,
    registeredSince,
    lastRegisteredAtMs,
    firstRegistered: counters.firstRegistered,
    startedAtMs,
    allFirstRegisteredAtMs: counters.allFirstRegisteredAtMs,
    registrations: counters.registrations,
    disconnects: counters.disconnects,
    launchFrames: counters.launchFrames,
    tasksLaunched: counters.tasksLaunched,
    updatesSent: counters.updatesSent,
    updatesResent: counters.updatesResent,
    acks: counters.acks,
    pendingUpdates,
    pings: counters.pings,
    notLeaderCloses: counters.notLeaderCloses,
    failedAttempts: counters.failedAttempts,
    rssBytes: process.memoryUsage().rss,
    ...(times ? { registeredAtMsList: agents.filter((a) => a.registered && a.registeredAtMs >= sinceMs).map((a) => a.registeredAtMs) } : {}),
  };
}

async function stop(): Promise<never> {
  clearInterval(resendTimer);
  await Promise.race([Promise.all(agents.map((a) => a.link.stop())), new Promise((r) => setTimeout(r, 3000))]);
  process.exit(0);
}

process.on('message', (m: { type: string; sinceMs?: number; times?: boolean } & Partial<ScaleAgentsStart>) => {
  if (m.type === 'start') start(m as ScaleAgentsStart);
  else if (m.type === 'report') process.send?.(report(m.sinceMs ?? Number.MAX_SAFE_INTEGER, m.times === true));
  else if (m.type === 'finish') {
    // Each agent finishes its tasks at its own moment within the spread, as tasks that end
    // over a while rather than in the same millisecond.
    const spreadMs = (m as { spreadMs?: number }).spreadMs ?? 0;
    for (const a of agents) {
      if (spreadMs > 0) setTimeout(() => a.finishAll(), Math.random() * spreadMs);
      else a.finishAll();
    }
  }
  else if (m.type === 'stop') void stop();
});
process.on('disconnect', () => process.exit(0));
process.send?.({ type: 'ready' });
