// `cairn up --port 0`: the master listens on a port the OS gives, prints its URL on stdout, and
// saves the CLI's token for that URL (not for port 0), so that `cairn` with CAIRN_MASTER set
// to the printed URL finds its credential with nothing else given.

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { Cleanup, runCairn, startCairn, waitFor } from '../harness/processes.ts';

const cleanup = new Cleanup();
afterAll(() => cleanup.run());

describe('cairn up --port 0', () => {
  it('saves the token for the URL it printed, which the CLI then finds', async () => {
    const configDir = cleanup.dir('cairn-up-port0-config-');
    const env = { CAIRN_CONFIG_DIR: configDir, CAIRN_CREDENTIALS: '', CAIRN_TOKEN: '' };
    const up = cleanup.track(startCairn(['up', '--port', '0', '--agent-port', '0', '--dns-port', '0', '--data-dir', cleanup.dir('cairn-up-port0-'), '--resources', 'cpus:1;mem:512'], 'http://127.0.0.1:0', env));
    let stdout = '';
    up.child.stdout!.on('data', (d) => (stdout += d));
    const url = await waitFor('the URL on stdout', () => /^(http:\/\/127\.0\.0\.1:(\d+))\n/.exec(stdout)?.[1], 90_000);
    expect(url).not.toBe('http://127.0.0.1:0');
    const saved = JSON.parse(readFileSync(join(configDir, 'credentials'), 'utf8')) as { masters: Record<string, { token: string }> };
    expect(Object.keys(saved.masters)).toEqual([url]);
    const agents = await runCairn(['agents'], { ...env, CAIRN_MASTER: url });
    expect(agents.code, agents.stderr).toBe(0);
    expect(agents.stdout).toMatch(/reachable/);
    expect(await up.kill('SIGINT')).toBe(0);
  }, 180_000);
});
