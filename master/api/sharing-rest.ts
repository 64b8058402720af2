// The master's REST routes about sharing the cluster:
//   GET    /api/v1/roles            per role and principal: allocated, used, quota, share (any master)
//   PUT    /api/v1/roles/:role      {weight}                a role's weight (Mesos' /weights)
//   GET    /api/v1/quotas           every role's quota
//   PUT    /api/v1/quotas/:role     {guarantee?, limit?}   sets one, checked against the others
//   DELETE /api/v1/quotas/:role                            removes one
//   GET    /api/v1/preemptions      the latest preemptions, newest last
// Hierarchical roles (`team/alice`) go in the path URL-encoded (`team%2Falice`).

import type { FastifyInstance } from 'fastify';
import { CairnError } from '../../shared/errors.ts';
import { leaderOrRedirect, type MasterContext } from '../context.ts';
import { taskOwner } from '../framework-host/task-owner.ts';
import type { AgentRecord, QuotaRecord } from '../registry/commands.ts';
import { compileQuotas } from '../sharing/quota-policy.ts';
import { parseQuotaJson, quotaToJson } from '../sharing/quotas.ts';
import { validRoleName } from '../../shared/sharing/roles.ts';
import { usageView } from '../sharing/usage-view.ts';
import type { TaskUse } from '../../shared/sharing/views.ts';
import { agentAuthHeaders, agentBaseUrl } from '../auth/agent-http.ts';
import { sendHttpError as fail } from '../../shared/http-errors.ts';
import { monotonicMs } from '../../shared/steady-clock.ts';

/** Usage samples are read from the agents at most this often, and waited for this long. */
const USAGE_CACHE_MS = 5_000;
const USAGE_TIMEOUT_MS = 2_000;

export function registerSharingRoutes(app: FastifyInstance, ctx: MasterContext): void {
  const state = () => ctx.registry.state;
  const usage = usageSamples(ctx);

  app.get<{ Querystring: { usage?: string } }>('/api/v1/roles', async (req, reply) => {
    try {
      const s = state();
      const withUsage = req.query.usage !== 'false';
      const samples = withUsage ? await usage() : { byTask: new Map<string, TaskUse>(), answered: 0, asked: 0, atMs: null };
      const view = usageView({
        frameworks: s.frameworks,
        tasks: s.tasks.values(),
        agentTotals: [...s.agents.values()].map((a) => ({ resources: a.resources, counted: a.reachable && !a.drain })),
        weights: s.roleWeights,
        quotas: compileQuotas([...s.quotas.values()]).table,
        ownerOf: (t) => taskOwner(s, t),
        usage: samples.byTask,
      });
      return {
        // Mesos' /weights answer, kept for the clients that read it.
        weights: Object.fromEntries(s.roleWeights),
        priorityClasses: { names: ctx.priorityClasses.names, default: ctx.priorityClasses.defaultClass },
        ...view,
        usageSample: { atMs: samples.atMs, agentsAsked: samples.asked, agentsAnswered: samples.answered },
      };
    } catch (err) {
      return fail(reply, err);
    }
  });

  app.put<{ Params: { role: string }; Body: unknown }>('/api/v1/roles/:role', async (req, reply) => {
    try {
      const role = req.params.role;
      validRoleName(role, 'role');
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

  app.get('/api/v1/quotas', async () => ({
    quotas: compileQuotas([...state().quotas.values()]).table.entries().map(([role, q]) => quotaToJson(role, q)),
  }));

  app.put<{ Params: { role: string }; Body: unknown }>('/api/v1/quotas/:role', async (req, reply) => {
    try {
      const role = req.params.role;
      validRoleName(role, 'role');
      const body = req.body;
      if (body === null || typeof body !== 'object' || Array.isArray(body)) throw new CairnError('CAIRN_BAD_REQUEST', 'must be a JSON object with guarantee and/or limit', 'body');
      const given = body as Record<string, unknown>;
      if (given.role !== undefined && given.role !== role) throw new CairnError('CAIRN_BAD_REQUEST', `names role '${String(given.role)}' but the path names '${role}'`, 'role');
      // Parsed here for a 400 naming the field; checked against the other quotas by the leader.
      const { quota } = parseQuotaJson({ ...given, role });
      ctx.auth.require(req.principal, 'update_quotas', role, 'role');
      const master = leaderOrRedirect(ctx, req, reply);
      if (!master) return reply;
      const record = quotaToJson(role, quota) as QuotaRecord;
      await master.setQuota(role, record);
      ctx.audit.info({ principal: req.principal.name, role, quota: record }, 'quota set');
      return record;
    } catch (err) {
      return fail(reply, err);
    }
  });

  app.delete<{ Params: { role: string } }>('/api/v1/quotas/:role', async (req, reply) => {
    try {
      const role = req.params.role;
      validRoleName(role, 'role');
      if (!state().quotas.has(role)) throw new CairnError('CAIRN_UNKNOWN_QUOTA', `role '${role}' has no quota`, 'role');
      ctx.auth.require(req.principal, 'update_quotas', role, 'role');
      const master = leaderOrRedirect(ctx, req, reply);
      if (!master) return reply;
      await master.setQuota(role, null);
      ctx.audit.info({ principal: req.principal.name, role }, 'quota removed');
      return { role, removed: true };
    } catch (err) {
      return fail(reply, err);
    }
  });

  app.get('/api/v1/preemptions', async () => ({ preemptions: state().preemptions }));
}

interface Samples {
  byTask: Map<string, TaskUse>;
  asked: number;
  answered: number;
  atMs: number | null;
}

/** The agents' latest usage samples, per task; read again at most every USAGE_CACHE_MS. */
function usageSamples(ctx: MasterContext): () => Promise<Samples> {
  let cached: { at: number; samples: Promise<Samples> } | undefined;
  return () => {
    const now = monotonicMs();
    if (cached && now - cached.at < USAGE_CACHE_MS) return cached.samples;
    const agents = [...ctx.registry.state.agents.values()].filter((a) => a.reachable && ctx.registry.state.activeTasksOn(a.id).length > 0);
    const samples = Promise.all(agents.map((a) => agentUsage(ctx, a))).then((all) => {
      const byTask = new Map<string, TaskUse>();
      let answered = 0;
      for (const list of all) {
        if (list === undefined) continue;
        answered++;
        for (const [id, use] of list) byTask.set(id, use);
      }
      return { byTask, asked: agents.length, answered, atMs: now };
    });
    cached = { at: now, samples };
    return samples;
  };
}

interface AgentUsageAnswer {
  tasks?: { taskId?: unknown; cpusUsed?: unknown; memoryBytes?: unknown; gpus?: unknown }[];
}

async function agentUsage(ctx: MasterContext, agent: AgentRecord): Promise<[string, TaskUse][] | undefined> {
  try {
    const res = await (ctx.tlsClient?.fetch ?? fetch)(`${agentBaseUrl(agent)}/api/v1/usage`, { headers: agentAuthHeaders(ctx.auth, agent), signal: AbortSignal.timeout(USAGE_TIMEOUT_MS) });
    if (!res.ok) return undefined;
    const body = (await res.json()) as AgentUsageAnswer;
    return (body.tasks ?? []).filter((t) => typeof t.taskId === 'string').map((t) => [t.taskId as string, {
      cpus: typeof t.cpusUsed === 'number' ? t.cpusUsed : 0,
      memMb: typeof t.memoryBytes === 'number' ? t.memoryBytes / (1024 * 1024) : 0,
      gpus: Array.isArray(t.gpus) ? t.gpus.length : 0,
    }]);
  } catch {
    return undefined; // an agent that does not answer leaves its tasks unsampled
  }
}
