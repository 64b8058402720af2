// The handlers of `cairn app …`: Marathon's /v2 API called with the command line's
// credential and TLS, answers printed as tables (or -o json|yaml as the API gives them),
// and Marathon's refusals printed field by field with a hint.

import { readFileSync } from 'node:fs';
import type { TlsFiles } from '../../../shared/tls.ts';
import { findToken } from '../../../shared/sdk/credentials.ts';
import { fetchFollowing } from '../../../shared/sdk/follow-redirects.ts';
import { clientTls } from '../common/client-tls.ts';
import type { CliIo } from '../common/io.ts';
import { formatObjects, printList } from '../common/output.ts';
import { waitDeployed } from './deploy-wait.ts';
import { formatTable } from '../common/table.ts';
import { EXIT_TIMED_OUT, exitCodeOf } from '../common/exit-codes.ts';

interface Common {
  masterUrl: string;
  tls?: TlsFiles;
  output?: 'json' | 'yaml' | 'wide';
}

export type AppCommand = Common & (
  | { action: 'deploy'; file: string; force: boolean; wait?: boolean; timeoutMs?: number }
  | { action: 'list' }
  | { action: 'show'; id: string }
  | { action: 'tasks'; id: string }
  | { action: 'scale'; id: string; instances: number; force: boolean }
  | { action: 'restart'; id: string; force: boolean }
  | { action: 'delete'; id: string; force: boolean }
  | { action: 'deployments' }
  | { action: 'queue' }
);

const MAX_REDIRECTS = 5;
const TIMEOUT_MS = 30_000;

class ApiError extends Error {
  constructor(readonly status: number, readonly body: any, what: string) {
    super(describe(status, body, what));
  }
}

function describe(status: number, body: any, what: string): string {
  const lines = [`${what}: ${typeof body?.message === 'string' ? body.message : `HTTP ${status}`}`];
  for (const d of Array.isArray(body?.details) ? body.details : []) {
    for (const e of Array.isArray(d.errors) ? d.errors : []) lines.push(`  ${d.path}: ${e}`);
  }
  if (status === 409 && Array.isArray(body?.deployments)) lines.push(`  hint: a deployment holds the app (${body.deployments.map((x: { id: string }) => x.id).join(', ')}); wait for it (cairn app deployments) or add --force`);
  if (status === 401) lines.push('  hint: give a credential with --token or CAIRN_TOKEN');
  if (status === 404) lines.push('  hint: cairn app list shows the apps there are');
  return lines.join('\n');
}

/** Normalises a user's app id the way the API does (a missing leading slash is fine). */
function appPath(id: string): string {
  return `/${id.split('/').filter((p) => p !== '').map(encodeURIComponent).join('/')}`;
}

class Api {
  private readonly urls: string[];
  private readonly dial: typeof fetch;
  constructor(masterUrl: string, private readonly token: string | undefined, tls: TlsFiles | undefined) {
    this.urls = masterUrl.split(',').map((u) => u.replace(/\/+$/, ''));
    this.dial = clientTls(tls)?.fetch ?? fetch;
  }

  async call(method: string, path: string, what: string, body?: unknown): Promise<{ status: number; body: any; headers: Headers }> {
    let lastErr: unknown;
    for (const base of this.urls) {
      const init: RequestInit = {
        method,
        headers: { accept: 'application/json', ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...(this.token ? { authorization: `Bearer ${this.token}` } : {}) },
        ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
        signal: AbortSignal.timeout(TIMEOUT_MS),
      };
      let res: Response;
      try {
        // A follower points at the leader; followed by hand so the credential goes along.
        res = await fetchFollowing(this.dial, `${base}${path}`, () => init, { maxRedirects: MAX_REDIRECTS });
      } catch (err) {
        lastErr = err;
        if (method !== 'GET') break;
        continue;
      }
      const text = await res.text();
      let parsed: unknown = text;
      try {
        parsed = text === '' ? {} : JSON.parse(text);
      } catch {
        // kept as text
      }
      if (res.status >= 400) throw new ApiError(res.status, parsed, what);
      return { status: res.status, body: parsed, headers: res.headers };
    }
    throw new Error(`${what}: cannot reach the master at ${this.urls.join(', ')}: ${(lastErr as Error)?.message ?? 'no answer'}\n  hint: is a master running there? (--master or CAIRN_MASTER)`);
  }
}

function readStdin(): string {
  return readFileSync(0, 'utf8');
}

/** The apps of a deploy file: one app object, a list, or `{apps: [...]}`. */
export function appsOfFile(text: string, source: string): Record<string, unknown>[] {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (err) {
    throw new Error(`${source} is not JSON: ${(err as Error).message}`);
  }
  const list = Array.isArray(doc) ? doc : doc !== null && typeof doc === 'object' && Array.isArray((doc as { apps?: unknown }).apps) ? (doc as { apps: unknown[] }).apps : [doc];
  if (list.length === 0) throw new Error(`${source} holds no app`);
  list.forEach((a, i) => {
    if (a === null || typeof a !== 'object' || Array.isArray(a)) throw new Error(`${source}: entry ${i} is not an app object`);
    if (typeof (a as { id?: unknown }).id !== 'string') throw new Error(`${source}: entry ${i} has no "id"`);
  });
  return list as Record<string, unknown>[];
}

/** How often `deploy --wait` looks. */
const DEPLOY_POLL_MS = 500;

const short = (s: string | undefined, n = 40) => (s === undefined ? '-' : s.length > n ? `${s.slice(0, n - 1)}…` : s);

export async function runApp(c: AppCommand, io: CliIo, stdin: () => string = readStdin): Promise<number> {
  const api = new Api(c.masterUrl, findToken(c.masterUrl, io.env), c.tls);
  const out = (text: string) => void io.stdout.write(text);
  // Explicit both ways: the API's DELETE forces by default, as Marathon's does; the CLI asks for --force.
  const q = (force: boolean) => `?force=${force}`;
  try {
    switch (c.action) {
      case 'deploy': {
        const source = c.file === '-' ? 'stdin' : c.file;
        let text: string;
        try {
          text = c.file === '-' ? stdin() : readFileSync(c.file, 'utf8');
        } catch (err) {
          throw new Error(`cannot read ${source}: ${(err as Error).message}`);
        }
        let failed = 0;
        const ids: string[] = [];
        for (const app of appsOfFile(text, source)) {
          const id = app.id as string;
          try {
            const exists = await api.call('GET', `/v2/apps${appPath(id)}`, `app ${id}`).then(() => true, (err) => {
              if (err instanceof ApiError && err.status === 404) return false;
              throw err;
            });
            const r = exists
              ? await api.call('PUT', `/v2/apps${appPath(id)}${q(c.force)}`, `updating app ${id}`, app)
              : await api.call('POST', `/v2/apps${q(c.force)}`, `creating app ${id}`, app);
            const deployment = r.body.deploymentId ?? r.body.deployments?.[0]?.id ?? '-';
            out(`app ${exists ? 'updated' : 'created'}: ${r.body.id ?? id} (deployment ${deployment})\n`);
            ids.push(r.body.id ?? id);
            const ignored = (r.headers.get('cairn-ignored-fields') ?? '').split(',').filter((f: string) => f !== '');
            if (ignored.length > 0) io.stderr.write(`cairn app deploy: ${id}: fields not used: ${ignored.join(', ')}\n`);
          } catch (err) {
            failed++;
            io.stderr.write(`cairn app deploy: ${(err as Error).message}\n`);
          }
        }
        if (failed > 0) return 1;
        if (!c.wait) return 0;
        const outcome = await waitDeployed(ids, {
          app: async (id) => (await api.call('GET', `/v2/apps${appPath(id)}`, `app ${id}`)).body.app,
          reasons: async () => {
            const queue: { app: { id: string }; why?: string }[] = (await api.call('GET', '/v2/queue?cairn=true', 'the launch queue')).body.queue;
            return new Map(queue.flatMap((x) => (x.why !== undefined ? [[x.app.id, x.why] as const] : [])));
          },
          write: (line) => out(`${line}\n`),
          sleep: (ms) => new Promise((r) => setTimeout(r, ms)),
          nowMs: () => Date.now(),
        }, { pollMs: DEPLOY_POLL_MS, ...(c.timeoutMs !== undefined ? { timeoutMs: c.timeoutMs } : {}) });
        if (outcome === 'deployed') return 0;
        io.stderr.write(`cairn app deploy: not every app was deployed after ${c.timeoutMs} ms (cairn app queue says why instances wait)\n`);
        return EXIT_TIMED_OUT;
      }
      case 'list': {
        const apps: any[] = (await api.call('GET', '/v2/apps', 'listing apps')).body.apps;
        const wide = c.output === 'wide';
        const rows = () => apps.map((a) => [
          a.id, `${a.tasksRunning}/${a.instances}`, a.healthChecks.length > 0 ? String(a.tasksHealthy) : '-', String(a.cpus), String(a.mem),
          a.deployments.length > 0 ? 'deploying' : '-',
          ...(wide ? [a.version, short(a.container?.docker?.image ?? a.cmd ?? (a.args ?? []).join(' '), 60)] : []),
        ]);
        printList(io, c.output, apps, () => formatTable(['ID', 'RUNNING', 'HEALTHY', 'CPUS', 'MEM', 'DEPLOYMENT', ...(wide ? ['VERSION', 'IMAGE/CMD'] : [])], rows()));
        return 0;
      }
      case 'show': {
        const app = (await api.call('GET', `/v2/apps${appPath(c.id)}`, `app ${c.id}`)).body.app;
        out(formatObjects(c.output === 'json' ? 'json' : 'yaml', app));
        return 0;
      }
      case 'tasks': {
        const tasks: any[] = (await api.call('GET', `/v2/apps${appPath(c.id)}/tasks`, `tasks of ${c.id}`)).body.tasks;
        const rows = () => tasks.map((t) => [t.id, t.host, t.ports.join(','), t.state, t.healthCheckResults ? (t.healthCheckResults[0].alive ? 'healthy' : 'unhealthy') : '-', t.startedAt ?? t.stagedAt, ...(c.output === 'wide' ? [t.slaveId, t.version] : [])]);
        printList(io, c.output, tasks, () => formatTable(['ID', 'HOST', 'PORTS', 'STATE', 'HEALTH', 'SINCE', ...(c.output === 'wide' ? ['AGENT', 'VERSION'] : [])], rows()));
        return 0;
      }
      case 'scale':
      case 'restart':
      case 'delete': {
        const r = c.action === 'scale'
          ? await api.call('PUT', `/v2/apps${appPath(c.id)}${q(c.force)}`, `scaling ${c.id}`, { instances: c.instances })
          : c.action === 'restart'
            ? await api.call('POST', `/v2/apps${appPath(c.id)}/restart${q(c.force)}`, `restarting ${c.id}`)
            : await api.call('DELETE', `/v2/apps${appPath(c.id)}${q(c.force)}`, `deleting ${c.id}`);
        const verb = c.action === 'scale' ? `scaling to ${c.instances}` : c.action === 'restart' ? 'restarting' : 'deleting';
        out(`${appPath(c.id)}: ${verb} (deployment ${r.body.deploymentId})\n`);
        return 0;
      }
      case 'deployments': {
        const deps: any[] = (await api.call('GET', '/v2/deployments', 'listing deployments')).body;
        printList(io, c.output, deps, () => formatTable(['ID', 'APPS', 'ACTION', 'VERSION'], deps.map((d) => [d.id, d.affectedApps.join(','), d.currentActions.map((a: { action: string }) => a.action).join(','), d.version])));
        return 0;
      }
      case 'queue': {
        // Cairn's `waitingOn` (the decline reasons by count) comes with ?cairn=true.
        const queue: any[] = (await api.call('GET', '/v2/queue?cairn=true', 'the launch queue')).body.queue;
        const rows = () => queue.map((item) => [
          item.app.id, String(item.count), item.delay.overdue ? '-' : `${item.delay.timeLeftSeconds}s`,
          String(item.processedOffersSummary.processedOffersCount),
          item.waitingOn.length === 0 ? '-' : item.waitingOn.map((w: { reason: string; offers: number }) => `${w.reason}:${w.offers}`).join(' '),
          item.why ?? '-',
        ]);
        printList(io, c.output, queue, () => formatTable(['APP', 'WAITING', 'DELAY', 'OFFERS', 'DECLINED FOR', 'WHY'], rows()));
        return 0;
      }
    }
  } catch (err) {
    io.stderr.write(`cairn app ${c.action}: ${(err as Error).message}\n`);
    return exitCodeOf(err);
  }
}
