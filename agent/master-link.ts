// The agent's WebSocket to the master: connect, hand decoded frames up, notice a dead
// master (socket closed, or silence past the liveness deadline) and reconnect with
// exponential backoff. What to say on a fresh connection is the agent's business
// (onOpen); this file only keeps a connection alive.
//
// Where a connection goes: where a follower said the leader is (close code 4001), else where
// gossip says the leader is (`leaderHint`), else the next of the masters given in turn.

import WebSocket from 'ws';
import type { Logger } from 'pino';
import {
  decodeMasterToAgent,
  encodeAgentToMaster,
  type AgentToMaster,
  type MasterToAgent,
} from '../shared/agent-protocol.ts';

/** Delay before reconnect attempt `attempt` (0-based): min doubling up to max. */
export function backoffDelayMs(attempt: number, minMs: number, maxMs: number): number {
  return Math.min(maxMs, minMs * 2 ** Math.min(attempt, 30));
}

/** Close code a master that is not the leader uses; the close reason is the leader's URL. */
export const NOT_LEADER_CLOSE_CODE = 4001;

export interface MasterLinkOptions {
  /** The first master to try; '' to wait for `leaderHint`. */
  url: string;
  /** TLS options of the connection (shared/tls.ts: the CA to verify the master with, the certificate to present). */
  dial?: { ca?: Buffer; cert?: Buffer; key?: Buffer };
  /** Sent with every connection's upgrade request: the agent's credential. */
  headers?: Record<string, string>;
  /** All masters' agent endpoints: tried in turn when one cannot be reached. */
  alternates?: readonly string[];
  /** The leader's agent endpoint as gossip knows it (ws://…/api/v1/agent), if it does. */
  leaderHint?: () => string | undefined;
  logger: Logger;
  reconnectMinMs: number;
  reconnectMaxMs: number;
  /** Silence allowed before the first frame of a connection arrives. */
  initialLivenessMs: number;
  /** A fresh connection is open; `generation` names it. */
  onOpen: (generation: number) => void;
  onMessage: (msg: MasterToAgent, generation: number) => void;
  /** The connection `generation` is gone (a reconnect is already scheduled unless stopped). */
  onClose: (generation: number, reason: string) => void;
}

export class MasterLink {
  private ws: WebSocket | undefined;
  private generation = 0;
  private attempt = 0;
  private livenessMs: number;
  private reconnectTimer: NodeJS.Timeout | undefined;
  private livenessTimer: NodeJS.Timeout | undefined;
  private stopped = false;
  /** Where the next connection goes: the leader a follower named, or the next master in turn. */
  private target: string;

  constructor(private readonly opts: MasterLinkOptions) {
    this.livenessMs = opts.initialLivenessMs;
    this.target = opts.url;
  }

  start(): void {
    this.connect();
  }

  /** True while a socket is open. */
  get isOpen(): boolean {
    return this.ws?.readyState === WebSocket.OPEN;
  }

  /** Where the open connection goes; undefined when none is open. */
  get connectedUrl(): string | undefined {
    return this.isOpen ? this.ws?.url : undefined;
  }

  /** The connection now open (or being opened). */
  get currentGeneration(): number {
    return this.generation;
  }

  /** Sends one frame if the socket is open; returns whether it was handed to the socket. */
  send(msg: AgentToMaster): boolean {
    const ws = this.ws;
    if (!ws || ws.readyState !== WebSocket.OPEN) return false;
    ws.send(encodeAgentToMaster(msg), { binary: true });
    return true;
  }

  /** How long the master may stay silent from now on (set from its ping interval). */
  setLivenessMs(ms: number): void {
    this.livenessMs = ms;
    this.armLiveness();
  }

  /** The connection proved good (registration accepted): the next failure backs off from the start. */
  markHealthy(): void {
    this.attempt = 0;
  }

  /**
   * The leader may have moved (gossip says so): when no connection is open, stop waiting out
   * the backoff and connect now to the new leader.
   */
  leaderMoved(): void {
    if (this.stopped || this.ws !== undefined || this.reconnectTimer === undefined) return;
    clearTimeout(this.reconnectTimer);
    this.reconnectTimer = undefined;
    this.attempt = 0;
    this.target = '';
    this.connect();
  }

  /** Closes the current connection and connects again (after backoff). */
  drop(reason: string): void {
    const ws = this.ws;
    if (!ws) return;
    this.opts.logger.warn({ reason }, 'dropping connection to master');
    ws.terminate();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.reconnectTimer);
    clearTimeout(this.livenessTimer);
    this.reconnectTimer = undefined;
    this.livenessTimer = undefined;
    const ws = this.ws;
    this.ws = undefined;
    if (!ws || ws.readyState === WebSocket.CLOSED) return;
    await new Promise<void>((resolve) => {
      const done = setTimeout(() => {
        ws.terminate();
        resolve();
      }, 1000);
      ws.once('close', () => {
        clearTimeout(done);
        resolve();
      });
      if (ws.readyState === WebSocket.CONNECTING) ws.terminate();
      else ws.close(1000, 'agent stopping');
    });
  }

  private connect(): void {
    if (this.stopped) return;
    if (this.target === '') this.target = this.opts.leaderHint?.() ?? '';
    if (this.target === '') {
      // Started with only gossip to go by, and it names no leader yet.
      if (this.attempt === 0) this.opts.logger.info('waiting for gossip to name the leader');
      this.scheduleReconnect();
      return;
    }
    const generation = ++this.generation;
    const url = this.target;
    const ws = new WebSocket(url, { perMessageDeflate: false, handshakeTimeout: 5000, ...this.opts.dial, ...(this.opts.headers ? { headers: this.opts.headers } : {}) });
    ws.binaryType = 'nodebuffer';
    this.ws = ws;
    let closed = false;

    ws.on('open', () => {
      if (this.ws !== ws) return;
      this.opts.logger.info({ url }, 'connected to master');
      this.armLiveness();
      this.opts.onOpen(generation);
    });
    ws.on('message', (data, isBinary) => {
      if (this.ws !== ws) return;
      if (!isBinary) {
        this.opts.logger.warn('text frame from master ignored (frames are binary protobuf)');
        return;
      }
      const bytes = Array.isArray(data) ? Buffer.concat(data) : Buffer.isBuffer(data) ? data : Buffer.from(data);
      let msg: MasterToAgent;
      try {
        msg = decodeMasterToAgent(bytes);
      } catch (err) {
        this.opts.logger.warn({ err: (err as Error).message, bytes: bytes.length }, 'undecodable frame from master ignored');
        return;
      }
      this.armLiveness();
      try {
        this.opts.onMessage(msg, generation);
      } catch (err) {
        this.opts.logger.error({ err: (err as Error).message }, 'handling a frame from master failed');
      }
    });
    ws.on('error', (err) => {
      // 'close' follows; it schedules the reconnect.
      this.opts.logger.debug({ err: err.message }, 'master connection error');
    });
    ws.on('close', (code, reason) => {
      if (closed) return;
      closed = true;
      if (this.ws === ws) {
        this.ws = undefined;
        clearTimeout(this.livenessTimer);
        this.livenessTimer = undefined;
      }
      const why = `closed (${code}${reason.length > 0 ? ` ${reason.toString()}` : ''})`;
      this.opts.onClose(generation, why);
      this.chooseNextTarget(url, code, reason.toString());
      this.scheduleReconnect();
    });
  }

  /** After a close: follow a follower's pointer to the leader, else try the next master. */
  private chooseNextTarget(url: string, code: number, reason: string): void {
    if (code === NOT_LEADER_CLOSE_CODE && /^https?:\/\//.test(reason)) {
      const leader = new URL(reason);
      this.target = `${leader.protocol === 'https:' ? 'wss:' : 'ws:'}//${leader.host}/api/v1/agent`;
      this.attempt = 0; // not a failure: go there at once
      this.opts.logger.info({ leader: reason }, 'master is not the leader; following it to the leader');
      return;
    }
    const hint = this.opts.leaderHint?.();
    if (hint !== undefined) {
      this.target = hint;
      return;
    }
    const all = this.opts.alternates ?? [];
    if (all.length > 1) {
      const i = all.indexOf(url);
      this.target = all[(i + 1) % all.length];
    }
  }

  private armLiveness(): void {
    clearTimeout(this.livenessTimer);
    if (this.stopped || !this.ws) return;
    const ws = this.ws;
    this.livenessTimer = setTimeout(() => {
      if (this.ws === ws) this.drop(`no frame from master for ${this.livenessMs} ms`);
    }, this.livenessMs);
  }

  private scheduleReconnect(): void {
    if (this.stopped || this.reconnectTimer) return;
    const delay = backoffDelayMs(this.attempt++, this.opts.reconnectMinMs, this.opts.reconnectMaxMs);
    this.reconnectTimer = setTimeout(() => {
      this.reconnectTimer = undefined;
      this.connect();
    }, delay);
  }
}
