// A simulated Raft group: nodes with simulated disks, the network between them, clients
// running put/get/cas against a key-value state machine, and an operator changing the
// membership. Everything is driven by one seeded random source, step by step; the safety
// checker watches every write, apply and election.
//
// A node's disk models fsync: a Ready is first written (not yet durable), then synced; only
// after the sync are its messages sent and its entries applied. A crash between the two
// loses the write or keeps it (either can happen on real disks), but nothing depending on
// it was sent.

import { CairnError } from '../../shared/errors.ts';
import { decodeConfChange } from '../../shared/raft/confchange.ts';
import { MemoryStorage } from '../../shared/raft/memory-storage.ts';
import { RaftNode, type Ready } from '../../shared/raft/node.ts';
import { NotLeaderError } from '../../shared/raft/raft.ts';
import type { SeededRandom } from '../../shared/random.ts';
import type { ConfChange, ConfState, Message, NodeId } from '../../shared/raft/types.ts';
import type { HistoryEvent } from './linearizability.ts';
import { KvStore, decodeKvCommand, encodeKvCommand, type KvInput, type KvOutput } from './kv.ts';
import { SafetyChecker, SafetyViolation, type LogView } from './raft-invariants.ts';
import { SimNetwork } from './raft-network.ts';

export interface SimParams {
  voters: number;
  /** Ids beyond the founding voters the operator may add. */
  spares: number;
  electionTicks: number;
  heartbeatTicks: number;
  maxMessageBytes: number;
  maxInflightMessages: number;
  /** Per node per step, the probability of a tick (differences model clock drift). */
  tickRates: number[];
  /** Probability that a written Ready is synced in the same step. */
  syncChance: number;
  /** Applied entries between snapshots, and entries kept behind a snapshot. */
  snapshotEvery: number;
  snapshotKeep: number;
  clients: number;
  keys: string[];
  /** Per idle client per step, the probability of starting an operation. */
  invokeChance: number;
  /** Steps a client waits for an answer before giving up (outcome unknown); once faults stop, 1000. */
  clientTimeout: number;
  /** How often a message goes through the wire codec rather than by reference (0: never). */
  wireEvery: number;
}

interface PendingWrite {
  client: number;
  reqId: string;
}

interface PendingRead {
  client: number;
  key: string;
  /** Set once the read index arrives; the read is served when it is applied. */
  readIndex: number | undefined;
}

export class SimNode implements LogView {
  disk = new MemoryStorage();
  node!: RaftNode;
  kv = new KvStore();
  applied = 0;
  config: ConfState = { voters: [], learners: [] };
  up = false;
  decommissioned = false;
  decommissionAt = Infinity;
  restartAt = Infinity;
  /** A stalled process (a long GC pause, a frozen VM): no ticks, no messages handled, nothing written until then. */
  pausedUntil = 0;
  incarnation = 0;
  /** A Ready written to disk but not yet synced. */
  writing: Ready | undefined;
  lastSnapshotIndex = 0;
  pendingWrites = new Map<number, PendingWrite[]>();
  pendingReads = new Map<string, PendingRead>();

  constructor(
    readonly id: NodeId,
    private readonly params: SimParams,
  ) {}

  start(seed: number, random: () => SeededRandom): void {
    this.node = new RaftNode(
      {
        id: this.id,
        random: random(),
        electionTicks: this.params.electionTicks,
        heartbeatTicks: this.params.heartbeatTicks,
        maxMessageBytes: this.params.maxMessageBytes,
        maxInflightMessages: this.params.maxInflightMessages,
        learnerCatchUpEntries: 20,
      },
      this.disk,
    );
    const snap = this.disk.snapshot();
    this.kv = KvStore.restore(snap.data);
    this.applied = snap.metadata.index;
    this.lastSnapshotIndex = snap.metadata.index;
    this.config = snap.metadata.confState;
    this.up = true;
    this.writing = undefined;
    this.pausedUntil = 0;
    this.incarnation = seed;
  }

  firstIndex(): number {
    return this.node.firstIndex;
  }
  lastIndex(): number {
    return this.node.lastIndex;
  }
  termAt(index: number): number | undefined {
    return this.node.termAt(index);
  }
  entryAt(index: number) {
    return this.node.entryAt(index);
  }
}

interface Client {
  id: number;
  seq: number;
  leaderHint: NodeId;
  busy:
    | { reqId: string; node: NodeId; kind: 'write' | 'read'; deadline: number; invokedInLiveness: boolean; leaderTerm: number }
    | undefined;
}

export interface ClusterStats {
  crashes: number;
  lostWrites: number;
  keptWrites: number;
  restarts: number;
  snapshotsTaken: number;
  snapshotsInstalled: number;
  confChangesApplied: number;
  refusals: Record<string, number>;
  transfers: number;
  partitions: number;
  pauses: number;
  ok: number;
  fail: number;
  info: number;
}

export class SimCluster {
  readonly nodes = new Map<NodeId, SimNode>();
  readonly network: SimNetwork;
  readonly safety = new SafetyChecker();
  readonly history: HistoryEvent<KvInput, KvOutput>[] = [];
  readonly clients: Client[] = [];
  now = 0;
  /** Logical time for the history: one tick per event, so order within a step is kept. */
  private clock = 0;
  private nextSpare: NodeId;
  private nextValue = 1;
  liveness = false;
  livenessTimeouts = 0;
  readonly timeoutNotes: string[] = [];
  private readonly removed = new Set<NodeId>();
  readonly stats: ClusterStats = {
    crashes: 0, lostWrites: 0, keptWrites: 0, restarts: 0, snapshotsTaken: 0, snapshotsInstalled: 0,
    confChangesApplied: 0, refusals: {}, transfers: 0, partitions: 0, pauses: 0, ok: 0, fail: 0, info: 0,
  };
  /** Called for each message sent, to route some through the wire codec. */
  transform: (m: Message) => Message = (m) => m;

  constructor(
    readonly params: SimParams,
    readonly rng: SeededRandom,
  ) {
    this.network = new SimNetwork(rng.fork());
    const voters: NodeId[] = [];
    for (let i = 1; i <= params.voters; i++) voters.push(i);
    for (const id of voters) {
      const n = new SimNode(id, params);
      n.disk.bootstrap(voters);
      this.nodes.set(id, n);
      n.start(1, () => this.rng.fork());
    }
    this.nextSpare = params.voters + 1;
    for (let c = 0; c < params.clients; c++) this.clients.push({ id: c + 1, seq: 0, leaderHint: 0, busy: undefined });
  }

  // -------------------------------------------------------------------------------------
  // Nodes

  live(): SimNode[] {
    return [...this.nodes.values()].filter((n) => n.up);
  }

  /** The leader with the highest term among live nodes, if any. */
  leader(): SimNode | undefined {
    let best: SimNode | undefined;
    for (const n of this.nodes.values()) {
      if (n.up && n.node.role === 'leader' && (best === undefined || n.node.term > best.node.term)) best = n;
    }
    return best;
  }

  private watch(n: SimNode): void {
    if (n.node.role !== 'leader') return;
    const term = n.node.term;
    if (this.safety.observeLeader(n.id, term)) this.safety.checkLeaderCompleteness(n, term);
    this.safety.observeCommit(n, term, n.node.commitIndex);
  }

  deliver(): void {
    for (const m of this.network.arrivals(this.now)) {
      const n = this.nodes.get(m.to);
      if (n === undefined || !n.up) continue;
      if (n.pausedUntil > this.now) {
        this.network.deliverAt(m, n.pausedUntil + this.rng.range(0, 2));
        continue;
      }
      n.node.step(this.transform(m));
      this.watch(n);
    }
  }

  tick(): void {
    let i = 0;
    for (const n of this.nodes.values()) {
      const rate = this.params.tickRates[i++ % this.params.tickRates.length];
      if (n.up && n.pausedUntil <= this.now && this.rng.chance(rate)) {
        n.node.tick();
        this.watch(n);
      }
    }
  }

  /** Each node writes its next Ready, or syncs the one it wrote. */
  process(): void {
    for (const n of this.nodes.values()) {
      if (!n.up || n.pausedUntil > this.now) continue;
      if (n.writing !== undefined) {
        if (this.rng.chance(this.params.syncChance)) this.sync(n);
        continue;
      }
      if (!n.node.hasReady()) continue;
      n.writing = n.node.ready();
      // As the master's shell does: a leader's appends leave before its own write is
      // durable (a crash meanwhile loses the write, not the sends).
      for (const m of n.writing.messages) if (m.type === 'append') this.network.send(m, this.now);
      if (this.rng.chance(this.params.syncChance)) this.sync(n);
    }
  }

  private persist(n: SimNode, rd: Ready): void {
    if (rd.snapshot !== undefined) n.disk.applySnapshot(rd.snapshot);
    if (rd.entries.length > 0) {
      const first = rd.entries[0].index;
      const prevTerm = first - 1 >= n.disk.firstIndex() - 1 ? n.disk.term(first - 1) : undefined;
      n.disk.append(rd.entries);
      this.safety.observePersisted(n.id, rd.entries, prevTerm);
    }
    if (rd.hardState !== undefined) n.disk.setHardState(rd.hardState);
  }

  private sync(n: SimNode): void {
    const rd = n.writing!;
    n.writing = undefined;
    this.persist(n, rd);
    for (const m of rd.messages) if (m.type !== 'append') this.network.send(m, this.now);
    if (rd.snapshot !== undefined) {
      const meta = rd.snapshot.metadata;
      n.kv = KvStore.restore(rd.snapshot.data);
      n.applied = meta.index;
      n.config = meta.confState;
      n.lastSnapshotIndex = meta.index;
      this.stats.snapshotsInstalled++;
      this.safety.observeState(n.id, meta.index, n.kv.fingerprint());
      // Writes waiting at indexes the snapshot covers can no longer be told apart.
      for (const [index, waiting] of n.pendingWrites) {
        if (index > meta.index) continue;
        n.pendingWrites.delete(index);
        for (const w of waiting) this.complete(w.client, w.reqId, 'info');
      }
    }
    for (const e of rd.committedEntries) {
      this.safety.observeApplied(n.id, e, n.applied);
      n.applied = e.index;
      let output: KvOutput | undefined;
      let reqId: string | undefined;
      if (e.type === 'confChange') {
        const cc = decodeConfChange(e.data);
        n.config = n.node.applyConfChange(cc);
        this.stats.confChangesApplied++;
        if (cc.type === 'remove') this.scheduleDecommission(cc.nodeId);
      } else if (e.data.length > 0) {
        const cmd = decodeKvCommand(e.data);
        reqId = cmd.id;
        output = n.kv.apply(cmd.input);
      }
      const waiting = n.pendingWrites.get(e.index);
      if (waiting !== undefined) {
        n.pendingWrites.delete(e.index);
        for (const w of waiting) {
          // The entry committed at this index is final: ours, or ours never will be.
          if (w.reqId === reqId) this.complete(w.client, w.reqId, 'ok', output);
          else this.complete(w.client, w.reqId, 'fail');
        }
      }
    }
    for (const rs of rd.readStates) {
      const ctx = new TextDecoder().decode(rs.context);
      const r = n.pendingReads.get(ctx);
      if (r !== undefined && r.readIndex === undefined) r.readIndex = rs.index;
    }
    n.node.advance();
    this.watch(n);
    for (const [ctx, r] of n.pendingReads) {
      if (r.readIndex !== undefined && r.readIndex <= n.applied) {
        n.pendingReads.delete(ctx);
        this.complete(r.client, ctx, 'ok', n.kv.get(r.key));
      }
    }
    if (n.applied - n.lastSnapshotIndex >= this.params.snapshotEvery) {
      n.disk.createSnapshot(n.applied, n.config, n.kv.snapshot());
      n.disk.compact(Math.max(n.disk.firstIndex() - 1, n.applied - this.params.snapshotKeep));
      n.lastSnapshotIndex = n.applied;
      this.stats.snapshotsTaken++;
      this.safety.observeState(n.id, n.applied, n.kv.fingerprint());
    }
  }

  crash(n: SimNode, downFor: number): void {
    if (!n.up) return;
    this.stats.crashes++;
    if (n.writing !== undefined) {
      // Power lost between write and fsync: the write may or may not have reached the platter.
      if (this.rng.chance(0.5)) {
        this.persist(n, n.writing);
        this.stats.keptWrites++;
      } else {
        this.stats.lostWrites++;
      }
      n.writing = undefined;
    }
    n.up = false;
    n.restartAt = this.now + downFor;
    this.abandon(n);
  }

  private abandon(n: SimNode): void {
    for (const waiting of n.pendingWrites.values()) for (const w of waiting) this.complete(w.client, w.reqId, 'info');
    n.pendingWrites.clear();
    for (const [ctx, r] of n.pendingReads) this.complete(r.client, ctx, 'fail');
    n.pendingReads.clear();
  }

  restart(n: SimNode): void {
    if (n.up || n.decommissioned) return;
    this.stats.restarts++;
    n.start(this.now, () => this.rng.fork());
    n.restartAt = Infinity;
  }

  private scheduleDecommission(id: NodeId): void {
    this.removed.add(id);
  }

  /** Restarts and decommissions that are due. */
  lifecycle(): void {
    for (const id of this.removed) {
      // The operator shuts a removed master down once the group shows a leader without it
      // (what `cairn masters remove` waits for), and maybe a while later; until then it may
      // still talk.
      const l = this.leader();
      if (l === undefined || l.id === id || l.config.voters.includes(id) || l.config.learners.includes(id)) continue;
      this.removed.delete(id);
      const n = this.nodes.get(id);
      if (n === undefined || n.decommissioned || n.decommissionAt !== Infinity) continue;
      n.decommissionAt = this.now + this.rng.range(0, 200);
    }
    for (const n of this.nodes.values()) {
      if (!n.decommissioned && n.decommissionAt <= this.now) {
        n.decommissioned = true;
        n.up = false;
        n.writing = undefined;
        this.abandon(n);
      }
      if (!n.up && !n.decommissioned && n.restartAt <= this.now) this.restart(n);
    }
  }

  // -------------------------------------------------------------------------------------
  // Operator

  /** A membership change (or a leadership transfer) through the current leader. */
  operate(): void {
    const l = this.leader();
    if (l === undefined) return;
    const cs = l.node.status().config;
    const roll = this.rng.float();
    if (roll < 0.15) {
      const to = this.rng.pick(cs.voters);
      this.attempt(() => {
        l.node.transferLeadership(to);
        this.stats.transfers++;
      });
      return;
    }
    let cc: ConfChange;
    if (roll < 0.25) {
      // A change that must be refused (a second change, a promotion of a voter, a removal
      // of a stranger), to exercise refusals; the group must not notice.
      cc = this.rng.pick<ConfChange>([
        { type: 'promote', nodeId: this.rng.pick(cs.voters) },
        { type: 'remove', nodeId: 999 },
        { type: 'addLearner', nodeId: this.rng.pick(cs.voters) },
      ]);
    } else if (cs.learners.length > 0) {
      cc = { type: 'promote', nodeId: this.rng.pick(cs.learners) };
    } else if (cs.voters.length < this.params.voters + 1 && this.nextSpare <= this.params.voters + this.params.spares) {
      cc = { type: 'addLearner', nodeId: this.nextSpare };
    } else if (cs.voters.length > 3 || this.rng.chance(0.2)) {
      cc = { type: 'remove', nodeId: this.rng.pick(cs.voters) };
    } else {
      return;
    }
    this.attempt(() => {
      l.node.proposeConfChange(cc);
      if (cc.type === 'addLearner') {
        // The new master starts with an empty disk and waits to be contacted.
        const n = new SimNode(cc.nodeId, this.params);
        this.nodes.set(cc.nodeId, n);
        n.start(this.now, () => this.rng.fork());
        this.nextSpare++;
      }
    });
  }

  private attempt(action: () => void): void {
    try {
      action();
    } catch (err) {
      if (!(err instanceof CairnError)) throw err;
      const allowed = [
        'CAIRN_RAFT_CHANGE_PENDING', 'CAIRN_RAFT_NO_QUORUM', 'CAIRN_RAFT_LEARNER_BEHIND', 'CAIRN_RAFT_BAD_CHANGE',
        'CAIRN_NOT_LEADER', 'CAIRN_RAFT_TRANSFERRING',
      ];
      if (!allowed.includes(err.code)) throw err;
      this.stats.refusals[err.code] = (this.stats.refusals[err.code] ?? 0) + 1;
    }
  }

  // -------------------------------------------------------------------------------------
  // Clients

  private record(e: HistoryEvent<KvInput, KvOutput>): void {
    this.history.push(e);
  }

  private complete(clientId: number, reqId: string, how: 'ok' | 'fail' | 'info', output?: KvOutput): void {
    const c = this.clients[clientId - 1];
    if (c.busy === undefined || c.busy.reqId !== reqId) return;
    if (how === 'ok') this.record({ type: 'ok', client: clientId, time: ++this.clock, output: output as KvOutput });
    else this.record({ type: how, client: clientId, time: ++this.clock });
    this.stats[how]++;
    c.busy = undefined;
  }

  /** Idle clients may start an operation; busy ones give up after their timeout. */
  clientsStep(allowInvoke: boolean): void {
    for (const c of this.clients) {
      if (c.busy !== undefined) {
        if (this.now >= c.busy.deadline) {
          const b = c.busy;
          // Once faults stop, a write accepted by a leader that is still leading in the same
          // term must be answered. (A leader deposed while the group settles may take its
          // uncommitted entries with it: their outcome stays unknown, as for any client. Reads
          // sent to a node that was not leader are dropped by design; the client retries.)
          const n = this.nodes.get(b.node);
          if (this.liveness && b.invokedInLiveness && b.kind === 'write' && n?.up && n.node.role === 'leader' && n.node.term === b.leaderTerm) {
            this.livenessTimeouts++;
            const at = [...(n?.pendingWrites ?? [])].filter(([, ws]) => ws.some((w) => w.reqId === b.reqId)).map(([i]) => i);
            this.timeoutNotes.push(`client ${c.id} ${b.reqId} on node ${b.node} (${n?.up ? n.node.role : 'down'}, applied ${n?.applied}): write at ${at.join(',')}`);
          }
          if (b.kind === 'read') {
            n?.pendingReads.delete(b.reqId);
            this.complete(c.id, b.reqId, 'fail');
          } else {
            for (const [index, waiting] of n?.pendingWrites ?? []) {
              const rest = waiting.filter((w) => w.reqId !== b.reqId);
              if (rest.length === 0) n!.pendingWrites.delete(index);
              else n!.pendingWrites.set(index, rest);
            }
            this.complete(c.id, b.reqId, 'info');
          }
        }
        continue;
      }
      if (allowInvoke && this.rng.chance(this.params.invokeChance)) this.invoke(c);
    }
  }

  private invoke(c: Client): void {
    const key = this.rng.pick(this.params.keys);
    const roll = this.rng.float();
    let input: KvInput;
    if (roll < 0.4) input = { op: 'get', key };
    else if (roll < 0.75) input = { op: 'put', key, value: this.nextValue++ };
    else {
      const from = this.rng.chance(0.3) ? null : this.rng.range(Math.max(1, this.nextValue - 8), this.nextValue);
      input = { op: 'cas', key, from, to: this.nextValue++ };
    }
    const reqId = `${c.id}.${++c.seq}`;
    const candidates = [...this.nodes.values()].filter((n) => !n.decommissioned);
    const hinted = this.nodes.get(c.leaderHint);
    // Mostly the node believed to lead; sometimes any node (followers serve reads too, and
    // a stale leader is only found by asking it).
    const target = hinted !== undefined && !hinted.decommissioned && this.rng.chance(0.7) ? hinted : this.rng.pick(candidates);
    this.record({ type: 'invoke', client: c.id, time: ++this.clock, input });
    c.busy = { reqId, node: target.id, kind: input.op === 'get' ? 'read' : 'write', deadline: this.now + (this.liveness ? 1000 : this.params.clientTimeout), invokedInLiveness: this.liveness, leaderTerm: target.up ? target.node.term : 0 };
    if (!target.up) {
      // Connection refused: certainly not applied.
      this.complete(c.id, reqId, 'fail');
      c.leaderHint = 0;
      return;
    }
    if (input.op === 'get') {
      if (!target.node.readIndex(new TextEncoder().encode(reqId))) {
        this.complete(c.id, reqId, 'fail');
        c.leaderHint = target.node.leader;
        return;
      }
      target.pendingReads.set(reqId, { client: c.id, key, readIndex: undefined });
      return;
    }
    try {
      const index = target.node.propose(encodeKvCommand({ id: reqId, input }));
      let waiting = target.pendingWrites.get(index);
      if (waiting === undefined) target.pendingWrites.set(index, (waiting = []));
      waiting.push({ client: c.id, reqId });
      c.leaderHint = target.id;
    } catch (err) {
      if (err instanceof NotLeaderError) {
        c.leaderHint = err.leaderId;
        this.complete(c.id, reqId, 'fail');
      } else if (err instanceof CairnError && (err.code === 'CAIRN_RAFT_TRANSFERRING' || err.code === 'CAIRN_RAFT_OVERLOADED')) {
        this.complete(c.id, reqId, 'fail');
      } else {
        throw err;
      }
    }
  }

  clientsIdle(): boolean {
    return this.clients.every((c) => c.busy === undefined);
  }

  /** Full-log Log Matching across live nodes. */
  checkLogs(): void {
    this.safety.checkLogsMatch(this.live());
  }

  time(): number {
    return ++this.clock;
  }
}

export { SafetyViolation };
