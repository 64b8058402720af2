// Validation of Mesos v1 scheduler calls at the edge: typed calls out, or an error naming
// the field.

import { describe, expect, it } from 'vitest';
import { MAX_LENGTH, parseSchedulerCall, type RefusedTask } from '../../master/scheduler-calls.ts';
import { compileObjectLimits, DEFAULT_OBJECT_LIMITS } from '../../shared/sharing/object-limits.ts';
import { checkJsonDepth, jsonDepth, MAX_JSON_DEPTH } from '../../shared/json-body.ts';
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

/** The field a call is refused for: the whole call's, or that of an ACCEPT's task refused on its own. */
function fieldOf(body: unknown): string | undefined {
  try {
    const c = parseSchedulerCall(body);
    return c.type === 'ACCEPT' ? c.refused?.[0]?.field : undefined;
  } catch (err) {
    expect(err).toBeInstanceOf(CairnError);
    return (err as CairnError).field;
  }
}

/** The one task of an ACCEPT refused on its own; fails when the ACCEPT is taken or refused whole. */
function refusedTask(body: unknown, limits = DEFAULT_OBJECT_LIMITS): RefusedTask {
  const c = parseSchedulerCall(body, limits);
  if (c.type !== 'ACCEPT' || c.refused?.length !== 1) throw new Error('no task refused');
  return c.refused[0]!;
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

  it('leaves the program to a container\'s image only: a process task without one is refused', () => {
    const bare = { ...base, command: { shell: false } };
    const c = parseSchedulerCall(launch({ ...bare, container: { type: 'DOCKER', docker: { image: 'x' } } })) as any;
    expect(c.tasks[0].command).toMatchObject({ shell: false, value: '', arguments: [] });
    expect(fieldOf(launch(bare))).toBe('accept.operations[0].launch.task_infos[0].command.value');
  });

  it('names the field of other bad input', () => {
    expect(fieldOf({ type: 'NOPE' })).toBe('type');
    expect(fieldOf({ type: 'DECLINE', framework_id: { value: 'fw' }, decline: { offer_ids: [{ value: 'o' }], filters: { refuse_seconds: -1 } } })).toBe('decline.filters.refuse_seconds');
    expect(fieldOf(launch({ ...base, task_id: { value: 'has space' } }))).toBe('accept.operations[0].launch.task_infos[0].task_id.value');
    expect(fieldOf(launch({ ...base, command: { shell: true } }))).toBe('accept.operations[0].launch.task_infos[0].command.value');
    expect(fieldOf({ type: 'ACKNOWLEDGE', framework_id: { value: 'fw' }, acknowledge: { agent_id: { value: 'a' }, task_id: { value: 't' }, uuid: 'short' } })).toBe('acknowledge.uuid');
  });

  it('bounds every string a client sends, naming the field', () => {
    const long = (n: number) => 'x'.repeat(n);
    const problem = (body: unknown): CairnError => {
      try {
        parseSchedulerCall(body);
      } catch (err) {
        return err as CairnError;
      }
      throw new Error('accepted');
    };
    const subscribe = (info: Record<string, unknown>) => ({ type: 'SUBSCRIBE', subscribe: { framework_info: { user: 'u', name: 'n', ...info } } });
    const fi = 'subscribe.framework_info';
    for (const [info, field] of [
      [{ name: long(15 * 1024 * 1024) }, `${fi}.name`],
      [{ user: long(MAX_LENGTH.user + 1) }, `${fi}.user`],
      [{ principal: long(MAX_LENGTH.user + 1) }, `${fi}.principal`],
      [{ role: long(100_000) }, `${fi}.role`],
      [{ roles: [long(100_000)] }, `${fi}.roles[0]`],
      [{ capabilities: [{ type: long(100_000) }] }, `${fi}.capabilities[0].type`],
      [{ id: { value: long(100_000) } }, `${fi}.id.value`],
    ] as const) {
      const err = problem(subscribe(info));
      expect(err).toMatchObject({ code: 'CAIRN_BAD_REQUEST', field });
      expect(err.message).toMatch(/is too long: \d+ characters, at most \d+/);
      expect(err.message.length).toBeLessThan(300);
    }
    // At the limit is fine.
    expect(parseSchedulerCall(subscribe({ name: long(MAX_LENGTH.name), user: long(MAX_LENGTH.user) }))).toMatchObject({ type: 'SUBSCRIBE' });

    const t = 'accept.operations[0].launch.task_infos[0]';
    const cmd = (c: Record<string, unknown>) => ({ ...base, command: { value: 'true', shell: true, ...c } });
    for (const [task, field] of [
      [{ ...base, name: long(100_000) }, `${t}.name`],
      [{ ...base, task_id: { value: long(100_000) } }, `${t}.task_id.value`],
      [{ ...base, task_id: { value: long(256) } }, `${t}.task_id.value`],
      [cmd({ value: long(MAX_LENGTH.command + 1) }), `${t}.command.value`],
      [cmd({ shell: false, value: 'prog', arguments: ['prog', long(MAX_LENGTH.command - 2)] }), `${t}.command.arguments`],
      [cmd({ environment: { variables: [{ name: long(MAX_LENGTH.envName + 1), value: 'v' }] } }), `${t}.command.environment.variables[0].name`],
      [cmd({ environment: { variables: [{ name: 'V', value: long(MAX_LENGTH.command + 1) }] } }), `${t}.command.environment.variables[0].value`],
      [cmd({ environment: { variables: Array.from({ length: 1025 }, (_, i) => ({ name: `V${i}`, value: '' })) } }), `${t}.command.environment.variables`],
      [{ ...base, labels: { labels: [{ key: long(100_000), value: 'v' }] } }, `${t}.labels.labels[0].key`],
      [{ ...base, labels: { labels: [{ key: 'k', value: long(MAX_LENGTH.labelValue + 1) }] } }, `${t}.labels.labels[0].value`],
      [{ ...base, container: { type: 'DOCKER', docker: { image: long(100_000) } } }, `${t}.container.docker.image`],
      [{ ...base, container: { type: 'DOCKER', docker: { image: 'x' }, volumes: [{ host_path: `/${long(MAX_LENGTH.path)}`, container_path: '/d' }] } }, `${t}.container.volumes[0].host_path`],
    ] as const) {
      // The task is refused on its own (TASK_ERROR naming the field), not the ACCEPT.
      const r = refusedTask(launch(task));
      expect(r.field).toBe(field);
      expect(r.message).toMatch(/too long|entries|at most|not a valid id/);
    }
    expect(problem({ type: long(100_000) })).toMatchObject({ field: 'type' });
    expect(problem({ type: 'ACKNOWLEDGE', framework_id: { value: 'fw' }, acknowledge: { agent_id: { value: 'a' }, task_id: { value: 't' }, uuid: long(1_000_000) } })).toMatchObject({ field: 'acknowledge.uuid' });
    // A long command within the bound is fine.
    expect(parseSchedulerCall(launch(cmd({ value: long(MAX_LENGTH.command) })))).toMatchObject({ type: 'ACCEPT' });
  });
});

describe('JSON body depth', () => {
  it('measures nesting outside strings, and refuses bodies deeper than the bound', () => {
    expect(jsonDepth('{}')).toBe(1);
    expect(jsonDepth('{"a":[1,{"b":[]}]}')).toBe(4);
    expect(jsonDepth('{"a":"[[[[{{{{\\"[[["}')).toBe(1);
    expect(jsonDepth('"\\"[["')).toBe(0);
    expect(jsonDepth('[[[]],[[]]]')).toBe(3);
    expect(() => checkJsonDepth('['.repeat(MAX_JSON_DEPTH) + ']'.repeat(MAX_JSON_DEPTH))).not.toThrow();
    expect(() => checkJsonDepth('['.repeat(100_000))).toThrow(expect.objectContaining({ code: 'CAIRN_BAD_REQUEST', field: 'body' }));
    expect(() => checkJsonDepth('['.repeat(MAX_JSON_DEPTH + 1) + ']'.repeat(MAX_JSON_DEPTH + 1))).toThrow(/more than 64 deep/);
  });
});

describe('one bad task of an ACCEPT', () => {
  const accept = (tasks: unknown[]) => ({
    type: 'ACCEPT', framework_id: { value: 'fw' },
    accept: { offer_ids: [{ value: 'o1' }], operations: [{ type: 'LAUNCH', launch: { task_infos: tasks } }] },
  });

  it('refuses only that task, naming its field, and keeps the others (an app id of 5,000 characters made a label past 4,096)', () => {
    const long = 'a'.repeat(5000);
    const c = parseSchedulerCall(accept([
      { ...base, task_id: { value: 'alice.1' } },
      { ...base, task_id: { value: 'bob.1' }, labels: { labels: [{ key: 'cairn.marathon.app', value: `/${long}` }] } },
      { ...base, task_id: { value: 'alice.2' } },
    ]));
    expect(c.type).toBe('ACCEPT');
    if (c.type !== 'ACCEPT') return;
    expect(c.tasks.map((t) => t.taskId)).toEqual(['alice.1', 'alice.2']);
    expect(c.refused).toEqual([{
      taskId: 'bob.1', agentId: 'a1',
      field: 'accept.operations[0].launch.task_infos[1].labels.labels[0].value',
      message: expect.stringMatching(/labels\.labels\[0\]\.value.*5001 characters, at most 4096/),
    }]);
  });

  it('answers an over-long task id under that id, and refuses the whole ACCEPT only when nothing names the task', () => {
    const id = `${'x'.repeat(5000)}.uuid`;
    expect(refusedTask(accept([{ ...base, task_id: { value: id } }]))).toMatchObject({ taskId: id, field: 'accept.operations[0].launch.task_infos[0].task_id.value' });
    expect(() => parseSchedulerCall(accept([{ ...base, task_id: { value: 7 } }]))).toThrow(/task_id\.value/);
    expect(() => parseSchedulerCall(accept(['not a task']))).toThrow(/task_infos\[0\]/);
  });

  it("caps a task's environment at the master's --max-task-env, counting NAME=value with its terminator", () => {
    const env = (bytes: number) => ({ ...base, command: { value: 'true', shell: true, environment: { variables: [{ name: 'V', value: 'x'.repeat(bytes - 3) }] } } });
    const limits = compileObjectLimits({ maxTaskEnvBytes: 4096 });
    expect(parseSchedulerCall(accept([env(4096)]), limits)).not.toHaveProperty('refused');
    const r = refusedTask(accept([env(4097)]), limits);
    expect(r.field).toBe('accept.operations[0].launch.task_infos[0].command.environment.variables');
    expect(r.message).toMatch(/4097 bytes; a task carries at most 4096 \(the master's --max-task-env\)/);
    // The default: 128 KiB, two 64 KiB values past it.
    const big = { ...base, command: { value: 'true', shell: true, environment: { variables: [{ name: 'A', value: 'x'.repeat(65536) }, { name: 'B', value: 'x'.repeat(65536) }] } } };
    expect(refusedTask(accept([big])).message).toMatch(/at most 131072/);
  });
});
