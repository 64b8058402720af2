// A task's status history in the registry: what `cairn task ID` describes. It is part of the
// replicated state, so it must replay identically, travel in snapshots, stay bounded, and
// records written before it was kept must still load.

import { describe, expect, it } from 'vitest';
import { MAX_TASK_HISTORY, type RegistryCommand, type TaskRecord } from '../../master/registry/commands.ts';
import { RegistryStateMachine, type RegistrySnapshot } from '../../master/registry/state-machine.ts';

const agent = { id: 'a1', hostname: 'h1', ip: '10.0.0.1', httpPort: 5051, resources: 'cpus:4;mem:4096', attributes: {}, registeredAtMs: 1 };
const launch = (id: string): RegistryCommand => ({
  type: 'task_launched',
  task: { id, name: id, frameworkId: 'f1', agentId: 'a1', resources: 'cpus:1;mem:32', command: { shell: true, value: 'true', arguments: [], environment: [] }, labels: [], killGraceMs: 0, launchedAtMs: 2 },
  atMs: 2,
});
const update = (taskId: string, state: any, atMs: number, extra: { reason?: string; message?: string; exitCode?: number } = {}): RegistryCommand => ({
  type: 'status_update', taskId, state, message: extra.message ?? '', reason: extra.reason ?? '', source: 'SOURCE_AGENT', uuid: `u${atMs}`, atMs,
  ...(extra.exitCode !== undefined ? { exitCode: extra.exitCode } : {}),
});

function started(): RegistryStateMachine {
  const sm = new RegistryStateMachine();
  sm.apply({ type: 'agent_registered', agent, uuids: [], atMs: 1 });
  sm.apply(launch('t1'));
  return sm;
}

describe('task status history', () => {
  it('records each change with its state, reason, message, source and time, oldest first', () => {
    const sm = started();
    sm.apply(update('t1', 'TASK_RUNNING', 3));
    sm.apply(update('t1', 'TASK_FAILED', 4, { reason: 'REASON_CONTAINER_LIMITATION_MEMORY', message: 'memory limit exceeded', exitCode: -9 }));
    expect(sm.tasks.get('t1')!.history).toEqual([
      { state: 'TASK_STAGING', reason: '', message: '', source: 'SOURCE_MASTER', atMs: 2 },
      { state: 'TASK_RUNNING', reason: '', message: '', source: 'SOURCE_AGENT', atMs: 3 },
      { state: 'TASK_FAILED', reason: 'REASON_CONTAINER_LIMITATION_MEMORY', message: 'memory limit exceeded', source: 'SOURCE_AGENT', atMs: 4 },
    ]);
  });

  it("records the master's own changes (an unreachable agent) and ignores updates after the end", () => {
    const sm = started();
    sm.apply(update('t1', 'TASK_RUNNING', 3));
    sm.apply({ type: 'agent_unreachable', agentId: 'a1', uuids: ['x'], atMs: 5 });
    sm.apply({ type: 'agent_removed', agentId: 'a1', uuids: ['y'], atMs: 6 });
    sm.apply(update('t1', 'TASK_FINISHED', 7));
    const h = sm.tasks.get('t1')!.history!;
    expect(h.map((c) => [c.state, c.reason, c.source])).toEqual([
      ['TASK_STAGING', '', 'SOURCE_MASTER'],
      ['TASK_RUNNING', '', 'SOURCE_AGENT'],
      ['TASK_UNREACHABLE', 'REASON_AGENT_UNREACHABLE', 'SOURCE_MASTER'],
      ['TASK_GONE', 'REASON_AGENT_REMOVED', 'SOURCE_MASTER'],
    ]);
  });

  it(`keeps the latest ${MAX_TASK_HISTORY} changes only`, () => {
    const sm = started();
    // An agent that flaps: RUNNING and UNREACHABLE in turn, many times over.
    for (let i = 0; i < 50; i++) {
      sm.apply({ type: 'agent_unreachable', agentId: 'a1', uuids: [`x${i}`], atMs: 100 + 2 * i });
      sm.apply({ type: 'agent_registered', agent, runningTasks: [{ taskId: 't1', state: 'TASK_RUNNING' }], uuids: [`r${i}`], atMs: 101 + 2 * i });
    }
    const h = sm.tasks.get('t1')!.history!;
    expect(h).toHaveLength(MAX_TASK_HISTORY);
    expect(h.at(-1)).toMatchObject({ state: 'TASK_RUNNING', atMs: 199, reason: 'REASON_AGENT_REREGISTERED' });
    expect(h[0]!.atMs).toBe(200 - MAX_TASK_HISTORY);
  });

  it('travels in snapshots, and a snapshot taken earlier does not change when the task does', () => {
    const sm = started();
    sm.apply(update('t1', 'TASK_RUNNING', 3));
    const before = sm.snapshot();
    const copy = structuredClone(before);
    sm.apply(update('t1', 'TASK_FINISHED', 4));
    expect(before).toEqual(copy);
    const restored = RegistryStateMachine.fromSnapshot(JSON.parse(JSON.stringify(sm.snapshot())) as RegistrySnapshot);
    expect(restored.tasks.get('t1')!.history).toEqual(sm.tasks.get('t1')!.history);
    // Replaying the same commands on another replica gives the same history.
    const other = started();
    other.apply(update('t1', 'TASK_RUNNING', 3));
    other.apply(update('t1', 'TASK_FINISHED', 4));
    expect(other.snapshot()).toEqual(sm.snapshot());
  });

  it('loads records written before history was kept, and starts one at their next change', () => {
    const old: TaskRecord = {
      id: 't0', name: 't0', frameworkId: 'f1', agentId: 'a1', resources: 'cpus:1', command: { shell: true, value: 'sleep 9', arguments: [], environment: [] },
      labels: [], killGraceMs: 0, state: 'TASK_RUNNING', message: '', launchedAtMs: 1, updatedAtMs: 1,
    };
    const sm = RegistryStateMachine.fromSnapshot({ agents: [{ ...agent, reachable: true }], frameworks: [], tasks: [old] });
    expect(sm.tasks.get('t0')!.history).toBeUndefined();
    sm.apply(update('t0', 'TASK_KILLED', 9, { message: 'killed on request' }));
    expect(sm.tasks.get('t0')!.history).toEqual([{ state: 'TASK_KILLED', reason: '', message: 'killed on request', source: 'SOURCE_AGENT', atMs: 9 }]);
  });
});
