// The TaskInfo of a replica: its command as a shell line, a program with arguments, or a
// container's entrypoint; its environment, labels and ports; exit codes as the policies see them.

import { describe, expect, it } from 'vitest';
import { policyExitCode, taskInfoFor } from '../../master/frameworks/jobs/task-info.ts';
import type { TaskLaunch } from '../../master/frameworks/jobs/engine.ts';

function launch(template: Partial<TaskLaunch['template']>): TaskLaunch {
  return {
    taskId: 'mnist.worker-1.ab12.3',
    name: 'mnist-worker-1',
    job: 'mnist',
    group: 'worker',
    index: 1,
    resources: [{ name: 'cpus', type: 'SCALAR', scalar: { value: 1 } }] as never,
    ports: [31001],
    env: { RANK: '2', PORT: '31001' },
    template: { command: 'python train.py', cpus: 1, memMb: 512, diskMb: 0, gpus: 0, ports: 1, env: {}, volumes: [], ...template },
  };
}

describe('a replica\'s TaskInfo', () => {
  it('runs a string command through sh -c, named for DNS and labelled with its job, group and index', () => {
    const t = taskInfoFor(launch({}), 'agent-1');
    expect(t).toMatchObject({ name: 'mnist-worker-1', task_id: { value: 'mnist.worker-1.ab12.3' }, agent_id: { value: 'agent-1' }, command: { shell: true, value: 'python train.py' } });
    expect(t.command!.environment!.variables).toEqual([{ name: 'RANK', value: '2' }, { name: 'PORT', value: '31001' }]);
    expect(t.labels!.labels).toEqual([{ key: 'cairn.job', value: 'mnist' }, { key: 'cairn.job.group', value: 'worker' }, { key: 'cairn.job.index', value: '1' }]);
    expect(t.container).toBeUndefined();
  });

  it('runs a program with its arguments directly, and a container with host networking and its volumes', () => {
    expect(taskInfoFor(launch({ command: '/usr/bin/python3', args: ['train.py', '--epochs', '3'] }), 'a').command).toMatchObject({ shell: false, value: '/usr/bin/python3', arguments: ['/usr/bin/python3', 'train.py', '--epochs', '3'] });
    const c = taskInfoFor(launch({ command: '', image: 'pytorch/pytorch:2', args: ['--epochs', '3'], volumes: [{ containerPath: '/data', hostPath: '/srv/data', mode: 'RO' }] }), 'a');
    expect(c.command).toMatchObject({ shell: false, value: '', arguments: ['--epochs', '3'] });
    expect(taskInfoFor(launch({ command: '', image: 'trainer:1' }), 'a').command).toMatchObject({ shell: false, value: '', arguments: [] });
    expect(c.container).toEqual({ type: 'DOCKER', docker: { image: 'pytorch/pytorch:2', network: 'HOST' }, volumes: [{ host_path: '/srv/data', container_path: '/data', mode: 'RO' }] });
  });

  it('reads a signal\'s end as 128 + its number, and the exit code from the message when the record has none', () => {
    expect(policyExitCode(-9, 'killed by signal SIGKILL')).toBe(137);
    expect(policyExitCode(3, '')).toBe(3);
    expect(policyExitCode(undefined, 'exited with code 7')).toBe(7);
    expect(policyExitCode(undefined, 'agent is unreachable')).toBeUndefined();
  });
});
