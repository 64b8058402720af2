// The task resolver's sockets: UDP and TCP on the agent's task DNS address, port 53. Each query
// goes, by its name, to the masters' DNS (the cluster zone) or to the host's own upstreams
// (everything else); a query no one answers gets SERVFAIL, a message that is not a query gets
// FORMERR or nothing. Nothing is cached: the masters' answers follow the registry (a replica
// that moves is found at its new address at once), and the host's resolvers cache for
// themselves.

import dgram from 'node:dgram';
import net from 'node:net';
import type { Logger } from 'pino';
import type { Forwarder } from '../../shared/dns/forwarder.ts';
import { errorReply, inZone, RCODE, readQuestion } from './dns-message.ts';

/** TCP connections at once; more are closed at once (tasks use UDP; TCP is for long answers). */
const MAX_TCP_CONNECTIONS = 256;
/** An idle TCP connection is closed after this. */
const TCP_IDLE_MS = 10_000;

export interface TaskDnsCounters {
  queries: number;
  zone: number;
  forwarded: number;
  failed: number;
}

export interface TaskDnsServerOptions {
  /** The UDP socket, already bound to the address and port (binding it is how the address is claimed). */
  udp: dgram.Socket;
  /** The TCP listener, bound to the same; undefined where the port is taken for TCP. */
  tcp: net.Server | undefined;
  /** The cluster zone as gossip tells it now; undefined before a master is seen. */
  domain: () => string | undefined;
  masters: Forwarder;
  upstreams: Forwarder;
  log: Logger;
}

export class TaskDnsServer {
  readonly counters: TaskDnsCounters = { queries: 0, zone: 0, forwarded: 0, failed: 0 };
  private readonly connections = new Set<net.Socket>();

  constructor(private readonly opts: TaskDnsServerOptions) {
    opts.udp.on('message', (msg, rinfo) => {
      void this.answer(msg, 'udp').then((reply) => {
        if (reply) opts.udp.send(reply, rinfo.port, rinfo.address, () => undefined);
      });
    });
    opts.udp.on('error', (err) => opts.log.warn({ err: err.message }, 'task dns socket error'));
    opts.tcp?.on('connection', (socket) => this.onConnection(socket));
  }

  /** The reply to one message; undefined when none is owed (not a query at all). */
  async answer(msg: Buffer, transport: 'udp' | 'tcp'): Promise<Buffer | undefined> {
    if (msg.length < 12 || msg[2] & 0x80) return undefined;
    this.counters.queries++;
    const q = readQuestion(msg);
    if (!q) return errorReply(msg, 12, RCODE.FORMERR);
    const domain = this.opts.domain();
    const zone = domain !== undefined && inZone(q.name, domain);
    // Without upstreams of its own the host's names are asked of the masters, which forward them.
    const via = zone || !this.opts.upstreams.configured ? this.opts.masters : this.opts.upstreams;
    if (zone) this.counters.zone++;
    else this.counters.forwarded++;
    const reply = await via.forward(msg, q.end, transport);
    if (reply) return reply;
    this.counters.failed++;
    return errorReply(msg, q.end, RCODE.SERVFAIL);
  }

  async close(): Promise<void> {
    for (const c of this.connections) c.destroy();
    this.connections.clear();
    await Promise.all([
      new Promise<void>((resolve) => {
        try {
          this.opts.udp.close(() => resolve());
        } catch {
          resolve();
        }
      }),
      new Promise<void>((resolve) => (this.opts.tcp ? this.opts.tcp.close(() => resolve()) : resolve())),
    ]);
  }

  private onConnection(socket: net.Socket): void {
    if (this.connections.size >= MAX_TCP_CONNECTIONS) {
      socket.destroy();
      return;
    }
    this.connections.add(socket);
    socket.setTimeout(TCP_IDLE_MS, () => socket.destroy());
    socket.on('close', () => this.connections.delete(socket));
    socket.on('error', () => undefined);
    let buf: Buffer = Buffer.alloc(0);
    socket.on('data', (chunk: Buffer) => {
      buf = buf.length === 0 ? chunk : Buffer.concat([buf, chunk]);
      while (buf.length >= 2 && buf.length >= 2 + buf.readUInt16BE(0)) {
        const msg = buf.subarray(2, 2 + buf.readUInt16BE(0));
        buf = buf.subarray(2 + msg.length);
        void this.answer(Buffer.from(msg), 'tcp').then((reply) => {
          if (!reply || socket.destroyed) return;
          const len = Buffer.alloc(2);
          len.writeUInt16BE(reply.length, 0);
          socket.write(Buffer.concat([len, reply]));
        });
      }
    });
  }
}
