// Replicated masters in the test's own process, on loopback ports: for tests that need the
// masters' handles (their Raft status) rather than separate processes.

import { join } from 'node:path';
import { startMaster, type MasterHandle, type MasterOptions } from '../../master/server.ts';
import { silentLogger } from '../../shared/logger.ts';
import { freePort } from './processes.ts';
import { MasterAuth } from '../../master/auth/master-auth.ts';

type RaftExtra = Omit<NonNullable<Parameters<typeof startMaster>[0]['raft']>, 'id' | 'members' | 'secret'>;

/** Starts `n` masters (ids 1..n, data under `dir/m<id>`, no DNS) founding one group; `extra`: more options for each. */
export async function startMasterGroup(dir: string, n: number, secret: string, raft: RaftExtra = {}, extra: Partial<MasterOptions> = {}): Promise<MasterHandle[]> {
  const ports = await Promise.all(Array.from({ length: n }, () => freePort()));
  const members = new Map(ports.map((p, i) => [i + 1, `http://127.0.0.1:${p}`] as [number, string]));
  return Promise.all(ports.map((port, i) =>
    startMaster({ ...extra, auth: MasterAuth.off(), port, host: '127.0.0.1', dataDir: join(dir, `m${i + 1}`), logger: silentLogger(), dnsPort: null, raft: { ...raft, id: i + 1, members, secret } }),
  ));
}
