// Masters talk to each other over WebSocket: every master serves `/api/v1/raft` and keeps
// one outgoing connection to each peer. A connection opens with a handshake (the dialer's
// hello, the listener's welcome, each with a fresh nonce, under the cluster secret); then
// frames are authenticated batches of Raft messages, numbered per connection
// (shared/raft/wire.ts), so a captured frame sent again, on its connection or another, is
// refused. A peer whose frame fails to decode or authenticate, or is replayed, is logged,
// counted and dropped. Sending never blocks: a message for a peer that is not connected (or
// whose handshake has not completed) is dropped, and Raft's own retries recover it.
// Until a connection's first data frame has passed authentication (the dialer sends an opening
// one right after the welcome), it is held to a few bytes and seconds, and only so many such
// connections are let in (pre-auth-gate.ts); a dialer reads only the welcome on its own
// connections, so it takes frames of a handshake's size there and nothing larger.

import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import WebSocket, { WebSocketServer, type RawData } from 'ws';
import type { Logger } from 'pino';
import type { Message, NodeId } from '../../shared/raft/types.ts';
import { CairnError } from '../../shared/errors.ts';
import { MAX_FRAME_BYTES, RaftWire, type Dialing, type RaftSession } from '../../shared/raft/wire.ts';
import { RefusalLog } from '../../shared/refusal-log.ts';
import { closeRefused, PreAuthGate, PRE_AUTH_LIMITS, type PreAuthLimits, type PreAuthSlot } from './pre-auth-gate.ts';

export const RAFT_PATH = '/api/v1/raft';

/**
 * What a master knows of its peers' storage incarnations (see RaftCommandLog). A peer that
 * presents another incarnation than the one known for its id has lost its storage: its
 * connections are refused, both ways, until it is removed and added back.
 */
export interface IncarnationGuard {
  /** The incarnation known for `id` (the log's record, else the first seen; told to it in the welcome), if any. */
  known(id: NodeId): string | undefined;
  /**
   * `id` presented `incarnation`: false refuses its connection. `pin`: the handshake is
   * known fresh (a welcome to our hello, or a hello followed by a passing frame), so a first
   * incarnation may be recorded.
   */
  admit(id: NodeId, incarnation: string, pin: boolean): boolean;
  /** Peer `peer` knows this master by incarnation `known`, not its own: its storage was lost. */
  selfLost(peer: NodeId, known: string): void;
}

const ADMIT_ALL: IncarnationGuard = { known: () => undefined, admit: () => true, selfLost: () => undefined };
const RECONNECT_MIN_MS = 50;
const RECONNECT_MAX_MS = 500;
/** A connection whose handshake has not completed by then is dropped (and redialled). */
const HANDSHAKE_TIMEOUT_MS = 5_000;
/** What a dialer takes on its own connection: the listener sends the welcome there, nothing else. */
const DIALER_MAX_PAYLOAD = 64 * 1024;

interface Peer {
  id: NodeId;
  url: string;
  socket: WebSocket | undefined;
  /** The outgoing connection's session, once the peer has welcomed our hello. */
  session: RaftSession | undefined;
  attempt: number;
  timer: NodeJS.Timeout | undefined;
}

export class PeerTransport {
  private readonly wss = new WebSocketServer({ noServer: true, maxPayload: MAX_FRAME_BYTES });
  /** Connections refused or closed before authentication, by reason (logged at most once per interval). */
  readonly preAuthRefusals: RefusalLog;
  private readonly gate: PreAuthGate;
  private readonly peers = new Map<NodeId, Peer>();
  private closed = false;
  /** Connections being closed for a refused frame: what else they sent is not read. */
  private readonly refused = new WeakSet<WebSocket>();
  /** Frames refused (undecodable, unauthenticated or replayed), for metrics. */
  badFrames = 0;
  /** Of those, frames refused as replayed (a counter already seen, an old welcome). */
  replayedFrames = 0;
  /** Connections refused because a member's storage incarnation changed (its storage was lost). */
  lostStorageRefusals = 0;

  constructor(
    private readonly wire: RaftWire,
    private readonly onMessages: (messages: Message[]) => void,
    private readonly onUnreachable: (id: NodeId) => void,
    private readonly log: Logger,
    private readonly onConnectionLost: (id: NodeId) => void = () => undefined,
    /** This master's id, sent as a hint when dialling so that the peer dials back at once. */
    private readonly selfId?: NodeId,
    /** TLS options of outgoing connections (CA, client certificate); wss:// peers need them. */
    private readonly dial: { ca?: Buffer; cert?: Buffer; key?: Buffer } = {},
    private readonly guard: IncarnationGuard = ADMIT_ALL,
    /** This master's own incarnation, compared with what a peer knows of it. */
    private readonly incarnation = '',
    preAuthLimits: PreAuthLimits = PRE_AUTH_LIMITS,
  ) {
    this.preAuthRefusals = new RefusalLog(log, 'refused a connection to the Raft endpoint before authentication');
    this.gate = new PreAuthGate(this.preAuthRefusals, preAuthLimits);
    this.wss.on('connection', (socket: WebSocket, req: IncomingMessage, slot: PreAuthSlot) => {
      const remote = req.socket.remoteAddress ?? '?';
      slot.watch(socket);
      this.redialIfWaiting(req.url);
      // Which peer this is, as its hello says (else its first frame's sender), once it has
      // sent a frame that passes: a hello alone proves nothing (it may be an old one sent
      // again). When its connection breaks the node hears of it (a crashed leader is noticed
      // from either direction).
      let peer: NodeId | undefined;
      // The first frame must be a hello; until then nothing else is read.
      let session: RaftSession | undefined;
      socket.on('message', (data: RawData) => {
        if (this.refused.has(socket)) return;
        if (session === undefined) {
          try {
            const accepted = this.wire.accept(frameBytes(data), this.selfId, (id) => this.guard.known(id));
            session = accepted.session;
            // The welcome goes out either way: it tells a peer that lost its storage so.
            socket.send(accepted.welcome);
            if (session.peer !== 0 && !this.guard.admit(session.peer, session.peerIncarnation, false)) this.refuseLost(socket, remote);
          } catch (err) {
            this.refuse(socket, remote, err);
          }
          return;
        }
        if (peer === undefined && session.peer !== 0 && !this.guard.admit(session.peer, session.peerIncarnation, true)) {
          this.refuseLost(socket, remote);
          return;
        }
        const messages = this.receive(socket, session, remote, data);
        if (messages === undefined) return;
        // Made with this connection's keys, so not a replay: the connection is a member's.
        slot.authenticated();
        if (peer === undefined) peer = session.peer !== 0 ? session.peer : messages[0]?.from;
      });
      socket.on('close', () => {
        if (peer !== undefined && !this.closed) this.onConnectionLost(peer);
      });
      socket.on('error', () => undefined);
    });
  }

  /** Sets who the peers are (the membership may change); connects to new ones. */
  setPeers(peers: ReadonlyMap<NodeId, string>): void {
    for (const [id, p] of this.peers) {
      if (peers.get(id) !== p.url) {
        this.drop(p);
        this.peers.delete(id);
      }
    }
    for (const [id, url] of peers) {
      if (!this.peers.has(id)) {
        const p: Peer = { id, url, socket: undefined, session: undefined, attempt: 0, timer: undefined };
        this.peers.set(id, p);
        this.connect(p);
      }
    }
  }

  peerUrl(id: NodeId): string | undefined {
    return this.peers.get(id)?.url;
  }

  /** Connections upgraded but not yet authenticated. */
  get unauthenticatedConnections(): number {
    return this.gate.pending;
  }

  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    const slot = this.gate.admit(req.socket.remoteAddress ?? '?', socket);
    if (slot === undefined) return;
    this.wss.handleUpgrade(req, socket, head, (ws) => this.wss.emit('connection', ws, req, slot));
  }

  send(messages: readonly Message[]): void {
    const byPeer = new Map<NodeId, Message[]>();
    for (const m of messages) {
      const list = byPeer.get(m.to);
      if (list) list.push(m);
      else byPeer.set(m.to, [m]);
    }
    for (const [to, list] of byPeer) {
      const p = this.peers.get(to);
      if (!p?.socket || p.session === undefined || p.socket.readyState !== WebSocket.OPEN) {
        this.onUnreachable(to);
        continue;
      }
      p.socket.send(p.session.encode(list));
    }
  }

  /** Hands the messages on and returns them; undefined when the frame was refused. */
  private receive(socket: WebSocket, session: RaftSession, remote: string, data: RawData): Message[] | undefined {
    let messages: Message[];
    try {
      messages = session.decode(frameBytes(data));
    } catch (err) {
      this.refuse(socket, remote, err);
      return undefined;
    }
    if (messages.length > 0) this.onMessages(messages);
    return messages;
  }

  /** A frame that failed to decode, authenticate, or was replayed: counted, logged, connection dropped. */
  private refuse(socket: WebSocket, remote: string, err: unknown): void {
    this.refused.add(socket);
    this.badFrames++;
    const replayed = err instanceof CairnError && err.code === 'CAIRN_REPLAYED';
    if (replayed) this.replayedFrames++;
    this.log.warn({ remote, err: (err as Error).message, replayed }, 'refused a frame from a peer; dropping the connection');
    closeRefused(socket, 1008, replayed ? 'replayed frame' : 'bad frame');
  }

  /** A connection of a member whose storage was lost (or of this one, to a peer that knew it before). */
  private refuseLost(socket: WebSocket, remote: string): void {
    this.refused.add(socket);
    this.lostStorageRefusals++;
    this.log.debug({ remote }, 'refused a connection: a member\'s storage incarnation differs from the one the group knows');
    closeRefused(socket, 1008, 'storage lost');
  }

  /**
   * A peer that dials in has (re)started: if our own connection to it is waiting out a
   * reconnect back-off, dial now. Otherwise a restarted master would hear nothing from us
   * (votes included) for up to the back-off, and an election needing it would stall. The
   * `from` hint is unauthenticated; all it can cause is one connection attempt.
   */
  private redialIfWaiting(url: string | undefined): void {
    const from = Number(new URL(url ?? '/', 'http://x').searchParams.get('from'));
    const p = this.peers.get(from);
    if (p === undefined || p.socket !== undefined || p.timer === undefined) return;
    clearTimeout(p.timer);
    p.timer = undefined;
    p.attempt = 0;
    this.connect(p);
  }

  private connect(p: Peer): void {
    if (this.closed) return;
    p.timer = undefined;
    const query = this.selfId !== undefined ? `?from=${this.selfId}` : '';
    const ws = new WebSocket(p.url.replace(/^http/, 'ws') + RAFT_PATH + query, { perMessageDeflate: false, maxPayload: DIALER_MAX_PAYLOAD, ...this.dial });
    p.socket = ws;
    p.session = undefined;
    let dialing: Dialing | undefined;
    let handshake: NodeJS.Timeout | undefined;
    ws.on('open', () => {
      p.attempt = 0;
      (ws as unknown as { _socket?: { setNoDelay?: (b: boolean) => void } })._socket?.setNoDelay?.(true);
      const hello = this.wire.hello(this.selfId);
      dialing = hello.dialing;
      ws.send(hello.frame);
      handshake = setTimeout(() => ws.terminate(), HANDSHAKE_TIMEOUT_MS);
      handshake.unref();
    });
    let session: RaftSession | undefined;
    ws.on('message', (data: RawData) => {
      if (this.refused.has(ws)) return;
      if (session !== undefined) {
        this.receive(ws, session, p.url, data);
        return;
      }
      if (dialing === undefined) return;
      try {
        session = dialing.welcome(frameBytes(data));
      } catch (err) {
        this.refuse(ws, p.url, err);
        return;
      }
      clearTimeout(handshake);
      if (session.known !== '' && this.incarnation !== '' && session.known !== this.incarnation) {
        this.guard.selfLost(p.id, session.known);
        this.refuseLost(ws, p.url);
        return;
      }
      if (!this.guard.admit(p.id, session.peerIncarnation, true)) {
        this.refuseLost(ws, p.url);
        return;
      }
      if (p.socket !== ws) return;
      // The first data frame, empty: it proves to the listener that this connection is a
      // member's (a hello can be a captured one), which lifts its pre-authentication limits.
      ws.send(session.opening());
      p.session = session;
    });
    ws.on('error', () => undefined);
    let opened = false;
    ws.on('open', () => (opened = true));
    ws.on('close', () => {
      clearTimeout(handshake);
      if (p.socket !== ws || this.closed || this.peers.get(p.id) !== p) return;
      p.socket = undefined;
      p.session = undefined;
      if (opened) this.onConnectionLost(p.id);
      const delay = Math.min(RECONNECT_MAX_MS, RECONNECT_MIN_MS * 2 ** p.attempt++);
      p.timer = setTimeout(() => this.connect(p), delay);
      p.timer.unref();
    });
  }

  private drop(p: Peer): void {
    if (p.timer) clearTimeout(p.timer);
    p.socket?.terminate();
    p.socket = undefined;
    p.session = undefined;
  }

  close(): void {
    this.closed = true;
    for (const p of this.peers.values()) this.drop(p);
    for (const c of this.wss.clients) c.terminate();
    this.wss.close();
  }
}

/**
 * Before a master with empty storage founds a group, asks each peer what incarnation it
 * knows for `self` (a member of an existing group whose storage was lost is known by its old
 * one). Peers that do not answer within `timeoutMs` are left out; resolves with the answers.
 */
export async function askPeersAboutSelf(
  wire: RaftWire,
  self: NodeId,
  peers: ReadonlyMap<NodeId, string>,
  timeoutMs: number,
  dial: { ca?: Buffer; cert?: Buffer; key?: Buffer } = {},
): Promise<{ peer: NodeId; known: string }[]> {
  const ask = (id: NodeId, url: string) => new Promise<{ peer: NodeId; known: string } | undefined>((resolve) => {
    const ws = new WebSocket(url.replace(/^http/, 'ws') + RAFT_PATH, { perMessageDeflate: false, maxPayload: DIALER_MAX_PAYLOAD, ...dial });
    const done = (answer: { peer: NodeId; known: string } | undefined) => {
      clearTimeout(timer);
      ws.terminate();
      resolve(answer);
    };
    const timer = setTimeout(() => done(undefined), timeoutMs);
    let dialing: Dialing | undefined;
    ws.on('open', () => {
      const hello = wire.hello(self);
      dialing = hello.dialing;
      ws.send(hello.frame);
    });
    ws.on('message', (data: RawData) => {
      try {
        done(dialing ? { peer: id, known: dialing.welcome(frameBytes(data)).known } : undefined);
      } catch {
        done(undefined);
      }
    });
    ws.on('error', () => done(undefined));
    ws.on('close', () => done(undefined));
  });
  const answers = await Promise.all([...peers].filter(([id]) => id !== self).map(([id, url]) => ask(id, url)));
  return answers.filter((a): a is { peer: NodeId; known: string } => a !== undefined);
}

function frameBytes(data: RawData): Buffer {
  return Array.isArray(data) ? Buffer.concat(data) : Buffer.isBuffer(data) ? data : Buffer.from(data);
}
