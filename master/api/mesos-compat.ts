// Mesos' read endpoints that dashboards and scripts for Mesos use, in Mesos' JSON shapes
// (master/readonly_handler.cpp and common/http.cpp of Apache Mesos):
//   GET /master/state (/state, /state.json, /master/state.json)   the cluster, in full
//   GET /master/state-summary (/state-summary)                     agents and frameworks with task counts
//   GET /metrics/snapshot                                          flat JSON of Mesos' metric names
//   GET /master/redirect (/redirect)                               307 to the leading master
// Like every route they need a credential (`--open metrics` opens /metrics/snapshot with
// /metrics). As in Mesos, state and state-summary are the leader's: another master answers
// 307 to it (503 while none is elected); /metrics/snapshot is answered by every master.
// The builders are pure: they take a `MesosInput`, which `mesosInput` reads from the master.

import type { FastifyInstance } from 'fastify';
import { hostname as osHostname } from 'node:os';
import { isTerminal, TASK_STATES } from '../../shared/agent-protocol.ts';
import type { TaskState } from '../../shared/agent-messages.ts';
import { Resources } from '../../shared/resources.ts';
import { CAIRN_VERSION } from '../../shared/version.ts';
import type { Principal } from '../auth/credentials.ts';
import { leaderOrRedirect, type MasterContext } from '../context.ts';
import type { AgentRecord, FrameworkRecord, TaskRecord } from '../registry/commands.ts';
import { clusterFigures, type ClusterFigures } from './metrics-text.ts';

const PROCESS_STARTED_MS = Date.now();

/** Mesos' resources object: every scalar (0 when absent), ports as "[a-b, c-d]". */
export interface MesosResourcesJson {
  cpus: number;
  gpus: number;
  mem: number;
  disk: number;
  ports?: string;
}

export function mesosResources(r: Resources): MesosResourcesJson {
  const out: MesosResourcesJson = { cpus: r.cpus, gpus: r.gpus, mem: r.mem, disk: r.disk };
  if (r.ports.length > 0) out.ports = `[${r.ports.map((p) => `${p.begin}-${p.end}`).join(', ')}]`;
  return out;
}

/** What the builders read; `mesosInput` takes it from a running master. */
export interface MesosInput {
  version: string;
  /** This master: its id, base URL and host name. */
  self: { id: string; url: string; hostname: string };
  /** The leader's base URL; undefined while none is known. */
  leaderUrl: string | undefined;
  startTimeMs: number;
  /** When this master took the lead; undefined on a follower. */
  electedTimeMs: number | undefined;
  agents: readonly AgentRecord[];
  frameworks: readonly FrameworkRecord[];
  tasks: readonly TaskRecord[];
  offers: readonly { id: string; frameworkId: string; agentId: string; resources: Resources }[];
  frameworkConnected(frameworkId: string): boolean;
  /** May the caller see this framework's tasks (its own, or as view_tasks grants)? */
  mayView(framework: FrameworkRecord): boolean;
}

/** `master@host:port`, Mesos' libprocess address of a master at this URL. */
export function masterPid(url: string): string {
  const u = new URL(url);
  return `master@${u.hostname.replace(/^\[|\]$/g, '')}:${u.port || (u.protocol === 'https:' ? '443' : '80')}`;
}

const seconds = (ms: number) => ms / 1000;

function agentActive(a: AgentRecord): boolean {
  return a.reachable && !a.drain;
}

function mesosTask(t: TaskRecord, fw: FrameworkRecord | undefined) {
  // The state history, where the registry keeps one; else the latest state alone.
  const history = (t as { history?: readonly { state: TaskState; atMs: number }[] }).history;
  const statuses = history && history.length > 0 ? history.map((h) => ({ state: h.state, timestamp: seconds(h.atMs) })) : [{ state: t.state, timestamp: seconds(t.updatedAtMs) }];
  return {
    id: t.id,
    name: t.name,
    framework_id: t.frameworkId,
    executor_id: '',
    slave_id: t.agentId,
    state: t.state,
    resources: mesosResources(Resources.parse(t.resources)),
    role: fw?.role ?? '*',
    statuses,
    ...(fw ? { user: fw.user } : {}),
    ...(t.labels.length > 0 ? { labels: t.labels.map((l) => ({ key: l.name, value: l.value })) } : {}),
    ...(t.container ? { container: { type: 'DOCKER', docker: { image: t.container.docker.image, network: t.container.docker.network.toUpperCase() } } } : {}),
  };
}

interface Usage {
  used: Map<string, Resources>;
  offered: Map<string, Resources>;
}

function addTo(map: Map<string, Resources>, key: string, r: Resources): void {
  map.set(key, (map.get(key) ?? Resources.EMPTY).add(r));
}

/** What unfinished tasks use and outstanding offers hold, per agent and per framework. */
function usage(input: MesosInput): { agents: Usage; frameworks: Usage } {
  const agents: Usage = { used: new Map(), offered: new Map() };
  const frameworks: Usage = { used: new Map(), offered: new Map() };
  for (const t of input.tasks) {
    // An unreachable task's resources went with its agent, as in Mesos.
    if (isTerminal(t.state) || t.state === 'TASK_UNREACHABLE') continue;
    const r = Resources.parse(t.resources);
    addTo(agents.used, t.agentId, r);
    addTo(frameworks.used, t.frameworkId, r);
  }
  for (const o of input.offers) {
    addTo(agents.offered, o.agentId, o.resources);
    addTo(frameworks.offered, o.frameworkId, o.resources);
  }
  return { agents, frameworks };
}

function mesosAgent(a: AgentRecord, u: Usage) {
  const total = Resources.parse(a.resources);
  return {
    id: a.id,
    hostname: a.hostname,
    port: a.httpPort,
    attributes: a.attributes,
    pid: `slave(1)@${a.ip}:${a.httpPort}`,
    registered_time: seconds(a.registeredAtMs),
    resources: mesosResources(total),
    used_resources: mesosResources(u.used.get(a.id) ?? Resources.EMPTY),
    offered_resources: mesosResources(u.offered.get(a.id) ?? Resources.EMPTY),
    reserved_resources: {},
    unreserved_resources: mesosResources(total),
    active: agentActive(a),
    capabilities: [] as string[],
  };
}

function frameworkSummary(f: FrameworkRecord, u: Usage, connected: boolean) {
  return {
    id: f.id,
    name: f.name,
    used_resources: mesosResources(u.used.get(f.id) ?? Resources.EMPTY),
    offered_resources: mesosResources(u.offered.get(f.id) ?? Resources.EMPTY),
    capabilities: (f.capabilities ?? []).map((type) => ({ type })),
    hostname: '',
    webui_url: '',
    active: f.removedAtMs === undefined && connected,
    connected: f.removedAtMs === undefined && connected,
    recovered: false,
  };
}

/** Mesos' leader_info (MasterInfo). */
function masterInfo(id: string, url: string) {
  const u = new URL(url);
  const host = u.hostname.replace(/^\[|\]$/g, '');
  const port = Number(u.port || (u.protocol === 'https:' ? 443 : 80));
  return { id, pid: masterPid(url), port, hostname: host, address: { hostname: host, ip: host, port } };
}

/** GET /master/state. */
export function mesosState(input: MesosInput) {
  const u = usage(input);
  const reachable = input.agents.filter((a) => a.reachable);
  const tasksOf = new Map<string, TaskRecord[]>();
  for (const t of input.tasks) {
    const list = tasksOf.get(t.frameworkId);
    if (list) list.push(t);
    else tasksOf.set(t.frameworkId, [t]);
  }
  const fullFramework = (f: FrameworkRecord) => {
    const connected = input.frameworkConnected(f.id);
    const tasks = tasksOf.get(f.id) ?? [];
    const used = u.frameworks.used.get(f.id) ?? Resources.EMPTY;
    const offered = u.frameworks.offered.get(f.id) ?? Resources.EMPTY;
    return {
      ...frameworkSummary(f, u.frameworks, connected),
      user: f.user,
      failover_timeout: f.failoverTimeoutS,
      checkpoint: true,
      registered_time: seconds(f.registeredAtMs),
      unregistered_time: f.removedAtMs !== undefined ? seconds(f.removedAtMs) : 0,
      principal: f.principal,
      resources: mesosResources(used.add(offered)),
      role: f.role,
      tasks: tasks.filter((t) => !isTerminal(t.state) && t.state !== 'TASK_UNREACHABLE').map((t) => mesosTask(t, f)),
      unreachable_tasks: tasks.filter((t) => t.state === 'TASK_UNREACHABLE').map((t) => mesosTask(t, f)),
      completed_tasks: tasks.filter((t) => isTerminal(t.state)).map((t) => mesosTask(t, f)),
      offers: input.offers.filter((o) => o.frameworkId === f.id).map((o) => ({
        id: o.id,
        framework_id: o.frameworkId,
        slave_id: o.agentId,
        resources: mesosResources(o.resources),
      })),
      executors: [] as unknown[],
    };
  };
  const visible = input.frameworks.filter((f) => input.mayView(f));
  return {
    version: input.version,
    start_time: seconds(input.startTimeMs),
    ...(input.electedTimeMs !== undefined ? { elected_time: seconds(input.electedTimeMs) } : {}),
    id: input.self.id,
    pid: masterPid(input.self.url),
    hostname: input.self.hostname,
    capabilities: [] as string[],
    activated_slaves: reachable.filter(agentActive).length,
    deactivated_slaves: reachable.filter((a) => !agentActive(a)).length,
    unreachable_slaves: input.agents.length - reachable.length,
    ...(input.leaderUrl ? { leader: masterPid(input.leaderUrl), leader_info: masterInfo(input.leaderUrl === input.self.url ? input.self.id : '', input.leaderUrl) } : {}),
    slaves: reachable.map((a) => mesosAgent(a, u.agents)),
    recovered_slaves: [] as unknown[],
    frameworks: visible.filter((f) => f.removedAtMs === undefined).map(fullFramework),
    completed_frameworks: visible.filter((f) => f.removedAtMs !== undefined).map(fullFramework),
    orphan_tasks: [] as unknown[],
    unregistered_frameworks: [] as unknown[],
  };
}

/** The per-state task counts Mesos' state-summary gives each agent and framework. */
const SUMMARY_STATES: readonly TaskState[] = ['TASK_STAGING', 'TASK_STARTING', 'TASK_RUNNING', 'TASK_KILLING', 'TASK_FINISHED', 'TASK_KILLED', 'TASK_FAILED', 'TASK_LOST', 'TASK_ERROR', 'TASK_UNREACHABLE'];

function stateCounts(tasks: readonly TaskRecord[]): Record<string, number> {
  const out: Record<string, number> = Object.fromEntries(SUMMARY_STATES.map((s) => [s, 0]));
  for (const t of tasks) if (t.state in out) out[t.state]!++;
  return out;
}

/** GET /master/state-summary. */
export function mesosStateSummary(input: MesosInput) {
  const u = usage(input);
  const visible = input.frameworks.filter((f) => f.removedAtMs === undefined && input.mayView(f));
  const visibleIds = new Set(visible.map((f) => f.id));
  const tasks = input.tasks.filter((t) => visibleIds.has(t.frameworkId));
  return {
    hostname: input.self.hostname,
    slaves: input.agents.filter((a) => a.reachable).map((a) => {
      const mine = tasks.filter((t) => t.agentId === a.id);
      return { ...mesosAgent(a, u.agents), ...stateCounts(mine), framework_ids: [...new Set(mine.map((t) => t.frameworkId))] };
    }),
    frameworks: visible.map((f) => {
      const mine = tasks.filter((t) => t.frameworkId === f.id);
      return { ...frameworkSummary(f, u.frameworks, input.frameworkConnected(f.id)), ...stateCounts(mine), slave_ids: [...new Set(mine.map((t) => t.agentId))] };
    }),
  };
}

/** The leader's counters that /metrics/snapshot reports (absent on a follower). */
export interface LeaderCounters {
  statusUpdates: number;
  calls: ReadonlyMap<string, number>;
  allocationRuns: number;
  allocationLastMs: number;
  agentConnections: number;
}

/** GET /metrics/snapshot: Mesos' metric names, flat, as numbers. */
export function mesosMetricsSnapshot(f: ClusterFigures, uptimeS: number, leader: LeaderCounters | undefined): Record<string, number> {
  const out: Record<string, number> = {
    'master/uptime_secs': uptimeS,
    'master/elected': f.leading ? 1 : 0,
    'master/slaves_connected': f.agents.connected,
    // Connections are the leader's: a follower counts none either way.
    'master/slaves_disconnected': f.leading ? Math.max(0, f.agents.reachable - f.agents.connected) : 0,
    'master/slaves_active': f.agents.reachable - f.agents.draining,
    'master/slaves_inactive': f.agents.draining,
    'master/slaves_unreachable': f.agents.unreachable,
    'master/frameworks_connected': f.frameworks.connected,
    'master/frameworks_disconnected': f.frameworks.disconnected,
    'master/frameworks_active': f.frameworks.connected,
    'master/frameworks_inactive': f.frameworks.disconnected,
    'master/outstanding_offers': f.offersOutstanding ?? 0,
  };
  for (const s of TASK_STATES) out[`master/tasks_${s.slice('TASK_'.length).toLowerCase()}`] = f.tasks.get(s) ?? 0;
  for (const r of ['cpus', 'mem', 'disk', 'gpus'] as const) {
    const total = f.total.get(r);
    const used = f.used.get(r);
    out[`master/${r}_total`] = total;
    out[`master/${r}_used`] = used;
    // Mesos' "percent" is a fraction of the total.
    out[`master/${r}_percent`] = total > 0 ? used / total : 0;
  }
  const call = (type: string) => leader?.calls.get(type) ?? 0;
  out['master/messages_launch_tasks'] = call('ACCEPT');
  out['master/messages_decline_offers'] = call('DECLINE');
  out['master/messages_revive_offers'] = call('REVIVE');
  out['master/messages_suppress_offers'] = call('SUPPRESS');
  out['master/messages_reconcile_tasks'] = call('RECONCILE');
  out['master/messages_kill_task'] = call('KILL');
  out['master/messages_status_update_acknowledgement'] = call('ACKNOWLEDGE');
  out['master/messages_status_update'] = leader?.statusUpdates ?? 0;
  out['master/slave_registrations'] = leader?.agentConnections ?? 0;
  out['allocator/mesos/allocation_runs'] = leader?.allocationRuns ?? 0;
  out['allocator/mesos/allocation_run_ms'] = leader?.allocationLastMs ?? 0;
  return out;
}

/** The input of the builders, from a running master, as `viewer` may see it. */
export function mesosInput(ctx: MasterContext, viewer: Principal): MesosInput {
  const reg = ctx.registry.state;
  const master = ctx.master();
  const r = ctx.replication();
  const selfUrl = ctx.selfUrl();
  const leaderUrl = master ? selfUrl : r?.leaderUrl;
  return {
    version: CAIRN_VERSION,
    self: { id: String(r?.id ?? 1), url: selfUrl, hostname: osHostname() },
    leaderUrl,
    startTimeMs: PROCESS_STARTED_MS,
    electedTimeMs: master?.startedAtMs,
    agents: [...reg.agents.values()],
    frameworks: [...reg.frameworks.values()],
    tasks: [...reg.tasks.values()],
    offers: [...(master?.offers.all() ?? [])],
    frameworkConnected: (id) => master?.frameworkConnected(id) ?? false,
    mayView: (f) => ctx.auth.mayActOn(viewer, 'view_tasks', f.principal),
  };
}

export function registerMesosCompatApi(app: FastifyInstance, ctx: MasterContext): void {
  for (const path of ['/master/state', '/state', '/state.json', '/master/state.json']) {
    app.get(path, async (req, reply) => {
      if (!leaderOrRedirect(ctx, req, reply)) return reply;
      return mesosState(mesosInput(ctx, req.principal));
    });
  }
  for (const path of ['/master/state-summary', '/state-summary']) {
    app.get(path, async (req, reply) => {
      if (!leaderOrRedirect(ctx, req, reply)) return reply;
      return mesosStateSummary(mesosInput(ctx, req.principal));
    });
  }
  app.get('/metrics/snapshot', async () => {
    const master = ctx.master();
    const m = master?.metrics;
    return mesosMetricsSnapshot(clusterFigures(ctx), Math.round((Date.now() - PROCESS_STARTED_MS) / 1000), m && {
      statusUpdates: m.statusUpdates,
      calls: m.calls,
      allocationRuns: m.allocation.count,
      allocationLastMs: m.allocation.lastMs,
      agentConnections: m.agentConnections,
    });
  });
  // As Mesos does: 307 to the leader's base URL (503 while none is known).
  for (const path of ['/master/redirect', '/redirect']) {
    app.get(path, async (_req, reply) => {
      const leader = ctx.master() ? ctx.selfUrl() : ctx.replication()?.leaderUrl;
      if (!leader) return reply.code(503).header('retry-after', '1').send({ code: 'CAIRN_NOT_LEADER', message: 'no leader is elected yet; retry shortly' });
      return reply.code(307).header('location', leader).send();
    });
  }
}
