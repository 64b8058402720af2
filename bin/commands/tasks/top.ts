// `cairn top`: a live table of what running tasks use, refreshed every 2 s. The task list
// comes from the master (`GET /api/v1/state`); each agent's usage from the master's proxy
// (`GET /api/v1/agents/:id/usage`) where the master has one, else straight from the agent's
// own endpoint (`<agent url>/api/v1/usage`), as the agent URLs in the state name them.

import type { AgentView, StateView } from '../../../shared/master-state.ts';
import { MasterClient } from '../../../shared/sdk/master-client.ts';
import type { TlsClient } from '../../../shared/tls.ts';
import { clientTls } from '../common/client-tls.ts';
import type { AgentUsage, TaskUsage } from '../../../shared/agent-usage.ts';
import { untilInterrupted, type CliIo } from '../common/io.ts';
import type { TopOptions } from './options.ts';
import { formatTable } from '../common/table.ts';
import { findToken } from '../../../shared/sdk/credentials.ts';

const MIB = 1024 * 1024;
/** One agent's usage read may take this long before its row says so. */
const AGENT_TIMEOUT_MS = 1500;

export type AgentUsageRead = { usage: AgentUsage } | { error: string };

function mib(bytes: number): string {
  return `${Math.round(bytes / MIB)}`;
}

function cpuCell(u: TaskUsage): string {
  return u.cpusUsed === null ? `-/${u.cpusLimit}` : `${u.cpusUsed.toFixed(2)}/${u.cpusLimit}`;
}

function gpuCell(u: TaskUsage): string {
  if (u.gpus.length === 0) return '-';
  return u.gpus.map((g) => `${g.index}:${g.utilizationPercent === null ? '?' : `${g.utilizationPercent}%`}`).join(' ');
}

/** The frame `cairn top` prints (pure): a task table, then one line per agent. */
export function topFrame(state: StateView, usages: ReadonlyMap<string, AgentUsageRead>, nowMs: number): string {
  const agents = new Map(state.agents.map((a) => [a.id, a]));
  const running = state.tasks.filter((t) => t.state === 'TASK_RUNNING' || t.state === 'TASK_STARTING' || t.state === 'TASK_STAGING');
  const rows = running.map((t) => {
    const read = usages.get(t.agentId);
    const u = read && 'usage' in read ? read.usage.tasks.find((x) => x.taskId === t.id) : undefined;
    return [
      t.id,
      agents.get(t.agentId)?.hostname ?? t.agentId,
      t.state.replace(/^TASK_/, ''),
      u ? cpuCell(u) : '-',
      u ? `${mib(u.memoryBytes)}/${mib(u.memoryLimitBytes)}` : '-',
      u ? gpuCell(u) : '-',
    ];
  });
  const tasks = formatTable(['TASK', 'AGENT', 'STATE', 'CPUS USED/LIMIT', 'MEM MIB USED/LIMIT', 'GPU UTIL'], rows);
  const agentRows = state.agents.map((a: AgentView) => {
    const read = usages.get(a.id);
    if (!a.reachable) return [a.hostname, 'unreachable', '-', '-', '-', '-'];
    if (!read) return [a.hostname, 'reachable', '-', '-', '-', '-'];
    if ('error' in read) return [a.hostname, `usage unavailable: ${read.error}`, '-', '-', '-', '-'];
    const t = read.usage.total;
    const bad = read.usage.unhealthyGpus.map((g) => g.index);
    const gpus = read.usage.gpus.length === 0 ? '-' : `${read.usage.gpus.map((g) => (g.utilizationPercent === null ? '?' : `${g.utilizationPercent}%`)).join(' ')}${bad.length ? ` (out of service: ${bad.join(',')})` : ''}`;
    const age = Math.max(0, Math.round((nowMs - read.usage.timestampMs) / 1000));
    return [a.hostname, `sampled ${age}s ago`, String(t.tasks), `${t.cpusUsed.toFixed(2)}/${t.cpusLimit}`, `${mib(t.memoryBytes)}/${mib(t.memoryLimitBytes)}`, gpus];
  });
  const agentsTable = formatTable(['AGENT', 'USAGE', 'TASKS', 'CPUS USED/LIMIT', 'MEM MIB USED/LIMIT', 'GPU UTIL'], agentRows);
  return `${tasks}\n${agentsTable}`;
}

async function fetchJson(url: string, token?: string, dial: typeof fetch = fetch): Promise<unknown> {
  const r = await dial(url, { headers: { accept: 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) }, signal: AbortSignal.timeout(AGENT_TIMEOUT_MS) });
  if (!r.ok) throw new Error(`HTTP ${r.status}`);
  return r.json();
}

/** One agent's usage: through the master when it proxies, else from the agent itself. */
export async function readAgentUsage(masterUrl: string, agent: AgentView, token?: string, tls?: TlsClient): Promise<AgentUsageRead> {
  try {
    return { usage: (await fetchJson(`${masterUrl}/api/v1/agents/${encodeURIComponent(agent.id)}/usage`, token, tls?.fetch)) as AgentUsage };
  } catch {
    // The master does not proxy usage (or failed to): ask the agent.
  }
  try {
    return { usage: (await fetchJson(`${agent.url}/api/v1/usage`, undefined, tls?.fetch)) as AgentUsage };
  } catch (err) {
    return { error: err instanceof Error ? err.message : String(err) };
  }
}

export async function runTop(o: TopOptions, io: CliIo): Promise<number> {
  const tls = clientTls(o.tls);
  const client = new MasterClient(o.masterUrl, { timeoutMs: 5000, token: findToken(o.masterUrl, io.env), tls });
  const loop = untilInterrupted(io);
  try {
    for (let frame = 0; !loop.stopped(); frame++) {
      let text: string;
      try {
        const state = await client.state();
        const reads = await Promise.all(state.agents.filter((a) => a.reachable).map(async (a) => [a.id, await readAgentUsage(client.baseUrl, a, findToken(o.masterUrl, io.env), tls)] as const));
        text = topFrame(state, new Map(reads), Date.now());
      } catch (err) {
        if (o.once) {
          io.stderr.write(`cairn top: ${err instanceof Error ? err.message : String(err)}\n`);
          return 1;
        }
        text = `cairn top: ${err instanceof Error ? err.message : String(err)}\n`;
      }
      // On a terminal each frame replaces the last; piped, frames follow one another.
      io.stdout.write(o.clear ? `\x1b[H\x1b[2J${text}` : `${frame > 0 ? '\n' : ''}${text}`);
      if (o.once) return 0;
      await loop.sleep(o.intervalMs);
    }
    return 0;
  } finally {
    loop.dispose();
  }
}
