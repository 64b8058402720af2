// Long-lived responses — a framework's scheduler event stream, Marathon's /v2/events, the
// dashboard's events — are written to as things happen, whether or not the client reads.
// A client that stops reading leaves every byte after the socket's kernel buffers waiting in
// this process, without end; and a scheduler that reads nothing still holds the offers it
// was sent. So a stream whose unsent bytes pass a bound is cut, as a client that hung up
// would be: whoever listens for its close (the leader, for a framework: it is disconnected,
// its offers rescinded, its failover time-out started) does what it always does.

import type { ServerResponse } from 'node:http';
import type { Logger } from './logger.ts';

/**
 * Unsent bytes a stream may hold. A reading client keeps this near 0 (the kernel takes
 * what it has not read yet, a few MB more); a burst of thousands of task updates is a few MB.
 */
export const MAX_STREAM_BACKLOG_BYTES = 8 * 1024 * 1024;

/**
 * A writer for `res`: writes a chunk unless the response is gone; when more than
 * `limitBytes` are then waiting unsent (in the response and its socket), logs why, with
 * what `who` says of the client then, destroys the response (its 'close' listeners run) and
 * returns false.
 */
export function boundedWriter(
  res: ServerResponse,
  log: Logger,
  who: () => Record<string, unknown>,
  limitBytes = MAX_STREAM_BACKLOG_BYTES,
): (chunk: string | Uint8Array) => boolean {
  return (chunk) => {
    if (res.destroyed || res.writableEnded) return false;
    res.write(chunk);
    const backlogBytes = res.writableLength;
    if (backlogBytes <= limitBytes) return true;
    log.warn({ ...who(), backlogBytes, limitBytes }, 'a client stopped reading its event stream: it is disconnected');
    res.destroy();
    return false;
  };
}
