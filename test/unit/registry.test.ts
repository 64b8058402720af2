// The registry state machine: deterministic, snapshot-equivalent, and durable through
// the SQLite store (restart = replay of snapshot + log).

import { describe, expect, it } from 'vitest';
import { rmSync } from 'node:fs';
import type { RegistryCommand } from '../../master/registry/commands.ts';
import { LocalCommandLog } from '../../master/registry/local-log.ts';
import { RegistryStateMachine } from '../../master/registry/state-machine.ts';
import { tempDir } from '../harness/processes.ts';

const agent = (id: string) => ({ id, hostname: `h-${id}`, ip: '10.0.0.1', httpPort: 5051, resources: 'cpus:4;mem:4096', attributes: { rack: 'r1' }, registeredAtMs: 1 });
const launch = (id: string, agentId = 'a1'): RegistryCommand => ({
  type: 'task_launched',
  task: { id, name: id, frameworkId: 'f1', agentId, resources: 'cpus:1;mem:32', command: { shell: true, value: 'true', arguments: [], environment: [] }, labels: [], killGraceMs: 0, launchedAtMs: 2 },
  atMs: 2,
});
const update = (taskId: string, state: any, uuid: string): RegistryCommand => ({ type: 'status_update', taskId, state, message: '', reason: '', source: 'SOURCE_AGENT', uuid, atMs: 3 });

const script: RegistryCommand[] = [
  { type: 'agent_registered', agent: agent('a1'), uuids: [], atMs: 1 },
  { type: 'framework_subscribed', framework: { id: 'f1', name: 'fw', user: 'u', role: '*', principal: '', failoverTimeoutS: 10, registeredAtMs: 1 }, atMs: 1 },
  launch('t1'),
  launch('t2'),
  launch('t3'),
  update('t1', 'TASK_RUNNING', 'u1'),
  update('t2', 'TASK_RUNNING', 'u2'),
  update('t3', 'TASK_RUNNING', 'u3'),
  update('t1', 'TASK_FINISHED', 'u4'),
  { type: 'status_acknowledged', taskId: 't1', uuid: 'u4' },
  { type: 'agent_unreachable', agentId: 'a1', uuids: ['x1', 'x2'], atMs: 4 },
];

describe('registry state machine', () => {
  it('gives the same state for the same commands, and a snapshot equal to the replay', () => {
    const a = new RegistryStateMachine();
    const b = new RegistryStateMachine();
    for (const c of script) a.apply(structuredClone(c));
    for (const c of script) b.apply(structuredClone(c));
    expect(a.snapshot()).toEqual(b.snapshot());
    expect(RegistryStateMachine.fromSnapshot(a.snapshot()).snapshot()).toEqual(a.snapshot());
  });

  it('marks running tasks unreachable, then reconciles on re-registration', () => {
    const sm = new RegistryStateMachine();
    for (const c of script) sm.apply(structuredClone(c));
    expect(sm.tasks.get('t2')!.state).toBe('TASK_UNREACHABLE');
    expect(sm.tasks.get('t1')!.state).toBe('TASK_FINISHED');
    const events = sm.apply({ type: 'agent_registered', agent: agent('a1'), runningTasks: [{ taskId: 't2', state: 'TASK_RUNNING' }], uuids: ['r1', 'r2'], atMs: 5 });
    expect(events.map((e) => [e.task.id, e.update.state])).toEqual([
      ['t2', 'TASK_RUNNING'],
      ['t3', 'TASK_LOST'],
    ]);
    expect(sm.agents.get('a1')!.reachable).toBe(true);
  });

  it('writes off a STAGING task its re-registering agent does not run: its launch went to a connection the agent had left', () => {
    const sm = new RegistryStateMachine();
    sm.apply({ type: 'agent_registered', agent: agent('a1'), uuids: [], atMs: 1 });
    sm.apply(launch('t1'));
    const events = sm.apply({ type: 'agent_registered', agent: agent('a1'), runningTasks: [], uuids: ['r1'], atMs: 5 });
    expect(events.map((e) => [e.task.id, e.update.state, e.update.uuid])).toEqual([['t1', 'TASK_LOST', 'r1']]);
  });

  it('ignores a write-off decided before the agent registered again', () => {
    const sm = new RegistryStateMachine();
    sm.apply({ type: 'agent_registered', agent: agent('a1'), uuids: [], atMs: 1 });
    sm.apply(launch('t1'));
    // The leader decides with registrations = 1; the agent's second registration commits first.
    sm.apply({ type: 'agent_registered', agent: agent('a1'), runningTasks: [{ taskId: 't1', state: 'TASK_RUNNING' }], uuids: ['r1'], atMs: 5 });
    expect(sm.apply({ type: 'agent_unreachable', agentId: 'a1', uuids: ['x1'], atMs: 6, registrations: 1 })).toEqual([]);
    expect(sm.apply({ type: 'agent_removed', agentId: 'a1', uuids: ['x2'], atMs: 6, registrations: 1 })).toEqual([]);
    expect(sm.agents.get('a1')!.reachable).toBe(true);
    // Decided on what is current, it applies.
    expect(sm.apply({ type: 'agent_unreachable', agentId: 'a1', uuids: ['x3'], atMs: 7, registrations: 2 }).map((e) => e.update.state)).toEqual(['TASK_UNREACHABLE']);
  });

  it('gives every update a uuid, the same on every replica, when a command carries too few', () => {
    const run = () => {
      const sm = new RegistryStateMachine();
      sm.apply({ type: 'agent_registered', agent: agent('a1'), uuids: [], atMs: 1 });
      sm.apply(launch('t1'));
      sm.apply(launch('t2'));
      return sm.apply({ type: 'agent_unreachable', agentId: 'a1', uuids: ['x1'], atMs: 4 }).map((e) => e.update.uuid);
    };
    const uuids = run();
    expect(uuids[0]).toBe('x1');
    expect(Buffer.from(uuids[1], 'base64')).toHaveLength(16);
    expect(new Set(uuids).size).toBe(2);
    expect(run()).toEqual(uuids);
  });

  it('ignores stale commands instead of throwing (a replayed log always applies)', () => {
    const sm = new RegistryStateMachine();
    expect(sm.apply(update('nope', 'TASK_RUNNING', 'u'))).toEqual([]);
    for (const c of script) sm.apply(structuredClone(c));
    // a terminal task stays terminal
    expect(sm.apply(update('t1', 'TASK_RUNNING', 'u9'))).toEqual([]);
    expect(sm.tasks.get('t1')!.state).toBe('TASK_FINISHED');
    // a framework that was removed cannot come back
    sm.apply({ type: 'framework_removed', frameworkId: 'f1', atMs: 9 });
    sm.apply({ type: 'framework_subscribed', framework: { id: 'f1', name: 'again', user: 'u', role: '*', principal: '', failoverTimeoutS: 0, registeredAtMs: 9 }, atMs: 9 });
    expect(sm.frameworks.get('f1')!.name).toBe('fw');
  });
});

describe('registry persistence', () => {
  it('keeps everything across a restart on the same data dir', async () => {
    const dir = tempDir();
    try {
      const r1 = LocalCommandLog.open(dir, 'test');
      await Promise.all(script.map((c) => r1.submit(structuredClone(c))));
      const before = r1.state.snapshot();
      r1.close();
      const r2 = LocalCommandLog.open(dir, 'test');
      expect(r2.state.snapshot()).toEqual(before);
      await r2.submit(launch('t4'));
      r2.close();
      const r3 = LocalCommandLog.open(dir, 'test');
      expect(r3.state.tasks.get('t4')!.state).toBe('TASK_STAGING');
      r3.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
