// Completion of ids and names (`cairn task <Tab>`, `cairn job wait <Tab>`): which argument of
// which command names which kind of object, and the hidden `cairn __complete KIND` the
// completion scripts call for them, which asks the master. A shell waits on it at every Tab,
// so it gives up after a short time and fails silently: no master, no candidates, no noise.

import type { TlsFiles } from '../../../shared/tls.ts';
import { findToken } from '../../../shared/sdk/credentials.ts';
import { clientTls } from '../common/client-tls.ts';
import type { CliIo } from '../common/io.ts';
import { KINDS } from './kinds.ts';

/** How long a Tab may wait for the master. */
export const COMPLETE_TIMEOUT_MS = 1500;

/** The first argument of these commands is an object of that kind. */
export const ID_ARGUMENTS: Readonly<Record<string, string>> = {
  task: 'tasks', logs: 'tasks', kill: 'tasks', attach: 'tasks',
  agents: 'agents', 'agent drain': 'agents', 'agent undrain': 'agents',
  'job show': 'jobs', 'job wait': 'jobs', 'job delete': 'jobs', 'job logs': 'jobs',
  'app show': 'apps', 'app tasks': 'apps', 'app scale': 'apps', 'app restart': 'apps', 'app delete': 'apps',
  'tune show': 'experiments', 'tune best': 'experiments', 'tune stop': 'experiments', 'tune resume': 'experiments', 'tune delete': 'experiments', 'tune logs': 'experiments',
};

/** The kinds `get`/`describe` complete, and which of them have ids to complete. */
export const COMPLETED_KINDS = ['tasks', 'agents', 'jobs', 'apps', 'experiments'] as const;

/** The kind of the argument at `position` (0: the first) of the command at `path`; `first` is the first argument typed. */
export function idKindAt(path: string, position: number, first: string | undefined): string | undefined {
  if (path === 'get' || path === 'describe') {
    if (position === 0) return 'kinds';
    if (position === 1 && first !== undefined) return KINDS.find((k) => k.names.includes(first.toLowerCase()))?.names[0];
    return undefined;
  }
  return position === 0 ? ID_ARGUMENTS[path] : undefined;
}

export interface CompleteIdsOptions {
  kind: string;
  masterUrl: string;
  tls?: TlsFiles;
}

/** The ids (and names) of objects of a kind, as the master lists them; [] on any failure. */
export async function idsOf(o: CompleteIdsOptions, io: CliIo): Promise<string[]> {
  if (o.kind === 'kinds') return KINDS.map((k) => k.names[0]!);
  const kind = KINDS.find((k) => k.names.includes(o.kind))?.names[0];
  const read = READS[kind ?? ''];
  if (read === undefined) return [];
  const token = findToken(o.masterUrl, io.env);
  const dial = clientTls(o.tls)?.fetch ?? fetch;
  const base = o.masterUrl.split(',')[0]!.trim().replace(/\/+$/, '');
  try {
    const res = await dial(`${base}${read.path}`, { headers: { accept: 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) }, signal: AbortSignal.timeout(COMPLETE_TIMEOUT_MS) });
    if (!res.ok) return [];
    return [...new Set(read.ids(await res.json()))].filter((s) => typeof s === 'string' && s !== '');
  } catch {
    return [];
  }
}

// The API's answers, read for their names only.
const READS: Record<string, { path: string; ids(body: any): string[] }> = {
  tasks: { path: '/api/v1/state', ids: (b) => b.tasks.map((t: any) => t.id) },
  agents: { path: '/api/v1/state', ids: (b) => b.agents.flatMap((a: any) => [a.id, a.hostname]) },
  jobs: { path: '/api/v1/jobs', ids: (b) => b.jobs.map((j: any) => j.name) },
  apps: { path: '/v2/apps', ids: (b) => b.apps.map((a: any) => a.id) },
  experiments: { path: '/api/v1/experiments', ids: (b) => b.experiments.map((e: any) => e.name) },
};

/** `cairn __complete KIND`: one id or name a line; always exit 0. */
export async function runCompleteIds(o: CompleteIdsOptions, io: CliIo): Promise<number> {
  for (const id of await idsOf(o, io)) io.stdout.write(`${id}\n`);
  return 0;
}
