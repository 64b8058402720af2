// When log lines were written: the agent's notes of its tasks' log sizes (agent/log-times.ts)
// and the command line's lines timed by them (bin/commands/common/timed-lines.ts).

import { appendFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { LogTimesRecorder, logTimesPath, parseNotes, readLogTimes } from '../../agent/log-times.ts';
import { TimedLines } from '../../bin/commands/common/timed-lines.ts';
import { printTaskLog } from '../../bin/commands/common/log-relay.ts';
import type { LogChunk } from '../../shared/master-state.ts';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

describe('the agent notes when logs grew', () => {
  it('a note per round a log grew, read back for a byte range; notes of gone sandboxes are removed', async () => {
    const work = mkdtempSync(join(tmpdir(), 'cairn-logtimes-'));
    dirs.push(work);
    const root = join(work, 'sandboxes');
    const sandbox = join(root, 't1');
    mkdirSync(sandbox, { recursive: true });
    let now = 1000;
    const rec = new LogTimesRecorder({ sandboxes: () => [sandbox], sandboxesRoot: root, now: () => now, intervalMs: 1000 });
    appendFileSync(join(sandbox, 'stdout'), 'a\n');
    await rec.round();
    now = 2000;
    await rec.round(); // nothing new: no note
    now = 3000;
    appendFileSync(join(sandbox, 'stdout'), 'bb\n');
    await rec.round();
    expect(parseNotes(readFileSync(logTimesPath(sandbox, 'stdout'), 'utf8'))).toEqual([[2, 1000], [5, 3000]]);
    expect(existsSync(logTimesPath(sandbox, 'stderr'))).toBe(false);
    expect(await readLogTimes(sandbox, 'stdout', 0, 2)).toEqual([[2, 1000]]);
    expect(await readLogTimes(sandbox, 'stdout', 2, 5)).toEqual([[5, 3000]]);
    expect(await readLogTimes(sandbox, 'stdout', 0, 5)).toEqual([[2, 1000], [5, 3000]]);
    // A new recorder (the agent restarted) goes on from the last note on disk.
    const again = new LogTimesRecorder({ sandboxes: () => [sandbox], sandboxesRoot: root, now: () => 4000, intervalMs: 1000 });
    await again.round();
    expect(parseNotes(readFileSync(logTimesPath(sandbox, 'stdout'), 'utf8'))).toHaveLength(2);
    rmSync(sandbox, { recursive: true });
    const tidy = new LogTimesRecorder({ sandboxes: () => [], sandboxesRoot: root, now: () => 5000, intervalMs: 1000 });
    for (let i = 0; i < 60; i++) await tidy.round();
    expect(existsSync(logTimesPath(sandbox, 'stdout'))).toBe(false);
  });

  it('a torn last line is left out', () => {
    expect(parseNotes('1000 2\n3000 5\n40')).toEqual([[2, 1000], [5, 3000]]);
  });
});

describe('lines timed by the notes', () => {
  const iso = (ms: number) => new Date(ms).toISOString();
  it('each line gets the first note at or past its end; one not yet noted, the time it arrived', () => {
    const t = new TimedLines({ stamp: true, now: () => 9000 });
    expect(t.push({ data: 'a\nbb', offset: 0, times: [[2, 1000]] })).toBe(`${iso(1000)} a\n`);
    expect(t.push({ data: '\nc\n', offset: 4, times: [[5, 3000]] })).toBe(`${iso(3000)} bb\n${iso(9000)} c\n`);
    expect(t.flush()).toBe('');
  });

  it('--since leaves out the lines written before; an agent without notes gives "-"', () => {
    const since = new TimedLines({ stamp: false, notBeforeMs: 2000, now: () => 9000 });
    expect(since.push({ data: 'old\nnew\n', offset: 0, times: [[4, 1000], [8, 3000]] })).toBe('new\n');
    const none = new TimedLines({ stamp: true, now: () => 9000 });
    expect(none.push({ data: 'x\n', offset: 0 })).toBe('- x\n');
  });

  it('cairn logs --timestamps --since reads the times through the log route, a multi-byte line counted in bytes', async () => {
    const log = 'é1\nb2\nc3\n'; // é is two bytes: the lines end at bytes 4, 7, 10
    const notes: [number, number][] = [[4, 1000], [7, 5000], [10, 6000]];
    const asked: boolean[] = [];
    const client = {
      logs: async (_id: string, _s: 'stdout' | 'stderr', offset: number, times?: boolean): Promise<LogChunk> => {
        asked.push(times === true);
        const bytes = Buffer.from(log).subarray(offset);
        return { data: bytes.toString(), offset, nextOffset: offset + bytes.length, eof: true, ...(times ? { times: notes.filter((n) => n[0] > offset) } : {}) };
      },
      followLogs: async function* (): AsyncIterable<LogChunk> {},
    };
    let out = '';
    await printTaskLog(client, 't', 'stdout', false, (s) => void (out += s), { timestamps: true, sinceMs: 5000, now: () => 9500 });
    expect(out).toBe(`${new Date(5000).toISOString()} b2\n${new Date(6000).toISOString()} c3\n`);
    expect(asked).toEqual([true]);
  });
});
