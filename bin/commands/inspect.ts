// The client commands: `cairn agents`, `tasks`, `state`, `members`, `logs`, `kill`. Each reads the
// master's REST API once (logs: until done) and exits 0, or prints why not and exits 1.

import type { MembersJson } from '../../shared/gossip/cluster.ts';
import type { AgentView, StateView, TaskView } from '../../shared/master-state.ts';
import { MasterClient } from '../../shared/sdk/master-client.ts';
import { clientTls } from './client-tls.ts';
import type { CliIo } from './io.ts';
import { followLogStream } from './log-relay.ts';
import type { KillOptions, LogsOptions, MasterClientCommandOptions, TeardownOptions } from './options.ts';
import { age, formatTable } from './table.ts';
import { findToken } from '../../shared/sdk/credentials.ts';

/** Pause before following a log again after its stream broke. */
const FOLLOW_RETRY_MS = 500;
/** How long a broken log stream is tried again: an agent restart or a master failover
 * takes seconds; an agent gone for good should not keep `cairn logs` waiting forever. */
const FOLLOW_GIVE_UP_MS = 60_000;

async function withMaster(name: string, o: MasterClientCommandOptions, io: CliIo, body: (client: MasterClient) => Promise<void>): Promise<number> {
  try {
    await body(new MasterClient(o.masterUrl, { token: findToken(o.masterUrl, io.env), tls: clientTls(o.tls) }));
    return 0;
  } catch (err) {
    io.stderr.write(`cairn ${name}: ${err instanceof Error ? err.message : String(err)}\n`);
    return 1;
  }
}

export function agentsTable(state: StateView, nowMs: number): string {
  const rows = state.agents.map((a: AgentView) => [
    a.id,
    a.hostname,
    a.reachable ? 'reachable' : 'unreachable',
    a.resources,
    a.used || '-',
    Object.entries(a.attributes).map(([k, v]) => `${k}:${v}`).join(';') || '-',
    age(a.registeredAtMs, nowMs),
  ]);
  return formatTable(['ID', 'HOSTNAME', 'STATUS', 'RESOURCES', 'USED', 'ATTRIBUTES', 'AGE'], rows);
}

export function tasksTable(state: StateView, nowMs: number): string {
  const agents = new Map(state.agents.map((a) => [a.id, a.hostname]));
  const frameworks = new Map(state.frameworks.map((f) => [f.id, f.name]));
  const rows = state.tasks.map((t: TaskView) => [
    t.id,
    t.state.replace(/^TASK_/, ''),
    t.exitCode === undefined ? '-' : String(t.exitCode),
    agents.get(t.agentId) ?? t.agentId,
    frameworks.get(t.frameworkId) || t.frameworkId,
    t.resources,
    age(t.launchedAtMs, nowMs),
  ]);
  return formatTable(['ID', 'STATE', 'EXIT', 'AGENT', 'FRAMEWORK', 'RESOURCES', 'AGE'], rows);
}

/** The gossip view: one row per member; the metadata other than the API URL as key=value. */
export function membersTable(view: MembersJson): string {
  const rows = view.members.map((m) => [
    m.name === view.self ? `${m.name} *` : m.name,
    m.role,
    m.state,
    m.address,
    String(m.incarnation),
    m.meta.api ?? '-',
    Object.entries(m.meta).filter(([k]) => k !== 'api').map(([k, v]) => `${k}=${v === '' ? '-' : v}`).join(' ') || '-',
  ]);
  return formatTable(['NAME', 'ROLE', 'STATE', 'ADDRESS', 'INCARNATION', 'API', 'METADATA'], rows);
}

export function runMembers(o: MasterClientCommandOptions, io: CliIo): Promise<number> {
  return withMaster('members', o, io, async (client) => {
    io.stdout.write(membersTable(await client.members()));
  });
}

export function runAgents(o: MasterClientCommandOptions, io: CliIo): Promise<number> {
  return withMaster('agents', o, io, async (client) => {
    io.stdout.write(agentsTable(await client.state(), Date.now()));
  });
}

export function runTasks(o: MasterClientCommandOptions, io: CliIo): Promise<number> {
  return withMaster('tasks', o, io, async (client) => {
    io.stdout.write(tasksTable(await client.state(), Date.now()));
  });
}

export function runState(o: MasterClientCommandOptions, io: CliIo): Promise<number> {
  return withMaster('state', o, io, async (client) => {
    io.stdout.write(`${JSON.stringify(await client.state(), null, 2)}\n`);
  });
}

export function runLogs(o: LogsOptions, io: CliIo): Promise<number> {
  const out = o.stream === 'stdout' ? io.stdout : io.stderr;
  return withMaster('logs', o, io, async (client) => {
    if (o.follow) {
      // Streamed until the master says eof: the task ended and everything was read. A
      // stream that breaks is followed again from where it stopped.
      await followLogStream({
        source: { followLogs: (id, stream, offset) => client.followLogs(id, stream, offset) },
        taskId: o.taskId,
        stream: o.stream,
        write: (text) => void out.write(text),
        retryDelayMs: FOLLOW_RETRY_MS,
        giveUpMs: FOLLOW_GIVE_UP_MS,
        now: Date.now,
        sleep: (ms) => new Promise((r) => setTimeout(r, ms)),
      });
      return;
    }
    // What there is now: read until a read brings nothing more.
    let offset = 0;
    for (;;) {
      const chunk = await client.logs(o.taskId, o.stream, offset);
      out.write(chunk.data);
      if (chunk.eof || chunk.data === '' || chunk.nextOffset <= offset) return;
      offset = chunk.nextOffset;
    }
  });
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
  });
}
