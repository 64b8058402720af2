// Names under a framework's name answer only for that name's principal (issue 22, finding 4):
// Bob's framework named `marathon` with a task `web-alice` adds nothing to the services'
// `_web-alice._tcp.marathon.cairn`; a framework `train.jobs` cannot answer for a job's replica
// name; of two principals' frameworks of one name, the earlier holds it, and it passes on when
// that one is removed. The reserved names are the built-ins' own.

import { beforeEach, describe, expect, it } from 'vitest';
import type { RegistryCommand } from '../../master/registry/commands.ts';
import { RegistryStateMachine } from '../../master/registry/state-machine.ts';
import { DnsZone } from '../../master/dns/zone.ts';
import { BUILTIN_PRINCIPAL } from '../../master/builtin-principal.ts';
import { BUILTIN_FRAMEWORK_NAMES, RESERVED_NAME_KEYS } from '../../master/dns/reserved-names.ts';
import { BUILTIN_FRAMEWORKS } from '../../master/framework-host/all.ts';

const agent: RegistryCommand = {
  type: 'agent_registered',
  agent: { id: 'a1-S0', hostname: 'h1', ip: '10.0.0.11', httpPort: 5051, resources: 'cpus:8;mem:8192;ports:[31000-32000]', attributes: {}, registeredAtMs: 1 },
  uuids: [],
  atMs: 1,
};
const framework = (id: string, name: string, principal: string, registeredAtMs: number): RegistryCommand => ({
  type: 'framework_subscribed',
  framework: { id, name, user: 'u', role: '*', principal, failoverTimeoutS: 60, registeredAtMs },
  atMs: registeredAtMs,
});
let uuid = 0;
/** A task launched and RUNNING, with one port. */
const running = (id: string, name: string, frameworkId: string, port: number, labels: { name: string; value: string }[] = []): RegistryCommand[] => [
  {
    type: 'task_launched',
    task: { id, name, frameworkId, agentId: 'a1-S0', resources: `cpus:0.1;mem:32;ports:[${port}-${port}]`, command: { shell: true, value: 'true', arguments: [], environment: [] }, labels, killGraceMs: 0, launchedAtMs: 2 },
    atMs: 2,
  },
  { type: 'status_update', taskId: id, state: 'TASK_RUNNING', message: '', reason: '', source: 'SOURCE_AGENT', uuid: `u${uuid++}`, atMs: 3 },
];

let sm: RegistryStateMachine;
let zone: DnsZone;
function apply(...commands: RegistryCommand[]): void {
  for (const c of commands) zone.applyCommand(c, sm.apply(c), sm);
}
const ports = (name: string) => (zone.lookup(name)?.srv ?? []).map((s) => s.port).sort();

beforeEach(() => {
  sm = new RegistryStateMachine();
  zone = new DnsZone({ domain: 'cairn', leader: { ip: '10.0.0.1', port: 5050 }, nsIp: '10.0.0.1', reservedNames: RESERVED_NAME_KEYS });
  apply(agent);
});

describe('names belong to their owners', () => {
  it("answers under marathon.cairn only for the services' tasks, whoever else names a framework marathon", () => {
    apply(framework('svc', 'marathon', BUILTIN_PRINCIPAL, 5), ...running('alice-1', 'web-alice', 'svc', 31001));
    // Bob's framework, registered earlier still (before the rule refused it at SUBSCRIBE).
    apply(framework('bob', 'Marathon', 'bob', 1), ...running('bob-1', 'web-alice', 'bob', 31002));
    expect(ports('_web-alice._tcp.marathon.cairn')).toEqual([31001]);
    expect(zone.lookup('web-alice.marathon.cairn')?.a).toEqual(['10.0.0.11']);
    expect([...zone.taskEntries()].map((t) => t.taskId)).toEqual(['alice-1']);
  });

  it("keeps a job's replica names to the jobs framework", () => {
    apply(framework('jobs', 'jobs', BUILTIN_PRINCIPAL, 5), ...running('r0', 'train-master-0', 'jobs', 31001, [{ name: 'cairn.job', value: 'train' }]));
    apply(framework('bob', 'train.jobs', 'bob', 1), ...running('b0', 'train-master-0', 'bob', 31002));
    expect(zone.lookup('train-master-0.train.jobs.cairn')?.a).toEqual(['10.0.0.11']);
    expect(ports('_train-master-0._tcp.train.jobs.cairn')).toEqual([]);
    expect([...zone.taskEntries()].map((t) => t.taskId)).toEqual(['r0']);
  });

  it('gives a name to the earliest live framework of it, and passes it on when that one is removed', () => {
    apply(framework('fa', 'svc', 'alice', 1), ...running('a1', 'web', 'fa', 31001));
    apply(framework('fb', 'x.SVC', 'bob', 2), ...running('b1', 'web', 'fb', 31002));
    apply(framework('fa2', 'svc', 'alice', 3), ...running('a2', 'web', 'fa2', 31003));
    expect(ports('_web._tcp.svc.cairn')).toEqual([31001, 31003]);
    expect(zone.lookup('web.x.svc.cairn')).toBeUndefined();
    apply({ type: 'framework_removed', frameworkId: 'fa', atMs: 9 } as RegistryCommand, { type: 'framework_removed', frameworkId: 'fa2', atMs: 9 } as RegistryCommand);
    expect(zone.lookup('web.x.svc.cairn')?.a).toEqual(['10.0.0.11']);
    // The same from a whole state, as a follower loads a snapshot.
    const loaded = new DnsZone({ domain: 'cairn', leader: { ip: '10.0.0.1', port: 5050 }, nsIp: '10.0.0.1', reservedNames: RESERVED_NAME_KEYS });
    loaded.load(sm);
    expect(loaded.lookup('web.x.svc.cairn')?.a).toEqual(['10.0.0.11']);
  });

  it("reserves exactly the built-in frameworks' names, and slave", () => {
    expect(BUILTIN_FRAMEWORKS.map((f) => f.name).sort()).toEqual([...BUILTIN_FRAMEWORK_NAMES].sort());
    expect([...RESERVED_NAME_KEYS.keys()].sort()).toEqual([...BUILTIN_FRAMEWORK_NAMES, 'slave'].sort());
  });
});
