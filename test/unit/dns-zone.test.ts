// The DNS zone follows registry commands: records exist exactly while a task is RUNNING
// on a known agent, follow agent address and framework name changes, and the zone tells
// which names changed.

import { beforeEach, describe, expect, it } from 'vitest';
import { rmSync } from 'node:fs';
import type { RegistryCommand } from '../../master/registry/commands.ts';
import { LocalCommandLog } from '../../master/registry/local-log.ts';
import { RegistryStateMachine } from '../../master/registry/state-machine.ts';
import { taskIdHash } from '../../master/dns/names.ts';
import { DnsZone } from '../../master/dns/zone.ts';
import { tempDir } from '../harness/processes.ts';

const agent = (id: string, ip: string, reg?: RegistryCommand['type']) => ({
  type: 'agent_registered' as const,
  agent: { id, hostname: `h-${id}`, ip, httpPort: 5051, resources: 'cpus:8;mem:8192;ports:[31000-32000]', attributes: {}, registeredAtMs: 1 },
  ...(reg ? { runningTasks: [] } : {}),
  uuids: [],
  atMs: 1,
});
const framework = (id: string, name: string): RegistryCommand => ({
  type: 'framework_subscribed',
  framework: { id, name, user: 'u', role: '*', principal: '', failoverTimeoutS: 60, registeredAtMs: 1 },
  atMs: 1,
});
const launch = (id: string, name: string, agentId: string, resources = 'cpus:1;mem:32', frameworkId = 'f1'): RegistryCommand => ({
  type: 'task_launched',
  task: { id, name, frameworkId, agentId, resources, command: { shell: true, value: 'true', arguments: [], environment: [] }, labels: [], killGraceMs: 0, launchedAtMs: 2 },
  atMs: 2,
});
let uuid = 0;
const update = (taskId: string, state: string): RegistryCommand => ({ type: 'status_update', taskId, state: state as never, message: '', reason: '', source: 'SOURCE_AGENT', uuid: `u${uuid++}`, atMs: 3 });

let sm: RegistryStateMachine;
let zone: DnsZone;
let changes: Set<string>[];

function apply(...commands: RegistryCommand[]): void {
  for (const c of commands) zone.applyCommand(c, sm.apply(c), sm);
}

const A = (name: string) => zone.lookup(name)?.a ?? [];
const SRV = (name: string) => (zone.lookup(name)?.srv ?? []).map((s) => `${s.target}:${s.port}`);

beforeEach(() => {
  sm = new RegistryStateMachine();
  zone = new DnsZone({ domain: 'cairn', leader: { ip: '10.0.0.1', port: 5050 }, nsIp: '10.0.0.1', serialBase: 100 });
  changes = [];
  zone.onChange((names) => changes.push(new Set(names)));
  apply(agent('a1-S0', '10.0.0.11'), agent('a2-S1', '10.0.0.12'), framework('f1', 'Marathon'));
});

describe('DNS zone', () => {
  it('has the leader, master, agent and name server names from the start', () => {
    expect(A('leader.cairn')).toEqual(['10.0.0.1']);
    expect(A('master.cairn')).toEqual(['10.0.0.1']);
    expect(A('master0.cairn')).toEqual(['10.0.0.1']);
    expect(SRV('_leader._tcp.cairn')).toEqual(['leader.cairn:5050']);
    expect(SRV('_leader._udp.cairn')).toEqual(['leader.cairn:5050']);
    expect(A('ns1.cairn')).toEqual(['10.0.0.1']);
    expect(A('agent.cairn')).toEqual(['10.0.0.11', '10.0.0.12']);
    expect(A('slave.cairn')).toEqual(['10.0.0.11', '10.0.0.12']);
  });

  it('gives a task its records only while it is RUNNING', () => {
    apply(launch('t1', 'Web_Server', 'a1-S0', 'cpus:1;mem:32;ports:[31000-31001]'));
    expect(zone.lookup('web-server.marathon.cairn')).toBeUndefined(); // STAGING
    apply(update('t1', 'TASK_STARTING'));
    expect(zone.lookup('web-server.marathon.cairn')).toBeUndefined();
    changes.length = 0;
    apply(update('t1', 'TASK_RUNNING'));

    const canonical = `web-server-${taskIdHash('t1')}-s0`;
    expect(A('web-server.marathon.cairn')).toEqual(['10.0.0.11']);
    expect(A(`${canonical}.marathon.cairn`)).toEqual(['10.0.0.11']);
    expect(A('web-server.marathon.slave.cairn')).toEqual(['10.0.0.11']);
    expect(A(`${canonical}.marathon.slave.cairn`)).toEqual(['10.0.0.11']);
    const target = `${canonical}.marathon.slave.cairn`;
    for (const name of ['_web-server._tcp.marathon.cairn', '_web-server._udp.marathon.cairn', '_web-server._tcp.marathon.slave.cairn', '_web-server._udp.marathon.slave.cairn']) {
      expect(SRV(name)).toEqual([`${target}:31000`, `${target}:31001`]);
    }
    expect(changes).toHaveLength(1);
    expect(changes[0].has('web-server.marathon.cairn')).toBe(true);
    // Names above records exist (NODATA), names beside them do not.
    expect(zone.exists('marathon.cairn')).toBe(true);
    expect(zone.exists('_tcp.marathon.cairn')).toBe(true);
    expect(zone.exists('other.marathon.cairn')).toBe(false);

    apply(update('t1', 'TASK_FINISHED'));
    expect(zone.lookup('web-server.marathon.cairn')).toBeUndefined();
    expect(zone.lookup('_web-server._tcp.marathon.cairn')).toBeUndefined();
    expect(zone.exists('marathon.cairn')).toBe(false);
    expect([...zone.taskEntries()]).toEqual([]);
  });

  it('answers one A per agent for tasks of the same name, and merges duplicates', () => {
    apply(launch('w1', 'worker', 'a1-S0'), launch('w2', 'worker', 'a1-S0'), launch('w3', 'worker', 'a2-S1'));
    apply(update('w1', 'TASK_RUNNING'), update('w2', 'TASK_RUNNING'), update('w3', 'TASK_RUNNING'));
    expect(A('worker.marathon.cairn')).toEqual(['10.0.0.11', '10.0.0.12']);
    apply(update('w1', 'TASK_KILLED'));
    expect(A('worker.marathon.cairn')).toEqual(['10.0.0.11', '10.0.0.12']); // w2 still there
    apply(update('w2', 'TASK_FAILED'));
    expect(A('worker.marathon.cairn')).toEqual(['10.0.0.12']);
  });

  it('drops the tasks of an unreachable agent and follows an agent that comes back at a new address', () => {
    apply(launch('t1', 'db', 'a1-S0'), update('t1', 'TASK_RUNNING'));
    apply({ type: 'agent_unreachable', agentId: 'a1-S0', uuids: ['x'], atMs: 4 });
    expect(zone.lookup('db.marathon.cairn')).toBeUndefined();
    expect(A('agent.cairn')).toEqual(['10.0.0.12']);
    // Re-registration reporting the task running again brings it back, at the new address.
    const rereg: RegistryCommand = { ...agent('a1-S0', '10.0.0.99'), runningTasks: [{ taskId: 't1', state: 'TASK_RUNNING' }], uuids: ['y'] };
    apply(rereg);
    expect(A('db.marathon.cairn')).toEqual(['10.0.0.99']);
    expect(A('agent.cairn')).toEqual(['10.0.0.12', '10.0.0.99']);
    // A re-registration with a new address and the task still running moves its records.
    apply({ ...agent('a1-S0', '10.0.0.98'), runningTasks: [{ taskId: 't1', state: 'TASK_RUNNING' }], uuids: [] });
    expect(A('db.marathon.cairn')).toEqual(['10.0.0.98']);
  });

  it('renames a framework\'s tasks when it resubscribes under a new name', () => {
    apply(launch('t1', 'api', 'a1-S0'), update('t1', 'TASK_RUNNING'));
    expect(A('api.marathon.cairn')).toEqual(['10.0.0.11']);
    apply(framework('f1', 'marathon.prod'));
    expect(zone.lookup('api.marathon.cairn')).toBeUndefined();
    expect(A('api.marathon.prod.cairn')).toEqual(['10.0.0.11']);
  });

  it('gives AAAA records for IPv6 agents and none for agents known only by name', () => {
    apply(agent('a6-S2', 'fd00::6'), agent('an-S3', 'host-n'));
    apply(launch('t6', 'v6', 'a6-S2'), update('t6', 'TASK_RUNNING'), launch('tn', 'named', 'an-S3'), update('tn', 'TASK_RUNNING'));
    expect(zone.lookup('v6.marathon.cairn')).toEqual({ a: [], aaaa: ['fd00::6'], srv: [] });
    expect(zone.lookup('named.marathon.cairn')).toBeUndefined();
  });

  it('builds the same records from a loaded state as from following the commands', () => {
    apply(launch('t1', 'web', 'a1-S0', 'cpus:1;mem:32;ports:[31005-31005]'), update('t1', 'TASK_RUNNING'), launch('t2', 'web', 'a2-S1'), update('t2', 'TASK_RUNNING'));
    const loaded = new DnsZone({ domain: 'cairn', leader: { ip: '10.0.0.1', port: 5050 }, nsIp: '10.0.0.1' });
    loaded.load(sm);
    const sorted = (z: DnsZone) => [...z.records()].map((r) => `${r.name} ${r.type} ${r.value}`).sort();
    expect(sorted(loaded)).toEqual(sorted(zone));
  });

  it('moves the SOA serial on every change and follows a new leader', () => {
    const before = zone.serial;
    apply(launch('t1', 'x', 'a1-S0'));
    expect(zone.serial).toBe(before); // nothing to serve changed
    apply(update('t1', 'TASK_RUNNING'));
    expect(zone.serial).toBe(before + 1);
    zone.setLeader({ ip: '10.0.0.2', port: 5051 });
    expect(A('leader.cairn')).toEqual(['10.0.0.2']);
    expect(SRV('_leader._tcp.cairn')).toEqual(['leader.cairn:5051']);
  });

  it('skips tasks whose names leave nothing usable', () => {
    apply(launch('t1', '!!!', 'a1-S0'), update('t1', 'TASK_RUNNING'));
    expect([...zone.taskEntries()]).toEqual([]);
  });
});

describe('DNS zone fed by the registry', () => {
  it('hears of each command, in order, only once it is durable', async () => {
    const dir = tempDir();
    const registry = LocalCommandLog.open(dir, 'test');
    const fed = new DnsZone({ domain: 'cairn', leader: { ip: '10.0.0.1', port: 5050 }, nsIp: '10.0.0.1' });
    fed.load(registry.state);
    const heard: string[] = [];
    const stop = registry.onApplied((command, events) => {
      heard.push(command.type);
      fed.applyCommand(command, events, registry.state);
    });
    try {
      const submitted = [agent('a1-S0', '10.0.0.11'), framework('f1', 'fw'), launch('t1', 'web', 'a1-S0'), update('t1', 'TASK_RUNNING')].map((c) => registry.submit(c));
      // Not yet durable: neither applied nor served.
      expect(registry.state.tasks.get('t1')).toBeUndefined();
      expect(heard).toEqual([]);
      expect(fed.lookup('web.fw.cairn')).toBeUndefined();
      await Promise.all(submitted);
      expect(heard).toEqual(['agent_registered', 'framework_subscribed', 'task_launched', 'status_update']);
      expect(fed.lookup('web.fw.cairn')?.a).toEqual(['10.0.0.11']);
      stop();
      await registry.submit(update('t1', 'TASK_FINISHED'));
      expect(heard).toHaveLength(4);
    } finally {
      registry.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
