// A long-lived response whose client stops reading is cut once its unsent bytes pass the
// bound, and the cut is logged with who it was; a client that reads is never cut.

import { afterEach, describe, expect, it } from 'vitest';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { PassThrough } from 'node:stream';
import pino from 'pino';
import { boundedWriter } from '../../shared/bounded-stream.ts';
import { waitFor } from '../harness/processes.ts';

const servers: http.Server[] = [];
afterEach(() => {
  for (const s of servers.splice(0)) s.close();
});

/** A server streaming 64 KiB chunks every tick to one client through a bounded writer of `limit` bytes. */
async function streaming(limit: number) {
  const lines: Record<string, unknown>[] = [];
  const out = new PassThrough();
  out.on('data', (d: Buffer) => lines.push(...d.toString().trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>)));
  const log = pino({ level: 'warn' }, out);
  const state = { sent: 0, closed: false };
  const server = http.createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/octet-stream' });
    const write = boundedWriter(res, log, () => ({ who: 'test client', sent: state.sent }), limit);
    const chunk = Buffer.alloc(64 * 1024);
    const timer = setInterval(() => {
      if (write(chunk)) state.sent += chunk.length;
    }, 1);
    res.on('close', () => {
      clearInterval(timer);
      state.closed = true;
    });
  });
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`, lines, state };
}

const get = (url: string) => new Promise<http.IncomingMessage>((resolve, reject) => http.get(url, resolve).on('error', reject));

describe('boundedWriter', () => {
  it('cuts a stream whose client stops reading once the backlog passes the bound, naming it', async () => {
    const { url, lines, state } = await streaming(1024 * 1024);
    const res = await get(url);
    res.pause();
    res.socket.pause();
    await waitFor('the stream cut', () => state.closed || undefined, 20_000);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ who: 'test client', limitBytes: 1024 * 1024, msg: 'a client stopped reading its event stream: it is disconnected' });
    expect(lines[0]!.backlogBytes as number).toBeGreaterThan(1024 * 1024);
    res.destroy();
  });

  it('never cuts a client that reads', async () => {
    const { url, lines, state } = await streaming(1024 * 1024);
    const res = await get(url);
    let read = 0;
    res.on('data', (d: Buffer) => (read += d.length));
    // Several times the bound goes through.
    await waitFor('8 MiB read', () => read > 8 * 1024 * 1024 || undefined, 20_000);
    expect(state.closed).toBe(false);
    expect(lines).toHaveLength(0);
    res.destroy();
  });
});
