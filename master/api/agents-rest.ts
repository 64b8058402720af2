// The master's REST routes about agents: drains (an operator's maintenance of a host) and
// usage read through the agent, so that nobody has to reach hosts directly.
//   POST   /api/v1/agents/:id/drain   {deadlineMs?}  no more offers; tasks end by the deadline
//   DELETE /api/v1/agents/:id/drain                  offered again
//   GET    /api/v1/agents/:id/usage                  the agent's latest usage sample, its tasks those
//                                                    the caller may view (view_tasks), their sums
//                                                    over those alone
//   GET    /api/v1/tasks/:id/usage                   one task's, from its agent
//   GET    /api/v1/agents/:id/usage/history          the agent's recent samples (agent/usage/history.ts),
//                                                    filtered and summed as the latest one is
//   GET    /api/v1/tasks/:id/usage/history           one task's recent samples, from its agent

import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { parseDrainRequest } from '../../shared/drain-request.ts';
import { CairnError } from '../../shared/errors.ts';
import { leaderOrRedirect, type MasterContext } from '../context.ts';
import type { AgentRecord } from '../registry/commands.ts';
import { sendHttpError as fail } from '../../shared/http-errors.ts';
import { taskOwner } from '../framework-host/task-owner.ts';
import { agentAuthHeaders, agentBaseUrl } from '../auth/agent-http.ts';
import type { Principal } from '../auth/credentials.ts';
import type { AgentUsagePoint, UsageHistory } from '../../shared/agent-usage.ts';

/** Forwards a GET to an agent and sends its answer on unchanged (status and JSON body). */
export async function relayFromAgent(ctx: MasterContext, agent: AgentRecord, path: string, reply: FastifyReply): Promise<FastifyReply> {
  let res: Response;
  try {
    res = await (ctx.tlsClient?.fetch ?? fetch)(`${agentBaseUrl(agent)}${path}`, { headers: agentAuthHeaders(ctx.auth, agent), signal: AbortSignal.timeout(10_000) });
  } catch (err) {
    throw new CairnError('CAIRN_AGENT_UNAVAILABLE', `agent ${agent.hostname} did not answer: ${(err as Error).message}`);
  }
  return reply.code(res.status).type('application/json').send(await res.text());
}

/** The parts of an agent's usage sample (agent/usage/usage.ts AgentUsage) this filter reads. */
interface AgentUsageBody {
  tasks?: { taskId: string; frameworkId: string; cpusUsed: number | null; cpusLimit: number; memoryBytes: number; rssBytes: number; memoryLimitBytes: number; gpus?: { memoryUsedMiB?: number | null }[] }[];
  total?: Record<string, number>;
  [k: string]: unknown;
}

/**
 * An agent's sample as `principal` may see it: only the tasks it may view (view_tasks on
 * each task's owner, a built-in framework's task by its app's or job's owner), with the sums
 * over those; the host's own figures (its GPUs) stay. Tasks the master does not know go to
 * no one but those the ACLs let view every principal's.
 */
function visibleUsage(ctx: MasterContext, principal: Principal, usage: AgentUsageBody): AgentUsageBody {
  const tasks = usage.tasks ?? [];
  const state = ctx.registry.state;
  const visible = tasks.filter((u) => {
    const t = state.tasks.get(u.taskId);
    const owner = t ? taskOwner(state, t) : (state.frameworks.get(u.frameworkId)?.principal ?? '');
    return ctx.auth.mayActOn(principal, 'view_tasks', owner);
  });
  if (visible.length === tasks.length) return usage;
  const round = (n: number) => Math.round(n * 1000) / 1000;
  const total = {
    tasks: visible.length,
    cpusUsed: round(visible.reduce((s, u) => s + (u.cpusUsed ?? 0), 0)),
    cpusLimit: round(visible.reduce((s, u) => s + u.cpusLimit, 0)),
    memoryBytes: visible.reduce((s, u) => s + u.memoryBytes, 0),
    rssBytes: visible.reduce((s, u) => s + u.rssBytes, 0),
    memoryLimitBytes: visible.reduce((s, u) => s + u.memoryLimitBytes, 0),
    gpus: visible.reduce((s, u) => s + (u.gpus?.length ?? 0), 0),
    gpuMemoryUsedMiB: visible.reduce((s, u) => s + (u.gpus ?? []).reduce((g, d) => g + (d.memoryUsedMiB ?? 0), 0), 0),
  };
  return { ...usage, tasks: visible, total, hiddenTasks: tasks.length - visible.length };
}

/** An agent's history as `principal` may see it: each point's tasks those it may view, the sums over those (GPUs stay). */
function visibleHistory(ctx: MasterContext, principal: Principal, h: UsageHistory<AgentUsagePoint>): UsageHistory<AgentUsagePoint> {
  const state = ctx.registry.state;
  const seen = new Map<string, boolean>();
  const may = (taskId: string, frameworkId: string) => {
    let ok = seen.get(taskId);
    if (ok === undefined) {
      const t = state.tasks.get(taskId);
      ok = ctx.auth.mayActOn(principal, 'view_tasks', t ? taskOwner(state, t) : (state.frameworks.get(frameworkId)?.principal ?? ''));
      seen.set(taskId, ok);
    }
    return ok;
  };
  const round = (n: number) => Math.round(n * 1000) / 1000;
  const points = (h.points ?? []).map((p) => {
    const tasks = (p.tasks ?? []).filter((t) => may(t.taskId, t.frameworkId));
    if (tasks.length === (p.tasks ?? []).length) return p;
    return {
      ...p, tasks,
      cpusUsed: round(tasks.reduce((s, t) => s + (t.cpusUsed ?? 0), 0)),
      cpusLimit: round(tasks.reduce((s, t) => s + t.cpusLimit, 0)),
      memoryBytes: tasks.reduce((s, t) => s + t.memoryBytes, 0),
      memoryLimitBytes: tasks.reduce((s, t) => s + t.memoryLimitBytes, 0),
    };
  });
  return { intervalMs: h.intervalMs, points };
}

export function registerAgentRoutes(app: FastifyInstance, ctx: MasterContext): void {
  const agentOf = (id: string) => {
    const a = ctx.registry.state.agents.get(id);
    if (!a) throw new CairnError('CAIRN_UNKNOWN_AGENT', `no agent '${id}'`, 'id');
    return a;
  };

  /** drain_agents names agents by id or hostname. */
  const mayOperate = (req: FastifyRequest, agent: AgentRecord) => {
    if (!ctx.auth.allows(req.principal, 'drain_agents', agent.id)) ctx.auth.require(req.principal, 'drain_agents', agent.hostname, 'id');
  };

  app.post<{ Params: { id: string }; Body: unknown }>('/api/v1/agents/:id/drain', async (req, reply) => {
    try {
      mayOperate(req, agentOf(req.params.id));
      const { deadlineAtMs } = parseDrainRequest(req.body, Date.now());
      const master = leaderOrRedirect(ctx, req, reply);
      if (!master) return reply;
      const drain = await master.drainAgent(req.params.id, deadlineAtMs);
      return { agentId: req.params.id, draining: drain };
    } catch (err) {
      return fail(reply, err);
    }
  });

  app.delete<{ Params: { id: string } }>('/api/v1/agents/:id/drain', async (req, reply) => {
    try {
      mayOperate(req, agentOf(req.params.id));
      const master = leaderOrRedirect(ctx, req, reply);
      if (!master) return reply;
      await master.undrainAgent(req.params.id);
      return { agentId: req.params.id, draining: null };
    } catch (err) {
      return fail(reply, err);
    }
  });

  app.get<{ Params: { id: string } }>('/api/v1/agents/:id/usage/history', async (req, reply) => {
    try {
      const agent = agentOf(req.params.id);
      let res: Response;
      try {
        res = await (ctx.tlsClient?.fetch ?? fetch)(`${agentBaseUrl(agent)}/api/v1/usage/history`, { headers: agentAuthHeaders(ctx.auth, agent), signal: AbortSignal.timeout(10_000) });
      } catch (err) {
        throw new CairnError('CAIRN_AGENT_UNAVAILABLE', `agent ${agent.hostname} did not answer: ${(err as Error).message}`);
      }
      const text = await res.text();
      if (!res.ok) return reply.code(res.status).type('application/json').send(text);
      return visibleHistory(ctx, req.principal, JSON.parse(text) as UsageHistory<AgentUsagePoint>);
    } catch (err) {
      return fail(reply, err);
    }
  });

  app.get<{ Params: { id: string } }>('/api/v1/agents/:id/usage', async (req, reply) => {
    try {
      const agent = agentOf(req.params.id);
      let res: Response;
      try {
        res = await (ctx.tlsClient?.fetch ?? fetch)(`${agentBaseUrl(agent)}/api/v1/usage`, { headers: agentAuthHeaders(ctx.auth, agent), signal: AbortSignal.timeout(10_000) });
      } catch (err) {
        throw new CairnError('CAIRN_AGENT_UNAVAILABLE', `agent ${agent.hostname} did not answer: ${(err as Error).message}`);
      }
      const text = await res.text();
      if (!res.ok) return reply.code(res.status).type('application/json').send(text);
      return visibleUsage(ctx, req.principal, JSON.parse(text) as AgentUsageBody);
    } catch (err) {
      return fail(reply, err);
    }
  });

  for (const suffix of ['usage', 'usage/history']) app.get<{ Params: { id: string } }>(`/api/v1/tasks/:id/${suffix}`, async (req, reply) => {
    try {
      const t = ctx.registry.state.tasks.get(req.params.id);
      if (!t) throw new CairnError('CAIRN_UNKNOWN_TASK', `no task '${req.params.id}'`, 'id');
      const agent = ctx.registry.state.agents.get(t.agentId);
      if (!ctx.auth.mayActOn(req.principal, 'view_tasks', taskOwner(ctx.registry.state, t))) {
        throw new CairnError('CAIRN_FORBIDDEN', `principal '${req.principal.name}' may not view the tasks of framework ${t.frameworkId}`, 'id');
      }
      if (!agent) throw new CairnError('CAIRN_AGENT_UNAVAILABLE', `agent ${t.agentId} of task '${t.id}' is gone`, 'id');
      return await relayFromAgent(ctx, agent, `/api/v1/tasks/${encodeURIComponent(t.id)}/${suffix}`, reply);
    } catch (err) {
      return fail(reply, err);
    }
  });
}
