// CORS between the masters of one replication group, so that the dashboard page one master
// served can go on through the others when it dies: exactly the origins of the group's members
// get a preflight answer and Access-Control-Allow-Origin (never Allow-Credentials); any other
// origin — a stranger's, or this very host on a port that is no member — is refused as before
// (403 CAIRN_CROSS_SITE), preflight included.

import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startMaster, type MasterHandle } from '../../master/server.ts';
import { MasterAuth } from '../../master/auth/master-auth.ts';
import { parseCredentials } from '../../master/auth/credentials.ts';
import { silentLogger } from '../../shared/logger.ts';
import { Cleanup, freePort, waitFor } from '../harness/processes.ts';

const cleanup = new Cleanup();
const token = 'admin-secret-0123456789abcdef';
const bearer = { authorization: `Bearer ${token}` };
let masters: MasterHandle[] = [];
let urls: string[] = [];
let stranger: string;

beforeAll(async () => {
  const dir = cleanup.dir('cairn-ui-cors-');
  const ports = [await freePort(), await freePort(), await freePort()];
  stranger = `http://127.0.0.1:${await freePort()}`;
  urls = ports.map((p) => `http://127.0.0.1:${p}`);
  const members = new Map(urls.map((u, i) => [i + 1, u] as [number, string]));
  const credentials = parseCredentials(JSON.stringify({ credentials: [{ principal: 'admin', secret: token }] }));
  masters = await Promise.all(ports.map((port, i) => startMaster({
    auth: MasterAuth.on({ credentials }), port, host: '127.0.0.1', dataDir: join(dir, `m${i + 1}`), logger: silentLogger(), dnsPort: null, frameworks: [],
    raft: { id: i + 1, members, secret: 'a-test-secret-of-enough-bytes', tickMs: 20 },
  })));
  await waitFor('a leader', async () => {
    const roles = await Promise.all(urls.map(async (u) => ((await (await fetch(`${u}/health`)).json()) as { role: string }).role));
    return roles.includes('leader') || undefined;
  }, 20_000);
}, 60_000);

afterAll(async () => {
  await Promise.all(masters.map((m) => m.stop()));
  await cleanup.run();
});

describe('CORS between the masters of one group', () => {
  it("answers a member's preflight and reads, with its origin and never credentials", async () => {
    const [a, b] = urls as [string, string];
    const pre = await fetch(`${b}/api/v1/tasks?limit=5`, { method: 'OPTIONS', headers: { origin: a, 'access-control-request-method': 'GET', 'access-control-request-headers': 'authorization' } });
    expect(pre.status).toBe(204);
    expect(pre.headers.get('access-control-allow-origin')).toBe(a);
    expect(pre.headers.get('access-control-allow-methods')).toBe('GET, POST, PUT, PATCH, DELETE');
    expect(pre.headers.get('access-control-allow-headers')).toBe('authorization, content-type');
    expect(Number(pre.headers.get('access-control-max-age'))).toBeGreaterThan(0);
    expect(pre.headers.get('access-control-allow-credentials')).toBeNull();
    expect(pre.headers.get('vary')).toMatch(/origin/i);

    // What a browser sends from a member's page (Chromium calls loopback ports same-site).
    const browserish = { origin: a, 'sec-fetch-site': 'same-site', 'sec-fetch-mode': 'cors' };
    const read = await fetch(`${b}/api/v1/tasks?limit=5`, { headers: { ...bearer, ...browserish } });
    expect(read.status).toBe(200);
    expect(read.headers.get('access-control-allow-origin')).toBe(a);
    expect(read.headers.get('vary')).toMatch(/origin/i);
    expect(read.headers.get('access-control-allow-credentials')).toBeNull();
    expect((await read.json()).tasks).toEqual([]);
    // Still authenticated: without the token, 401 (readable by the page, so it can ask for one).
    const anon = await fetch(`${b}/api/v1/tasks?limit=5`, { headers: browserish });
    expect(anon.status).toBe(401);
    expect(anon.headers.get('access-control-allow-origin')).toBe(a);

    // The event stream (a hijacked answer) carries the header too.
    const ctl = new AbortController();
    const events = await fetch(`${b}/api/v1/events`, { headers: { ...bearer, ...browserish, accept: 'text/event-stream' }, signal: ctl.signal });
    expect(events.status).toBe(200);
    expect(events.headers.get('access-control-allow-origin')).toBe(a);
    ctl.abort();
  });

  it("refuses a stranger's origin and a port of this host that is no member, preflight included", async () => {
    const b = urls[1]!;
    for (const origin of ['http://evil.example', stranger, 'null']) {
      const pre = await fetch(`${b}/api/v1/tasks`, { method: 'OPTIONS', headers: { origin, 'access-control-request-method': 'GET' } });
      expect(pre.status, origin).toBe(403);
      expect((await pre.json()).code).toBe('CAIRN_CROSS_SITE');
      expect(pre.headers.get('access-control-allow-origin')).toBeNull();
      const read = await fetch(`${b}/api/v1/tasks`, { headers: { ...bearer, origin } });
      expect(read.status, origin).toBe(403);
      expect((await read.json()).code).toBe('CAIRN_CROSS_SITE');
      expect(read.headers.get('access-control-allow-origin')).toBeNull();
    }
    // Without an Origin, Sec-Fetch-Site cross-site/same-site stays refused.
    for (const site of ['cross-site', 'same-site']) {
      const res = await fetch(`${b}/api/v1/tasks`, { headers: { ...bearer, 'sec-fetch-site': site } });
      expect(res.status, site).toBe(403);
    }
    // A member's origin with a path or another scheme is not the member's origin.
    const wrong = await fetch(`${b}/api/v1/tasks`, { headers: { ...bearer, origin: urls[0]!.replace('http:', 'https:') } });
    expect(wrong.status).toBe(403);
  });
});
