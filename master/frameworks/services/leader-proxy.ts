// A follower's /v2: every request is passed on to the leader and its answer passed back,
// as Marathon's LeaderProxyFilter does, so a client that knows any master is answered by
// the leader (reads included: a follower's copy may lag) and never sees a redirect. The
// caller's own credential goes with the request; the leader checks it. A stream
// (/v2/events) is piped through for as long as either side keeps it open. While no leader
// is known the answer is Marathon's 503.

import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Readable } from 'node:stream';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import type { Leadership } from '../../../shared/framework-host/contract.ts';

/** Set on an answer passed on from the leader, naming it (Marathon's header). */
export const LEADER_HEADER = 'x-marathon-leader';
/** Set on the request passed on, naming the follower (so the leader never passes it on again). */
const VIA_HEADER = 'x-marathon-via';
/** A body larger than this is not passed on (the API's own limit is below it). */
const MAX_BODY_BYTES = 8 * 1024 * 1024;
/** How long the leader has to start answering. */
const ANSWER_TIMEOUT_MS = 30_000;
/** Headers that belong to one connection, not to the request or answer passed on. */
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'transfer-encoding', 'upgrade', 'host', 'content-length', 'proxy-connection', 'te', 'trailer']);

async function readBody(req: FastifyRequest): Promise<Buffer | undefined> {
  if (req.method === 'GET' || req.method === 'HEAD') return undefined;
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req.raw) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY_BYTES) throw Object.assign(new Error(`the body is over ${MAX_BODY_BYTES} bytes`), { statusCode: 413 });
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}

export function registerLeaderProxy(app: FastifyInstance, leadership: Leadership): void {
  const upstreams = new Set<AbortController>();
  app.addHook('preClose', async () => {
    for (const u of upstreams) u.abort();
  });

  app.addHook('onRequest', async (req: FastifyRequest, reply: FastifyReply) => {
    const path = req.url.split('?')[0]!;
    if (!path.startsWith('/v2/') || leadership.leads()) return;
    const leader = leadership.leaderUrl();
    if (!leader || req.headers[VIA_HEADER] !== undefined) {
      return reply.code(503).header('retry-after', '1').send({ message: 'Could not determine the current leader' });
    }
    const upstream = new AbortController();
    const timer = setTimeout(() => upstream.abort(new DOMException(`the leader did not answer in ${ANSWER_TIMEOUT_MS / 1000} s`, 'TimeoutError')), ANSWER_TIMEOUT_MS);
    let res: Response;
    try {
      const headers = new Headers();
      for (const [k, v] of Object.entries(req.headers)) {
        if (HOP_BY_HOP.has(k) || v === undefined) continue;
        headers.set(k, Array.isArray(v) ? v.join(', ') : v);
      }
      headers.set(VIA_HEADER, `1.1 ${leadership.selfUrl()}`);
      headers.set('x-forwarded-for', req.ip);
      const body = await readBody(req);
      res = await leadership.fetch(new URL(req.url, leader), {
        method: req.method, headers, signal: upstream.signal, redirect: 'manual',
        ...(body !== undefined ? { body: new Uint8Array(body) } : {}),
      });
    } catch (err) {
      const status = (err as { statusCode?: number }).statusCode ?? 503;
      return reply.code(status).header('retry-after', '1').send({ message: `the leader ${leader} did not answer: ${(err as Error).message}` });
    } finally {
      clearTimeout(timer);
    }
    upstreams.add(upstream);
    reply.raw.once('close', () => {
      upstreams.delete(upstream);
      upstream.abort();
    });
    reply.hijack();
    const out: Record<string, string> = {};
    res.headers.forEach((v, k) => {
      if (!HOP_BY_HOP.has(k)) out[k] = v;
    });
    out[LEADER_HEADER] = leader;
    reply.raw.writeHead(res.status, out);
    if (!res.body) {
      reply.raw.end();
      return reply;
    }
    // Chunk by chunk: an event stream goes on until the client or the leader ends it.
    const body = Readable.fromWeb(res.body as WebReadableStream<Uint8Array>);
    body.on('error', () => reply.raw.destroy());
    body.pipe(reply.raw);
    return reply;
  });
}
