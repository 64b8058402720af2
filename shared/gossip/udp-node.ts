// The gossip shell: a UDP socket and a TCP listener on the same port around the pure core
// (node.ts). Datagrams carry probes and gossip; TCP carries full-state exchanges (push/pull),
// which outgrow a datagram once a cluster has a few dozen members (about 150 bytes a member) and
// would fragment if sent as one — one lost fragment loses all, and at 1,000 members the state
// is some 100 datagrams. TCP delivers it whole or not at all, and a failed exchange is simply
// retried at the next period, as in memberlist.
//
// Everything that arrives is authenticated (HMAC-SHA256 under the cluster secret and name, or
// AES-256-GCM with `encrypt`), checked for freshness (its stamp: a time within 30 s of ours and
// a sequence number not seen before, see replay-guard.ts) and validated before the core sees it;
// a packet that fails is counted and dropped, never thrown. Packets are stamped here with this
// run's id, a sequence number and the wall clock, which the core never reads. One timer follows
// the core's next deadline. stop() releases socket, listener, connections and timer in reverse
// order.

import { randomBytes } from 'node:crypto';
import { createSocket, type Socket as UdpSocket } from 'node:dgram';
import { createServer, connect, type Server, type Socket } from 'node:net';
import { networkInterfaces } from 'node:os';
import { isIP } from 'node:net';
import { CairnError } from '../errors.ts';
import { cryptoRandom } from '../crypto-random.ts';
import { silentLogger, type Logger } from '../logger.ts';
import type { RandomSource } from '../random.ts';
import { TypedEmitter } from '../sdk/typed-emitter.ts';
import { formatAddress, parseAddress, tryParseAddress } from './address.ts';
import { compileGossipConfig, type GossipConfigOptions } from './config.ts';
import type { MemberMeta, MemberRole, OutgoingPacket } from './messages.ts';
import { GossipNode, type GossipNodeStats, type GossipOutput, type MemberView, type MembershipEvent } from './node.ts';
import { ReplayGuard } from './replay-guard.ts';
import { deriveGossipKeys, openPacket, RUN_BYTES, sealPacket, type GossipKeys } from './wire.ts';
import { steadyClock } from '../steady-clock.ts';

export interface StartGossipOptions {
  /** Unique in the cluster; a restarted member reuses its name. */
  readonly name: string;
  /** Default 0.0.0.0 (all IPv4 interfaces). */
  readonly bindHost?: string;
  /** UDP and TCP port; 0 picks a free one. */
  readonly bindPort: number;
  /**
   * When `bindPort` is taken, take a free port instead (with a warning) rather than fail: for
   * a default port, where a second daemon on the same host must still start. Others learn the
   * address through gossip once this member joins them.
   */
  readonly anyPortIfTaken?: boolean;
  /** `host` or `host:port` others reach us at; default the bind address (or the first non-loopback IPv4 when bound to all). */
  readonly advertise?: string;
  readonly role: MemberRole;
  readonly meta?: MemberMeta;
  /** The cluster secret (at least 16 bytes). */
  readonly secret: string | Uint8Array;
  /** Name of the cluster, part of the packet key: default `cairn`. */
  readonly cluster?: string;
  /**
   * Encrypt every packet (AES-256-GCM under a key derived from the secret). Members with it on
   * and members with it off do not understand each other: each drops the other's packets.
   */
  readonly encrypt?: boolean;
  /** `host:port` of members to join through; one live one is enough. Retried while alone. */
  readonly join?: readonly string[];
  readonly config?: GossipConfigOptions;
  readonly logger?: Logger;
  /** For tests; default: the OS's CSPRNG (shared/crypto-random.ts). */
  readonly random?: RandomSource;
}

/** Packets dropped and why, for metrics and tests. */
export interface GossipCounters {
  packetsReceived: number;
  packetsSent: number;
  streamsReceived: number;
  streamsSent: number;
  /** No envelope, or the MAC does not match (wrong secret or cluster, altered). */
  droppedUnauthenticated: number;
  /** Encrypted while this member runs without encryption, or the other way round. */
  droppedEncryptionMismatch: number;
  /** Authentic, but seen before (or too far behind the newest from its sender to tell). */
  droppedReplayed: number;
  /** Authentic, but sent further than the replay window (30 s) from our clock: old, or a clock far off. */
  droppedStale: number;
  /** Authentic but not a valid gossip packet. */
  droppedMalformed: number;
  /** Larger than a datagram (sending) or a stream frame (receiving) may be. */
  droppedOversized: number;
  sendErrors: number;
  streamErrors: number;
}

export type GossipEvents = { change: (event: MembershipEvent) => void };

/** Largest UDP payload over IPv4. */
const MAX_DATAGRAM_BYTES = 65_507;
/** A full state of 100,000 members at ~150 bytes each fits; anything larger is refused. */
const MAX_STREAM_BYTES = 16 * 1024 * 1024;
/** A stream that takes longer than this to arrive (or to connect and send) is abandoned. */
const STREAM_TIMEOUT_MS = 10_000;
/** A leave waits this long at most for its goodbye to be gossiped. */
const DEFAULT_LEAVE_TIMEOUT_MS = 3_000;
/** Tries to find a port free for both UDP and TCP when bindPort is 0. */
const BIND_ATTEMPTS = 10;

/** A running gossip member. */
export class GossipMember extends TypedEmitter<GossipEvents> {
  readonly name: string;
  /** The advertised `host:port`. */
  readonly address: string;
  readonly counters: GossipCounters = {
    packetsReceived: 0, packetsSent: 0, streamsReceived: 0, streamsSent: 0, droppedUnauthenticated: 0,
    droppedEncryptionMismatch: 0, droppedReplayed: 0, droppedStale: 0,
    droppedMalformed: 0, droppedOversized: 0, sendErrors: 0, streamErrors: 0,
  };

  private readonly closers: { what: string; close: () => void | Promise<void> }[] = [];
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  private leaveWaiter: (() => void) | undefined;
  private readonly streams = new Set<Socket>();
  /** This run's id in every packet's stamp: a restarted member's numbers start again under a new one. */
  private readonly run = randomBytes(RUN_BYTES);
  private datagramSeq = 0;
  private streamSeq = 0;
  private readonly replay = new ReplayGuard();
  /** When each kind of warning about dropped packets was last logged: one a minute at most. */
  private readonly warned = new Map<string, { atMs: number; since: number }>();

  /** @internal use startGossip */
  constructor(
    private readonly core: GossipNode,
    private readonly udp: UdpSocket,
    private readonly tcp: Server,
    private readonly keys: GossipKeys,
    private readonly logger: Logger,
    private readonly clock: () => number,
  ) {
    super();
    this.name = core.name;
    this.address = core.member(core.name)!.address;
    this.closers.push({ what: 'udp socket', close: () => new Promise<void>((r) => { try { udp.close(() => r()); } catch { r(); } }) });
    this.closers.push({
      what: 'tcp listener',
      close: () => new Promise<void>((r) => {
        for (const s of this.streams) s.destroy();
        tcp.close(() => r());
      }),
    });
    this.closers.push({ what: 'timer', close: () => clearTimeout(this.timer) });
    udp.on('message', (bytes) => this.onDatagram(bytes));
    udp.on('error', (err) => this.logger.warn({ err }, 'gossip udp socket error'));
    tcp.on('connection', (socket) => this.onStream(socket));
    tcp.on('error', (err) => this.logger.warn({ err }, 'gossip tcp listener error'));
  }

  members(): MemberView[] {
    return this.core.members();
  }

  member(name: string): MemberView | undefined {
    return this.core.member(name);
  }

  /** Counters of the protocol itself (probes, suspicions, refutations...). */
  protocolStats(): GossipNodeStats {
    return { ...this.core.stats };
  }

  /** Lifeguard's local health score: 0 is healthy. */
  healthScore(): number {
    return this.core.healthScore();
  }

  /** New metadata, gossiped to everyone under a new incarnation. */
  setMeta(meta: MemberMeta): void {
    if (this.stopped) return;
    this.apply(this.core.setMeta(meta, this.clock()));
  }

  /** Joins (more) members through `addresses`. */
  join(addresses: readonly string[]): void {
    if (this.stopped) return;
    addresses.forEach((a, i) => parseAddress(a, `join[${i}]`));
    this.apply(this.core.join(addresses, this.clock()));
  }

  /** Says goodbye, waits until it has been gossiped (or `timeoutMs`), then stops. */
  async leave(timeoutMs = DEFAULT_LEAVE_TIMEOUT_MS): Promise<void> {
    if (this.stopped) return;
    await new Promise<void>((resolve) => {
      const timeout = setTimeout(() => resolve(), timeoutMs);
      this.leaveWaiter = () => {
        clearTimeout(timeout);
        resolve();
      };
      this.apply(this.core.leave(this.clock()));
    });
    await this.stop();
  }

  /** Stops at once, as a crash would look to others (they will declare us dead). */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    while (this.closers.length > 0) {
      const c = this.closers.pop()!;
      try {
        await c.close();
      } catch (err) {
        this.logger.warn({ err, what: c.what }, 'gossip: release failed');
      }
    }
  }

  /** @internal */
  start(join: readonly string[]): void {
    if (join.length > 0) this.apply(this.core.join(join, this.clock()));
    else this.arm();
  }

  // ---- input ----------------------------------------------------------------------------

  private onDatagram(bytes: Buffer): void {
    if (this.stopped) return;
    this.counters.packetsReceived++;
    this.deliver(bytes, false);
  }

  private onStream(socket: Socket): void {
    if (this.stopped) {
      socket.destroy();
      return;
    }
    this.streams.add(socket);
    socket.setTimeout(STREAM_TIMEOUT_MS, () => socket.destroy());
    socket.on('close', () => this.streams.delete(socket));
    socket.on('error', () => this.counters.streamErrors++);
    const chunks: Buffer[] = [];
    let have = 0;
    let want = -1;
    let done = false;
    socket.on('data', (chunk: Buffer) => {
      if (done) return;
      chunks.push(chunk);
      have += chunk.length;
      if (want < 0 && have >= 4) {
        want = Buffer.concat(chunks).readUInt32BE(0);
        if (want > MAX_STREAM_BYTES) {
          this.counters.droppedOversized++;
          socket.destroy();
          return;
        }
      }
      if (want >= 0 && have >= 4 + want) {
        done = true;
        const frame = Buffer.concat(chunks).subarray(4, 4 + want);
        socket.end();
        if (this.stopped) return;
        this.counters.streamsReceived++;
        this.deliver(frame, true);
      }
    });
  }

  private deliver(bytes: Uint8Array, stream: boolean): void {
    let packet;
    try {
      packet = openPacket(this.keys, bytes);
    } catch (err) {
      if (err instanceof CairnError && err.code === 'CAIRN_UNAUTHENTICATED' && err.field === 'packet.mode') {
        this.counters.droppedEncryptionMismatch++;
        this.warnAtMostEveryMinute('encryption', err.message);
      } else if (err instanceof CairnError && err.code === 'CAIRN_UNAUTHENTICATED') this.counters.droppedUnauthenticated++;
      else this.counters.droppedMalformed++;
      this.logger.debug({ err }, 'gossip: dropped a packet');
      return;
    }
    // A datagram's bytes sent again over TCP (or the other way) would escape its channel's
    // sequence: the stamp says which channel it was sealed for.
    const verdict = packet.stamp.stream !== stream ? 'replayed' : this.replay.check(packet.stamp, Date.now());
    if (verdict === 'replayed') {
      this.counters.droppedReplayed++;
      this.warnAtMostEveryMinute('replayed', `dropped an authentic gossip packet seen before (replayed) from ${packet.from}`);
      return;
    }
    if (verdict === 'stale') {
      this.counters.droppedStale++;
      const skewS = Math.round((Date.now() - packet.stamp.sentAtMs) / 1000);
      this.warnAtMostEveryMinute('stale', `dropped an authentic gossip packet from ${packet.from} sent ${Math.abs(skewS)} s ${skewS >= 0 ? 'ago' : 'in the future'} by its clock: replayed, or the clocks of the two hosts are that far apart`);
      return;
    }
    try {
      this.apply(this.core.receive(packet.from, packet.messages, this.clock()));
    } catch (err) {
      // The core validates what it is given; anything thrown here is a bug, not a reason to die.
      this.counters.droppedMalformed++;
      this.logger.error({ err }, 'gossip: a packet could not be handled');
    }
  }

  /** A warning about dropped packets, at most once a minute per kind, with how many were dropped since. */
  private warnAtMostEveryMinute(kind: string, message: string): void {
    const now = Date.now();
    const w = this.warned.get(kind);
    if (w !== undefined && now - w.atMs < 60_000) {
      w.since++;
      return;
    }
    this.warned.set(kind, { atMs: now, since: 0 });
    this.logger.warn({ droppedSinceLastWarning: w?.since ?? 0, counters: this.counters }, `gossip: ${message}`);
  }

  private onTimer(): void {
    this.timer = undefined;
    if (this.stopped) return;
    this.apply(this.core.tick(this.clock()));
  }

  // ---- output ---------------------------------------------------------------------------

  private apply(out: GossipOutput): void {
    for (const p of out.packets) {
      try {
        this.send(p);
      } catch (err) {
        this.counters.sendErrors++;
        this.logger.error({ err, to: p.to }, 'gossip: a packet could not be sent');
      }
    }
    for (const e of out.events) {
      this.logger.debug({ member: e.member.name, state: e.member.state, event: e.type }, 'gossip: membership changed');
      try {
        this.emit('change', e);
      } catch (err) {
        this.logger.error({ err }, 'gossip: a change listener threw');
      }
    }
    if (this.leaveWaiter !== undefined && this.core.leaveSpread()) {
      const w = this.leaveWaiter;
      this.leaveWaiter = undefined;
      w();
    }
    this.arm();
  }

  private arm(): void {
    if (this.stopped) return;
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    const d = this.core.nextDeadline();
    if (d === Infinity) return;
    this.timer = setTimeout(() => this.onTimer(), Math.max(0, Math.ceil(d - this.clock())));
  }

  private send(p: OutgoingPacket): void {
    const to = tryParseAddress(p.to);
    if (to === undefined) {
      this.counters.sendErrors++;
      return;
    }
    const stamp = { run: this.run, stream: p.stream, seq: p.stream ? ++this.streamSeq : ++this.datagramSeq, sentAtMs: Date.now() };
    const sealed = sealPacket(this.keys, this.address, p.messages, stamp);
    if (p.stream) {
      this.sendStream(to.host, to.port, sealed);
      return;
    }
    if (sealed.length > MAX_DATAGRAM_BYTES) {
      this.counters.droppedOversized++;
      return;
    }
    this.counters.packetsSent++;
    this.udp.send(sealed, to.port, to.host, (err) => {
      if (err) this.counters.sendErrors++;
    });
  }

  private sendStream(host: string, port: number, sealed: Buffer): void {
    if (this.stopped) return;
    this.counters.streamsSent++;
    const socket = connect({ host, port });
    this.streams.add(socket);
    socket.setTimeout(STREAM_TIMEOUT_MS, () => socket.destroy());
    socket.on('error', () => this.counters.streamErrors++);
    socket.on('close', () => this.streams.delete(socket));
    // The other side answers on a stream of its own, to our advertised address; nothing comes back here.
    socket.on('data', () => {});
    const header = Buffer.allocUnsafe(4);
    header.writeUInt32BE(sealed.length, 0);
    socket.end(Buffer.concat([header, sealed]));
  }
}

/** Binds, starts the protocol and joins through `join` (in the background: see `members()`). */
export async function startGossip(options: StartGossipOptions): Promise<GossipMember> {
  const logger = options.logger ?? silentLogger();
  if (typeof options.name !== 'string' || options.name.length === 0 || Buffer.byteLength(options.name) > 255) {
    throw new CairnError('CAIRN_BAD_REQUEST', 'must be a non-empty name of at most 255 bytes', 'name');
  }
  if (options.role !== 'master' && options.role !== 'agent') {
    throw new CairnError('CAIRN_BAD_REQUEST', `must be 'master' or 'agent', got '${String(options.role)}'`, 'role');
  }
  const port = options.bindPort;
  if (!Number.isInteger(port) || port < 0 || port > 65_535) {
    throw new CairnError('CAIRN_BAD_REQUEST', `must be a port (0-65535), got ${String(port)}`, 'bindPort');
  }
  const join = options.join ?? [];
  join.forEach((a, i) => parseAddress(a, `join[${i}]`));
  const config = compileGossipConfig(options.config);
  const keys = deriveGossipKeys(options.secret, options.cluster ?? 'cairn', options.encrypt === true);
  const bindHost = options.bindHost ?? '0.0.0.0';
  if (isIP(bindHost) === 0) throw new CairnError('CAIRN_BAD_REQUEST', `'${bindHost}' is not an IP address`, 'bindHost');

  let bound: Awaited<ReturnType<typeof bindBoth>>;
  try {
    bound = await bindBoth(bindHost, port);
  } catch (err) {
    if (!options.anyPortIfTaken || port === 0) throw err;
    bound = await bindBoth(bindHost, 0);
    logger.warn({ port, bound: bound.boundPort, err: (err as Error).message }, 'gossip: the port is taken; using a free one (give --gossip-port to choose)');
  }
  const { udp, tcp, boundPort } = bound;
  let advertise: string;
  try {
    advertise = advertiseAddress(options.advertise, bindHost, boundPort);
  } catch (err) {
    udp.close();
    tcp.close();
    throw err;
  }
  // Monotonic, but in the epoch's range so times read like timestamps.
  const clock = steadyClock();
  let core: GossipNode;
  try {
    core = new GossipNode({
      name: options.name,
      address: advertise,
      role: options.role,
      meta: options.meta,
      config,
      random: options.random ?? cryptoRandom(),
      nowMs: clock(),
    });
  } catch (err) {
    udp.close();
    tcp.close();
    throw err;
  }
  const member = new GossipMember(core, udp, tcp, keys, logger, clock);
  logger.info({ member: options.name, address: advertise, join, encrypted: keys.cipher !== undefined }, 'gossip: started');
  member.start(join);
  return member;
}

function advertiseAddress(advertise: string | undefined, bindHost: string, port: number): string {
  if (advertise !== undefined) {
    const hp = tryParseAddress(advertise);
    if (hp !== undefined) return formatAddress(hp.host, hp.port);
    if (advertise.length === 0 || advertise.includes(':') && isIP(advertise) !== 6) {
      throw new CairnError('CAIRN_BAD_REQUEST', `'${advertise}' is neither host nor host:port`, 'advertise');
    }
    return formatAddress(advertise, port);
  }
  if (bindHost !== '0.0.0.0' && bindHost !== '::') return formatAddress(bindHost, port);
  for (const list of Object.values(networkInterfaces())) {
    for (const i of list ?? []) if (i.family === 'IPv4' && !i.internal) return formatAddress(i.address, port);
  }
  return formatAddress('127.0.0.1', port);
}

/** A UDP socket and a TCP listener on the same port (the same free port when `port` is 0). */
async function bindBoth(host: string, port: number): Promise<{ udp: UdpSocket; tcp: Server; boundPort: number }> {
  const type = isIP(host) === 6 ? 'udp6' : 'udp4';
  let lastError: Error | undefined;
  for (let attempt = 0; attempt < (port === 0 ? BIND_ATTEMPTS : 1); attempt++) {
    const udp = createSocket({ type });
    try {
      await new Promise<void>((resolve, reject) => {
        udp.once('error', reject);
        udp.bind(port, host, () => {
          udp.off('error', reject);
          resolve();
        });
      });
    } catch (err) {
      lastError = err as Error;
      udp.close();
      continue;
    }
    const boundPort = udp.address().port;
    const tcp = createServer();
    try {
      await new Promise<void>((resolve, reject) => {
        tcp.once('error', reject);
        tcp.listen(boundPort, host, () => {
          tcp.off('error', reject);
          resolve();
        });
      });
      return { udp, tcp, boundPort };
    } catch (err) {
      lastError = err as Error;
      udp.close();
      tcp.close();
    }
  }
  throw new CairnError('CAIRN_BAD_REQUEST', `cannot bind gossip UDP and TCP on ${host}:${port}: ${lastError?.message}`, 'bindPort');
}
