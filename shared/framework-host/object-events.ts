// A built-in framework's object (a job, an experiment) followed as server-sent events: what
// there is so far at once, then what each applied change adds, until the object's story is
// over (or it is gone), with keep-alives so proxies keep the stream open and nothing left
// listening once the client goes. The caller says what to send; this holds the stream. A
// client that stops reading is cut off past a bounded backlog (shared/bounded-stream.ts).

import type { FastifyReply, FastifyRequest } from 'fastify';
import { boundedWriter } from '../bounded-stream.ts';
import type { Logger } from '../logger.ts';

/** How often a stream says it is alive, so proxies keep it open. */
const KEEPALIVE_MS = 15_000;

export type SendEvent = (event: string, data: unknown) => void;

export interface ObjectStory {
  /** Sends what there is so far; true when the story is already over (the stream then ends). */
  first(send: SendEvent): boolean;
  /** Calls `changed` on every applied change that may concern the object; returns the unsubscribe. */
  watch(changed: () => void): () => void;
  /** Sends what the change added; true when the story is over. */
  next(send: SendEvent): boolean;
}

/** `log`: where a stream cut for its backlog is logged. */
export function serveObjectEvents(req: FastifyRequest, reply: FastifyReply, story: ObjectStory, log: Logger): void {
  reply.hijack();
  const res = reply.raw;
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
  const write = boundedWriter(res, log, () => ({ path: req.url.split('?')[0], principal: req.principal?.name, ip: req.ip }));
  const send: SendEvent = (event, data) => {
    write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
  };
  if (story.first(send)) {
    res.end();
    return;
  }
  const ping = setInterval(() => write(': keep-alive\n\n'), KEEPALIVE_MS);
  let off = () => {};
  const stop = () => {
    off();
    clearInterval(ping);
  };
  off = story.watch(() => {
    if (!story.next(send)) return;
    stop();
    res.end();
  });
  req.raw.once('close', stop);
}
