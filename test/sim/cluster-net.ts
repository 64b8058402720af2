// The simulated network of the whole-cluster simulator. Two kinds of traffic:
// - connections (an agent's WebSocket, a framework's event stream): ordered, each message
//   delayed by a drawn latency but never overtaking the one before it, as TCP does; a
//   connection ends gracefully (what was sent still arrives, then the close) or abruptly (a
//   crash or a cut: what is in flight is lost), and a black-holed one silently drops
//   everything until it is healed or closed — the partition that only pings can detect;
// - datagrams (Raft messages, one-off scheduler calls): each may be lost, duplicated or
//   delayed independently, so they arrive in any order.

import type { SeededRandom } from '../../shared/random.ts';
import type { SimClock } from './cluster-clock.ts';

export interface NetConditions {
  /** Latency of one message, drawn uniformly from [minDelayMs, maxDelayMs]. */
  minDelayMs: number;
  maxDelayMs: number;
  /** Per datagram: chance it is lost, chance it arrives twice. */
  loss: number;
  duplicate: number;
}

export const CALM: NetConditions = { minDelayMs: 1, maxDelayMs: 5, loss: 0, duplicate: 0 };

export interface ConnEnd<T> {
  onMessage(msg: T, sentAtMs: number): void;
  onClose(code: number, reason: string): void;
}

export class SimConn<ToMaster, ToPeer> {
  open = true;
  private cut = false;
  /** What a cut held back, in order: TCP delivers it late once the path is back, or never. */
  private held: (() => void)[] = [];
  private lastToMasterMs = 0;
  private lastToPeerMs = 0;
  peer: ConnEnd<ToPeer> | undefined;
  master: ConnEnd<ToMaster> | undefined;

  constructor(
    readonly id: number,
    readonly masterId: number,
    private readonly net: SimNet,
  ) {}

  /**
   * A cut path, as a partition nobody has noticed: nothing arrives, nothing is said, the
   * connection looks open; TCP keeps retransmitting, so what was sent arrives once healed
   * (if neither side gave up on the connection meanwhile).
   */
  get blackholed(): boolean {
    return this.cut;
  }

  set blackholed(cut: boolean) {
    if (this.cut === cut) return;
    this.cut = cut;
    if (cut) return;
    const held = this.held;
    this.held = [];
    for (const deliver of held) deliver();
  }

  toMaster(msg: ToMaster): void {
    if (!this.usable) return;
    const sent = this.net.clock.nowMs;
    this.send('master', () => this.master?.onMessage(msg, sent));
  }

  toPeer(msg: ToPeer): void {
    if (!this.usable) return;
    const sent = this.net.clock.nowMs;
    this.send('peer', () => this.peer?.onMessage(msg, sent));
  }

  private send(to: 'master' | 'peer', deliver: () => void): void {
    const clock = this.net.clock;
    const last = to === 'master' ? this.lastToMasterMs : this.lastToPeerMs;
    const at = Math.max(clock.nowMs + this.net.delay(), last);
    if (to === 'master') this.lastToMasterMs = at;
    else this.lastToPeerMs = at;
    const attempt = () => {
      if (!this.open) return;
      if (this.cut) {
        this.held.push(() => this.send(to, deliver));
        return;
      }
      deliver();
    };
    clock.at(at, attempt);
  }

  /** Set once close() was called: nothing more may be sent. */
  closing = false;

  get usable(): boolean {
    return this.open && !this.closing;
  }

  /**
   * Closes the connection. Graceful: each side hears the close after what is already in
   * flight to it. Abrupt (a crash, a cut): in-flight messages are lost and the other side
   * hears of it after a latency. The side that closes knows at once.
   */
  close(by: 'master' | 'peer' | 'network', code: number, reason: string, graceful = true): void {
    if (this.closing) return;
    this.closing = true;
    const clock = this.net.clock;
    if (!graceful) {
      this.open = false;
      this.held = [];
    }
    const later = (last: number) => (graceful ? Math.max(clock.nowMs + this.net.delay(), last) : clock.nowMs + this.net.delay());
    const tellPeerAt = by === 'peer' ? clock.nowMs : later(this.lastToPeerMs);
    const tellMasterAt = by === 'master' ? clock.nowMs : later(this.lastToMasterMs);
    const peer = this.peer;
    const master = this.master;
    clock.at(tellPeerAt, () => peer?.onClose(code, reason));
    clock.at(tellMasterAt, () => master?.onClose(code, reason));
    // Deliveries still queued behind a graceful close happen first; then nothing more does.
    clock.at(Math.max(tellPeerAt, tellMasterAt), () => {
      this.open = false;
    });
  }
}

export class SimNet {
  conditions: NetConditions = CALM;
  private nextConn = 1;
  readonly stats = { datagrams: 0, lost: 0, duplicated: 0, connections: 0 };

  constructor(
    readonly clock: SimClock,
    private readonly rng: SeededRandom,
  ) {}

  delay(): number {
    return this.rng.range(this.conditions.minDelayMs, this.conditions.maxDelayMs);
  }

  connect<ToMaster, ToPeer>(masterId: number): SimConn<ToMaster, ToPeer> {
    this.stats.connections++;
    return new SimConn<ToMaster, ToPeer>(this.nextConn++, masterId, this);
  }

  /** One datagram: lost, delivered once, or twice, each copy with its own delay. */
  datagram(deliver: () => void): void {
    this.stats.datagrams++;
    if (this.rng.chance(this.conditions.loss)) {
      this.stats.lost++;
      return;
    }
    this.clock.after(this.delay(), deliver);
    if (this.rng.chance(this.conditions.duplicate)) {
      this.stats.duplicated++;
      this.clock.after(this.delay(), deliver);
    }
  }
}
