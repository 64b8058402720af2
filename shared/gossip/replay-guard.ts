// Which authentic gossip packets are fresh: pure (the shell passes the time in). Every packet
// carries under its MAC (or inside its encryption) the sender's run id (random, drawn when the
// member starts), a sequence number per run and channel (datagrams and streams counted apart),
// and the time it was sent by the sender's wall clock. A packet is refused when:
//  - its time is further than `windowMs` from ours, either way (old, or a clock far off);
//  - its (run, channel, sequence) was accepted before, or is too far behind the newest one
//    accepted to tell (IPsec's anti-replay window, RFC 4303 §3.4.3 with RFC 6479's ring).
// Memory stays bounded: per sender run and channel, the highest sequence and a ring of
// `seqWindow` bits; a run heard from no newer than two windows ago is forgotten, which is safe
// because anything it ever sent is by then refused by its time alone (the second window is a
// margin for our clock stepping back). Only holders of the cluster secret can make a packet
// that gets this far, so the number of runs tracked is that of live members in two windows.

export interface ReplayGuardConfig {
  /** How far a packet's time may be from ours, either way: clock skew between hosts plus delay. */
  readonly windowMs: number;
  /** Sequence numbers remembered behind the newest accepted (a multiple of 32). */
  readonly seqWindow: number;
}

export const DEFAULT_REPLAY_GUARD: ReplayGuardConfig = {
  // NTP keeps hosts within milliseconds of each other; 30 s leaves room for a host whose clock
  // is off by much more, while a captured packet is useless half a minute later.
  windowMs: 30_000,
  // A member sends some tens of datagrams a second (probes, acks, gossip to three others each
  // 200 ms), all numbered in one sequence, of which each receiver sees a few. Reordering on a
  // LAN is a few packets deep; 1,024 behind the newest (128 bytes) is far more than enough.
  seqWindow: 1_024,
};

/** The replay fields of a packet, as the wire carries them. */
export interface PacketStamp {
  /** The sender's run: 8 random bytes drawn when it started, as 16 hex digits. */
  readonly run: string;
  /** Datagram or stream: each has its own sequence, as they arrive apart. */
  readonly stream: boolean;
  /** 1, 2, 3... in the run and channel. */
  readonly seq: number;
  /** When it was sent, by the sender's wall clock (ms since the epoch). */
  readonly sentAtMs: number;
}

export type ReplayVerdict = 'fresh' | 'stale' | 'replayed';

interface Window {
  highest: number;
  /** Bit (seq mod seqWindow) set: that sequence number was accepted. */
  readonly seen: Uint32Array;
  /** The newest sending time accepted from this run and channel. */
  newestSentAtMs: number;
}

export class ReplayGuard {
  private readonly windows = new Map<string, Window>();
  private lastSweepMs = -Infinity;
  private readonly config: ReplayGuardConfig;

  constructor(config: Partial<ReplayGuardConfig> = {}) {
    const c = { ...DEFAULT_REPLAY_GUARD, ...config };
    if (!Number.isInteger(c.seqWindow) || c.seqWindow < 32 || c.seqWindow % 32 !== 0) {
      throw new RangeError(`seqWindow must be a positive multiple of 32, got ${c.seqWindow}`);
    }
    if (!(c.windowMs > 0)) throw new RangeError(`windowMs must be positive, got ${c.windowMs}`);
    this.config = c;
  }

  /** Sender runs and channels remembered now (for tests and metrics). */
  get tracked(): number {
    return this.windows.size;
  }

  /** Says whether the packet is fresh; a fresh one is remembered, so the same stamp is refused next time. */
  check(stamp: PacketStamp, nowMs: number): ReplayVerdict {
    this.sweep(nowMs);
    if (Math.abs(nowMs - stamp.sentAtMs) > this.config.windowMs) return 'stale';
    const key = `${stamp.run}${stamp.stream ? 's' : 'd'}`;
    const w = this.windows.get(key);
    const size = this.config.seqWindow;
    if (w === undefined) {
      const seen = new Uint32Array(size / 32);
      setBit(seen, stamp.seq % size);
      this.windows.set(key, { highest: stamp.seq, seen, newestSentAtMs: stamp.sentAtMs });
      return 'fresh';
    }
    if (stamp.seq > w.highest) {
      // Slide: clear the bits of the numbers skipped over, which now stand for newer ones.
      const ahead = stamp.seq - w.highest;
      if (ahead >= size) w.seen.fill(0);
      else for (let s = w.highest + 1; s < stamp.seq; s++) clearBit(w.seen, s % size);
      w.highest = stamp.seq;
    } else {
      if (w.highest - stamp.seq >= size) return 'replayed'; // too far behind to tell: refused, as IPsec does
      if (getBit(w.seen, stamp.seq % size)) return 'replayed';
    }
    setBit(w.seen, stamp.seq % size);
    if (stamp.sentAtMs > w.newestSentAtMs) w.newestSentAtMs = stamp.sentAtMs;
    return 'fresh';
  }

  /** Forgets runs silent for two windows: at most once a window, so the cost per packet stays constant. */
  private sweep(nowMs: number): void {
    if (nowMs - this.lastSweepMs < this.config.windowMs) return;
    this.lastSweepMs = nowMs;
    const before = nowMs - 2 * this.config.windowMs;
    for (const [key, w] of this.windows) if (w.newestSentAtMs < before) this.windows.delete(key);
  }
}

function setBit(bits: Uint32Array, i: number): void {
  bits[i >>> 5] |= 1 << (i & 31);
}

function clearBit(bits: Uint32Array, i: number): void {
  bits[i >>> 5] &= ~(1 << (i & 31));
}

function getBit(bits: Uint32Array, i: number): boolean {
  return (bits[i >>> 5] & (1 << (i & 31))) !== 0;
}
