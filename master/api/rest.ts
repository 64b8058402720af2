// The master's REST API for people and tools: health, state, tasks, logs (read through
// the task's agent, one chunk or a followed stream piped through), operator kill, and
// Prometheus metrics.

import type { FastifyInstance } from 'fastify';
import { Readable } from 'node:stream';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import { isTerminal } from '../../shared/agent-protocol.ts';
import { CairnError } from '../../shared/errors.ts';
import { logQueryString, parseLogQuery } from '../../shared/log-query.ts';
import { APPLIED_INDEX_HEADER, leaderOrRedirect, type MasterContext } from '../context.ts';
import { PROMETHEUS_CONTENT_TYPE } from '../../shared/prometheus.ts';
import { masterMetricsText } from './metrics-text.ts';
import { registerMesosCompatApi } from './mesos-compat.ts';
import { registerAgentRoutes } from './agents-rest.ts';
import { agentAuthHeaders, agentBaseUrl } from '../auth/agent-http.ts';
import { registerSharingRoutes } from './sharing-rest.ts';
import { registerSecretRoutes } from '../secrets/secrets-rest.ts';
import { sendHttpError as fail } from '../../shared/http-errors.ts';
import { stateView, taskDetailView } from './state-view.ts';
import { taskFor } from './task-access.ts';

/** Reads answered from the replicated registry (and so refused while this master has not caught up). */
const READS = ['/api/v1/state', '/api/v1/tasks', '/api/v1/agents', '/api/v1/frameworks', '/master/', '/v2/', '/api/v1/jobs'];

/** How long an agent may take to answer a log request (up to its headers, when followed). */
const AGENT_ANSWER_TIMEOUT_MS = 10_000;

export function registerRestApi(app: FastifyInstance, ctx: MasterContext): void {
  const registry = ctx.registry;
  // Reads are answered from this master's copy of the registry; the header says how far
  // that copy has applied the log, so a client can tell a stale follower.
  app.addHook('onSend', async (_req, reply, payload) => {
    const r = ctx.replication();
    if (r) void reply.header(APPLIED_INDEX_HEADER, String(r.applied));
    return payload;
  });

  // A master that has not caught up with the group (just started, or cut off since its start,
  // or one whose storage was lost) would answer from a copy that may be empty: its reads are
  // refused, naming why, until it has applied what a leader committed.
  app.addHook('onRequest', async (req, reply) => {
    if (req.method !== 'GET' && req.method !== 'HEAD') return;
    const path = req.url.split('?')[0];
    if (!READS.some((p) => path.startsWith(p))) return;
    const r = ctx.replication();
    if (!r || r.ready) return;
    return reply.code(503).send({ code: 'CAIRN_NOT_READY', message: `this master is not ready to answer reads: ${r.notReady ?? 'not caught up'}` });
  });

  app.get('/health', async () => ({ status: 'ok', role: ctx.replication()?.role ?? 'leader' }));

  app.get('/api/v1/state', async (req) => stateView(ctx, req.principal));

  app.get<{ Params: { id: string } }>('/api/v1/tasks/:id', async (req, reply) => {
    try {
      const t = taskFor(ctx, req.principal, req.params.id, 'view_tasks');
      return taskDetailView(t, ctx.registry.state.frameworks.get(t.frameworkId)?.name);
    } catch (err) {
      return fail(reply, err);
    }
  });

  app.post<{ Params: { id: string } }>('/api/v1/tasks/:id/kill', async (req, reply) => {
    try {
      const master = leaderOrRedirect(ctx, req, reply);
      if (!master) return reply;
      const t = taskFor(ctx, req.principal, req.params.id, 'kill_tasks');
      if (isTerminal(t.state)) {
        return reply.code(409).send({ code: 'CAIRN_BAD_REQUEST', message: `task '${t.id}' has already ended (${t.state})`, field: 'id' });
      }
      master.killTask(t);
      return reply.code(202).send({ taskId: t.id, state: t.state });
    } catch (err) {
      return fail(reply, err);
    }
  });

  // An operator's teardown (Mesos' TEARDOWN): the framework is removed, its tasks killed, its
  // id never subscribes again. Its own principal may; others as teardown_frameworks says.
  app.post<{ Params: { id: string } }>('/api/v1/frameworks/:id/teardown', async (req, reply) => {
    try {
      const fw = registry.state.frameworks.get(req.params.id);
      if (!fw || fw.removedAtMs !== undefined) return reply.code(404).send({ code: 'CAIRN_UNKNOWN_FRAMEWORK', message: `no framework '${req.params.id}'`, field: 'id' });
      if (!ctx.auth.mayActOn(req.principal, 'teardown_frameworks', fw.principal)) {
        throw new CairnError('CAIRN_FORBIDDEN', `principal '${req.principal.name}' may not tear down framework ${fw.id}`, 'id');
      }
      const master = leaderOrRedirect(ctx, req, reply);
      if (!master) return reply;
      await master.teardownFramework(fw.id);
      return { frameworkId: fw.id, removed: true };
    } catch (err) {
      return fail(reply, err);
    }
  });

  // Followed logs being piped from agents, cut when the master closes (close() would
  // otherwise wait on them); their clients then follow again, from another master or this
  // one restarted.
  const upstreams = new Set<AbortController>();
  app.addHook('preClose', async () => {
    for (const u of upstreams) u.abort();
  });

  app.get<{ Params: { id: string }; Querystring: Record<string, unknown> }>('/api/v1/tasks/:id/logs', async (req, reply) => {
    try {
      const t = taskFor(ctx, req.principal, req.params.id, 'view_tasks');
      const q = parseLogQuery(req.query);
      const agent = registry.state.agents.get(t.agentId);
      if (!agent) throw new CairnError('CAIRN_AGENT_UNAVAILABLE', `agent ${t.agentId} of task '${t.id}' is gone`, 'id');
      const url = `${agentBaseUrl(agent)}/api/v1/tasks/${encodeURIComponent(t.id)}/logs?${logQueryString(q)}`;
      // The timeout covers a one-chunk answer whole, and a followed log up to its headers:
      // the stream then lasts as long as the task writes.
      const upstream = new AbortController();
      const timer = setTimeout(() => upstream.abort(new DOMException('no answer in 10 s', 'TimeoutError')), AGENT_ANSWER_TIMEOUT_MS);
      let res: Response;
      try {
        res = await (ctx.tlsClient?.fetch ?? fetch)(url, { headers: agentAuthHeaders(ctx.auth, agent), signal: upstream.signal });
        if (!q.follow || !res.ok || !res.body) {
          const text = await res.text();
          return reply.code(res.status).type('application/json').send(text);
        }
      } catch (err) {
        throw new CairnError('CAIRN_AGENT_UNAVAILABLE', `agent ${agent.hostname} did not answer: ${(err as Error).message}`);
      } finally {
        clearTimeout(timer);
      }
      if (reply.raw.closed) {
        // The client left while the agent was answering.
        upstream.abort();
        reply.hijack();
        return reply;
      }
      // Piped through as it comes, chunk by chunk. A client that goes away ends the read
      // from the agent; an agent that breaks off breaks the client's stream too.
      upstreams.add(upstream);
      reply.raw.once('close', () => {
        upstreams.delete(upstream);
        upstream.abort();
      });
      return reply
        .code(200)
        .type(res.headers.get('content-type') ?? 'application/x-ndjson')
        .header('cache-control', 'no-store')
        .send(Readable.fromWeb(res.body as WebReadableStream<Uint8Array>));
    } catch (err) {
      return fail(reply, err);
    }
  });

  registerAgentRoutes(app, ctx);
  registerSharingRoutes(app, ctx);
  registerSecretRoutes(app, ctx);

  app.get('/metrics', async (_req, reply) => reply.type(PROMETHEUS_CONTENT_TYPE).send(await masterMetricsText(ctx)));

  registerMesosCompatApi(app, ctx);
}

