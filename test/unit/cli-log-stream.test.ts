// `cairn logs --follow`: following a streamed log again from the last nextOffset when the
// stream breaks, so no byte is lost or written twice; and MasterClient.followLogs against a
// small HTTP server that cuts its streams.

import { afterEach, describe, expect, it } from 'vitest';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { LogChunk } from '../../shared/master-state.ts';
import { MasterClient } from '../../shared/sdk/master-client.ts';
import { MasterHttpError } from '../../shared/sdk/http-error.ts';
import { continuation, followLogStream, type LogStreamSource, type StreamFollowOptions } from '../../bin/commands/common/log-relay.ts';

const TEXT = Array.from({ length: 40 }, (_, i) => `line ${i} é€\n`).join('');
const BYTES = Buffer.from(TEXT);

/** The log's bytes [from, to) as a chunk (`to` on a character boundary). */
function chunkOf(from: number, to: number, eof = false): LogChunk {
  return { data: BYTES.subarray(from, to).toString('utf8'), offset: from, nextOffset: to, eof };
}

/** Line ends: whole characters, so chunks cut there are valid UTF-8. */
const CUTS = [...TEXT.matchAll(/\n/g)].map((m) => Buffer.byteLength(TEXT.slice(0, m.index + 1)));

/** Chunks of a few lines each from `offset` to the end, the last with eof. */
function chunksFrom(offset: number, linesPerChunk = 3): LogChunk[] {
  const ends = CUTS.filter((c) => c > offset);
  const out: LogChunk[] = [];
  let at = offset;
  for (let i = linesPerChunk - 1; i < ends.length + linesPerChunk - 1; i += linesPerChunk) {
    const to = ends[Math.min(i, ends.length - 1)];
    out.push(chunkOf(at, to));
    at = to;
  }
  out.push(chunkOf(at, at, true));
  return out;
}

function options(source: LogStreamSource, extra: Partial<StreamFollowOptions> = {}): StreamFollowOptions & { out: () => string; sleeps: number[] } {
  let out = '';
  let nowMs = 0;
  const sleeps: number[] = [];
  return {
    source,
    taskId: 't',
    stream: 'stdout',
    write: (text) => (out += text),
    retryDelayMs: 500,
    giveUpMs: 5000,
    now: () => nowMs,
    sleep: async (ms) => {
      sleeps.push(ms);
      nowMs += ms;
    },
    ...extra,
    out: () => out,
    sleeps,
  };
}

describe('continuation', () => {
  it('takes a chunk that starts where the log is, skips one already written, refuses a gap or overlap', () => {
    expect(continuation(10, { data: 'abc', offset: 10, nextOffset: 13, eof: false })).toEqual({ data: 'abc', nextOffset: 13, eof: false });
    expect(continuation(10, { data: 'abc', offset: 4, nextOffset: 7, eof: false })).toEqual({ data: '', nextOffset: 10, eof: false });
    expect(continuation(10, { data: 'abc', offset: 7, nextOffset: 10, eof: true })).toEqual({ data: '', nextOffset: 10, eof: true });
    expect(continuation(10, { data: 'abc', offset: 12, nextOffset: 15, eof: false })).toBeUndefined(); // gap
    expect(continuation(10, { data: 'abc', offset: 8, nextOffset: 11, eof: false })).toBeUndefined(); // partial overlap
    expect(continuation(10, { data: 'a', offset: 5, nextOffset: 6, eof: true })).toBeUndefined(); // eof short of what we have
  });
});

describe('followLogStream', () => {
  it('follows again from the last nextOffset each time the stream breaks: no gap, no duplicate', async () => {
    const asked: number[] = [];
    let connection = 0;
    const source: LogStreamSource = {
      async *followLogs(_id, _stream, offset) {
        asked.push(offset);
        connection++;
        const chunks = chunksFrom(offset);
        // Connections 1-3 break after two chunks (an error, a clean end without eof, an
        // error before any chunk); connection 4 first replays bytes already written.
        if (connection === 3) throw new Error('connection refused');
        if (connection === 4) yield chunkOf(0, offset);
        for (const [i, c] of chunks.entries()) {
          if (connection <= 2 && i === 2) {
            if (connection === 1) throw new Error('socket hang up');
            return;
          }
          yield c;
        }
      },
    };
    const o = options(source);
    const reached = await followLogStream(o);
    expect(o.out()).toBe(TEXT);
    expect(reached).toBe(BYTES.length);
    expect(asked).toEqual([0, CUTS[5], CUTS[11], CUTS[11]]);
    expect(o.sleeps).toEqual([500, 500, 500]);
  });

  it('follows again when a chunk does not line up with what was written', async () => {
    const asked: number[] = [];
    const source: LogStreamSource = {
      async *followLogs(_id, _stream, offset) {
        asked.push(offset);
        const chunks = chunksFrom(offset);
        yield chunks[0];
        if (asked.length === 1) yield chunkOf(CUTS[10], CUTS[12]); // skips bytes
        yield* chunks.slice(1);
      },
    };
    const o = options(source);
    await followLogStream(o);
    expect(o.out()).toBe(TEXT);
    expect(asked).toEqual([0, CUTS[2]]);
  });

  it('fails at once when the first connection fails, and on a refusal (4xx) later', async () => {
    const down = options({
      async *followLogs() {
        throw new Error('cannot reach the master');
      },
    });
    await expect(followLogStream(down)).rejects.toThrow('cannot reach the master');
    expect(down.sleeps).toEqual([]);

    let n = 0;
    const refused = options({
      async *followLogs(_id, _stream, offset) {
        if (++n === 2) throw new MasterHttpError(404, 'CAIRN_UNKNOWN_TASK', 'no task');
        yield chunksFrom(offset)[0];
        throw new Error('socket hang up');
      },
    });
    await expect(followLogStream(refused)).rejects.toMatchObject({ code: 'CAIRN_UNKNOWN_TASK' });
    expect(refused.out()).toBe(TEXT.split('\n').slice(0, 3).join('\n') + '\n');
  });

  it('keeps trying through 5xx answers, and gives up after giveUpMs without a chunk', async () => {
    let n = 0;
    const flaky = options({
      async *followLogs(_id, _stream, offset) {
        n++;
        if (n === 1) {
          yield chunksFrom(offset)[0];
          throw new Error('socket hang up');
        }
        if (n <= 4) throw new MasterHttpError(503, 'CAIRN_AGENT_UNAVAILABLE', 'agent did not answer');
        yield* chunksFrom(offset);
      },
    });
    await followLogStream(flaky);
    expect(flaky.out()).toBe(TEXT);

    const gone = options(
      {
        async *followLogs(_id, _stream, offset) {
          if (offset === 0) {
            yield chunksFrom(0)[0];
            throw new Error('socket hang up');
          }
          throw new MasterHttpError(503, 'CAIRN_AGENT_UNAVAILABLE', 'agent did not answer');
        },
      },
      { giveUpMs: 2000 },
    );
    await expect(followLogStream(gone)).rejects.toMatchObject({ code: 'CAIRN_AGENT_UNAVAILABLE' });
    expect(gone.sleeps).toEqual([500, 500, 500, 500]);
  });
});

// ---- MasterClient.followLogs over real HTTP ----------------------------------------------

const servers: http.Server[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) {
    s.closeAllConnections();
    await new Promise<void>((r) => s.close(() => r()));
  }
});

async function serve(handler: http.RequestListener): Promise<string> {
  const server = http.createServer(handler);
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

describe('MasterClient.followLogs', () => {
  it('yields chunks as they come; with followLogStream, a cut connection loses and repeats nothing', async () => {
    const asked: string[] = [];
    const url = await serve((req, res) => {
      const q = new URL(req.url!, 'http://x').searchParams;
      asked.push(`${q.get('stream')}:${q.get('offset')}:${q.get('follow')}`);
      res.writeHead(200, { 'content-type': 'application/x-ndjson' });
      const chunks = chunksFrom(Number(q.get('offset')), 4);
      let i = 0;
      const timer = setInterval(() => {
        // The first connection is cut in the middle of its fourth line.
        if (asked.length === 1 && i === 3) {
          clearInterval(timer);
          res.write(JSON.stringify(chunks[i]).slice(0, 10));
          res.socket?.destroy();
          return;
        }
        res.write(`${JSON.stringify(chunks[i++])}\n`);
        if (i === chunks.length) {
          clearInterval(timer);
          res.end();
        }
      }, 5);
      res.on('close', () => clearInterval(timer));
    });
    const client = new MasterClient(url);

    // Alone, the SDK method throws where the stream broke.
    const seen: LogChunk[] = [];
    await expect(async () => {
      for await (const c of client.followLogs('t', 'stderr', 0)) seen.push(c);
    }).rejects.toThrow(/the stream from .* broke|ended before the end of the log/);
    expect(seen.map((c) => c.offset)).toEqual([0, CUTS[3], CUTS[7]]);

    asked.length = 0;
    let out = '';
    await followLogStream({
      source: client,
      taskId: 't',
      stream: 'stderr',
      write: (t) => (out += t),
      retryDelayMs: 10,
      giveUpMs: 5000,
      now: Date.now,
      sleep: (ms) => new Promise((r) => setTimeout(r, ms)),
    });
    expect(out).toBe(TEXT);
    expect(asked).toEqual(['stderr:0:true', `stderr:${CUTS[11]}:true`]);
  });

  it("throws the master's error for a refusal, and gives up on a silent stream", async () => {
    const url = await serve((req, res) => {
      if (req.url!.includes('nope')) {
        res.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ code: 'CAIRN_UNKNOWN_TASK', message: "no task 'nope'", field: 'id' }));
        return;
      }
      res.writeHead(200, { 'content-type': 'application/x-ndjson' });
      res.write(`${JSON.stringify(chunkOf(0, 0))}\n`); // then nothing, not even a keepalive
    });
    const client = new MasterClient(url);
    await expect(client.followLogs('nope', 'stdout', 0).next()).rejects.toMatchObject({ status: 404, code: 'CAIRN_UNKNOWN_TASK' });
    const stream = client.followLogs('quiet', 'stdout', 0, { idleTimeoutMs: 200 });
    expect((await stream.next()).value).toEqual(chunkOf(0, 0));
    await expect(stream.next()).rejects.toThrow(/nothing received for 200 ms/);
  });
});
