// A uid per principal (issue 22, finding 2): the range flag, the hash and its collisions, the
// table kept across restarts, the decision that puts a principal's tasks under its uid (or
// its mapped user), the job dir that only its own job's uid may use, and the master's data
// dir made private.

import { afterEach, describe, expect, it } from 'vitest';
import { chmodSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { allocateUid, homeUid, parseUidRange, TaskUidTable, taskUidsPath } from '../../agent/task-uids.ts';
import { decideTaskUser, parsePasswd, parseTaskUserMap, type TaskUserPolicy } from '../../agent/task-users.ts';
import { ensureJobDir } from '../../agent/job-dirs.ts';
import { AGENT_DEFAULTS } from '../../shared/agent-defaults.ts';
import { privateDataDir } from '../../master/data-dir-modes.ts';
import { builtinLabelRefusal } from '../../master/auth/task-labels.ts';
import { tempDir } from '../harness/processes.ts';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});
function dir(): string {
  const d = tempDir();
  dirs.push(d);
  return d;
}

const users = parsePasswd([
  'root:x:0:0:root:/root:/bin/bash',
  'nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin',
  'svc-alice:x:1500:1500::/home/svc-alice:/bin/sh',
].join('\n'));
const lookup = (n: string) => users.get(n);
const rootAgent: TaskUserPolicy = { agent: { uid: 0, gid: 0, user: 'root', home: '/root' }, defaultUser: 'nobody', allowRoot: false };
const small = { first: 300000, last: 300003 };

describe('the uid range', () => {
  it('parses FIRST-LAST and none; refuses ranges that reach local accounts, nobody or past 2^31, naming the flag', () => {
    expect(parseUidRange(AGENT_DEFAULTS.taskUidRange)).toEqual({ first: 1879048192, last: 2147483646 });
    expect(parseUidRange('none')).toBeUndefined();
    for (const bad of ['1000-2000', '65000-70000', '300000-200000', '300000', 'a-b', '300000-4294967295']) {
      expect(() => parseUidRange(bad)).toThrow(expect.objectContaining({ code: 'CAIRN_BAD_FLAG', field: 'taskUidRange' }));
    }
  });

  it('hashes a principal to the same uid anywhere; a taken slot moves it to the next free one; a full range gives none', () => {
    const range = parseUidRange(AGENT_DEFAULTS.taskUidRange)!;
    expect(homeUid('alice', range)).toBe(homeUid('alice', range));
    expect(homeUid('alice', range)).not.toBe(homeUid('bob', range));
    const home = homeUid('alice', small);
    expect(allocateUid('alice', small, () => false)).toBe(home);
    const next = home === small.last ? small.first : home + 1;
    expect(allocateUid('alice', small, (u) => u === home)).toBe(next);
    expect(allocateUid('alice', small, () => true)).toBeUndefined();
  });

  it('keeps what it gave across restarts (0600), never gives a uid twice or one the host knows, and says when the range is full', () => {
    const work = dir();
    mkdirSync(join(work, 'meta'));
    const file = taskUidsPath(work);
    const known = new Set<number>();
    const table = new TaskUidTable(file, small, (u) => known.has(u));
    const a = table.uidOf('alice');
    const b = table.uidOf('bob');
    expect(a).not.toBe(b);
    expect(table.uidOf('alice')).toBe(a);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    // Another agent process over the same work dir: the same uids, even where a collision moved one.
    const again = new TaskUidTable(file, small, () => false);
    expect([again.uidOf('alice'), again.uidOf('bob')]).toEqual([a, b]);
    // Of the two left, one is an account's: the third principal gets the other, the fourth none.
    const left = [300000, 300001, 300002, 300003].filter((u) => u !== a && u !== b);
    known.add(left[0]!);
    expect(table.uidOf('carol')).toBe(left[1]);
    expect(() => table.uidOf('dave')).toThrow(/no uid left in --task-uid-range 300000-300003 for principal 'dave'/);
    // A narrower range forgets what lies outside it.
    const narrower = new TaskUidTable(file, { first: a, last: a }, () => false);
    expect(narrower.uidOf('alice')).toBe(a);
    expect(narrower.size).toBe(1);
    expect(Object.keys(JSON.parse(readFileSync(file, 'utf8')).uids).sort()).toEqual(['alice', 'bob', 'carol']);
  });
});

describe("which uid a principal's task runs as", () => {
  const uids = new Map([['alice', 300001], ['bob', 300002]]);
  const tenancy = (principal: string, userMap?: Map<string, string>) => ({ principal, uidOf: (p: string) => uids.get(p)!, ...(userMap ? { userMap } : {}) });

  it("a framework naming no user (or the default): the principal's own uid, no account, HOME left to the sandbox", () => {
    for (const asked of ['', 'nobody']) {
      expect(decideTaskUser(asked, rootAgent, lookup, tenancy('alice'))).toEqual({ ok: true, switchUser: true, runAs: { user: 'cairn-300001', uid: 300001, gid: 300001, home: '' } });
    }
    expect(decideTaskUser('', rootAgent, lookup, tenancy('bob'))).toMatchObject({ runAs: { uid: 300002, gid: 300002 } });
  });

  it('a framework naming a user of its own keeps it (--switch_user); no principal, or no range: the default user', () => {
    expect(decideTaskUser('svc-alice', rootAgent, lookup, tenancy('bob'))).toMatchObject({ ok: true, runAs: { user: 'svc-alice', uid: 1500 } });
    expect(decideTaskUser('', rootAgent, lookup, tenancy(''))).toMatchObject({ ok: true, runAs: { user: 'nobody', uid: 65534 } });
    expect(decideTaskUser('', rootAgent, lookup, { principal: 'alice' })).toMatchObject({ ok: true, runAs: { user: 'nobody' } });
  });

  it("the operator's map wins over the range; a mapped user must exist and not be root; a full range fails the task saying why", () => {
    expect(decideTaskUser('', rootAgent, lookup, tenancy('alice', new Map([['alice', 'svc-alice']])))).toMatchObject({ ok: true, runAs: { user: 'svc-alice', uid: 1500, home: '/home/svc-alice' } });
    expect(decideTaskUser('', rootAgent, lookup, tenancy('alice', new Map([['alice', 'ghost']])))).toEqual({ ok: false, message: "the user 'ghost' that --task-user-map gives principal 'alice' does not exist on this agent" });
    expect(decideTaskUser('', rootAgent, lookup, tenancy('alice', new Map([['alice', 'root']])))).toMatchObject({ ok: false, message: expect.stringContaining('--allow-root-tasks') });
    const full = { principal: 'carol', uidOf: () => { throw new Error('no uid left'); } };
    expect(decideTaskUser('', rootAgent, lookup, full)).toEqual({ ok: false, message: 'no uid left' });
  });

  it('parses --task-user-map, refusing a bad entry and two principals given one user', () => {
    expect([...parseTaskUserMap(['alice=svc-alice,bob@corp=svc-bob'])]).toEqual([['alice', 'svc-alice'], ['bob@corp', 'svc-bob']]);
    expect(() => parseTaskUserMap(['alice'])).toThrow(expect.objectContaining({ field: 'taskUserMap' }));
    expect(() => parseTaskUserMap(['alice=-rf'])).toThrow(/not PRINCIPAL=USER/);
    expect(() => parseTaskUserMap(['alice=svc', 'bob=svc'])).toThrow(/'alice' and 'bob' are both given user 'svc'/);
  });
});

describe("a job's directory", () => {
  const me = { uid: process.getuid!(), gid: process.getgid!() };

  it('is made 0700 for its uid; an older one left open is closed; one of another uid is refused, naming the owner and the fix', () => {
    const root = dir();
    const jobDir = join(root, 'mnist');
    ensureJobDir(jobDir, me);
    expect(statSync(jobDir).mode & 0o777).toBe(0o700);
    chmodSync(jobDir, 0o755);
    ensureJobDir(jobDir, me);
    expect(statSync(jobDir).mode & 0o777).toBe(0o700);
    const other = { uid: me.uid + 1, gid: me.gid + 1 };
    writeFileSync(join(jobDir, 'checkpoint'), 'step 5');
    expect(() => ensureJobDir(jobDir, other)).toThrow(new RegExp(`belongs to uid ${me.uid}, and this job's tasks run as uid ${other.uid}.*chown -R ${other.uid}:${other.gid} ${jobDir}`));
  });
});

describe('a job dir made a moment ago by another agent of this host', () => {
  it('is taken by the job\'s uid while it is the agent\'s own and empty (two replicas starting at once on two agents)', () => {
    if (process.geteuid?.() !== 0) return; // giving a directory away needs root
    const jobDir = join(dir(), 'pair');
    mkdirSync(jobDir, { mode: 0o700 }); // the other agent's mkdir, before its chown
    const task = { uid: 1879048200, gid: 1879048200 };
    ensureJobDir(jobDir, task);
    expect(statSync(jobDir).uid).toBe(task.uid);
    expect(statSync(jobDir).mode & 0o777).toBe(0o700);
  });
});

describe("the master's data dir", () => {
  it('is made 0700 with 0600 files, its own dirs walked and nothing else, saying what it tightened', () => {
    const data = join(dir(), 'master');
    mkdirSync(join(data, 'registry'), { recursive: true, mode: 0o755 });
    chmodSync(data, 0o755);
    writeFileSync(join(data, 'registry', 'registry.sqlite'), 'x', { mode: 0o644 });
    writeFileSync(join(data, 'credentials.json'), '{}', { mode: 0o644 });
    mkdirSync(join(data, 'agent', 'sandboxes'), { recursive: true, mode: 0o711 });
    chmodSync(join(data, 'agent', 'sandboxes'), 0o711);
    const said: object[] = [];
    const changed = privateDataDir(data, { info: (o) => said.push(o) });
    expect(statSync(data).mode & 0o777).toBe(0o700);
    expect(statSync(join(data, 'registry')).mode & 0o777).toBe(0o700);
    expect(statSync(join(data, 'registry', 'registry.sqlite')).mode & 0o777).toBe(0o600);
    expect(statSync(join(data, 'credentials.json')).mode & 0o777).toBe(0o600);
    // An agent's work dir placed inside is not the master's to change.
    expect(statSync(join(data, 'agent', 'sandboxes')).mode & 0o777).toBe(0o711);
    expect(changed).toHaveLength(4);
    expect(said).toHaveLength(1);
    expect(privateDataDir(data, { info: (o) => said.push(o) })).toEqual([]);
    expect(said).toHaveLength(1);
  });
});

describe("the built-ins' task labels", () => {
  it('names the framework each belongs to; other labels are anyone\'s', () => {
    expect(builtinLabelRefusal('cairn.job')).toMatch(/label 'cairn.job' belongs to the built-in jobs framework/);
    expect(builtinLabelRefusal('cairn.marathon.app')).toMatch(/built-in marathon framework/);
    expect(builtinLabelRefusal('cairn.preemptible')).toBeUndefined();
    expect(builtinLabelRefusal('team')).toBeUndefined();
  });
});
