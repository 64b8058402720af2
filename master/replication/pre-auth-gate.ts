// What an unauthenticated connection to the Raft endpoint may cost a master. The endpoint has
// to upgrade a connection before it can read the HMAC handshake, and a frame is buffered whole
// before it is handed on: left alone, anyone who can reach the port could make the master
// hold a large frame per connection, for as many connections as they like. So until a
// connection has sent a frame that passes authentication under its session keys (a hello
// alone proves nothing: a captured one can be sent again), it may send only a few bytes,
// for only a few seconds, and only so many such connections are let in from one address
// and in all. Past a limit the connection is refused (at the upgrade, with 503) or closed
// (1008/1009 with the reason) and the master stops reading it at once; each reason is
// logged at most once per interval.

import type { Duplex } from 'node:stream';
import type { WebSocket } from 'ws';
import type { RefusalLog } from '../../shared/refusal-log.ts';

export interface PreAuthLimits {
  /** Bytes a connection may send before one of its frames is authenticated (hello and first frame are far below). */
  maxBytes: number;
  /** Time a connection has to authenticate. */
  timeoutMs: number;
  /** Connections not yet authenticated, from one remote address. */
  perAddress: number;
  /** Connections not yet authenticated, from everywhere. */
  total: number;
}

/**
 * A hello is under 200 bytes and the dialer's first frame is an empty batch; members dial
 * each peer once (and again after a drop, one at a time), so a handful per address covers a
 * host running several masters.
 */
export const PRE_AUTH_LIMITS: PreAuthLimits = { maxBytes: 64 * 1024, timeoutMs: 5_000, perAddress: 8, total: 64 };

/** A refused connection gets this long to read its close frame before the socket is destroyed. */
const CLOSE_GRACE_MS = 1_000;

export class PreAuthGate {
  private readonly byAddress = new Map<string, number>();
  private pendingCount = 0;

  constructor(
    private readonly refusals: RefusalLog,
    private readonly limits: PreAuthLimits = PRE_AUTH_LIMITS,
  ) {}

  /** Connections not yet authenticated now. */
  get pending(): number {
    return this.pendingCount;
  }

  /**
   * At the HTTP upgrade: a slot for a connection from `remote`, held until it authenticates
   * or `socket` closes; or, past a cap, the connection is answered 503 and destroyed
   * (undefined).
   */
  admit(remote: string, socket: Duplex): PreAuthSlot | undefined {
    const fromHere = this.byAddress.get(remote) ?? 0;
    const refused = fromHere >= this.limits.perAddress
      ? `too many unauthenticated connections from this address (${this.limits.perAddress})`
      : this.pendingCount >= this.limits.total
        ? `too many unauthenticated connections (${this.limits.total})`
        : undefined;
    if (refused !== undefined) {
      this.refusals.refused(refused, { remote });
      refuseBusy(socket, refused);
      return undefined;
    }
    this.byAddress.set(remote, fromHere + 1);
    this.pendingCount++;
    return new PreAuthSlot(remote, socket, this.limits, this.refusals, () => this.release(remote));
  }

  private release(remote: string): void {
    this.pendingCount--;
    const left = (this.byAddress.get(remote) ?? 1) - 1;
    if (left > 0) this.byAddress.set(remote, left);
    else this.byAddress.delete(remote);
  }
}

/** One connection's pre-authentication allowance. */
export class PreAuthSlot {
  private held = true;
  private bytes = 0;
  private timer: NodeJS.Timeout | undefined;
  private ws: WebSocket | undefined;
  private readonly count = (chunk: Buffer) => {
    this.bytes += chunk.length;
    if (this.bytes > this.limits.maxBytes) this.refuse(1009, `more than ${this.limits.maxBytes} bytes before authentication`);
  };

  /** @internal made by PreAuthGate.admit */
  constructor(
    readonly remote: string,
    private readonly socket: Duplex,
    private readonly limits: PreAuthLimits,
    private readonly refusals: RefusalLog,
    private readonly onRelease: () => void,
  ) {
    // Whatever way the connection ends (refused by the upgrade itself, closed by either side).
    socket.once('close', () => this.release());
  }

  /**
   * Watches the WebSocket made on this slot's socket: past the byte allowance or the time-out
   * it is closed with the reason. Called once the upgrade is done, so that the count runs
   * after the WebSocket's own reading of each chunk: a chunk whose first frame authenticates
   * the connection is not counted.
   */
  watch(ws: WebSocket): void {
    if (!this.held) return;
    this.ws = ws;
    this.socket.on('data', this.count);
    this.timer = setTimeout(() => this.refuse(1008, 'handshake timeout'), this.limits.timeoutMs);
    this.timer.unref();
  }

  /** A frame of this connection passed authentication: no more limits. */
  authenticated(): void {
    this.release();
  }

  private refuse(code: number, reason: string): void {
    const ws = this.ws;
    if (!this.held || ws === undefined) return;
    this.stopWatching();
    this.refusals.refused(reason, { remote: this.remote, bytes: this.bytes });
    closeRefused(ws, code, reason);
  }

  private stopWatching(): void {
    clearTimeout(this.timer);
    this.socket.off('data', this.count);
  }

  private release(): void {
    if (!this.held) return;
    this.held = false;
    this.stopWatching();
    this.onRelease();
  }
}

/**
 * Closes a connection naming why and reads nothing more of it: what the peer goes on sending
 * stays in the kernel, not in this process. It gets a moment to read the close frame and
 * the reason; then the socket is destroyed.
 */
export function closeRefused(ws: WebSocket, code: number, reason: string): void {
  ws.close(code, reason);
  ws.pause();
  setTimeout(() => ws.terminate(), CLOSE_GRACE_MS).unref();
}

/** Answers an upgrade request 503 naming why, and hangs up. */
function refuseBusy(socket: Duplex, why: string): void {
  const body = JSON.stringify({ code: 'CAIRN_TOO_MANY_CONNECTIONS', message: why });
  socket.end(`HTTP/1.1 503 Service Unavailable\r\nretry-after: 1\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`, () => socket.destroy());
}
