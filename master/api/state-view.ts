// Builds the REST views (`/api/v1/state`, `/api/v1/tasks/:id`) from the registry and the
// master's soft state (connections, offers, allocations).

import type { AgentView, FrameworkView, StateView, TaskView } from '../../shared/master-state.ts';
import { isTerminal } from '../../shared/agent-protocol.ts';
import { Resources } from '../../shared/resources.ts';
import type { TaskRecord } from '../registry/commands.ts';
import type { MasterContext } from '../context.ts';
import type { Principal } from '../auth/credentials.ts';
import { agentBaseUrl } from '../auth/agent-http.ts';
import { taskOwner } from '../framework-host/task-owner.ts';

export const CAIRN_VERSION = '0.1.0';
const PROCESS_STARTED_MS = Date.now();

export function taskView(t: TaskRecord): TaskView {
  const v: TaskView = {
    id: t.id,
    name: t.name,
    frameworkId: t.frameworkId,
    agentId: t.agentId,
    state: t.state,
    resources: t.resources,
    message: t.message,
    launchedAtMs: t.launchedAtMs,
    updatedAtMs: t.updatedAtMs,
  };
  if (t.exitCode !== undefined) v.exitCode = t.exitCode;
  if (t.healthy !== undefined) v.healthy = t.healthy;
  if (t.healthCheck) v.healthCheck = t.healthCheck.type.toUpperCase() as 'HTTP' | 'TCP' | 'COMMAND';
  const latest = t.history?.at(-1);
  if (latest && latest.state === t.state && latest.reason !== '') v.reason = latest.reason;
  return v;
}

/** One task with its status history (`GET /api/v1/tasks/:id`); the state's list leaves it out to stay small. */
/** A task's view with its framework's name, which the registry keeps after the framework is gone. */
export function namedTaskView(t: TaskRecord, frameworkName: string | undefined): TaskView {
  return frameworkName ? { ...taskView(t), frameworkName } : taskView(t);
}

export function taskDetailView(t: TaskRecord, frameworkName?: string): TaskView {
  return { ...namedTaskView(t, frameworkName), history: (t.history ?? []).map((c) => ({ ...c })) };
}

/** Every agent, whole (agents are not private to any framework): what `/api/v1/state` and `/api/v1/agents` list. */
export function agentViews(ctx: MasterContext): AgentView[] {
  const reg = ctx.registry.state;
  const master = ctx.master();
  const usedByAgent = new Map<string, Resources>();
  for (const t of reg.tasks.values()) {
    if (isTerminal(t.state)) continue;
    usedByAgent.set(t.agentId, (usedByAgent.get(t.agentId) ?? Resources.EMPTY).add(Resources.parse(t.resources)));
  }
  const offeredByAgent = new Map<string, Resources>();
  for (const o of master?.offers.all() ?? []) offeredByAgent.set(o.agentId, (offeredByAgent.get(o.agentId) ?? Resources.EMPTY).add(o.resources));
  return [...reg.agents.values()].map((a) => ({
    id: a.id,
    hostname: a.hostname,
    ip: a.ip,
    url: agentBaseUrl(a),
    reachable: a.reachable,
    connected: master?.isConnected(a.id) ?? false,
    registeredAtMs: a.registeredAtMs,
    resources: a.resources,
    used: (usedByAgent.get(a.id) ?? Resources.EMPTY).toString(),
    offered: (offeredByAgent.get(a.id) ?? Resources.EMPTY).toString(),
    attributes: a.attributes,
    isolation: a.isolation ?? '',
    draining: a.drain ?? null,
    // Usage lives with the agent's connection, so only the leader has it.
    usage: master?.agentUsageReport(a.id) ?? null,
  }));
}

/**
 * The cluster as `viewer` may see it: agents whole; frameworks, tasks and offers only of
 * frameworks it may view (its own, and what the view_tasks ACL grants).
 */
export function stateView(ctx: MasterContext, viewer: Principal): StateView {
  const reg = ctx.registry.state;
  const visible = (frameworkId: string): boolean => ctx.auth.mayActOn(viewer, 'view_tasks', reg.frameworks.get(frameworkId)?.principal ?? '');
  const master = ctx.master();
  const agents = agentViews(ctx);
  const frameworks: FrameworkView[] = [...reg.frameworks.values()]
    .filter((f) => f.removedAtMs === undefined && visible(f.id))
    .map((f) => ({
      id: f.id,
      name: f.name,
      role: f.role,
      user: f.user,
      connected: master?.frameworkConnected(f.id) ?? false,
      failoverTimeoutS: f.failoverTimeoutS,
      registeredAtMs: f.registeredAtMs,
    }));
  const r = ctx.replication();
  return {
    version: CAIRN_VERSION,
    leader: r ? (r.leader ? { id: r.leader, url: r.leaderUrl ?? '' } : undefined) : { id: 1, url: ctx.selfUrl() },
    master: r ? { id: r.id, role: r.role, term: r.term, commitIndex: r.commit, appliedIndex: r.applied } : { id: 1, role: 'leader', term: 0, commitIndex: 0, appliedIndex: 0 },
    members: r?.members ?? [],
    startedAtMs: PROCESS_STARTED_MS,
    agents,
    frameworks,
    // A built-in framework's task is its app's or job's owner's to view (framework-host/task-owner.ts).
    tasks: [...reg.tasks.values()].filter((t) => ctx.auth.mayActOn(viewer, 'view_tasks', taskOwner(reg, t))).map((t) => namedTaskView(t, reg.frameworks.get(t.frameworkId)?.name)),
    offers: [...(master?.offers.all() ?? [])].filter((o) => visible(o.frameworkId)).map((o) => ({ id: o.id, frameworkId: o.frameworkId, agentId: o.agentId, resources: o.resources.toString() })),
  };
}
