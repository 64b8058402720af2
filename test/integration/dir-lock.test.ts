// One daemon per directory: a second master on a data dir, or a second agent on a work
// dir, is refused with a message naming the holder, and the first keeps working; a lock
// whose holder is gone is taken over.

import { afterEach, describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { dirLockHolder, LOCK_FILE, lockDir } from '../../shared/dir-lock.ts';
import { startMaster } from '../../master/server.ts';
import { startAgent } from '../../agent/agent.ts';
import { silentLogger } from '../../shared/logger.ts';
import { Cleanup, freePort, getJson, runCairn, startAgentProcess, startMasterProcess, waitFor } from '../harness/processes.ts';
import { MasterAuth } from '../../master/auth/master-auth.ts';

const cleanup = new Cleanup();
afterEach(() => cleanup.run());

/** The pid of a process that has exited. */
function deadPid(): number {
  const r = spawnSync(process.execPath, ['-e', '']);
  if (r.pid === undefined) throw new Error('could not run node');
  return r.pid;
}

function writeLock(dir: string, holder: Record<string, unknown>): void {
  writeFileSync(join(dir, LOCK_FILE), JSON.stringify({ role: 'master', sinceMs: Date.now() - 60_000, command: 'cairn master', token: 'old', ...holder }));
}

describe('directory locks', () => {
  it('a second master on a data dir is refused naming the first, which keeps working; the lock goes when it stops', async () => {
    const dataDir = cleanup.dir('cairn-lock-master-');
    const first = await startMasterProcess(cleanup, { dataDir, extra: ['--dns-port', '0'] });
    const second = await runCairn(['master', '--port', String(await freePort()), '--host', '127.0.0.1', '--dns-port', '0', '--data-dir', dataDir], {}, 60_000);
    expect(second.code).toBe(1);
    expect(second.stderr).toContain(`is in use by master pid ${first.child.pid}`);
    expect(second.stderr).toMatch(/\(cairn master --port \d+ --host 127\.0\.0\.1 --data-dir /);
    // The first still answers and still writes its registry: an agent registers with it.
    await startAgentProcess(cleanup, first.url, { resources: 'cpus:1;mem:256' });
    await waitFor('the agent registered with the first master', async () => ((await getJson(`${first.url}/api/v1/state`)) as { agents: unknown[] }).agents.length === 1 || undefined, 30_000);
    expect(first.child.exitCode).toBeNull();
    expect(dirLockHolder(dataDir)).toMatchObject({ role: 'master', pid: first.child.pid });
    expect(await first.kill('SIGTERM')).toBe(0);
    expect(existsSync(join(dataDir, LOCK_FILE))).toBe(false);
  }, 120_000);

  it('a second agent on a work dir is refused naming the first, which stays registered', async () => {
    const master = await startMasterProcess(cleanup, { extra: ['--dns-port', '0'] });
    const workDir = cleanup.dir('cairn-lock-agent-');
    const first = await startAgentProcess(cleanup, master.url, { workDir, resources: 'cpus:1;mem:256' });
    const second = await runCairn(['agent', '--master', master.url, '--port', String(await freePort()), '--work-dir', workDir, '--resources', 'cpus:1;mem:256'], {}, 60_000);
    expect(second.code).toBe(1);
    expect(second.stderr).toContain(`is in use by agent pid ${first.child.pid}`);
    expect(second.stderr).toMatch(/\(cairn agent --master /);
    expect(second.stderr).toContain('workDir');
    const health = (await getJson(`${first.url}/health`)) as { status: string };
    expect(health.status).toBe('ok');
    await waitFor('one agent, registered', async () => ((await getJson(`${master.url}/api/v1/state`)) as { agents: unknown[] }).agents.length === 1 || undefined, 30_000);
    expect(first.child.exitCode).toBeNull();
  }, 120_000);

  it('in one process too: a second start on a locked dir is refused, the first keeps serving', async () => {
    const dataDir = cleanup.dir('cairn-lock-inproc-');
    const m = await startMaster({ auth: MasterAuth.off(), dataDir, port: 0, host: '127.0.0.1', dnsPort: null, logger: silentLogger() });
    try {
      await expect(startMaster({ auth: MasterAuth.off(), dataDir, port: 0, host: '127.0.0.1', dnsPort: null, logger: silentLogger() }))
        .rejects.toMatchObject({ code: 'CAIRN_DIR_LOCKED', field: 'dataDir', message: expect.stringContaining(`master pid ${process.pid}`) });
      expect((await fetch(`${m.url}/health`)).ok).toBe(true);
      await expect(startAgent({ masterUrl: m.url, workDir: dataDir, httpPort: 0, docker: false, cgroups: false, logger: silentLogger() }))
        .rejects.toMatchObject({ code: 'CAIRN_DIR_LOCKED', field: 'workDir' });
    } finally {
      await m.stop();
    }
    expect(existsSync(join(dataDir, LOCK_FILE))).toBe(false);
    // Released on stop: the next one starts.
    const again = await startMaster({ auth: MasterAuth.off(), dataDir, port: 0, host: '127.0.0.1', dnsPort: null, logger: silentLogger() });
    await again.stop();
  }, 60_000);

  it('takes over a lock whose holder is gone (a dead pid, a reused pid, a garbled file)', async () => {
    const dir = cleanup.dir('cairn-lock-stale-');
    const host = (await import('node:os')).hostname();
    writeLock(dir, { pid: deadPid(), host });
    const m = await startMaster({ auth: MasterAuth.off(), dataDir: dir, port: 0, host: '127.0.0.1', dnsPort: null, logger: silentLogger() });
    expect(dirLockHolder(dir)).toMatchObject({ pid: process.pid, role: 'master' });
    await m.stop();

    // A live pid that is not the process that took the lock (its start time differs).
    writeLock(dir, { pid: process.pid, host, processStart: 1 });
    const l1 = lockDir(dir, 'agent', 'workDir');
    expect(JSON.parse(readFileSync(join(dir, LOCK_FILE), 'utf8'))).toMatchObject({ token: l1.holder.token });
    l1.release();

    writeFileSync(join(dir, LOCK_FILE), '{"pid": 12');
    const l2 = lockDir(dir, 'agent', 'workDir');
    l2.release();
    expect(existsSync(join(dir, LOCK_FILE))).toBe(false);
  });

  it('never takes over a lock held on another host, nor one whose holder lives', () => {
    const dir = cleanup.dir('cairn-lock-held-');
    writeLock(dir, { pid: deadPid(), host: 'some-other-host', command: 'cairn up --data-dir /srv/cairn' });
    expect(() => lockDir(dir, 'master')).toThrow(/in use by master pid \d+ on some-other-host since .*\(cairn up --data-dir \/srv\/cairn\); stop that process first/);
    const held = JSON.parse(readFileSync(join(dir, LOCK_FILE), 'utf8')) as { token: string };
    expect(held.token).toBe('old');

    const other = cleanup.dir('cairn-lock-live-');
    const mine = lockDir(other, 'agent', 'workDir');
    try {
      expect(() => lockDir(other, 'agent', 'workDir')).toThrow(expect.objectContaining({ code: 'CAIRN_DIR_LOCKED', field: 'workDir' }));
    } finally {
      mine.release();
    }
    // Releasing twice, or after another took it, removes nothing of another's.
    const next = lockDir(other, 'agent', 'workDir');
    mine.release();
    expect(dirLockHolder(other)?.token).toBe(next.holder.token);
    next.release();
  });
});
