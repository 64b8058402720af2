// MasterClient given several masters: a request that cannot reach one goes to the next, the
// one that answered is asked first next time, an HTTP error is an answer (no failover), and a
// change that may have arrived (it timed out) is not sent to a second master.

import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { MasterClient } from '../../shared/sdk/master-client.ts';
import { MasterHttpError } from '../../shared/sdk/http-error.ts';

const servers: Server[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) {
    s.closeAllConnections();
    await new Promise((r) => s.close(r));
  }
});

async function serve(handler: (req: IncomingMessage, res: ServerResponse) => void): Promise<{ url: string; seen: string[] }> {
  const seen: string[] = [];
  const s = createServer((req, res) => {
    seen.push(`${req.method} ${req.url}`);
    handler(req, res);
  });
  servers.push(s);
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(s.address() as AddressInfo).port}`, seen };
}

/** A URL nothing listens on: a server's port, closed again. */
async function deadUrl(): Promise<string> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(s.address() as AddressInfo).port}`;
  await new Promise((r) => s.close(r));
  return url;
}

const answer = (body: unknown, status = 200) => (_req: IncomingMessage, res: ServerResponse) => {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
};

describe('MasterClient with several masters', () => {
  it('asks the next master when one cannot be reached, and that one first from then on', async () => {
    const dead = await deadUrl();
    const live = await serve(answer({ tasks: [] }));
    const client = new MasterClient(`${dead}, ${live.url}`);
    expect(client.masterUrls).toEqual([dead, live.url]);
    expect(client.baseUrl).toBe(dead);
    expect(await client.state()).toEqual({ tasks: [] });
    expect(client.baseUrl).toBe(live.url);
    // A change whose connection was refused never arrived: it goes on to the next master too.
    const kill = await serve((_req, res) => res.writeHead(202).end('{}'));
    const k = new MasterClient(`${dead},${kill.url}`);
    await k.kill('t1');
    expect(kill.seen).toEqual(['POST /api/v1/tasks/t1/kill']);
  });

  it('takes an HTTP error as the answer, without asking another master', async () => {
    const refusing = await serve(answer({ code: 'CAIRN_NOT_FOUND', message: 'no task t9' }, 404));
    const other = await serve(answer({}));
    const client = new MasterClient(`${refusing.url},${other.url}`);
    await expect(client.task('t9')).rejects.toBeInstanceOf(MasterHttpError);
    expect(other.seen).toEqual([]);
  });

  it('names every master it could not reach', async () => {
    const [a, b] = [await deadUrl(), await deadUrl()];
    await expect(new MasterClient(`${a},${b}`).state()).rejects.toThrow(new RegExp(`reading the cluster state: cannot reach any master \\(${a}: ECONNREFUSED; ${b}: ECONNREFUSED\\)`));
    await expect(new MasterClient(a).state()).rejects.toThrow(`reading the cluster state: cannot reach the master at ${a}: ECONNREFUSED`);
  });

  it('does not send a change that timed out (it may have arrived) to a second master', async () => {
    const silent = await serve(() => undefined); // takes the request, never answers
    const other = await serve((_req, res) => res.writeHead(202).end('{}'));
    const client = new MasterClient(`${silent.url},${other.url}`, { timeoutMs: 200 });
    await expect(client.kill('t2')).rejects.toThrow(`killing task t2: cannot reach the master at ${silent.url}: no answer in time`);
    expect(silent.seen).toEqual(['POST /api/v1/tasks/t2/kill']);
    expect(other.seen).toEqual([]);
    // A read that timed out is safe to ask again elsewhere.
    const reader = new MasterClient(`${silent.url},${other.url}`, { timeoutMs: 200 });
    await reader.members().catch(() => undefined);
    expect(other.seen).toEqual(['GET /api/v1/members']);
  });

  it('follows a log through the next master when the first cannot be reached', async () => {
    const dead = await deadUrl();
    const live = await serve((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/x-ndjson' });
      res.end(`${JSON.stringify({ data: 'hi\n', offset: 0, nextOffset: 3, eof: true })}\n`);
    });
    const chunks = [];
    for await (const c of new MasterClient(`${dead},${live.url}`).followLogs('t3', 'stdout', 0)) chunks.push(c);
    expect(chunks).toEqual([{ data: 'hi\n', offset: 0, nextOffset: 3, eof: true }]);
  });

  it('refuses a list with a bad URL in it, naming the field', () => {
    expect(() => new MasterClient('http://a:1,ftp://b')).toThrow(expect.objectContaining({ field: 'masterUrl' }));
  });
});
