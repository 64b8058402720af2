// Disk limits of tasks: the pure decisions (limit, verdict and its message, the end stated
// as a limitation), the bounded sandbox walk on real files (blocks not lengths, hard links
// once, symlinks and other filesystems never followed, early stops), the shrink of a killed
// task's sandbox, and the watcher driving a stand-in executor.

import { afterEach, describe, expect, it } from 'vitest';
import { existsSync, linkSync, mkdirSync, mkdtempSync, openSync, closeSync, ftruncateSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { asDiskLimitation, DISK_LIMITATION_REASON, diskLimitBytes, formatBytes, judgeDisk } from '../../agent/isolation/disk-watch.ts';
import { measureTree } from '../../agent/isolation/disk-usage.ts';
import { shrinkSandbox } from '../../agent/isolation/sandbox-shrink.ts';
import { DiskWatcher } from '../../agent/isolation/disk-watcher.ts';
import type { TaskSnapshot, TaskStatusChange } from '../../agent/executors/process/executor.ts';
import { compileAgentOptions } from '../../agent/options.ts';

const MIB = 1024 * 1024;
const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function tmp(): string {
  const d = mkdtempSync(join(tmpdir(), 'cairn-disk-'));
  dirs.push(d);
  return d;
}

/** A file of `bytes` real (allocated) bytes. */
function filled(path: string, bytes: number): void {
  writeFileSync(path, Buffer.alloc(bytes, 7));
}

describe('disk limits (pure)', () => {
  it("takes a task's disk resource as its limit, else the default, else none (as Mesos: no disk, no quota)", () => {
    expect(diskLimitBytes('cpus:1;mem:32;disk:1', 0)).toBe(MIB);
    expect(diskLimitBytes('cpus:1;mem:32;disk:0.5', 0)).toBe(MIB / 2);
    expect(diskLimitBytes('cpus:1;mem:32', 0)).toBeUndefined();
    expect(diskLimitBytes('cpus:1;mem:32;disk:0', 0)).toBeUndefined();
    expect(diskLimitBytes('cpus:1;mem:32', 100)).toBe(100 * MIB);
    // The task's own request wins over the default, smaller or larger.
    expect(diskLimitBytes('disk:5', 100)).toBe(5 * MIB);
    expect(diskLimitBytes('not resources', 0)).toBeUndefined();
  });

  it('finds a task over its limit only past it, naming the limit and what was measured', () => {
    expect(judgeDisk(undefined, { sandboxBytes: 10 * 1024 * MIB, complete: true })).toEqual({ over: false });
    expect(judgeDisk(MIB, { sandboxBytes: MIB, complete: true })).toEqual({ over: false });
    const over = judgeDisk(MIB, { sandboxBytes: 37.5 * MIB, complete: true });
    expect(over).toEqual({ over: true, message: 'disk limit of 1 MiB exceeded: the task used 37.5 MiB in its sandbox; it was killed' });
    // A walk that stopped at the limit says the figure is a floor.
    expect(judgeDisk(MIB, { sandboxBytes: 2 * MIB, complete: false })).toMatchObject({ message: expect.stringContaining('used at least 2 MiB') });
    // A container's own layer counts, and is named.
    const layer = judgeDisk(10 * MIB, { sandboxBytes: 4 * MIB, layerBytes: 7 * MIB, complete: true });
    expect(layer).toEqual({ over: true, message: 'disk limit of 10 MiB exceeded: the task used 11 MiB (sandbox 4 MiB, container layer 7 MiB); it was killed' });
    expect(formatBytes(512)).toBe('1 KiB');
    expect(formatBytes(3 * 1024 * MIB)).toBe('3 GiB');
  });

  it("states the end of a task killed over its disk limit as TASK_FAILED, and leaves every other end as it is", () => {
    const end = (state: TaskStatusChange['state'], reason: string): TaskStatusChange => ({ taskId: 't', frameworkId: 'f', state, message: 'm', hasExitCode: true, exitCode: -15, reason });
    expect(asDiskLimitation(end('TASK_KILLED', DISK_LIMITATION_REASON))).toEqual({ ...end('TASK_KILLED', DISK_LIMITATION_REASON), state: 'TASK_FAILED' });
    for (const other of [end('TASK_KILLED', ''), end('TASK_KILLED', 'REASON_TASK_PREEMPTED'), end('TASK_FAILED', 'REASON_CONTAINER_LIMITATION_MEMORY'), end('TASK_RUNNING', '')]) {
      expect(asDiskLimitation(other)).toBe(other);
    }
  });
});

describe('the disk options', () => {
  it('are on by default, every 5 s, with no limit for tasks that ask for none; bad values are refused naming the option', () => {
    const base = { masterUrl: 'http://127.0.0.1:5050', workDir: tmp(), docker: false };
    expect(compileAgentOptions(base)).toMatchObject({ enforceDisk: true, diskWatchIntervalMs: 5000, defaultTaskDiskMb: 0 });
    expect(compileAgentOptions({ ...base, enforceDisk: false, diskWatchIntervalMs: 15_000, defaultTaskDiskMb: 512 })).toMatchObject({ enforceDisk: false, diskWatchIntervalMs: 15_000, defaultTaskDiskMb: 512 });
    expect(() => compileAgentOptions({ ...base, defaultTaskDiskMb: -1 })).toThrow(expect.objectContaining({ field: 'defaultTaskDiskMb' }));
    expect(() => compileAgentOptions({ ...base, defaultTaskDiskMb: 0.5 })).toThrow(expect.objectContaining({ field: 'defaultTaskDiskMb' }));
    expect(() => compileAgentOptions({ ...base, diskWatchIntervalMs: 0 })).toThrow(expect.objectContaining({ field: 'diskWatchIntervalMs' }));
  });
});

describe('measuring a sandbox', () => {
  it('counts allocated blocks (a sparse file what it holds), hard links once, symlinks as themselves', async () => {
    const d = tmp();
    filled(join(d, 'real'), 2 * MIB);
    // 1 GiB long, nothing allocated.
    const fd = openSync(join(d, 'sparse'), 'w');
    ftruncateSync(fd, 1024 * MIB);
    closeSync(fd);
    mkdirSync(join(d, 'sub'));
    filled(join(d, 'sub', 'more'), MIB);
    linkSync(join(d, 'sub', 'more'), join(d, 'again'));
    // A symlink to something big outside is not followed.
    const outside = tmp();
    filled(join(outside, 'big'), 8 * MIB);
    symlinkSync(outside, join(d, 'out'));
    symlinkSync(join(outside, 'big'), join(d, 'big-link'));
    const u = await measureTree(d, { budgetMs: 10_000 });
    expect(u.complete).toBe(true);
    expect(u.bytes).toBeGreaterThanOrEqual(3 * MIB);
    // Directories and symlinks take a few blocks each; nowhere near the sparse file, the second name or what the links name.
    expect(u.bytes).toBeLessThan(3 * MIB + 256 * 1024);
    expect(u.entries).toBe(8);
  });

  it('stops once past the limit, and when its time is spent, saying the figure is a floor', async () => {
    const d = tmp();
    for (let i = 0; i < 20; i++) filled(join(d, `f${i}`), MIB);
    const capped = await measureTree(d, { budgetMs: 10_000, stopAboveBytes: 3 * MIB });
    expect(capped).toMatchObject({ complete: false, stopped: 'limit' });
    expect(capped.bytes).toBeGreaterThan(3 * MIB);
    expect(capped.entries).toBeLessThan(10);
    // A clock that jumps 10 ms per reading runs out of a 35 ms budget within a few entries.
    let t = 0;
    const slow = await measureTree(d, { budgetMs: 35, now: () => (t += 10) });
    expect(slow).toMatchObject({ complete: false, stopped: 'budget' });
    expect(slow.entries).toBeLessThan(5);
    expect(await measureTree(join(d, 'absent'), { budgetMs: 100 })).toEqual({ bytes: 0, complete: true, entries: 0 });
  });
});

describe("shrinking a killed task's sandbox", () => {
  it('removes everything but the logs and the exit status, cuts long logs, follows no symlink', async () => {
    const d = tmp();
    const outside = tmp();
    filled(join(outside, 'precious'), 3 * MIB);
    filled(join(d, 'stdout'), 5 * MIB);
    writeFileSync(join(d, 'stderr'), 'short\n');
    writeFileSync(join(d, 'exit_status'), '0\n');
    filled(join(d, 'big'), 4 * MIB);
    mkdirSync(join(d, 'deep', 'er'), { recursive: true });
    filled(join(d, 'deep', 'er', 'file'), MIB);
    symlinkSync(outside, join(d, 'link-to-dir'));
    const done = await shrinkSandbox(d, { logs: ['stdout', 'stderr'], keepPrefixes: ['exit_status'], logCapBytes: MIB });
    expect(done.removed.sort()).toEqual(['big', 'deep', 'link-to-dir']);
    expect(done.truncated).toEqual(['stdout']);
    expect(statSync(join(d, 'stdout')).size).toBe(MIB);
    expect(readFileSync(join(d, 'stderr'), 'utf8')).toBe('short\n');
    expect(existsSync(join(d, 'exit_status'))).toBe(true);
    // What the symlink named is untouched.
    expect(statSync(join(outside, 'precious')).size).toBe(3 * MIB);
  });

  it('never cuts a log that is a symlink or has a second name', async () => {
    const d = tmp();
    const outside = tmp();
    filled(join(outside, 'victim'), 3 * MIB);
    symlinkSync(join(outside, 'victim'), join(d, 'stdout'));
    filled(join(outside, 'linked'), 3 * MIB);
    linkSync(join(outside, 'linked'), join(d, 'stderr'));
    const done = await shrinkSandbox(d, { logs: ['stdout', 'stderr'], keepPrefixes: [], logCapBytes: 1024 });
    expect(done.truncated).toEqual([]);
    expect(statSync(join(outside, 'victim')).size).toBe(3 * MIB);
    expect(statSync(join(outside, 'linked')).size).toBe(3 * MIB);
  });
});

describe('the disk watcher', () => {
  function snapshot(taskId: string, sandbox: string, resources: string): TaskSnapshot {
    return { taskId, frameworkId: 'f', state: 'TASK_RUNNING', resources, sandbox, pid: 1, startTimeTicks: undefined, gpuIndices: [], recovered: false, launchedAtMs: 0, cgroup: undefined };
  }

  function fixture(opts: { enforce?: boolean; defaultLimitMiB?: number; layer?: number } = {}) {
    const root = tmp();
    const kills: { taskId: string; graceMs?: number; message?: string; reason?: string }[] = [];
    const tasks: TaskSnapshot[] = [];
    const add = (id: string, resources: string, bytes: number): string => {
      const sandbox = join(root, id);
      mkdirSync(sandbox);
      writeFileSync(join(sandbox, 'stdout'), 'out\n');
      if (bytes > 0) filled(join(sandbox, 'data'), bytes);
      tasks.push(snapshot(id, sandbox, resources));
      return sandbox;
    };
    const watcher = new DiskWatcher({
      executor: { snapshots: () => tasks, kill: (taskId, graceMs, message, reason) => (kills.push({ taskId, graceMs, message, reason }), 'killing') },
      intervalMs: 60_000,
      enforce: opts.enforce ?? true,
      defaultLimitMiB: opts.defaultLimitMiB ?? 0,
      ...(opts.layer !== undefined ? { containerLayer: async (id: string) => (id.startsWith('c-') ? opts.layer : undefined) } : {}),
    });
    return { add, kills, tasks, watcher };
  }

  it('kills a task over its disk at once with the disk reason, and leaves alone one within it and one that asked for none', async () => {
    const f = fixture();
    f.add('hog', 'cpus:0.1;mem:32;disk:1', 3 * MIB);
    f.add('modest', 'cpus:0.1;mem:32;disk:8', 2 * MIB);
    f.add('unasked', 'cpus:0.1;mem:32', 3 * MIB);
    await f.watcher.round();
    expect(f.kills).toEqual([{ taskId: 'hog', graceMs: 1, reason: DISK_LIMITATION_REASON, message: expect.stringMatching(/^disk limit of 1 MiB exceeded: the task used (at least )?[\d.]+ MiB in its sandbox; it was killed$/) }]);
    expect(f.watcher.usage('modest')).toMatchObject({ diskLimitBytes: 8 * MIB, diskComplete: true });
    expect(f.watcher.usage('modest')!.diskBytes).toBeGreaterThanOrEqual(2 * MIB);
    // Measured and reported, not limited.
    expect(f.watcher.usage('unasked')).toMatchObject({ diskLimitBytes: undefined, diskComplete: true });
    expect(f.watcher.usage('unasked')!.diskBytes).toBeGreaterThanOrEqual(3 * MIB);
  });

  it('gives tasks that ask for no disk the default limit, when the operator sets one', async () => {
    const f = fixture({ defaultLimitMiB: 2 });
    f.add('unasked', 'cpus:0.1;mem:32', 3 * MIB);
    f.add('asked', 'cpus:0.1;mem:32;disk:4', 3 * MIB);
    await f.watcher.round();
    expect(f.kills.map((k) => k.taskId)).toEqual(['unasked']);
  });

  it('only measures with enforcement off', async () => {
    const f = fixture({ enforce: false });
    f.add('hog', 'cpus:0.1;mem:32;disk:1', 3 * MIB);
    await f.watcher.round();
    expect(f.kills).toEqual([]);
    expect(f.watcher.usage('hog')).toMatchObject({ diskLimitBytes: MIB, diskComplete: true });
  });

  it("counts a container's own layer", async () => {
    const f = fixture({ layer: 5 * MIB });
    f.add('c-layered', 'cpus:0.1;mem:32;disk:4', 0);
    f.add('p-plain', 'cpus:0.1;mem:32;disk:4', 0);
    await f.watcher.round();
    expect(f.kills).toEqual([expect.objectContaining({ taskId: 'c-layered', message: expect.stringContaining('container layer 5 MiB') })]);
  });

  it("states the killed task's end as a limitation and shrinks its sandbox to its logs", async () => {
    const f = fixture();
    const sandbox = f.add('hog', 'cpus:0.1;mem:32;disk:1', 3 * MIB);
    await f.watcher.round();
    const end = f.watcher.observe({ taskId: 'hog', frameworkId: 'f', state: 'TASK_KILLED', message: f.kills[0]!.message!, hasExitCode: true, exitCode: -15, reason: DISK_LIMITATION_REASON });
    expect(end.state).toBe('TASK_FAILED');
    await waitUntil(() => !existsSync(join(sandbox, 'data')));
    expect(readFileSync(join(sandbox, 'stdout'), 'utf8')).toBe('out\n');
    expect(f.watcher.usage('hog')).toBeUndefined();
  });

  it('kills nothing once stopped (an agent going away leaves its tasks be)', async () => {
    const f = fixture();
    f.add('hog', 'cpus:0.1;mem:32;disk:1', 3 * MIB);
    await f.watcher.stop();
    await f.watcher.round();
    expect(f.kills).toEqual([]);
  });
});

async function waitUntil(cond: () => boolean, timeoutMs = 5_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 10));
  }
}
