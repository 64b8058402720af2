// `cairn run --file LOCAL[:NAME]`: the flag's parsing, the files read here, and the shell line
// that writes them into the sandbox, run here by sh in a directory standing for the sandbox.

import { execFileSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { fileFlag, MAX_RUN_FILES_BYTES, readRunFiles } from '../../bin/commands/tasks/run-files.ts';
import { taskCommand } from '../../bin/commands/tasks/run-tasks.ts';

const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));
function dir(): string {
  const d = mkdtempSync(join(tmpdir(), 'cairn-run-files-'));
  dirs.push(d);
  return d;
}

/** Runs a task's command as an agent would: sh -c in the sandbox, MESOS_SANDBOX set. */
function runInSandbox(value: string, sandbox: string): { code: number; out: string } {
  try {
    return { code: 0, out: execFileSync('/bin/sh', ['-c', value], { cwd: '/', env: { PATH: process.env.PATH, MESOS_SANDBOX: sandbox }, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }) };
  } catch (err) {
    const e = err as { status: number; stdout: string; stderr: string };
    return { code: e.status, out: e.stdout + e.stderr };
  }
}

describe('cairn run --file', () => {
  it('LOCAL[:NAME]: the name defaults to the base name, must be plain, and a later flag of the same name wins', () => {
    expect(fileFlag('scripts/train.sh')).toEqual([{ local: 'scripts/train.sh', name: 'train.sh' }]);
    expect(fileFlag('/tmp/a.py:main.py', [{ local: 'b', name: 'b' }])).toEqual([{ local: 'b', name: 'b' }, { local: '/tmp/a.py', name: 'main.py' }]);
    expect(fileFlag('x:b', [{ local: 'b', name: 'b' }])).toEqual([{ local: 'x', name: 'b' }]);
    expect(() => fileFlag('a:../evil')).toThrow(/'..\/evil', must be a plain file name/);
    expect(() => fileFlag('a:')).toThrow(/must be a plain file name/);
  });

  it('reads the files, marks the executable ones, and refuses an unreadable file or too much in all, naming it', () => {
    const d = dir();
    writeFileSync(join(d, 'job.sh'), '#!/bin/sh\necho job\n');
    chmodSync(join(d, 'job.sh'), 0o755);
    writeFileSync(join(d, 'data.txt'), 'x');
    chmodSync(join(d, 'data.txt'), 0o644);
    const files = readRunFiles([{ local: join(d, 'job.sh'), name: 'job.sh' }, { local: join(d, 'data.txt'), name: 'd' }]);
    expect(files).toEqual([
      { name: 'job.sh', base64: Buffer.from('#!/bin/sh\necho job\n').toString('base64'), executable: true },
      { name: 'd', base64: 'eA==', executable: false },
    ]);
    expect(() => readRunFiles([{ local: join(d, 'missing'), name: 'm' }])).toThrow(`--file ${join(d, 'missing')}: cannot read it (ENOENT)`);
    writeFileSync(join(d, 'big'), Buffer.alloc(MAX_RUN_FILES_BYTES));
    expect(() => readRunFiles([{ local: join(d, 'big'), name: 'big' }])).toThrow(/the files hold \d+ bytes encoded; at most 65536/);
  });

  it('the task writes the files into its sandbox, runs the command there, and passes argv words through as they are', () => {
    const script = '#!/bin/sh\necho "ran $0 with [$1] [$2] in $(pwd)"; cat data\n';
    const files = [
      { name: 'job.sh', base64: Buffer.from(script).toString('base64'), executable: true },
      { name: 'data', base64: Buffer.from("it's data\n").toString('base64'), executable: false },
    ];
    const sandbox = dir();
    const argv = taskCommand(['./job.sh', "a b'c", '$HOME'], files);
    expect(argv.shell).toBe(true);
    const r = runInSandbox(argv.value!, sandbox);
    expect(r).toEqual({ code: 0, out: `ran ./job.sh with [a b'c] [$HOME] in ${sandbox}\nit's data\n` });
    expect(statSync(join(sandbox, 'job.sh')).mode & 0o111).not.toBe(0);
    expect(statSync(join(sandbox, 'data')).mode & 0o111).toBe(0);
    expect(readFileSync(join(sandbox, 'data'), 'utf8')).toBe("it's data\n");

    // One argument is a shell line, run after the files are written; its exit code is the task's.
    const line = taskCommand(['./job.sh x; exit 7'], files);
    expect(runInSandbox(line.value!, dir())).toMatchObject({ code: 7, out: expect.stringContaining('with [x] []') });
    // Without files the command is as before.
    expect(taskCommand(['echo hi'])).toEqual({ shell: true, value: 'echo hi' });
    expect(taskCommand(['echo', 'hi'])).toEqual({ shell: false, value: 'echo', arguments: ['echo', 'hi'] });
  });

  it('a sandbox that cannot be written ends the task before the command runs', () => {
    const files = [{ name: 'job.sh', base64: 'eA==', executable: true }];
    const r = runInSandbox(taskCommand(['echo ran'], files).value!, '/proc');
    expect(r.code).toBe(1);
    expect(r.out).not.toContain('ran');
  });
});
