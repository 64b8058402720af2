// A simulated master: the Raft core over memory storage, the registry state machine it
// feeds, and — while it leads — the leader core, with a shell that does here what
// master/master.ts and master/replication/raft-log.ts do in a daemon: proposals become Raft
// entries, committed entries are applied and answered, effects go onto simulated
// connections. Only the I/O is simulated; every decision is the production code's.

import type { AgentToMaster, MasterToAgent } from '../../shared/agent-messages.ts';
import { CairnError } from '../../shared/errors.ts';
import type { SchedulerEvent } from '../../shared/mesos-v1.ts';
import { RaftNode } from '../../shared/raft/node.ts';
import { decodeConfChange } from '../../shared/raft/confchange.ts';
import { MemoryStorage } from '../../shared/raft/memory-storage.ts';
import { steadyClock, type Clock } from '../../shared/steady-clock.ts';
import type { ConfChange, Message, NodeId } from '../../shared/raft/types.ts';
import { SeededRandom } from '../../shared/random.ts';
import type { FrameworkSpec } from '../../master/scheduler-calls.ts';
import type { LeaderConfig } from '../../master/leader/config.ts';
import { LeaderCore } from '../../master/leader/leader-core.ts';
import type { LeaderEffect, LeaderInput, OperatorCall, SchedulerCall } from '../../master/leader/messages.ts';
import type { RegistryCommand } from '../../master/registry/commands.ts';
import { asIncarnationRecord, MemberIncarnations, type IncarnationRecord } from '../../master/replication/incarnations.ts';
import { RegistryStateMachine, type RegistryEvent } from '../../master/registry/state-machine.ts';
import { SimWallClock, type SimClock } from './cluster-clock.ts';
import type { SimConn, SimNet } from './cluster-net.ts';

export type AgentConn = SimConn<AgentToMaster, MasterToAgent>;
/** A framework's stream carries events to it; its calls travel as datagrams. */
export type StreamConn = SimConn<never, SchedulerEvent>;

/** Close code of a follower that sends an agent to the leader (the reason names it). */
export const NOT_LEADER_CLOSE = 4001;

/**
 * A simulated framework's scheduler call: a datagram (lost, duplicated or late) to the master
 * its subscription stream is open to, under the stream's id. Nothing is sent without a
 * subscription, or when that master is gone.
 */
export function sendSchedulerCall(world: { masters(): SimMaster[]; readonly net: SimNet }, stream: StreamConn | undefined, subscribed: boolean, call: SchedulerCall): void {
  if (!stream || !subscribed) return;
  const master = world.masters().find((m) => m.id === stream.masterId);
  if (!master) return;
  const streamId = `s${stream.id}`;
  world.net.datagram(() => master.call(call, streamId));
}
/** Raft ticks every 100 ms, as the daemon's shell does; elections after 10 ticks. */
export const RAFT_TICK_MS = 100;

/** Bugs the simulator can plant in a master's shell, to show that the invariants catch them. */
export type PlantedBug =
  /** Acknowledge an agent's status update before it is durable (a leader crash then loses it). */
  | 'ack-before-commit'
  /** Send every status update to the framework a second time, a while later. */
  | 'update-twice'
  /** Feed the leader core the wall clock, as master.ts did before its steady clock (a step freezes or rushes its timers). */
  | 'leader-on-wall-clock';

export interface MasterWorld {
  readonly clock: SimClock;
  readonly net: SimNet;
  readonly config: LeaderConfig;
  readonly plant: PlantedBug | undefined;
  /** Raft messages go through the world, which knows who is up and who is cut off. */
  sendRaft(from: NodeId, m: Message): void;
  /** Told of every command a master applies (for invariants), with the time. */
  applied(masterId: NodeId, command: RegistryCommand, events: RegistryEvent[]): void;
  /** Told of every entry a master applies, at its index: what one master applied there, every master must. */
  appliedEntry(masterId: NodeId, index: number, term: number, data: Uint8Array): void;
}

/**
 * What a master keeps on disk besides its log (raft.sqlite's meta tables): its storage's
 * incarnation, made with the storage, and each member's incarnation as first seen or recorded
 * in the log. A wiped data dir loses all three together.
 */
export interface MasterDisk {
  readonly storage: MemoryStorage;
  readonly incarnation: string;
  readonly peers: Map<NodeId, string>;
}

interface Entry {
  /** The proposing core: master id and its leadership epoch. */
  o: string;
  p: number;
  /** A registry command, or a member's incarnation record the shell takes out (raft-log.ts). */
  c: RegistryCommand | IncarnationRecord;
}

export class SimMaster {
  up = true;
  node: RaftNode;
  /** This host's wall clock: clock-step faults move it; only the leader's clock is read from it, once per leadership. */
  readonly wall: SimWallClock;
  /** Set when a peer knows this master by another incarnation: it keeps out (no ticks, no messages), as raft-log.ts does. */
  keptOut = false;
  /** When (simulated time) this master's current leadership began. */
  ledSinceMs = 0;
  /** The leadership's steady clock (master.ts), made in lead(). */
  private leaderNow: Clock = () => this.world.clock.nowMs;
  state = new RegistryStateMachine();
  /** Members' storage incarnations: recorded in the log (rebuilt as it is applied), else first seen (on disk). */
  private incarnations: MemberIncarnations;
  core: LeaderCore | undefined;
  /** Leadership epochs of this master, so a proposal of an old core is never answered to a new one. */
  private epoch = 0;
  private readonly agentConns = new Map<number, AgentConn>();
  private readonly streams = new Map<string, StreamConn>();
  private allocationQueued = false;
  private wakeAtMs = Infinity;
  /** Operator requests are numbered below zero: stream ids are built from connection ids, which are not. */
  private operatorRequests = 0;
  readonly stats = { leaderships: 0, proposals: 0, crashes: 0 };

  constructor(
    readonly id: NodeId,
    public disk: MasterDisk,
    private readonly world: MasterWorld,
    private readonly rng: SeededRandom,
  ) {
    this.wall = new SimWallClock(world.clock);
    this.incarnations = new MemberIncarnations(disk.peers);
    this.node = this.newNode();
    this.world.clock.after(RAFT_TICK_MS, () => this.raftTick());
  }

  get storage(): MemoryStorage {
    return this.disk.storage;
  }

  private newNode(): RaftNode {
    return new RaftNode({ id: this.id, random: this.rng.fork(), electionTicks: 10, heartbeatTicks: 1, preVote: true, checkQuorum: true }, this.storage);
  }

  get isLeading(): boolean {
    return this.up && this.core !== undefined;
  }

  // ------------------------------------------------------------------ Raft

  private raftTick(): void {
    if (!this.up) return;
    if (this.keptOut) {
      this.world.clock.after(RAFT_TICK_MS, () => this.raftTick());
      return;
    }
    this.node.tick();
    this.process();
    this.world.clock.after(RAFT_TICK_MS, () => this.raftTick());
  }

  raftMessage(m: Message): void {
    if (!this.up || this.keptOut) return;
    this.node.step(m);
    this.process();
  }

  private processing = false;
  private appliedTerm = 0;
  private leadingFromTerm: number | undefined;

  /**
   * The Ready loop: persist, send, apply, advance — then follow a role change and answer
   * the core's proposals, after `advance`, so that what the core proposes in answer goes
   * into the next Ready. As in the daemon, a master that stops leading answers nothing of
   * what it had proposed: its core is gone first.
   */
  private process(): void {
    if (this.processing) return;
    this.processing = true;
    try {
      while (this.up && this.node.hasReady()) {
        const rd = this.node.ready();
        if (rd.snapshot) this.storage.applySnapshot(rd.snapshot);
        this.storage.append(rd.entries);
        if (rd.hardState) this.storage.setHardState(rd.hardState);
        // A master whose storage was lost sends nothing: no votes, no acknowledgements.
        if (!this.keptOut) for (const m of rd.messages) this.world.sendRaft(this.id, m);
        const answers: LeaderInput[] = [];
        for (const e of rd.committedEntries) {
          this.appliedTerm = e.term;
          this.world.appliedEntry(this.id, e.index, e.term, e.data);
          if (e.type === 'confChange') {
            const cc = decodeConfChange(e.data);
            this.node.applyConfChange(cc);
            // A member removed, or added again, is learnt afresh (raft-log.ts).
            this.incarnations.confChange(cc, this.id);
            continue;
          }
          if (e.type !== 'normal' || e.data.length === 0) continue;
          const entry = JSON.parse(new TextDecoder().decode(e.data)) as Entry;
          const record = asIncarnationRecord(entry.c);
          if (record) {
            this.incarnations.record(record, this.node.isMember(record.id));
            continue;
          }
          if (entry.c.type === 'member_incarnation') continue;
          const events = this.state.apply(entry.c);
          this.world.applied(this.id, entry.c, events);
          if (entry.o === this.origin) answers.push({ type: 'committed', proposal: entry.p, events });
        }
        this.node.advance();
        const role = rd.softState?.role;
        if (role !== undefined && role !== 'leader') {
          this.leadingFromTerm = undefined;
          this.follow();
        }
        for (const a of answers) this.step(a);
        if (role === 'leader') this.leadingFromTerm = this.node.term;
        // As raft-log.ts: the leader's services start once an entry of its own term is applied.
        const ready = this.leadingFromTerm !== undefined && this.appliedTerm >= this.leadingFromTerm;
        if (ready && this.node.role === 'leader') {
          this.leadingFromTerm = undefined;
          this.lead();
        }
        if (role !== undefined && role !== 'leader') this.incarnations.withdraw();
        if (this.core) this.recordIncarnations();
      }
    } finally {
      this.processing = false;
    }
  }

  /** As raft-log.ts: the leader records every member's incarnation the log does not hold yet. */
  private recordIncarnations(): void {
    const cs = this.node.status().config;
    for (const record of this.incarnations.due([...cs.voters, ...cs.learners], this.id, this.disk.incarnation)) {
      try {
        this.node.propose(new TextEncoder().encode(JSON.stringify({ o: this.origin, p: -1, c: record } satisfies Entry)));
      } catch {
        this.incarnations.withdraw(record.id);
      }
    }
  }

  private get origin(): string {
    return `${this.id}:${this.epoch}`;
  }

  /** The clock of this master's current leadership (its leader core's): what a built-in framework on it runs on. */
  get leadershipClock(): Clock {
    return this.leaderNow;
  }

  /** Becomes the leader's shell: a new core over this master's state, as master/server.ts does. */
  private lead(): void {
    if (this.core) return;
    this.epoch++;
    this.stats.leaderships++;
    this.ledSinceMs = this.world.clock.nowMs;
    // As master.ts: the core runs on a steady clock anchored at this host's wall clock now —
    // or, the planted bug, on the wall clock itself.
    const clock = this.world.clock;
    this.leaderNow = this.world.plant === 'leader-on-wall-clock' ? () => this.wall.nowMs() : steadyClock(this.wall.nowMs(), () => clock.nowMs);
    this.core = new LeaderCore({ config: this.world.config, registry: () => this.state, random: this.rng.fork(), nowMs: this.leaderNow() });
    this.wakeAtMs = Infinity;
    this.armWake();
  }

  private follow(): void {
    const core = this.core;
    if (!core) return;
    this.core = undefined;
    this.execute(core.stop());
    for (const c of this.agentConns.values()) c.close('master', 1001, 'master stopping');
    this.agentConns.clear();
    for (const s of this.streams.values()) s.close('master', 1001, 'master stopping');
    this.streams.clear();
  }

  // ------------------------------------------------------------------ crashes

  crash(): void {
    if (!this.up) return;
    this.stats.crashes++;
    this.up = false;
    // The process is gone: its connections break and its core says nothing more.
    for (const c of this.agentConns.values()) c.close('network', 1006, 'master crashed', false);
    this.agentConns.clear();
    for (const s of this.streams.values()) s.close('network', 1006, 'master crashed', false);
    this.streams.clear();
    this.core = undefined;
  }

  /** Starts again from what is on (simulated) disk: the log is replayed into a fresh state. */
  restart(): void {
    if (this.up) return;
    this.up = true;
    this.keptOut = false;
    this.state = new RegistryStateMachine();
    // The log is applied again from its start: its records with it.
    this.incarnations = new MemberIncarnations(this.disk.peers);
    this.appliedTerm = 0;
    this.leadingFromTerm = undefined;
    this.node = this.newNode();
    this.world.clock.after(RAFT_TICK_MS, () => this.raftTick());
  }

  // ------------------------------------------------------------------ lost storage (raft-log.ts's guard)

  /**
   * Judges a connection from or to `id` presenting `incarnation`, as the transport's handshake
   * does: a member's first incarnation is pinned; another one means that member's storage was
   * lost — refused, and a leader stops counting it as matched.
   */
  admit(id: NodeId, incarnation: string): boolean {
    if (this.incarnations.admit(id, incarnation, this.node.isMember(id)).admitted) return true;
    if (this.up && !this.keptOut) {
      this.node.reportStorageLost(id);
      this.process();
    }
    return false;
  }

  /** The incarnation this master knows `id` by; undefined before it has seen one. */
  knownIncarnation(id: NodeId): string | undefined {
    return this.incarnations.known(id);
  }

  /** A peer knows this master by another incarnation (told in the welcome): it keeps out until re-added. */
  selfLost(): void {
    this.keptOut = true;
  }

  /** The data dir is lost: the process dies, and its storage is made again, empty, with a new incarnation. */
  wipe(incarnation: string): void {
    this.crash();
    this.disk = { storage: new MemoryStorage(), incarnation, peers: new Map() };
    this.incarnations = new MemberIncarnations(this.disk.peers);
  }

  /** Starts on empty storage: founding a group of `voters` (no --new-member), or joining one (undefined: --new-member). */
  startEmpty(voters: readonly NodeId[] | undefined): void {
    if (voters) this.storage.bootstrap(voters);
    this.restart();
  }

  /** An operator's membership change, proposed on this (leading) master; false when Raft refuses it now. */
  proposeConfChange(cc: ConfChange): boolean {
    if (!this.up || this.keptOut || this.node.role !== 'leader') return false;
    // As raft-log.ts: a learner is promoted once the log records its storage incarnation.
    if (cc.type === 'promote' && this.incarnations.recorded(cc.nodeId) === undefined) return false;
    try {
      this.node.proposeConfChange(cc);
    } catch {
      return false;
    }
    this.process();
    return true;
  }

  // ------------------------------------------------------------------ the leader's shell

  /** An agent dials this master. A follower points it at the leader and hangs up. */
  acceptAgent(conn: AgentConn): void {
    if (!this.up) {
      conn.close('network', 1006, 'connection refused', false);
      return;
    }
    if (!this.core) {
      conn.close('master', NOT_LEADER_CLOSE, String(this.node.leader));
      return;
    }
    this.agentConns.set(conn.id, conn);
    conn.master = {
      onMessage: (frame) => {
        if (this.agentConns.get(conn.id) === conn) this.step({ type: 'agent_frame', conn: conn.id, frame });
      },
      onClose: () => {
        if (this.agentConns.get(conn.id) !== conn) return;
        this.agentConns.delete(conn.id);
        this.step({ type: 'agent_disconnected', conn: conn.id });
      },
    };
    this.step({ type: 'agent_connected', conn: conn.id, remoteAddress: `10.0.0.${conn.id % 250}`, principal: '' });
  }

  /** SUBSCRIBE on a new stream; a follower or a refusal closes it with the reason. */
  acceptSubscription(stream: StreamConn, spec: FrameworkSpec): void {
    if (!this.up) {
      stream.close('network', 1006, 'connection refused', false);
      return;
    }
    if (!this.core) {
      stream.close('master', NOT_LEADER_CLOSE, String(this.node.leader));
      return;
    }
    const id = `s${stream.id}`;
    this.streams.set(id, stream);
    stream.master = {
      onMessage: () => undefined,
      onClose: () => {
        if (this.streams.get(id) !== stream) return;
        this.streams.delete(id);
        this.step({ type: 'stream_closed', stream: id });
      },
    };
    try {
      this.step({ type: 'subscribe', request: stream.id, stream: id, spec });
    } catch (err) {
      this.streams.delete(id);
      stream.close('master', 400, (err as CairnError).message);
    }
  }

  /** A scheduler call; answers whether it was taken (a follower or a refusal: no). */
  call(call: SchedulerCall, streamId: string): boolean {
    if (!this.up || !this.core) return false;
    try {
      this.step({ type: 'scheduler_call', call, streamId });
      return true;
    } catch (err) {
      if (!(err instanceof CairnError)) throw err;
      return false;
    }
  }

  /** An operator call, as the HTTP API hands it over; answers whether it was taken. Its reply is not waited for. */
  operator(call: OperatorCall): boolean {
    if (!this.up || !this.core) return false;
    try {
      this.step({ type: 'operator', request: -++this.operatorRequests, call });
      return true;
    } catch (err) {
      if (!(err instanceof CairnError)) throw err;
      return false;
    }
  }

  private step(input: LeaderInput): void {
    const core = this.core;
    if (!core) return;
    const effects = core.step(this.leaderNow(), input);
    this.execute(effects);
    this.armWake();
  }

  private execute(effects: LeaderEffect[]): void {
    for (const e of effects) {
      switch (e.type) {
        case 'propose':
          this.propose(e.proposal, e.command);
          break;
        case 'to_agent': {
          const c = this.agentConns.get(e.conn);
          c?.toPeer(e.msg);
          break;
        }
        case 'close_agent': {
          const c = this.agentConns.get(e.conn);
          if (c) {
            this.agentConns.delete(e.conn);
            c.close('master', e.code, e.reason);
            // The shell's socket closes: the core hears of it as of any close.
            this.world.clock.after(0, () => this.step({ type: 'agent_disconnected', conn: e.conn }));
          }
          break;
        }
        case 'to_framework': {
          const s = this.streams.get(e.stream);
          s?.toPeer(e.event);
          if (s && this.world.plant === 'update-twice' && e.event.type === 'UPDATE' && e.event.update.status.uuid) {
            this.world.clock.after(3_000, () => s.toPeer(e.event));
          }
          break;
        }
        case 'end_stream': {
          const s = this.streams.get(e.stream);
          this.streams.delete(e.stream);
          s?.close('master', 1000, 'stream ended');
          break;
        }
        case 'reply':
        case 'reply_error':
          // The framework learns of its subscription from SUBSCRIBED on its stream; a refusal
          // after the fact ends the stream.
          if (e.type === 'reply_error') {
            const s = this.streams.get(`s${e.request}`);
            this.streams.delete(`s${e.request}`);
            s?.close('master', 503, e.error.message);
          }
          break;
        case 'allocate_soon':
          if (!this.allocationQueued) {
            this.allocationQueued = true;
            const epoch = this.epoch;
            this.world.clock.after(0, () => {
              this.allocationQueued = false;
              if (this.epoch === epoch) this.step({ type: 'allocate' });
            });
          }
          break;
        case 'log':
          break;
      }
    }
  }

  private propose(proposal: number, command: RegistryCommand): void {
    this.stats.proposals++;
    if (this.world.plant === 'ack-before-commit' && command.type === 'status_update' && command.source === 'SOURCE_AGENT') {
      // The planted bug: the agent hears "done" before the change is durable.
      for (const c of this.agentConns.values()) {
        c.toPeer({ ack: { uuid: Uint8Array.from(Buffer.from(command.uuid, 'base64')), taskId: command.taskId } });
      }
    }
    try {
      this.node.propose(new TextEncoder().encode(JSON.stringify({ o: this.origin, p: proposal, c: command } satisfies Entry)));
    } catch (err) {
      const message = (err as Error).message;
      this.world.clock.after(0, () => this.step({ type: 'proposal_failed', proposal, message }));
      return;
    }
    this.process();
  }

  /** The core's next wake-up, as one timer. */
  private armWake(): void {
    const core = this.core;
    if (!core) return;
    const at = core.nextWakeMs();
    if (at >= this.wakeAtMs) return;
    this.wakeAtMs = at;
    const epoch = this.epoch;
    // As master.ts: a timer for the time left until `at` on the core's clock.
    this.world.clock.after(Math.max(0, at - this.leaderNow()), () => {
      if (this.epoch !== epoch || this.wakeAtMs !== at) return;
      this.wakeAtMs = Infinity;
      this.step({ type: 'tick' });
    });
  }
}
