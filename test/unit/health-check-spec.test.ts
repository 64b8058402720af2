// A task's health_check at the edge (validation with field paths, Mesos' defaults), on the
// wire to the agent (old frames still decode), and aimed by the agent (a BRIDGE container's
// mapped port).

import { describe, expect, it } from 'vitest';
import { parseSchedulerCall } from '../../master/scheduler-calls.ts';
import { CairnError } from '../../shared/errors.ts';
import { decodeAgentToMaster, decodeMasterToAgent, encodeAgentToMaster, encodeMasterToAgent, type HealthCheckSpec, type TaskInfo } from '../../shared/agent-protocol.ts';
import { checkedPort, describeTarget, healthTarget, usableSpec } from '../../agent/health/target.ts';
import { ExecOutput, httpStatusHealthy } from '../../agent/health/probes.ts';
import { commandTarget } from '../../agent/health/health-checks.ts';

const base = {
  name: 't', task_id: { value: 't1' }, agent_id: { value: 'a1' },
  resources: [
    { name: 'cpus', type: 'SCALAR', scalar: { value: 1 } },
    { name: 'mem', type: 'SCALAR', scalar: { value: 64 } },
    { name: 'ports', type: 'RANGES', ranges: { range: [{ begin: 31000, end: 31001 }] } },
  ],
  command: { value: 'echo hi', shell: true },
};
const launch = (task: Record<string, unknown>) => ({
  type: 'ACCEPT',
  framework_id: { value: 'fw' },
  accept: { offer_ids: [{ value: 'o1' }], operations: [{ type: 'LAUNCH', launch: { task_infos: [task] } }] },
});
const F = 'accept.operations[0].launch.task_infos[0].health_check';

function parsed(healthCheck: unknown, extra: Record<string, unknown> = {}): HealthCheckSpec | undefined {
  const c = parseSchedulerCall(launch({ ...base, ...extra, health_check: healthCheck }));
  if (c.type !== 'ACCEPT') throw new Error('not an accept');
  return c.tasks[0]!.healthCheck;
}

/** A bad check refuses its task alone (TASK_ERROR naming the field), not the ACCEPT. */
function refused(healthCheck: unknown, extra: Record<string, unknown> = {}): { field: string | undefined; message: string } {
  const c = parseSchedulerCall(launch({ ...base, ...extra, health_check: healthCheck }));
  if (c.type !== 'ACCEPT' || c.refused?.length !== 1) throw new Error('accepted');
  return { field: c.refused[0]!.field, message: c.refused[0]!.message };
}

const bridge = { container: { type: 'DOCKER', docker: { image: 'img', network: 'BRIDGE', port_mappings: [{ container_port: 8080 }, { container_port: 9090, host_port: 31000 }] } } };

describe('health_check validation', () => {
  it("fills Mesos' defaults and converts seconds to milliseconds", () => {
    expect(parsed({ type: 'HTTP', http: { port: 31000 } })).toEqual({
      type: 'http', port: 31000, path: '/', scheme: 'http', statuses: [], command: '',
      delayMs: 15_000, intervalMs: 10_000, timeoutMs: 20_000, gracePeriodMs: 10_000, consecutiveFailures: 3,
    });
    expect(parsed({ type: 'TCP', tcp: { port: 31001 }, delay_seconds: 0, interval_seconds: 1, timeout_seconds: 0.5, grace_period_seconds: 0, consecutive_failures: 0 })).toMatchObject({
      type: 'tcp', port: 31001, delayMs: 0, intervalMs: 1000, timeoutMs: 500, gracePeriodMs: 0, consecutiveFailures: 0,
    });
    expect(parsed({ type: 'COMMAND', command: { value: 'test -f ready' } })).toMatchObject({ type: 'command', command: 'test -f ready', port: 0 });
    expect(parsed({ type: 'HTTP', http: { port: 31000, path: '/healthz', scheme: 'HTTPS', statuses: [200, 204] } })).toMatchObject({ path: '/healthz', scheme: 'https', statuses: [200, 204] });
    // Nulls, as Mesos clients send them, are absent.
    expect(parsed({ type: 'HTTP', http: { port: 31000, path: null }, tcp: null, delay_seconds: null })).toMatchObject({ path: '/', delayMs: 15_000 });
    expect(parsed(undefined)).toBeUndefined();
  });

  it('refuses a port the process task does not hold', () => {
    expect(refused({ type: 'HTTP', http: { port: 8080 } })).toMatchObject({ field: `${F}.http.port`, message: expect.stringContaining('31000, 31001') });
    expect(refused({ type: 'TCP', tcp: { port: 80 } }).field).toBe(`${F}.tcp.port`);
    expect(refused({ type: 'TCP', tcp: { port: 70000 } }).field).toBe(`${F}.tcp.port`);
    expect(refused({ type: 'TCP', tcp: {} }).field).toBe(`${F}.tcp.port`);
  });

  it('takes a BRIDGE container\'s mapped container port or its host port, and any port of a HOST container', () => {
    expect(parsed({ type: 'HTTP', http: { port: 8080 } }, bridge)?.port).toBe(8080);
    expect(parsed({ type: 'TCP', tcp: { port: 31000 } }, bridge)?.port).toBe(31000);
    expect(refused({ type: 'TCP', tcp: { port: 7000 } }, bridge)).toMatchObject({ field: `${F}.tcp.port`, message: expect.stringContaining('8080, 9090') });
    const host = { container: { type: 'DOCKER', docker: { image: 'img', network: 'HOST' } } };
    expect(parsed({ type: 'HTTP', http: { port: 80 } }, host)?.port).toBe(80);
  });

  it('refuses negative and zero durations where they make no sense', () => {
    for (const key of ['delay_seconds', 'interval_seconds', 'timeout_seconds', 'grace_period_seconds']) {
      expect(refused({ type: 'TCP', tcp: { port: 31000 }, [key]: -1 })).toMatchObject({ field: `${F}.${key}`, message: expect.stringContaining('negative') });
      expect(refused({ type: 'TCP', tcp: { port: 31000 }, [key]: 'soon' }).field).toBe(`${F}.${key}`);
    }
    expect(refused({ type: 'TCP', tcp: { port: 31000 }, interval_seconds: 0 }).field).toBe(`${F}.interval_seconds`);
    expect(refused({ type: 'TCP', tcp: { port: 31000 }, timeout_seconds: 0 }).field).toBe(`${F}.timeout_seconds`);
    expect(refused({ type: 'TCP', tcp: { port: 31000 }, delay_seconds: 1e9 }).field).toBe(`${F}.delay_seconds`);
    expect(refused({ type: 'TCP', tcp: { port: 31000 }, consecutive_failures: -1 }).field).toBe(`${F}.consecutive_failures`);
    expect(refused({ type: 'TCP', tcp: { port: 31000 }, consecutive_failures: 1.5 }).field).toBe(`${F}.consecutive_failures`);
  });

  it('requires the type and its sub-object to agree', () => {
    expect(refused({ type: 'HTTP', tcp: { port: 31000 } }).field).toBe(`${F}.tcp`);
    expect(refused({ type: 'HTTP' }).field).toBe(`${F}.http`);
    expect(refused({ type: 'TCP', tcp: { port: 31000 }, command: { value: 'true' } }).field).toBe(`${F}.command`);
    expect(refused({ type: 'COMMAND', command: {} }).field).toBe(`${F}.command.value`);
    expect(refused({ type: 'COMMAND', command: { value: '  ' } }).field).toBe(`${F}.command.value`);
    expect(refused({ type: 'GRPC', grpc: {} })).toMatchObject({ field: `${F}.type`, message: expect.stringContaining('HTTP, TCP or COMMAND') });
    expect(refused({ http: { port: 31000 } }).field).toBe(`${F}.type`);
    expect(refused('HTTP').field).toBe(F);
    expect(refused({ type: 'HTTP', http: 31000 }).field).toBe(`${F}.http`);
  });

  it('checks the HTTP path, scheme and statuses', () => {
    expect(refused({ type: 'HTTP', http: { port: 31000, path: 'health' } }).field).toBe(`${F}.http.path`);
    expect(refused({ type: 'HTTP', http: { port: 31000, path: '/a b' } }).field).toBe(`${F}.http.path`);
    expect(refused({ type: 'HTTP', http: { port: 31000, scheme: 'ftp' } }).field).toBe(`${F}.http.scheme`);
    expect(refused({ type: 'HTTP', http: { port: 31000, statuses: 200 } }).field).toBe(`${F}.http.statuses`);
    expect(refused({ type: 'HTTP', http: { port: 31000, statuses: [200, 999] } }).field).toBe(`${F}.http.statuses[1]`);
  });
});

describe('health checks on the wire', () => {
  const task: TaskInfo = { taskId: 't1', frameworkId: 'fw', name: 't', resources: 'cpus:1;mem:64;ports:[31000-31001]', command: { shell: true, value: 'x', arguments: [], environment: [] }, killGraceMs: 0, labels: [] };
  const spec: HealthCheckSpec = { type: 'http', port: 31000, path: '/h', scheme: 'https', statuses: [200, 204], command: '', delayMs: 0, intervalMs: 1000, timeoutMs: 500, gracePeriodMs: 2000, consecutiveFailures: 3 };

  it('carries the check with the launch; a launch without one (as older masters send) decodes with none', () => {
    const m = decodeMasterToAgent(encodeMasterToAgent({ launch: { tasks: [{ ...task, healthCheck: spec }, task] } }));
    if (!('launch' in m)) throw new Error('not a launch');
    expect(m.launch.tasks[0]!.healthCheck).toEqual(spec);
    expect(m.launch.tasks[1]!.healthCheck).toBeNull();
  });

  it('carries healthy on status updates; an update without it (as older agents send) says it has none', () => {
    const su = { uuid: new Uint8Array(16), taskId: 't1', frameworkId: 'fw', state: 'TASK_RUNNING' as const, message: '', hasExitCode: false, exitCode: 0, timestampMs: 1, reason: '' };
    const plain = encodeAgentToMaster({ statusUpdate: su });
    const withFalse = decodeAgentToMaster(encodeAgentToMaster({ statusUpdate: { ...su, hasHealthy: true, healthy: false } }));
    expect(withFalse).toMatchObject({ statusUpdate: { hasHealthy: true, healthy: false } });
    expect(decodeAgentToMaster(plain)).toMatchObject({ statusUpdate: { hasHealthy: false, healthy: false } });
    // No health: not a byte more than before.
    expect(encodeAgentToMaster({ statusUpdate: { ...su, hasHealthy: false, healthy: false } })).toEqual(plain);
  });

  it('the agent takes a sound spec only', () => {
    expect(usableSpec(spec)).toBe(true);
    expect(usableSpec(null)).toBe(false);
    expect(usableSpec({ ...spec, intervalMs: 0 })).toBe(false);
    expect(usableSpec({ ...spec, port: 0 })).toBe(false);
    expect(usableSpec({ ...spec, type: 'command', command: '' })).toBe(false);
    expect(usableSpec({ ...spec, type: 'grpc' as 'http' })).toBe(false);
  });
});

describe('where the agent aims a check', () => {
  const spec: HealthCheckSpec = { type: 'http', port: 8080, path: '/h', scheme: 'http', statuses: [], command: '', delayMs: 0, intervalMs: 1000, timeoutMs: 500, gracePeriodMs: 0, consecutiveFailures: 3 };
  const docker = (network: 'host' | 'bridge', portMappings: { hostPort: number; containerPort: number; protocol: 'tcp' | 'udp' }[]) => ({
    type: 'docker' as const, docker: { image: 'img', network, portMappings, pullPolicy: 'never' as const }, volumes: [],
  });

  it('checks the host port a BRIDGE container port is mapped to, as the Docker executor assigns it', () => {
    // 9090 takes 31000 explicitly; 8080 gets the next task port not otherwise mapped.
    const info = { resources: 'cpus:1;mem:64;ports:[31000-31001]', container: docker('bridge', [{ hostPort: 0, containerPort: 8080, protocol: 'tcp' }, { hostPort: 31000, containerPort: 9090, protocol: 'tcp' }]) };
    expect(checkedPort(spec, info)).toBe(31001);
    expect(checkedPort({ ...spec, port: 9090 }, info)).toBe(31000);
    expect(checkedPort({ ...spec, port: 31001 }, info)).toBe(31001);
    expect(checkedPort(spec, { resources: 'cpus:1', container: docker('host', []) })).toBe(8080);
    expect(checkedPort({ ...spec, port: 31000 }, { resources: 'cpus:1;ports:[31000-31000]' })).toBe(31000);
  });

  it('runs a COMMAND check of a container through docker exec, and says what it checks', () => {
    const cmd = { ...spec, type: 'command' as const, command: 'test -f /ready' };
    const inContainer = healthTarget(cmd, { taskId: 'web.1', resources: 'cpus:1', container: docker('host', []) });
    expect(inContainer).toEqual({ kind: 'docker-exec', container: 'cairn-web.1', command: 'test -f /ready' });
    expect(healthTarget(cmd, { taskId: 'p', resources: 'cpus:1' })).toEqual({ kind: 'command', command: 'test -f /ready' });
    expect(describeTarget(inContainer)).toBe("COMMAND 'test -f /ready' in container cairn-web.1");
    expect(describeTarget(healthTarget({ ...spec, type: 'tcp', port: 31000 }, { taskId: 'p', resources: 'cpus:1;ports:[31000-31000]' }))).toBe('TCP connect 127.0.0.1:31000');
  });

  it('counts 200-399 healthy, or exactly the statuses given', () => {
    expect([199, 200, 302, 399, 400, 404, 500].map((s) => httpStatusHealthy(s, []))).toEqual([false, true, true, true, false, false, false]);
    expect([200, 204, 503].map((s) => httpStatusHealthy(s, [204, 503]))).toEqual([false, true, true]);
  });

  it("runs a COMMAND check next to a process with that process's environment, in its sandbox", () => {
    const t = commandTarget('true', { pid: process.pid, sandbox: '/tmp/sb' }, {});
    expect(t.cwd).toBe('/tmp/sb');
    expect(t.env.PATH).toBe(process.env.PATH);
    const gone = commandTarget('true', { pid: 2 ** 22 + 1, sandbox: '/tmp/sb' }, { PATH: '/bin' });
    expect(gone.env).toEqual({ PATH: '/bin', MESOS_SANDBOX: '/tmp/sb' });
  });
});

describe("a container check's output", () => {
  const frame = (stream: number, text: string) => {
    const payload = Buffer.from(text);
    const header = Buffer.alloc(8);
    header[0] = stream;
    header.writeUInt32BE(payload.length, 4);
    return Buffer.concat([header, payload]);
  };

  it('is read out of Docker’s stream frames, however the bytes are split', () => {
    // Lengths that are printable characters ('n' = 110) must not leak into the text.
    const bytes = Buffer.concat([frame(1, 'not ready\n'), frame(2, 'x'.repeat(110)), frame(1, 'done')]);
    for (const cut of [1, 3, 8, 9, 17, 64]) {
      const out = new ExecOutput();
      for (let i = 0; i < bytes.length; i += cut) out.add(bytes.subarray(i, i + cut));
      expect(out.text()).toBe(`not ready\n${'x'.repeat(110)}done`);
    }
  });
});
