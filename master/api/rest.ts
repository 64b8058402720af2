// The master's REST API for people and tools: health, state, tasks, logs (read through
// the task's agent, one chunk or a followed stream piped through), operator kill, and
// Prometheus metrics.

import type { FastifyInstance } from 'fastify';
import { Readable } from 'node:stream';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import { isTerminal, TASK_STATES } from '../../shared/agent-protocol.ts';
import { CairnError } from '../../shared/errors.ts';
import { logQueryString, parseLogQuery } from '../../shared/log-query.ts';
import { Resources } from '../../shared/resources.ts';
import { APPLIED_INDEX_HEADER, leaderOrRedirect, type MasterContext } from '../context.ts';
import type { Registry } from '../registry/registry.ts';
import { promFamily } from '../metrics.ts';
import { agentAuthHeaders, agentBaseUrl, registerAgentRoutes } from './agents-rest.ts';
import type { Principal } from '../auth/credentials.ts';
import { sendHttpError as fail } from './http-errors.ts';
import { stateView, taskDetailView } from './state-view.ts';

/** How long an agent may take to answer a log request (up to its headers, when followed). */
const AGENT_ANSWER_TIMEOUT_MS = 10_000;

function findTask(registry: Registry, id: string) {
  const t = registry.state.tasks.get(id);
  if (!t) throw new CairnError('CAIRN_UNKNOWN_TASK', `no task '${id}'`, 'id');
  return t;
}

/** A task `principal` may see or kill; one it may not answers as unknown would, plus why. */
function taskFor(ctx: MasterContext, principal: Principal, id: string, action: 'view_tasks' | 'kill_tasks') {
  const t = findTask(ctx.registry, id);
  const owner = ctx.registry.state.frameworks.get(t.frameworkId)?.principal ?? '';
  if (!ctx.auth.mayActOn(principal, action, owner)) {
    throw new CairnError('CAIRN_FORBIDDEN', `principal '${principal.name}' may not ${action === 'view_tasks' ? 'view' : 'kill'} the tasks of framework ${t.frameworkId}`, 'id');
  }
  return t;
}

export function registerRestApi(app: FastifyInstance, ctx: MasterContext): void {
  const registry = ctx.registry;
  // Reads are answered from this master's copy of the registry; the header says how far
  // that copy has applied the log, so a client can tell a stale follower.
  app.addHook('onSend', async (_req, reply, payload) => {
    const r = ctx.replication();
    if (r) void reply.header(APPLIED_INDEX_HEADER, String(r.applied));
    return payload;
  });

  app.get('/health', async () => ({ status: 'ok', role: ctx.replication()?.role ?? 'leader' }));

  app.get('/api/v1/state', async (req) => stateView(ctx, req.principal));

  app.get<{ Params: { id: string } }>('/api/v1/tasks/:id', async (req, reply) => {
    try {
      return taskDetailView(taskFor(ctx, req.principal, req.params.id, 'view_tasks'));
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

  // Role weights, like Mesos' /weights: GET lists them, PUT sets one (durable, replicated).
  app.get('/api/v1/roles', async () => ({ weights: Object.fromEntries(registry.state.roleWeights) }));

  app.put<{ Params: { role: string }; Body: unknown }>('/api/v1/roles/:role', async (req, reply) => {
    try {
      const role = req.params.role;
      if (!/^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$/.test(role)) throw new CairnError('CAIRN_BAD_REQUEST', `'${role}' is not a valid role name`, 'role');
      const body = req.body as { weight?: unknown } | null;
      const weight = body?.weight;
      if (typeof weight !== 'number' || !Number.isFinite(weight) || weight <= 0 || weight > 1e6) {
        throw new CairnError('CAIRN_BAD_REQUEST', 'must be a positive number', 'weight');
      }
      ctx.auth.require(req.principal, 'update_weights', role, 'role');
      const master = leaderOrRedirect(ctx, req, reply);
      if (!master) return reply;
      await master.setRoleWeight(role, weight);
      return { role, weight };
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
        res = await (ctx.tlsClient?.fetch ?? fetch)(url, { headers: agentAuthHeaders(ctx, agent), signal: upstream.signal });
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

  app.get('/metrics', async (_req, reply) => {
    const reg = registry.state;
    const master = ctx.core();
    const byState = new Map<string, number>(TASK_STATES.map((s) => [s, 0]));
    for (const t of reg.tasks.values()) byState.set(t.state, (byState.get(t.state) ?? 0) + 1);
    let total = Resources.EMPTY;
    let reachable = 0;
    for (const a of reg.agents.values()) {
      if (!a.reachable) continue;
      reachable++;
      total = total.add(Resources.parse(a.resources));
    }
    const frameworks = [...reg.frameworks.values()].filter((f) => f.removedAtMs === undefined);
    const connected = (id: string) => master?.frameworkConnected(id) ?? false;
    const text = [
      promFamily('cairn_master_agents', 'gauge', 'Agents known to the master, by reachability.', [
        { labels: { state: 'reachable' }, value: reachable },
        { labels: { state: 'unreachable' }, value: reg.agents.size - reachable },
      ]),
      promFamily('cairn_master_frameworks', 'gauge', 'Frameworks, by connection.', [
        { labels: { state: 'connected' }, value: frameworks.filter((f) => connected(f.id)).length },
        { labels: { state: 'disconnected' }, value: frameworks.filter((f) => !connected(f.id)).length },
      ]),
      promFamily('cairn_master_tasks', 'gauge', 'Tasks the registry holds, by state.', [...byState].map(([state, value]) => ({ labels: { state }, value }))),
      promFamily('cairn_master_resources_total', 'gauge', 'Resources of reachable agents.', (['cpus', 'mem', 'disk', 'gpus'] as const).map((r) => ({ labels: { resource: r }, value: total.get(r) }))),
      promFamily('cairn_master_registry_commands_total', 'counter', 'Registry commands applied, by type.', [...registry.applied].map(([type, value]) => ({ labels: { type }, value }))),
      ...(master ? leaderMetrics(master) : []),
      ...replicationMetrics(ctx),
    ].join('\n');
    return reply.type('text/plain; version=0.0.4').send(text + '\n');
  });
}

/** Counters of the leader's services (they start again at zero on each new leader). */
function leaderMetrics(master: NonNullable<ReturnType<MasterContext['core']>>): string[] {
  const m = master.metrics;
  const alloc = m.allocation;
  return [
    promFamily('cairn_master_offers_outstanding', 'gauge', 'Offers made and not yet answered.', [{ value: master.offers.size }]),
    promFamily('cairn_master_offers_total', 'counter', 'Offers made.', [{ value: m.offersMade }]),
    promFamily('cairn_master_offers_rescinded_total', 'counter', 'Offers rescinded.', [{ value: m.offersRescinded }]),
    promFamily('cairn_master_tasks_launched_total', 'counter', 'Tasks launched.', [{ value: m.tasksLaunched }]),
    promFamily('cairn_master_status_updates_total', 'counter', 'Status updates received from agents.', [{ value: m.statusUpdates }]),
    promFamily('cairn_master_scheduler_calls_total', 'counter', 'Scheduler calls, by type.', [...m.calls].map(([type, value]) => ({ labels: { type }, value }))),
    promFamily('cairn_master_bad_requests_total', 'counter', 'Requests refused as malformed or invalid.', [{ value: m.badRequests }]),
    promFamily('cairn_master_bad_agent_frames_total', 'counter', 'Agent frames that failed to decode.', [{ value: m.badAgentFrames }]),
    promFamily('cairn_master_allocation_runs_total', 'counter', 'Allocation cycles run.', [{ value: alloc.count }]),
    promFamily('cairn_master_allocation_seconds_sum', 'counter', 'Time spent in allocation cycles.', [{ value: alloc.sumMs / 1000 }]),
    promFamily('cairn_master_allocation_last_seconds', 'gauge', 'Duration of the last allocation cycle.', [{ value: alloc.lastMs / 1000 }]),
  ];
}

function replicationMetrics(ctx: MasterContext): string[] {
  const r = ctx.replication();
  if (!r) return [];
  return [
    promFamily('cairn_master_raft_term', 'gauge', 'Current Raft term.', [{ value: r.term }]),
    promFamily('cairn_master_raft_leader', 'gauge', '1 when this master leads.', [{ value: r.role === 'leader' ? 1 : 0 }]),
    promFamily('cairn_master_raft_commit_index', 'gauge', 'Raft commit index.', [{ value: r.commit }]),
    promFamily('cairn_master_raft_applied_index', 'gauge', 'Last log index applied to the registry.', [{ value: r.applied }]),
    promFamily('cairn_master_raft_bad_peer_frames_total', 'counter', 'Frames from peers refused as undecodable, unauthenticated or replayed.', [{ value: r.badPeerFrames }]),
    promFamily('cairn_master_raft_replayed_peer_frames_total', 'counter', 'Frames from peers refused as replayed (counted among the bad ones too).', [{ value: r.replayedPeerFrames }]),
  ];
}
