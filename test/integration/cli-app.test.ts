// `cairn app …` as a user runs it, against a master with simulated agents: deploy a file
// holding a list of apps, list, show, tasks, scale, restart, queue, deployments, delete;
// a refused app prints Marathon's field paths and exits 1; --help has examples.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startMaster, type MasterHandle } from '../../master/server.ts';
import { MasterAuth } from '../../master/auth/master-auth.ts';
import { silentLogger } from '../../shared/logger.ts';
import { FakeAgent } from '../harness/fake-agent.ts';
import { runCairn, tempDir } from '../harness/processes.ts';
import { waitForNoDeployments, waitForRunning } from '../harness/marathon.ts';

let master: MasterHandle;
let dir: string;
let agent: FakeAgent;

beforeAll(async () => {
  dir = tempDir();
  master = await startMaster({ auth: MasterAuth.off(), dataDir: join(dir, 'm'), port: 0, host: '127.0.0.1', dnsPort: null, logger: silentLogger() });
  agent = new FakeAgent({ masterUrl: master.url, hostname: 'h1' });
  await agent.connect();
});

afterAll(async () => {
  await agent.close();
  await master.stop();
  rmSync(dir, { recursive: true, force: true });
});

const cairn = (...args: string[]) => runCairn(['app', ...args, '--master', master.url], {}, 60_000);

describe('cairn app', () => {
  it('deploys a list of apps, lists, scales, restarts and deletes them', async () => {
    const file = join(dir, 'apps.json');
    writeFileSync(file, JSON.stringify([
      { id: '/dev/web', cmd: 'sleep 1000', cpus: 0.1, mem: 16, instances: 2, extra: true },
      { id: '/dev/db', cmd: 'sleep 1000', cpus: 0.1, mem: 16 },
    ]));
    const deploy = await cairn('deploy', file);
    expect(deploy.code, deploy.stderr).toBe(0);
    expect(deploy.stdout).toMatch(/^app created: \/dev\/web \(deployment [0-9a-f-]+\)$/m);
    expect(deploy.stdout).toMatch(/^app created: \/dev\/db /m);
    expect(deploy.stderr).toContain('/dev/web: fields not used: /extra');
    await waitForRunning(master.url, '/dev/web', 2);
    await waitForNoDeployments(master.url);

    const list = await cairn('list');
    expect(list.stdout.split('\n')[0]).toMatch(/^ID\s+RUNNING\s+HEALTHY\s+CPUS\s+MEM\s+DEPLOYMENT$/);
    expect(list.stdout).toMatch(/^\/dev\/web\s+2\/2\s+-\s+0\.1\s+16\s+-$/m);
    const json = JSON.parse((await cairn('list', '-o', 'json')).stdout);
    expect(json.map((a: { id: string }) => a.id).sort()).toEqual(['/dev/db', '/dev/web']);

    expect((await cairn('show', 'dev/web')).stdout).toMatch(/^id: \/dev\/web$/m);
    const tasks = await cairn('tasks', '/dev/web');
    expect(tasks.stdout.split('\n').filter((l) => l.startsWith('dev_web.'))).toHaveLength(2);

    const scale = await cairn('scale', '/dev/web', '3');
    expect(scale.code, scale.stderr).toBe(0);
    expect(scale.stdout).toMatch(/^\/dev\/web: scaling to 3 \(deployment /);
    await waitForRunning(master.url, '/dev/web', 3);
    await waitForNoDeployments(master.url);

    // Redeploying the file updates the apps (a PUT each): web goes back to 2.
    const again = await cairn('deploy', '-f', file);
    expect(again.stdout).toMatch(/^app updated: \/dev\/web/m);
    await waitForRunning(master.url, '/dev/web', 2);
    await waitForNoDeployments(master.url);

    expect((await cairn('restart', '/dev/db')).code).toBe(0);
    await waitForNoDeployments(master.url);
    // An empty list: nothing on stdout, kubectl's words on stderr, exit 0.
    const none = await cairn('deployments');
    expect([none.code, none.stdout, none.stderr]).toEqual([0, '', 'No resources found\n']);
    expect((await cairn('delete', '/dev/db')).code).toBe(0);
    await waitForNoDeployments(master.url);
    expect((await cairn('list')).stdout).not.toContain('/dev/db');
  }, 240_000);

  it('prints why an app was refused, and what waits in the queue', async () => {
    const file = join(dir, 'bad.json');
    writeFileSync(file, JSON.stringify({ id: '/bad', cmd: 'x', cpus: -1, constraints: [['hostname', 'NEAR']] }));
    const bad = await cairn('deploy', file);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain('/cpus: got -1, expected 0 or more');
    expect(bad.stderr).toContain('/constraints(0): Constraint operator must be one of');
    writeFileSync(file, '{"id": ');
    expect((await cairn('deploy', file)).stderr).toContain('is not JSON');

    writeFileSync(file, JSON.stringify({ id: '/big', cmd: 'x', cpus: 100, mem: 16 }));
    expect((await cairn('deploy', file)).code).toBe(0);
    let queue = '';
    for (let i = 0; i < 60 && !/InsufficientCpus:[1-9]/.test(queue); i++) {
      queue = (await cairn('queue')).stdout;
      if (!/InsufficientCpus:[1-9]/.test(queue)) await new Promise((r) => setTimeout(r, 500));
    }
    expect(queue).toMatch(/^\/big\s+1\s+-\s+[1-9][0-9]*\s+InsufficientCpus:[1-9]/m);
    const locked = await cairn('scale', '/big', '2');
    expect(locked.code).toBe(1);
    expect(locked.stderr).toContain('add --force');
    expect((await cairn('delete', '/big', '--force')).code).toBe(0);
  }, 240_000);

  it('has help with examples', async () => {
    const help = await runCairn(['app', 'deploy', '--help']);
    expect(help.stdout).toContain('Examples:\n  cairn app deploy web.json');
    expect((await runCairn(['app', '--help'])).stdout).toMatch(/queue \[options\]\s+instances waiting to start/);
  }, 120_000);
});
