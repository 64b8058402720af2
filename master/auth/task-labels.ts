// Task labels that grant something are honoured only from the framework entitled to them.
// The built-in frameworks mark their tasks with what they run them for, and Cairn acts on
// those marks: `cairn.job` gives a task its job's directory (CAIRN_JOB_DIR, the job's
// checkpoints) and `cairn.marathon.app`, `cairn.job` and `cairn.experiment` say whose a
// built-in's task is (framework-host/task-owner.ts: the uid it runs as, who may view and kill it). A
// tenant's framework that set them could borrow another tenant's job dir or identity, so a
// task of any framework but the built-ins carrying one is refused, naming the label; the
// Marathon API refuses them on apps, whose labels its tasks carry. A task's
// `cairn.priority-class` ranks it above its framework against preemptors: a class above the
// default needs use_priority_classes for the framework's principal, as at SUBSCRIBE.

import { CairnError } from '../../shared/errors.ts';
import type { RefusedTask, SchedulerCallParsed, TaskSpec } from '../scheduler-calls.ts';
import { PRIORITY_CLASS_LABEL, type PriorityClasses } from '../../shared/sharing/priority-classes.ts';
import type { Principal } from './credentials.ts';
import type { MasterAuth } from './master-auth.ts';
import { BUILTIN_TASK_LABELS, builtinLabelRefusal } from '../../shared/framework-host/task-labels.ts';

type AcceptCall = Extract<SchedulerCallParsed, { type: 'ACCEPT' }>;

export { BUILTIN_TASK_LABELS, builtinLabelRefusal };

/**
 * The ACCEPT with each task that carries a built-in's label, or a class its framework's
 * principal may not use, moved to the refused: as Mesos answers an unauthorized task, it ends
 * TASK_ERROR with REASON_TASK_UNAUTHORIZED naming the label's field, and the ACCEPT's other
 * tasks launch. The built-ins themselves pass.
 */
export function withEntitledLabels(auth: MasterAuth, principal: Principal, call: AcceptCall, classes: PriorityClasses): AcceptCall {
  if (!auth.enabled || principal.internal) return call;
  const tasks: TaskSpec[] = [];
  const refused: RefusedTask[] = [...(call.refused ?? [])];
  call.tasks.forEach((t, i) => {
    const why = labelRefusal(auth, principal, t, `accept.operations.launch.task_infos[${i}].labels.labels`, classes);
    if (why === undefined) tasks.push(t);
    else refused.push({ taskId: t.taskId, agentId: t.agentId, field: why.field, message: `task '${t.taskId.slice(0, 64)}': ${why.message}`, reason: 'REASON_TASK_UNAUTHORIZED' });
  });
  return refused.length === (call.refused ?? []).length ? call : { ...call, tasks, refused };
}

/** Why one task's labels are not its framework's to set, naming the field; undefined when they are. */
function labelRefusal(auth: MasterAuth, principal: Principal, t: TaskSpec, field: string, classes: PriorityClasses): { field: string; message: string } | undefined {
  for (const [k, l] of t.labels.entries()) {
    const refused = builtinLabelRefusal(l.name);
    if (refused !== undefined) return { field: `${field}[${k}].key`, message: refused };
    if (l.name !== PRIORITY_CLASS_LABEL) continue;
    const cls = classes.canonical(l.value);
    if (cls === undefined || cls === classes.defaultClass) continue;
    try {
      auth.require(principal, 'use_priority_classes', cls, `${field}[${k}].value`);
    } catch (err) {
      if (!(err instanceof CairnError)) throw err;
      return { field: err.field ?? `${field}[${k}].value`, message: err.message };
    }
  }
  return undefined;
}
