// Tasks as a user: the decision (pure), the user database, and the process executor running
// real tasks as `nobody` (through the launcher and spawned from Node, in real cgroups where
// the host has them): ids, groups, environment, sandbox ownership, the recorded exit status.

import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { chmodSync, mkdtempSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ProcessExecutor, type TaskStatusChange } from '../../agent/executors/process/executor.ts';
import { sandboxDir } from '../../agent/executors/process/sandbox.ts';
import { readExitStatus } from '../../agent/executors/process/supervisor.ts';
import { Cgroups } from '../../agent/isolation/cgroups.ts';
import { CheckpointStore, checkpointsDir, parseCheckpoint } from '../../agent/recovery/checkpoint.ts';
import { decideTaskUser, parsePasswd, TaskUsers, UserDb, type TaskUserPolicy } from '../../agent/task-users.ts';
import { shellTask } from '../harness/tasks.ts';

const PASSWD = [
  'root:x:0:0:root:/root:/bin/bash',
  '# a comment',
  'toor:x:0:0:another root:/root:/bin/sh',
  'nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin',
  'alice:x:1000:1000:Alice:/home/alice:/bin/bash',
  'broken:x:notanumber:1:::',
  '',
].join('\n');
const users = parsePasswd(PASSWD);
const lookup = (n: string) => users.get(n);

const rootAgent: TaskUserPolicy = { agent: { uid: 0, gid: 0, user: 'root', home: '/root' }, defaultUser: 'nobody', allowRoot: false };

describe('which user a task runs as', () => {
  it('parses passwd, skipping comments and malformed lines', () => {
    expect(users.get('alice')).toEqual({ name: 'alice', uid: 1000, gid: 1000, home: '/home/alice' });
    expect(users.has('broken')).toBe(false);
    expect([...users.keys()]).toEqual(['root', 'toor', 'nobody', 'alice']);
  });

  it('a root agent: the framework\'s user, else the default; root only when allowed', () => {
    expect(decideTaskUser('alice', rootAgent, lookup)).toEqual({ ok: true, switchUser: true, runAs: { user: 'alice', uid: 1000, gid: 1000, home: '/home/alice' } });
    expect(decideTaskUser('', rootAgent, lookup)).toMatchObject({ ok: true, runAs: { user: 'nobody', uid: 65534 } });
    for (const asked of ['root', 'toor']) {
      const refused = decideTaskUser(asked, rootAgent, lookup);
      expect(refused.ok).toBe(false);
      if (!refused.ok) expect(refused.message).toMatch(/uid 0.*--allow-root-tasks/);
    }
    expect(decideTaskUser('root', { ...rootAgent, allowRoot: true }, lookup)).toMatchObject({ ok: true, runAs: { uid: 0 } });
    // The default itself is held to the same rule.
    expect(decideTaskUser('', { ...rootAgent, defaultUser: 'root' }, lookup)).toMatchObject({ ok: false, message: expect.stringContaining('--allow-root-tasks') });
  });

  it('names an unknown user, and refuses what is not a user name', () => {
    expect(decideTaskUser('mallory', rootAgent, lookup)).toEqual({ ok: false, message: "the task's user 'mallory' does not exist on this agent" });
    expect(decideTaskUser('', { ...rootAgent, defaultUser: 'ghost' }, lookup)).toMatchObject({ ok: false, message: expect.stringContaining("default task user 'ghost' (--default-task-user)") });
    expect(decideTaskUser('-rf', rootAgent, lookup)).toMatchObject({ ok: false, message: expect.stringContaining('not a valid user name') });
    expect(decideTaskUser('a:b', rootAgent, lookup).ok).toBe(false);
  });

  it('an agent that is not root runs everything as itself and refuses any other user', () => {
    const alice: TaskUserPolicy = { agent: { uid: 1000, gid: 1000, user: 'alice', home: '/home/alice' }, defaultUser: 'nobody', allowRoot: true };
    expect(decideTaskUser('', alice, lookup)).toEqual({ ok: true, switchUser: false, runAs: { user: 'alice', uid: 1000, gid: 1000, home: '/home/alice' } });
    expect(decideTaskUser('alice', alice, lookup)).toMatchObject({ ok: true, switchUser: false });
    const other = decideTaskUser('nobody', alice, lookup);
    expect(other).toMatchObject({ ok: false, message: expect.stringContaining('cannot switch users') });
    expect(decideTaskUser('root', alice, lookup)).toMatchObject({ ok: false, message: expect.stringContaining('cannot switch users') });
  });

  it('reads /etc/passwd again only when it changes, and asks the name service once per unknown user', () => {
    const dir = mkdtempSync(join(tmpdir(), 'cairn-passwd-'));
    try {
      const file = join(dir, 'passwd');
      writeFileSync(file, PASSWD);
      const asked: string[] = [];
      const db = new UserDb(file, (name) => {
        asked.push(name);
        return name === 'ldapuser' ? 'ldapuser:*:5000:5000:LDAP:/home/ldapuser:/bin/sh\n' : undefined;
      });
      expect(db.lookup('alice')?.uid).toBe(1000);
      expect(db.lookup('ldapuser')?.uid).toBe(5000);
      expect(db.lookup('ldapuser')?.uid).toBe(5000);
      expect(db.lookup('ghost')).toBeUndefined();
      expect(db.lookup('ghost')).toBeUndefined();
      expect(asked).toEqual(['ldapuser', 'ghost']);
      writeFileSync(file, `${PASSWD}bob:x:1001:1001::/home/bob:/bin/sh\n`);
      expect(db.lookup('bob')?.uid).toBe(1001);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

// ---------------------------------------------------------------- real tasks as nobody

const isRoot = process.getuid?.() === 0;
const nobody = new UserDb().lookup('nobody');
const why = !isRoot ? 'not running as root' : !nobody ? 'no user nobody on this host' : undefined;
if (why) {
  if (process.env.CI) throw new Error(`tasks as a user cannot be tested here: ${why}`);
  console.warn(`skipping the executor's tasks as nobody: ${why}`);
}

let workDir: string;
let updates: TaskStatusChange[];
let executor: ProcessExecutor;
let cgroups: Cgroups | undefined;

async function ended(taskId: string): Promise<TaskStatusChange> {
  await executor.whenEnded(taskId);
  return updates.filter((u) => u.taskId === taskId).at(-1)!;
}

function stdout(taskId: string): string {
  return readFileSync(join(sandboxDir(workDir, taskId), 'stdout'), 'utf8');
}

describe.skipIf(why !== undefined).each(['launcher', 'spawn'] as const)('tasks as a user (%s)', (method) => {
  beforeEach(() => {
    // A work dir others cannot enter, as mkdtemp makes them: the task still reaches its sandbox.
    workDir = mkdtempSync(join(tmpdir(), 'cairn-user-'));
    updates = [];
    const found = Cgroups.detect({ root: 'cairn-test', workDir, cpuQuota: false, pidsMax: 32 });
    cgroups = found.cgroups;
    executor = new ProcessExecutor({
      launcher: method === 'launcher',
      workDir,
      hostname: 'h',
      checkpoints: new CheckpointStore(checkpointsDir(workDir)),
      agentEnv: { PATH: process.env.PATH, HOME: '/root', USER: 'root' },
      ...(cgroups ? { cgroups } : {}),
      users: new TaskUsers({ agent: { uid: 0, gid: 0, user: 'root', home: '/root' }, defaultUser: 'nobody', allowRoot: false }),
      onStatus: (u) => updates.push(u),
    });
  });

  afterEach(async () => {
    await executor.shutdown({ killTasks: true, timeoutMs: 2000 });
    cgroups?.removeAgentDirs();
    rmSync(workDir, { recursive: true, force: true });
  });

  it('runs as nobody with only its own group, its HOME and USER, in a sandbox it owns', async () => {
    executor.launch(shellTask('who', 'id -u; id -g; id -G; echo "$HOME $USER $LOGNAME"; touch made-here; cat /proc/self/cgroup | grep -c cairn-test || true'));
    expect(await ended('who')).toMatchObject({ state: 'TASK_FINISHED' });
    const lines = stdout('who').split('\n');
    expect(lines.slice(0, 4)).toEqual([String(nobody!.uid), String(nobody!.gid), String(nobody!.gid), `${nobody!.home} nobody nobody`]);
    // In its cgroups, though it could not have joined them itself.
    if (cgroups) expect(Number(lines[4])).toBeGreaterThan(0);
    const sandbox = sandboxDir(workDir, 'who');
    for (const path of [sandbox, join(sandbox, 'stdout'), join(sandbox, 'stderr'), join(sandbox, 'made-here'), join(sandbox, 'exit_status')]) {
      expect(statSync(path).uid, path).toBe(nobody!.uid);
    }
    // The supervisor, running as nobody, recorded the status where the agent reads it.
    expect(readExitStatus(sandbox)).toEqual({ code: 0, signal: null });
    // And the checkpoint says whom it ran as.
    const cp = parseCheckpoint(readFileSync(new CheckpointStore(checkpointsDir(workDir)).fileFor('who'), 'utf8'));
    expect(cp.runAs).toMatchObject({ user: 'nobody', uid: nobody!.uid });
    expect(executor.snapshot('who')?.user).toBe('nobody');
  });

  it("cannot read root's files", async () => {
    const secret = join(mkdtempSync(join(tmpdir(), 'cairn-secret-')), 'secret');
    chmodSync(join(secret, '..'), 0o755);
    writeFileSync(secret, 'root only\n', { mode: 0o600 });
    try {
      executor.launch(shellTask('peek', `cat ${secret}`));
      const end = await ended('peek');
      expect(end.state).toBe('TASK_FAILED');
      expect(stdout('peek')).toBe('');
      expect(readFileSync(join(sandboxDir(workDir, 'peek'), 'stderr'), 'utf8')).toMatch(/Permission denied/);
    } finally {
      rmSync(join(secret, '..'), { recursive: true, force: true });
    }
  });

  it('fails at once, saying why, a task whose user is root or unknown', async () => {
    executor.launch(shellTask('as-root', 'true', { user: 'root' }));
    expect(await ended('as-root')).toMatchObject({ state: 'TASK_FAILED', message: expect.stringContaining('--allow-root-tasks') });
    executor.launch(shellTask('as-ghost', 'true', { user: 'no-such-user-here' }));
    expect(await ended('as-ghost')).toMatchObject({ state: 'TASK_FAILED', message: expect.stringContaining("'no-such-user-here' does not exist") });
  });

  it('a relaunch does not follow a symlink an earlier run left for its logs', async () => {
    const sandbox = sandboxDir(workDir, 'again');
    executor.launch(shellTask('again', `rm stdout; ln -s ${join(workDir, 'victim')} stdout`));
    await ended('again');
    writeFileSync(join(workDir, 'victim'), 'untouched\n');
    executor.release('again');
    executor.launch(shellTask('again', 'echo second run'));
    expect(await ended('again')).toMatchObject({ state: 'TASK_FINISHED' });
    expect(readFileSync(join(workDir, 'victim'), 'utf8')).toBe('untouched\n');
    expect(stdout('again')).toBe('second run\n');
    expect(statSync(join(sandbox, 'stdout')).uid).toBe(nobody!.uid);
  });

  it('reads no exit status through a symlink', () => {
    const dir = mkdtempSync(join(tmpdir(), 'cairn-status-'));
    try {
      writeFileSync(join(dir, 'elsewhere'), '7\n');
      symlinkSync(join(dir, 'elsewhere'), join(dir, 'exit_status'));
      expect(readExitStatus(dir)).toBeUndefined();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
