// The DNS server's sockets: UDP and TCP on one port, each request handed to the responder,
// forwarded when it says so, and answered. Nothing a client sends can throw out of here:
// a malformed packet is answered FORMERR (header readable) or dropped, and counted.

import dgram from 'node:dgram';
import net from 'node:net';
import { isIPv6 } from 'node:net';
import type { Logger } from 'pino';
import type { Forwarder } from '../../shared/dns/forwarder.ts';
import type { DnsResponder, Transport } from './responder.ts';
import { RCODE, rcodeOf } from './wire.ts';

/** Counters for /metrics. */
export class DnsMetrics {
  readonly queries = { udp: 0, tcp: 0 };
  /** Answers sent, by rcode name. */
  readonly responses = new Map<string, number>();
  forwarded = 0;
  forwardFailures = 0;
  dropped = 0;
  tcpConnections = 0;

  countResponse(rcode: number): void {
    const name = RCODE_NAMES[rcode] ?? `RCODE${rcode}`;
    this.responses.set(name, (this.responses.get(name) ?? 0) + 1);
  }
}

const RCODE_NAMES: Record<number, string> = Object.fromEntries(Object.entries(RCODE).map(([k, v]) => [v, k]));

/** An idle TCP connection is closed after this long (RFC 7766 suggests seconds). */
const TCP_IDLE_MS = 10_000;
const MAX_TCP_CONNECTIONS = 1_000;

export interface DnsServerOptions {
  host: string;
  /** 0: any free port, the same for UDP and TCP. */
  port: number;
  responder: DnsResponder;
  forwarder: Forwarder;
  metrics: DnsMetrics;
  log: Logger;
}

export class DnsServer {
  private udp: dgram.Socket | undefined;
  private tcp: net.Server | undefined;
  private readonly connections = new Set<net.Socket>();
  private boundPort = 0;
  private stopped = false;

  constructor(private readonly opts: DnsServerOptions) {}

  get port(): number {
    return this.boundPort;
  }

  /** Binds UDP, then TCP on the same port (with port 0, retries until one port is free for both). */
  async start(): Promise<void> {
    const attempts = this.opts.port === 0 ? 10 : 1;
    let lastErr: unknown;
    for (let i = 0; i < attempts; i++) {
      const udp = await this.bindUdp(this.opts.port);
      const port = udp.address().port;
      try {
        this.tcp = await this.bindTcp(port);
        this.udp = udp;
        this.boundPort = port;
        return;
      } catch (err) {
        lastErr = err;
        await new Promise<void>((r) => udp.close(() => r()));
      }
    }
    throw lastErr;
  }

  private bindUdp(port: number): Promise<dgram.Socket> {
    return new Promise((resolve, reject) => {
      const socket = dgram.createSocket({ type: isIPv6(this.opts.host) ? 'udp6' : 'udp4' });
      socket.once('error', (err) => {
        socket.close();
        reject(err);
      });
      socket.bind(port, this.opts.host, () => {
        socket.removeAllListeners('error');
        socket.on('error', (err) => this.opts.log.warn({ err: err.message }, 'dns udp socket error'));
        socket.on('message', (msg, rinfo) => this.onUdp(socket, msg, rinfo));
        resolve(socket);
      });
    });
  }

  private bindTcp(port: number): Promise<net.Server> {
    return new Promise((resolve, reject) => {
      const server = net.createServer((c) => this.onTcpConnection(c));
      server.maxConnections = MAX_TCP_CONNECTIONS;
      server.once('error', reject);
      server.listen(port, this.opts.host, () => {
        server.off('error', reject);
        server.on('error', (err) => this.opts.log.warn({ err: err.message }, 'dns tcp server error'));
        resolve(server);
      });
    });
  }

  // ---------------------------------------------------------------- requests

  private onUdp(socket: dgram.Socket, msg: Buffer, rinfo: dgram.RemoteInfo): void {
    this.opts.metrics.queries.udp++;
    this.handle(msg, 'udp', (reply) => socket.send(reply, rinfo.port, rinfo.address, noop));
  }

  private onTcpConnection(c: net.Socket): void {
    if (this.stopped) {
      c.destroy();
      return;
    }
    this.opts.metrics.tcpConnections++;
    this.connections.add(c);
    c.setNoDelay(true);
    c.setTimeout(TCP_IDLE_MS, () => c.destroy());
    c.on('close', () => this.connections.delete(c));
    c.on('error', noop);
    let buf: Buffer = Buffer.alloc(0);
    c.on('data', (chunk: Buffer) => {
      buf = buf.length === 0 ? chunk : Buffer.concat([buf, chunk]);
      while (buf.length >= 2) {
        const len = buf.readUInt16BE(0);
        if (buf.length < 2 + len) break;
        const msg = buf.subarray(2, 2 + len);
        buf = buf.subarray(2 + len);
        this.opts.metrics.queries.tcp++;
        this.handle(Buffer.from(msg), 'tcp', (reply) => {
          if (c.destroyed) return;
          const framed = Buffer.allocUnsafe(2 + reply.length);
          framed.writeUInt16BE(reply.length, 0);
          reply.copy(framed, 2);
          c.write(framed);
        });
      }
    });
  }

  private handle(msg: Buffer, transport: Transport, send: (reply: Buffer) => void): void {
    const { responder, forwarder, metrics, log } = this.opts;
    let decision;
    try {
      decision = responder.respond(msg, transport);
    } catch (err) {
      // The responder reads with bounds checks and should never throw; if it does, the
      // packet is dropped and the server goes on.
      log.error({ err }, 'dns request failed');
      metrics.dropped++;
      return;
    }
    if (decision.kind === 'drop') {
      metrics.dropped++;
      return;
    }
    if (decision.kind === 'answer') {
      metrics.countResponse(decision.rcode);
      send(decision.bytes);
      return;
    }
    metrics.forwarded++;
    const q = decision.query;
    void forwarder.forward(msg, q.questionEnd, transport).then((reply) => {
      if (this.stopped) return;
      if (!reply) {
        metrics.forwardFailures++;
        reply = responder.serverFailure(msg, q);
      }
      metrics.countResponse(rcodeOf(reply));
      send(reply);
    });
  }

  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    for (const c of this.connections) c.destroy();
    this.connections.clear();
    await Promise.all([
      new Promise<void>((r) => (this.udp ? this.udp.close(() => r()) : r())),
      new Promise<void>((r) => (this.tcp ? this.tcp.close(() => r()) : r())),
    ]);
  }
}

function noop(): void {}
