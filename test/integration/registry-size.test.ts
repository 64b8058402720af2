// The registry gives back what deleted objects took (issue 22, finding 7: a hundred fat apps
// left 260 MB of registry that deleting them did not shrink). Apps with 100 KB of environment
// each are created through Marathon and deleted again; the store must then shrink on disk:
// the single master's registry.sqlite, and every replicated master's raft.sqlite. The
// measuring for deletions runs every 250 ms here instead of every minute.

import { afterAll, describe, expect, it } from 'vitest';
import { rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { startMaster, type MasterHandle } from '../../master/server.ts';
import { MasterAuth } from '../../master/auth/master-auth.ts';
import { silentLogger } from '../../shared/logger.ts';
import { startMasterGroup } from '../harness/master-group.ts';
import { tempDir, waitFor } from '../harness/processes.ts';
import { marathon } from '../harness/marathon.ts';

const APPS = 60;
const compaction = { checkEveryMs: 250 };

function fatApp(id: string): unknown {
  return { id, cmd: 'sleep 1000', cpus: 0.1, mem: 16, instances: 0, env: { PAYLOAD_A: 'x'.repeat(50 * 1024), PAYLOAD_B: 'y'.repeat(50 * 1024) } };
}

/** A SQLite store's bytes on disk: its file and its WAL. */
function storeBytes(path: string): number {
  let n = 0;
  for (const p of [path, `${path}-wal`]) {
    try {
      n += statSync(p).size;
    } catch {
      // no WAL
    }
  }
  return n;
}

/** Creates the fat apps through `url`, then deletes them; returns the largest size `paths` reached. */
async function createAndDelete(url: string, paths: string[]): Promise<number> {
  for (let i = 0; i < APPS; i++) {
    const r = await marathon(url, 'POST', '/v2/apps', fatApp(`/fat-${i}`));
    expect(r.status, JSON.stringify(r.body)).toBe(201);
  }
  const peak = Math.max(...paths.map(storeBytes));
  for (let i = 0; i < APPS; i++) {
    const r = await marathon(url, 'DELETE', `/v2/apps/fat-${i}?force=true`);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
  }
  expect((await marathon(url, 'GET', '/v2/apps')).body.apps).toEqual([]);
  return peak;
}

describe('the registry after its objects are deleted', { timeout: 240_000 }, () => {
  const dirs: string[] = [];
  const masters: MasterHandle[] = [];
  afterAll(async () => {
    await Promise.all(masters.map((m) => m.stop()));
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  it("shrinks a single master's registry.sqlite", async () => {
    const dir = tempDir();
    dirs.push(dir);
    const master = await startMaster({ auth: MasterAuth.off(), dataDir: dir, port: 0, host: '127.0.0.1', dnsPort: null, logger: silentLogger(), compaction });
    masters.push(master);
    const file = join(dir, 'registry', 'registry.sqlite');
    const peak = await createAndDelete(master.url, [file]);
    // Sixty apps of 100 KB: at least 6 MB was written.
    expect(peak).toBeGreaterThan(APPS * 100 * 1024);
    const after = await waitFor('registry.sqlite shrunk', () => (storeBytes(file) < 1024 * 1024 ? storeBytes(file) : undefined), 30_000, 100);
    console.log(`registry.sqlite: ${peak} bytes with ${APPS} apps, ${after} bytes once they were deleted`);
  });

  it("shrinks every replicated master's raft.sqlite", async () => {
    const dir = tempDir();
    dirs.push(dir);
    const group = await startMasterGroup(dir, 3, 'a-test-secret-of-enough-bytes', { tickMs: 50 }, { compaction });
    masters.push(...group);
    const lead = await waitFor('a leader', () => group.find((m) => m.raft!.status().role === 'leader' && m.raft!.status().ready), 20_000);
    const files = [1, 2, 3].map((id) => join(dir, `m${id}`, 'raft', 'raft.sqlite'));
    const peak = await createAndDelete(lead.url, files);
    expect(peak).toBeGreaterThan(APPS * 100 * 1024);
    let sizes: number[] = [];
    const after = await waitFor('every raft.sqlite shrunk', () => {
      sizes = files.map(storeBytes);
      return sizes.every((n) => n < 1024 * 1024) ? sizes : undefined;
    }, 30_000, 100).catch((err: Error) => {
      throw new Error(`${err.message}: ${sizes.join(', ')} bytes`);
    });
    console.log(`raft.sqlite: ${peak} bytes at most with ${APPS} apps, ${after.join(', ')} bytes once they were deleted`);
  });
});
