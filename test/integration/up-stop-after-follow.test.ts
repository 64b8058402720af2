// A followed log whose client went away does not hold up a stop: after `cairn logs --follow`
// through the master is killed mid-stream, Ctrl-C on `cairn up` stops the agent at once
// (it ends the streams still open to it) rather than waiting out its 30 s stop limit.

import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { Cleanup, runCairn, startCairn, waitFor } from '../harness/processes.ts';

const LONG_JOB = fileURLToPath(new URL('../../examples/tour/long-job.sh', import.meta.url));
const cleanup = new Cleanup();
afterAll(() => cleanup.run());

describe('cairn up stops promptly after a follower left', () => {
  it('a killed logs --follow leaves nothing that holds the agent up', async () => {
    const configDir = cleanup.dir('cairn-stop-follow-config-');
    const dataDir = cleanup.dir('cairn-stop-follow-');
    const env = { CAIRN_CONFIG_DIR: configDir, CAIRN_CREDENTIALS: '', CAIRN_TOKEN: '' };
    const up = cleanup.track(startCairn(['up', '--port', '0', '--agent-port', '0', '--dns-port', '0', '--data-dir', dataDir, '--resources', 'cpus:1;mem:512'], 'http://127.0.0.1:0', env));
    let stdout = '';
    let stderr = '';
    up.child.stdout!.on('data', (d) => (stdout += d));
    up.child.stderr!.on('data', (d) => (stderr += d));
    const url = await waitFor('the URL on stdout', () => /^(http:\/\/127\.0\.0\.1:\d+)\n/.exec(stdout)?.[1], 90_000);
    const cli = { ...env, CAIRN_MASTER: url };
    const run = await runCairn(['run', '--detach', '--file', LONG_JOB, '--', './long-job.sh', '600'], cli, 60_000);
    expect(run.code, run.stderr).toBe(0);
    const id = run.stdout.trim();
    // Followed until the output shows, then the client is killed mid-stream.
    const follow = cleanup.track(startCairn(['logs', id, '--follow'], url, cli));
    let followed = '';
    follow.child.stdout!.on('data', (d) => (followed += d));
    await waitFor('the followed output', () => (/step 1 of 600/.test(followed) ? true : undefined), 30_000);
    // Killed while still following (-1: ended by the signal, not on its own).
    expect(await follow.kill('SIGKILL')).toBe(-1);
    expect((await runCairn(['kill', id], cli)).code).toBe(0);
    const t0 = Date.now();
    expect(await up.kill('SIGINT')).toBe(0);
    expect(Date.now() - t0).toBeLessThan(15_000);
    expect(stderr).not.toMatch(/did not stop within/);
  }, 180_000);
});
