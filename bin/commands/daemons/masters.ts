// `cairn masters`: the replicated masters' membership (GET /api/v1/masters) and changes to
// it — add a master, replace one, remove one (POST and DELETE there). Any master answers;
// a follower sends changes on to the leader (fetch follows its 307).

import { MasterClient } from '../../../shared/sdk/master-client.ts';
import { clientTls } from '../common/client-tls.ts';
import type { MastersView } from '../../../shared/masters-view.ts';
import type { CliIo } from '../common/io.ts';
import type { MastersOptions } from './options.ts';
import { formatTable } from '../common/table.ts';
import type { OutputOption } from '../common/options.ts';
import { formatObjects } from '../common/output.ts';
import { findToken } from '../../../shared/sdk/credentials.ts';
import { exitCodeOf } from '../common/exit-codes.ts';

/** An add waits for the new master to catch up (the leader gives it 60 s) before it is promoted. */
const CHANGE_TIMEOUT_MS = 90_000;
const LIST_TIMEOUT_MS = 10_000;

/** One row per member; `*` marks the leader, ROLE/TERM/APPLIED are each member's own word ('-': it did not answer). */
export function mastersTable(view: MastersView, wide = false): string {
  const rows = view.masters.map((m) => [
    m.leader ? `${m.id} *` : String(m.id),
    m.url || '-',
    m.voter ? 'voter' : 'learner',
    m.reachable ? m.role ?? '-' : 'unreachable',
    m.term === undefined ? '-' : String(m.term),
    m.applied === undefined ? '-' : String(m.applied),
    // Wide: the leader's view of each member (only when the answering master leads).
    ...(wide ? [m.match === undefined ? '-' : String(m.match), m.active === undefined ? '-' : m.active ? 'yes' : 'no', m.self ? 'yes' : 'no'] : []),
  ]);
  const headers = ['ID', 'URL', 'MEMBER', 'ROLE', 'TERM', 'APPLIED'];
  return formatTable(wide ? [...headers, 'MATCH', 'ACTIVE', 'ANSWERED'] : headers, rows);
}

export async function runMasters(o: MastersOptions & OutputOption, io: CliIo): Promise<number> {
  try {
    const client = new MasterClient(o.masterUrl, { timeoutMs: LIST_TIMEOUT_MS, token: findToken(o.masterUrl, io.env), tls: clientTls(o.tls) });
    const view =
      o.action === 'list' ? await client.masters()
      : o.action === 'add' ? await client.addMaster(o.id, o.url, o.replaces, CHANGE_TIMEOUT_MS)
      : await client.removeMaster(o.id, CHANGE_TIMEOUT_MS);
    if (o.action === 'add') io.stdout.write(o.replaces !== undefined ? `master ${o.id} replaced master ${o.replaces}\n` : `master ${o.id} added as a voter\n`);
    if (o.action === 'remove') io.stdout.write(`master ${o.id} removed\n`);
    if (o.output === 'json' || o.output === 'yaml') io.stdout.write(formatObjects(o.output, view));
    else io.stdout.write(mastersTable(view, o.output === 'wide'));
    return 0;
  } catch (err) {
    const e = err as Error & { code?: string };
    io.stderr.write(`cairn masters: ${e.message}${e.code?.startsWith('CAIRN_') ? ` (${e.code})` : ''}\n`);
    return exitCodeOf(err);
  }
}
