// Issue 22, findings 10 and 11: storage that is gone is not taken for a new cluster.
// A follower whose raft.sqlite was deleted (or emptied) and which restarts with its usual
// --peers refuses to start, naming its data dir and --new-member, and the leader stops
// counting it as matched. Started while its peers were down (so nobody could tell it), it
// founds nothing usable: once they are back they refuse it both ways, it never votes, and its
// reads answer 503 naming why; with one other master stopped, a write fails clearly rather
// than hanging on a false match. Removed and started again with --new-member, it catches up.
// Every member's incarnation is recorded in the log: a master re-added after a member lost its
// storage, which never heard from that member, still refuses it (told by the log or by the
// snapshot it caught up from) — it tells the wiped member so, and never counts its vote.
// A 0-byte registry.sqlite of a single master refuses to start, naming the file and the flag.

import { afterAll, describe, expect, it } from 'vitest';
import { rmSync, truncateSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startMaster, type MasterHandle, type MasterOptions } from '../../master/server.ts';
import { MasterAuth } from '../../master/auth/master-auth.ts';
import { silentLogger } from '../../shared/logger.ts';
import { Cleanup, freePort, startCairn, waitFor } from '../harness/processes.ts';
import { RawScheduler } from '../harness/raw-scheduler.ts';

const cleanup = new Cleanup();
const running = new Set<MasterHandle>();
afterAll(async () => {
  await Promise.all([...running].map((m) => m.stop()));
  await cleanup.run();
});

const SECRET = 'a-test-secret-of-enough-bytes';

/** Three masters on loopback ports, each started and stopped at will (`members`: its --peers, all three by default). */
async function threeMasters(prefix: string, extra: Partial<MasterOptions> = {}) {
  const base = cleanup.dir(prefix);
  const ports = await Promise.all([1, 2, 3].map(() => freePort()));
  const members = new Map(ports.map((p, i) => [i + 1, `http://127.0.0.1:${p}`] as [number, string]));
  const dataDir = (id: number) => join(base, `m${id}`);
  const start = async (id: number, opts: { join?: boolean; members?: Map<number, string> } = {}) => {
    const m = await startMaster({ ...extra, auth: MasterAuth.off(), port: ports[id - 1], host: '127.0.0.1', dataDir: dataDir(id), logger: silentLogger(), dnsPort: null, raft: { id, members: opts.members ?? members, secret: SECRET, join: opts.join } });
    running.add(m);
    return m;
  };
  const stop = async (m: MasterHandle) => {
    running.delete(m);
    await m.stop();
  };
  const leaderOf = (ms: MasterHandle[]) => waitFor('a leader', () => ms.find((m) => m.raft!.status().role === 'leader' && m.raft!.status().ready), 20_000);
  /** A write (a framework subscribing) through `to`: its HTTP status, -1 when unanswered. */
  const write = async (to: MasterHandle, name: string) => {
    const s = new RawScheduler(to.url, {});
    const r = await Promise.race([s.subscribe({ user: 'w', name, failover_timeout: 3600 }), new Promise<{ status: number }>((r) => setTimeout(() => r({ status: -1 }), 20_000))]);
    s.close();
    return r.status;
  };
  const written = async (to: MasterHandle, name: string) => expect(await waitFor(`write ${name}`, async () => ((await write(to, name)) === 200 ? 200 : undefined))).toBe(200);
  return { members, dataDir, start, stop, leaderOf, written };
}

/** Waits until every one of `masters` records the incarnation each master in `all` has. */
async function recordedEverywhere(masters: MasterHandle[], all: MasterHandle[]): Promise<void> {
  const own = new Map(all.map((m) => [m.raft!.status().id, m.raft!.status().incarnation]));
  await waitFor('every member\'s incarnation recorded on every master', () =>
    masters.every((m) => m.raft!.status().members.every((x) => x.incarnation === own.get(x.id))) || undefined, 20_000);
}

/** Removes master `id` on `leader`, asking again while the leader cannot yet tell a quorum is live. */
async function removeMaster(leader: MasterHandle, id: number): Promise<void> {
  await waitFor(`the removal of master ${id}`, async () => {
    try {
      await leader.raft!.removeMaster(id);
      return true;
    } catch {
      return undefined;
    }
  });
}

describe('a Raft member whose storage is gone', () => {
  it('refuses to found again, stays out until re-added, and is not counted as matched', async () => {
    const base = cleanup.dir('cairn-raft-wiped-');
    const ports = await Promise.all([1, 2, 3].map(() => freePort()));
    const members = new Map(ports.map((p, i) => [i + 1, `http://127.0.0.1:${p}`] as [number, string]));
    const dataDir = (id: number) => join(base, `m${id}`);
    const start = async (id: number, extra: { join?: boolean } = {}) => {
      const m = await startMaster({ auth: MasterAuth.off(), port: ports[id - 1], host: '127.0.0.1', dataDir: dataDir(id), logger: silentLogger(), dnsPort: null, raft: { id, members, secret: SECRET, ...extra } });
      running.add(m);
      return m;
    };
    const stop = async (m: MasterHandle) => {
      running.delete(m);
      await m.stop();
    };
    const byId = new Map<number, MasterHandle>();
    for (const m of await Promise.all([1, 2, 3].map((id) => start(id)))) byId.set(m.raft!.status().id, m);
    const leaderOf = (ms: MasterHandle[]) => waitFor('a leader', () => ms.find((m) => m.raft!.status().role === 'leader' && m.raft!.status().ready), 20_000);
    let leader = await leaderOf([...byId.values()]);

    const acknowledged: string[] = [];
    const write = async (to: MasterHandle, name: string) => {
      const s = new RawScheduler(to.url, {});
      const r = await Promise.race([s.subscribe({ user: 'w', name, failover_timeout: 3600 }), new Promise<{ status: number }>((r) => setTimeout(() => r({ status: -1 }), 20_000))]);
      s.close();
      if (r.status === 200) acknowledged.push(s.frameworkId);
      return r.status;
    };
    for (let i = 0; i < 5; i++) expect(await waitFor(`write ${i}`, async () => ((await write(leader, `before-${i}`)) === 200 ? 200 : undefined))).toBe(200);
    const follower = [...byId.values()].find((m) => m !== leader)!;
    const fid = follower.raft!.status().id;
    await waitFor('the follower has every write', () => follower.raft!.status().applied >= leader.raft!.status().commit || undefined);
    const matched = leader.raft!.membership().progress.get(fid)!.match;
    expect(matched).toBeGreaterThan(5);

    // Its raft.sqlite deleted, restarted with its usual --peers: refused, naming the data dir and --new-member.
    await stop(follower);
    byId.delete(fid);
    for (const f of ['raft.sqlite', 'raft.sqlite-wal', 'raft.sqlite-shm']) rmSync(join(dataDir(fid), 'raft', f), { force: true });
    const refused = await start(fid).then(() => undefined, (err: Error & { code?: string }) => err);
    expect(refused?.code).toBe('CAIRN_RAFT_STORAGE_LOST');
    expect(refused?.message).toContain(join(dataDir(fid), 'raft'));
    expect(refused?.message).toContain('--new-member');
    expect(refused?.message).toContain(`knows master ${fid} from an earlier start`);
    // The leader heard its new incarnation: it no longer counts the old match.
    await waitFor('the leader forgot the lost match', () => leader.raft!.membership().progress.get(fid)!.match === 0 || undefined);

    // Emptied (0 bytes) rather than deleted: refused without asking anyone.
    writeFileSync(join(dataDir(fid), 'raft', 'raft.sqlite'), '');
    const emptied = await start(fid).then(() => undefined, (err: Error & { code?: string }) => err);
    expect(emptied?.code).toBe('CAIRN_RAFT_STORAGE_LOST');
    expect(emptied?.message).toContain(`${join(dataDir(fid), 'raft', 'raft.sqlite')} is empty (0 bytes)`);
    expect(emptied?.message).toContain('--new-member');
    rmSync(join(dataDir(fid), 'raft'), { recursive: true, force: true });

    // Started while its peers are down, nobody can tell it: it founds, but once they are back
    // they refuse it both ways, it learns its storage was lost and keeps out.
    const otherIds = [...byId.keys()];
    await Promise.all([...byId.values()].map(stop));
    const wiped = await start(fid);
    const back = await Promise.all(otherIds.map((id) => start(id)));
    byId.clear();
    for (const m of back) byId.set(m.raft!.status().id, m);
    await waitFor('the wiped member keeps out', () => wiped.raft!.status().notReady?.includes('storage was lost') || undefined, 20_000);
    leader = await leaderOf(back);
    expect(leader.raft!.status().id).not.toBe(fid);
    const r = await fetch(`${wiped.url}/api/v1/state`);
    expect(r.status).toBe(503);
    expect(((await r.json()) as { code: string; message: string })).toMatchObject({ code: 'CAIRN_NOT_READY', message: expect.stringContaining('--new-member') });
    expect(await waitFor('a write with the wiped member out', async () => ((await write(leader, 'during')) === 200 ? 200 : undefined))).toBe(200);
    expect(leader.raft!.membership().progress.get(fid)!.match).toBe(0);
    expect(wiped.raft!.status().applied).toBeLessThan(leader.raft!.status().applied);

    // With one other master stopped there is no quorum: a write fails clearly (the leader steps
    // down: nothing counts the wiped member), it does not hang.
    const other = back.find((m) => m !== leader)!;
    const otherId = other.raft!.status().id;
    await stop(other);
    const answers: number[] = [];
    const failed = await waitFor('a refused write', async () => {
      const status = await write(leader, 'no-quorum');
      answers.push(status);
      return status !== 200 ? status : undefined;
    }, 30_000, 200);
    // Answered, not hung (-1): a write in flight when the leader steps down is refused too.
    expect(answers).not.toContain(-1);
    expect([503, 307]).toContain(failed);

    // Bring the other back, remove the wiped member, start it with --new-member, add it: it catches up.
    const otherBack = await start(otherId);
    leader = await leaderOf([leader, otherBack]);
    await waitFor('the removal', async () => {
      try {
        await leader.raft!.removeMaster(fid);
        return true;
      } catch {
        return undefined;
      }
    });
    await stop(wiped);
    rmSync(dataDir(fid), { recursive: true, force: true });
    const rejoined = await start(fid, { join: true });
    await leader.raft!.addMaster({ id: fid, url: members.get(fid)! });
    await waitFor('the re-added member caught up and serves reads', async () => {
      const s = rejoined.raft!.status();
      if (!s.ready || s.applied < leader.raft!.status().commit) return undefined;
      const state = await (await fetch(`${rejoined.url}/api/v1/state`)).json() as { frameworks: { id: string }[] };
      const have = new Set(state.frameworks.map((f) => f.id));
      return acknowledged.every((id) => have.has(id)) || undefined;
    }, 30_000, 100);
    expect(leader.raft!.membership().conf.voters).toContain(fid);
    expect(leader.raft!.membership().progress.get(fid)!.match).toBeGreaterThan(matched);
  }, 120_000);
});

describe('a member wiped after another master was re-added', () => {
  it('is refused by the re-added master, which never heard from it but knows it from the log: it refuses to start, or keeps out, its vote uncounted', async () => {
    const g = await threeMasters('cairn-raft-recorded-');
    const byId = new Map<number, MasterHandle>();
    for (const m of await Promise.all([1, 2, 3].map((id) => g.start(id)))) byId.set(m.raft!.status().id, m);
    const leader = await g.leaderOf([...byId.values()]);
    const lId = leader.raft!.status().id;
    for (let i = 0; i < 3; i++) await g.written(leader, `before-${i}`);
    await recordedEverywhere([...byId.values()], [...byId.values()]);
    const [rId, fId] = [...byId.keys()].filter((id) => id !== lId);
    const fIncarnation = byId.get(fId)!.raft!.status().incarnation;

    // Master R is removed, emptied and added back with --new-member, told of itself and the
    // leader only (as a joining master may be): it hears from the leader alone, never from F.
    await removeMaster(leader, rId);
    await g.stop(byId.get(rId)!);
    rmSync(g.dataDir(rId), { recursive: true, force: true });
    const rejoined = await g.start(rId, { join: true, members: new Map([[rId, g.members.get(rId)!], [lId, g.members.get(lId)!]]) });
    await leader.raft!.addMaster({ id: rId, url: g.members.get(rId)! });
    await waitFor('the re-added master caught up', () => (rejoined.raft!.status().ready && rejoined.raft!.status().applied >= leader.raft!.status().commit) || undefined, 30_000);
    const fOnR = rejoined.raft!.status().members.find((m) => m.id === fId)!;
    expect(fOnR.url).toBe(''); // it never dialled F
    expect(fOnR.incarnation).toBe(fIncarnation); // yet the log told it F's storage

    // F loses its storage. With the leader down, only R can answer its start: R knows it.
    await Promise.all([rejoined, byId.get(fId)!, leader].map(g.stop));
    rmSync(join(g.dataDir(fId), 'raft'), { recursive: true, force: true });
    let r = await g.start(rId);
    const refused = await g.start(fId).then(() => undefined, (err: Error & { code?: string }) => err);
    expect(refused?.code).toBe('CAIRN_RAFT_STORAGE_LOST');
    expect(refused?.message).toContain(`master ${rId} knows master ${fId} from an earlier start`);

    // Started while nobody answers, F founds alone; R, back, refuses it both ways and tells it
    // so: F keeps out, and R — which would lead with F's vote — does not count it.
    await g.stop(r);
    rmSync(join(g.dataDir(fId), 'raft'), { recursive: true, force: true });
    const wiped = await g.start(fId);
    r = await g.start(rId);
    await waitFor('the wiped member keeps out, told by R', () => wiped.raft!.status().notReady?.includes(`master ${rId} knows this master`) || undefined, 20_000);
    // Counting F's vote, R would lead within an election or two (it did before the log
    // recorded incarnations); watched over three election timeouts, it never does.
    for (const until = Date.now() + 3_000; Date.now() < until; await new Promise((res) => setTimeout(res, 50))) {
      expect(r.raft!.status().role).not.toBe('leader');
    }
    expect((await fetch(`${wiped.url}/api/v1/state`)).status).toBe(503);

    // The leader back: R and it go on; F counts for nothing.
    const next = await g.leaderOf([await g.start(lId), r]);
    await g.written(next, 'after');
    expect(next.raft!.membership().progress.get(fId)!.match).toBe(0);
    expect(wiped.raft!.status().ready).toBe(false);
  }, 120_000);

  it('learns every member\'s recorded incarnation from the snapshot it catches up from', async () => {
    const g = await threeMasters('cairn-raft-recorded-snap-', { compaction: { maxEntries: 4, checkEveryMs: 100 } });
    const all = await Promise.all([1, 2, 3].map((id) => g.start(id)));
    const leader = await g.leaderOf(all);
    await recordedEverywhere(all, all);
    const recordedBy = leader.raft!.status().commit;
    const rId = all.map((m) => m.raft!.status().id).find((id) => id !== leader.raft!.status().id)!;
    await removeMaster(leader, rId);
    await g.stop(all.find((m) => m.raft!.status().id === rId)!);
    rmSync(g.dataDir(rId), { recursive: true, force: true });
    // Enough writes that the leader folds the records' entries into a snapshot.
    for (let i = 0; i < 12; i++) await g.written(leader, `w-${i}`);
    await waitFor('the leader compacted its log past the records', () => leader.raft!.node.status().firstIndex > recordedBy + 1 || undefined, 20_000);

    const rejoined = await g.start(rId, { join: true });
    await leader.raft!.addMaster({ id: rId, url: g.members.get(rId)! });
    await waitFor('the re-added master caught up', () => (rejoined.raft!.status().ready && rejoined.raft!.status().applied >= leader.raft!.status().commit) || undefined, 30_000);
    // It started from a snapshot taken after the records: they came with it.
    expect(rejoined.raft!.node.status().firstIndex).toBeGreaterThan(recordedBy);
    const others = all.filter((m) => m.raft!.status().id !== rId);
    await recordedEverywhere([rejoined], [...others, rejoined]);
  }, 120_000);
});

describe('a single master whose registry is gone', () => {
  it('refuses a 0-byte registry.sqlite, naming the file and --accept-empty-registry', async () => {
    const dir = cleanup.dir('cairn-registry-empty-');
    const opts = { auth: MasterAuth.off(), port: 0, host: '127.0.0.1', dataDir: dir, logger: silentLogger(), dnsPort: null } as const;
    // A brand-new data dir starts as today.
    const fresh = await startMaster(opts);
    await fresh.stop();
    truncateSync(join(dir, 'registry', 'registry.sqlite'), 0);
    rmSync(join(dir, 'registry', 'registry.sqlite-wal'), { force: true });
    const refused = await startMaster(opts).then(async (m) => { await m.stop(); return undefined; }, (err: Error & { code?: string }) => err);
    expect(refused?.code).toBe('CAIRN_REGISTRY_UNUSABLE');
    expect(refused?.message).toContain(`${join(dir, 'registry', 'registry.sqlite')} is empty (0 bytes)`);
    expect(refused?.message).toContain('--accept-empty-registry');

    // Truncated (not a database any more): refused too.
    writeFileSync(join(dir, 'registry', 'registry.sqlite'), 'SQLite format 3\0 cut short');
    const cut = await startMaster(opts).then(async (m) => { await m.stop(); return undefined; }, (err: Error & { code?: string }) => err);
    expect(cut?.code).toBe('CAIRN_REGISTRY_UNUSABLE');
    expect(cut?.message).toContain('--accept-empty-registry');

    // The CLI names them the same way, and the flag accepts it.
    truncateSync(join(dir, 'registry', 'registry.sqlite'), 0);
    const port = await freePort();
    const args = ['master', '--port', String(port), '--host', '127.0.0.1', '--data-dir', dir, '--dns-port', '0'];
    const p = startCairn(args, `http://127.0.0.1:${port}`);
    const code = await new Promise<number | null>((resolve) => (p.child.exitCode !== null ? resolve(p.child.exitCode) : p.child.once('exit', (c) => resolve(c))));
    expect(code).toBe(1);
    expect(p.output).toContain('registry.sqlite is empty (0 bytes)');
    expect(p.output).toContain('--accept-empty-registry');
    const accepted = cleanup.track(startCairn([...args, '--accept-empty-registry'], `http://127.0.0.1:${port}`));
    await accepted.waitHealthy();
  }, 60_000);
});
