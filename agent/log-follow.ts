// Following a task's log for `GET /api/v1/tasks/:id/logs?follow=true`: the log is read again
// whenever it may have grown and each new piece goes out as one LogChunk, until the task
// has ended and everything is read. The file is appended by the task, another process, so
// a short poll of it is used rather than fs.watch, which misses appends on some filesystems
// and needs the file to exist already.

import type { LogChunk } from '../shared/master-state.ts';

/** Between reads that brought nothing new: new output shows within a tenth of a second,
 * for the price of one stat() per follower per poll. */
export const LOG_FOLLOW_POLL_MS = 100;

export interface LogFollowOptions {
  /** Reads the log from `offset` (the executor's readLog). Errors end the follow. */
  read(offset: number): Promise<LogChunk>;
  /** Sends one chunk; resolves once the receiver can take more. */
  send(chunk: LogChunk): Promise<void>;
  /** The first read, already made by the caller (its failure is an HTTP error, not a stream). */
  first: LogChunk;
  /** Aborted when the client goes away or the server stops: no read or timer is left. */
  signal: AbortSignal;
  pollMs: number;
  /** Longest silence: past it an empty chunk is sent. */
  keepaliveMs: number;
  now(): number;
  /** Waits `ms`; resolves false at once when `signal` aborts. */
  pause?(ms: number, signal: AbortSignal): Promise<boolean>;
}

/** Waits `ms`, or less when `signal` aborts (then resolves false); leaves no timer behind. */
export function pause(ms: number, signal: AbortSignal): Promise<boolean> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve(false);
    const onAbort = () => {
      clearTimeout(timer);
      resolve(false);
    };
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve(true);
    }, ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

/**
 * Sends `first`, then every later piece of the log, in order and without gaps: each chunk
 * starts at the last one's nextOffset. Resolves true once the eof chunk was sent, false when
 * `signal` stopped it first.
 */
export async function followLog(o: LogFollowOptions): Promise<boolean> {
  const wait = o.pause ?? pause;
  let chunk = o.first;
  // Always sent, even empty: the client then knows it is connected.
  await o.send(chunk);
  let lastSentMs = o.now();
  while (!chunk.eof) {
    if (o.signal.aborted) return false;
    // A read that brought bytes may have stopped at its size limit: read on without a pause.
    if (chunk.nextOffset === chunk.offset && !(await wait(o.pollMs, o.signal))) return false;
    const next = await o.read(chunk.nextOffset);
    if (o.signal.aborted) return false;
    if (next.nextOffset > next.offset || next.eof || o.now() - lastSentMs >= o.keepaliveMs) {
      await o.send(next);
      lastSentMs = o.now();
    }
    chunk = next;
  }
  return true;
}
