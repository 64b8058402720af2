// The client commands: `cairn agents`, `tasks`, `task ID`, `state`, `members`, `logs`, `kill`.
// Each reads the master's REST API once (logs: until done) and exits 0, or prints why not
// (with a hint where one helps: ../common/hints.ts) and exits 1.

import type { MembersJson } from '../../../shared/gossip/cluster.ts';
import type { AgentView, StateView, TaskView } from '../../../shared/master-state.ts';
import { MasterClient } from '../../../shared/sdk/master-client.ts';
import { MasterHttpError } from '../../../shared/sdk/http-error.ts';
import type { TlsClient } from '../../../shared/tls.ts';
import { clientTls } from '../common/client-tls.ts';
import { agentUrlHint, didYouMean, isAgentHealth, isUnreachable, unreachableHint } from '../common/hints.ts';
import type { CliIo } from '../common/io.ts';
import type { ListOptions, MasterClientCommandOptions } from '../common/options.ts';
import { printTaskLog } from '../common/log-relay.ts';
import type { KillOptions, LogsOptions, TaskOptions, TasksOptions, TeardownOptions } from './options.ts';
import { formatObjects, printList } from '../common/output.ts';
import { age, formatTable } from '../common/table.ts';
import { describeTask, exitCell, selectTasks, usageCell, type TaskUsageRead } from './task-format.ts';
import { findToken } from '../../../shared/sdk/credentials.ts';
import { exitCodeOf } from '../common/exit-codes.ts';

/** How long the look behind a hint (an agent's /health, the task list) may take. */
const HINT_TIMEOUT_MS = 3000;

/** What an error is about, for its hint: a task id that may be mistyped. */
interface HintContext {
  taskId?: string;
}

async function withMaster(name: string, o: MasterClientCommandOptions, io: CliIo, body: (client: MasterClient) => Promise<void>, context: HintContext = {}): Promise<number> {
  const tls = clientTls(o.tls);
  const client = new MasterClient(o.masterUrl, { token: findToken(o.masterUrl, io.env), tls });
  try {
    await body(client);
    return 0;
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    const hint = await hintFor(err, client, tls, context).catch(() => undefined);
    io.stderr.write(`cairn ${name}: ${message}${hint?.text ? ` — ${hint.text}` : ''}\n`);
    // An agent's URL given for the master's: its 401 is no verdict on the credential.
    return hint?.notAMaster ? 1 : exitCodeOf(err);
  }
}

/** The hint for a failed command, looking where needed (the URL's /health, the task ids). */
async function hintFor(err: unknown, client: MasterClient, tls: TlsClient | undefined, context: HintContext): Promise<{ text: string | undefined; notAMaster?: true } | undefined> {
  const message = err instanceof Error ? err.message : String(err);
  if (isUnreachable(message)) return { text: unreachableHint(client.masterUrls.join(',')) };
  if (!(err instanceof MasterHttpError)) return undefined;
  if (err.code === 'CAIRN_UNKNOWN_TASK' && context.taskId !== undefined) {
    const state = await client.state();
    return { text: didYouMean(context.taskId, state.tasks.map((t) => t.id)) };
  }
  if (err.status === 404 || err.status === 401) {
    // An agent answers its own paths only to masters (401) and has no master routes (404).
    const res = await (tls?.fetch ?? fetch)(`${client.baseUrl}/health`, { signal: AbortSignal.timeout(HINT_TIMEOUT_MS) });
    const body: unknown = await res.json();
    if (isAgentHealth(body)) return { text: agentUrlHint(client.baseUrl, (body as { agentId: string | null }).agentId), notAMaster: true };
  }
  return undefined;
}

/** An agent's state in one word: draining (an operator's drain, whatever its link), unreachable, reachable. */
export function agentStatus(a: Pick<AgentView, 'reachable' | 'draining'>): string {
  if (!a.reachable) return a.draining ? 'unreachable,draining' : 'unreachable';
  return a.draining ? 'draining' : 'reachable';
}

export function agentsTable(state: StateView, nowMs: number, wide = false): string {
  const rows = state.agents.map((a: AgentView) => [
    a.id,
    a.hostname,
    agentStatus(a),
    a.resources,
    a.used || '-',
    Object.entries(a.attributes).map(([k, v]) => `${k}:${v}`).join(';') || '-',
    age(a.registeredAtMs, nowMs),
    ...(wide ? [
      a.url,
      a.connected ? 'yes' : 'no',
      a.offered || '-',
      usageCell(a.usage),
      a.draining ? (a.draining.deadlineAtMs === null ? 'none' : new Date(a.draining.deadlineAtMs).toISOString()) : '-',
      a.isolation || '-',
    ] : []),
  ]);
  const headers = ['ID', 'HOSTNAME', 'STATUS', 'RESOURCES', 'USED', 'ATTRIBUTES', 'AGE'];
  return formatTable(wide ? [...headers, 'URL', 'CONNECTED', 'OFFERED', 'USAGE', 'DRAIN DEADLINE', 'ISOLATION'] : headers, rows);
}

/** The tasks of `state` (or `tasks`, a selection of them) as a table; EXIT as the shell sees it, with why it ended. */
export function tasksTable(state: StateView, nowMs: number, wide = false, tasks: readonly TaskView[] = state.tasks): string {
  const agents = new Map(state.agents.map((a) => [a.id, a.hostname]));
  const frameworks = new Map(state.frameworks.map((f) => [f.id, f.name]));
  const rows = tasks.map((t: TaskView) => [
    t.id,
    t.state.replace(/^TASK_/, ''),
    exitCell(t),
    agents.get(t.agentId) ?? t.agentId,
    // The name, also of a framework gone since (the master keeps it); the id where it has none.
    t.frameworkName || frameworks.get(t.frameworkId) || t.frameworkId,
    t.resources,
    age(t.launchedAtMs, nowMs),
    ...(wide ? [t.name, t.agentId, t.frameworkId, t.reason ?? '-', age(t.updatedAtMs, nowMs), t.message || '-'] : []),
  ]);
  const headers = ['ID', 'STATE', 'EXIT', 'AGENT', 'FRAMEWORK', 'RESOURCES', 'AGE'];
  return formatTable(wide ? [...headers, 'NAME', 'AGENT ID', 'FRAMEWORK ID', 'REASON', 'UPDATED', 'MESSAGE'] : headers, rows);
}

/** The gossip view: one row per member; the metadata other than the API URL as key=value. */
export function membersTable(view: MembersJson, wide = false): string {
  const metaKeys = wide ? [...new Set(view.members.flatMap((m) => Object.keys(m.meta)))].filter((k) => k !== 'api').sort() : [];
  const rows = view.members.map((m) => [
    m.name === view.self ? `${m.name} *` : m.name,
    m.role,
    m.state,
    m.address,
    String(m.incarnation),
    m.meta.api ?? '-',
    // Wide: one column per metadata key; otherwise key=value pairs in one.
    ...(wide
      ? metaKeys.map((k) => (m.meta[k] === undefined || m.meta[k] === '' ? '-' : m.meta[k]!))
      : [Object.entries(m.meta).filter(([k]) => k !== 'api').map(([k, v]) => `${k}=${v === '' ? '-' : v}`).join(' ') || '-']),
  ]);
  return formatTable(['NAME', 'ROLE', 'STATE', 'ADDRESS', 'INCARNATION', 'API', ...(wide ? metaKeys.map((k) => k.toUpperCase()) : ['METADATA'])], rows);
}

export function runMembers(o: ListOptions, io: CliIo): Promise<number> {
  return withMaster('members', o, io, async (client) => {
    const view = await client.members();
    io.stdout.write(o.output === 'json' || o.output === 'yaml' ? formatObjects(o.output, view) : membersTable(view, o.output === 'wide'));
  });
}

export function runAgents(o: ListOptions & { agent?: string }, io: CliIo): Promise<number> {
  return withMaster('agents', o, io, async (client) => {
    const state = await client.state();
    if (o.agent !== undefined) {
      const agent = state.agents.find((a) => a.id === o.agent || a.hostname === o.agent);
      if (agent === undefined) {
        const hint = didYouMean(o.agent, state.agents.flatMap((a) => [a.id, a.hostname]));
        throw new Error(`no agent ${o.agent}${hint ? ` — ${hint}` : ''}`);
      }
      io.stdout.write(o.output === 'json' || o.output === 'yaml' ? formatObjects(o.output, agent) : describeAgent(agent, state, Date.now()));
      return;
    }
    printList(io, o.output, state.agents, () => agentsTable(state, Date.now(), o.output === 'wide'));
  });
}

/** `cairn agents ID`: one agent, described as `cairn task ID` describes a task. */
export function describeAgent(a: AgentView, state: StateView, nowMs: number): string {
  const running = state.tasks.filter((t) => t.agentId === a.id && (t.state === 'TASK_RUNNING' || t.state === 'TASK_STARTING' || t.state === 'TASK_STAGING'));
  const rows: [string, string][] = [
    ['ID', a.id], ['Hostname', a.hostname], ['URL', a.url], ['Status', agentStatus(a)], ['Connected', a.connected ? 'yes' : 'no'],
    ['Resources', a.resources], ['Used', a.used || '-'], ['Offered', a.offered || '-'], ['Usage', usageCell(a.usage)],
    ['Attributes', Object.entries(a.attributes).map(([k, v]) => `${k}:${v}`).join(';') || '-'],
    ['Isolation', a.isolation || '-'], ['Registered', `${age(a.registeredAtMs, nowMs)} ago`],
    ['Tasks', running.length === 0 ? 'none running' : running.map((t) => t.id).join(', ')],
  ];
  return rows.map(([k, v]) => `${`${k}:`.padEnd(12)}${v}\n`).join('');
}

/** `cairn tasks`: filtered, newest first, cut at the limit; a line on stderr says how many more there are. */
export function runTasks(o: TasksOptions, io: CliIo): Promise<number> {
  return withMaster('tasks', o, io, async (client) => {
    const state = await client.state();
    const { tasks, more } = selectTasks(state, {
      limit: o.limit,
      ...(o.states ? { states: o.states } : {}),
      ...(o.framework !== undefined ? { framework: o.framework } : {}),
      ...(o.agent !== undefined ? { agent: o.agent } : {}),
    });
    printList(io, o.output, tasks, () => tasksTable(state, Date.now(), o.output === 'wide', tasks));
    if (more > 0) io.stderr.write(`${more} more task${more === 1 ? '' : 's'} not shown (--limit ${o.limit}; --limit 0 shows all)\n`);
  });
}

/** `cairn task ID`: one task described — states with reasons, agent, resources, usage, sandbox. */
export function runTask(o: TaskOptions, io: CliIo): Promise<number> {
  return withMaster('task', o, io, async (client) => {
    const task = await client.task(o.taskId);
    if (o.output) {
      io.stdout.write(formatObjects(o.output, task));
      return;
    }
    const [state, usage] = await Promise.all([
      client.state(),
      // Usage is the agent's word on a running task; an ended task, or an agent gone, has none.
      client.taskUsage(o.taskId).then(
        (u) => ({ usage: u as TaskUsageRead }),
        (err: unknown) => ({ none: err instanceof MasterHttpError && err.status === 404 ? 'none (the task is not running)' : `unavailable: ${(err as Error).message}` }),
      ),
    ]);
    const agent = state.agents.find((a) => a.id === task.agentId);
    const framework = state.frameworks.find((f) => f.id === task.frameworkId);
    io.stdout.write(describeTask({
      task,
      usage,
      ...(agent ? { agent: { id: agent.id, hostname: agent.hostname, url: agent.url } } : {}),
      ...(framework ? { framework: { id: framework.id, name: framework.name } } : {}),
    }));
  }, { taskId: o.taskId });
}

export function runState(o: MasterClientCommandOptions, io: CliIo): Promise<number> {
  return withMaster('state', o, io, async (client) => {
    io.stdout.write(`${JSON.stringify(await client.state(), null, 2)}\n`);
  });
}

export function runLogs(o: LogsOptions, io: CliIo): Promise<number> {
  const out = o.stream === 'stdout' ? io.stdout : io.stderr;
  return withMaster('logs', o, io, async (client) => {
    await printTaskLog(client, o.taskId, o.stream, o.follow, (text) => void out.write(text), {
      ...(o.tail !== undefined ? { tail: o.tail } : {}),
      ...(o.timestamps ? { timestamps: true } : {}),
      ...(o.sinceMs !== undefined ? { sinceMs: o.sinceMs } : {}),
    });
  }, { taskId: o.taskId });
}

export function runTeardown(o: TeardownOptions, io: CliIo): Promise<number> {
  return withMaster('teardown', o, io, async (client) => {
    await client.teardown(o.frameworkId);
    io.stdout.write(`framework ${o.frameworkId} torn down\n`);
  });
}

export function runKill(o: KillOptions, io: CliIo): Promise<number> {
  return withMaster('kill', o, io, async (client) => {
    await client.kill(o.taskId);
    io.stdout.write(`killing ${o.taskId}\n`);
  }, { taskId: o.taskId });
}
