// A master whose data dir fills up (issue 22, finding 12): it used to exit on SQLITE_FULL,
// rethrown from the write path, and refuse to start while the disk stayed full. Now writes
// are refused with 507 naming the data dir, reads are served, the process lives, writes are
// taken again by themselves once the disk has room, nothing acknowledged is lost, and a
// master started on a full disk serves reads and refuses writes the same way. Marathon,
// Cairn's own API and the Mesos scheduler API all answer 507.
// The data dir is a tmpfs of 8 MiB, filled with a filler file.

import { afterAll, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { Cleanup, freePort, runCairn, startMasterProcess, waitFor, type CairnProcess } from '../harness/processes.ts';
import { authFetch } from '../harness/credentials.ts';
import { marathon } from '../harness/marathon.ts';
import { SmallDisk, smallDiskUnusable } from '../harness/small-disk.ts';

const unusable = smallDiskUnusable();
if (unusable !== undefined) {
  if (process.env.CI) throw new Error(`the full-disk test must run in CI, but ${unusable}`);
  console.log(`skipping the full-disk test of the master: ${unusable}`);
}

/** An app with a fat environment, so that a few of them use up what SQLite's files keep in reserve. */
function fatApp(id: string): unknown {
  return { id, cmd: 'sleep 1000', cpus: 0.1, mem: 16, instances: 0, env: { PAYLOAD_A: 'x'.repeat(50 * 1024), PAYLOAD_B: 'y'.repeat(50 * 1024) } };
}

async function appIds(url: string): Promise<string[]> {
  const r = await marathon(url, 'GET', '/v2/apps');
  expect(r.status).toBe(200);
  return (r.body.apps as { id: string }[]).map((a) => a.id).sort();
}

/** Creates apps until one is refused; returns the ids acknowledged (201) and the refusal. */
async function createUntilRefused(url: string, prefix: string, limit: number): Promise<{ acked: string[]; refusal: { status: number; body: any; headers: Headers } }> {
  const acked: string[] = [];
  for (let i = 0; i < limit; i++) {
    const id = `/${prefix}-${i}`;
    const r = await marathon(url, 'POST', '/v2/apps', fatApp(id));
    if (r.status === 201) acked.push(id);
    else return { acked, refusal: r };
  }
  throw new Error(`${limit} apps were all accepted on a full disk`);
}

function expectStorageRefusal(r: { status: number; body: any; headers: Headers }, dataDir: string): void {
  expect(r.status).toBe(507);
  expect(r.headers.get('cairn-error-code') ?? r.body.code).toBe('CAIRN_STORAGE_FULL');
  expect(JSON.stringify(r.body)).toContain(dataDir);
  expect(JSON.stringify(r.body)).toMatch(/disk full/);
}

describe.skipIf(unusable !== undefined)('a master on a full disk', () => {
  const cleanup = new Cleanup();
  const disk = new SmallDisk(8);
  afterAll(async () => {
    await cleanup.run();
    disk.unmount();
  });

  it('refuses writes with 507, serves reads, stays up, takes writes again when space returns, and starts on a full disk', async () => {
    disk.mount();
    const dataDir = join(disk.dir, 'master');
    const port = await freePort();
    let master: CairnProcess = await startMasterProcess(cleanup, { dataDir, port });
    const url = master.url;
    const acked: string[] = [];
    for (const id of ['/before-0', '/before-1']) {
      const r = await marathon(url, 'POST', '/v2/apps', fatApp(id));
      expect(r.status, JSON.stringify(r.body)).toBe(201);
      acked.push(id);
    }

    // Full: the writes SQLite's files still had room for are acknowledged; then 507.
    expect(disk.fill()).toBeGreaterThan(0);
    const full = await createUntilRefused(url, 'full', 100);
    acked.push(...full.acked);
    expectStorageRefusal(full.refusal, dataDir);
    // Cairn's own API says the same.
    const secret = await authFetch(`${url}/api/v1/secrets`, {
      method: 'POST', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'pull', dockerConfig: { auths: { 'registry.example': { auth: Buffer.from('u:p').toString('base64') } } } }),
    });
    expect(secret.status).toBe(507);
    expect((await secret.json()).code).toBe('CAIRN_STORAGE_FULL');
    // So does the Mesos scheduler API: a framework's subscription cannot be recorded.
    const subscribe = await authFetch(`${url}/api/v1/scheduler`, {
      method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json' },
      body: JSON.stringify({ type: 'SUBSCRIBE', subscribe: { framework_info: { user: 'nobody', name: 'full-disk' } } }),
    });
    expect(subscribe.status).toBe(507);
    expect((await subscribe.json()).code).toBe('CAIRN_STORAGE_FULL');
    // The Mesos-compatible reads are served.
    expect((await authFetch(`${url}/master/state`)).status).toBe(200);
    // Reads are served, from the same process.
    expect(await appIds(url)).toEqual([...acked].sort());
    expect((await authFetch(`${url}/api/v1/state`)).status).toBe(200);
    expect(master.child.exitCode).toBeNull();

    // Room again: the next write goes through, without a restart.
    disk.free();
    const after = await waitFor('a write accepted once the disk has room', async () => {
      const r = await marathon(url, 'POST', '/v2/apps', fatApp('/after-0'));
      return r.status === 201 ? r : undefined;
    }, 30_000, 200);
    expect(after.status).toBe(201);
    acked.push('/after-0');
    expect(master.child.exitCode).toBeNull();
    expect(await appIds(url)).toEqual([...acked].sort());

    // Nothing acknowledged was lost: a restart finds every app.
    await master.kill('SIGTERM');
    master = await startMasterProcess(cleanup, { dataDir, port });
    expect(await appIds(url)).toEqual([...acked].sort());

    // Started on a full disk: it comes up, serves reads, refuses writes with 507.
    await master.kill('SIGTERM');
    disk.fill();
    master = await startMasterProcess(cleanup, { dataDir, port });
    expect(await appIds(url)).toEqual([...acked].sort());
    // Its data dir lock, whose holder could not be written, still keeps a second master out, naming the first.
    const second = await runCairn(['master', '--port', String(await freePort()), '--host', '127.0.0.1', '--data-dir', dataDir, '--dns-port', '0']);
    expect(second.code).not.toBe(0);
    expect(second.stderr).toContain(`is in use by unknown pid ${master.child.pid}`);
    const refused = await createUntilRefused(url, 'on-full', 100);
    acked.push(...refused.acked);
    expectStorageRefusal(refused.refusal, dataDir);
    expect(master.child.exitCode).toBeNull();
    disk.free();
    await waitFor('a write accepted once the disk has room', async () => ((await marathon(url, 'POST', '/v2/apps', fatApp('/after-1'))).status === 201 ? true : undefined), 30_000, 200);
    acked.push('/after-1');
    expect(await appIds(url)).toEqual([...acked].sort());
  }, 180_000);
});
