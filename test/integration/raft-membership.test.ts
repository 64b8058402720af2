// Changing the replicated masters' membership with real processes on loopback (issue 3's
// "add, remove, replace a master"): three masters; bad requests refused with their codes and
// nothing changed; a fourth added through a follower with `cairn masters add` (a learner
// until it has caught up, then a voter, holding the registry's data), a second change
// refused while that one is in progress; a master removed; a removal that would leave no
// quorum refused; a dead master replaced by a fifth with `cairn masters replace`; an added
// master restarted. Every acknowledged registry write is on every voter at the end.

import { afterAll, describe, expect, it } from 'vitest';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Cleanup, freePort, getJson, startCairn, waitFor, waitForLeader, type CairnProcess } from '../harness/processes.ts';
import { RawScheduler } from '../harness/raw-scheduler.ts';
import type { MastersView } from '../../shared/masters-view.ts';
import { authFetch } from '../harness/credentials.ts';

const cleanup = new Cleanup();
afterAll(() => cleanup.run());

interface Member { id: number; url: string; dataDir: string; proc: CairnProcess | undefined }

async function call(method: string, url: string, body?: unknown): Promise<{ status: number; body: any; location: string | null }> {
  const r = await authFetch(url, {
    method,
    redirect: 'manual',
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    signal: AbortSignal.timeout(10_000),
  });
  const text = await r.text();
  return { status: r.status, body: text ? JSON.parse(text) : undefined, location: r.headers.get('location') };
}

const view = (m: Member): Promise<MastersView> => getJson(`${m.url}/api/v1/masters`);
const voters = (v: MastersView) => v.masters.filter((x) => x.voter).map((x) => x.id);

/** Runs `cairn ARGS` to its end; resolves with its exit code and output. */
async function cli(args: string[]): Promise<{ code: number | null; output: string }> {
  const p = startCairn(args, '');
  const code = await new Promise<number | null>((resolve) => {
    if (p.child.exitCode !== null) resolve(p.child.exitCode);
    else p.child.once('exit', (c) => resolve(c));
  });
  return { code, output: p.output };
}

describe('replicated masters: membership changes', () => {
  it('adds, removes and replaces masters one at a time, refusing bad and unsafe changes', async () => {
    const base = cleanup.dir('cairn-raft-members-');
    const secretFile = join(base, 'secret');
    writeFileSync(secretFile, 'a-test-secret-of-enough-bytes\n');
    const members: Member[] = [];
    for (let id = 1; id <= 5; id++) members.push({ id, url: `http://127.0.0.1:${await freePort()}`, dataDir: join(base, `m${id}`), proc: undefined });
    const byId = (id: number) => members[id - 1];
    const founders = members.slice(0, 3);
    const peersOf = (ms: Member[]) => ms.map((m) => `${m.id}=${m.url}`).join(',');
    const start = async (m: Member, peers: string, extra: string[] = []) => {
      m.proc = cleanup.track(startCairn(['master', '--id', String(m.id), '--peers', peers, '--secret-file', secretFile, '--port', new URL(m.url).port, '--host', '127.0.0.1', '--data-dir', m.dataDir, '--dns-port', '0', ...extra], m.url));
      await m.proc.waitHealthy();
    };
    await Promise.all(founders.map((m) => start(m, peersOf(founders))));
    const leader = await waitForLeader(founders);
    const followers = founders.filter((m) => m !== leader);

    // Registry writes, acknowledged (SUBSCRIBED) only once committed.
    const acknowledged: string[] = [];
    const write = async (name: string) => {
      // A leader just elected answers 503 until its first entry is committed: a client asks again.
      const w = await waitFor(`a subscription of ${name}`, async () => {
        const s = new RawScheduler(leader.url);
        const r = await s.subscribe({ user: 'w', name, failover_timeout: 3600 });
        s.close();
        if (r.status === 503) return undefined;
        expect(r.status).toBe(200);
        return s;
      }, 15_000, 200);
      acknowledged.push(w.frameworkId);
    };
    for (let i = 0; i < 3; i++) await write(`before-${i}`);
    const hasWrites = (m: Member) =>
      waitFor(`every acknowledged write on master ${m.id}`, async () => {
        const have = new Set((await getJson(`${m.url}/api/v1/state`)).frameworks.map((f: any) => f.id));
        return acknowledged.every((id) => have.has(id)) ? true : undefined;
      });

    // Bad requests: 4xx, a stable code, the field named, and the membership untouched.
    const masters = `${leader.url}/api/v1/masters`;
    const u4 = byId(4).url;
    const bad: [string, string, unknown, number, string, string][] = [
      ['POST', masters, { id: 'four', url: u4 }, 400, 'CAIRN_BAD_REQUEST', 'id'],
      ['POST', masters, { id: 4, url: 'ftp://127.0.0.1:1' }, 400, 'CAIRN_BAD_REQUEST', 'url'],
      ['POST', masters, { id: 4 }, 400, 'CAIRN_BAD_REQUEST', 'url'],
      ['POST', masters, { id: followers[0].id, url: u4 }, 409, 'CAIRN_RAFT_BAD_CHANGE', 'id'],
      ['POST', masters, { id: 4, url: followers[0].url }, 409, 'CAIRN_RAFT_BAD_CHANGE', 'url'],
      ['POST', masters, { id: 4, url: u4, replaces: 9 }, 409, 'CAIRN_RAFT_BAD_CHANGE', 'replaces'],
      ['DELETE', `${masters}/9`, undefined, 409, 'CAIRN_RAFT_BAD_CHANGE', 'id'],
      ['DELETE', `${masters}/nine`, undefined, 400, 'CAIRN_BAD_REQUEST', 'id'],
    ];
    for (const [method, url, body, status, code, field] of bad) {
      const r = await call(method, url, body);
      expect({ request: [method, url, body], status: r.status, code: r.body.code, field: r.body.field }).toEqual({ request: [method, url, body], status, code, field });
    }
    // A follower sends changes to the leader, as it does every write.
    const redirected = await waitFor('a redirect from a follower', async () => {
      const r = await call('POST', `${followers[0].url}/api/v1/masters`, { id: 4, url: u4 });
      return r.status === 503 ? undefined : r;
    });
    expect(redirected.status).toBe(307);
    expect(redirected.location).toBe(`${leader.url}/api/v1/masters`);
    for (const m of founders) expect(voters(await view(m))).toEqual([1, 2, 3]);
    expect((await view(leader)).masters.every((x) => x.voter)).toBe(true);

    // Add master 4 through a follower, before master 4 runs: it waits as a learner.
    const adding = cli(['masters', 'add', `4=${u4}`, '--master', followers[0].url]);
    const during = await waitFor('master 4 a learner, the add in progress', async () => {
      const v = await view(leader);
      return v.change?.kind === 'add' && v.masters.some((x) => x.id === 4 && !x.voter) ? v : undefined;
    });
    expect(during.masters.find((x) => x.id === 4)).toMatchObject({ url: u4, voter: false, reachable: false });
    // One change at a time.
    for (const [method, url, body] of [['POST', masters, { id: 5, url: byId(5).url }], ['DELETE', `${masters}/${followers[1].id}`, undefined]] as const) {
      const r = await call(method, url, body);
      expect([r.status, r.body.code]).toEqual([409, 'CAIRN_RAFT_CHANGE_PENDING']);
    }
    // Master 4 starts knowing the founders; it catches up from the leader and is promoted.
    await start(byId(4), peersOf([...founders, byId(4)]), ['--new-member']);
    const added = await adding;
    expect(added.code, added.output).toBe(0);
    expect(added.output).toContain('master 4 added as a voter');
    const after = await view(leader);
    expect(voters(after)).toEqual([1, 2, 3, 4]);
    expect(after.change).toBeNull();
    expect(after.masters.find((x) => x.id === 4)).toMatchObject({ url: u4, voter: true, reachable: true, role: 'follower' });
    await hasWrites(byId(4));
    await write('after-add');
    await hasWrites(byId(4));
    // Master 4 knows everyone's URL (learnt from the log) and the leader.
    const fromFour = await view(byId(4));
    expect(fromFour.masters.map((x) => [x.id, x.url])).toEqual([1, 2, 3, 4].map((id) => [id, byId(id).url]));
    expect(fromFour.leader).toBe(leader.id);

    // `cairn masters` lists the group, the leader marked.
    const listing = await cli(['masters', '--master', byId(4).url]);
    expect(listing.code, listing.output).toBe(0);
    expect(listing.output).toMatch(new RegExp(`^${leader.id} \\*\\s+${leader.url}\\s+voter\\s+leader\\s`, 'm'));
    expect(listing.output.trim().split('\n')).toHaveLength(5);

    // Remove a founder (a follower); the others forget it.
    const removed = followers[1];
    const removing = await cli(['masters', 'remove', String(removed.id), '--master', leader.url]);
    expect(removing.code, removing.output).toBe(0);
    const rest = [leader, followers[0], byId(4)];
    for (const m of rest) {
      await waitFor(`master ${removed.id} gone at master ${m.id}`, async () => {
        const v = await view(m);
        return v.masters.some((x) => x.id === removed.id) ? undefined : true;
      });
    }
    await removed.proc!.kill('SIGKILL');
    await write('after-remove');

    // A dead voter: removing another would leave [leader, dead], no quorum: refused.
    const dead = followers[0];
    await dead.proc!.kill('SIGKILL');
    await waitFor(`the leader seeing master ${dead.id} inactive`, async () => ((await view(leader)).masters.find((x) => x.id === dead.id)?.active === false ? true : undefined));
    const noQuorum = await call('DELETE', `${masters}/4`, undefined);
    expect([noQuorum.status, noQuorum.body.code, noQuorum.body.field]).toEqual([409, 'CAIRN_RAFT_NO_QUORUM', 'id']);
    expect(voters(await view(leader)).sort()).toEqual([leader.id, dead.id, 4].sort());

    // Replace the dead voter by master 5: learner, caught up, promoted, the dead one removed.
    const five = byId(5);
    await start(five, peersOf([...founders, byId(4), five]), ['--new-member']);
    const replacing = await cli(['masters', 'replace', String(dead.id), `5=${five.url}`, '--master', leader.url]);
    expect(replacing.code, replacing.output).toBe(0);
    expect(replacing.output).toContain(`master 5 replaced master ${dead.id}`);
    expect(voters(await view(leader)).sort()).toEqual([leader.id, 4, 5].sort());
    await write('after-replace');
    for (const m of [leader, byId(4), five]) await hasWrites(m);
    expect(acknowledged).toHaveLength(6);

    // An added master restarts like any other (no --new-member: its data dir holds the log),
    // relearning from the log the URLs that --peers does not give it (master 5's).
    const four = byId(4);
    await four.proc!.kill('SIGKILL');
    await start(four, peersOf([...founders, four]));
    await write('after-restart');
    await hasWrites(four);
    const again = await view(four);
    expect(again.masters.map((x) => [x.id, x.url, x.voter])).toEqual([[leader.id, leader.url, true], [4, four.url, true], [5, five.url, true]]);
    expect(again.leader).toBe(leader.id);
  }, 150_000);
});
