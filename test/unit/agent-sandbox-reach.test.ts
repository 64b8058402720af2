// The way from / to the sandboxes and job dirs, opened to each task user (sandbox-reach.ts):
// the pure parts (the path, the ACL mask, the refusal's text), the once-per-user grants with a
// stand-in shell, and, as root, a real 0700 directory opened to `nobody` by an ACL entry alone.

import { spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, statSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { blockedMessage, grantArgs, maskWithSearch, pathsToSearch, pathToSearch, prepareWorkDir, reachForDefaultUser, SandboxReach, systemReachOps, type ReachOps } from '../../agent/sandbox-reach.ts';
import type { TaskUserDecision } from '../../agent/task-users.ts';

const NOBODY = { user: 'nobody', uid: 65534, gid: 65534, home: '/nonexistent' };
const quiet = { info: () => undefined };
const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});
function tmp(): string {
  const d = mkdtempSync(join(tmpdir(), 'cairn-reach-'));
  dirs.push(d);
  return d;
}

/** Ops that block `blocked` until granted; `refuse` makes a grant fail with that reason. */
function fakeOps(blocked: string[], refuse?: string): ReachOps & { asked: number; grants: [string, number][] } {
  const open = new Set<string>();
  const ops = {
    asked: 0,
    grants: [] as [string, number][],
    firstUnsearchable(_user: { uid: number }, path: readonly string[]) {
      ops.asked++;
      return path.find((d) => blocked.includes(d) && !open.has(d));
    },
    grantSearch(dir: string, uid: number) {
      if (refuse !== undefined) throw new Error(refuse);
      ops.grants.push([dir, uid]);
      open.add(dir);
    },
  };
  return ops;
}

describe('the way to the sandboxes (pure)', () => {
  it('is every directory from / down, each once', () => {
    expect(pathToSearch('/root/x/.cairn/agent/sandboxes')).toEqual(['/', '/root', '/root/x', '/root/x/.cairn', '/root/x/.cairn/agent', '/root/x/.cairn/agent/sandboxes']);
    expect(pathToSearch('/')).toEqual(['/']);
    expect(pathsToSearch(['/a/w/sandboxes', '/a/w/job-dirs', '/nfs/jobs'])).toEqual(['/', '/a', '/a/w', '/a/w/sandboxes', '/a/w/job-dirs', '/nfs', '/nfs/jobs']);
  });

  it('adds x to the mask and nothing else: no entry gains more than search', () => {
    expect(maskWithSearch(0o40700)).toBe('--x');
    expect(maskWithSearch(0o40750)).toBe('r-x');
    expect(maskWithSearch(0o40770)).toBe('rwx');
    expect(maskWithSearch(0o40720)).toBe('-wx');
    expect(grantArgs('/root', 65534, 0o40700)).toEqual(['-m', 'u:65534:x,m::--x', '--', '/root']);
  });

  it('names the directory, the user and every fix', () => {
    const m = blockedMessage({ dir: '/root', user: { user: 'nobody', uid: 65534 }, target: '/root/.cairn/agent/sandboxes', why: 'setfacl is not installed: apt-get install acl' });
    expect(m).toContain('tasks running as nobody (uid 65534) cannot reach /root/.cairn/agent/sandboxes');
    expect(m).toContain('may not search /root');
    expect(m).toContain('(setfacl is not installed: apt-get install acl)');
    expect(m).toContain('`setfacl -m u:65534:x /root`');
    expect(m).toContain('`chmod o+x /root`');
    expect(m).toContain('--work-dir (cairn up: --data-dir)');
  });
});

describe('SandboxReach', () => {
  it('grants each directory in the way, top down, once per user; root and known users cost nothing', () => {
    const base = tmp();
    const [sandboxes, jobs] = prepareWorkDir(join(base, 'agent'), join(base, 'agent', 'job-dirs'));
    const ops = fakeOps([base, sandboxes]);
    const reach = new SandboxReach([sandboxes!, jobs!], quiet, ops);
    expect(reach.ensure(NOBODY)).toEqual({ ok: true });
    expect(ops.grants).toEqual([[base, 65534], [sandboxes, 65534]]);
    const asked = ops.asked;
    expect(reach.ensure(NOBODY)).toEqual({ ok: true });
    expect(reach.ensure({ user: 'root', uid: 0, gid: 0 })).toEqual({ ok: true });
    expect(ops.asked).toBe(asked);
  });

  it('refuses, naming the directory and the fix, when it cannot grant, and asks again next time', () => {
    const base = tmp();
    const targets = prepareWorkDir(join(base, 'agent'), join(base, 'agent', 'job-dirs'));
    const ops = fakeOps([base], 'setfacl: /x: Operation not supported');
    const reach = new SandboxReach(targets, quiet, ops);
    const r = reach.ensure(NOBODY);
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.dir).toBe(base);
    expect(r.message).toContain(`may not search ${base}`);
    expect(r.message).toContain(`setfacl -m u:65534:x ${base}`);
    expect(r.message).toContain('Operation not supported');
    expect(r.message).toContain(`${targets[0]} and ${targets[1]}`);
    const asked = ops.asked;
    expect(reach.ensure(NOBODY).ok).toBe(false);
    expect(ops.asked).toBeGreaterThan(asked);
  });

  it('refuses when a granted directory still cannot be searched', () => {
    const base = tmp();
    const targets = prepareWorkDir(join(base, 'agent'), join(base, 'agent', 'job-dirs'));
    const ops: ReachOps = { firstUnsearchable: () => base, grantSearch: () => undefined };
    const r = new SandboxReach(targets, quiet, ops).ensure(NOBODY);
    expect(r).toMatchObject({ ok: false, dir: base, message: expect.stringContaining('still cannot be searched') });
  });

  it('wraps the task-user decision: a user that cannot reach its sandbox is refused, others pass as they were', () => {
    const base = tmp();
    const targets = prepareWorkDir(join(base, 'agent'), join(base, 'agent', 'job-dirs'));
    const reach = new SandboxReach(targets, quiet, fakeOps([base], 'no ACLs here'));
    const decisions: Record<string, TaskUserDecision> = {
      nobody: { ok: true, runAs: NOBODY, switchUser: true },
      self: { ok: true, runAs: NOBODY, switchUser: false },
      bad: { ok: false, message: 'no such user' },
    };
    const decide = reach.decider({ decide: (u) => decisions[u ?? '']! }).decide;
    expect(decide('nobody')).toMatchObject({ ok: false, message: expect.stringContaining(`setfacl -m u:65534:x ${base}`) });
    expect(decide('self')).toBe(decisions.self);
    expect(decide('bad')).toBe(decisions.bad);
    // At start, the same refusal stops the agent, naming its work dir as the field.
    expect(() => reachForDefaultUser(reach, decisions.nobody!)).toThrow(expect.objectContaining({ code: 'CAIRN_BAD_FLAG', field: 'workDir' }));
    expect(() => reachForDefaultUser(reach, decisions.self!)).not.toThrow();
  });

  it('makes the work dir no more open than tasks need: sandboxes and job dirs 0711, its state 0700', () => {
    const base = tmp();
    const work = join(base, 'agent');
    mkdirSync(join(work, 'sandboxes'), { recursive: true, mode: 0o755 });
    const shared = join(base, 'nfs');
    mkdirSync(shared);
    chmodSync(shared, 0o777);
    const [sandboxes] = prepareWorkDir(work, join(work, 'job-dirs'));
    expect(statSync(sandboxes!).mode & 0o777).toBe(0o711);
    expect(statSync(join(work, 'job-dirs')).mode & 0o777).toBe(0o711);
    expect(statSync(join(work, 'meta')).mode & 0o777).toBe(0o700);
    // A shared mount the operator made keeps its mode; one the agent makes is 0711.
    prepareWorkDir(work, shared);
    expect(statSync(shared).mode & 0o777).toBe(0o777);
    prepareWorkDir(work, join(base, 'made', 'jobs'));
    expect(statSync(join(base, 'made', 'jobs')).mode & 0o777).toBe(0o711);
  });
});

const hasSetfacl = spawnSync('sh', ['-c', 'command -v setfacl && command -v getfacl']).status === 0;
const whyNotReal = process.getuid?.() !== 0 ? 'not root' : !hasSetfacl ? 'no setfacl (apt-get install acl)' : undefined;
if (whyNotReal !== undefined && process.env.CI) throw new Error(`real ACL grants cannot be tested here: ${whyNotReal}`);

describe.skipIf(whyNotReal !== undefined)('as root, on a real filesystem', () => {
  it('opens a 0700 directory to nobody for search only, with an ACL entry; the mode others see is unchanged', () => {
    const base = tmp();
    chmodSync(base, 0o755);
    const private_ = join(base, 'private');
    mkdirSync(private_);
    chmodSync(private_, 0o750);
    const targets = prepareWorkDir(join(private_, 'agent'), join(private_, 'agent', 'job-dirs'));
    // The group owner has r-x, which the new mask must keep, not widen.
    const asNobody = (cmd: string, ...args: string[]) => spawnSync(cmd, args, { uid: NOBODY.uid, gid: NOBODY.gid, stdio: 'ignore' }).status === 0;
    expect(asNobody('test', '-x', targets[0]!)).toBe(false);
    expect(systemReachOps.firstUnsearchable(NOBODY, pathsToSearch(targets))).toBe(private_);
    const granted: object[] = [];
    const reach = new SandboxReach(targets, { info: (o) => granted.push(o) });
    expect(reach.ensure(NOBODY)).toEqual({ ok: true });
    expect(granted).toEqual([expect.objectContaining({ dir: private_, uid: 65534, undo: `setfacl -x u:65534 ${private_}` })]);
    expect(asNobody('sh', '-c', `cd ${targets[0]} && cd ${targets[1]}`)).toBe(true);
    expect(asNobody('ls', private_)).toBe(false);
    expect(asNobody('ls', targets[0]!)).toBe(false);
    const acl = spawnSync('getfacl', ['-c', '-n', '-p', private_], { encoding: 'utf8' }).stdout.split('\n').filter(Boolean);
    expect(acl.sort()).toEqual(['group::r-x', 'mask::r-x', 'other::---', 'user::rwx', 'user:65534:--x'].sort());
    expect(statSync(private_).mode & 0o007).toBe(0);
  });

  it('opens the way through a symlinked work dir: the link\'s parent and its target\'s', () => {
    const base = tmp();
    chmodSync(base, 0o755);
    for (const d of ['real', 'links']) {
      mkdirSync(join(base, d));
      chmodSync(join(base, d), 0o700);
    }
    symlinkSync(join(base, 'real'), join(base, 'links', 'work'));
    const work = join(base, 'links', 'work', 'agent');
    const targets = prepareWorkDir(work, join(work, 'job-dirs'));
    expect(new SandboxReach(targets, quiet).ensure(NOBODY)).toEqual({ ok: true });
    const asNobody = spawnSync('sh', ['-c', `cd ${targets[0]} && cd ${targets[1]}`], { uid: NOBODY.uid, gid: NOBODY.gid });
    expect(asNobody.status).toBe(0);
  });

  it('says why when setfacl cannot grant (a directory that is gone)', () => {
    expect(() => systemReachOps.grantSearch(join(tmp(), 'missing'), 65534)).toThrow(/ENOENT|No such file/);
  });
});
