// The SWIM membership core with the Lifeguard refinements, as a deterministic state machine.
//
// No sockets, timers, clocks or Math.random: the shell (udp-node.ts) or the simulator drives
// it with `tick(nowMs)` when `nextDeadline()` comes, and `receive(from, messages, nowMs)` for
// every authenticated packet. Each call returns the packets to send and the membership events
// that happened, in the order they happened. The caller sends the packets (any order; they are
// independent datagrams) and delivers the events.
//
// The protocol, one member's view:
// - Every probe period it pings the next member of a shuffled round-robin list. No ack within
//   the probe timeout: it asks `indirectChecks` random members to ping the target for it (they
//   nack if the target stays silent, so it can tell "target down" from "my own network is
//   bad"). No ack by the end of the period: it suspects the target.
// - A suspicion lasts between min and max (Lifeguard's dynamic suspicion): a lone accuser waits
//   longest; every independent accuser shortens the wait. When it runs out, the member is dead.
// - A member that hears it is suspected or dead refutes with a higher incarnation.
// - News (alive, suspect, dead) is piggybacked on every packet and gossiped to a few random
//   members five times a period, each item a limited number of times.
// - A full state exchange (push/pull) runs with one random member periodically and on join.
// - Lifeguard's local health: missed acks, missing nacks and having to refute raise a health
//   score; a probe success lowers it. The probe interval and timeout stretch by (score + 1), so a
//   member that cannot keep up with its own probes accuses others less often.

import { compileGossipConfig, type GossipConfig, type GossipConfigOptions } from './config.ts';
import { BroadcastQueue } from './broadcast-queue.ts';
import {
  estimateSize,
  metaSize,
  PACKET_OVERHEAD_BYTES,
  type Broadcast,
  type GossipMessage,
  type MemberMeta,
  type MemberRecord,
  type MemberRole,
  type MemberSnapshot,
  type MemberState,
  type OutgoingPacket,
} from './messages.ts';
import {
  pushPullIntervalMs,
  remainingSuspicionMs,
  retransmitLimit,
  scaleByHealth,
  suspicionTimeoutMs,
} from './math.ts';
import { CairnError } from '../errors.ts';
import { randomFloat, randomInt, shuffle, type RandomSource } from '../random.ts';

/** A member as this node sees it. */
export interface MemberView extends MemberSnapshot {
  /** When this node last saw the member's state change (the caller's clock). */
  readonly stateChangedMs: number;
}

export type MembershipEventType = 'join' | 'update' | 'suspect' | 'dead' | 'leave';

/**
 * join: first seen, or back after dead/left. update: metadata, role or address changed, or a
 * suspicion was refuted. suspect, dead (failed), leave (said goodbye).
 */
export interface MembershipEvent {
  readonly type: MembershipEventType;
  readonly member: MemberView;
}

export interface GossipOutput {
  readonly packets: OutgoingPacket[];
  readonly events: MembershipEvent[];
}

export interface GossipNodeOptions {
  readonly name: string;
  /** Advertised `host:port`. */
  readonly address: string;
  readonly role: MemberRole;
  readonly meta?: MemberMeta;
  readonly config?: GossipConfigOptions;
  readonly random: RandomSource;
  readonly nowMs: number;
  /** Starting incarnation (a restarted member may start above what it last used). */
  readonly incarnation?: number;
  /**
   * A view to start from (a saved view, or a simulation that begins with a formed cluster):
   * taken as alive, without events or gossip.
   */
  readonly initialMembers?: readonly MemberRecord[];
}

/** Counters for tests, benchmarks and metrics. */
export interface GossipNodeStats {
  probes: number;
  probeFailures: number;
  indirectProbes: number;
  nacksReceived: number;
  suspicionsRaised: number;
  deathsDeclared: number;
  refutations: number;
  pushPulls: number;
  misdirectedPings: number;
  addressConflicts: number;
  stalls: number;
}

interface Suspicion {
  readonly startMs: number;
  readonly minMs: number;
  readonly maxMs: number;
  /** Independent confirmations that bring the timeout down to minMs. */
  readonly expected: number;
  /** Who has accused the member, the first accuser included. */
  readonly accusers: Set<string>;
  deadlineMs: number;
  /** When to probe the suspect ourselves if the suspicion still stands (see dueRecheck). */
  recheckAtMs: number;
  rechecks: number;
  /** Time this member spent stalled since the suspicion began: not counted as waiting. */
  pausedMs: number;
}

interface Member {
  readonly name: string;
  address: string;
  role: MemberRole;
  incarnation: number;
  meta: MemberMeta;
  state: MemberState;
  stateChangedMs: number;
  suspicion: Suspicion | undefined;
  /** Position in `list`, for O(1) random choice and removal. */
  index: number;
}

interface ProbeRound {
  readonly seq: number;
  readonly target: string;
  readonly timeoutAtMs: number;
  readonly endAtMs: number;
  indirectSent: boolean;
  expectedNacks: number;
  nacks: number;
}

/** A probe this node runs for someone else (an indirect ping). */
interface Relay {
  readonly sourceAddress: string;
  readonly sourceSeq: number;
  nackAtMs: number;
  expireAtMs: number;
}

const MAX_SEQ = 0xffffffff;
/**
 * A timer later than this means the member itself was not running. Well above timer jitter on a
 * busy event loop, well below a probe timeout.
 */
const STALL_TOLERANCE_MS = 100;
/** Probe periods after a join before the second full sync (gossip's spread takes a few hundred ms). */
const JOIN_RESYNC_PERIODS = 3;
/** After a stall, time to read the packets that queued up before any conclusion is drawn. */
const STALL_GRACE_MS = 50;
const MAX_INCARNATION = 0xffffffff;

export class GossipNode {
  readonly config: GossipConfig;
  readonly name: string;
  readonly stats: GossipNodeStats = {
    probes: 0, probeFailures: 0, indirectProbes: 0, nacksReceived: 0, suspicionsRaised: 0,
    deathsDeclared: 0, refutations: 0, pushPulls: 0, misdirectedPings: 0, addressConflicts: 0, stalls: 0,
  };

  private readonly random: RandomSource;
  private readonly self: Member;
  private readonly table = new Map<string, Member>();
  /** Every member in the table, self included, in no particular order. */
  private readonly list: Member[] = [];
  private readonly queue = new BroadcastQueue();
  private readonly suspects = new Set<Member>();
  private readonly relays = new Map<number, Relay>();

  private probeOrder: string[] = [];
  private probeIndex = 0;
  private probe: ProbeRound | undefined;
  private seq = 0;
  private health = 0;
  /** alive + suspect members, self included: the n of every formula. */
  private live = 1;
  /** members declared dead (not left): candidates for reconnection. */
  private dead = 0;
  private leaving = false;
  private seeds: string[] = [];

  private nowMs: number;
  private nextProbeAtMs: number;
  private nextGossipAtMs: number;
  private nextPushPullAtMs: number;
  private nextRejoinAtMs = Infinity;
  private nextReconnectAtMs: number;

  private out: { packets: OutgoingPacket[]; events: MembershipEvent[] } = { packets: [], events: [] };

  constructor(options: GossipNodeOptions) {
    this.config = compileGossipConfig(options.config);
    this.random = options.random;
    this.name = options.name;
    this.nowMs = options.nowMs;
    const meta = options.meta ?? {};
    this.checkMeta(meta);
    this.self = {
      name: options.name,
      address: options.address,
      role: options.role,
      incarnation: options.incarnation ?? 0,
      meta,
      state: 'alive',
      stateChangedMs: options.nowMs,
      suspicion: undefined,
      index: 0,
    };
    this.insert(this.self);
    for (const r of options.initialMembers ?? []) {
      if (r.name === this.name || this.table.has(r.name)) continue;
      const m = this.newMember(r, options.nowMs);
      this.insert(m);
      this.live++;
      this.probeOrder.push(m.name);
    }
    shuffle(this.random, this.probeOrder);
    // Staggered starts, so members started together do not probe, gossip and sync in lockstep.
    const c = this.config;
    this.nextProbeAtMs = options.nowMs + Math.floor(randomFloat(this.random) * c.probeIntervalMs);
    this.nextGossipAtMs = options.nowMs + Math.floor(randomFloat(this.random) * c.gossipIntervalMs);
    this.nextPushPullAtMs = options.nowMs + Math.floor(randomFloat(this.random) * c.pushPullIntervalMs);
    this.nextReconnectAtMs = options.nowMs + c.reconnectIntervalMs;
  }

  // ---- inputs ---------------------------------------------------------------------------

  /** Advances timers to `nowMs`: probes, indirect probes, suspicion timeouts, gossip, syncs. */
  tick(nowMs: number): GossipOutput {
    const c = this.config;
    const lateMs = nowMs - this.timerDeadline();
    this.advance(nowMs);
    if (c.localHealthAwareness && lateMs > STALL_TOLERANCE_MS) this.recoverFromStall(lateMs);

    if (this.suspects.size > 0) {
      for (const m of [...this.suspects]) {
        if (m.suspicion !== undefined && nowMs >= m.suspicion.deadlineMs) {
          this.stats.deathsDeclared++;
          this.onDead(m.name, m.incarnation, this.name);
        }
      }
    }

    if (this.relays.size > 0) {
      for (const [seq, r] of this.relays) {
        if (nowMs >= r.nackAtMs) {
          r.nackAtMs = Infinity;
          this.send(r.sourceAddress, [{ type: 'nack', seq: r.sourceSeq }]);
        }
        if (nowMs >= r.expireAtMs) this.relays.delete(seq);
      }
    }

    const p = this.probe;
    if (p !== undefined) {
      if (!p.indirectSent && nowMs >= p.timeoutAtMs) this.sendIndirectProbes(p);
      if (nowMs >= p.endAtMs) this.finishFailedProbe(p);
    }
    if (this.probe === undefined && !this.leaving && nowMs >= this.nextProbeAtMs) this.startProbe();

    if (this.queue.size > 0 && nowMs >= this.nextGossipAtMs) {
      this.gossip();
      this.nextGossipAtMs = nowMs + c.gossipIntervalMs;
    }

    if (!this.leaving) {
      if (nowMs >= this.nextPushPullAtMs) {
        const peer = this.randomMembers(1, (m) => m.state === 'alive')[0];
        if (peer !== undefined) this.pushPull(peer.address, false, peer);
        this.nextPushPullAtMs = nowMs + pushPullIntervalMs(c.pushPullIntervalMs, this.live);
      }
      if (this.live <= 1 && this.seeds.length > 0 && nowMs >= this.nextRejoinAtMs) {
        for (const s of this.seeds) this.pushPull(s, true);
        this.nextRejoinAtMs = nowMs + c.rejoinIntervalMs;
      }
      if (nowMs >= this.nextReconnectAtMs) {
        if (this.dead > 0) {
          const gone = this.list.filter((m) => m.state === 'dead');
          if (gone.length > 0) {
            const m = gone[randomInt(this.random, gone.length)];
            this.pushPull(m.address, false, m);
          }
        }
        this.nextReconnectAtMs = nowMs + c.reconnectIntervalMs;
      }
    }
    return this.flush();
  }

  /** Handles one authenticated packet from the member advertised at `from`. */
  receive(from: string, messages: readonly GossipMessage[], nowMs: number): GossipOutput {
    this.advance(nowMs);
    for (const m of messages) this.handle(from, m);
    return this.flush();
  }

  /** Contacts the members at `addresses` (a full state exchange); retried while alone. */
  join(addresses: readonly string[], nowMs: number): GossipOutput {
    this.advance(nowMs);
    const fresh = addresses.filter((a) => a !== this.self.address && !this.seeds.includes(a));
    this.seeds.push(...fresh);
    for (const a of fresh) this.pushPull(a, true);
    this.nextRejoinAtMs = nowMs + this.config.rejoinIntervalMs;
    // The state we get back is one member's view at one instant; news that was spreading then
    // (other members joining at the same time) may have run its course without us. A second
    // sync, once that news has had time to spread, picks it up instead of the next periodic one.
    this.nextPushPullAtMs = Math.min(this.nextPushPullAtMs, nowMs + JOIN_RESYNC_PERIODS * this.config.probeIntervalMs);
    return this.flush();
  }

  /** New metadata: a new incarnation, gossiped to everyone. */
  setMeta(meta: MemberMeta, nowMs: number): GossipOutput {
    this.advance(nowMs);
    this.checkMeta(meta);
    if (!this.leaving) {
      this.self.meta = { ...meta };
      this.bumpIncarnation(this.self.incarnation + 1);
      this.broadcastSelf();
    }
    return this.flush();
  }

  /**
   * Leaves on purpose: tells a few members at once and gossips the goodbye. The caller keeps
   * driving the node until `leaveSpread()` (or a timeout), then stops it.
   */
  leave(nowMs: number): GossipOutput {
    this.advance(nowMs);
    if (!this.leaving) {
      this.leaving = true;
      this.probe = undefined;
      const goodbye: Broadcast = { type: 'dead', name: this.name, incarnation: this.self.incarnation, from: this.name };
      this.queue.enqueue(this.name, goodbye);
      this.self.state = 'left';
      this.self.stateChangedMs = nowMs;
      this.gossip();
      this.nextGossipAtMs = nowMs + this.config.gossipIntervalMs;
    }
    return this.flush();
  }

  // ---- outputs and queries --------------------------------------------------------------

  /** When `tick` must next be called (Infinity: only a packet can change anything). */
  nextDeadline(): number {
    let d = this.timerDeadline();
    if (this.queue.size > 0 && this.nextGossipAtMs < d) d = this.nextGossipAtMs;
    if (!this.leaving) {
      if (this.live > 1 && this.nextPushPullAtMs < d) d = this.nextPushPullAtMs;
      if (this.live <= 1 && this.seeds.length > 0 && this.nextRejoinAtMs < d) d = this.nextRejoinAtMs;
      if (this.dead > 0 && this.nextReconnectAtMs < d) d = this.nextReconnectAtMs;
    }
    return d;
  }

  /**
   * The earliest of the timers that are always armed while they matter (the probe schedule, a
   * running probe, relays, suspicions). The probe schedule alone makes it at most one probe
   * period away, so a tick much later than this means the member was stalled.
   */
  private timerDeadline(): number {
    let d = Infinity;
    const p = this.probe;
    if (p !== undefined) d = p.indirectSent ? p.endAtMs : p.timeoutAtMs;
    else if (!this.leaving) d = this.nextProbeAtMs;
    for (const m of this.suspects) if (m.suspicion !== undefined && m.suspicion.deadlineMs < d) d = m.suspicion.deadlineMs;
    for (const r of this.relays.values()) {
      if (r.nackAtMs < d) d = r.nackAtMs;
      if (r.expireAtMs < d) d = r.expireAtMs;
    }
    return d;
  }

  members(): MemberView[] {
    return this.list.map((m) => view(m));
  }

  member(name: string): MemberView | undefined {
    const m = this.table.get(name);
    return m === undefined ? undefined : view(m);
  }

  /** The state this node holds for `name`, without copying (simulations check it often). */
  stateOf(name: string): MemberState | undefined {
    return this.table.get(name)?.state;
  }

  /** alive + suspect members, self included. */
  liveCount(): number {
    return this.live;
  }

  /** Lifeguard's local health score: 0 is healthy, up to awarenessMaxMultiplier - 1. */
  healthScore(): number {
    return this.health;
  }

  incarnation(): number {
    return this.self.incarnation;
  }

  /** Whether the goodbye has been sent as often as news is (or there is nobody to tell). */
  leaveSpread(): boolean {
    return this.leaving && (!this.queue.has(this.name) || this.live <= 1);
  }

  hasLeft(): boolean {
    return this.leaving;
  }

  // ---- message handling -----------------------------------------------------------------

  private handle(from: string, m: GossipMessage): void {
    switch (m.type) {
      case 'ping':
        if (m.target !== this.name) {
          // Meant for whoever had this address before us: answering would vouch for them.
          this.stats.misdirectedPings++;
          return;
        }
        this.send(from, [{ type: 'ack', seq: m.seq }]);
        return;
      case 'indirect-ping': {
        const seq = this.nextSeq();
        const c = this.config;
        this.relays.set(seq, {
          sourceAddress: from,
          sourceSeq: m.seq,
          nackAtMs: m.nack ? this.nowMs + c.probeTimeoutMs : Infinity,
          expireAtMs: this.nowMs + c.probeIntervalMs,
        });
        this.send(m.targetAddress, [{ type: 'ping', seq, target: m.target, from: this.name }]);
        return;
      }
      case 'ack': {
        const p = this.probe;
        if (p !== undefined && p.seq === m.seq) {
          this.probe = undefined;
          this.applyHealth(-1);
          return;
        }
        const r = this.relays.get(m.seq);
        if (r !== undefined) {
          this.relays.delete(m.seq);
          this.send(r.sourceAddress, [{ type: 'ack', seq: r.sourceSeq }]);
        }
        return;
      }
      case 'nack':
        if (this.probe !== undefined && this.probe.seq === m.seq) {
          this.probe.nacks++;
          this.stats.nacksReceived++;
        }
        return;
      case 'alive':
        this.onAlive(m.member);
        return;
      case 'suspect':
        this.onSuspect(m.name, m.incarnation, m.from);
        return;
      case 'dead':
        this.onDead(m.name, m.incarnation, m.from);
        return;
      case 'push-pull':
        this.merge(m.members);
        // Answered after merging, so a refutation the exchange caused is already in the answer.
        if (!m.reply && !this.leaving) {
          const sender = m.members.find((r) => r.address === from);
          this.out.packets.push({
            to: from,
            messages: [{ type: 'push-pull', join: false, reply: true, members: this.snapshot(sender?.name) }],
            stream: true,
          });
        }
        return;
    }
  }

  private onAlive(r: MemberRecord): void {
    if (r.name === this.name) {
      if (this.leaving) return;
      const s = this.self;
      if (r.incarnation < s.incarnation) return;
      if (r.incarnation === s.incarnation && r.address === s.address && r.role === s.role && sameMeta(r.meta, s.meta)) return;
      // Someone holds a view of us at our incarnation or later that is not ours (a previous
      // life of this member, or a forged one): overrule it.
      this.refute(r.incarnation);
      return;
    }
    let m = this.table.get(r.name);
    if (m === undefined) {
      m = this.newMember(r, this.nowMs);
      this.insert(m);
      this.live++;
      // A random place in the probe order keeps the time to first probe of a newcomer short.
      this.probeOrder.push(m.name);
      const i = randomInt(this.random, this.probeOrder.length);
      const last = this.probeOrder.length - 1;
      [this.probeOrder[i], this.probeOrder[last]] = [this.probeOrder[last], this.probeOrder[i]];
      this.queue.enqueue(m.name, { type: 'alive', member: r });
      this.emit('join', m);
      return;
    }
    let readdressed = false;
    if (r.address !== m.address) {
      // A member that left or failed may come back from another address; two live members
      // cannot share a name.
      if (m.state === 'alive' || m.state === 'suspect') {
        this.stats.addressConflicts++;
        return;
      }
      readdressed = true;
    }
    if (r.incarnation <= m.incarnation && !readdressed) return;

    const oldState = m.state;
    const changed = r.address !== m.address || r.role !== m.role || !sameMeta(r.meta, m.meta);
    this.clearSuspicion(m);
    m.incarnation = r.incarnation;
    m.address = r.address;
    m.role = r.role;
    m.meta = r.meta;
    this.setState(m, 'alive');
    this.queue.enqueue(m.name, { type: 'alive', member: r });
    if (oldState === 'dead' || oldState === 'left') this.emit('join', m);
    else if (changed || oldState === 'suspect') this.emit('update', m);
  }

  /** `from` undefined: learned from a full state exchange, which does not say who accused. */
  private onSuspect(name: string, incarnation: number, from: string | undefined): void {
    const m = this.table.get(name);
    if (m === undefined) return;
    if (incarnation < m.incarnation) {
      if (m === this.self) this.reassert();
      return;
    }
    if (m.suspicion !== undefined) {
      // Already suspected: an accuser we have not heard from brings the timeout down, and the
      // news is passed on so that others count it as well.
      if (from !== undefined && this.confirm(m, from)) this.queue.enqueue(name, { type: 'suspect', name, incarnation, from });
      return;
    }
    if (m.state !== 'alive') return;
    if (m === this.self) {
      if (!this.leaving) this.refute(incarnation);
      return;
    }
    // A suspicion from a state exchange is not passed on: we cannot say who accused, and passing
    // it on in our name would count as an independent accusation everywhere. The accuser's own
    // news, or the verdict, spreads anyway.
    if (from !== undefined) this.queue.enqueue(name, { type: 'suspect', name, incarnation, from });
    m.incarnation = incarnation;
    this.setState(m, 'suspect');
    this.startSuspicion(m, from);
    this.emit('suspect', m);
  }

  private onDead(name: string, incarnation: number, from: string): void {
    const m = this.table.get(name);
    if (m === undefined) return;
    if (incarnation < m.incarnation) {
      if (m === this.self) this.reassert();
      return;
    }
    this.clearSuspicion(m);
    if (m.state === 'dead' || m.state === 'left') return;
    if (m === this.self) {
      if (!this.leaving) this.refute(incarnation);
      return;
    }
    this.queue.enqueue(name, { type: 'dead', name, incarnation, from });
    m.incarnation = incarnation;
    const left = from === name;
    this.setState(m, left ? 'left' : 'dead');
    this.emit(left ? 'leave' : 'dead', m);
  }

  /** A full state from another member, entry by entry, as if each were gossip. */
  private merge(remote: readonly MemberSnapshot[]): void {
    for (const r of remote) {
      switch (r.state) {
        case 'alive':
          this.onAlive(r);
          break;
        case 'left':
          this.onDead(r.name, r.incarnation, r.name);
          break;
        case 'dead':
        case 'suspect':
          // Another member's "dead" is only a suspicion here: we give the member the chance to
          // refute that it may not have had over there. Not an accusation of ours, nor a
          // confirmation: the exchange does not say who accused.
          this.onSuspect(r.name, r.incarnation, undefined);
          break;
      }
    }
  }

  // ---- probing ----------------------------------------------------------------------------

  private startProbe(): void {
    const c = this.config;
    const score = c.localHealthAwareness ? this.health : 0;
    const target = this.dueRecheck() ?? this.nextProbeTarget();
    if (target === undefined) {
      this.nextProbeAtMs = this.nowMs + c.probeIntervalMs;
      return;
    }
    // Both the period and the ack timeout stretch with our health score, as in the Lifeguard
    // paper (memberlist stretches only the period): a member that is slow to read its own socket
    // gets its acks late, and a longer wait lets them count instead of becoming accusations.
    const p: ProbeRound = {
      seq: this.nextSeq(),
      target: target.name,
      timeoutAtMs: this.nowMs + scaleByHealth(c.probeTimeoutMs, score),
      endAtMs: this.nowMs + scaleByHealth(c.probeIntervalMs, score),
      indirectSent: false,
      expectedNacks: 0,
      nacks: 0,
    };
    this.probe = p;
    this.nextProbeAtMs = p.endAtMs;
    this.stats.probes++;
    const msgs: GossipMessage[] = [];
    if (target.state === 'suspect') {
      // Tell a suspect directly (Lifeguard's buddy system), so it can refute at once rather than
      // when gossip reaches it. Ahead of the ping: the suspect handles it first, and its
      // refutation rides on the ack.
      msgs.push({ type: 'suspect', name: target.name, incarnation: target.incarnation, from: this.name });
    }
    msgs.push({ type: 'ping', seq: p.seq, target: target.name, from: this.name });
    this.send(target.address, msgs);
  }

  private sendIndirectProbes(p: ProbeRound): void {
    p.indirectSent = true;
    const target = this.table.get(p.target);
    if (target === undefined) return;
    const peers = this.randomMembers(this.config.indirectChecks, (m) => m.state === 'alive' && m !== target);
    for (const peer of peers) {
      this.send(peer.address, [{
        type: 'indirect-ping', seq: p.seq, target: target.name, targetAddress: target.address, from: this.name, nack: true,
      }]);
    }
    p.expectedNacks = peers.length;
    this.stats.indirectProbes++;
  }

  private finishFailedProbe(p: ProbeRound): void {
    this.probe = undefined;
    this.stats.probeFailures++;
    // With helpers to vouch for the network, only the nacks that did not come count against
    // our own health; without helpers, any failed probe does.
    if (p.expectedNacks > 0) this.applyHealth(Math.max(0, p.expectedNacks - p.nacks));
    else this.applyHealth(1);
    const target = this.table.get(p.target);
    if (target === undefined || target.state !== 'alive') {
      if (target !== undefined && target.state === 'suspect') this.onSuspect(target.name, target.incarnation, this.name);
      return;
    }
    this.stats.suspicionsRaised++;
    this.onSuspect(target.name, target.incarnation, this.name);
  }

  /**
   * A weakly supported suspect (fewer independent accusers than expected) whose suspicion has
   * stood for half, then three quarters, of the minimum timeout: probed now rather than at its
   * turn. By then nearly every member has heard the refutation of a false suspicion; one that
   * still suspects has probably missed it (gossip's tail, lost packets), and the suspect answers
   * the accusation our ping carries with its current incarnation, on the ack itself. A member that
   * really failed is soon accused by many and skipped, so regular probing is not crowded out.
   */
  private dueRecheck(): Member | undefined {
    let due: Member | undefined;
    for (const m of this.suspects) {
      const s = m.suspicion!;
      if (s.recheckAtMs > this.nowMs) continue;
      if (s.expected > 0 && s.accusers.size - 1 >= s.expected) continue;
      if (due === undefined || s.recheckAtMs < due.suspicion!.recheckAtMs) due = m;
    }
    if (due !== undefined) {
      const s = due.suspicion!;
      s.rechecks++;
      s.recheckAtMs = s.rechecks < 2 ? s.startMs + s.pausedMs + Math.floor((3 * s.minMs) / 4) : Infinity;
    }
    return due;
  }

  private nextProbeTarget(): Member | undefined {
    for (let checked = 0; checked <= this.probeOrder.length; checked++) {
      if (this.probeIndex >= this.probeOrder.length) this.resetProbeOrder();
      if (this.probeOrder.length === 0) return undefined;
      const m = this.table.get(this.probeOrder[this.probeIndex++]);
      if (m !== undefined && m !== this.self && (m.state === 'alive' || m.state === 'suspect')) return m;
    }
    return undefined;
  }

  /** End of a round: forget long-gone members, drop the dead from the order, reshuffle. */
  private resetProbeOrder(): void {
    const horizon = this.nowMs - this.config.deadMemberRetentionMs;
    for (let i = this.list.length - 1; i >= 0; i--) {
      const m = this.list[i];
      if ((m.state === 'dead' || m.state === 'left') && m.stateChangedMs < horizon && m !== this.self) this.remove(m);
    }
    this.probeOrder = [];
    for (const m of this.list) if (m !== this.self && (m.state === 'alive' || m.state === 'suspect')) this.probeOrder.push(m.name);
    shuffle(this.random, this.probeOrder);
    this.probeIndex = 0;
  }

  /**
   * Our own timer fired `lateMs` late: this member was not running (a pause, a starved CPU).
   * Acks and refutations may be waiting unread in the socket, so nothing is concluded from a
   * window we were not listening in: every running probe, nack and suspicion timer is pushed back
   * by the stall, past the time it takes to read what queued up. And a stall is the plainest sign
   * that we are the slow member (Lifeguard).
   */
  private recoverFromStall(lateMs: number): void {
    const floor = this.nowMs + STALL_GRACE_MS;
    const p = this.probe;
    if (p !== undefined) {
      this.probe = {
        ...p,
        timeoutAtMs: Math.max(p.timeoutAtMs + lateMs, floor),
        endAtMs: Math.max(p.endAtMs + lateMs, floor),
      };
      this.nextProbeAtMs = this.probe.endAtMs;
    }
    for (const r of this.relays.values()) {
      if (r.nackAtMs !== Infinity) r.nackAtMs = Math.max(r.nackAtMs + lateMs, floor);
      r.expireAtMs = Math.max(r.expireAtMs + lateMs, floor);
    }
    for (const m of this.suspects) {
      const s = m.suspicion!;
      s.deadlineMs = Math.max(s.deadlineMs + lateMs, floor);
      s.recheckAtMs += lateMs;
      s.pausedMs += lateMs;
    }
    this.stats.stalls++;
    this.applyHealth(1);
  }

  // ---- suspicion ----------------------------------------------------------------------------

  private startSuspicion(m: Member, accuser: string | undefined): void {
    const c = this.config;
    // Lifeguard expects confirmations from the members that probe the suspect in the next few
    // periods; two short of the multiplier, as memberlist, since peers' probes are not in phase.
    let expected = c.dynamicSuspicion ? c.suspicionMult - 2 : 0;
    // Nobody left to confirm: ourselves and the suspect do not count.
    if (this.live - 2 < expected) expected = 0;
    const minMs = suspicionTimeoutMs(c.suspicionMult, this.live, c.probeIntervalMs);
    const maxMs = c.dynamicSuspicion ? c.suspicionMaxTimeoutMult * minMs : minMs;
    m.suspicion = {
      startMs: this.nowMs,
      minMs,
      maxMs,
      expected,
      // Empty when the accuser is unknown: the first one we hear of then counts as the first.
      accusers: accuser === undefined ? new Set() : new Set([accuser]),
      deadlineMs: this.nowMs + (expected < 1 ? minMs : maxMs),
      recheckAtMs: this.nowMs + Math.floor(minMs / 2),
      rechecks: 0,
      pausedMs: 0,
    };
    this.suspects.add(m);
  }

  private confirm(m: Member, accuser: string): boolean {
    const s = m.suspicion!;
    if (s.accusers.size - 1 >= s.expected || s.accusers.has(accuser)) return false;
    s.accusers.add(accuser);
    if (s.accusers.size === 1) return true;
    const elapsed = this.nowMs - s.startMs - s.pausedMs;
    s.deadlineMs = this.nowMs + remainingSuspicionMs(s.accusers.size - 1, s.expected, elapsed, s.minMs, s.maxMs);
    return true;
  }

  private clearSuspicion(m: Member): void {
    if (m.suspicion !== undefined) {
      m.suspicion = undefined;
      this.suspects.delete(m);
    }
  }

  // ---- self ---------------------------------------------------------------------------------

  private refute(accused: number): void {
    this.stats.refutations++;
    this.bumpIncarnation(accused + 1);
    // Being accused is a hint that we are the slow one (Lifeguard).
    this.applyHealth(1);
    this.broadcastSelf();
  }

  /**
   * An accusation we already refuted reached us again: whoever sent it may never have had the
   * refutation. Our alive goes back in the queue (it rides on the ack of that very ping when the
   * accusation came with one), unless it is still there.
   */
  private reassert(): void {
    if (!this.leaving && !this.queue.has(this.name)) this.broadcastSelf();
  }

  private bumpIncarnation(atLeast: number): void {
    const next = Math.max(this.self.incarnation + 1, atLeast);
    if (next > MAX_INCARNATION) throw new CairnError('CAIRN_INTERNAL', `incarnation of ${this.name} overflowed`);
    this.self.incarnation = next;
  }

  private broadcastSelf(): void {
    const s = this.self;
    this.queue.enqueue(s.name, { type: 'alive', member: record(s) });
  }

  private applyHealth(delta: number): void {
    if (!this.config.localHealthAwareness) return;
    this.health = Math.min(this.config.awarenessMaxMultiplier - 1, Math.max(0, this.health + delta));
  }

  // ---- dissemination --------------------------------------------------------------------------

  private gossip(): void {
    const c = this.config;
    const horizon = this.nowMs - c.gossipToTheDeadMs;
    const peers = this.randomMembers(c.gossipNodes, (m) =>
      m.state === 'alive' || m.state === 'suspect' || (m.state === 'dead' && m.stateChangedMs >= horizon));
    const limit = retransmitLimit(c.retransmitMult, this.live);
    const budget = c.maxPacketBytes - PACKET_OVERHEAD_BYTES;
    for (const peer of peers) {
      const news = this.queue.take(budget, limit);
      if (news.length === 0) return;
      this.out.packets.push({ to: peer.address, messages: news, stream: false });
    }
  }

  /** Sends `messages` in one datagram, with as much news piggybacked as fits. */
  private send(to: string, messages: GossipMessage[]): void {
    if (this.queue.size > 0) {
      let used = PACKET_OVERHEAD_BYTES;
      for (const m of messages) used += estimateSize(m);
      const news = this.queue.take(this.config.maxPacketBytes - used, retransmitLimit(this.config.retransmitMult, this.live));
      for (const n of news) messages.push(n);
    }
    this.out.packets.push({ to, messages, stream: false });
  }

  /** `peer`: the member at `to`, when known (found by address otherwise). */
  private pushPull(to: string, join: boolean, peer?: Member): void {
    this.stats.pushPulls++;
    if (peer === undefined) for (const m of this.list) if (m.address === to && m !== this.self) peer = m;
    this.out.packets.push({ to, messages: [{ type: 'push-pull', join, reply: false, members: this.snapshot(peer?.name) }], stream: true });
  }

  /**
   * What a full state exchange carries: everyone we know, the recently dead included, and
   * whatever we hold about `peer`, the member at the other end, however old: a member that
   * restarted, or comes back from a partition, must learn that it was declared dead to refute it.
   */
  private snapshot(peer?: string): MemberSnapshot[] {
    const horizon = this.nowMs - this.config.gossipToTheDeadMs;
    const out: MemberSnapshot[] = [];
    for (const m of this.list) {
      if (m === this.self || m.state === 'alive' || m.state === 'suspect' || m.stateChangedMs >= horizon || m.name === peer) {
        out.push({ name: m.name, address: m.address, role: m.role, incarnation: m.incarnation, meta: m.meta, state: m.state });
      }
    }
    return out;
  }

  // ---- table ----------------------------------------------------------------------------------

  private newMember(r: MemberRecord, nowMs: number): Member {
    return {
      name: r.name, address: r.address, role: r.role, incarnation: r.incarnation, meta: r.meta,
      state: 'alive', stateChangedMs: nowMs, suspicion: undefined, index: -1,
    };
  }

  private insert(m: Member): void {
    m.index = this.list.length;
    this.list.push(m);
    this.table.set(m.name, m);
  }

  private remove(m: Member): void {
    const last = this.list.pop()!;
    if (last !== m) {
      this.list[m.index] = last;
      last.index = m.index;
    }
    this.table.delete(m.name);
    if (m.state === 'dead') this.dead--;
  }

  private setState(m: Member, state: MemberState): void {
    if (m.state === state) return;
    const wasLive = m.state === 'alive' || m.state === 'suspect';
    const isLive = state === 'alive' || state === 'suspect';
    if (wasLive && !isLive) this.live--;
    if (!wasLive && isLive) this.live++;
    if (m.state === 'dead') this.dead--;
    if (state === 'dead') this.dead++;
    m.state = state;
    m.stateChangedMs = this.nowMs;
    if (isLive && !wasLive) {
      this.probeOrder.push(m.name);
    }
  }

  /** Up to `k` distinct random members (never self) that pass `accept`. */
  private randomMembers(k: number, accept: (m: Member) => boolean): Member[] {
    const out: Member[] = [];
    const n = this.list.length;
    for (let tries = 0; tries < 3 * n && out.length < k; tries++) {
      const m = this.list[randomInt(this.random, n)];
      if (m === this.self || !accept(m) || out.includes(m)) continue;
      out.push(m);
    }
    return out;
  }

  // ---- plumbing -------------------------------------------------------------------------------

  private advance(nowMs: number): void {
    if (nowMs > this.nowMs) this.nowMs = nowMs;
  }

  private nextSeq(): number {
    this.seq = this.seq >= MAX_SEQ ? 1 : this.seq + 1;
    return this.seq;
  }

  private emit(type: MembershipEventType, m: Member): void {
    this.out.events.push({ type, member: view(m) });
  }

  private flush(): GossipOutput {
    // News queued while gossip was idle goes out at the next tick, not at a stale deadline.
    if (this.queue.size > 0 && this.nextGossipAtMs < this.nowMs) this.nextGossipAtMs = this.nowMs;
    const out = this.out;
    this.out = { packets: [], events: [] };
    return out;
  }

  private checkMeta(meta: MemberMeta): void {
    if (meta === null || typeof meta !== 'object') throw new CairnError('CAIRN_BAD_REQUEST', 'must be an object of strings', 'meta');
    for (const k in meta) {
      if (typeof meta[k] !== 'string') throw new CairnError('CAIRN_BAD_REQUEST', `value of '${k}' must be a string`, 'meta');
    }
    const size = metaSize(meta);
    if (size > this.config.maxMetaBytes) {
      throw new CairnError('CAIRN_BAD_REQUEST', `takes ${size} bytes, more than the ${this.config.maxMetaBytes} allowed`, 'meta');
    }
  }
}

function record(m: Member): MemberRecord {
  return { name: m.name, address: m.address, role: m.role, incarnation: m.incarnation, meta: m.meta };
}

function view(m: Member): MemberView {
  return {
    name: m.name, address: m.address, role: m.role, incarnation: m.incarnation, meta: m.meta,
    state: m.state, stateChangedMs: m.stateChangedMs,
  };
}

function sameMeta(a: MemberMeta, b: MemberMeta): boolean {
  if (a === b) return true;
  let n = 0;
  for (const k in a) {
    if (a[k] !== b[k]) return false;
    n++;
  }
  for (const _ in b) n--;
  return n === 0;
}
