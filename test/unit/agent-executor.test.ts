// The process executor against real short processes: environment, exit codes, kills,
// sandbox files, spawn failures, GPU assignment and log reads.

import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ProcessExecutor, type TaskStatusChange } from '../../agent/executors/process/executor.ts';
import { sandboxDir, sanitizeTaskId, utf8BoundaryLength } from '../../agent/executors/process/sandbox.ts';
import { buildTaskEnvironment } from '../../agent/executors/process/environment.ts';
import { spawnSpecFor } from '../../agent/executors/process/command.ts';
import { terminalStatusFor } from '../../agent/executors/process/exit-status.ts';
import { GpuPool } from '../../agent/resources/gpu-pool.ts';
import { CheckpointStore, checkpointsDir } from '../../agent/recovery/checkpoint.ts';
import { shellTask } from '../harness/tasks.ts';

let workDir: string;
let updates: TaskStatusChange[];
let executor: ProcessExecutor;
/** The task's checkpoint file as it was when RUNNING was reported. */
let checkpointAtRunning: Map<string, unknown>;

async function waitUntil(cond: () => boolean, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 10));
  }
}

const task = shellTask;

function statesOf(taskId: string): string[] {
  return updates.filter((u) => u.taskId === taskId).map((u) => u.state);
}

async function ended(taskId: string): Promise<TaskStatusChange> {
  await executor.whenEnded(taskId);
  const last = updates.filter((u) => u.taskId === taskId).at(-1);
  if (!last) throw new Error(`no update for ${taskId}`);
  return last;
}

function readEnv(taskId: string): Record<string, string> {
  const text = readFileSync(join(sandboxDir(workDir, taskId), 'stdout'), 'utf8');
  const env: Record<string, string> = {};
  for (const line of text.split('\n')) {
    const eq = line.indexOf('=');
    if (eq > 0) env[line.slice(0, eq)] = line.slice(eq + 1);
  }
  return env;
}

// Both ways of starting supervisors: through the launcher (perl) and spawned from Node.
describe.each(['launcher', 'spawn'] as const)('process executor (%s)', (method) => {
  beforeEach(() => {
    workDir = mkdtempSync(join(tmpdir(), 'cairn-exec-'));
    updates = [];
    checkpointAtRunning = new Map();
    const checkpoints = new CheckpointStore(checkpointsDir(workDir));
    executor = new ProcessExecutor({
      launcher: method === 'launcher',
      checkpoints,
      workDir,
      hostname: 'node-7.example',
      gpuIndices: [0, 1, 2],
      agentEnv: { PATH: process.env.PATH, HOME: '/home/agent', LANG: 'C.UTF-8', SECRET_TOKEN: 'do-not-leak' },
      defaultKillGraceMs: 3000,
      onStatus: (u) => {
        if (u.state === 'TASK_RUNNING') checkpointAtRunning.set(u.taskId, JSON.parse(readFileSync(checkpoints.fileFor(u.taskId), 'utf8')));
        updates.push(u);
      },
    });
  });

  afterEach(async () => {
    await executor.shutdown({ killTasks: true, timeoutMs: 2000 });
    rmSync(workDir, { recursive: true, force: true });
  });

  it('reports RUNNING once the checkpoint naming its pid is on disk, then FINISHED on exit 0', async () => {
    expect(executor.launch(task('ok', 'exit 0'))).toBe('launched');
    // Nothing is reported before the checkpoint is durable.
    expect(statesOf('ok')).toEqual([]);
    const last = await ended('ok');
    expect(checkpointAtRunning.get('ok')).toMatchObject({ activeState: 'TASK_RUNNING', pid: expect.any(Number), startTimeTicks: expect.any(Number) });
    expect(last).toMatchObject({ state: 'TASK_FINISHED', hasExitCode: true, exitCode: 0 });
    expect(statesOf('ok')).toEqual(['TASK_RUNNING', 'TASK_FINISHED']);
  });

  it('reports a non-zero exit as FAILED with the code', async () => {
    executor.launch(task('bad', 'exit 3'));
    expect(await ended('bad')).toMatchObject({ state: 'TASK_FAILED', message: 'exited with code 3', hasExitCode: true, exitCode: 3 });
  });

  it('reports an unrequested signal as FAILED with minus the signal number', async () => {
    executor.launch(task('sig', 'kill -USR1 $$; sleep 5'));
    expect(await ended('sig')).toMatchObject({ state: 'TASK_FAILED', message: 'killed by signal SIGUSR1', hasExitCode: true, exitCode: -10 });
  });

  it('gives the task its environment: basics, ports, ids, sandbox, GPUs, then its own', async () => {
    executor.launch(task('env', 'env', {
      resources: 'cpus:1;mem:64;gpus:2;ports:[31000-31001,31005-31005]',
      command: { shell: true, value: 'env', arguments: [], environment: [{ name: 'MY_VAR', value: 'mine' }, { name: 'PORT', value: '9999' }] },
    }));
    await ended('env');
    const env = readEnv('env');
    const sandbox = sandboxDir(workDir, 'env');
    expect(env).toMatchObject({
      HOME: '/home/agent',
      LANG: 'C.UTF-8',
      HOST: 'node-7.example',
      PORT: '9999', // the task's own env wins
      PORT0: '31000',
      PORT1: '31001',
      PORT2: '31005',
      PORTS: '31000,31001,31005',
      CAIRN_TASK_ID: 'env',
      CAIRN_FRAMEWORK_ID: 'fw-1',
      CAIRN_SANDBOX: sandbox,
      MESOS_SANDBOX: sandbox,
      CUDA_VISIBLE_DEVICES: '0,1',
      NVIDIA_VISIBLE_DEVICES: '0,1',
      MY_VAR: 'mine',
    });
    expect(env.SECRET_TOKEN).toBeUndefined();
    expect(env.PWD).toBe(sandbox);
  });

  it('sets no GPU variables for a task without GPUs, and PORT is the first port', async () => {
    executor.launch(task('nogpu', 'env', { resources: 'cpus:1;ports:[31010-31010]' }));
    await ended('nogpu');
    const env = readEnv('nogpu');
    expect(env.PORT).toBe('31010');
    expect(env.CUDA_VISIBLE_DEVICES).toBeUndefined();
    expect(env.NVIDIA_VISIBLE_DEVICES).toBeUndefined();
  });

  it('never gives one GPU to two tasks, and fails a task asking more than are free', async () => {
    executor.launch(task('g1', 'echo $CUDA_VISIBLE_DEVICES; sleep 5', { resources: 'gpus:2' }));
    executor.launch(task('g2', 'echo $CUDA_VISIBLE_DEVICES; sleep 5', { resources: 'gpus:2' }));
    expect(executor.snapshot('g1')?.gpuIndices).toEqual([0, 1]);
    await ended('g2');
    expect(statesOf('g2')).toEqual(['TASK_FAILED']);
    expect(updates.find((u) => u.taskId === 'g2')?.message).toMatch(/asks for 2 GPUs but 1 are free/);
    executor.launch(task('g3', 'exit 0', { resources: 'gpus:1' }));
    expect(executor.snapshot('g3')?.gpuIndices).toEqual([2]);
    executor.kill('g1', 100);
    await ended('g1');
    // g1's devices are free again.
    executor.launch(task('g4', 'exit 0', { resources: 'gpus:2' }));
    expect(executor.snapshot('g4')?.gpuIndices).toEqual([0, 1]);
  });

  it('writes stdout and stderr to the sandbox files', async () => {
    executor.launch(task('io', 'echo out-line; echo err-line >&2'));
    await ended('io');
    const dir = sandboxDir(workDir, 'io');
    expect(readFileSync(join(dir, 'stdout'), 'utf8')).toBe('out-line\n');
    expect(readFileSync(join(dir, 'stderr'), 'utf8')).toBe('err-line\n');
  });

  it('runs a program with its argv (arguments[0] is argv0) when shell is false', async () => {
    executor.launch(task('argv', '', {
      command: { shell: false, value: '/bin/sh', arguments: ['my-name', '-c', 'tr "\\0" " " < /proc/$$/cmdline; echo; echo "$0 $1"', 'zero', 'one'], environment: [] },
    }));
    await ended('argv');
    const out = readFileSync(join(sandboxDir(workDir, 'argv'), 'stdout'), 'utf8').split('\n');
    expect(out[0]).toMatch(/^my-name -c /);
    expect(out[1]).toBe('zero one');
  });

  it('kills with SIGTERM, and the task ends KILLED', async () => {
    executor.launch(task('k1', 'sleep 30'));
    const t0 = Date.now();
    expect(executor.kill('k1')).toBe('killing');
    expect(await ended('k1')).toMatchObject({ state: 'TASK_KILLED', hasExitCode: true, exitCode: -15 });
    expect(Date.now() - t0).toBeLessThan(1000);
  });

  it('sends SIGKILL to the whole group after the grace period when TERM is trapped', async () => {
    executor.launch(task('trap', "trap 'echo got TERM' TERM; echo ready; while true; do sleep 0.05; done"));
    // Wait until the trap is installed.
    const dir = sandboxDir(workDir, 'trap');
    // (The log file appears once the task's supervisor has opened it.)
      for (let i = 0; i < 100 && !(existsSync(join(dir, 'stdout')) && readFileSync(join(dir, 'stdout'), 'utf8').includes('ready')); i++) {
      await new Promise((r) => setTimeout(r, 20));
    }
    const t0 = Date.now();
    executor.kill('trap', 400);
    const last = await ended('trap');
    const took = Date.now() - t0;
    expect(last).toMatchObject({ state: 'TASK_KILLED', hasExitCode: true, exitCode: -9 });
    expect(took).toBeGreaterThanOrEqual(350);
    expect(took).toBeLessThan(2000);
    expect(readFileSync(join(dir, 'stdout'), 'utf8')).toContain('got TERM');
  });

  it('uses the task kill_grace_ms when the kill names none', async () => {
    executor.launch(task('tg', "trap '' TERM; echo ready; sleep 30", { killGraceMs: 200 }));
    // Wait until the trap is installed (a fixed pause lost the race on a busy machine).
    const out = join(sandboxDir(workDir, 'tg'), 'stdout');
    for (let i = 0; i < 500 && !(existsSync(out) && readFileSync(out, 'utf8').includes('ready')); i++) {
      await new Promise((r) => setTimeout(r, 20));
    }
    const t0 = Date.now();
    executor.kill('tg');
    expect(await ended('tg')).toMatchObject({ state: 'TASK_KILLED', exitCode: -9 });
    expect(Date.now() - t0).toBeLessThan(1500);
  });

  it('kills what the task started in the background, too', async () => {
    executor.launch(task('bg', 'sleep 30 & echo $! > child.pid; wait'));
    const pidFile = join(sandboxDir(workDir, 'bg'), 'child.pid');
    let pid = 0;
    for (let i = 0; i < 100 && !pid; i++) {
      await new Promise((r) => setTimeout(r, 20));
      try { pid = Number(readFileSync(pidFile, 'utf8').trim()); } catch { /* not yet */ }
    }
    expect(pid).toBeGreaterThan(0);
    executor.kill('bg', 200);
    await ended('bg');
    await new Promise((r) => setTimeout(r, 50));
    // Gone, or a zombie waiting for whoever adopted it to reap it.
    let state = 'gone';
    try { state = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.[0] ?? 'gone'; } catch { /* gone */ }
    expect(['gone', 'Z', 'X']).toContain(state);
  });

  it('reports a program that cannot start as FAILED and says why in stderr', async () => {
    const outcome = executor.launch(task('nope', '', {
      command: { shell: false, value: '/no/such/program', arguments: [], environment: [] },
    }));
    expect(outcome).toBe('failed');
    const last = await ended('nope');
    expect(last.state).toBe('TASK_FAILED');
    expect(last.message).toMatch(/ENOENT/);
    expect(last.hasExitCode).toBe(false);
    expect(statesOf('nope')).toEqual(['TASK_FAILED']);
    expect(readFileSync(join(sandboxDir(workDir, 'nope'), 'stderr'), 'utf8')).toMatch(/cannot start/);
  });

  it('ignores a second launch of a task it holds, and kills of ended or unknown tasks', async () => {
    executor.launch(task('dup', 'sleep 5'));
    expect(executor.launch(task('dup', 'exit 1'))).toBe('duplicate');
    expect(executor.kill('nobody')).toBe('unknown');
    executor.kill('dup', 100);
    await ended('dup');
    expect(executor.kill('dup')).toBe('terminal');
    // Until its end is acknowledged (released) it is listed with its last active state,
    // so a registration in between does not make the master write it off as lost.
    expect(executor.activeTasks()).toEqual([{ taskId: 'dup', frameworkId: 'fw-1', state: 'TASK_RUNNING', resources: 'cpus:0.1;mem:32' }]);
    expect(executor.runningCount()).toBe(0);
    executor.release('dup');
    expect(executor.has('dup')).toBe(false);
    expect(executor.activeTasks()).toEqual([]);
  });

  it('lists running tasks with their resources', async () => {
    executor.launch(task('r1', 'sleep 5', { resources: 'cpus:0.5;mem:16' }));
    expect(executor.activeTasks()[0].state).toBe('TASK_STAGING');
    await waitUntil(() => statesOf('r1').includes('TASK_RUNNING'));
    expect(executor.activeTasks()).toEqual([{ taskId: 'r1', frameworkId: 'fw-1', state: 'TASK_RUNNING', resources: 'cpus:0.5;mem:16' }]);
    executor.release('r1'); // running tasks are not released
    expect(executor.has('r1')).toBe(true);
  });

  it('reads logs by offset, with eof only once the task has ended and all is read', async () => {
    executor.launch(task('log', "printf 'hello world'; sleep 2"));
    // Wait for the output itself (a fixed pause lost the race on a busy machine).
    const out = join(sandboxDir(workDir, 'log'), 'stdout');
    for (let i = 0; i < 500 && !(existsSync(out) && readFileSync(out, 'utf8') === 'hello world'); i++) {
      await new Promise((r) => setTimeout(r, 10));
    }
    const first = await executor.readLog('log', 'stdout', 0, 5);
    expect(first).toEqual({ data: 'hello', offset: 0, nextOffset: 5, eof: false });
    const rest = await executor.readLog('log', 'stdout', 5);
    expect(rest).toEqual({ data: ' world', offset: 5, nextOffset: 11, eof: false });
    await ended('log');
    expect(await executor.readLog('log', 'stdout', 11)).toEqual({ data: '', offset: 11, nextOffset: 11, eof: true });
    // A released task, or one an earlier agent ran, is read from its sandbox path.
    executor.release('log');
    const fresh = new ProcessExecutor({ workDir, hostname: 'h', onStatus: () => {} });
    expect(await fresh.readLog('log', 'stdout', 6)).toEqual({ data: 'world', offset: 6, nextOffset: 11, eof: true });
    await expect(fresh.readLog('missing', 'stdout', 0)).rejects.toMatchObject({ code: 'CAIRN_UNKNOWN_TASK' });
    await expect(fresh.readLog('log', 'stdlog' as 'stdout', 0)).rejects.toMatchObject({ code: 'CAIRN_BAD_REQUEST', field: 'stream' });
    await expect(fresh.readLog('log', 'stdout', -1)).rejects.toMatchObject({ code: 'CAIRN_BAD_REQUEST', field: 'offset' });
  });

  it('never splits a UTF-8 character across reads', async () => {
    const dir = sandboxDir(workDir, 'utf');
    executor.launch(task('utf', 'exit 0'));
    await ended('utf');
    writeFileSync(join(dir, 'stdout'), 'aé€😀');
    const a = await executor.readLog('utf', 'stdout', 0, 2); // 'a' + first byte of 'é'
    expect(a).toMatchObject({ data: 'a', nextOffset: 1 });
    const b = await executor.readLog('utf', 'stdout', 1, 6); // 'é' (2) + '€' (3) + 1 byte of the emoji
    expect(b).toMatchObject({ data: 'é€', nextOffset: 6, eof: false });
    const c = await executor.readLog('utf', 'stdout', 6);
    expect(c).toMatchObject({ data: '😀', nextOffset: 10, eof: true });
  });

  it('escapes task ids into safe, distinct sandbox names', () => {
    expect(sanitizeTaskId('web.1-abc_2')).toBe('web.1-abc_2');
    expect(sanitizeTaskId('a/b')).toBe('a%2Fb');
    expect(sanitizeTaskId('a_b')).not.toBe(sanitizeTaskId('a/b'));
    expect(sanitizeTaskId('..')).toBe('%2E.');
    expect(sanitizeTaskId('x'.repeat(500)).length).toBeLessThanOrEqual(200);
    expect(sanitizeTaskId('x'.repeat(500))).not.toBe(sanitizeTaskId('x'.repeat(501)));
  });
});

describe('executor helpers', () => {
  it('builds argv Mesos-style', () => {
    expect(spawnSpecFor({ shell: true, value: 'echo hi', arguments: [], environment: [] })).toEqual({ file: '/bin/sh', args: ['-c', 'echo hi'], argv0: 'sh' });
    expect(spawnSpecFor({ shell: false, value: '/bin/echo', arguments: [], environment: [] })).toEqual({ file: '/bin/echo', args: [], argv0: '/bin/echo' });
    expect(spawnSpecFor({ shell: false, value: '/bin/echo', arguments: ['echo', 'a', 'b'], environment: [] })).toEqual({ file: '/bin/echo', args: ['a', 'b'], argv0: 'echo' });
  });

  it('maps ends to terminal states', () => {
    expect(terminalStatusFor(0, null, false).state).toBe('TASK_FINISHED');
    expect(terminalStatusFor(2, null, false)).toMatchObject({ state: 'TASK_FAILED', exitCode: 2 });
    expect(terminalStatusFor(null, 'SIGKILL', false)).toMatchObject({ state: 'TASK_FAILED', message: 'killed by signal SIGKILL', exitCode: -9 });
    expect(terminalStatusFor(0, null, true).state).toBe('TASK_KILLED');
    expect(terminalStatusFor(null, 'SIGTERM', true)).toMatchObject({ state: 'TASK_KILLED', exitCode: -15 });
  });

  it('gives a default PATH when the agent has none', () => {
    const env = buildTaskEnvironment({ taskId: 't', frameworkId: 'f', hostname: 'h', sandbox: '/s', ports: [], gpuIndices: [], taskEnv: [], agentEnv: {} });
    expect(env.PATH).toContain('/usr/bin');
    expect(env.PORT).toBeUndefined();
    expect(env.PORTS).toBeUndefined();
    expect(Object.keys(env).filter((k) => k.startsWith('CAIRN_DNS'))).toEqual([]);
  });

  it("gives the masters' DNS servers and the task's own name; the task's env wins", () => {
    const base = { taskId: 't', frameworkId: 'f', hostname: 'h', sandbox: '/s', ports: [], gpuIndices: [], agentEnv: {} };
    const env = buildTaskEnvironment({ ...base, taskEnv: [{ name: 'CAIRN_DNS_DOMAIN', value: 'mine' }], dns: { servers: ['10.0.0.1:53', '10.0.0.2:53'], domain: 'cairn', name: 'ps.train.prod.cairn' } });
    expect(env).toMatchObject({ CAIRN_DNS: '10.0.0.1:53,10.0.0.2:53', CAIRN_DNS_NAME: 'ps.train.prod.cairn', CAIRN_DNS_FRAMEWORK: 'train.prod.cairn', CAIRN_DNS_DOMAIN: 'mine' });
    const none = buildTaskEnvironment({ ...base, taskEnv: [], dns: { servers: [], name: '' } });
    expect(Object.keys(none).filter((k) => k.startsWith('CAIRN_DNS'))).toEqual([]);
  });

  it('assigns GPUs lowest first and takes them back', () => {
    const pool = new GpuPool([3, 1, 2, 0]);
    expect(pool.assign('a', 2)).toEqual([0, 1]);
    expect(pool.assign('b', 3)).toBeUndefined();
    expect(pool.assign('b', 1)).toEqual([2]);
    pool.release('a');
    expect(pool.assign('c', 3)).toEqual([0, 1, 3]);
    expect(pool.freeCount()).toBe(0);
  });

  it('shares a device among up to N tasks, spreading them, and never gives one task a device twice', () => {
    const pool = new GpuPool([0, 1], 2);
    expect(pool.freeCount()).toBe(4);
    expect(pool.assign('a', 1)).toEqual([0]);
    expect(pool.assign('b', 1)).toEqual([1]); // the emptier device first
    expect(pool.assign('c', 2)).toEqual([0, 1]);
    expect(pool.assign('d', 1)).toBeUndefined(); // both devices are held twice
    pool.release('a');
    expect(pool.assign('d', 2)).toBeUndefined(); // one free share, on one device: not two distinct devices
    expect(pool.claim('e', [1])).toBe(false);
    expect(pool.claim('e', [0])).toBe(true);
    pool.markUnhealthy(1, 'GPU is lost');
    pool.release('b');
    pool.release('c');
    expect(pool.freeCount()).toBe(1); // device 1 is out of service; device 0 has one share back
    expect(() => new GpuPool([0], 0)).toThrow(RangeError);
  });

  it('finds the end of the last whole UTF-8 character', () => {
    const bytes = Buffer.from('a€', 'utf8'); // 1 + 3 bytes
    expect(utf8BoundaryLength(bytes)).toBe(4);
    expect(utf8BoundaryLength(bytes.subarray(0, 3))).toBe(1);
    expect(utf8BoundaryLength(bytes.subarray(0, 2))).toBe(1);
    expect(utf8BoundaryLength(bytes.subarray(0, 1))).toBe(1);
  });
});
