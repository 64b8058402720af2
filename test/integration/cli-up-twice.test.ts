// `cairn up` is safe to run twice. A second `cairn up` on the port of a running one (its own
// data dir, the same CLI config dir) fails naming the port and the flag that changes it, and
// the CLI credentials file still holds the first cluster's token byte for byte, which the
// first cluster still answers to. A port taken for --dns-port, --gossip-port or --agent-port
// is reported the same way. Ctrl-C on the first logs its stop as a stop: no failover and no
// unreachable-agent warning.

import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { strictLogLines } from '../harness/json-lines.ts';
import { levelRank } from '../../shared/log-text.ts';
import { Cleanup, freePort, runCairn, startCairn, waitFor } from '../harness/processes.ts';

const cleanup = new Cleanup();
const held: Server[] = [];
afterAll(async () => {
  for (const s of held) s.close();
  await cleanup.run();
});

/** Holds a loopback TCP port from the OS, as another program would. */
async function takePort(): Promise<number> {
  const srv = createServer();
  held.push(srv);
  await new Promise<void>((resolve, reject) => {
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => resolve());
  });
  return (srv.address() as { port: number }).port;
}

describe('cairn up twice', () => {
  it("a second cairn up on the same port fails naming it and its flag, and leaves the first cluster's token as it was", async () => {
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    const configDir = cleanup.dir('cairn-up-twice-config-');
    // Each cluster its own bootstrap credentials (no test-wide file, no CAIRN_TOKEN): the
    // tokens differ, and the CLI finds one only in the credentials file.
    const env = { CAIRN_CONFIG_DIR: configDir, CAIRN_CREDENTIALS: '', CAIRN_TOKEN: '', CAIRN_LOG_LEVEL: 'info' };
    const credentialsFile = join(configDir, 'credentials');

    const first = cleanup.track(startCairn(['up', '--port', String(port), '--agent-port', '0', '--dns-port', '0', '--data-dir', cleanup.dir('cairn-up-twice-1-'), '--resources', 'cpus:1;mem:512'], url, env));
    let stderr = '';
    first.child.stderr!.on('data', (d) => (stderr += d));
    await first.waitHealthy(60_000);
    const saved = await waitFor('the first cluster\'s token saved', () => {
      try {
        return readFileSync(credentialsFile);
      } catch {
        return undefined;
      }
    }, 60_000);
    const token = JSON.parse(saved.toString()).masters[url].token as string;
    expect(token).toMatch(/^\S{16,}$/);
    await waitFor('the agent registered', () => /"msg":"agent registered"/.test(stderr) || undefined, 60_000);

    const second = await runCairn(['up', '--port', String(port), '--agent-port', '0', '--dns-port', '0', '--data-dir', cleanup.dir('cairn-up-twice-2-')], env, 120_000);
    expect(second.code, second.stderr).not.toBe(0);
    expect(second.stderr).toContain(`cairn up: a master did not start: port ${port} is taken (another cairn up, or another program, listens on it): give another with --port\n`);
    expect(readFileSync(credentialsFile).equals(saved)).toBe(true);

    // The other ports of `up`, each taken by another program: named with their flags.
    for (const flag of ['--dns-port', '--gossip-port', '--agent-port']) {
      const taken = await takePort();
      const ports = { '--dns-port': '0', '--gossip-port': '0', '--agent-port': '0', [flag]: String(taken) };
      const r = await runCairn(['up', '--port', String(await freePort()), ...Object.entries(ports).flat(), '--data-dir', cleanup.dir('cairn-up-twice-n-')], env, 120_000);
      expect(r.code, r.stderr).not.toBe(0);
      expect(r.stderr).toMatch(new RegExp(`did not start: port ${taken} is taken \\(another cairn up, or another program, listens on it\\): give another with ${flag}\\n`));
      expect(readFileSync(credentialsFile).equals(saved)).toBe(true);
    }

    // The first cluster still answers to the saved token, found by the CLI in the file.
    const agents = await runCairn(['agents', '--master', url], env);
    expect(agents.code, agents.stderr).toBe(0);
    expect(agents.stdout).toMatch(/ reachable /);
    const state = await fetch(`${url}/api/v1/state`, { headers: { authorization: `Bearer ${token}` } });
    expect(state.status).toBe(200);

    // Ctrl-C: an orderly stop, told as one.
    expect(await first.kill('SIGINT')).toBe(0);
    const records = strictLogLines(stderr);
    const stopAt = records.findIndex((r) => r.msg === 'stopping');
    expect(stopAt).toBeGreaterThan(0);
    const afterStop = records.slice(stopAt);
    const warnings = afterStop.filter((r) => levelRank(r.level) >= levelRank('warn'));
    expect(warnings, JSON.stringify(warnings)).toEqual([]);
    expect(afterStop.filter((r) => /new leader|failover/i.test(String(r.msg)))).toEqual([]);
    // The agent's leaving was seen, as an orderly stop.
    expect(afterStop.some((r) => r.component === 'master' && /^agent stopped: it left the cluster/.test(String(r.msg)))).toBe(true);
  }, 300_000);
});
