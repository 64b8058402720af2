// A training job's shared directory on an agent: which tasks get one and where, the default
// under the work dir and --job-dirs pointing elsewhere, created once and kept.

import { afterEach, describe, expect, it } from 'vitest';
import { existsSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { ensureJobDir, jobDirFor } from '../../agent/job-dirs.ts';
import { compileAgentOptions } from '../../agent/options.ts';
import { tempDir } from '../harness/processes.ts';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

describe('job directories', () => {
  it('only a task labelled with a job gets one, named for the job; a name that is no DNS label gets none', () => {
    expect(jobDirFor([{ name: 'cairn.job', value: 'mnist' }], '/srv/jobs')).toBe('/srv/jobs/mnist');
    expect(jobDirFor([{ name: 'other', value: 'mnist' }], '/srv/jobs')).toBeUndefined();
    for (const bad of ['..', 'a/b', '../etc', 'Upper', '']) expect(jobDirFor([{ name: 'cairn.job', value: bad }], '/srv/jobs')).toBeUndefined();
  });

  it('lives under the work dir unless --job-dirs names another place', () => {
    expect(compileAgentOptions({ masterUrl: 'http://127.0.0.1:5050', workDir: '/w' }).jobDirs).toBe('/w/job-dirs');
    expect(compileAgentOptions({ masterUrl: 'http://127.0.0.1:5050', workDir: '/w', jobDirs: '/mnt/nfs/jobs' }).jobDirs).toBe('/mnt/nfs/jobs');
  });

  it('is created on first use and kept with what is in it', () => {
    const root = tempDir();
    dirs.push(root);
    const dir = `${root}/job-dirs/mnist`;
    ensureJobDir(dir, undefined);
    expect(statSync(dir).isDirectory()).toBe(true);
    writeFileSync(`${dir}/ckpt`, '5');
    ensureJobDir(dir, undefined);
    expect(existsSync(`${dir}/ckpt`)).toBe(true);
    writeFileSync(`${root}/job-dirs/file`, '');
    expect(() => ensureJobDir(`${root}/job-dirs/file`, undefined)).toThrow(/not a directory|EEXIST/);
  });
});
