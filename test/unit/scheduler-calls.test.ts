// Validation of Mesos v1 scheduler calls at the edge: typed calls out, or an error naming
// the field.

import { describe, expect, it } from 'vitest';
import { parseSchedulerCall } from '../../master/api/scheduler-calls.ts';
import { CairnError } from '../../shared/errors.ts';

const launch = (task: Record<string, unknown>) => ({
  type: 'ACCEPT',
  framework_id: { value: 'fw' },
  accept: { offer_ids: [{ value: 'o1' }], operations: [{ type: 'LAUNCH', launch: { task_infos: [task] } }] },
});
const base = {
  name: 't', task_id: { value: 't1' }, agent_id: { value: 'a1' },
  resources: [
    { name: 'cpus', type: 'SCALAR', scalar: { value: 1 } },
    { name: 'mem', type: 'SCALAR', scalar: { value: 64 } },
    { name: 'ports', type: 'RANGES', ranges: { range: [{ begin: 31000, end: 31001 }] } },
  ],
  command: { value: 'echo hi', shell: true },
};

function fieldOf(body: unknown): string | undefined {
  try {
    parseSchedulerCall(body);
  } catch (err) {
    expect(err).toBeInstanceOf(CairnError);
    return (err as CairnError).field;
  }
  return undefined;
}

describe('scheduler call validation', () => {
  it('treats nulls as absent and reads a Mesos SUBSCRIBE', () => {
    const c = parseSchedulerCall({ type: 'SUBSCRIBE', framework_id: null, subscribe: { framework_info: { user: 'u', name: 'n', roles: ['ml'], failover_timeout: 30, id: null } } });
    expect(c).toEqual({ type: 'SUBSCRIBE', framework: { id: undefined, name: 'n', user: 'u', role: 'ml', principal: '', failoverTimeoutS: 30, capabilities: [] } });
  });

  it('reads a Docker container in Mesos JSON', () => {
    const c = parseSchedulerCall(launch({
      ...base,
      container: {
        type: 'DOCKER',
        docker: { image: 'registry.local/app:1.2', network: 'BRIDGE', port_mappings: [{ host_port: 31001, container_port: 80 }, { container_port: 9090, protocol: 'udp' }], force_pull_image: true },
        volumes: [{ container_path: '/data', host_path: '/srv/data', mode: 'RO' }],
      },
    }));
    if (c.type !== 'ACCEPT') throw new Error('not an accept');
    expect(c.tasks[0].container).toEqual({
      type: 'docker',
      docker: { image: 'registry.local/app:1.2', network: 'bridge', pullPolicy: 'always', portMappings: [{ hostPort: 31001, containerPort: 80, protocol: 'tcp' }, { hostPort: 0, containerPort: 9090, protocol: 'udp' }] },
      volumes: [{ hostPath: '/srv/data', containerPath: '/data', readOnly: true }],
    });
  });

  it('names the field of a bad container', () => {
    const f = 'accept.operations[0].launch.task_infos[0].container';
    expect(fieldOf(launch({ ...base, container: { type: 'APPC' } }))).toBe(`${f}.type`);
    expect(fieldOf(launch({ ...base, container: { type: 'DOCKER', docker: {} } }))).toBe(`${f}.docker.image`);
    expect(fieldOf(launch({ ...base, container: { type: 'DOCKER', docker: { image: 'x', network: 'BRIDGE', port_mappings: [{ host_port: 5000, container_port: 80 }] } } }))).toBe(`${f}.docker.port_mappings[0].host_port`);
    expect(fieldOf(launch({ ...base, container: { type: 'DOCKER', docker: { image: 'x', network: 'BRIDGE', port_mappings: [{ container_port: 1 }, { container_port: 2 }, { container_port: 3 }] } } }))).toBe(`${f}.docker.port_mappings`);
    expect(fieldOf(launch({ ...base, container: { type: 'DOCKER', docker: { image: 'x', pull_policy: 'sometimes' } } }))).toBe(`${f}.docker.pull_policy`);
    expect(fieldOf(launch({ ...base, container: { type: 'DOCKER', docker: { image: 'x' }, volumes: [{ host_path: 'rel', container_path: '/d' }] } }))).toBe(`${f}.volumes[0].host_path`);
  });

  it('names the field of other bad input', () => {
    expect(fieldOf({ type: 'NOPE' })).toBe('type');
    expect(fieldOf({ type: 'DECLINE', framework_id: { value: 'fw' }, decline: { offer_ids: [{ value: 'o' }], filters: { refuse_seconds: -1 } } })).toBe('decline.filters.refuse_seconds');
    expect(fieldOf(launch({ ...base, task_id: { value: 'has space' } }))).toBe('accept.operations[0].launch.task_infos[0].task_id.value');
    expect(fieldOf(launch({ ...base, command: { shell: true } }))).toBe('accept.operations[0].launch.task_infos[0].command.value');
    expect(fieldOf({ type: 'ACKNOWLEDGE', framework_id: { value: 'fw' }, acknowledge: { agent_id: { value: 'a' }, task_id: { value: 't' }, uuid: 'short' } })).toBe('acknowledge.uuid');
  });
});
