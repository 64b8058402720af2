// A WebSocket client made of a bare TCP socket, for tests that act as a hostile peer: it can
// announce a frame of any length and then send its bytes as slowly or as fast as it likes,
// without holding the frame in memory (a WebSocket library would build the whole frame
// first). It reads the server's frames (unmasked, unfragmented) and its close code and reason.

import { randomBytes } from 'node:crypto';
import net from 'node:net';

export interface ServerFrame {
  opcode: number;
  payload: Buffer;
}

export class RawWebSocket {
  readonly frames: ServerFrame[] = [];
  /** The server's close frame, once read. */
  closeFrame: { code: number; reason: string } | undefined;
  /** Resolves when the TCP connection is gone (closed or reset), either side. */
  readonly gone: Promise<void>;
  private buf = Buffer.alloc(0);
  private readonly waiters: (() => void)[] = [];

  private constructor(private readonly socket: net.Socket, rest: Buffer) {
    this.gone = new Promise((resolve) => socket.once('close', () => resolve()));
    socket.on('error', () => undefined);
    socket.on('data', (chunk: Buffer) => this.read(chunk));
    if (rest.length > 0) this.read(rest);
  }

  /**
   * Opens `ws://host:port/path`: resolves once the server answered 101, rejects with the
   * status line and body of any other answer.
   */
  static open(url: string, path: string): Promise<RawWebSocket> {
    const u = new URL(url);
    return new Promise((resolve, reject) => {
      const socket = net.connect(Number(u.port), u.hostname);
      let head = Buffer.alloc(0);
      const onData = (chunk: Buffer) => {
        head = Buffer.concat([head, chunk]);
        const end = head.indexOf('\r\n\r\n');
        if (end < 0) return;
        socket.off('data', onData);
        const text = head.subarray(0, end).toString();
        if (!text.startsWith('HTTP/1.1 101')) {
          socket.on('data', (more: Buffer) => (head = Buffer.concat([head, more])));
          socket.once('close', () => reject(new Error(head.toString())));
          return;
        }
        resolve(new RawWebSocket(socket, head.subarray(end + 4)));
      };
      socket.on('data', onData);
      socket.once('error', reject);
      socket.once('connect', () => {
        socket.write(`GET ${path} HTTP/1.1\r\nHost: ${u.host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: ${randomBytes(16).toString('base64')}\r\nSec-WebSocket-Version: 13\r\n\r\n`);
      });
    });
  }

  /** Sends one binary frame (masked with a zero key, as a client must mask). */
  send(payload: Uint8Array): void {
    this.socket.write(Buffer.concat([frameHeader(payload.length), payload]));
  }

  /**
   * Announces a binary frame of `length` bytes and sends zeros towards it, `chunkBytes` at a
   * time and only as fast as the socket takes them, until all are sent or the connection is
   * gone. Resolves with the bytes of payload sent.
   */
  async stream(length: number, chunkBytes = 1 << 20): Promise<number> {
    const chunk = Buffer.alloc(chunkBytes);
    let sent = 0;
    let ended = false;
    void this.gone.then(() => (ended = true));
    this.socket.write(frameHeader(length));
    while (sent < length && !ended && !this.socket.destroyed) {
      const n = Math.min(chunkBytes, length - sent);
      const more = this.socket.write(n === chunkBytes ? chunk : chunk.subarray(0, n));
      sent += n;
      if (!more) {
        await Promise.race([new Promise((r) => this.socket.once('drain', r)), this.gone]);
      }
    }
    return sent;
  }

  /** Waits until a frame matching `pred` (or the close frame, for opcode 8) has been read, or the connection is gone. */
  async waitFrame(pred: (f: ServerFrame) => boolean): Promise<ServerFrame | undefined> {
    let closed = false;
    void this.gone.then(() => {
      closed = true;
      for (const w of this.waiters.splice(0)) w();
    });
    for (;;) {
      const f = this.frames.find(pred);
      if (f !== undefined || closed) return f;
      await new Promise<void>((r) => this.waiters.push(r));
    }
  }

  destroy(): void {
    this.socket.destroy();
  }

  private read(chunk: Buffer): void {
    this.buf = Buffer.concat([this.buf, chunk]);
    for (;;) {
      if (this.buf.length < 2) break;
      const opcode = this.buf[0]! & 0x0f;
      let len = this.buf[1]! & 0x7f;
      let at = 2;
      if (len === 126) {
        if (this.buf.length < 4) break;
        len = this.buf.readUInt16BE(2);
        at = 4;
      } else if (len === 127) {
        if (this.buf.length < 10) break;
        len = Number(this.buf.readBigUInt64BE(2));
        at = 10;
      }
      if (this.buf.length < at + len) break;
      const payload = this.buf.subarray(at, at + len);
      this.buf = this.buf.subarray(at + len);
      this.frames.push({ opcode, payload });
      if (opcode === 8) this.closeFrame = { code: payload.length >= 2 ? payload.readUInt16BE(0) : 1005, reason: payload.subarray(2).toString() };
      for (const w of this.waiters.splice(0)) w();
    }
  }
}

/** A final binary frame's header announcing `length` bytes, masked with the key 0 (the payload goes as it is). */
function frameHeader(length: number): Buffer {
  if (length < 126) return Buffer.from([0x82, 0x80 | length, 0, 0, 0, 0]);
  if (length < 65536) {
    const h = Buffer.from([0x82, 0x80 | 126, 0, 0, 0, 0, 0, 0]);
    h.writeUInt16BE(length, 2);
    return h;
  }
  const h = Buffer.alloc(14);
  h[0] = 0x82;
  h[1] = 0x80 | 127;
  h.writeBigUInt64BE(BigInt(length), 2);
  return h;
}
