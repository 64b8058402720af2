// The registry's command log replicated by Raft across the masters. This is the shell
// around the pure core (shared/raft): it ticks the clock, persists each Ready in SQLite
// before sending what depends on it, sends over the peer transport, and applies committed
// commands to the registry on every master. A command's proposer learns it is durable when
// its own entry comes back committed. Membership changes (an operator adding, replacing or
// removing a master) go through here too, one server at a time; the URLs of members travel
// in the log with them (see members.ts), so the transport learns and forgets peers.
//
// A disk that refuses a write (full, over quota, failing) does not stop the master. The
// Ready whose write failed is held: nothing that speaks for it is sent (no vote, no
// acknowledgement, no heartbeat), nothing of it is applied, and it is written again every
// 250 ms until the disk takes it. Meanwhile the proposals waiting here are told
// CAIRN_STORAGE_FULL (507) and new ones refused with it; reads are answered from the state
// in memory. A leader that cannot write falls silent, so the members that can write elect
// another; once the disk has room the held Ready is written and the member carries on where
// it was, without a restart.

import { mkdirSync } from 'node:fs';
import { fileSize } from '../../shared/file-size.ts';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { componentLogger } from '../../shared/logger.ts';
import { CairnError } from '../../shared/errors.ts';
import { cryptoRandom } from '../../shared/crypto-random.ts';
import { RaftNode, type Ready } from '../../shared/raft/node.ts';
import { decodeConfChange } from '../../shared/raft/confchange.ts';
import { SqliteRaftStorage } from '../../shared/raft/sqlite-storage.ts';
import type { ConfChange, Message, NodeId, Role } from '../../shared/raft/types.ts';
import { RaftWire } from '../../shared/raft/wire.ts';
import type { MastersView } from '../../shared/masters-view.ts';
import type { RegistryCommand } from '../registry/commands.ts';
import { Registry, type CommandLog } from '../registry/registry.ts';
import {
  addMasterProblem, decodeReplicaSnapshot, encodeReplicaSnapshot, planAddMaster, removeMasterProblem, renameField,
  urlsAfterChange, urlsFromSnapshot, type AddMasterRequest, type LocalMembership,
} from './members.ts';
import { askPeersAboutSelf, PeerTransport, type IncarnationGuard } from './peer-transport.ts';
import { MemberIncarnations, type IncarnationChanges } from './incarnations.ts';
import { encodeCommandEntry, encodeIncarnationEntry, readLogEntry } from './log-entry.ts';
import { monotonicMs } from '../../shared/steady-clock.ts';
import { isStorageRefusal, storageFull } from '../../shared/storage-full.ts';
import { DEFAULT_COMPACTION, logOutgrown, ShrinkPacer, snapshotShrinks, type CompactionLimits, type LogSize } from '../registry/compaction-policy.ts';

export interface RaftLogOptions {
  id: NodeId;
  /**
   * Every founding member, this one included: id -> base URL (http://host:port). For a
   * master joining a running group (`join`): this one and at least one current member.
   */
  members: ReadonlyMap<NodeId, string>;
  /**
   * This master joins a running group rather than founding one: with an empty data dir it
   * starts with no membership and waits for the leader to send it the log once an operator
   * has added it (POST /api/v1/masters). Ignored once the data dir holds a log.
   */
  join?: boolean;
  dataDir: string;
  clusterId: string;
  secret: string | Uint8Array;
  /** One tick; elections time out after electionTicks of them (default 100 ms × 10). */
  tickMs?: number;
  electionTicks?: number;
  /** Applied entries between snapshots of the registry (default: compaction's maxEntries, 10,000 when neither is given). */
  snapshotEvery?: number;
  /** When the log is folded into a snapshot (registry/compaction-policy.ts); snapshotEvery, when given, is its maxEntries. */
  compaction?: Partial<CompactionLimits>;
  /** How long a master with empty storage waits for its peers' answers before founding (default 2 s). */
  askPeersTimeoutMs?: number;
  /** How long an added master may take to catch up before its promotion is given up (default 60 s). */
  catchUpTimeoutMs?: number;
  log: Logger;
  /** TLS options of the connections to peers (shared/tls.ts: the CA to verify them with, the certificate to present). */
  dial?: { ca?: Buffer; cert?: Buffer; key?: Buffer };
}

export interface ReplicationStatus {
  id: NodeId;
  role: Role;
  leader: NodeId;
  leaderUrl: string | undefined;
  term: number;
  commit: number;
  applied: number;
  /** Each member, with its storage incarnation once the log records it. */
  members: { id: NodeId; url: string; voter: boolean; incarnation?: string }[];
  /** Peer frames refused (undecodable, unauthenticated, another cluster's, replayed). */
  badPeerFrames: number;
  /** Of those, frames refused as replayed (sent again on their connection, or an old welcome). */
  replayedPeerFrames: number;
  /** This master's storage incarnation (a random id made with its Raft storage). */
  incarnation: string;
  /**
   * Whether this master's copy may answer reads: it leads (with its own term's entry
   * applied), or it has heard from a leader and applied what that leader had committed.
   */
  ready: boolean;
  /** Why not, when not ready. */
  notReady?: string;
  /** Set while this master's disk refuses writes: what it said. Writes are refused (507) meanwhile. */
  storageRefusing?: string;
}


function storageLost(opts: RaftLogOptions, what: string): CairnError {
  return new CairnError(
    'CAIRN_RAFT_STORAGE_LOST',
    `${what}. A member that lost its log must not vote or found a new group: restore its data dir (${opts.dataDir}), ` +
      `or remove it (cairn masters remove ${opts.id}), empty its data dir, start it with --new-member and add it again (cairn masters add)`,
    'dataDir',
  );
}

const EMPTY_REGISTRY = { agents: [], frameworks: [], tasks: [] };

/**
 * The log a master keeps behind its snapshot for followers a little behind: at most so many
 * entries and bytes, and never more bytes than the snapshot (sending that is then cheaper).
 */
const TAIL_ENTRIES = 1000;
/** How often a Ready the disk refused is written again. */
const HELD_RETRY_MS = 250;
const TAIL_BYTES = 8 * 1024 * 1024;

/** A membership change proposed here, waiting to come back applied. */
interface PendingChange {
  term: number;
  resolve: () => void;
  reject: (err: Error) => void;
}

export class RaftCommandLog implements CommandLog {
  readonly node: RaftNode;
  private readonly storage: SqliteRaftStorage;
  private readonly transport: PeerTransport;
  private readonly timer: NodeJS.Timeout;
  private readonly roleListeners: ((role: Role, leader: NodeId) => void)[] = [];
  /** Term of the last applied entry. */
  private appliedTerm = 0;
  /** Set while this master leads but has not yet applied an entry of its own term. */
  private leadingFromTerm: number | undefined;
  private scheduled = false;
  private closed = false;
  private applied = 0;
  /** Entries and bytes applied since the last snapshot, and the snapshot's bytes. */
  private readonly sinceSnapshot: LogSize = { entries: 0, bytes: 0, snapshotBytes: 0 };
  private readonly limits: CompactionLimits;
  private readonly pacer: ShrinkPacer;
  /** The Ready whose write the disk refused, with what it holds back, and when to write it again. */
  private held: { rd: Ready; late: readonly Message[]; retryAtMs: number } | undefined;
  /** The disk's last refusal, until a write succeeds again. */
  private refusing: Error | undefined;
  /** Peers' incarnations learnt (or forgotten) while the disk refused them: written once it takes writes. */
  private readonly unsavedIncarnations = new Map<NodeId, string | undefined>();
  /** Every member's URL as of the applied index (this master's own always included). */
  private members: Map<NodeId, string>;
  private readonly pendingChanges = new Map<number, PendingChange>();
  /** The operator's membership change this master (as leader) is carrying out, if any: one at a time. */
  private change: MastersView['change'] = null;
  /** Each member's storage incarnation: the group's record in the log, else as first seen here (incarnations.ts). */
  private readonly incarnations: MemberIncarnations;
  /** Peers that present no incarnation (a version from before them): none is recorded for them. */
  private readonly withoutIncarnation = new Set<NodeId>();
  /** Entries of a kind this master does not know (a newer master's), logged once. */
  private unknownEntryLogged = false;
  /** Peers whose storage was lost, each logged once per incarnation seen. */
  private readonly lostLogged = new Map<NodeId, string>();
  /** Set when a peer knows this master by another incarnation: it keeps out of the group. */
  private lost: { peer: NodeId; known: string } | undefined;
  /** Latched once this master leads or has caught up with a leader's commit index. */
  private caughtUp = false;

  private constructor(
    private readonly opts: RaftLogOptions,
    readonly registry: Registry,
    storage: SqliteRaftStorage,
  ) {
    this.storage = storage;
    const snap = storage.snapshot();
    const replica = decodeReplicaSnapshot(snap.data);
    this.members = urlsFromSnapshot(replica.urls, opts.members, snap.metadata.confState, opts.id);
    // The records of the snapshot; those of the log after it are applied again at start.
    this.incarnations = new MemberIncarnations(storage.peerIncarnations(), replica.incarnations);
    this.limits = { ...DEFAULT_COMPACTION, maxEntries: 10_000, ...opts.compaction, ...(opts.snapshotEvery !== undefined ? { maxEntries: opts.snapshotEvery } : {}) };
    this.pacer = new ShrinkPacer(this.limits.checkEveryMs, monotonicMs());
    this.sinceSnapshot.snapshotBytes = snap.data.length;
    this.applied = storage.snapshot().metadata.index;
    this.appliedTerm = storage.snapshot().metadata.term;
    this.node = new RaftNode(
      // Election timeouts from the OS's CSPRNG: masters started together still draw apart.
      { id: opts.id, random: cryptoRandom(), electionTicks: opts.electionTicks },
      storage,
    );
    const wire = new RaftWire({ clusterId: opts.clusterId, secret: opts.secret, incarnation: storage.incarnation });
    this.transport = new PeerTransport(
      wire,
      (messages) => this.step(messages),
      (id) => this.node.reportUnreachable(id),
      componentLogger(opts.log, 'transport'),
      (id) => {
        this.node.reportLeaderConnectionLost(id);
        this.schedule();
      },
      opts.id,
      opts.dial,
      this.guard(),
      storage.incarnation,
    );
    this.setPeers();
    this.timer = setInterval(() => {
      if (this.lost !== undefined) return;
      this.node.tick();
      this.schedule();
      this.shrinkIfWorth();
    }, opts.tickMs ?? 100);
    this.timer.unref();
    this.schedule();
  }

  /**
   * Opens (or founds) this master's replica and returns the registry it feeds. A master with
   * no log that is not told it is new (`join`) founds the group only if it is a new group:
   * a 0-byte raft.sqlite, or a peer that knows this master from an earlier start, means its
   * storage was lost, and it refuses to start (CAIRN_RAFT_STORAGE_LOST) rather than vote or
   * found a group again with nothing it acknowledged (as etcd refuses a member whose data dir
   * is gone: it must be removed and added back).
   */
  static async open(opts: RaftLogOptions, proposalPrefix: string): Promise<{ registry: Registry; raft: RaftCommandLog }> {
    if (!opts.members.has(opts.id)) {
      throw new CairnError('CAIRN_BAD_FLAG', `this master's id ${opts.id} is not among the members`, 'peers');
    }
    mkdirSync(opts.dataDir, { recursive: true });
    const path = join(opts.dataDir, 'raft.sqlite');
    if (!opts.join && fileSize(path) === 0) {
      throw storageLost(opts, `${path} is empty (0 bytes): this master's Raft log is gone`);
    }
    const storage = new SqliteRaftStorage(path);
    const fresh = storage.lastIndex() === 0 && storage.initialState().hardState.term === 0;
    if (fresh && !opts.join) {
      let answers: { peer: NodeId; known: string }[];
      try {
        const wire = new RaftWire({ clusterId: opts.clusterId, secret: opts.secret, incarnation: storage.incarnation });
        answers = await askPeersAboutSelf(wire, opts.id, opts.members, opts.askPeersTimeoutMs ?? 2_000, opts.dial);
      } catch (err) {
        storage.close();
        throw err;
      }
      const knower = answers.find((a) => a.known !== '' && a.known !== storage.incarnation);
      if (knower !== undefined) {
        storage.close();
        throw storageLost(opts, `${path} holds no Raft log, but master ${knower.peer} knows master ${opts.id} from an earlier start (its storage was lost or replaced)`);
      }
      storage.bootstrap([...opts.members.keys()]);
    }
    if (fresh && opts.join) opts.log.info({ id: opts.id }, 'joining a running group: waiting for the leader to add this master');
    const registry = new Registry(decodeReplicaSnapshot(storage.snapshot().data).registry, proposalPrefix);
    const raft = new RaftCommandLog(opts, registry, storage);
    registry.attach(raft);
    return { registry, raft };
  }

  propose(proposalId: string, command: RegistryCommand): void {
    if (this.closed) throw new Error('registry is closed');
    // Behind a Ready the disk refused, a proposal could only wait; once nothing is held, the
    // next write finds out whether the disk has room again.
    if (this.held !== undefined) throw storageFull(this.opts.dataDir, this.refusing, 'the change was not recorded');
    this.node.propose(encodeCommandEntry(proposalId, command));
    this.schedule();
  }

  onRoleChange(listener: (role: Role, leader: NodeId) => void): void {
    this.roleListeners.push(listener);
  }

  handleUpgrade: PeerTransport['handleUpgrade'] = (req, socket, head) => this.transport.handleUpgrade(req, socket, head);

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
      members: [...s.config.voters, ...s.config.learners].map((id) => {
        const incarnation = this.incarnations.recorded(id);
        return { id, url: this.members.get(id) ?? '', voter: voters.has(id), ...(incarnation !== undefined ? { incarnation } : {}) };
      }),
      badPeerFrames: this.transport.badFrames,
      replayedPeerFrames: this.transport.replayedFrames,
      incarnation: this.storage.incarnation,
      ...this.readiness(s.role, s.leader, s.commit),
      ...(this.refusing !== undefined ? { storageRefusing: this.refusing.message } : {}),
    };
  }

  private readiness(role: Role, leader: NodeId, commit: number): { ready: boolean; notReady?: string } {
    if (this.lost !== undefined) {
      return { ready: false, notReady: `master ${this.lost.peer} knows this master by another storage incarnation: its Raft storage was lost; remove it (cairn masters remove ${this.opts.id}), then start it with --new-member and an empty data dir and add it again` };
    }
    if (!this.caughtUp) {
      if (role === 'leader' && this.leadingFromTerm === undefined) this.caughtUp = true;
      else if (role !== 'leader' && leader !== 0 && this.applied >= commit && this.node.status().config.voters.length + this.node.status().config.learners.length > 0) this.caughtUp = true;
    }
    if (this.caughtUp) return { ready: true };
    return { ready: false, notReady: leader === 0 ? `no leader known yet (applied index ${this.applied})` : `catching up with the leader (applied index ${this.applied} of ${commit})` };
  }

  /** Judges peers' incarnations for the transport (see IncarnationGuard). */
  private guard(): IncarnationGuard {
    return {
      known: (id) => this.incarnations.known(id),
      admit: (id, incarnation, pin) => {
        if (incarnation === '') this.withoutIncarnation.add(id);
        if (incarnation === '' || this.closed) return true;
        const known = this.incarnations.known(id);
        const { admitted, changes } = this.incarnations.admit(id, incarnation, pin && this.members.has(id));
        if (changes.length > 0) {
          this.saveIncarnations(changes);
          // Leading, this master records a member first seen now in the log.
          this.schedule();
        }
        if (admitted) return true;
        if (this.lostLogged.get(id) !== incarnation) {
          this.lostLogged.set(id, incarnation);
          this.opts.log.error(
            { peer: id, known, presented: incarnation },
            `master ${id} presents another storage incarnation than the group knows: its storage was lost or replaced. ` +
              `It is kept out (no votes, no acknowledgements) and no longer counted as matched; remove it (cairn masters remove ${id}) and add it again, started with --new-member`,
          );
        }
        this.node.reportStorageLost(id);
        this.schedule();
        return false;
      },
      selfLost: (peer, known) => {
        if (this.lost !== undefined) return;
        this.lost = { peer, known };
        this.opts.log.error(
          { peer, known, incarnation: this.storage.incarnation },
          `master ${peer} knows this master (${this.opts.id}) by another storage incarnation: this master's Raft storage was lost. ` +
            `It keeps out of the group (no votes, no reads); remove it (cairn masters remove ${this.opts.id}), then start it with --new-member and an empty data dir and add it again`,
        );
      },
    };
  }

  /** The membership as this master knows it, for the listing (members.ts: mastersListing). */
  membership(): LocalMembership {
    const s = this.node.status();
    return {
      id: s.id,
      role: s.role,
      leader: s.leader,
      term: s.term,
      commit: s.commit,
      applied: this.applied,
      conf: s.config,
      urls: this.members,
      progress: s.progress,
      change: this.change,
    };
  }

  /**
   * Adds master `req.id` at `req.url` on the leader, one server at a time: as a learner
   * first, promoted to voter once it has caught up, then (for a replacement) the replaced
   * voter removed. Resolves when the last step is applied here. Refusals (CairnError, field
   * named as in the HTTP API) change nothing; a failure after the first step says which
   * steps were done, and repeating the request finishes them.
   */
  async addMaster(req: AddMasterRequest): Promise<void> {
    this.requireNoChange();
    const conf = this.node.status().config;
    const problem = addMasterProblem(conf, this.members, req);
    if (problem !== undefined) throw problem;
    const plan = planAddMaster(conf, req);
    const kind = req.replaces === undefined ? 'add' : 'replace';
    this.change = { kind, id: req.id, url: req.url, ...(req.replaces !== undefined ? { replaces: req.replaces } : {}), step: plan[0].type };
    const done: string[] = [];
    try {
      for (const cc of plan) {
        this.change = { ...this.change, step: cc.type };
        const field = cc.type === 'remove' ? 'replaces' : 'id';
        try {
          if (cc.type === 'promote') await this.promoteWhenCaughtUp(cc, req.url);
          else await this.proposeChange(cc);
        } catch (err) {
          if (!(err instanceof CairnError)) throw err;
          const named = renameField(err, field);
          if (done.length === 0) throw named;
          const message = named.message.startsWith(`${field}: `) ? named.message.slice(field.length + 2) : named.message;
          throw new CairnError(named.code, `${done.join(', ')}; then ${cc.type} failed: ${message}`, field);
        }
        done.push(cc.type === 'addLearner' ? `master ${cc.nodeId} was added as a learner` : cc.type === 'promote' ? `master ${cc.nodeId} was promoted to voter` : `master ${cc.nodeId} was removed`);
      }
    } finally {
      this.change = null;
    }
  }

  /** Removes master `id` (voter or learner) on the leader; resolves once the removal is applied here. */
  async removeMaster(id: NodeId): Promise<void> {
    this.requireNoChange();
    const problem = removeMasterProblem(this.node.status().config, id);
    if (problem !== undefined) throw problem;
    this.change = { kind: 'remove', id, step: 'remove' };
    try {
      await this.proposeChange({ type: 'remove', nodeId: id });
    } catch (err) {
      throw err instanceof CairnError ? renameField(err, 'id') : err;
    } finally {
      this.change = null;
    }
  }

  private requireNoChange(): void {
    if (this.closed) throw new CairnError('CAIRN_NOT_LEADER', 'this master is stopping');
    if (this.change !== null) {
      const c = this.change;
      const what = c.kind === 'remove' ? `removing master ${c.id}` : c.kind === 'replace' ? `replacing master ${c.replaces} by ${c.id}` : `adding master ${c.id}`;
      throw new CairnError('CAIRN_RAFT_CHANGE_PENDING', `${what} is in progress (step: ${c.step}); one membership change at a time`);
    }
  }

  /** Proposes one change; resolves when it is applied here, rejects when it was refused or lost. */
  private async proposeChange(cc: ConfChange): Promise<void> {
    if (this.held !== undefined) throw storageFull(this.opts.dataDir, this.refusing, 'the membership change was not made');
    let term = this.node.term;
    let index: number;
    try {
      index = this.node.proposeConfChange(cc);
    } catch (err) {
      // The core judges reachability by whom it heard from since its last CheckQuorum round,
      // which starts afresh every election timeout; just after one, live members have not
      // answered yet. Ask once more when they have (a heartbeat's answer), then take the word.
      if ((err as CairnError).code !== 'CAIRN_RAFT_NO_QUORUM' || this.closed) throw err;
      await new Promise((r) => setTimeout(r, 3 * (this.opts.tickMs ?? 100)));
      term = this.node.term;
      index = this.node.proposeConfChange(cc);
    }
    this.schedule();
    return new Promise((resolve, reject) => this.pendingChanges.set(index, { term, resolve, reject }));
  }

  /**
   * The core refuses a promotion until the learner has caught up, and this master waits too
   * until the log records the learner's storage incarnation (proposed once its handshake
   * showed it): ask again each tick, up to a limit.
   */
  private async promoteWhenCaughtUp(cc: ConfChange, url: string): Promise<void> {
    const limitMs = this.opts.catchUpTimeoutMs ?? 60_000;
    const deadline = monotonicMs() + limitMs;
    for (;;) {
      try {
        if (this.incarnations.recorded(cc.nodeId) === undefined && !this.withoutIncarnation.has(cc.nodeId)) {
          throw new CairnError('CAIRN_RAFT_LEARNER_BEHIND', `learner ${cc.nodeId}'s storage incarnation is not recorded yet (it has not answered this leader)`, 'nodeId');
        }
        await this.proposeChange(cc);
        return;
      } catch (err) {
        if ((err as CairnError).code !== 'CAIRN_RAFT_LEARNER_BEHIND' || this.closed) throw err;
        if (monotonicMs() >= deadline) {
          throw new CairnError(
            'CAIRN_RAFT_LEARNER_BEHIND',
            `master ${cc.nodeId} has not caught up within ${Math.round(limitMs / 1000)} s ` +
              `(${(err as Error).message.replace(/^nodeId: /, '')}); is it running at ${url}, started with --new-member? ` +
              'It stays a learner: repeat the add to promote it once it has caught up, or remove it',
            'id',
          );
        }
        await new Promise((r) => setTimeout(r, this.opts.tickMs ?? 100));
      }
    }
  }

  private settleChange(index: number, term: number): void {
    const w = this.pendingChanges.get(index);
    if (w === undefined) return;
    this.pendingChanges.delete(index);
    if (term === w.term) w.resolve();
    else w.reject(new CairnError('CAIRN_NOT_LEADER', 'the membership change was lost in a change of leader; it was not applied'));
  }

  private failChanges(err: Error, upTo = Number.MAX_SAFE_INTEGER): void {
    for (const [index, w] of this.pendingChanges) {
      if (index > upTo) continue;
      this.pendingChanges.delete(index);
      w.reject(err);
    }
  }

  private setPeers(): void {
    this.transport.setPeers(new Map([...this.members].filter(([id]) => id !== this.opts.id)));
  }

  private step(messages: Message[]): void {
    if (this.closed || this.lost !== undefined) return;
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
    while (!this.closed) {
      let rd: Ready;
      let late: readonly Message[];
      if (this.held !== undefined) {
        // Every message that arrives schedules this loop; the disk is asked again only so often.
        if (monotonicMs() < this.held.retryAtMs) return;
        ({ rd, late } = this.held);
      } else {
        if (!this.node.hasReady()) break;
        rd = this.node.ready();
        // A leader's appends promise nothing about its own disk (its copy counts towards a
        // quorum only once persisted() says so), so they go out before its fsync and the
        // followers write in parallel with it (Raft thesis §10.2.1). Everything else (votes,
        // acknowledgements) speaks for what this write makes durable and waits for it.
        const early = rd.messages.filter((m) => m.type === 'append');
        late = early.length === 0 ? rd.messages : rd.messages.filter((m) => m.type !== 'append');
        // A master whose storage was lost sends nothing: no votes, no acknowledgements.
        if (early.length > 0 && this.lost === undefined) this.transport.send(early);
      }
      if (!this.persist(rd)) {
        this.held = { rd, late, retryAtMs: monotonicMs() + HELD_RETRY_MS };
        return;
      }
      this.held = undefined;
      if (late.length > 0 && this.lost === undefined) this.transport.send(late);
      if (rd.snapshot) {
        const snap = decodeReplicaSnapshot(rd.snapshot.data);
        this.registry.restore(snap.registry ?? EMPTY_REGISTRY);
        this.applied = rd.snapshot.metadata.index;
        this.appliedTerm = rd.snapshot.metadata.term;
        Object.assign(this.sinceSnapshot, { entries: 0, bytes: 0, snapshotBytes: rd.snapshot.data.length });
        this.members = urlsFromSnapshot(snap.urls, this.opts.members, rd.snapshot.metadata.confState, this.opts.id);
        this.saveIncarnations(this.incarnations.restore(snap.incarnations));
        this.setPeers();
        this.failChanges(new CairnError('CAIRN_NOT_LEADER', 'a snapshot from another leader replaced the log; check the membership'), this.applied);
      }
      for (const e of rd.committedEntries) {
        this.applied = e.index;
        this.appliedTerm = e.term;
        this.settleChange(e.index, e.term);
        if (e.type === 'confChange') {
          const cc = decodeConfChange(e.data);
          this.node.applyConfChange(cc);
          // A member removed, or added (again), is a new member next time: its incarnation is learnt afresh.
          this.saveIncarnations(this.incarnations.confChange(cc, this.opts.id));
          this.members = urlsAfterChange(this.members, cc, this.opts.id);
          this.setPeers();
          continue;
        }
        if (e.data.length === 0) continue; // a new leader's empty entry
        this.sinceSnapshot.entries++;
        this.sinceSnapshot.bytes += e.data.length;
        this.applyEntry(e.index, e.data);
      }
      if (rd.softState) {
        if (rd.softState.role !== 'leader') {
          this.registry.failPending(new CairnError('CAIRN_NOT_LEADER', 'this master lost leadership before the change committed'));
          this.failChanges(new CairnError('CAIRN_NOT_LEADER', 'this master stopped leading before the membership change was applied; `cairn masters` shows whether it took effect'));
          this.leadingFromTerm = undefined;
          this.incarnations.withdraw();
          for (const l of this.roleListeners) l(rd.softState.role, rd.softState.leader);
        } else {
          // A new leader's log holds every committed entry, but it knows which are committed
          // (and has applied them) only once an entry of its own term commits. Until then its
          // registry may miss what the last leader did — a launched task, an acknowledgement —
          // so the leader's services wait for that entry, its empty one, to be applied.
          this.leadingFromTerm = this.node.term;
        }
      }
      if (this.leadingFromTerm !== undefined && this.appliedTerm >= this.leadingFromTerm && this.node.role === 'leader') {
        this.leadingFromTerm = undefined;
        for (const l of this.roleListeners) l('leader', this.node.leader);
      }
      this.node.advance();
      if (logOutgrown(this.sinceSnapshot, this.limits)) this.snapshot(this.snapshotData());
    }
    if (this.recordIncarnations()) this.schedule();
  }

  /** Applies a committed normal entry: a registry command, or a member's incarnation record for this layer. */
  private applyEntry(index: number, data: Uint8Array): void {
    const body = readLogEntry(data);
    if (body.kind === 'incarnation') {
      this.saveIncarnations(this.incarnations.record(body.record, this.node.isMember(body.record.id)));
    } else if (body.kind === 'command') {
      this.registry.applyCommitted(body.command, body.proposal);
    } else {
      // Written by no version of this master: skipped, as every master skips it.
      if (!this.unknownEntryLogged) this.opts.log.warn({ index }, 'skipped a log entry of an unknown kind');
      this.unknownEntryLogged = true;
    }
  }

  /**
   * On the leader, once it has applied an entry of its term: proposes the record of every
   * member's incarnation the log does not hold yet (its own, and each peer's as its
   * handshake showed it), so that every master — one added later too — knows them all.
   * True when something was proposed.
   */
  private recordIncarnations(): boolean {
    if (this.closed || this.held !== undefined || this.lost !== undefined) return false;
    if (this.node.role !== 'leader' || this.leadingFromTerm !== undefined) return false;
    // The members as of the applied index (this one among them).
    const due = this.incarnations.due([...this.members.keys()], this.opts.id, this.storage.incarnation);
    let proposed = false;
    for (const record of due) {
      try {
        this.node.propose(encodeIncarnationEntry(record));
        proposed = true;
      } catch (err) {
        if (!(err instanceof CairnError)) throw err;
        // Refused now (overloaded): asked again at the next round.
        this.incarnations.withdraw(record.id);
      }
    }
    return proposed;
  }

  /**
   * Writes a Ready's snapshot, entries and hard state (and peers' incarnations learnt while
   * the disk refused them); false when the disk refused it, which is then reported once.
   */
  private persist(rd: Ready): boolean {
    try {
      if (rd.snapshot || rd.entries.length > 0 || rd.hardState) {
        this.storage.save({ snapshot: rd.snapshot, entries: rd.entries, hardState: rd.hardState, mustSync: rd.mustSync });
      }
      for (const [id, incarnation] of this.unsavedIncarnations) {
        this.storage.setPeerIncarnation(id, incarnation);
        this.unsavedIncarnations.delete(id);
      }
    } catch (err) {
      if (!isStorageRefusal(err)) throw err;
      this.refused(err as Error);
      return false;
    }
    if (this.refusing !== undefined) {
      this.refusing = undefined;
      this.opts.log.info({ dataDir: this.opts.dataDir }, 'the data dir takes writes again: this master votes, acknowledges and takes changes again');
    }
    return true;
  }

  private refused(err: Error): void {
    if (this.refusing === undefined) {
      this.opts.log.warn(
        { dataDir: this.opts.dataDir, err: err.message },
        'the data dir refuses writes (disk full?): this master sends no votes or acknowledgements and refuses changes with 507 until it has room; reads are served',
      );
      // What waits here cannot be confirmed by this master now; a quorum that can write may still commit it.
      const unknown = storageFull(this.opts.dataDir, err, 'this master cannot confirm the change; it may still be applied by the masters that can write');
      this.registry.failPending(unknown);
      this.failChanges(unknown);
    }
    this.refusing = err;
  }

  /** Records members' incarnations (undefined: forgotten) now, or with the next write the disk takes. */
  private saveIncarnations(changes: IncarnationChanges): void {
    for (const [id, incarnation] of changes) {
      this.unsavedIncarnations.delete(id);
      try {
        this.storage.setPeerIncarnation(id, incarnation);
      } catch (err) {
        if (!isStorageRefusal(err)) throw err;
        this.unsavedIncarnations.set(id, incarnation);
      }
    }
  }

  private snapshotData(): Uint8Array {
    return encodeReplicaSnapshot(this.registry.state.snapshot(), this.members, this.incarnations.snapshotRecords());
  }

  /** Measures the state now and then: after deletions a snapshot of it may shrink the store. */
  private shrinkIfWorth(): void {
    const started = monotonicMs();
    if (this.closed || this.held !== undefined || !this.pacer.due(started, this.sinceSnapshot)) return;
    const data = this.snapshotData();
    this.pacer.measured(monotonicMs(), monotonicMs() - started);
    if (snapshotShrinks(this.sinceSnapshot, data.length)) this.snapshot(data);
  }

  /** Snapshots the applied state (`data`) and drops the log behind it but a short tail; a refusal of the disk leaves both for later. */
  private snapshot(data: Uint8Array): void {
    if (this.applied <= this.storage.snapshot().metadata.index) return;
    const conf = this.node.status().config;
    try {
      this.storage.createSnapshot(this.applied, conf, data);
      Object.assign(this.sinceSnapshot, { entries: 0, bytes: 0, snapshotBytes: data.length });
      // Keep a tail so that followers a little behind catch up from the log, not a snapshot.
      const keepFrom = this.tailStart(Math.min(TAIL_BYTES, data.length));
      if (keepFrom > this.storage.firstIndex()) this.storage.compact(keepFrom);
    } catch (err) {
      if (!isStorageRefusal(err)) throw err;
      this.refused(err as Error);
    }
  }

  /** The last index to drop: the tail after it holds at most TAIL_ENTRIES entries and `maxBytes`. */
  private tailStart(maxBytes: number): number {
    const first = this.storage.firstIndex();
    const from = Math.max(first, this.applied - TAIL_ENTRIES + 1);
    if (from > this.applied) return this.applied;
    const tail = this.storage.entries(from, this.applied + 1, Number.MAX_SAFE_INTEGER) ?? [];
    let bytes = 0;
    for (let i = tail.length - 1; i >= 0; i--) {
      bytes += tail[i].data.length;
      if (bytes > maxBytes) return tail[i].index;
    }
    return from - 1;
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.timer);
    this.failChanges(new CairnError('CAIRN_NOT_LEADER', 'this master is stopping'));
    this.transport.close();
    this.storage.close();
  }
}
