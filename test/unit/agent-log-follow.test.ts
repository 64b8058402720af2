// Following a task's log on the agent (`GET /api/v1/tasks/:id/logs?follow=true`): a real
// task writing over about a second, read as an NDJSON stream over real HTTP; the follow loop
// itself with a fake log and clock.

import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import type { LogChunk } from '../../shared/master-state.ts';
import { ProcessExecutor } from '../../agent/executors/process/executor.ts';
import { sandboxDir } from '../../agent/executors/process/sandbox.ts';
import { buildAgentHttp } from '../../agent/http.ts';
import { followLog } from '../../agent/log-follow.ts';
import { ndjsonLines, shellTask } from '../harness/tasks.ts';

let workDir: string;
let executor: ProcessExecutor;
let app: FastifyInstance;
let baseUrl: string;

const task = (id: string, script: string) => shellTask(id, script);

/** Ten lines, one every 0.1 s. */
const TEN_LINES = 'i=1; while [ $i -le 10 ]; do echo "line $i of the log"; i=$((i+1)); sleep 0.1; done';

interface Received {
  chunk: LogChunk;
  /** Whether the task had ended when the chunk arrived. */
  taskEnded: boolean;
}

/** Reads a followed log to its end, noting for each chunk whether the task had ended. */
async function follow(path: string, ended: () => boolean): Promise<Received[]> {
  const res = await fetch(`${baseUrl}${path}`);
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/^application\/x-ndjson/);
  const got: Received[] = [];
  for await (const chunk of ndjsonLines<LogChunk>(res.body!)) got.push({ chunk, taskEnded: ended() });
  return got;
}

function dataOf(got: Received[]): string {
  return got.map((g) => g.chunk.data).join('');
}

/** Each chunk starts where the one before ended, from `offset`. */
function expectContiguous(got: Received[], offset: number): void {
  let at = offset;
  for (const { chunk } of got) {
    expect(chunk.offset).toBe(at);
    expect(chunk.nextOffset - chunk.offset).toBe(Buffer.byteLength(chunk.data));
    at = chunk.nextOffset;
  }
}

describe('agent: GET /api/v1/tasks/:id/logs?follow=true', () => {
  beforeEach(async () => {
    workDir = mkdtempSync(join(tmpdir(), 'cairn-follow-'));
    executor = new ProcessExecutor({ workDir, hostname: 'h', onStatus: () => {} });
    app = buildAgentHttp({ executor, agentId: () => 'agent-1' });
    await app.listen({ host: '127.0.0.1', port: 0 });
    baseUrl = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
  });

  afterEach(async () => {
    await app.close();
    await executor.shutdown({ killTasks: true, timeoutMs: 2000 });
    rmSync(workDir, { recursive: true, force: true });
  });

  it('streams a running task from offset 0 as it writes, ending with eof', async () => {
    let ended = false;
    executor.launch(task('ten', TEN_LINES));
    void executor.whenEnded('ten').then(() => (ended = true));
    const got = await follow('/api/v1/tasks/ten/logs?stream=stdout&offset=0&follow=true', () => ended);
    const file = readFileSync(join(sandboxDir(workDir, 'ten'), 'stdout'), 'utf8');
    expect(file.split('\n')).toHaveLength(11);
    expect(dataOf(got)).toBe(file);
    expectContiguous(got, 0);
    // Several pieces, the first with output before the task ended; eof only on the last.
    const withData = got.filter((g) => g.chunk.data !== '');
    expect(withData.length).toBeGreaterThan(2);
    expect(withData[0].taskEnded).toBe(false);
    expect(got.at(-1)!.chunk.eof).toBe(true);
    expect(got.slice(0, -1).every((g) => !g.chunk.eof)).toBe(true);
  });

  it('follows from a middle offset: exactly the rest, while running and after the end', async () => {
    let ended = false;
    executor.launch(task('mid', TEN_LINES));
    void executor.whenEnded('mid').then(() => (ended = true));
    const path = join(sandboxDir(workDir, 'mid'), 'stdout');
    await vi.waitFor(() => expect(readFileSync(path).length).toBeGreaterThan(30), { timeout: 5000, interval: 20 });
    const live = await follow('/api/v1/tasks/mid/logs?offset=23&follow=true', () => ended);
    const file = readFileSync(path);
    expect(Buffer.from(dataOf(live))).toEqual(file.subarray(23));
    expectContiguous(live, 23);
    expect(live.at(-1)!.chunk.eof).toBe(true);

    const after = await follow('/api/v1/tasks/mid/logs?offset=40&follow=true&length=7', () => ended);
    expect(Buffer.from(dataOf(after))).toEqual(file.subarray(40));
    expectContiguous(after, 40);
    expect(after.every((g) => g.chunk.nextOffset - g.chunk.offset <= 7)).toBe(true);
    // At or past the end of an ended task: one chunk, empty, with eof.
    const atEnd = await follow(`/api/v1/tasks/mid/logs?offset=${file.length}&follow=true`, () => ended);
    expect(atEnd.map((g) => g.chunk)).toEqual([{ data: '', offset: file.length, nextOffset: file.length, eof: true }]);
  });

  it('answers bad parameters with 400 naming the field, and an unknown task with 404', async () => {
    executor.launch(task('p', 'echo hi'));
    await executor.whenEnded('p');
    const cases: [string, string][] = [
      ['follow=yes', 'follow'],
      ['follow=true&offset=-1', 'offset'],
      ['follow=true&offset=x', 'offset'],
      ['follow=true&stream=stdlog', 'stream'],
      ['follow=true&length=0', 'length'],
    ];
    for (const [query, field] of cases) {
      const res = await fetch(`${baseUrl}/api/v1/tasks/p/logs?${query}`);
      expect(res.status, query).toBe(400);
      expect(await res.json(), query).toMatchObject({ code: 'CAIRN_BAD_REQUEST', field });
    }
    const missing = await fetch(`${baseUrl}/api/v1/tasks/nope/logs?follow=true`);
    expect(missing.status).toBe(404);
    expect(await missing.json()).toMatchObject({ code: 'CAIRN_UNKNOWN_TASK' });
    // follow=false is the one-chunk answer.
    expect(await (await fetch(`${baseUrl}/api/v1/tasks/p/logs?follow=false`)).json()).toEqual({ data: 'hi\n', offset: 0, nextOffset: 3, eof: true });
  });

  it('stops reading when the client goes away, and close() ends streams still open', async () => {
    executor.launch(task('long', 'echo start; sleep 30'));
    const reads = vi.spyOn(executor, 'readLog');
    const gone = new AbortController();
    const res = await fetch(`${baseUrl}/api/v1/tasks/long/logs?follow=true`, { signal: gone.signal });
    const reader = res.body!.getReader();
    await reader.read();
    await new Promise((r) => setTimeout(r, 250));
    expect(reads.mock.calls.length).toBeGreaterThan(1); // polling while connected
    gone.abort();
    await new Promise((r) => setTimeout(r, 150));
    const afterAbort = reads.mock.calls.length;
    await new Promise((r) => setTimeout(r, 400));
    expect(reads.mock.calls.length).toBe(afterAbort);

    // A stream still open when the server closes ends (without eof) instead of holding close().
    const open = await fetch(`${baseUrl}/api/v1/tasks/long/logs?follow=true`);
    // The response has begun (headers came), so the follow is registered with the server.
    const text = open.text();
    await new Promise((r) => setTimeout(r, 100));
    const started = Date.now();
    await app.close();
    expect(Date.now() - started).toBeLessThan(2000);
    const lines = (await text).trim().split('\n').map((l) => JSON.parse(l) as LogChunk);
    expect(lines[0]).toMatchObject({ data: 'start\n', offset: 0 });
    expect(lines.some((c) => c.eof)).toBe(false);
    const settled = reads.mock.calls.length;
    await new Promise((r) => setTimeout(r, 300));
    expect(reads.mock.calls.length).toBe(settled);
  });
});

describe('followLog (the loop behind the route)', () => {
  /** A log that grows by the pieces given, one per read, and ends after the last. */
  function fakeLog(pieces: string[]) {
    let text = '';
    let reads = 0;
    return {
      read: async (offset: number): Promise<LogChunk> => {
        const piece = pieces[reads++];
        if (piece !== undefined) text += piece;
        const data = text.slice(offset);
        return { data, offset, nextOffset: offset + data.length, eof: reads >= pieces.length && data === '' };
      },
    };
  }

  it('sends what is new, an empty keepalive after a silence, and stops at eof', async () => {
    let nowMs = 0;
    const sent: LogChunk[] = [];
    const log = fakeLog(['', '', 'a', '', '', '', '', 'bc', '', '']);
    const done = await followLog({
      first: { data: '', offset: 0, nextOffset: 0, eof: false },
      read: log.read,
      send: async (c) => void sent.push(c),
      signal: new AbortController().signal,
      pollMs: 100,
      keepaliveMs: 300,
      now: () => nowMs,
      pause: async (ms) => {
        nowMs += ms;
        return true;
      },
    });
    expect(done).toBe(true);
    expect(sent).toEqual([
      { data: '', offset: 0, nextOffset: 0, eof: false }, // the first, always
      { data: 'a', offset: 0, nextOffset: 1, eof: false },
      { data: '', offset: 1, nextOffset: 1, eof: false }, // 300 ms without news
      { data: 'bc', offset: 1, nextOffset: 3, eof: false },
      { data: '', offset: 3, nextOffset: 3, eof: true },
    ]);
  });

  it('stops without eof once its signal aborts, leaving no timer', async () => {
    const stop = new AbortController();
    const sent: LogChunk[] = [];
    const running = followLog({
      first: { data: 'x', offset: 0, nextOffset: 1, eof: false },
      read: async (offset) => ({ data: '', offset, nextOffset: offset, eof: false }),
      send: async (c) => void sent.push(c),
      signal: stop.signal,
      pollMs: 60_000,
      keepaliveMs: 10_000,
      now: () => 0,
    });
    await new Promise((r) => setTimeout(r, 20));
    stop.abort();
    expect(await running).toBe(false);
    expect(sent).toHaveLength(1);
  });
});
