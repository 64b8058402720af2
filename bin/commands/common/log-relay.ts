// Copying a task's log from the master to our own stdout/stderr: `cairn run` reads
// `GET /api/v1/tasks/:id/logs` chunk by chunk (LogChunk: data, nextOffset, eof), labelling
// each line with its task's index when there are several; `cairn logs --follow` reads the
// streamed form (`follow=true`) and follows it again from where it broke off.

import type { LogChunk } from '../../../shared/master-state.ts';
import type { LogStream } from '../../../shared/sdk/master-client.ts';
import { MasterHttpError } from '../../../shared/sdk/http-error.ts';
import { TimedLines } from './timed-lines.ts';

/** A partial line longer than this is written out rather than held back further. */
const MAX_HELD_LINE = 16 * 1024;

/**
 * Puts `prefix` before every line. With a prefix, only whole lines are written (so lines
 * of several tasks do not mix mid-line); flush() writes what is left, ending it with a
 * newline. Without a prefix, text passes through untouched.
 */
export class LinePrefixer {
  private held = '';

  constructor(
    private readonly prefix: string,
    private readonly write: (text: string) => void,
  ) {}

  push(text: string): void {
    if (text === '') return;
    if (this.prefix === '') {
      this.write(text);
      return;
    }
    const all = this.held + text;
    const lastNewline = all.lastIndexOf('\n');
    let complete = lastNewline === -1 ? '' : all.slice(0, lastNewline + 1);
    this.held = all.slice(lastNewline + 1);
    if (this.held.length > MAX_HELD_LINE) {
      complete += `${this.held}\n`;
      this.held = '';
    }
    // `complete` is whole lines, each ending in a newline.
    if (complete !== '') this.write(`${complete.slice(0, -1).split('\n').map((line) => this.prefix + line).join('\n')}\n`);
  }

  flush(): void {
    if (this.held !== '') this.write(`${this.prefix}${this.held}\n`);
    this.held = '';
  }
}

export interface LogSource {
  logs(taskId: string, stream: LogStream, offset: number): Promise<LogChunk>;
}

export interface FollowOptions {
  source: LogSource;
  taskId: string;
  stream: LogStream;
  write(text: string): void;
  pollIntervalMs: number;
  /**
   * Whether the task is known to have ended. Until then errors are retried (the agent
   * may not have the sandbox yet); after, the follower stops at eof, at a 404, or after
   * `giveUpMs` without progress (an agent that went away never sends eof).
   */
  ended(): boolean;
  giveUpMs: number;
  /** Checked between reads; when it returns true the follower stops. */
  cancelled?(): boolean;
  /** False: a failed read ends the follower with that error instead of being retried. */
  retryErrors?: boolean;
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Follows one log until eof (or giving up); resolves with the offset reached. */
export async function followLog(o: FollowOptions): Promise<number> {
  let offset = 0;
  let lastProgress: number | undefined;
  while (!o.cancelled?.()) {
    const endedNow = o.ended();
    if (endedNow) lastProgress ??= Date.now();
    let chunk: LogChunk | undefined;
    try {
      chunk = await o.source.logs(o.taskId, o.stream, offset);
    } catch (err) {
      if (o.retryErrors === false) throw err;
      if (endedNow && err instanceof MasterHttpError && err.status === 404) return offset;
    }
    if (chunk) {
      const advanced = chunk.nextOffset > offset;
      if (advanced) offset = chunk.nextOffset;
      if (chunk.data !== '') {
        o.write(chunk.data);
        lastProgress = endedNow ? Date.now() : undefined;
      }
      if (chunk.eof) return offset;
      // More may be waiting right behind what we got: read again without a pause.
      if (chunk.data !== '' && advanced) continue;
    }
    if (endedNow && lastProgress !== undefined && Date.now() - lastProgress >= o.giveUpMs) return offset;
    await sleep(o.pollIntervalMs);
  }
  return offset;
}

export interface LogStreamSource {
  /** The log from `offset` as a stream of chunks (MasterClient.followLogs); with `times`, each says when its bytes were written. */
  followLogs(taskId: string, stream: LogStream, offset: number, options?: { times?: boolean }): AsyncIterable<LogChunk>;
}

export interface StreamFollowOptions {
  source: LogStreamSource;
  taskId: string;
  stream: LogStream;
  write(text: string): void;
  /** Pause before following again after the stream broke. */
  retryDelayMs: number;
  /** How long to keep following again without receiving a chunk before giving up. */
  giveUpMs: number;
  now(): number;
  sleep(ms: number): Promise<void>;
  /** Where to start (what was already written, e.g. the lines `--tail` kept); 0 when absent. */
  startOffset?: number;
  /** Ask for each chunk's times (LogChunk.times). */
  times?: boolean;
  /** Takes each chunk's new bytes, with their offsets and times, instead of `write`. */
  onChunk?(chunk: LogChunk): void;
}

/**
 * What a chunk adds to a log written up to `offset`: its data when it starts there; nothing
 * when it holds only bytes already written (its eof counts only if it ends exactly there);
 * undefined when it does not line up (a gap, a partial overlap): the stream cannot be
 * trusted and is followed again from `offset`.
 */
export function continuation(offset: number, chunk: LogChunk): { data: string; nextOffset: number; eof: boolean } | undefined {
  if (chunk.offset === offset) return { data: chunk.data, nextOffset: chunk.nextOffset, eof: chunk.eof };
  if (chunk.nextOffset === offset || (chunk.nextOffset < offset && !chunk.eof)) return { data: '', nextOffset: offset, eof: chunk.eof };
  return undefined;
}

/** Errors not worth following again for: the master refused the request itself (4xx). */
function isRefusal(err: unknown): boolean {
  return err instanceof MasterHttpError && err.status >= 400 && err.status < 500;
}

/**
 * Follows one log through its streamed form until eof, writing every byte once: when the
 * stream breaks (the agent restarted, a master went away) it is followed again from the
 * last nextOffset. The first connection's failure and any refusal (4xx) end it with that
 * error, as does `giveUpMs` of trying again without a chunk. Resolves with the offset
 * reached.
 */
export async function followLogStream(o: StreamFollowOptions): Promise<number> {
  let offset = o.startOffset ?? 0;
  let connected = false;
  let brokenSinceMs: number | undefined;
  for (;;) {
    let failure: unknown;
    try {
      for await (const chunk of o.source.followLogs(o.taskId, o.stream, offset, ...(o.times ? [{ times: true }] : []))) {
        connected = true;
        const next = continuation(offset, chunk);
        if (!next) throw new Error(`the log stream jumped to byte ${chunk.offset} from ${offset}`);
        brokenSinceMs = undefined;
        if (o.onChunk) o.onChunk({ data: next.data, offset, nextOffset: next.nextOffset, eof: next.eof, ...(chunk.times ? { times: chunk.times } : {}) });
        else if (next.data !== '') o.write(next.data);
        offset = next.nextOffset;
        if (next.eof) return offset;
      }
      failure = new Error('the log stream ended before the end of the log');
    } catch (err) {
      failure = err;
    }
    if (!connected || isRefusal(failure)) throw failure;
    brokenSinceMs ??= o.now();
    if (o.now() - brokenSinceMs >= o.giveUpMs) throw failure;
    await o.sleep(o.retryDelayMs);
  }
}

/** Pause before following a log again after its stream broke. */
const FOLLOW_RETRY_MS = 500;
/** How long a broken log stream is tried again: an agent restart or a master failover
 * takes seconds; an agent gone for good should not keep `cairn logs` waiting forever. */
const FOLLOW_GIVE_UP_MS = 60_000;

export interface TaskLogReader extends LogStreamSource {
  /** One chunk of the log from `offset` (MasterClient.logs); with `times`, it says when its bytes were written. */
  logs(taskId: string, stream: LogStream, offset: number, times?: boolean): Promise<LogChunk>;
}

/** How `cairn logs` prints: `--tail N`, `--timestamps`, `--since DURATION`. */
export interface LogPrintOptions {
  tail?: number;
  timestamps?: boolean;
  sinceMs?: number;
  now?(): number;
}

/**
 * Writes a task's log: with `follow`, streamed until the task has ended and everything was
 * read (a stream that breaks is followed again from where it stopped); without, what there
 * is now, read until a read brings nothing more.
 */
export async function printTaskLog(client: TaskLogReader, taskId: string, stream: LogStream, follow: boolean, write: (text: string) => void, p: LogPrintOptions = {}): Promise<void> {
  const now = p.now ?? Date.now;
  // --timestamps, --since: lines given the times the agent noted (timed-lines.ts).
  const timed = p.timestamps === true || p.sinceMs !== undefined
    ? new TimedLines({ stamp: p.timestamps === true, ...(p.sinceMs !== undefined ? { notBeforeMs: now() - p.sinceMs } : {}), now })
    : undefined;
  const text = (c: LogChunk): string => (timed ? timed.push(c) : c.data);
  const rest = (): string => (timed ? timed.flush() : '');
  let offset = 0;
  if (p.tail !== undefined) {
    // --tail N: what is there now, read whole, of which the last N lines; then, following,
    // on from where that read ended.
    let backlog = '';
    offset = await readLog(client, taskId, stream, 0, timed !== undefined, (c) => void (backlog += text(c)));
    if (!follow) backlog += rest();
    write(lastLines(backlog, p.tail));
    if (!follow) return;
  }
  if (follow) {
    await followLogStream({
      startOffset: offset,
      source: client,
      taskId,
      stream,
      write,
      ...(timed ? { times: true, onChunk: (c: LogChunk) => write(text(c)) } : {}),
      retryDelayMs: FOLLOW_RETRY_MS,
      giveUpMs: FOLLOW_GIVE_UP_MS,
      now: Date.now,
      sleep: (ms) => new Promise((r) => setTimeout(r, ms)),
    });
  } else {
    await readLog(client, taskId, stream, 0, timed !== undefined, (c) => write(text(c)));
  }
  const last = rest();
  if (last !== '') write(last);
}

/** Reads the log from `offset` until a read brings nothing more; resolves with the offset reached. */
async function readLog(client: TaskLogReader, taskId: string, stream: LogStream, from: number, times: boolean, take: (chunk: LogChunk) => void): Promise<number> {
  let offset = from;
  for (;;) {
    const chunk = await (times ? client.logs(taskId, stream, offset, true) : client.logs(taskId, stream, offset));
    take(chunk);
    if (chunk.eof || chunk.data === '' || chunk.nextOffset <= offset) return chunk.data === '' ? offset : chunk.nextOffset;
    offset = chunk.nextOffset;
  }
}

/** The last `n` lines of `text` (a line not yet ended counts as one), as `tail -n` gives them. */
export function lastLines(text: string, n: number): string {
  if (n <= 0 || text === '') return '';
  const ended = text.endsWith('\n');
  const lines = (ended ? text.slice(0, -1) : text).split('\n');
  return `${lines.slice(-n).join('\n')}${ended ? '\n' : ''}`;
}
