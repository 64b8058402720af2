// A simulated network for gossip cores: one seed drives packet loss, delays, member crashes and
// slow members, so a run replays exactly. Discrete events on a heap: packet deliveries, and each
// member's next timer deadline (`nextDeadline()`), nothing in between.
//
// A slow member processes nothing while it is stalled (a GC pause, a starved CPU, a swapping
// host); when it resumes, its overdue timers run before the packets that queued up, as they do
// in Node's event loop after a stall.

import { GossipNode, type MembershipEvent } from '../../shared/gossip/node.ts';
import type { GossipConfigOptions } from '../../shared/gossip/config.ts';
import type { GossipMessage, MemberMeta, MemberRecord, MemberRole, OutgoingPacket } from '../../shared/gossip/messages.ts';
import { randomFloat, type RandomSource } from '../../shared/random.ts';
import { splitMix32 } from './splitmix32.ts';

export interface NetworkOptions {
  readonly seed: number;
  /** Probability that a datagram is lost. */
  readonly lossRate?: number;
  /** One-way datagram delay, uniform in [min, max]. */
  readonly delayMs?: { readonly min: number; readonly max: number };
  /** Stream (TCP) delay: reliable, slower. */
  readonly streamDelayMs?: { readonly min: number; readonly max: number };
  readonly config?: GossipConfigOptions;
}

export interface AddOptions {
  readonly role?: MemberRole;
  readonly meta?: MemberMeta;
  readonly join?: readonly string[];
  readonly initialMembers?: readonly MemberRecord[];
  readonly config?: GossipConfigOptions;
}

/** Stalls of a slow member: [start, end) intervals, sorted, not overlapping. */
export type Stalls = ReadonlyArray<readonly [number, number]>;

export interface SimMember {
  readonly name: string;
  readonly address: string;
  readonly node: GossipNode;
  crashed: boolean;
  stalls: Stalls | undefined;
  stallIndex: number;
  tickAt: number;
  tickToken: number;
}

const TICK = 0;
const DELIVER = 1;

interface SimEvent {
  at: number;
  /** Timers before packets at the same instant. */
  phase: number;
  order: number;
  kind: number;
  member: SimMember;
  token: number;
  from: string;
  messages: readonly GossipMessage[] | undefined;
}

export type EventListener = (observer: SimMember, event: MembershipEvent, nowMs: number) => void;

export class SimNetwork {
  nowMs = 0;
  lossRate: number;
  /** Return true to drop every packet from `from` to `to` (a partition). */
  blocked: ((from: SimMember, to: SimMember) => boolean) | undefined;
  onEvent: EventListener | undefined;
  readonly random: RandomSource;
  readonly members: SimMember[] = [];
  readonly byName = new Map<string, SimMember>();
  readonly byAddress = new Map<string, SimMember>();
  readonly counters = { datagrams: 0, streams: 0, lost: 0, events: 0 };

  private readonly heap: SimEvent[] = [];
  private order = 0;
  private readonly delay: { min: number; max: number };
  private readonly streamDelay: { min: number; max: number };
  private readonly config: GossipConfigOptions | undefined;

  constructor(options: NetworkOptions) {
    this.random = splitMix32(options.seed);
    this.lossRate = options.lossRate ?? 0;
    this.delay = { ...(options.delayMs ?? { min: 1, max: 10 }) };
    this.streamDelay = { ...(options.streamDelayMs ?? { min: 2, max: 20 }) };
    this.config = options.config;
  }

  static addressOf(name: string): string {
    return `${name}:7946`;
  }

  add(name: string, options: AddOptions = {}): SimMember {
    const address = SimNetwork.addressOf(name);
    const node = new GossipNode({
      name,
      address,
      role: options.role ?? 'agent',
      meta: options.meta,
      config: { ...this.config, ...options.config },
      // Each member its own stream, derived from the network's, so adding one does not shift the
      // choices of the others more than one draw.
      random: splitMix32(this.random.nextU32()),
      nowMs: this.nowMs,
      initialMembers: options.initialMembers,
    });
    const m: SimMember = { name, address, node, crashed: false, stalls: undefined, stallIndex: 0, tickAt: Infinity, tickToken: 0 };
    this.members.push(m);
    this.byName.set(name, m);
    this.byAddress.set(address, m);
    if (options.join !== undefined && options.join.length > 0) this.apply(m, node.join(options.join, this.nowMs));
    this.schedule(m);
    return m;
  }

  /** A crash: the member stops at once, packets to it are lost. */
  crash(m: SimMember): void {
    m.crashed = true;
    m.tickToken++;
  }

  /** `m` will leave gracefully now. */
  leave(m: SimMember): void {
    this.apply(m, m.node.leave(this.nowMs));
    this.schedule(m);
  }

  setMeta(m: SimMember, meta: MemberMeta): void {
    this.apply(m, m.node.setMeta(meta, this.nowMs));
    this.schedule(m);
  }

  /** Runs until `untilMs`, calling `step` after every event (return true to stop early). */
  run(untilMs: number, step?: (nowMs: number) => boolean | void): void {
    const heap = this.heap;
    while (heap.length > 0 && heap[0].at <= untilMs) {
      const e = this.pop();
      this.nowMs = e.at;
      const m = e.member;
      if (m.crashed) continue;
      if (e.kind === TICK && e.token !== m.tickToken) continue;
      if (m.stalls !== undefined) {
        const resume = this.resumeAt(m, e.at);
        if (resume > e.at) {
          e.at = resume;
          e.order = this.order++;
          this.push(e);
          continue;
        }
      }
      this.counters.events++;
      if (e.kind === TICK) {
        m.tickAt = Infinity;
        this.apply(m, m.node.tick(e.at));
      } else {
        this.apply(m, m.node.receive(e.from, e.messages!, e.at));
      }
      this.schedule(m);
      if (step !== undefined && step(this.nowMs) === true) return;
    }
    this.nowMs = Math.max(this.nowMs, untilMs);
  }

  private resumeAt(m: SimMember, t: number): number {
    const stalls = m.stalls!;
    while (m.stallIndex < stalls.length && stalls[m.stallIndex][1] <= t) m.stallIndex++;
    if (m.stallIndex < stalls.length && stalls[m.stallIndex][0] <= t) return stalls[m.stallIndex][1];
    return t;
  }

  private apply(m: SimMember, out: { packets: OutgoingPacket[]; events: MembershipEvent[] }): void {
    for (const p of out.packets) this.transmit(m, p);
    if (this.onEvent !== undefined) for (const e of out.events) this.onEvent(m, e, this.nowMs);
  }

  private transmit(from: SimMember, p: OutgoingPacket): void {
    const to = this.byAddress.get(p.to);
    if (p.stream) this.counters.streams++;
    else this.counters.datagrams++;
    if (to === undefined || to.crashed) return;
    if (this.blocked !== undefined && this.blocked(from, to)) return;
    let d: { min: number; max: number };
    if (p.stream) d = this.streamDelay;
    else {
      if (this.lossRate > 0 && randomFloat(this.random) < this.lossRate) {
        this.counters.lost++;
        return;
      }
      d = this.delay;
    }
    const at = this.nowMs + d.min + randomFloat(this.random) * (d.max - d.min);
    this.push({ at, phase: 1, order: this.order++, kind: DELIVER, member: to, token: 0, from: from.address, messages: p.messages });
  }

  private schedule(m: SimMember): void {
    if (m.crashed) return;
    const d = Math.max(m.node.nextDeadline(), this.nowMs);
    if (d >= m.tickAt || d === Infinity) return;
    m.tickAt = d;
    m.tickToken++;
    this.push({ at: d, phase: 0, order: this.order++, kind: TICK, member: m, token: m.tickToken, from: '', messages: undefined });
  }

  // A binary heap ordered by (at, phase, order).
  private push(e: SimEvent): void {
    const h = this.heap;
    h.push(e);
    let i = h.length - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (!before(h[i], h[p])) break;
      [h[i], h[p]] = [h[p], h[i]];
      i = p;
    }
  }

  private pop(): SimEvent {
    const h = this.heap;
    const top = h[0];
    const last = h.pop()!;
    if (h.length > 0) {
      h[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let s = i;
        if (l < h.length && before(h[l], h[s])) s = l;
        if (r < h.length && before(h[r], h[s])) s = r;
        if (s === i) break;
        [h[i], h[s]] = [h[s], h[i]];
        i = s;
      }
    }
    return top;
  }
}

function before(a: SimEvent, b: SimEvent): boolean {
  if (a.at !== b.at) return a.at < b.at;
  if (a.phase !== b.phase) return a.phase < b.phase;
  return a.order < b.order;
}

/** A formed cluster of `n` members named m0..m(n-1), each knowing all the others. */
export function formedCluster(net: SimNetwork, n: number, options: AddOptions = {}): SimMember[] {
  const records: MemberRecord[] = [];
  for (let i = 0; i < n; i++) {
    records.push({ name: `m${i}`, address: SimNetwork.addressOf(`m${i}`), role: i < 3 ? 'master' : 'agent', incarnation: 0, meta: {} });
  }
  return records.map((r) => net.add(r.name, { ...options, role: r.role, initialMembers: records }));
}

export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return NaN;
  const i = Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1);
  return sorted[Math.max(0, i)];
}

export function summary(values: readonly number[]): { n: number; mean: number; median: number; p99: number; max: number } {
  const s = [...values].sort((a, b) => a - b);
  const mean = s.reduce((a, b) => a + b, 0) / Math.max(1, s.length);
  return { n: s.length, mean: round(mean), median: round(percentile(s, 50)), p99: round(percentile(s, 99)), max: round(s[s.length - 1] ?? NaN) };
}

export function round(x: number): number {
  return Math.round(x * 10) / 10;
}
