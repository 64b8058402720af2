// Cairn's own job document: defaults filled, every rule refused naming the field, and each
// kind's rules on its groups.

import { describe, expect, it } from 'vitest';
import { CairnError } from '../../shared/errors.ts';
import { validateJobSpec } from '../../shared/jobs/spec-validate.ts';
import { mappedLocator } from '../../shared/jobs/field-paths.ts';

type Doc = Record<string, unknown>;

function job(over: Doc = {}, groups: Doc[] = [{ name: 'worker', replicas: 2, template: { command: 'python3 train.py' } }]): Doc {
  return { name: 'train', kind: 'batch', groups, ...over };
}

/** The error `fn` throws: it must be CAIRN_INVALID_JOB. */
function refusal(fn: () => unknown): CairnError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(CairnError);
    expect((err as CairnError).code).toBe('CAIRN_INVALID_JOB');
    return err as CairnError;
  }
  throw new Error('expected the document to be refused');
}

function refusedAt(raw: unknown, field: string, message?: RegExp): void {
  const err = refusal(() => validateJobSpec(raw));
  expect(err.field).toBe(field);
  if (message) expect(err.message).toMatch(message);
}

describe('validateJobSpec: defaults', () => {
  it('fills every default of a minimal batch job', () => {
    expect(validateJobSpec({ name: 'sweep', groups: [{ name: 'worker', template: { command: 'echo hi' } }] })).toEqual({
      name: 'sweep',
      kind: 'batch',
      groups: [
        {
          name: 'worker',
          replicas: 1,
          restartPolicy: 'Never',
          template: { command: 'echo hi', cpus: 1, memMb: 512, diskMb: 0, gpus: 0, ports: 1, env: {}, volumes: [] },
        },
      ],
      minAvailable: 1,
      successPolicy: 'Default',
      failurePolicies: [],
      backoffLimit: 6,
      cleanupPolicy: 'All',
      role: '*',
      priority: 0,
    });
  });

  it('restarts training replicas on failure and cleans up running TensorFlow replicas by default', () => {
    const tf = validateJobSpec(job({ kind: 'tensorflow' }, [{ name: 'ps', template: { command: 'x' } }, { name: 'worker', replicas: 3, template: { command: 'x' } }]));
    expect(tf.groups.map((g) => g.restartPolicy)).toEqual(['OnFailure', 'OnFailure']);
    expect(tf.cleanupPolicy).toBe('Running');
    expect(tf.minAvailable).toBe(4);
    const pt = validateJobSpec(job({ kind: 'pytorch' }, [{ name: 'master', template: { command: 'x' } }, { name: 'worker', replicas: 3, template: { command: 'x' } }]));
    expect(pt.groups[1].restartPolicy).toBe('OnFailure');
    expect(pt.cleanupPolicy).toBe('All');
  });

  it('keeps what is given: resources, env, volumes, policies, limits, role and priority', () => {
    const spec = validateJobSpec({
      apiVersion: 'cairn/v1',
      name: 'full',
      kind: 'batch',
      groups: [
        {
          name: 'map',
          replicas: 4,
          restartPolicy: 'ExitCode',
          template: {
            command: ['python3', 'map.py'],
            args: ['--shard', 'all'],
            image: 'registry:5000/team/mapper:1.2',
            cpus: 0.25,
            mem: 128,
            disk: 10,
            gpus: 1,
            ports: 2,
            env: { ITEMS: 300, VERBOSE: true, NAME: 'x' },
            volumes: [{ containerPath: '/data', hostPath: '/srv/data', mode: 'RO' }, { containerPath: '/out', hostPath: '/srv/out' }],
          },
        },
        { name: 'reduce', template: { command: 'python3 reduce.py' } },
      ],
      minAvailable: 2,
      successPolicy: '',
      failurePolicies: [{ event: 'TaskFailed', action: 'RestartJob' }, { event: 'TaskCompleted', action: 'CompleteJob', group: 'reduce' }],
      maxRetry: 3,
      activeDeadlineSeconds: 600,
      ttlSecondsAfterFinished: 0,
      cleanupPolicy: 'None',
      role: 'research',
      priority: 10,
    });
    expect(spec.groups[0].template).toEqual({
      command: 'python3',
      args: ['map.py', '--shard', 'all'],
      image: 'registry:5000/team/mapper:1.2',
      cpus: 0.25,
      memMb: 128,
      diskMb: 10,
      gpus: 1,
      ports: 2,
      env: { ITEMS: '300', VERBOSE: 'true', NAME: 'x' },
      volumes: [
        { containerPath: '/data', hostPath: '/srv/data', mode: 'RO' },
        { containerPath: '/out', hostPath: '/srv/out', mode: 'RW' },
      ],
    });
    expect(spec.groups[0].restartPolicy).toBe('ExitCode');
    expect(spec.minAvailable).toBe(2);
    expect(spec.successPolicy).toBe('Default');
    expect(spec.failurePolicies).toEqual([{ event: 'TaskFailed', action: 'RestartJob' }, { event: 'TaskCompleted', action: 'CompleteJob', group: 'reduce' }]);
    expect(spec.backoffLimit).toBe(3);
    expect(spec).toMatchObject({ activeDeadlineSeconds: 600, ttlSecondsAfterFinished: 0, cleanupPolicy: 'None', role: 'research', priority: 10 });
  });

  it('runs an image without a command through its own entrypoint', () => {
    const spec = validateJobSpec(job({}, [{ name: 'worker', template: { image: 'busybox', args: ['echo', 'hi'] } }]));
    expect(spec.groups[0].template).toMatchObject({ command: '', args: ['echo', 'hi'], image: 'busybox' });
  });

  it('gives back plain JSON: no undefined fields, so it can be stored as it is', () => {
    const spec = validateJobSpec(job());
    expect(JSON.parse(JSON.stringify(spec))).toEqual(spec);
    expect(Object.values(spec).includes(undefined)).toBe(false);
    expect('args' in spec.groups[0].template).toBe(false);
  });
});

describe('validateJobSpec: refused, naming the field', () => {
  it('the document itself and its names', () => {
    refusedAt([], '', /must be an object/);
    refusedAt(job({ name: undefined }), 'name', /required/);
    refusedAt(job({ name: 'Train' }), 'name', /not a valid job name/);
    refusedAt(job({ name: 'a'.repeat(41) }), 'name', /at most 40/);
    refusedAt(job({ name: 'train-' }), 'name');
    refusedAt(job({ name: 'x_y' }), 'name');
    refusedAt(job({}, [{ name: 'Worker', template: { command: 'x' } }]), 'groups[0].name', /not a valid group name/);
    refusedAt(job({}, [{ name: 'w'.repeat(21), template: { command: 'x' } }]), 'groups[0].name', /at most 20/);
    refusedAt(job({}, [{ name: 'a', template: { command: 'x' } }, { name: 'a', template: { command: 'x' } }]), 'groups[1].name', /names two groups/);
    refusedAt(job({ apiVersion: 'cairn/v2' }), 'apiVersion');
  });

  it('a replica name too long for one DNS label', () => {
    refusedAt(job({ name: 'j'.repeat(40) }, [{ name: 'g'.repeat(20), replicas: 11, template: { command: 'x' } }]), 'groups[0].name', /longer than 63/);
    // jjj…-ggg…-9: 40 + 1 + 20 + 1 + 1 = 63 fits.
    expect(validateJobSpec(job({ name: 'j'.repeat(40) }, [{ name: 'g'.repeat(20), replicas: 10, template: { command: 'x' } }])).groups[0].replicas).toBe(10);
  });

  it('unknown fields of Cairn\'s own format', () => {
    refusedAt(job({ replicas: 3 }), 'replicas', /unknown field 'replicas'/);
    refusedAt(job({}, [{ name: 'w', count: 2, template: { command: 'x' } }]), 'groups[0].count', /unknown field/);
    refusedAt(job({}, [{ name: 'w', template: { command: 'x', memory: 5 } }]), 'groups[0].template.memory', /unknown field 'memory'/);
    refusedAt(job({}, [{ name: 'w', template: { command: 'x', volumes: [{ containerPath: '/a', hostPath: '/b', readOnly: true }] } }]), 'groups[0].template.volumes[0].readOnly');
    refusedAt(job({ failurePolicies: [{ event: 'TaskFailed', action: 'AbortJob', exitCode: 3 }] }), 'failurePolicies[0].exitCode');
  });

  it('replicas, groups and the gang size', () => {
    refusedAt(job({ groups: undefined }), 'groups', /required/);
    refusedAt(job({}, []), 'groups', /at least one/);
    refusedAt(job({}, [{ name: 'w', replicas: 0, template: { command: 'x' } }]), 'groups[0].replicas', /from 1/);
    refusedAt(job({}, [{ name: 'w', replicas: -1, template: { command: 'x' } }]), 'groups[0].replicas');
    refusedAt(job({}, [{ name: 'w', replicas: 1.5, template: { command: 'x' } }]), 'groups[0].replicas', /whole number/);
    refusedAt(job({}, [{ name: 'w', replicas: '2', template: { command: 'x' } }]), 'groups[0].replicas', /whole number/);
    refusedAt(job({}, [{ name: 'w', replicas: 6000, template: { command: 'x' } }, { name: 'v', replicas: 6000, template: { command: 'x' } }]), 'groups[1].replicas', /at most 10000/);
    refusedAt(job({ minAvailable: 3 }), 'minAvailable', /from 1 to 2/);
    refusedAt(job({ minAvailable: 0 }), 'minAvailable');
  });

  it('resources, ports, commands, images', () => {
    refusedAt(job({}, [{ name: 'w', template: { command: 'x', cpus: -1 } }]), 'groups[0].template.cpus', /0 or more/);
    refusedAt(job({}, [{ name: 'w', template: { command: 'x', mem: '1Gi' } }]), 'groups[0].template.mem', /must be a number/);
    refusedAt(job({}, [{ name: 'w', template: { command: 'x', disk: -5 } }]), 'groups[0].template.disk');
    refusedAt(job({}, [{ name: 'w', template: { command: 'x', gpus: 0.5 } }]), 'groups[0].template.gpus', /whole number/);
    refusedAt(job({}, [{ name: 'w', template: { command: 'x', ports: 0 } }]), 'groups[0].template.ports');
    refusedAt(job({}, [{ name: 'w', template: {} }]), 'groups[0].template.command', /required/);
    refusedAt(job({}, [{ name: 'w' }]), 'groups[0].template.command', /required/);
    refusedAt(job({}, [{ name: 'w', template: { command: [] } }]), 'groups[0].template.command', /program/);
    refusedAt(job({}, [{ name: 'w', template: { command: ['python3', 3] } }]), 'groups[0].template.command[1]', /string/);
    refusedAt(job({}, [{ name: 'w', template: { command: 'x', args: ['--n', 3] } }]), 'groups[0].template.args[1]', /string/);
    refusedAt(job({}, [{ name: 'w', template: { command: 'x', image: 'no spaces please' } }]), 'groups[0].template.image', /image reference/);
  });

  it('env names and volume paths', () => {
    refusedAt(job({}, [{ name: 'w', template: { command: 'x', env: { '1BAD': 'x' } } }]), 'groups[0].template.env.1BAD', /variable name/);
    refusedAt(job({}, [{ name: 'w', template: { command: 'x', env: { GOOD: { nested: 1 } } } }]), 'groups[0].template.env.GOOD', /string/);
    refusedAt(job({}, [{ name: 'w', template: { command: 'x', env: ['A=1'] } }]), 'groups[0].template.env', /object/);
    refusedAt(job({}, [{ name: 'w', template: { command: 'x', volumes: [{ containerPath: 'data', hostPath: '/srv' }] } }]), 'groups[0].template.volumes[0].containerPath', /absolute/);
    refusedAt(job({}, [{ name: 'w', template: { command: 'x', volumes: [{ containerPath: '/data', hostPath: '/srv/../etc' }] } }]), 'groups[0].template.volumes[0].hostPath', /absolute/);
    refusedAt(job({}, [{ name: 'w', template: { command: 'x', volumes: [{ containerPath: '/data', hostPath: '/srv', mode: 'rw' }] } }]), 'groups[0].template.volumes[0].mode', /unknown volume mode/);
  });

  it('kinds, policies, events and actions', () => {
    refusedAt(job({ kind: 'mxnet' }), 'kind', /unknown job kind 'mxnet'/);
    refusedAt(job({}, [{ name: 'w', restartPolicy: 'Sometimes', template: { command: 'x' } }]), 'groups[0].restartPolicy', /unknown restart policy/);
    refusedAt(job({ failurePolicies: [{ event: 'PodFailed', action: 'RestartJob' }] }), 'failurePolicies[0].event', /unknown event 'PodFailed'/);
    refusedAt(job({ failurePolicies: [{ event: 'TaskFailed', action: 'Retry' }] }), 'failurePolicies[0].action', /unknown action/);
    refusedAt(job({ failurePolicies: [{ action: 'RestartJob' }] }), 'failurePolicies[0].event', /required/);
    refusedAt(job({ failurePolicies: [{ event: 'TaskFailed', action: 'RestartJob', group: 'ps' }] }), 'failurePolicies[0].group', /not a group of this job/);
    refusedAt(job({ failurePolicies: { event: 'TaskFailed' } }), 'failurePolicies', /list/);
    refusedAt(job({ cleanupPolicy: 'Some' }), 'cleanupPolicy', /unknown cleanup policy/);
    refusedAt(job({ successPolicy: 'AnyWorker' }), 'successPolicy');
  });

  it('limits, role and priority', () => {
    refusedAt(job({ backoffLimit: -1 }), 'backoffLimit');
    refusedAt(job({ maxRetry: 'three' }), 'maxRetry');
    refusedAt(job({ backoffLimit: 2, maxRetry: 2 }), 'maxRetry', /give one of them/);
    refusedAt(job({ activeDeadlineSeconds: 0 }), 'activeDeadlineSeconds');
    refusedAt(job({ ttlSecondsAfterFinished: -1 }), 'ttlSecondsAfterFinished');
    refusedAt(job({ role: 'a//b' }), 'role', /role name/);
    refusedAt(job({ role: 'team/.x' }), 'role', /role name/);
    refusedAt(job({ priorityClassName: 'Production!' }), 'priorityClassName', /priority class name/);
    // A class in any case (seed 002's Production, PTR) is the master's to resolve.
    expect(validateJobSpec(job({ priorityClassName: 'PTR' })).priorityClass).toBe('PTR');
    refusedAt(job({ priority: 1.5 }), 'priority');
  });

  it('prefixes fields with the path it is given, or maps them through a locator', () => {
    expect(refusal(() => validateJobSpec(job({ kind: 'mxnet' }), 'job')).field).toBe('job.kind');
    expect(refusal(() => validateJobSpec(job({}, [{ name: 'w', replicas: 0 }]), 'job')).field).toBe('job.groups[0].replicas');
    const locate = mappedLocator(new Map([['groups[0]', 'spec.tasks[0]'], ['groups[0].template', 'spec.tasks[0].template.spec.containers[0]']]));
    expect(refusal(() => validateJobSpec(job({}, [{ name: 'w', replicas: 0 }]), '', locate)).field).toBe('spec.tasks[0].replicas');
    expect(refusal(() => validateJobSpec(job({}, [{ name: 'w', template: { command: 'x', cpus: -1 } }]), '', locate)).field).toBe('spec.tasks[0].template.spec.containers[0].cpus');
  });
});

describe("validateJobSpec: the kinds' rules", () => {
  const t = { command: 'x' };
  const groups = (...specs: [string, number][]) => specs.map(([name, replicas]) => ({ name, replicas, template: t }));

  it('pslite: exactly one scheduler, servers and workers, nothing else', () => {
    expect(validateJobSpec(job({ kind: 'pslite' }, groups(['scheduler', 1], ['server', 2], ['worker', 4]))).minAvailable).toBe(7);
    refusedAt(job({ kind: 'pslite' }, groups(['server', 2], ['worker', 4])), 'groups', /needs a 'scheduler' group/);
    refusedAt(job({ kind: 'pslite' }, groups(['scheduler', 2], ['server', 2], ['worker', 4])), 'groups[0].replicas', /must be 1, not 2/);
    refusedAt(job({ kind: 'pslite' }, groups(['scheduler', 1], ['worker', 4])), 'groups', /needs a 'server' group/);
    refusedAt(job({ kind: 'pslite' }, groups(['scheduler', 1], ['server', 1])), 'groups', /needs a 'worker' group/);
    refusedAt(job({ kind: 'pslite' }, groups(['scheduler', 1], ['server', 1], ['worker', 1], ['ps', 1])), 'groups[3].name', /not a group of a pslite job/);
  });

  it('tensorflow: at most one chief (or master), at most one evaluator, a worker or a chief', () => {
    expect(validateJobSpec(job({ kind: 'tensorflow' }, groups(['chief', 1], ['ps', 2], ['worker', 3], ['evaluator', 1]))).groups).toHaveLength(4);
    expect(validateJobSpec(job({ kind: 'tensorflow' }, groups(['chief', 1]))).groups).toHaveLength(1);
    expect(validateJobSpec(job({ kind: 'tensorflow' }, groups(['master', 1], ['ps', 1]))).groups).toHaveLength(2);
    refusedAt(job({ kind: 'tensorflow' }, groups(['chief', 2], ['worker', 2])), 'groups[0].replicas', /at most one chief/);
    refusedAt(job({ kind: 'tensorflow' }, groups(['worker', 2], ['master', 2])), 'groups[1].replicas', /at most one master/);
    refusedAt(job({ kind: 'tensorflow' }, groups(['chief', 1], ['master', 1])), 'groups[1].name', /not both/);
    refusedAt(job({ kind: 'tensorflow' }, groups(['worker', 2], ['evaluator', 2])), 'groups[1].replicas', /at most one evaluator/);
    refusedAt(job({ kind: 'tensorflow' }, groups(['ps', 2])), 'groups', /'worker' or a 'chief'/);
    refusedAt(job({ kind: 'tensorflow' }, groups(['worker', 2], ['server', 1])), 'groups[1].name', /not a group of a tensorflow job/);
  });

  it('pytorch: one master of one replica, and workers', () => {
    expect(validateJobSpec(job({ kind: 'pytorch' }, groups(['master', 1], ['worker', 3]))).minAvailable).toBe(4);
    expect(validateJobSpec(job({ kind: 'pytorch' }, groups(['master', 1]))).groups).toHaveLength(1);
    refusedAt(job({ kind: 'pytorch' }, groups(['worker', 4])), 'groups', /needs a 'master' group/);
    refusedAt(job({ kind: 'pytorch' }, groups(['master', 2], ['worker', 2])), 'groups[0].replicas', /must be 1, not 2/);
    refusedAt(job({ kind: 'pytorch' }, groups(['master', 1], ['ps', 2])), 'groups[1].name', /not a group of a pytorch job/);
  });

  it('batch: any group names', () => {
    expect(validateJobSpec(job({ kind: 'batch' }, groups(['mapper', 4], ['reducer', 1], ['scheduler', 2]))).groups.map((g) => g.name)).toEqual(['mapper', 'reducer', 'scheduler']);
  });
});
