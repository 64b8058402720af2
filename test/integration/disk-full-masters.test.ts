// Three replicated masters, the leader's data dir fills up (issue 22, finding 12). The
// leader must neither exit nor speak for what it could not write: it falls silent, the two
// masters that can write elect a leader among themselves and take writes, the full one keeps
// answering reads and refuses writes with 507; once its disk has room again it catches up by
// itself, without a restart, and no acknowledged write is lost. And a follower on a full
// disk gives no vote it could not write: with the leader killed, the one other master cannot
// be elected until the full one's disk has room. Each master's data dir is a tmpfs of its own.

import { afterAll, describe, expect, it } from 'vitest';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { Cleanup, tempDir, waitFor } from '../harness/processes.ts';
import { getFromMaster, masterRole, startMasterProcesses, waitForLeaderProcess, type MasterMember } from '../harness/master-processes.ts';
import { marathon } from '../harness/marathon.ts';
import { SmallDisk, smallDiskUnusable } from '../harness/small-disk.ts';

const unusable = smallDiskUnusable();
if (unusable !== undefined) {
  if (process.env.CI) throw new Error(`the full-disk test of replicated masters must run in CI, but ${unusable}`);
  console.log(`skipping the full-disk test of replicated masters: ${unusable}`);
}

function fatApp(id: string): unknown {
  return { id, cmd: 'sleep 1000', cpus: 0.1, mem: 16, instances: 0, env: { PAYLOAD_A: 'x'.repeat(50 * 1024), PAYLOAD_B: 'y'.repeat(50 * 1024) } };
}

interface Replication { role: string; term: number; commit: number; applied: number; storageRefusing?: string }

describe.skipIf(unusable !== undefined)('replicated masters, one of them on a full disk', () => {
  const cleanup = new Cleanup();
  const disks: SmallDisk[] = [];
  // Not the cleanup's: its disks are unmounted after the masters stop and before it is removed.
  const base = tempDir('cairn-full-masters-');
  afterAll(async () => {
    await cleanup.run();
    for (const d of disks) d.unmount();
    rmSync(base, { recursive: true, force: true });
  });

  it('the others elect a leader and take writes; the full one serves reads, refuses writes with 507, and catches up when space returns', async () => {
    for (let i = 1; i <= 3; i++) disks.push(new SmallDisk(8, join(base, `m${i}`)).mount());
    const members = await startMasterProcesses(cleanup, base, 3);
    const first = await waitForLeaderProcess(members);
    const acked: string[] = [];
    for (const id of ['/before-0', '/before-1']) {
      const r = await marathon(first.url, 'POST', '/v2/apps', fatApp(id));
      expect(r.status, JSON.stringify(r.body)).toBe(201);
      acked.push(id);
    }

    const full = disks[first.id - 1];
    full.fill();
    // Writes SQLite's files still had room for may be acknowledged; then the full leader refuses.
    let refusal: { status: number; body: any } | undefined;
    for (let i = 0; i < 100 && refusal === undefined; i++) {
      const id = `/full-${i}`;
      const r = await marathon(first.url, 'POST', '/v2/apps', fatApp(id));
      if (r.status === 201) acked.push(id);
      else refusal = r;
    }
    expect(refusal?.status, JSON.stringify(refusal?.body)).toBe(507);
    expect(JSON.stringify(refusal!.body)).toContain(full.dir);

    // The two that can write elect one of themselves; it takes writes.
    const others = members.filter((m) => m !== first);
    const next: MasterMember = await waitFor('a leader among the masters that can write', async () => {
      for (const m of others) if ((await masterRole(m.url)) === 'leader') return m;
      return undefined;
    }, 30_000, 100);
    for (const id of ['/during-0', '/during-1']) {
      const r = await waitFor(`${id} accepted by the new leader`, async () => {
        const a = await marathon(next.url, 'POST', '/v2/apps', fatApp(id));
        return a.status === 201 ? a : undefined;
      }, 20_000, 200);
      expect(r.status).toBe(201);
      acked.push(id);
    }

    // The full master lives, answers reads, says why it takes no writes.
    expect(first.proc!.child.exitCode).toBeNull();
    const stuck = await getFromMaster<Replication>(first.url, '/api/v1/replication');
    expect(stuck?.storageRefusing).toMatch(/full/);
    expect((await marathon(first.url, 'GET', '/v2/apps')).status).toBe(200);

    // Room again: it writes what it held, follows the new leader and catches up, by itself.
    full.free();
    const target = (await getFromMaster<Replication>(next.url, '/api/v1/replication'))!.commit;
    await waitFor('the full master caught up without a restart', async () => {
      const s = await getFromMaster<Replication>(first.url, '/api/v1/replication');
      return s !== undefined && s.storageRefusing === undefined && s.role !== 'leader' && s.applied >= target ? s : undefined;
    }, 30_000, 200);
    expect(first.proc!.child.exitCode).toBeNull();

    // Every acknowledged write is there, as the leader and as the recovered master (which passes reads on to it) say.
    const lead = await waitForLeaderProcess(members);
    const r = await marathon(lead.url, 'POST', '/v2/apps', fatApp('/after-0'));
    expect(r.status).toBe(201);
    acked.push('/after-0');
    for (const m of [lead, first]) {
      const apps = await marathon(m.url, 'GET', '/v2/apps');
      const ids = new Set((apps.body.apps as { id: string }[]).map((a) => a.id));
      expect(acked.filter((id) => !ids.has(id))).toEqual([]);
    }
  }, 240_000);

  it('a master that cannot write its vote does not give it: with the leader gone, no leader until its disk has room', async () => {
    const base2 = join(base, 'second');
    for (let i = 1; i <= 3; i++) disks.push(new SmallDisk(8, join(base2, `m${i}`)).mount());
    const groupDisks = disks.slice(-3);
    const members = await startMasterProcesses(cleanup, base2, 3);
    const leader = await waitForLeaderProcess(members);
    const [full, writable] = members.filter((m) => m !== leader);
    const acked: string[] = [];
    groupDisks[full.id - 1].fill();
    // The leader and the writable follower are a quorum: writes go on, until the full one has
    // used what its files kept in reserve and says its disk refuses them.
    for (let i = 0; (await getFromMaster<Replication>(full.url, '/api/v1/replication'))?.storageRefusing === undefined; i++) {
      expect(i, 'writes the full follower still took').toBeLessThan(60);
      const r = await marathon(leader.url, 'POST', '/v2/apps', fatApp(`/quorum-${i}`));
      expect(r.status, JSON.stringify(r.body)).toBe(201);
      acked.push(`/quorum-${i}`);
    }
    await leader.proc!.kill('SIGKILL');
    // The writable one needs the full one's vote, which it cannot persist, so it never sends it.
    const deadline = Date.now() + 5_000;
    while (Date.now() < deadline) {
      expect(await masterRole(writable.url)).not.toBe('leader');
      expect(await masterRole(full.url)).not.toBe('leader');
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(full.proc!.child.exitCode).toBeNull();
    groupDisks[full.id - 1].free();
    const lead = await waitForLeaderProcess([full, writable]);
    const apps = await marathon(lead.url, 'GET', '/v2/apps');
    const ids = new Set((apps.body.apps as { id: string }[]).map((a) => a.id));
    expect(acked.filter((id) => !ids.has(id))).toEqual([]);
  }, 240_000);
});
