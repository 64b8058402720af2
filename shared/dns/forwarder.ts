// Forwards queries to upstream resolvers (a master: names outside its domain; an agent's task
// resolver: zone names to the masters, the rest to the host's upstreams), over one UDP
// socket per address family. Each forwarded query gets a fresh random id (so concurrent
// clients' ids cannot collide and replies cannot be guessed), and a reply is accepted only
// from the resolver asked, with that id and the same question. Resolvers are tried in
// order, each for `timeoutMs`, starting from the one that answered last (so a dead first
// resolver costs one time-out, not one per query); when none answers the caller answers
// SERVFAIL. A truncated
// UDP reply to a client that asked over TCP is fetched again over TCP.

import { randomInt } from 'node:crypto';
import dgram from 'node:dgram';
import net from 'node:net';
import type { Upstream } from './upstream.ts';

interface Pending {
  upstream: Upstream;
  question: Buffer;
  resolve: (reply: Buffer | undefined) => void;
  timer: NodeJS.Timeout;
}

/** Concurrent forwarded queries beyond this are failed at once rather than queued. */
const MAX_IN_FLIGHT = 10_000;

export class Forwarder {
  private readonly sockets = new Map<4 | 6, dgram.Socket>();
  private readonly pending = new Map<number, Pending>();
  private closed = false;
  /** The upstream that answered last; tried first. */
  private preferred: Upstream | undefined;
  private readonly list: () => readonly Upstream[];

  /** `upstreams`: a fixed list, or a function read at each query (a list that follows gossip). */
  constructor(
    upstreams: readonly Upstream[] | (() => readonly Upstream[]),
    private readonly timeoutMs: number,
  ) {
    this.list = typeof upstreams === 'function' ? upstreams : () => upstreams;
  }

  get configured(): boolean {
    return this.list().length > 0;
  }

  /** The upstreams in the order the next query tries them. */
  private ordered(): readonly Upstream[] {
    const all = this.list();
    const p = this.preferred;
    const i = p ? all.findIndex((u) => u.host === p.host && u.port === p.port) : -1;
    return i <= 0 ? all : [...all.slice(i), ...all.slice(0, i)];
  }

  /**
   * The upstream reply to `request` (with the request's own id restored), or undefined when
   * no resolver answered in time. `questionEnd` is where the request's question ends.
   */
  async forward(request: Buffer, questionEnd: number, transport: 'udp' | 'tcp'): Promise<Buffer | undefined> {
    for (const upstream of this.ordered()) {
      if (this.closed) return undefined;
      let reply = await this.viaUdp(upstream, request, questionEnd);
      if (reply && transport === 'tcp' && reply.length >= 4 && reply[2] & 0x02) {
        reply = (await this.viaTcp(upstream, request)) ?? reply;
      }
      if (reply) {
        this.preferred = upstream;
        reply[0] = request[0];
        reply[1] = request[1];
        return reply;
      }
    }
    return undefined;
  }

  close(): void {
    this.closed = true;
    for (const p of this.pending.values()) {
      clearTimeout(p.timer);
      p.resolve(undefined);
    }
    this.pending.clear();
    for (const s of this.sockets.values()) s.close();
    this.sockets.clear();
  }

  private socket(family: 4 | 6): dgram.Socket {
    let s = this.sockets.get(family);
    if (!s) {
      s = dgram.createSocket(family === 4 ? 'udp4' : 'udp6');
      s.on('message', (msg, rinfo) => this.onReply(msg, rinfo));
      s.on('error', () => undefined); // a send error shows up as a timeout
      s.unref();
      this.sockets.set(family, s);
    }
    return s;
  }

  private viaUdp(upstream: Upstream, request: Buffer, questionEnd: number): Promise<Buffer | undefined> {
    if (this.pending.size >= MAX_IN_FLIGHT) return Promise.resolve(undefined);
    let id = randomInt(0, 0x10000);
    while (this.pending.has(id)) id = (id + 1) & 0xffff;
    const out = Buffer.from(request);
    out.writeUInt16BE(id, 0);
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        resolve(undefined);
      }, this.timeoutMs);
      timer.unref();
      this.pending.set(id, { upstream, question: request.subarray(12, questionEnd), resolve, timer });
      this.socket(upstream.family).send(out, upstream.port, upstream.host, (err) => {
        if (err && this.pending.get(id)?.timer === timer) {
          clearTimeout(timer);
          this.pending.delete(id);
          resolve(undefined);
        }
      });
    });
  }

  private onReply(msg: Buffer, rinfo: dgram.RemoteInfo): void {
    if (msg.length < 12) return;
    const id = msg.readUInt16BE(0);
    const p = this.pending.get(id);
    if (!p || rinfo.port !== p.upstream.port || normalizeAddress(rinfo.address) !== p.upstream.host) return;
    if (!(msg[2] & 0x80)) return; // not a response
    // The reply must be about the question asked (letter case aside).
    const q = p.question;
    if (msg.length < 12 + q.length || msg.readUInt16BE(4) !== 1) return;
    for (let i = 0; i < q.length; i++) {
      const a = msg[12 + i];
      const b = q[i];
      if (a !== b && (a | 0x20) !== (b | 0x20)) return;
    }
    clearTimeout(p.timer);
    this.pending.delete(id);
    p.resolve(msg);
  }

  private viaTcp(upstream: Upstream, request: Buffer): Promise<Buffer | undefined> {
    return new Promise((resolve) => {
      const socket = net.connect({ host: upstream.host, port: upstream.port });
      let buf = Buffer.alloc(0);
      const done = (reply: Buffer | undefined) => {
        clearTimeout(timer);
        socket.destroy();
        resolve(reply);
      };
      const timer = setTimeout(() => done(undefined), this.timeoutMs);
      timer.unref();
      socket.on('error', () => done(undefined));
      socket.on('connect', () => {
        const len = Buffer.alloc(2);
        len.writeUInt16BE(request.length, 0);
        socket.write(Buffer.concat([len, request]));
      });
      socket.on('data', (chunk: Buffer) => {
        buf = Buffer.concat([buf, chunk]);
        if (buf.length >= 2 && buf.length >= 2 + buf.readUInt16BE(0)) done(buf.subarray(2, 2 + buf.readUInt16BE(0)));
      });
      socket.on('end', () => done(undefined));
    });
  }
}

/** `::ffff:1.2.3.4` as the socket may report it → `1.2.3.4`. */
function normalizeAddress(a: string): string {
  return a.startsWith('::ffff:') && a.includes('.') ? a.slice(7) : a;
}
