// Recovery of tasks after an agent restart, against real processes: one executor starts
// tasks and goes away without killing them; a second one, on the same work dir, takes
// over from the checkpoints. Also the pieces it rests on: /proc parsing, the supervisor's
// exit status, and the durable checkpoint store.

import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TaskInfo } from '../../shared/agent-protocol.ts';
import { ProcessExecutor, type TaskStatusChange } from '../../agent/executors/process/executor.ts';
import { sandboxDir } from '../../agent/executors/process/sandbox.ts';
import { isSameProcessAlive, parseProcStat, processStartTime, usageByGroup } from '../../agent/executors/process/proc.ts';
import { exitFromStatus, parseExitStatusFile, supervisedSpawn, taskEndFromSupervisor } from '../../agent/executors/process/supervisor.ts';
import { decodeWaitStatus, encodeLaunchRecord } from '../../agent/executors/process/launcher.ts';
import { CheckpointStore, checkpointsDir, parseCheckpoint, type TaskCheckpoint } from '../../agent/recovery/checkpoint.ts';
import { shellTask } from '../harness/tasks.ts';

let workDir: string;
const executors: ProcessExecutor[] = [];

const task = (id: string, script: string, extra: Partial<TaskInfo> = {}) => shellTask(id, script, { resources: 'cpus:0.1;mem:32;gpus:1', ...extra });

function executor(updates: TaskStatusChange[]): { ex: ProcessExecutor; store: CheckpointStore } {
  const store = new CheckpointStore(checkpointsDir(workDir));
  const ex = new ProcessExecutor({ workDir, hostname: 'h', gpuIndices: [0, 1], checkpoints: store, recoveredPollMs: 20, onStatus: (u) => updates.push(u) });
  executors.push(ex);
  return { ex, store };
}

async function until<T>(fn: () => T | undefined | false, timeoutMs = 5000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = fn();
    if (v !== undefined && v !== false) return v;
    if (Date.now() > deadline) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 10));
  }
}

const last = (updates: TaskStatusChange[], id: string) => updates.filter((u) => u.taskId === id).at(-1);

beforeEach(() => {
  workDir = mkdtempSync(join(tmpdir(), 'cairn-recover-'));
});

afterEach(async () => {
  for (const ex of executors.splice(0)) await ex.shutdown({ killTasks: true, timeoutMs: 1000 });
  rmSync(workDir, { recursive: true, force: true });
});

describe('recovery after an agent restart', () => {
  it('re-attaches to a live task, reports one that ended meanwhile with its exit code, and keeps the logs going', async () => {
    const first: TaskStatusChange[] = [];
    const a = executor(first);
    a.ex.launch(task('live', 'while true; do echo tick; sleep 0.05; done'));
    a.ex.launch(task('dies', 'sleep 0.3; exit 7'));
    await until(() => first.filter((u) => u.state === 'TASK_RUNNING').length === 2);
    const livePid = a.ex.snapshot('live')!.pid!;
    // The agent goes away without killing anything (as after SIGKILL or an upgrade).
    await a.ex.shutdown({ killTasks: false });

    // 'dies' exits while nobody watches (its supervisor records the status; on a busy machine
    // that can take well over the 0.3 s it sleeps).
    const status = join(sandboxDir(workDir, 'dies'), 'exit_status');
    await until(() => existsSync(status) && readFileSync(status, 'utf8').trim() !== '');
    expect(readFileSync(status, 'utf8').trim()).toBe('7');

    const second: TaskStatusChange[] = [];
    const b = executor(second);
    const { checkpoints, problems } = await b.store.loadAll();
    expect(problems).toEqual([]);
    const summary = b.ex.recover(checkpoints, 'reconnect');
    expect(summary).toEqual({ reattached: ['live'], ended: ['dies'], killed: [] });
    expect(b.ex.snapshot('live')).toMatchObject({ pid: livePid, recovered: true, state: 'TASK_RUNNING', gpuIndices: [0] });
    // Both are listed at registration, the ended one until its end is acknowledged.
    expect(b.ex.activeTasks().map((t) => [t.taskId, t.state]).sort()).toEqual([['dies', 'TASK_RUNNING'], ['live', 'TASK_RUNNING']]);

    const dies = await until(() => last(second, 'dies'));
    expect(dies).toMatchObject({ state: 'TASK_FAILED', hasExitCode: true, exitCode: 7, message: 'exited with code 7' });
    expect(last(second, 'live')).toBeUndefined(); // nothing to say about a task that runs on
    // The recovered task's GPU stays its own: only device 1 is free.
    expect(b.ex.gpus.freeCount()).toBe(1);

    const size = () => readFileSync(join(sandboxDir(workDir, 'live'), 'stdout'), 'utf8').length;
    const before = size();
    await new Promise((r) => setTimeout(r, 200));
    expect(size()).toBeGreaterThan(before);

    // A recovered task is killed and watched like any other.
    expect(b.ex.kill('live', 500)).toBe('killing');
    await b.ex.whenEnded('live');
    expect(last(second, 'live')).toMatchObject({ state: 'TASK_KILLED', hasExitCode: true, exitCode: -15 });
    expect(isSameProcessAlive(livePid, undefined)).toBe(false);

    // Acknowledged ends remove their checkpoints.
    b.ex.release('dies');
    b.ex.release('live');
    await b.ex.shutdown({ killTasks: false });
    expect(readdirSync(checkpointsDir(workDir))).toEqual([]);
  });

  it('with cleanup kills what it finds and reports it killed', async () => {
    const first: TaskStatusChange[] = [];
    const a = executor(first);
    a.ex.launch(task('stray', 'sleep 30'));
    await until(() => last(first, 'stray')?.state === 'TASK_RUNNING');
    const pid = a.ex.snapshot('stray')!.pid!;
    await a.ex.shutdown({ killTasks: false });

    const second: TaskStatusChange[] = [];
    const b = executor(second);
    expect(b.ex.recover((await b.store.loadAll()).checkpoints, 'cleanup')).toEqual({ reattached: [], ended: [], killed: ['stray'] });
    await b.ex.whenEnded('stray');
    expect(last(second, 'stray')).toMatchObject({ state: 'TASK_KILLED', message: 'killed: the agent restarted with --recover=cleanup' });
    expect(isSameProcessAlive(pid, undefined)).toBe(false);
  });

  it('finishes a kill the previous agent had started', async () => {
    const first: TaskStatusChange[] = [];
    const a = executor(first);
    a.ex.launch(task('stubborn', "trap '' TERM; sleep 30"));
    await until(() => last(first, 'stubborn')?.state === 'TASK_RUNNING');
    a.ex.kill('stubborn', 300);
    await a.ex.shutdown({ killTasks: false }); // the SIGKILL timer goes with the agent

    const second: TaskStatusChange[] = [];
    const b = executor(second);
    b.ex.recover((await b.store.loadAll()).checkpoints, 'reconnect');
    await b.ex.whenEnded('stubborn');
    expect(last(second, 'stubborn')).toMatchObject({ state: 'TASK_KILLED', exitCode: -9 });
  });

  it('re-sends a checkpointed end that was never acknowledged, and ignores a pid now used by another process', async () => {
    const first: TaskStatusChange[] = [];
    const a = executor(first);
    a.ex.launch(task('done', 'exit 0'));
    await a.ex.whenEnded('done');
    await a.ex.shutdown({ killTasks: false });

    const store = new CheckpointStore(checkpointsDir(workDir));
    // A task whose pid is alive but belongs to another process now (a different start time).
    const reused: TaskCheckpoint = {
      version: 1, task: task('reused', 'sleep 1'), sandbox: sandboxDir(workDir, 'reused'), pid: process.pid,
      startTimeTicks: processStartTime(process.pid)! + 1, gpus: [], launchedAtMs: 1, activeState: 'TASK_RUNNING', killRequested: false,
    };
    await store.write(reused);
    writeFileSync(join(checkpointsDir(workDir), 'junk.json'), '{"version":1');

    const second: TaskStatusChange[] = [];
    const b = executor(second);
    const loaded = await b.store.loadAll();
    expect(loaded.problems).toHaveLength(1);
    expect(loaded.problems[0]).toMatch(/junk\.json.*set aside/);
    expect(existsSync(join(checkpointsDir(workDir), 'junk.json.corrupt'))).toBe(true);
    expect(b.ex.recover(loaded.checkpoints, 'reconnect')).toEqual({ reattached: [], ended: ['done', 'reused'], killed: [] });
    await b.ex.whenEnded('done');
    await b.ex.whenEnded('reused');
    expect(last(second, 'done')).toMatchObject({ state: 'TASK_FINISHED', exitCode: 0 });
    expect(last(second, 'reused')).toMatchObject({ state: 'TASK_FAILED', reason: 'REASON_EXECUTOR_TERMINATED', hasExitCode: false });
    expect(last(second, 'reused')!.message).toMatch(/ended while the agent was away/);
  });
});

describe('the launcher', () => {
  it('decodes wait statuses and encodes launch records', () => {
    expect(decodeWaitStatus(7 << 8)).toEqual({ code: 7, signal: null });
    expect(decodeWaitStatus(9)).toEqual({ code: null, signal: 'SIGKILL' });
    expect(decodeWaitStatus(15 | 0x80)).toEqual({ code: null, signal: 'SIGTERM' }); // core dumped
    const rec = encodeLaunchRecord(3, { cwd: '/s', stdoutPath: '/s/stdout', stderrPath: '/s/stderr', env: { A: '1', B: 'x=y\nz' }, file: '/bin/sh', argv0: 'sh', args: ['-c', 'echo é'] });
    // No user to switch to (empty uid and gid), no resolv file, no cgroups, two variables.
    const body = '3\0/s\0/s/stdout\0/s/stderr\0\0\0\x000\x002\0A=1\0B=x=y\nz\0/bin/sh\0sh\0-c\0echo é';
    expect(rec.toString('utf8')).toBe(`${Buffer.byteLength(body)}\n${body}`);
    const asUser = encodeLaunchRecord(4, { cwd: '/s', stdoutPath: 'stdout', stderrPath: 'stderr', uid: 65534, gid: 65533, resolvConf: '/w/resolv.conf', cgroupProcs: ['/cg/a/cgroup.procs'], env: {}, file: '/bin/sh', argv0: 'sh', args: [] });
    const userBody = '4\0/s\0stdout\0stderr\x0065534\x0065533\0/w/resolv.conf\x001\0/cg/a/cgroup.procs\x000\0/bin/sh\0sh';
    expect(asUser.toString('utf8')).toBe(`${Buffer.byteLength(userBody)}\n${userBody}`);
    expect(() => encodeLaunchRecord(1, { cwd: '/s', stdoutPath: 'o', stderrPath: 'e', env: {}, file: '/bin/sh', argv0: 'sh', args: ['a\0b'] })).toThrow(/NUL/);
  });

  it('still reports a task whose launcher died, from its sandbox', async () => {
    const updates: TaskStatusChange[] = [];
    const { ex } = executor(updates);
    expect(ex.launchMethod).toBe('launcher');
    ex.launch(task('orphan', 'sleep 0.4; exit 3'));
    await until(() => last(updates, 'orphan')?.state === 'TASK_RUNNING');
    const launcherPid = (ex as unknown as { launcher: { child: { pid: number } } }).launcher.child.pid;
    process.kill(launcherPid, 'SIGKILL');
    await ex.whenEnded('orphan');
    expect(last(updates, 'orphan')).toMatchObject({ state: 'TASK_FAILED', exitCode: 3 });
    // The next launch starts a new launcher.
    ex.launch(task('after', 'exit 0'));
    await ex.whenEnded('after');
    expect(last(updates, 'after')).toMatchObject({ state: 'TASK_FINISHED' });
  });
});

describe('pieces of recovery', () => {
  it('parses /proc/PID/stat, names with spaces and parentheses included', () => {
    const line = '4242 (my (odd) name) S 1 4242 4242 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 1 0 987654 10000000 300 18446744073709551615 0 0 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0';
    expect(parseProcStat(line)).toEqual({ pid: 4242, comm: 'my (odd) name', state: 'S', ppid: 1, pgrp: 4242, utimeTicks: 250, stimeTicks: 50, startTimeTicks: 987654, rssPages: 300 });
    expect(parseProcStat('garbage')).toBeUndefined();
    const zombie = parseProcStat(line.replace(') S ', ') Z '))!;
    expect(isSameProcessAlive(4242, 987654, () => zombie)).toBe(false);
    expect(isSameProcessAlive(4242, 987654, () => parseProcStat(line))).toBe(true);
    expect(isSameProcessAlive(4242, 987655, () => parseProcStat(line))).toBe(false);
    expect(isSameProcessAlive(process.pid, processStartTime(process.pid))).toBe(true);
    const usage = usageByGroup([parseProcStat(line)!, parseProcStat(line.replace('4242 (my', '4243 (my'))!, zombie]);
    expect(usage.get(4242)).toEqual({ cpuSeconds: 6, rssBytes: 2 * 300 * 4096, processes: 2 });
  });

  it('reads shell statuses back as codes or signals', () => {
    expect(exitFromStatus(0)).toEqual({ code: 0, signal: null });
    expect(exitFromStatus(7)).toEqual({ code: 7, signal: null });
    expect(exitFromStatus(137)).toEqual({ code: null, signal: 'SIGKILL' });
    expect(exitFromStatus(143)).toEqual({ code: null, signal: 'SIGTERM' });
    expect(exitFromStatus(255)).toEqual({ code: 255, signal: null });
    expect(parseExitStatusFile('7\n')).toEqual({ code: 7, signal: null });
    expect(parseExitStatusFile('')).toBeUndefined();
    expect(parseExitStatusFile('300')).toBeUndefined();
    expect(taskEndFromSupervisor(null, 'SIGKILL')).toEqual({ code: null, signal: 'SIGKILL' });
    expect(taskEndFromSupervisor(138, null)).toEqual({ code: null, signal: 'SIGUSR1' });
  });

  it('starts the supervisor with sh, and with bash only for a task with its own argv[0]', () => {
    const tools = { sh: '/bin/sh', bash: '/bin/bash', mv: '/bin/mv', perl: undefined };
    const shell = supervisedSpawn({ file: '/bin/sh', args: ['-c', 'echo hi'], argv0: 'sh' }, true, ['/cg/memory/cairn/t/cgroup.procs'], tools);
    expect(shell.file).toBe('/bin/sh');
    expect(shell.args.slice(2)).toEqual(['cairn-supervisor', '/bin/mv', '1', '/cg/memory/cairn/t/cgroup.procs', '/bin/sh', '-c', 'echo hi']);
    const plain = supervisedSpawn({ file: '/bin/echo', args: ['a'], argv0: '/bin/echo' }, false, [], tools);
    expect(plain.args.slice(2)).toEqual(['cairn-supervisor', '/bin/mv', '0', '/bin/echo', 'a']);
    const named = supervisedSpawn({ file: '/bin/echo', args: ['a'], argv0: 'shout' }, false, [], tools);
    expect(named.file).toBe('/bin/bash');
    expect(named.args.slice(2)).toEqual(['cairn-supervisor', '/bin/mv', '0', 'shout', '/bin/echo', 'a']);
    expect(supervisedSpawn({ file: '/bin/echo', args: [], argv0: 'shout' }, false, [], { ...tools, bash: undefined }).argv0Dropped).toBe(true);
  });

  it('writes checkpoints durably in batches, the latest write per task winning, and removes them', async () => {
    const dir = checkpointsDir(workDir);
    const store = new CheckpointStore(dir);
    const cp = (id: string, activeState: TaskCheckpoint['activeState']): TaskCheckpoint => ({
      version: 1, task: task(id, 'true'), sandbox: `/s/${id}`, pid: 10, startTimeTicks: 5, gpus: [], launchedAtMs: 1, activeState, killRequested: false,
    });
    await Promise.all(Array.from({ length: 50 }, (_, i) => store.write(cp(`t${i}`, 'TASK_RUNNING'))));
    expect(readdirSync(dir)).toHaveLength(50);
    const w1 = store.write(cp('t0', 'TASK_STAGING'));
    const w2 = store.write(cp('t0', 'TASK_RUNNING'));
    const r = store.remove('t1');
    await Promise.all([w1, w2, r]);
    expect(parseCheckpoint(readFileSync(store.fileFor('t0'), 'utf8')).activeState).toBe('TASK_RUNNING');
    expect(existsSync(store.fileFor('t1'))).toBe(false);
    expect(readdirSync(dir).some((n) => n.endsWith('.tmp'))).toBe(false);
    expect(() => parseCheckpoint('{"version":2}')).toThrow(/version/);
    expect(() => parseCheckpoint(JSON.stringify({ ...cp('x', 'TASK_RUNNING'), pid: -1 }))).toThrow(/pid/);
  });
});
