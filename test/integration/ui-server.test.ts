// The web dashboard's server side against a real master (in this process, authenticating
// with credentials and ACLs) and a fake agent: its static and vendor files with their content
// types and no way out of their folders, the event stream, the paginated reads (what each
// caller may see, filters, totals, bad values named), the one-time login links, and
// `cairn ui --print-url` as a process.

import http from 'node:http';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MasterAuth } from '../../master/auth/master-auth.ts';
import { parseCredentials } from '../../master/auth/credentials.ts';
import { parseAcls } from '../../master/auth/acls.ts';
import { startMaster, type MasterHandle } from '../../master/server.ts';
import { silentLogger } from '../../shared/logger.ts';
import { FakeAgent } from '../harness/fake-agent.ts';
import { Cleanup, runCairn, waitFor } from '../harness/processes.ts';
import { RawScheduler, taskInfo } from '../harness/raw-scheduler.ts';

const secret = (name: string) => `${name}-secret-0123456789abcdef`;
const bearer = (name: string) => ({ authorization: `Bearer ${secret(name)}` });

const cleanup = new Cleanup();
let master: MasterHandle;
let url: string;
let agent: FakeAgent;
const schedulers: RawScheduler[] = [];
const launched: string[] = [];

function get(path: string, as?: string, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(`${url}${path}`, { headers: { ...(as ? bearer(as) : {}), ...headers } });
}

function post(path: string, body: unknown, as?: string, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(`${url}${path}`, { method: 'POST', body: JSON.stringify(body), headers: { 'content-type': 'application/json', ...(as ? bearer(as) : {}), ...headers } });
}

/** A raw request, its path sent exactly as written (fetch would resolve `..` itself). */
function raw(path: string, headers: Record<string, string> = {}): Promise<{ status: number; body: string; type: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port: master.port, path, headers }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body, type: String(res.headers['content-type'] ?? '') }));
    });
    req.on('error', reject);
    req.end();
  });
}

async function subscribe(as: string, name: string): Promise<RawScheduler> {
  const s = new RawScheduler(url, bearer(as));
  schedulers.push(s);
  expect((await s.subscribe({ user: 'nobody', name, role: '*' })).status).toBe(200);
  return s;
}

/** Offers a scheduler has used or declined. */
const usedOffers = new Set<string>();
const unused = (s: RawScheduler) => s.events.filter((e) => e.type === 'OFFERS').flatMap((e) => e.offers.offers).filter((o: any) => !usedOffers.has(o.id.value));

/** Launches one task of `s` on the fake agent from an offer; the others give theirs back first. */
async function launch(s: RawScheduler, id: string): Promise<void> {
  const offer = await waitFor(`an offer for ${id}`, async () => {
    for (const other of schedulers) {
      const offers = other === s ? [] : unused(other);
      if (offers.length === 0) continue;
      for (const o of offers) usedOffers.add(o.id.value);
      await other.call({ type: 'DECLINE', decline: { offer_ids: offers.map((o: any) => o.id), filters: { refuse_seconds: 1 } } });
    }
    return unused(s)[0];
  }, 10_000);
  usedOffers.add(offer.id.value);
  const res = await s.call({
    type: 'ACCEPT',
    accept: { offer_ids: [offer.id], operations: [{ type: 'LAUNCH', launch: { task_infos: [taskInfo(id, agent.agentId, { cpus: 0.1, mem: 16 }, 'sleep 100', { name: `ui-${id}` })] } }], filters: { refuse_seconds: 0 } },
  });
  expect(res.status).toBe(202);
  launched.push(id);
  await waitFor(`task ${id} is known`, () => master.context.registry.state.tasks.get(id));
}

/** An event stream's events as they come (`: keep-alive` comments dropped). */
class EventReader {
  readonly events: { event: string; data: any; atMs: number }[] = [];
  readonly abort = new AbortController();
  status = 0;
  type = '';

  async open(as: string): Promise<this> {
    const res = await fetch(`${url}/api/v1/events`, { headers: bearer(as), signal: this.abort.signal });
    this.status = res.status;
    this.type = res.headers.get('content-type') ?? '';
    void this.pump(res.body!);
    return this;
  }

  private async pump(body: ReadableStream<Uint8Array>): Promise<void> {
    const decoder = new TextDecoder();
    let buf = '';
    try {
      for await (const chunk of body) {
        buf += decoder.decode(chunk, { stream: true });
        let at;
        while ((at = buf.indexOf('\n\n')) >= 0) {
          const block = buf.slice(0, at);
          buf = buf.slice(at + 2);
          const event = /^event: (.*)$/m.exec(block)?.[1];
          const data = /^data: (.*)$/m.exec(block)?.[1];
          if (event && data) this.events.push({ event, data: JSON.parse(data), atMs: performance.now() });
        }
      }
    } catch {
      // aborted
    }
  }

  close(): void {
    this.abort.abort();
  }
}

beforeAll(async () => {
  const dir = cleanup.dir('cairn-ui-');
  const credentials = parseCredentials(JSON.stringify({
    credentials: [
      { principal: 'admin', secret: secret('admin') },
      { principal: 'alice', secret: secret('alice') },
      { principal: 'bob', secret: secret('bob') },
      { principal: 'agent-1', secret: secret('agent-1'), agent: true },
    ],
  }));
  const acls = parseAcls(JSON.stringify({
    permissive: false,
    register_frameworks: [{ principals: { values: ['alice', 'bob'] }, roles: { type: 'ANY' } }],
    run_tasks: [{ principals: { type: 'ANY' }, users: { type: 'ANY' } }],
    view_tasks: [{ principals: { values: ['admin'] }, framework_principals: { type: 'ANY' } }],
  }));
  master = await startMaster({ auth: MasterAuth.on({ credentials, acls }), dataDir: join(dir, 'master'), port: 0, host: '127.0.0.1', dnsPort: null, logger: silentLogger(), allocationIntervalMs: 50, frameworks: [] });
  url = master.url;
  agent = new FakeAgent({ masterUrl: url, hostname: 'ui-host', headers: bearer('agent-1') });
  await agent.connect();
});

afterAll(async () => {
  for (const s of schedulers) s.close();
  await agent?.close();
  await master?.stop();
  await cleanup.run();
});

describe('static files', () => {
  it('serves the page and its files without a token, with their content types', async () => {
    for (const path of ['/ui', '/ui/']) {
      const res = await get(path);
      expect(res.status, path).toBe(200);
      expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8');
      expect(res.headers.get('x-frame-options')).toBe('DENY');
      expect(await res.text()).toMatch(/<html/i);
    }
    const js = await get('/ui/html.js');
    expect(js.status).toBe(200);
    expect(js.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    expect((await get('/ui/no-such-file.js')).status).toBe(404);
    expect((await get('/ui/components')).status).toBe(404);
  });

  it('serves the vendor modules from the installed packages', async () => {
    const types: Record<string, string> = {
      'preact.mjs': 'text/javascript; charset=utf-8',
      'hooks.mjs': 'text/javascript; charset=utf-8',
      'htm.mjs': 'text/javascript; charset=utf-8',
      'uplot.mjs': 'text/javascript; charset=utf-8',
      'uplot.css': 'text/css; charset=utf-8',
    };
    for (const [name, type] of Object.entries(types)) {
      const res = await get(`/ui/vendor/${name}`);
      expect(res.status, name).toBe(200);
      expect(res.headers.get('content-type'), name).toBe(type);
      const text = await res.text();
      if (name.endsWith('.mjs')) expect(text, name).toMatch(/export/);
    }
    // hooks imports "preact" by name: the page's import map points it at /ui/vendor/preact.mjs.
    expect(await (await get('/ui/vendor/hooks.mjs')).text()).toMatch(/from\s*["']preact["']/);
    expect((await get('/ui/vendor/react.mjs')).status).toBe(404);
  });

  it('refuses every way out of the folders', async () => {
    const escapes = [
      '/ui/../package.json',
      '/ui/../../package.json',
      '/ui/%2e%2e/%2e%2e/package.json',
      '/ui/..%2f..%2f..%2fpackage.json',
      '/ui/%2E%2E%2F%2E%2E%2F%2E%2E%2Fpackage.json',
      '/ui/static/../../../package.json',
      '/ui/vendor/../../../../package.json',
      '/ui/vendor/%2e%2e%2fpackage.json',
      '/ui/vendor/..%2f..%2fpreact%2fpackage.json',
      '/ui/..\\..\\..\\package.json',
      '/ui/%5c..%5c..%5cpackage.json',
      '/ui//etc/passwd',
      '/ui/%2fetc%2fpasswd',
      '/ui/.%00./package.json',
      '/ui/../api/v1/state',
      '/ui/%2e%2e/api/v1/state',
    ];
    for (const path of escapes) {
      const res = await raw(path);
      expect(res.status, path).toBe(404);
      expect(res.body, path).not.toContain('"dependencies"');
      expect(res.body, path).not.toContain('root:');
      expect(res.body, path).not.toContain('"agents"');
    }
  });

  it('keeps every API behind a token and the cross-site rules, while the page opens from a link', async () => {
    expect((await get('/api/v1/tasks')).status).toBe(401);
    expect((await get('/api/v1/events')).status).toBe(401);
    expect((await get('/api/v1/agents')).status).toBe(401);
    expect((await post('/api/v1/ui/links', {})).status).toBe(401);
    // Another site's page may not read or redeem anything, token or not.
    expect((await get('/api/v1/tasks', 'admin', { origin: 'http://evil.example' })).status).toBe(403);
    expect((await get('/api/v1/tasks', 'admin', { 'sec-fetch-site': 'cross-site' })).status).toBe(403);
    expect((await post('/api/v1/ui/redeem', { code: 'x' }, undefined, { origin: 'http://evil.example' })).status).toBe(403);
    expect((await post('/api/v1/ui/links', {}, 'admin', { 'sec-fetch-site': 'cross-site' })).status).toBe(403);
    // The page's own calls (same origin) pass.
    const host = new URL(url).host;
    expect((await get('/api/v1/tasks', 'admin', { origin: `http://${host}`, 'sec-fetch-site': 'same-origin' })).status).toBe(200);
    // A link from another site opens the page (no data in it; it is never framed).
    expect((await get('/ui/', undefined, { 'sec-fetch-site': 'cross-site' })).status).toBe(200);
    // Only GET opens the static routes; the redeem route only by POST.
    expect((await fetch(`${url}/ui/html.js`, { method: 'DELETE' })).status).not.toBe(200);
    expect((await get('/api/v1/ui/redeem')).status).toBe(401);
  });
});

describe('events and paginated reads', () => {
  let alice: RawScheduler;
  let bob: RawScheduler;

  beforeAll(async () => {
    alice = await subscribe('alice', 'alice-fw');
    bob = await subscribe('bob', 'bob-fw');
  });

  it('says hello, then names the topics a launch touched; a closed stream leaves nothing behind', async () => {
    const reader = await new EventReader().open('alice');
    expect(reader.status).toBe(200);
    expect(reader.type).toMatch(/^text\/event-stream/);
    const hello = await waitFor('hello', () => reader.events.find((e) => e.event === 'hello'));
    expect(hello.data).toEqual({ role: 'leader', leader: url, masters: [url] });
    await waitFor('the stream is attached', () => master.ui.events.size === 1 || undefined);
    await launch(alice, 'alpha-1');
    const change = await waitFor('a change naming tasks', () => reader.events.find((e) => e.event === 'change' && e.data.topics.includes('tasks')));
    expect(change.data.topics).toEqual(expect.arrayContaining(['tasks', 'agents']));
    // Throttled: changes come at least 250 ms apart.
    await launch(alice, 'alpha-2');
    await launch(alice, 'alpha-3');
    await waitFor('changes for the later launches', () => reader.events.filter((e) => e.event === 'change').length >= 2 || undefined);
    const changes = reader.events.filter((e) => e.event === 'change');
    for (let i = 1; i < changes.length; i++) expect(changes[i]!.atMs - changes[i - 1]!.atMs).toBeGreaterThanOrEqual(200);
    reader.close();
    await waitFor('the closed stream left the hub', () => master.ui.events.size === 0 || undefined);
  });

  it('pages the tasks a caller may view, newest first, with filters and totals', async () => {
    await launch(bob, 'bravo-1');
    await launch(alice, 'alpha-4');
    const page = async (as: string, q: string) => {
      const res = await get(`/api/v1/tasks${q}`, as);
      expect(res.status, q).toBe(200);
      return res.json() as Promise<{ total: number; offset: number; limit: number; tasks: { id: string; state: string; frameworkId: string }[] }>;
    };
    const all = await page('admin', '');
    expect(all.total).toBe(5);
    expect(all.limit).toBe(100);
    expect(all.offset).toBe(0);
    expect(all.tasks.map((t) => t.id)).toEqual(['alpha-4', 'bravo-1', 'alpha-3', 'alpha-2', 'alpha-1']);
    const second = await page('admin', '?offset=1&limit=2');
    expect(second).toMatchObject({ total: 5, offset: 1, limit: 2 });
    expect(second.tasks.map((t) => t.id)).toEqual(['bravo-1', 'alpha-3']);
    expect((await page('admin', '?sort=oldest&limit=1')).tasks.map((t) => t.id)).toEqual(['alpha-1']);
    expect((await page('admin', '?offset=10')).tasks).toEqual([]);
    // Filters.
    expect((await page('admin', `?framework=${encodeURIComponent(bob.frameworkId)}`)).tasks.map((t) => t.id)).toEqual(['bravo-1']);
    await waitFor('tasks running', () => [...master.context.registry.state.tasks.values()].every((t) => t.state === 'TASK_RUNNING') || undefined);
    expect((await page('admin', '?state=RUNNING')).total).toBe(5);
    expect((await page('admin', '?state=TASK_FINISHED,killed')).total).toBe(0);
    expect((await page('admin', '?q=ALPHA-')).tasks.map((t) => t.id)).toEqual(['alpha-4', 'alpha-3', 'alpha-2', 'alpha-1']);
    expect((await page('admin', `?q=alpha-&framework=${encodeURIComponent(alice.frameworkId)}&limit=1`)).total).toBe(4);
    // Each caller sees only what it may: its own framework's tasks (admin: all, by the ACL).
    expect((await page('alice', '')).tasks.map((t) => t.id)).toEqual(['alpha-4', 'alpha-3', 'alpha-2', 'alpha-1']);
    expect((await page('bob', '')).tasks.map((t) => t.id)).toEqual(['bravo-1']);
    expect((await page('bob', `?framework=${encodeURIComponent(alice.frameworkId)}`)).total).toBe(0);
  });

  it('refuses bad query values, naming the field', async () => {
    const cases: [string, string][] = [
      ['?limit=0', 'limit'],
      ['?limit=1001', 'limit'],
      ['?limit=ten', 'limit'],
      ['?offset=-1', 'offset'],
      ['?offset=1.5', 'offset'],
      ['?state=SLEEPING', 'state'],
      ['?sort=sideways', 'sort'],
      ['?colour=red', 'colour'],
      ['?limit=1&limit=2', 'limit'],
      [`?q=${'x'.repeat(300)}`, 'q'],
    ];
    for (const [q, field] of cases) {
      const res = await get(`/api/v1/tasks${q}`, 'admin');
      expect(res.status, q).toBe(400);
      expect(await res.json(), q).toMatchObject({ code: 'CAIRN_BAD_REQUEST', field });
    }
    const res = await get('/api/v1/agents?limit=x', 'admin');
    expect(res.status).toBe(400);
    expect((await res.json()).field).toBe('limit');
  });

  it('pages the agents, as /api/v1/state lists them', async () => {
    const res = await get('/api/v1/agents?limit=10&q=ui-host', 'bob');
    expect(res.status).toBe(200);
    const body = await res.json();
    expect(body).toMatchObject({ total: 1, offset: 0, limit: 10 });
    const state = await (await get('/api/v1/state', 'bob')).json();
    expect(body.agents).toEqual(state.agents);
    expect((await (await get('/api/v1/agents?q=nothing-like-it', 'bob')).json()).total).toBe(0);
  });
});

describe('one-time login links', () => {
  it('gives the token back once, then 404; an expired code 410 saying so', async () => {
    const res = await post('/api/v1/ui/links', {}, 'alice');
    expect(res.status).toBe(201);
    const link = await res.json();
    expect(link.url).toBe(`${url}/ui/#login=${link.code}`);
    expect(link.expiresAtMs).toBeGreaterThan(Date.now() + 50_000);
    const first = await post('/api/v1/ui/redeem', { code: link.code });
    expect(first.status).toBe(200);
    expect(await first.json()).toEqual({ token: secret('alice') });
    const again = await post('/api/v1/ui/redeem', { code: link.code });
    expect(again.status).toBe(404);
    expect((await again.json()).code).toBe('CAIRN_UNKNOWN_LINK');
    expect((await post('/api/v1/ui/redeem', { code: 'made-up' })).status).toBe(404);
    expect((await post('/api/v1/ui/redeem', {})).status).toBe(400);
    // One that has outlived its time (made here already expired: the route is the same).
    const old = master.ui.links.create(secret('alice'), 'alice', -1);
    const expired = await post('/api/v1/ui/redeem', { code: old.code });
    expect(expired.status).toBe(410);
    expect(await expired.json()).toMatchObject({ code: 'CAIRN_LINK_EXPIRED', message: expect.stringMatching(/expired.*cairn ui again/) });
    // Still expired (not unknown) when tried again.
    expect((await post('/api/v1/ui/redeem', { code: old.code })).status).toBe(410);
    // A shorter life may be asked for, within the limit; a bad one is named.
    const short = await post('/api/v1/ui/links', { ttlMs: 5_000 }, 'alice');
    expect(short.status).toBe(201);
    expect((await short.json()).expiresAtMs).toBeLessThan(Date.now() + 5_500);
    for (const ttlMs of [0, 60_001, 'soon', 1.5]) {
      const bad = await post('/api/v1/ui/links', { ttlMs }, 'alice');
      expect(bad.status).toBe(400);
      expect((await bad.json()).field).toBe('ttlMs');
    }
    // Basic credentials make no link (the page sends Bearer tokens).
    const basic = await post('/api/v1/ui/links', {}, undefined, { authorization: `Basic ${Buffer.from(`alice:${secret('alice')}`).toString('base64')}` });
    expect(basic.status).toBe(400);
    expect((await basic.json()).field).toBe('Authorization');
  });

  it('`cairn ui --print-url` prints a link whose code redeems', async () => {
    const dir = cleanup.dir('cairn-ui-cli-');
    const r = await runCairn(['ui', '--print-url', '--master', url], { CAIRN_TOKEN: secret('bob'), CAIRN_CONFIG_DIR: dir });
    expect(r.code, r.stderr).toBe(0);
    const printed = r.stdout.trim();
    expect(printed).toMatch(new RegExp(`^${url.replace(/[.]/g, '\\.')}/ui/#login=[A-Za-z0-9_-]{40,}$`));
    const code = printed.split('#login=')[1]!;
    const res = await post('/api/v1/ui/redeem', { code });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ token: secret('bob') });
    // Without a credential it fails, saying why, with exit 1.
    const refused = await runCairn(['ui', '--print-url', '--master', url], { CAIRN_TOKEN: 'wrong-secret-0123456789abcdef', CAIRN_CONFIG_DIR: dir });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/cairn ui: .*CAIRN_UNAUTHENTICATED/);
  });
});
