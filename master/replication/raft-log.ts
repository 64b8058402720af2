// The registry's command log replicated by Raft across the masters. This is the shell
// around the pure core (shared/raft): it ticks the clock, persists each Ready in SQLite
// before sending what depends on it, sends over the peer transport, and applies committed
// commands to the registry on every master. A command's proposer learns it is durable when
// its own entry comes back committed.

import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { CairnError } from '../../shared/errors.ts';
import { RaftNode } from '../../shared/raft/node.ts';
import { decodeConfChange } from '../../shared/raft/confchange.ts';
import { SeededRandom } from '../../shared/raft/random.ts';
import { SqliteRaftStorage } from '../../shared/raft/sqlite-storage.ts';
import type { Message, NodeId, Role } from '../../shared/raft/types.ts';
import { RaftWire } from '../../shared/raft/wire.ts';
import type { RegistryCommand } from '../registry/commands.ts';
import { Registry, type CommandLog } from '../registry/registry.ts';
import type { RegistrySnapshot } from '../registry/state-machine.ts';
import { PeerTransport } from './peer-transport.ts';

export interface RaftLogOptions {
  id: NodeId;
  /** Every founding member, this one included: id -> base URL (http://host:port). */
  members: ReadonlyMap<NodeId, string>;
  dataDir: string;
  clusterId: string;
  secret: string | Uint8Array;
  /** One tick; elections time out after electionTicks of them (default 100 ms × 10). */
  tickMs?: number;
  electionTicks?: number;
  /** Applied entries between snapshots of the registry. */
  snapshotEvery?: number;
  log: Logger;
}

export interface ReplicationStatus {
  id: NodeId;
  role: Role;
  leader: NodeId;
  leaderUrl: string | undefined;
  term: number;
  commit: number;
  applied: number;
  members: { id: NodeId; url: string; voter: boolean }[];
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

function encodeSnapshot(s: RegistrySnapshot): Uint8Array {
  return encoder.encode(JSON.stringify(s));
}

function decodeSnapshot(data: Uint8Array): RegistrySnapshot | undefined {
  return data.length === 0 ? undefined : (JSON.parse(decoder.decode(data)) as RegistrySnapshot);
}

export class RaftCommandLog implements CommandLog {
  readonly node: RaftNode;
  private readonly storage: SqliteRaftStorage;
  private readonly transport: PeerTransport;
  private readonly timer: NodeJS.Timeout;
  private readonly roleListeners: ((role: Role, leader: NodeId) => void)[] = [];
  private scheduled = false;
  private closed = false;
  private applied = 0;
  private sinceSnapshot = 0;
  private readonly snapshotEvery: number;
  private readonly members: Map<NodeId, string>;

  private constructor(
    private readonly opts: RaftLogOptions,
    readonly registry: Registry,
    storage: SqliteRaftStorage,
  ) {
    this.storage = storage;
    this.members = new Map(opts.members);
    this.snapshotEvery = opts.snapshotEvery ?? 10_000;
    this.applied = storage.snapshot().metadata.index;
    this.node = new RaftNode(
      { id: opts.id, random: new SeededRandom(Date.now() ^ (opts.id * 2654435761)), electionTicks: opts.electionTicks },
      storage,
    );
    const wire = new RaftWire({ clusterId: opts.clusterId, secret: opts.secret });
    this.transport = new PeerTransport(
      wire,
      (messages) => this.step(messages),
      (id) => this.node.reportUnreachable(id),
      opts.log.child({ component: 'raft-transport' }),
      (id) => {
        this.node.reportLeaderConnectionLost(id);
        this.schedule();
      },
      opts.id,
    );
    this.transport.setPeers(new Map([...this.members].filter(([id]) => id !== opts.id)));
    this.timer = setInterval(() => {
      this.node.tick();
      this.schedule();
    }, opts.tickMs ?? 100);
    this.timer.unref();
    this.schedule();
  }

  /** Opens (or founds) this master's replica and returns the registry it feeds. */
  static open(opts: RaftLogOptions, proposalPrefix: string): { registry: Registry; raft: RaftCommandLog } {
    if (!opts.members.has(opts.id)) {
      throw new CairnError('CAIRN_BAD_FLAG', `this master's id ${opts.id} is not among the members`, 'peers');
    }
    mkdirSync(opts.dataDir, { recursive: true });
    const storage = new SqliteRaftStorage(join(opts.dataDir, 'raft.sqlite'));
    if (storage.lastIndex() === 0 && storage.initialState().hardState.term === 0) storage.bootstrap([...opts.members.keys()]);
    const registry = new Registry(decodeSnapshot(storage.snapshot().data), proposalPrefix);
    const raft = new RaftCommandLog(opts, registry, storage);
    registry.attach(raft);
    return { registry, raft };
  }

  propose(proposalId: string, command: RegistryCommand): void {
    if (this.closed) throw new Error('registry is closed');
    this.node.propose(encoder.encode(JSON.stringify({ p: proposalId, c: command })));
    this.schedule();
  }

  onRoleChange(listener: (role: Role, leader: NodeId) => void): void {
    this.roleListeners.push(listener);
  }

  handleUpgrade: PeerTransport['handleUpgrade'] = (req, socket, head) => this.transport.handleUpgrade(req, socket, head);

  get badFrames(): number {
    return this.transport.badFrames;
  }

  status(): ReplicationStatus {
    const s = this.node.status();
    const voters = new Set(s.config.voters);
    return {
      id: s.id,
      role: s.role,
      leader: s.leader,
      leaderUrl: s.leader ? this.members.get(s.leader) : undefined,
      term: s.term,
      commit: s.commit,
      applied: this.applied,
      members: [...s.config.voters, ...s.config.learners].map((id) => ({ id, url: this.members.get(id) ?? '', voter: voters.has(id) })),
    };
  }

  private step(messages: Message[]): void {
    if (this.closed) return;
    for (const m of messages) {
      if (m.to !== this.opts.id) continue;
      this.node.step(m);
    }
    this.schedule();
  }

  private schedule(): void {
    if (this.scheduled || this.closed) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      this.process();
    });
  }

  /** The Ready loop: persist, then send (a leader's appends first), then apply, then advance. */
  private process(): void {
    while (!this.closed && this.node.hasReady()) {
      const rd = this.node.ready();
      // A leader's appends promise nothing about its own disk (its copy counts towards a
      // quorum only once persisted() says so), so they go out before its fsync and the
      // followers write in parallel with it (Raft thesis §10.2.1). Everything else (votes,
      // acknowledgements) speaks for what this write makes durable and waits for it.
      const early = rd.messages.filter((m) => m.type === 'append');
      const late = early.length === 0 ? rd.messages : rd.messages.filter((m) => m.type !== 'append');
      if (early.length > 0) this.transport.send(early);
      if (rd.snapshot || rd.entries.length > 0 || rd.hardState) {
        this.storage.save({ snapshot: rd.snapshot, entries: rd.entries, hardState: rd.hardState, mustSync: rd.mustSync });
      }
      if (late.length > 0) this.transport.send(late);
      if (rd.snapshot) {
        const snap = decodeSnapshot(rd.snapshot.data);
        this.registry.restore(snap ?? { agents: [], frameworks: [], tasks: [] });
        this.applied = rd.snapshot.metadata.index;
      }
      for (const e of rd.committedEntries) {
        this.applied = e.index;
        if (e.type === 'confChange') {
          this.node.applyConfChange(decodeConfChange(e.data));
          continue;
        }
        if (e.data.length === 0) continue; // a new leader's empty entry
        const { p, c } = JSON.parse(decoder.decode(e.data)) as { p: string; c: RegistryCommand };
        this.registry.applyCommitted(c, p);
        this.sinceSnapshot++;
      }
      if (rd.softState) {
        if (rd.softState.role !== 'leader') this.registry.failPending(new CairnError('CAIRN_NOT_LEADER', 'this master lost leadership before the change committed'));
        for (const l of this.roleListeners) l(rd.softState.role, rd.softState.leader);
      }
      this.node.advance();
      if (this.sinceSnapshot >= this.snapshotEvery) this.snapshot();
    }
  }

  private snapshot(): void {
    this.sinceSnapshot = 0;
    const conf = this.node.status().config;
    this.storage.createSnapshot(this.applied, conf, encodeSnapshot(this.registry.state.snapshot()));
    // Keep a tail so that followers a little behind catch up from the log, not a snapshot.
    const keepFrom = this.applied - 1000;
    if (keepFrom > this.storage.firstIndex()) this.storage.compact(keepFrom);
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.timer);
    this.transport.close();
    this.storage.close();
  }
}
