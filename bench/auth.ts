// What authentication costs a request: one keep-alive client reading GET /api/v1/roles from
// an in-process master that authenticates every call (a Bearer token, the audit hooks) and
// from one that authenticates none, alternating rounds; microseconds per request, medians.

import http from 'node:http';
import { rmSync } from 'node:fs';
import { startMaster } from '../master/server.ts';
import { MasterAuth } from '../master/auth/master-auth.ts';
import { parseCredentials } from '../master/auth/credentials.ts';
import { silentLogger } from '../shared/logger.ts';
import { tempDir } from '../test/harness/processes.ts';
import { TEST_USER } from '../test/harness/credentials.ts';
export async function run(): Promise<unknown> {
const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
const get = (url: string, h: Record<string, string>) => new Promise<number>((res, rej) => { const r = http.get(url, { agent, headers: h }, (x) => { x.resume(); x.on('end', () => res(x.statusCode ?? 0)); }); r.on('error', rej); });
const dirs = [tempDir(), tempDir()];
const on = await startMaster({ auth: MasterAuth.on({ credentials: parseCredentials(JSON.stringify({ credentials: [{ ...TEST_USER }] })) }), dataDir: dirs[0], port: 0, host: '127.0.0.1', logger: silentLogger(), dnsPort: null });
const off = await startMaster({ auth: MasterAuth.off(), dataDir: dirs[1], port: 0, host: '127.0.0.1', logger: silentLogger(), dnsPort: null });
const h = { authorization: `Bearer ${TEST_USER.secret}` };
const res: Record<string, number[]> = { off: [], on: [] };
for (let round = 0; round < 6; round++) {
  const pairs: [string, typeof on][] = round % 2 ? [['on', on], ['off', off]] : [['off', off], ['on', on]];
  for (const [k, m] of pairs) {
    const t0 = performance.now(); let n = 0;
    while (n < 4000) { if ((await get(`${m.url}/api/v1/roles`, h)) !== 200) throw new Error('refused'); n++; }
    res[k]!.push(Number(((performance.now() - t0) * 1000 / n).toFixed(1)));
  }
}
const med = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const out = { bench: 'auth', usPerRequestOff: res.off, usPerRequestOn: res.on, medianOff: med(res.off), medianOn: med(res.on), throughputRatio: Number((med(res.off) / med(res.on)).toFixed(3)), target: 'ratio >= 0.9' };
await on.stop(); await off.stop(); agent.destroy();
for (const d of dirs) rmSync(d, { recursive: true, force: true });
return out;
}

if (import.meta.url === `file://${process.argv[1]}`) console.log(JSON.stringify(await run(), null, 2));
