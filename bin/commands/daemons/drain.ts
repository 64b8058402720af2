// `cairn agent drain HOST` and `cairn agent undrain HOST`: maintenance of one host through
// the master. HOST is an agent id, host name or address as `cairn agents` lists them.

import type { AgentView } from '../../../shared/master-state.ts';
import { MasterClient } from '../../../shared/sdk/master-client.ts';
import { clientTls } from '../common/client-tls.ts';
import type { CliIo } from '../common/io.ts';
import type { DrainOptions } from './options.ts';
import { findToken } from '../../../shared/sdk/credentials.ts';
import { exitCodeOf } from '../common/exit-codes.ts';

/** The one agent `host` names (id first, then host name or IP); throws when none or several match. */
export function findAgent(agents: readonly AgentView[], host: string): AgentView {
  const byId = agents.find((a) => a.id === host);
  if (byId) return byId;
  const matches = agents.filter((a) => a.hostname === host || a.ip === host);
  if (matches.length === 1) return matches[0]!;
  if (matches.length === 0) throw new Error(`no agent '${host}' (give an agent id, host name or address from 'cairn agents')`);
  throw new Error(`'${host}' names ${matches.length} agents (${matches.map((a) => a.id).join(', ')}); give the agent id`);
}

export async function runDrain(o: DrainOptions, io: CliIo): Promise<number> {
  const verb = o.undrain ? 'undrain' : 'drain';
  try {
    const client = new MasterClient(o.masterUrl, { token: findToken(o.masterUrl, io.env), tls: clientTls(o.tls) });
    const agent = findAgent((await client.state()).agents, o.host);
    if (o.undrain) {
      await client.undrainAgent(agent.id);
      io.stdout.write(`agent ${agent.hostname} (${agent.id}) is offered again\n`);
    } else {
      const r = await client.drainAgent(agent.id, o.deadlineMs);
      const until = r.draining.deadlineAtMs === null ? 'until they finish' : `until ${new Date(r.draining.deadlineAtMs).toISOString()}, then are killed`;
      io.stdout.write(`draining agent ${agent.hostname} (${agent.id}): no new tasks; running ones go on ${until}\n`);
    }
    return 0;
  } catch (err) {
    io.stderr.write(`cairn agent ${verb}: ${err instanceof Error ? err.message : String(err)}\n`);
    return exitCodeOf(err);
  }
}
