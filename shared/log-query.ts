// The query of a task's log route, `GET /api/v1/tasks/:id/logs` on the master and on agents:
// which stream, from which byte, how many bytes, and whether to follow the log as it grows.
// Both parse it once, at their edge, with errors that name the field; the master forwards
// the parsed query to the task's agent unchanged.

import { CairnError } from './errors.ts';

export type LogStreamName = 'stdout' | 'stderr';

/**
 * A followed log (`follow=true`) is `application/x-ndjson`: one LogChunk per line as the file
 * grows, each starting where the last ended, the last one with eof. It carries a chunk
 * (empty when nothing new was written) at least this often, so a client can tell a quiet
 * task from a dead connection: it gives up on a stream silent for a few of these.
 */
export const LOG_FOLLOW_KEEPALIVE_MS = 10_000;

export interface LogQuery {
  stream: LogStreamName;
  /** The first byte wanted. */
  offset: number;
  /** Most bytes wanted per chunk; undefined: as many as the agent reads at once. */
  length: number | undefined;
  /** True: an NDJSON stream of chunks until eof, instead of one chunk. */
  follow: boolean;
  /** True: each chunk carries the times its bytes were written by (LogChunk.times). */
  times: boolean;
}

function badQuery(field: string, message: string): CairnError {
  return new CairnError('CAIRN_BAD_REQUEST', message, field);
}

/** An integer query parameter >= min, or undefined when absent. */
function intParam(value: unknown, field: string, min: number): number | undefined {
  if (value === undefined || value === '') return undefined;
  if (typeof value !== 'string' || !/^\d+$/.test(value) || !Number.isSafeInteger(Number(value)) || Number(value) < min) {
    throw badQuery(field, `must be an integer >= ${min}, got '${String(value)}'`);
  }
  return Number(value);
}

/** Parses the route's query string values; throws CAIRN_BAD_REQUEST naming the field. */
export function parseLogQuery(query: Record<string, unknown>): LogQuery {
  const stream = query.stream ?? 'stdout';
  if (stream !== 'stdout' && stream !== 'stderr') throw badQuery('stream', `must be stdout or stderr, got '${String(stream)}'`);
  const follow = query.follow ?? 'false';
  if (follow !== 'true' && follow !== 'false') throw badQuery('follow', `must be true or false, got '${String(follow)}'`);
  const times = query.times ?? 'false';
  if (times !== 'true' && times !== 'false') throw badQuery('times', `must be true or false, got '${String(times)}'`);
  return {
    stream,
    offset: intParam(query.offset, 'offset', 0) ?? 0,
    length: intParam(query.length, 'length', 1),
    follow: follow === 'true',
    times: times === 'true',
  };
}

/** The query string that asks for `q` (what the master sends on to the agent). */
export function logQueryString(q: LogQuery): string {
  const qs = new URLSearchParams({ stream: q.stream, offset: String(q.offset) });
  if (q.length !== undefined) qs.set('length', String(q.length));
  if (q.follow) qs.set('follow', 'true');
  if (q.times) qs.set('times', 'true');
  return qs.toString();
}
