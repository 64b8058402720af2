// A simulated agent: speaks the agent protocol as agent/agent.ts does — registers (again)
// with its id and running tasks, answers pings, runs launched tasks for a drawn time,
// keeps every status update until the master acknowledges it and re-sends the pending ones
// every 2 s and after each registration, kills on request (the TASK_KILLED carrying the
// kill's reason and message, once the task has taken the time the world says it takes to
// stop on SIGTERM; at once unless it says), drops a master that stopped pinging, follows a
// follower's pointer to the leader. Its process can crash (tasks keep running and are
// re-adopted, as the real agent's recovery does) and its host can lose its tasks; its
// connection can be cut without anyone noticing but the pings.

import type { AgentToMaster, MasterToAgent, StatusUpdate, TaskState } from '../../shared/agent-messages.ts';
import { isTerminal } from '../../shared/agent-messages.ts';
import { randomBytesOf, type SeededRandom } from '../../shared/random.ts';
import type { SimClock } from './cluster-clock.ts';
import { NOT_LEADER_CLOSE, type AgentConn, type SimMaster } from './cluster-master.ts';
import type { SimNet } from './cluster-net.ts';

export interface SimTask {
  taskId: string;
  frameworkId: string;
  resources: string;
  state: TaskState;
  /** When it ends by itself, and how. */
  endsAtMs: number;
  succeeds: boolean;
  /** Set once it was sent SIGTERM: it ends killed, with this reason and message, at endsAtMs. */
  killedWith?: { reason: string; message: string };
}

export interface AgentWorld {
  readonly clock: SimClock;
  readonly net: SimNet;
  masters(): SimMaster[];
  /** Told of every launch an agent receives (a task id launched twice is a bug). */
  launched(agent: SimAgent, taskId: string): void;
  trace(what: string): void;
  /** How long a launched task runs and how it ends, where the world decides (services run until killed). */
  lifetimeOf?(taskId: string, rng: SeededRandom): { endsAtMs: number; succeeds: boolean } | undefined;
  /** How long a task takes to stop once killed, at most graceMs; without this, it stops at once. */
  stopDelayMs?(taskId: string, graceMs: number, rng: SeededRandom): number | undefined;
}

const STATUS_RETRY_MS = 2_000;

export class SimAgent {
  agentId = '';
  up = true;
  /** Cut off: connections made now are black-holed until healed. */
  partitioned = false;
  conn: AgentConn | undefined;
  registered = false;
  readonly tasks = new Map<string, SimTask>();
  /** Status updates not yet acknowledged, in the order they were made. */
  readonly pending = new Map<string, StatusUpdate>();
  private lastPingMs = 0;
  private masterHint: number | undefined;
  private nextMasterIndex = 0;
  /** Bumped on every crash: timers of an older process do nothing. */
  private generation = 0;
  private pingIntervalMs = 1_000;

  constructor(
    readonly hostname: string,
    readonly ip: string,
    readonly resources: string,
    private readonly world: AgentWorld,
    private readonly rng: SeededRandom,
  ) {
    this.start();
  }

  private start(): void {
    const gen = ++this.generation;
    this.connect(gen);
    const retry = () => {
      if (gen !== this.generation) return;
      if (this.registered) this.resendPending();
      this.world.clock.after(STATUS_RETRY_MS, retry);
    };
    this.world.clock.after(STATUS_RETRY_MS, retry);
    const watch = () => {
      if (gen !== this.generation) return;
      // A master that stopped pinging is dropped and another tried (agent/master-link.ts).
      if (this.registered && this.conn && this.world.clock.nowMs - this.lastPingMs > this.pingIntervalMs * 4) {
        const c = this.conn;
        this.dropConnection(gen);
        c.close('peer', 1000, 'master silent');
      }
      this.world.clock.after(this.pingIntervalMs, watch);
    };
    this.world.clock.after(this.pingIntervalMs, watch);
  }

  // ------------------------------------------------------------------ faults

  /** The agent process dies; its tasks go on running (and end by themselves) meanwhile. */
  crash(): void {
    if (!this.up) return;
    this.world.trace(`${this.hostname} (${this.agentId}) crashes`);
    this.up = false;
    this.generation++;
    const c = this.conn;
    this.conn = undefined;
    this.registered = false;
    c?.close('network', 1006, 'agent crashed', false);
  }

  restart(): void {
    if (this.up) return;
    this.world.trace(`${this.hostname} (${this.agentId}) restarts`);
    this.up = true;
    this.start();
    // Recovery: tasks that ended while the agent was down are reported now, the others when they end.
    for (const t of this.tasks.values()) {
      this.endIfDue(t);
      this.scheduleEnd(t);
    }
  }

  /** The host restarts: every task dies with it; the agent comes back with its id. */
  hostLost(): void {
    this.crash();
    // Running tasks die with the host; what the agent knew of ends not yet acknowledged is
    // gone with it (the registry's word on those stands).
    for (const t of [...this.tasks.values()]) {
      if (!isTerminal(t.state)) t.state = 'TASK_LOST';
      else if (this.endPending(t.taskId)) this.tasks.delete(t.taskId);
    }
    this.pending.clear();
  }

  partition(): void {
    this.partitioned = true;
    if (this.conn) this.conn.blackholed = true;
  }

  heal(): void {
    this.partitioned = false;
    if (this.conn) this.conn.blackholed = false;
  }

  // ------------------------------------------------------------------ the connection

  private connect(gen: number): void {
    if (gen !== this.generation || !this.up || this.conn) return;
    const masters = this.world.masters();
    const target = this.masterHint !== undefined ? masters.find((m) => m.id === this.masterHint) : masters[this.nextMasterIndex++ % masters.length];
    this.masterHint = undefined;
    if (!target) return this.reconnectLater(gen);
    const conn = this.world.net.connect<AgentToMaster, MasterToAgent>(target.id);
    this.conn = conn;
    this.registered = false;
    conn.peer = {
      onMessage: (msg) => {
        if (this.conn === conn && gen === this.generation) this.onMessage(conn, msg);
      },
      onClose: (code, reason) => {
        if (this.conn !== conn) return;
        if (code === NOT_LEADER_CLOSE && reason !== '0') this.masterHint = Number(reason);
        this.dropConnection(gen);
      },
    };
    if (this.partitioned) conn.blackholed = true;
    this.world.trace(`${this.hostname} (${this.agentId}) dials master ${target.id}${this.partitioned ? ' (partitioned)' : ''}`);
    // Dialling takes a latency; a cut-off agent's attempt never arrives and times out.
    this.world.clock.after(this.world.net.delay(), () => {
      if (this.conn !== conn) return;
      if (conn.blackholed) {
        this.world.clock.after(2_000, () => {
          if (this.conn === conn && !this.registered) {
            this.dropConnection(gen);
            conn.close('peer', 1006, 'connect timed out', false);
          }
        });
        return;
      }
      target.acceptAgent(conn);
      this.lastPingMs = this.world.clock.nowMs;
      conn.toMaster({ register: this.registration() });
    });
  }

  private dropConnection(gen: number): void {
    this.conn = undefined;
    this.registered = false;
    this.reconnectLater(gen);
  }

  private reconnectLater(gen: number): void {
    this.world.clock.after(this.rng.range(50, 500), () => this.connect(gen));
  }

  private registration() {
    return {
      agentId: this.agentId,
      hostname: this.hostname,
      ip: this.ip,
      httpPort: 5051,
      resources: this.resources,
      attributes: [],
      // As the real agent: a task whose end is not yet acknowledged is still reported, in
      // its last active state, so that the master waits for the end instead of writing it off.
      tasks: [...this.tasks.values()]
        .filter((t) => !isTerminal(t.state) || this.endPending(t.taskId))
        .map((t) => ({ taskId: t.taskId, frameworkId: t.frameworkId, state: isTerminal(t.state) ? 'TASK_RUNNING' as const : t.state, resources: t.resources })),
      version: 'sim',
      isolation: '',
    };
  }

  private onMessage(conn: AgentConn, msg: MasterToAgent): void {
    this.world.trace(`${this.hostname} (${this.agentId}) got ${JSON.stringify(msg, (k, v) => (k === 'uuid' ? Buffer.from(v as Uint8Array).toString('base64') : v))}`);
    if ('registered' in msg) {
      this.agentId = msg.registered.agentId;
      this.registered = true;
      this.pingIntervalMs = msg.registered.pingIntervalMs;
      this.lastPingMs = this.world.clock.nowMs;
      for (const id of msg.registered.lostTaskIds) {
        const t = this.tasks.get(id);
        if (t && !isTerminal(t.state)) this.kill(t, 'TASK_KILLED');
      }
      this.resendPending();
    } else if ('ping' in msg) {
      this.lastPingMs = this.world.clock.nowMs;
      conn.toMaster({ pong: { sentMs: msg.ping.sentMs } });
    } else if ('launch' in msg) {
      for (const info of msg.launch.tasks) {
        this.world.launched(this, info.taskId);
        if (this.tasks.has(info.taskId)) continue;
        const t: SimTask = {
          taskId: info.taskId,
          frameworkId: info.frameworkId,
          resources: info.resources,
          state: 'TASK_RUNNING',
          endsAtMs: this.world.clock.nowMs + this.rng.range(200, 4_000),
          succeeds: this.rng.chance(0.9),
          ...this.world.lifetimeOf?.(info.taskId, this.rng),
        };
        this.tasks.set(t.taskId, t);
        this.update(t, 'TASK_RUNNING');
        this.scheduleEnd(t);
      }
    } else if ('kill' in msg) {
      const t = this.tasks.get(msg.kill.taskId);
      if (t && !isTerminal(t.state)) this.stop(t, msg.kill);
      else if (!t) this.sendUpdate({ taskId: msg.kill.taskId, frameworkId: msg.kill.frameworkId }, 'TASK_LOST', 'unknown task');
    } else if ('ack' in msg) {
      this.pending.delete(Buffer.from(msg.ack.uuid).toString('base64'));
    }
  }

  private endPending(taskId: string): boolean {
    for (const su of this.pending.values()) if (su.taskId === taskId && isTerminal(su.state)) return true;
    return false;
  }

  /** A task ends on its own; a crashed agent process reports it once it is back. */
  private scheduleEnd(t: SimTask): void {
    if (isTerminal(t.state) || t.endsAtMs === Infinity) return;
    const gen = this.generation;
    this.world.clock.at(t.endsAtMs, () => {
      if (gen === this.generation && this.up) this.endIfDue(t);
    });
  }

  private endIfDue(t: SimTask): void {
    if (isTerminal(t.state) || this.world.clock.nowMs < t.endsAtMs) return;
    if (t.killedWith) {
      t.state = 'TASK_KILLED';
      this.sendUpdate(t, t.state, t.killedWith.message, t.killedWith.reason);
      return;
    }
    t.state = t.succeeds ? 'TASK_FINISHED' : 'TASK_FAILED';
    this.update(t, t.state);
  }

  /**
   * A kill from the master: SIGTERM, then the task ends within its grace, reporting the
   * kill's reason (a preemption's) as the real agent does. A second kill while it is
   * stopping changes nothing; a crash of the agent meanwhile does not stop it from ending.
   */
  private stop(t: SimTask, kill: { graceMs: number; reason?: string; message?: string }): void {
    const delay = this.world.stopDelayMs?.(t.taskId, kill.graceMs, this.rng) ?? 0;
    const how = { reason: kill.reason ?? '', message: kill.message ?? '' };
    if (delay <= 0) {
      t.state = 'TASK_KILLED';
      this.sendUpdate(t, t.state, how.message, how.reason);
      return;
    }
    if (t.killedWith) return;
    t.killedWith = how;
    t.endsAtMs = Math.min(t.endsAtMs, this.world.clock.nowMs + delay);
    this.scheduleEnd(t);
  }

  private kill(t: SimTask, state: TaskState): void {
    t.state = state;
    this.update(t, state);
  }

  private update(t: SimTask, state: TaskState): void {
    this.sendUpdate(t, state, '');
  }

  private sendUpdate(t: { taskId: string; frameworkId: string }, state: TaskState, message: string, reason = ''): void {
    const uuid = randomBytesOf(this.rng, 16);
    const su: StatusUpdate = { uuid, taskId: t.taskId, frameworkId: t.frameworkId, state, message, hasExitCode: isTerminal(state), exitCode: state === 'TASK_FINISHED' ? 0 : 1, timestampMs: this.world.clock.nowMs, reason };
    this.pending.set(Buffer.from(uuid).toString('base64'), su);
    this.world.trace(`${this.hostname} (${this.agentId}) reports ${t.taskId} ${state} ${Buffer.from(uuid).toString('base64')}${this.registered ? '' : ' (not registered: later)'}`);
    if (this.registered) this.conn?.toMaster({ statusUpdate: su });
  }

  private resendPending(): void {
    for (const su of this.pending.values()) this.conn?.toMaster({ statusUpdate: su });
  }
}
