// Labels that grant something are honoured only from the framework entitled to them: a
// tenant's task carrying a built-in's label, or a priority class its principal may not use,
// is refused on its own (TASK_ERROR, REASON_TASK_UNAUTHORIZED, naming the label's field) while
// the other tasks of its ACCEPT go ahead; the built-ins themselves and a cluster without
// authentication pass everything.

import { describe, expect, it } from 'vitest';
import { parseAcls } from '../../master/auth/acls.ts';
import { parseCredentials } from '../../master/auth/credentials.ts';
import { MasterAuth } from '../../master/auth/master-auth.ts';
import { withEntitledLabels } from '../../master/auth/task-labels.ts';
import { parseSchedulerCall, type SchedulerCallParsed } from '../../master/scheduler-calls.ts';
import { PriorityClasses } from '../../shared/sharing/priority-classes.ts';

const S = (n: string) => `${n}-0123456789abcdef`;
const credentials = parseCredentials(JSON.stringify({ credentials: [{ principal: 'alice', secret: S('alice') }, { principal: 'bob', secret: S('bob') }] }));
const acls = parseAcls(JSON.stringify({
  permissive: false,
  use_priority_classes: [{ principals: { values: ['alice'] }, priority_classes: { values: ['production'] } }],
}), 'acls');
const auth = MasterAuth.on({ credentials, acls });
const classes = new PriorityClasses();
const bob = { name: 'bob', kind: 'user' } as const;
const alice = { name: 'alice', kind: 'user' } as const;

type Accept = Extract<SchedulerCallParsed, { type: 'ACCEPT' }>;

function accept(...labelSets: Record<string, string>[]): Accept {
  const task_infos = labelSets.map((labels, i) => ({
    name: `t${i}`, task_id: { value: `t${i}` }, agent_id: { value: 'a1' },
    resources: [{ name: 'cpus', type: 'SCALAR', scalar: { value: 0.1 } }],
    command: { value: 'true' },
    labels: { labels: Object.entries(labels).map(([key, value]) => ({ key, value })) },
  }));
  const call = parseSchedulerCall({ type: 'ACCEPT', framework_id: { value: 'f1' }, accept: { offer_ids: [{ value: 'o1' }], operations: [{ type: 'LAUNCH', launch: { task_infos } }] } });
  if (call.type !== 'ACCEPT') throw new Error('not an ACCEPT');
  return call;
}

describe('labels that grant something', () => {
  it("refuses a tenant's task carrying a built-in's label on its own, naming the label", () => {
    for (const label of ['cairn.job', 'cairn.job.group', 'cairn.job.index', 'cairn.marathon.app', 'cairn.experiment', 'cairn.trial']) {
      const out = withEntitledLabels(auth, bob, accept({ team: 'x' }, { team: 'y', [label]: 'alice-train' }), classes);
      expect(out.tasks.map((t) => t.taskId), label).toEqual(['t0']);
      expect(out.refused, label).toEqual([expect.objectContaining({ taskId: 't1', agentId: 'a1', reason: 'REASON_TASK_UNAUTHORIZED', field: 'accept.operations.launch.task_infos[1].labels.labels[1].key' })]);
      expect(out.refused![0]!.message).toContain(`label '${label}' belongs to the built-in`);
    }
  });

  it('refuses a class above the default to a principal the ACLs do not grant it, and lets its holder and the default class by', () => {
    const call = accept({ 'cairn.priority-class': 'production' }, { 'cairn.priority-class': 'research' }, {});
    const refusedBob = withEntitledLabels(auth, bob, call, classes);
    expect(refusedBob.tasks.map((t) => t.taskId)).toEqual(['t1', 't2']);
    expect(refusedBob.refused).toEqual([expect.objectContaining({ taskId: 't0', reason: 'REASON_TASK_UNAUTHORIZED', field: 'accept.operations.launch.task_infos[0].labels.labels[0].value' })]);
    expect(refusedBob.refused![0]!.message).toMatch(/use_priority_classes/);
    expect(withEntitledLabels(auth, alice, call, classes)).toBe(call);
  });

  it('passes the built-ins (internal principals) and a cluster without authentication', () => {
    const call = accept({ 'cairn.job': 'train', 'cairn.priority-class': 'production' });
    expect(withEntitledLabels(auth, { name: 'cairn-builtin', kind: 'user', internal: true } as const, call, classes)).toBe(call);
    expect(withEntitledLabels(MasterAuth.off(), bob, call, classes)).toBe(call);
  });

  it('keeps the tasks the parser already refused', () => {
    const call = accept({ 'cairn.job': 'x' });
    const earlier = { ...call, refused: [{ taskId: 'bad', field: 'accept.operations[0].launch.task_infos[9].name', message: 'bad name' }] };
    const out = withEntitledLabels(auth, bob, earlier, classes);
    expect(out.refused!.map((r) => r.taskId)).toEqual(['bad', 't0']);
    expect(out.tasks).toEqual([]);
  });
});
