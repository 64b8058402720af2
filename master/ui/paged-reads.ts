// The dashboard's paginated reads, so that a page with 10,000 tasks fetches a screenful:
//   GET /api/v1/tasks?offset=0&limit=100&state=RUNNING,STAGING&framework=ID&agent=ID&q=TEXT&sort=newest|oldest
//     → { total, offset, limit, tasks: TaskView[] }   (only tasks the caller may view)
//   GET /api/v1/agents?offset=0&limit=100&q=TEXT
//     → { total, offset, limit, agents: AgentView[] } (the objects /api/v1/state lists)
// `total` counts what the filters keep, before the page is cut. Tasks come newest first (by
// launch time) unless sort=oldest; agents by hostname. A bad or unknown query parameter is
// refused with 400, naming it in `field`. Answered from this master's copy of the registry.

import type { FastifyInstance } from 'fastify';
import { TASK_STATES, type TaskState } from '../../shared/agent-messages.ts';
import type { AgentView, TaskView } from '../../shared/master-state.ts';
import { CairnError } from '../../shared/errors.ts';
import type { Principal } from '../auth/credentials.ts';
import { agentViews, namedTaskView } from '../api/state-view.ts';
import { taskOwner } from '../framework-host/task-owner.ts';
import type { MasterContext } from '../context.ts';
import { BUILTIN_PRINCIPAL } from '../builtin-principal.ts';
import type { Registry } from '../registry/registry.ts';
import type { RegistryCommand, TaskRecord } from '../registry/commands.ts';
import type { RegistryStateMachine } from '../registry/state-machine.ts';

export const DEFAULT_PAGE_LIMIT = 100;
export const MAX_PAGE_LIMIT = 1000;
const MAX_QUERY_TEXT = 256;

export interface Page {
  offset: number;
  limit: number;
}

export interface TaskQuery extends Page {
  states?: ReadonlySet<TaskState>;
  framework?: string;
  agent?: string;
  q?: string;
  sort: 'newest' | 'oldest';
}

export interface AgentQuery extends Page {
  q?: string;
}

function bad(field: string, message: string): never {
  throw new CairnError('CAIRN_BAD_REQUEST', message, field);
}

/** One value per parameter: `?limit=1&limit=2` is refused rather than guessed at. */
function single(query: Record<string, unknown>, field: string): string | undefined {
  const v = query[field];
  if (v === undefined) return undefined;
  if (typeof v !== 'string') bad(field, `give ${field} once`);
  return v;
}

function integer(query: Record<string, unknown>, field: string, min: number, max: number, fallback: number): number {
  const v = single(query, field);
  if (v === undefined) return fallback;
  if (!/^\d{1,9}$/.test(v)) bad(field, `must be an integer from ${min} to ${max}, got '${v.slice(0, 40)}'`);
  const n = Number(v);
  if (n < min || n > max) bad(field, `must be an integer from ${min} to ${max}, got ${n}`);
  return n;
}

function text(query: Record<string, unknown>, field: string): string | undefined {
  const v = single(query, field);
  if (v === undefined || v === '') return undefined;
  if (v.length > MAX_QUERY_TEXT) bad(field, `must be at most ${MAX_QUERY_TEXT} characters`);
  return v;
}

function onlyKnown(query: Record<string, unknown>, known: readonly string[]): void {
  for (const k of Object.keys(query)) if (!known.includes(k)) bad(k, `unknown query parameter '${k.slice(0, 40)}' (known: ${known.join(', ')})`);
}

function page(query: Record<string, unknown>): Page {
  return { offset: integer(query, 'offset', 0, 1e9, 0), limit: integer(query, 'limit', 1, MAX_PAGE_LIMIT, DEFAULT_PAGE_LIMIT) };
}

export function parseTaskQuery(query: Record<string, unknown>): TaskQuery {
  onlyKnown(query, ['offset', 'limit', 'state', 'framework', 'agent', 'q', 'sort']);
  const out: TaskQuery = { ...page(query), sort: 'newest' };
  const state = text(query, 'state');
  if (state !== undefined) {
    const states = new Set<TaskState>();
    for (const raw of state.split(',')) {
      const s = raw.trim().toUpperCase();
      const name = (s.startsWith('TASK_') ? s : `TASK_${s}`) as TaskState;
      if (!(TASK_STATES as readonly string[]).includes(name)) bad('state', `'${raw.slice(0, 40)}' is not a task state (known: ${TASK_STATES.map((t) => t.replace(/^TASK_/, '')).join(', ')})`);
      states.add(name);
    }
    out.states = states;
  }
  const framework = text(query, 'framework');
  if (framework !== undefined) out.framework = framework;
  const agent = text(query, 'agent');
  if (agent !== undefined) out.agent = agent;
  const q = text(query, 'q');
  if (q !== undefined) out.q = q.toLowerCase();
  const sort = single(query, 'sort');
  if (sort !== undefined) {
    if (sort !== 'newest' && sort !== 'oldest') bad('sort', `must be newest or oldest, got '${sort.slice(0, 40)}'`);
    out.sort = sort;
  }
  return out;
}

export function parseAgentQuery(query: Record<string, unknown>): AgentQuery {
  onlyKnown(query, ['offset', 'limit', 'q']);
  const out: AgentQuery = page(query);
  const q = text(query, 'q');
  if (q !== undefined) out.q = q.toLowerCase();
  return out;
}

/**
 * Every task of one registry state, oldest first (by launch time, then id): kept across
 * requests instead of sorted again for each, and kept up to date as commands apply
 * (`followTaskOrder`: a launch is inserted in place, usually at the end; the oldest completed
 * tasks that retention drops are filtered out at the next read). Checked against the
 * registry's counts of applied launches and acknowledgements (the only commands that add or
 * drop tasks) and against the number of tasks, and built again whenever they disagree — so it
 * is never wrong, only sometimes rebuilt.
 */
interface TaskOrder {
  order: TaskRecord[];
  /** Beside `order`: each task's framework as an index into `frameworks` (read without touching the records). */
  fw: number[];
  frameworks: string[];
  fwIndex: Map<string, number>;
  launched: number;
  acked: number;
  size: number;
  /** Some records in `order` may have been dropped from the registry. */
  stale: boolean;
}

const orders = new WeakMap<RegistryStateMachine, TaskOrder>();

/** Launch time, then id: the oldest first. */
function older(a: TaskRecord, b: TaskRecord): number {
  return a.launchedAtMs - b.launchedAtMs || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
}

function appliedCount(registry: Registry, type: RegistryCommand['type']): number {
  return registry.applied.get(type) ?? 0;
}

function buildOrder(registry: Registry): TaskOrder {
  const sm = registry.state;
  const order = [...sm.tasks.values()].sort(older);
  const o: TaskOrder = { order, fw: [], frameworks: [], fwIndex: new Map(), launched: appliedCount(registry, 'task_launched'), acked: appliedCount(registry, 'status_acknowledged'), size: sm.tasks.size, stale: false };
  o.fw = order.map((t) => fwIndexOf(o, t.frameworkId));
  orders.set(sm, o);
  return o;
}

function fwIndexOf(o: TaskOrder, frameworkId: string): number {
  let i = o.fwIndex.get(frameworkId);
  if (i === undefined) {
    i = o.frameworks.length;
    o.frameworks.push(frameworkId);
    o.fwIndex.set(frameworkId, i);
  }
  return i;
}

/** The registry's tasks, oldest first, with their frameworks (shared: do not change them). */
function currentOrder(registry: Registry): TaskOrder {
  const sm = registry.state;
  let o = orders.get(sm);
  if (!o || o.launched !== appliedCount(registry, 'task_launched') || o.acked !== appliedCount(registry, 'status_acknowledged') || o.size !== sm.tasks.size) {
    o = buildOrder(registry);
  } else if (o.stale) {
    const order: TaskRecord[] = [];
    const fw: number[] = [];
    for (let i = 0; i < o.order.length; i++) {
      const t = o.order[i]!;
      if (sm.tasks.get(t.id) !== t) continue;
      order.push(t);
      fw.push(o.fw[i]!);
    }
    o.order = order;
    o.fw = fw;
    o.stale = false;
    if (o.order.length !== sm.tasks.size) o = buildOrder(registry);
  }
  return o;
}

/** The registry's tasks, oldest first (the array is shared: do not change it). */
export function tasksOldestFirst(registry: Registry): readonly TaskRecord[] {
  return currentOrder(registry).order;
}

/** Keeps the order of `registry`'s tasks current as commands apply (called once, at registration). */
export function followTaskOrder(registry: Registry): () => void {
  return registry.onApplied((cmd) => {
    const sm = registry.state;
    const o = orders.get(sm);
    if (!o) return;
    if (cmd.type === 'task_launched') {
      // In step until this command? Otherwise the next read builds it again.
      if (o.launched !== appliedCount(registry, 'task_launched') - 1 || o.acked !== appliedCount(registry, 'status_acknowledged')) {
        orders.delete(sm);
        return;
      }
      o.launched++;
      if (sm.tasks.size === o.size) return; // a launch of a task it already had: ignored
      const t = sm.tasks.get(cmd.task.id);
      if (!t || sm.tasks.size !== o.size + 1) {
        orders.delete(sm);
        return;
      }
      o.size++;
      // Where it goes: almost always at the end (launch times rise).
      let i = o.order.length;
      while (i > 0 && older(o.order[i - 1]!, t) > 0) i--;
      if (i === o.order.length) {
        o.order.push(t);
        o.fw.push(fwIndexOf(o, t.frameworkId));
      } else {
        o.order.splice(i, 0, t);
        o.fw.splice(i, 0, fwIndexOf(o, t.frameworkId));
      }
    } else if (cmd.type === 'status_acknowledged') {
      if (o.acked !== appliedCount(registry, 'status_acknowledged') - 1 || o.launched !== appliedCount(registry, 'task_launched')) {
        orders.delete(sm);
        return;
      }
      o.acked++;
      if (sm.tasks.size !== o.size) {
        o.stale = true;
        o.size = sm.tasks.size;
      }
    }
  });
}

/** A task's words that never change, lower-cased once: what `q` is looked for in (with its state). */
const fixedText = new WeakMap<TaskRecord, string>();

function matchesText(t: TaskRecord, q: string): boolean {
  let fixed = fixedText.get(t);
  if (fixed === undefined) {
    fixed = `${t.id}\n${t.name}\n${t.frameworkId}\n${t.agentId}`.toLowerCase();
    fixedText.set(t, fixed);
  }
  if (fixed.includes(q)) return true;
  const state = t.state.toLowerCase();
  // Only text with a line break can span the agent id and the state.
  return q.includes('\n') ? `${fixed}\n${state}`.includes(q) : state.includes(q);
}

/**
 * The page of tasks `viewer` may view that the query keeps. Walks the kept order (no sort),
 * counting what the filters keep, and builds views only for the tasks of the page.
 */
export function taskPage(ctx: MasterContext, viewer: Principal, query: TaskQuery): { total: number; offset: number; limit: number; tasks: TaskView[] } {
  const reg = ctx.registry.state;
  const o = currentOrder(ctx.registry);
  const { order, fw } = o;
  const n = order.length;
  const newest = query.sort === 'newest';
  const end = query.offset + query.limit;
  const filtered = query.states !== undefined || query.framework !== undefined || query.agent !== undefined || query.q !== undefined;
  // Whether the viewer may view each framework's tasks: 1 yes, 0 no, -1 per task (a built-in's
  // tasks: each app, job or experiment has its own owner). Asked once per framework.
  const byFw = o.frameworks.map((id) => {
    if (!ctx.auth.enabled || viewer.internal) return 1;
    const f = reg.frameworks.get(id);
    if (f && f.principal === BUILTIN_PRINCIPAL) return -1;
    return ctx.auth.mayActOn(viewer, 'view_tasks', f ? f.principal : '') ? 1 : 0;
  });
  const page: TaskView[] = [];
  // Each task of the page with its framework's name (the dashboard shows names, ids in titles).
  const view = (t: TaskRecord) => namedTaskView(t, reg.frameworks.get(t.frameworkId)?.name);
  if (!filtered && byFw.every((v) => v === 1)) {
    // Nothing hidden, nothing filtered: the page is a slice.
    for (let k = query.offset; k < Math.min(end, n); k++) page.push(view(order[newest ? n - 1 - k : k]!));
    return { total: n, offset: query.offset, limit: query.limit, tasks: page };
  }
  let total = 0;
  for (let k = 0; k < n; k++) {
    const i = newest ? n - 1 - k : k;
    const v = byFw[fw[i]!]!;
    if (v === 0) continue;
    // Unfiltered, a task of a framework the viewer sees is counted without reading its record.
    if (!filtered && v === 1 && (total < query.offset || total >= end)) {
      total++;
      continue;
    }
    const t = order[i]!;
    if (query.states && !query.states.has(t.state)) continue;
    if (query.framework !== undefined && t.frameworkId !== query.framework) continue;
    if (query.agent !== undefined && t.agentId !== query.agent) continue;
    if (query.q !== undefined && !matchesText(t, query.q)) continue;
    if (v === -1 && !ctx.auth.mayActOn(viewer, 'view_tasks', taskOwner(reg, t))) continue;
    if (total >= query.offset && total < end) page.push(view(t));
    total++;
  }
  return { total, offset: query.offset, limit: query.limit, tasks: page };
}

/** The page of agents the query keeps, by hostname. */
export function agentPage(ctx: MasterContext, query: AgentQuery): { total: number; offset: number; limit: number; agents: AgentView[] } {
  let agents = agentViews(ctx);
  if (query.q !== undefined) {
    const q = query.q;
    agents = agents.filter((a) => `${a.id}\n${a.hostname}\n${a.ip}\n${Object.entries(a.attributes ?? {}).map(([k, v]) => `${k}:${v}`).join('\n')}`.toLowerCase().includes(q));
  }
  agents.sort((a, b) => (a.hostname < b.hostname ? -1 : a.hostname > b.hostname ? 1 : a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  return { total: agents.length, offset: query.offset, limit: query.limit, agents: agents.slice(query.offset, query.offset + query.limit) };
}

export function registerPagedReads(app: FastifyInstance, ctx: MasterContext): void {
  followTaskOrder(ctx.registry);
  app.get<{ Querystring: Record<string, unknown> }>('/api/v1/tasks', async (req) => taskPage(ctx, req.principal, parseTaskQuery(req.query ?? {})));
  app.get<{ Querystring: Record<string, unknown> }>('/api/v1/agents', async (req) => agentPage(ctx, parseAgentQuery(req.query ?? {})));
}
