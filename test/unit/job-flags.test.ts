// cairn job submit's flags as Cairn's job document: the dmlc-tracker form for ps-lite and the
// --replicas form for the others; bad values refused naming the flag; what is built is a
// document the master accepts.

import { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { CairnError } from '../../shared/errors.ts';
import { addJobSubmitFlags, JOB_SUBMIT_FLAGS, jobDocumentFromFlags, type JobFlags } from '../../bin/commands/jobs/flags.ts';
import { parseJobDocument } from '../../shared/jobs/spec-parse.ts';

const NOW = Date.UTC(2026, 0, 2, 3, 4, 5);

function refusedFlag(flags: JobFlags, command: string[] = ['python3', 'train.py']): CairnError {
  try {
    jobDocumentFromFlags(flags, command, NOW);
  } catch (err) {
    expect(err).toBeInstanceOf(CairnError);
    expect((err as CairnError).code).toBe('CAIRN_BAD_FLAG');
    return err as CairnError;
  }
  throw new Error('expected the flags to be refused');
}

describe('jobDocumentFromFlags', () => {
  it('pslite in the style of dmlc-submit: one scheduler, N servers, M workers, one program', () => {
    const doc = jobDocumentFromFlags({ kind: 'pslite', numServers: 2, numWorkers: 4, name: 'sgd' }, ['python3', 'pslite_numpy.py', '--steps', '100'], NOW);
    expect(doc).toEqual({
      name: 'sgd',
      kind: 'pslite',
      groups: [
        { name: 'scheduler', replicas: 1, template: { command: ['python3', 'pslite_numpy.py', '--steps', '100'] } },
        { name: 'server', replicas: 2, template: { command: ['python3', 'pslite_numpy.py', '--steps', '100'] } },
        { name: 'worker', replicas: 4, template: { command: ['python3', 'pslite_numpy.py', '--steps', '100'] } },
      ],
    });
    const { spec } = parseJobDocument(doc);
    expect(spec.groups.map((g) => [g.name, g.replicas, g.template.command, g.template.args])).toEqual([
      ['scheduler', 1, 'python3', ['pslite_numpy.py', '--steps', '100']],
      ['server', 2, 'python3', ['pslite_numpy.py', '--steps', '100']],
      ['worker', 4, 'python3', ['pslite_numpy.py', '--steps', '100']],
    ]);
  });

  it('pslite with --server-cmd: the scheduler and servers run it, the workers the command', () => {
    const { spec } = parseJobDocument(jobDocumentFromFlags({ kind: 'pslite', numServers: '1', numWorkers: '2', serverCmd: './server --threads 4' }, ['./worker'], NOW));
    expect(spec.groups.map((g) => [g.name, g.template.command, g.template.args])).toEqual([
      ['scheduler', './server --threads 4', undefined],
      ['server', './server --threads 4', undefined],
      ['worker', './worker', undefined],
    ]);
  });

  it('pytorch: --replicas ranks in all, the first the master', () => {
    const { spec } = parseJobDocument(jobDocumentFromFlags({ kind: 'pytorch', replicas: 4, cpus: 0.5, mem: 256, gpus: 1, name: 'ddp' }, ['python3', 'pytorch_ddp.py'], NOW));
    expect(spec.groups.map((g) => [g.name, g.replicas])).toEqual([
      ['master', 1],
      ['worker', 3],
    ]);
    expect(spec.groups[1].template).toMatchObject({ cpus: 0.5, memMb: 256, gpus: 1 });
    expect(parseJobDocument(jobDocumentFromFlags({ kind: 'pytorch' }, ['python3 x.py'], NOW)).spec.groups.map((g) => g.name)).toEqual(['master']);
  });

  it('tensorflow: --replicas workers and --ps parameter servers', () => {
    const { spec } = parseJobDocument(jobDocumentFromFlags({ kind: 'tensorflow', replicas: 3, ps: 2 }, ['python3', 'tf_config_trainer.py'], NOW));
    expect(spec.groups.map((g) => [g.name, g.replicas])).toEqual([
      ['ps', 2],
      ['worker', 3],
    ]);
    expect(parseJobDocument(jobDocumentFromFlags({ kind: 'tensorflow', replicas: 2, ps: 0 }, ['t'], NOW)).spec.groups.map((g) => g.name)).toEqual(['worker']);
  });

  it('batch: --replicas indexed workers; one argument runs through sh -c; env and image', () => {
    const doc = jobDocumentFromFlags({ kind: 'batch', replicas: 4, env: [['ITEMS', '300'], ['MODE', 'a=b']], image: 'python:3.12-slim' }, ['python3 indexed_batch.py --items $ITEMS'], NOW);
    const { spec } = parseJobDocument(doc);
    expect(spec.groups).toEqual([
      {
        name: 'worker',
        replicas: 4,
        restartPolicy: 'Never',
        template: { command: 'python3 indexed_batch.py --items $ITEMS', image: 'python:3.12-slim', cpus: 1, memMb: 512, diskMb: 0, gpus: 0, ports: 1, env: { ITEMS: '300', MODE: 'a=b' }, volumes: [] },
      },
    ]);
  });

  it('takes the role and the priority class', () => {
    expect(jobDocumentFromFlags({ kind: 'batch', role: 'team/alice', priorityClass: 'production' }, ['true'], NOW)).toMatchObject({ role: 'team/alice', priorityClassName: 'production' });
    // Seed 002's names, in any case: the master says which class they are.
    expect(jobDocumentFromFlags({ kind: 'batch', priorityClass: 'PTR' }, ['true'], NOW)).toMatchObject({ priorityClassName: 'PTR' });
    expect(jobDocumentFromFlags({ kind: 'batch', priorityClass: 'Iteration' }, ['true'], NOW)).toMatchObject({ priorityClassName: 'Iteration' });
  });

  it('names a job from its kind and the time when --name is not given', () => {
    expect(jobDocumentFromFlags({ kind: 'batch' }, ['true'], NOW).name).toBe(`batch-${NOW.toString(36)}`);
    expect(jobDocumentFromFlags({ kind: 'batch' }, ['true'], NOW + 1).name).not.toBe(jobDocumentFromFlags({ kind: 'batch' }, ['true'], NOW).name);
  });

  it('refuses bad values and flags of another kind, naming the flag', () => {
    expect(refusedFlag({}).field).toBe('--kind');
    expect(refusedFlag({ kind: 'mpi' }).field).toBe('--kind');
    expect(refusedFlag({ kind: 'pslite', replicas: 3 }).message).toMatch(/--num-servers and --num-workers/);
    expect(refusedFlag({ kind: 'pytorch', ps: 1 }).field).toBe('--ps');
    expect(refusedFlag({ kind: 'batch', ps: 1 }).field).toBe('--ps');
    expect(refusedFlag({ kind: 'tensorflow', numWorkers: 2 }).field).toBe('--num-workers');
    expect(refusedFlag({ kind: 'batch', serverCmd: 'x' }).field).toBe('--server-cmd');
    expect(refusedFlag({ kind: 'pslite', numServers: 0 }).field).toBe('--num-servers');
    expect(refusedFlag({ kind: 'pslite', numWorkers: 'four' }).field).toBe('--num-workers');
    expect(refusedFlag({ kind: 'pslite', serverCmd: ' ' }).field).toBe('--server-cmd');
    expect(refusedFlag({ kind: 'batch', replicas: 0 }).field).toBe('--replicas');
    expect(refusedFlag({ kind: 'batch', replicas: 2.5 }).field).toBe('--replicas');
    expect(refusedFlag({ kind: 'batch', replicas: 20_000 }).field).toBe('--replicas');
    expect(refusedFlag({ kind: 'tensorflow', ps: -1 }).field).toBe('--ps');
    expect(refusedFlag({ kind: 'batch', cpus: 0 }).field).toBe('--cpus');
    expect(refusedFlag({ kind: 'batch', mem: '1Gi' }).field).toBe('--mem');
    expect(refusedFlag({ kind: 'batch', gpus: 0.5 }).field).toBe('--gpus');
    expect(refusedFlag({ kind: 'batch', name: 'My_Job' }).field).toBe('--name');
    expect(refusedFlag({ kind: 'batch', name: 'a'.repeat(41) }).field).toBe('--name');
    expect(refusedFlag({ kind: 'batch', image: 'not an image' }).field).toBe('--image');
    expect(refusedFlag({ kind: 'batch', env: [['1X', 'y']] }).field).toBe('--env');
    expect(refusedFlag({ kind: 'batch', role: 'team//a' }).field).toBe('--role');
    expect(refusedFlag({ kind: 'batch', priorityClass: 'Prod!' }).field).toBe('--priority-class');
    expect(refusedFlag({ kind: 'batch' }, []).field).toBe('command');
    expect(refusedFlag({ kind: 'batch' }, ['']).field).toBe('command');
    // The message says what to fix, with the flag.
    expect(refusedFlag({ kind: 'batch', replicas: 0 }).message).toBe('--replicas: must be a whole number from 1 to 10000, not 0');
  });
});

describe('JOB_SUBMIT_FLAGS', () => {
  it('registers on a command, and what commander parses builds a job', () => {
    const cmd = addJobSubmitFlags(new Command('submit').exitOverride().argument('[command...]'));
    let seen: { opts: JobFlags; args: string[] } | undefined;
    cmd.action((args: string[], opts: JobFlags) => {
      seen = { opts, args };
    });
    cmd.parse(['--kind', 'pslite', '--num-servers', '2', '--num-workers', '4', '--env', 'A=1', '--env', 'B=2=3', '--', 'python3', 'ps.py'], { from: 'user' });
    expect(seen!.args).toEqual(['python3', 'ps.py']);
    const doc = jobDocumentFromFlags(seen!.opts, seen!.args, NOW);
    const { spec } = parseJobDocument(doc);
    expect(spec.groups.map((g) => g.replicas)).toEqual([1, 2, 4]);
    expect(spec.groups[2].template.env).toEqual({ A: '1', B: '2=3' });
    expect(JOB_SUBMIT_FLAGS.map((f) => f.flags.split(' ')[0])).toEqual(
      expect.arrayContaining(['--kind', '--num-servers', '--num-workers', '--server-cmd', '--replicas', '--ps', '--cpus', '--mem', '--gpus', '--name']),
    );
  });
});
