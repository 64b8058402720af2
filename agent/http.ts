// The agent's own HTTP endpoint: health, task logs read straight from sandboxes (the
// master's log API and `cairn logs` fetch from here, one chunk or followed as an NDJSON
// stream), usage samples and Prometheus metrics (/metrics). Drains come from the master (an
// operator's `cairn agent drain`), not from here.

import Fastify, { type FastifyInstance, type FastifyReply } from 'fastify';
import type { ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { CairnError } from '../shared/errors.ts';
import { PROMETHEUS_CONTENT_TYPE } from '../shared/prometheus.ts';
import { bearsSecret, type AgentCredential } from './credential.ts';
import { tlsServerOptions, type TlsMaterial } from '../shared/tls.ts';
import type { MembersJson } from '../shared/gossip/cluster.ts';
import { isTerminal } from '../shared/agent-protocol.ts';
import { LOG_FOLLOW_KEEPALIVE_MS, parseLogQuery, type LogQuery } from '../shared/log-query.ts';
import type { LogChunk } from '../shared/master-state.ts';
import type { ProcessExecutor } from './executors/process/executor.ts';
import type { UsageSampler } from './usage/sampler.ts';
import { MAX_LOG_READ_BYTES } from './executors/process/sandbox.ts';
import { followLog, LOG_FOLLOW_POLL_MS } from './log-follow.ts';

export interface AgentHttpOptions {
  host: string;
  port: number;
  /** The agent's executors (or one of them, in tests): logs and task lookups. */
  executor: Pick<ProcessExecutor, 'readLog' | 'snapshot'>;
  agentId: () => string | undefined;
  /** When given, every route but /health answers only requests bearing this credential's secret. */
  credential?: AgentCredential;
  /** The gossip view (GET /api/v1/members); undefined when the agent runs no gossip member. */
  members?: () => MembersJson | undefined;
  /** More of /health (isolation, draining). */
  health?: () => Record<string, unknown>;
  /** Usage samples; without, the usage routes answer 404. */
  usage?: UsageSampler;
  /** The Prometheus text of GET /metrics (agent/metrics.ts); without, /metrics answers 404. */
  metrics?: () => Promise<string>;
  /** Answer GET /metrics without the credential (`--open-metrics`), as the master's `--open metrics`. */
  openMetrics?: boolean;
  /** Serve HTTPS with this certificate (and, with client auth, only to clients the CA signed). */
  tls?: TlsMaterial & { cert: Buffer; key: Buffer };
}

export interface AgentHttpServer {
  /** The port actually bound (differs from the option when that was 0). */
  port: number;
  close(): Promise<void>;
}

function sendError(reply: FastifyReply, status: number, err: CairnError): FastifyReply {
  return reply.code(status).send({ code: err.code, message: err.message, field: err.field });
}

/** Writes one chunk as an NDJSON line; resolves once the socket takes more (or is gone). */
function sendLine(res: ServerResponse, chunk: LogChunk, signal: AbortSignal): Promise<void> {
  if (res.write(`${JSON.stringify(chunk)}\n`) || signal.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      res.off('drain', done);
      signal.removeEventListener('abort', done);
      resolve();
    };
    res.once('drain', done);
    signal.addEventListener('abort', done, { once: true });
  });
}

export function buildAgentHttp(opts: Omit<AgentHttpOptions, 'host' | 'port'>): FastifyInstance {
  const app = Fastify({ logger: false, ...(opts.tls ? { https: tlsServerOptions(opts.tls) } : {}) });

  if (opts.credential) {
    const credential = opts.credential;
    app.addHook('onRequest', async (req, reply) => {
      // Health for probes, and the gossip view for members joining through this agent (gossip
      // itself is authenticated; the view names members, nothing of tasks).
      const path = req.url.split('?')[0];
      if (path === '/health' || path === '/api/v1/members' || (path === '/metrics' && opts.openMetrics)) return;
      if (!bearsSecret(req.headers, credential)) {
        return sendError(reply, 401, new CairnError('CAIRN_UNAUTHENTICATED', "this agent answers only its masters: read logs and usage through the master's API", 'Authorization'));
      }
    });
  }

  app.get('/health', async () => ({ status: 'ok', agentId: opts.agentId() ?? null, ...(opts.health?.() ?? {}) }));

  // Followed logs in flight, each ended when its client goes away or the server closes.
  // Closing stops each and waits for it before the server closes its idle connections, so
  // the connections they used are idle by then rather than held for the keep-alive timeout.
  const follows = new Map<AbortController, Promise<void>>();
  let closing = false;
  app.addHook('preClose', async () => {
    closing = true;
    for (const f of follows.keys()) f.abort();
    await Promise.all(follows.values());
    // What is still open now (a master that went on reading a followed log whose client had
    // left, keep-alive sockets) would hold close() up to its timeouts: the agent is stopping.
    app.server.closeAllConnections?.();
  });

  app.get<{ Params: { id: string }; Querystring: Record<string, unknown> }>('/api/v1/tasks/:id/logs', async (req, reply) => {
    let q: LogQuery;
    try {
      q = parseLogQuery(req.query);
    } catch (err) {
      return sendError(reply, 400, err as CairnError);
    }
    // Larger requests are served in 1 MiB pieces; the caller pages with nextOffset.
    const length = Math.min(q.length ?? MAX_LOG_READ_BYTES, MAX_LOG_READ_BYTES);
    const read = (offset: number) => opts.executor.readLog(req.params.id, q.stream, offset, length, q.times);
    let first: LogChunk;
    try {
      first = await read(q.offset);
    } catch (err) {
      if (err instanceof CairnError) return sendError(reply, err.code === 'CAIRN_UNKNOWN_TASK' ? 404 : err.code === 'CAIRN_LOG_REFUSED' ? 403 : 400, err);
      throw err;
    }
    if (!q.follow) return first;

    const stop = new AbortController();
    const onClose = () => stop.abort();
    // A follow that starts while the server is closing sends what it has and ends.
    if (closing) stop.abort();
    let finished!: () => void;
    follows.set(stop, new Promise<void>((r) => (finished = r)));
    req.raw.once('close', onClose);
    reply.raw.once('close', onClose);
    reply.hijack();
    const res = reply.raw;
    res.writeHead(200, { 'content-type': 'application/x-ndjson; charset=utf-8', 'cache-control': 'no-store' });
    try {
      await followLog({
        first,
        read,
        send: (chunk) => sendLine(res, chunk, stop.signal),
        signal: stop.signal,
        pollMs: LOG_FOLLOW_POLL_MS,
        keepaliveMs: LOG_FOLLOW_KEEPALIVE_MS,
        now: Date.now,
      });
      // Without eof (the server is stopping) the client sees the stream end early and
      // follows again from its last nextOffset.
      // A response whose client has gone (closed already) never finishes: nothing to wait for.
      if (!res.destroyed && !res.closed) {
        await new Promise<void>((r) => {
          res.once('close', () => r());
          res.end(() => r());
        });
      }
    } catch (err) {
      // A read failed mid-stream (the sandbox was removed): break the stream rather than
      // end it cleanly, so the client does not take it for a whole answer.
      res.destroy(err as Error);
    } finally {
      follows.delete(stop);
      finished();
      req.raw.off('close', onClose);
      res.off('close', onClose);
    }
    return reply;
  });

  app.get('/api/v1/members', async (_req, reply) => {
    const view = opts.members?.();
    return view ?? sendError(reply, 404, new CairnError('CAIRN_GOSSIP_OFF', 'this agent runs no gossip member (it needs --secret-file)'));
  });

  app.get('/metrics', async (_req, reply) => {
    if (!opts.metrics) return sendError(reply, 404, new CairnError('CAIRN_UNKNOWN_CALL', 'metrics are off on this agent'));
    return reply.type(PROMETHEUS_CONTENT_TYPE).send(await opts.metrics());
  });

  app.get('/api/v1/usage', async (_req, reply) => {
    if (!opts.usage) return sendError(reply, 404, new CairnError('CAIRN_UNKNOWN_CALL', 'usage sampling is off on this agent'));
    if (opts.usage.current().timestampMs === 0) await opts.usage.sample();
    return opts.usage.current();
  });

  // The recent samples: the agent's (sums, GPUs, each task's share), and one task's.
  app.get('/api/v1/usage/history', async (_req, reply) => {
    if (!opts.usage) return sendError(reply, 404, new CairnError('CAIRN_UNKNOWN_CALL', 'usage sampling is off on this agent'));
    return opts.usage.history.agent(opts.usage.current().intervalMs);
  });

  app.get<{ Params: { id: string } }>('/api/v1/tasks/:id/usage/history', async (req, reply) => {
    if (!opts.usage) return sendError(reply, 404, new CairnError('CAIRN_UNKNOWN_CALL', 'usage sampling is off on this agent'));
    const found = opts.usage.history.task(req.params.id, opts.usage.current().intervalMs);
    return found ?? sendError(reply, 404, new CairnError('CAIRN_UNKNOWN_TASK', `no samples of task '${req.params.id}' on this agent (none ran in the last ${opts.usage.history.capacity} samples)`, 'taskId'));
  });

  app.get<{ Params: { id: string } }>('/api/v1/tasks/:id/usage', async (req, reply) => {
    const id = req.params.id;
    if (!opts.usage) return sendError(reply, 404, new CairnError('CAIRN_UNKNOWN_CALL', 'usage sampling is off on this agent'));
    let found = opts.usage.forTask(id);
    const snap = opts.executor.snapshot(id);
    if (!found && snap && !isTerminal(snap.state)) {
      // Launched since the last sample: take one now rather than answer "unknown".
      await opts.usage.sample();
      found = opts.usage.forTask(id);
    }
    // A sample taken before the task ended is not its usage now: an ended task has none.
    if (!found || !snap || isTerminal(snap.state)) return sendError(reply, 404, new CairnError('CAIRN_UNKNOWN_TASK', `no running task '${id}' on this agent`, 'taskId'));
    // Where the task's files are on this host, for `cairn task` (its readers hold the agent's secret).
    return { ...found, sandbox: snap.sandbox };
  });

  return app;
}

export async function startAgentHttp(opts: AgentHttpOptions): Promise<AgentHttpServer> {
  const app = buildAgentHttp(opts);
  await app.listen({ host: opts.host, port: opts.port });
  const port = (app.server.address() as AddressInfo).port;
  return { port, close: () => app.close() };
}
