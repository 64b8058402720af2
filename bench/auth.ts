// What authentication costs a request: one keep-alive client reading GET /api/v1/roles from
// an in-process master that authenticates every call (a Bearer token, the audit hooks) and
// from one that authenticates none, alternating rounds; microseconds per request, medians.

import http from 'node:http';
import { rmSync } from 'node:fs';
import { parseCredentials } from '../master/auth/credentials.ts';
import { MasterAuth } from '../master/auth/master-auth.ts';
import { startMaster, type MasterHandle } from '../master/server.ts';
import { silentLogger } from '../shared/logger.ts';
import { TEST_USER } from '../test/harness/credentials.ts';
import { tempDir } from '../test/harness/processes.ts';

const ROUNDS = 6;
const REQUESTS_PER_ROUND = 4000;

/** The upper median (of an even count, the higher of the middle two). */
function median(xs: number[]): number {
  return [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
}

export async function run(): Promise<unknown> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const headers = { authorization: `Bearer ${TEST_USER.secret}` };
  const get = (url: string) => new Promise<number>((resolve, reject) => {
    const req = http.get(url, { agent, headers }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
  });
  const dirs = [tempDir(), tempDir()];
  const start = (auth: MasterAuth, dataDir: string) => startMaster({ auth, dataDir, port: 0, host: '127.0.0.1', logger: silentLogger(), dnsPort: null });
  const masters: Record<'off' | 'on', MasterHandle> = {
    on: await start(MasterAuth.on({ credentials: parseCredentials(JSON.stringify({ credentials: [{ ...TEST_USER }] })) }), dirs[0]!),
    off: await start(MasterAuth.off(), dirs[1]!),
  };
  const usPerRequest: Record<'off' | 'on', number[]> = { off: [], on: [] };
  try {
    for (let round = 0; round < ROUNDS; round++) {
      // Which goes first alternates, so neither always follows the other.
      for (const mode of round % 2 ? (['on', 'off'] as const) : (['off', 'on'] as const)) {
        const t0 = performance.now();
        for (let n = 0; n < REQUESTS_PER_ROUND; n++) {
          if ((await get(`${masters[mode].url}/api/v1/roles`)) !== 200) throw new Error(`GET refused by the master with authentication ${mode}`);
        }
        usPerRequest[mode].push(Number((((performance.now() - t0) * 1000) / REQUESTS_PER_ROUND).toFixed(1)));
      }
    }
  } finally {
    await masters.on.stop();
    await masters.off.stop();
    agent.destroy();
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  }
  const medianOff = median(usPerRequest.off);
  const medianOn = median(usPerRequest.on);
  return {
    bench: 'auth',
    usPerRequestOff: usPerRequest.off,
    usPerRequestOn: usPerRequest.on,
    medianOff,
    medianOn,
    throughputRatio: Number((medianOff / medianOn).toFixed(3)),
    target: 'ratio >= 0.9',
  };
}

if (import.meta.url === `file://${process.argv[1]}`) console.log(JSON.stringify(await run(), null, 2));
