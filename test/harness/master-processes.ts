// Replicated masters as real processes on loopback, for tests that kill one (SIGKILL) and
// watch the rest carry on: three `cairn master` processes founding one group, sharing one
// secret file, each with its data under `base/m<id>`; and a wait for whichever one leads.

import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { authFetch } from './credentials.ts';
import { chmodSync } from 'node:fs';
import { freePort, startAgentProcess, startCairn, waitFor, type CairnProcess, type Cleanup } from './processes.ts';

export interface MasterMember {
  readonly id: number;
  readonly url: string;
  readonly dataDir: string;
  proc: CairnProcess | undefined;
}

/** A master's role as it reports it; undefined when it does not answer (killed, starting). */
export async function masterRole(url: string): Promise<string | undefined> {
  try {
    const r = await authFetch(`${url}/api/v1/state`, { signal: AbortSignal.timeout(2000) });
    return (await r.json()).master.role;
  } catch {
    return undefined;
  }
}

/** Starts `n` master processes (ids 1..n) founding one group; each is healthy when this resolves. */
export async function startMasterProcesses(cleanup: Cleanup, base: string, n = 3): Promise<MasterMember[]> {
  const secretFile = join(base, 'secret');
  writeFileSync(secretFile, 'a-test-secret-of-enough-bytes\n');
  const ports = await Promise.all(Array.from({ length: n }, () => freePort()));
  const members: MasterMember[] = ports.map((p, i) => ({ id: i + 1, url: `http://127.0.0.1:${p}`, dataDir: join(base, `m${i + 1}`), proc: undefined }));
  await Promise.all(members.map((m) => startMemberProcess(cleanup, base, members, m)));
  return members;
}

/** Starts member `m` of a group made by startMasterProcesses (again, once it was killed), with the flags it had; resolves once healthy. */
export async function startMemberProcess(cleanup: Cleanup, base: string, members: readonly MasterMember[], m: MasterMember): Promise<void> {
  const peers = members.map((p) => `${p.id}=${p.url}`).join(',');
  m.proc = cleanup.track(startCairn(['master', '--id', String(m.id), '--peers', peers, '--secret-file', join(base, 'secret'), '--port', new URL(m.url).port, '--host', '127.0.0.1', '--data-dir', m.dataDir, '--dns-port', '0', '--ping-interval', '500ms'], m.url));
  await m.proc.waitHealthy();
}

/**
 * A GET of `path` on one master, its JSON when it answers 200; undefined when it answers
 * otherwise or not at all (killed, starting, not leading yet), for tests that poll.
 */
export async function getFromMaster<T>(url: string, path: string): Promise<T | undefined> {
  try {
    const r = await authFetch(`${url}${path}`, { signal: AbortSignal.timeout(2000) });
    return r.status === 200 ? ((await r.json()) as T) : undefined;
  } catch {
    return undefined;
  }
}

/** The member of `among` that leads, once one does. */
export function waitForLeaderProcess(among: readonly MasterMember[]): Promise<MasterMember> {
  return waitFor('a leader', async () => {
    for (const m of among) if ((await masterRole(m.url)) === 'leader') return m;
    return undefined;
  }, 30_000, 50);
}

/**
 * A cluster to kill a leader in: three master processes with their data under a fresh
 * directory (writable by the agent's task user, for files a test's tasks wait on), the one
 * that leads, and an agent with `resources` that knows all three.
 */
export async function startFailoverCluster(cleanup: Cleanup, prefix: string, resources: string): Promise<{ base: string; members: MasterMember[]; lead: MasterMember }> {
  const base = cleanup.dir(prefix);
  chmodSync(base, 0o777);
  const members = await startMasterProcesses(cleanup, base);
  const lead = await waitForLeaderProcess(members);
  await startAgentProcess(cleanup, members.map((m) => m.url).join(','), { resources });
  return { base, members, lead };
}
