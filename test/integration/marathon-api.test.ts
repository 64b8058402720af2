// The services framework's REST API on an in-process master with simulated agents (which
// report every task RUNNING at once): apps posted, scaled, restarted and deleted; bad input
// refused Marathon's way with nothing changed; a locked app; the queue saying why an
// instance waits; events of a deployment.

import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { rmSync } from 'node:fs';
import { startMaster, type MasterHandle } from '../../master/server.ts';
import { MasterAuth } from '../../master/auth/master-auth.ts';
import { silentLogger } from '../../shared/logger.ts';
import { FakeAgent } from '../harness/fake-agent.ts';
import { tempDir, waitFor } from '../harness/processes.ts';
import { marathon, waitForNoDeployments, waitForRunning } from '../harness/marathon.ts';

let master: MasterHandle;
let dir: string;
let agents: FakeAgent[] = [];

async function addAgent(hostname: string, resources = 'cpus:8;mem:16384;disk:100000;ports:[31000-32000]'): Promise<FakeAgent> {
  const a = new FakeAgent({ masterUrl: master.url, hostname, resources });
  agents.push(a);
  await a.connect();
  return a;
}

beforeEach(async () => {
  dir = tempDir();
  master = await startMaster({ auth: MasterAuth.off(), dataDir: dir, port: 0, host: '127.0.0.1', dnsPort: null, logger: silentLogger() });
});

afterEach(async () => {
  await Promise.all(agents.map((a) => a.close()));
  agents = [];
  await master.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe('Marathon REST API', () => {
  it('runs, scales, restarts and deletes an app', async () => {
    await addAgent('h1');
    await addAgent('h2');
    const created = await marathon(master.url, 'POST', '/v2/apps', { id: '/dev/web', cmd: 'sleep 1000', cpus: 0.1, mem: 32, instances: 3, labels: { team: 'x' }, fancy: { a: 1 } });
    expect(created.status).toBe(201);
    expect(created.headers.get('location')).toBe('/v2/apps/dev/web');
    expect(created.body).toMatchObject({ id: '/dev/web', instances: 3, backoffFactor: 1.15, portDefinitions: [{ port: 0, protocol: 'tcp' }], ignoredFields: ['/fancy'], fancy: { a: 1 } });
    const tasks = await waitForRunning(master.url, '/dev/web', 3);
    expect(tasks[0].id).toMatch(/^dev_web\.[0-9a-f-]{36}$/);
    await waitForNoDeployments(master.url);

    const launched = agents.flatMap((a) => a.launched);
    expect(launched).toHaveLength(3);
    expect(launched[0]!.name).toBe('web-dev');

    const scaled = await marathon(master.url, 'PUT', '/v2/apps/dev/web', { instances: 1 });
    expect(scaled.status).toBe(200);
    expect(scaled.body.deploymentId).toBeTypeOf('string');
    await waitForRunning(master.url, '/dev/web', 1);
    await waitForNoDeployments(master.url);
    expect(agents.flatMap((a) => a.killed)).toHaveLength(2);

    const before = (await waitForRunning(master.url, '/dev/web', 1))[0].id;
    expect((await marathon(master.url, 'POST', '/v2/apps/dev/web/restart')).status).toBe(200);
    await waitFor('the restarted instance', async () => {
      const t = await waitForRunning(master.url, '/dev/web', 1);
      return t[0].id !== before ? true : undefined;
    }, 20_000);
    await waitForNoDeployments(master.url);

    const list = await marathon(master.url, 'GET', '/v2/apps?embed=apps.tasks&label=team==x');
    expect(list.body.apps).toHaveLength(1);
    expect(list.body.apps[0].tasks).toHaveLength(1);
    expect((await marathon(master.url, 'GET', '/v2/apps?label=team==y')).body.apps).toHaveLength(0);

    const del = await marathon(master.url, 'DELETE', '/v2/apps/dev/web');
    expect(del.status).toBe(200);
    await waitForNoDeployments(master.url);
    expect((await marathon(master.url, 'GET', '/v2/apps/dev/web')).status).toBe(404);
    expect((await marathon(master.url, 'GET', '/v2/tasks')).body.tasks).toHaveLength(0);
  });
});
