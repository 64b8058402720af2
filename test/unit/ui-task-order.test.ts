// The tasks page's kept order (master/ui/paged-reads.ts): across launches (in and out of launch
// order, repeated ids), status updates, acknowledgements and the retention that drops the
// oldest completed tasks, every page answers exactly what filtering and sorting every task
// again would, for viewers who see all, some or none of the tasks.

import { describe, expect, it } from 'vitest';
import { Registry } from '../../master/registry/registry.ts';
import { MAX_COMPLETED_TASKS } from '../../master/registry/state-machine.ts';
import type { RegistryCommand, TaskRecord } from '../../master/registry/commands.ts';
import { followTaskOrder, parseTaskQuery, taskPage, type TaskQuery } from '../../master/ui/paged-reads.ts';
import { namedTaskView } from '../../master/api/state-view.ts';
import { taskOwner } from '../../master/framework-host/task-owner.ts';
import { MasterAuth } from '../../master/auth/master-auth.ts';
import { parseCredentials } from '../../master/auth/credentials.ts';
import { parseAcls } from '../../master/auth/acls.ts';
import type { MasterContext } from '../../master/context.ts';
import type { Principal } from '../../master/auth/credentials.ts';

/** What the page was before it kept an order: filter and sort every task. */
function reference(ctx: MasterContext, viewer: Principal, query: TaskQuery) {
  const reg = ctx.registry.state;
  const kept: TaskRecord[] = [];
  for (const t of reg.tasks.values()) {
    if (query.states && !query.states.has(t.state)) continue;
    if (query.framework !== undefined && t.frameworkId !== query.framework) continue;
    if (query.agent !== undefined && t.agentId !== query.agent) continue;
    if (query.q !== undefined && !`${t.id}\n${t.name}\n${t.frameworkId}\n${t.agentId}\n${t.state}`.toLowerCase().includes(query.q)) continue;
    if (!ctx.auth.mayActOn(viewer, 'view_tasks', taskOwner(reg, t))) continue;
    kept.push(t);
  }
  const dir = query.sort === 'newest' ? -1 : 1;
  kept.sort((a, b) => dir * (a.launchedAtMs - b.launchedAtMs) || (a.id < b.id ? -dir : a.id > b.id ? dir : 0));
  return { total: kept.length, offset: query.offset, limit: query.limit, tasks: kept.slice(query.offset, query.offset + query.limit).map((t) => namedTaskView(t, reg.frameworks.get(t.frameworkId)?.name)) };
}

describe('the tasks page kept in order', () => {
  it('answers as a full sort would, through launches, updates and retention', () => {
    const registry = new Registry({ agents: [], tasks: [], frameworks: [
      { id: 'fw-a', name: 'a', user: '', role: '*', principal: 'alice', failoverTimeoutS: 0, registeredAtMs: 0 },
      { id: 'fw-b', name: 'b', user: '', role: '*', principal: 'bob', failoverTimeoutS: 0, registeredAtMs: 0 },
    ] }, 'p');
    registry.attach({ propose() {}, close() {} });
    followTaskOrder(registry);
    const credentials = parseCredentials(JSON.stringify({ credentials: ['alice', 'bob', 'admin', 'eve'].map((p) => ({ principal: p, secret: `${p}-secret-0123456789` })) }));
    const acls = parseAcls(JSON.stringify({ permissive: false, view_tasks: [{ principals: { values: ['admin'] }, framework_principals: { type: 'ANY' } }] }));
    const on = { registry, auth: MasterAuth.on({ credentials, acls }) } as unknown as MasterContext;
    const off = { registry, auth: MasterAuth.off() } as unknown as MasterContext;
    const queries = [{}, { offset: '3', limit: '7' }, { sort: 'oldest', limit: '50' }, { state: 'RUNNING,STAGING' }, { state: 'FINISHED', sort: 'oldest' }, { q: 'task-1' }, { q: 'staging' }, { agent: 'agent-3' }, { framework: 'fw-b', offset: '2' }].map((q) => parseTaskQuery(q));
    const viewers = ['alice', 'bob', 'admin', 'eve'].map((name) => ({ name, kind: 'user' }) as Principal);
    const check = () => {
      for (const q of queries) {
        for (const v of viewers) expect(taskPage(on, v, q)).toEqual(reference(on, v, q));
        expect(taskPage(off, viewers[0]!, q)).toEqual(reference(off, viewers[0]!, q));
      }
    };
    let seed = 7;
    const random = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
    let n = 0;
    const apply = (cmd: RegistryCommand) => registry.applyCommitted(cmd);
    const launch = (atMs: number, id = `task-${n++}`) => apply({ type: 'task_launched', atMs, task: {
      id, name: `name-${id}`, frameworkId: random() < 0.5 ? 'fw-a' : 'fw-b', agentId: `agent-${Math.floor(random() * 10)}`, resources: 'cpus:0.1',
      command: { shell: true, value: 'true', arguments: [], environment: [] }, labels: [], killGraceMs: 0, launchedAtMs: atMs,
    } } as RegistryCommand);
    const finish = (t: TaskRecord, i: number) => {
      apply({ type: 'status_update', taskId: t.id, agentId: t.agentId, state: 'TASK_FINISHED', message: '', reason: '', source: 'SOURCE_AGENT', uuid: `u${i}`, atMs: 1 } as RegistryCommand);
      const u = registry.state.tasks.get(t.id)?.unacked;
      if (u) apply({ type: 'status_acknowledged', taskId: t.id, uuid: u.uuid } as RegistryCommand);
    };
    for (let i = 0; i < 50; i++) launch(1000 + i * 10);
    check();
    for (let round = 0; round < 6; round++) {
      for (let i = 0; i < 20; i++) launch(random() < 0.2 ? 1000 + Math.floor(random() * 3000) : 5000 + round * 1000 + i);
      launch(1, 'task-0'); // a launch of an id it has: ignored
      const tasks = [...registry.state.tasks.values()];
      for (let i = 0; i < 8; i++) {
        const t = tasks[Math.floor(random() * tasks.length)]!;
        if (random() < 0.5) apply({ type: 'status_update', taskId: t.id, agentId: t.agentId, state: 'TASK_RUNNING', message: '', reason: '', source: 'SOURCE_AGENT', uuid: `r${round}-${i}`, atMs: 2 } as RegistryCommand);
        else finish(t, round * 100 + i);
      }
      check();
    }
    // Past the retention of completed tasks: the oldest completed are dropped.
    const before = registry.state.tasks.size;
    for (let i = 0; i < MAX_COMPLETED_TASKS + 5; i++) {
      launch(100_000 + i);
      finish(registry.state.tasks.get(`task-${n - 1}`)!, 10_000 + i);
    }
    expect(registry.state.tasks.size).toBeLessThan(before + MAX_COMPLETED_TASKS + 5);
    check();
  });
});
