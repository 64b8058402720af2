// The task a caller names, if it exists and the caller may act on it: its framework's own
// principal always may, others as the view_tasks or kill_tasks ACL says. Every route that
// reads or kills one task goes through here, so the rule is written once. A task of a
// built-in framework is acted on as the owner of its app or job (framework-host/task-owner.ts).

import { CairnError } from '../../shared/errors.ts';
import type { Principal } from '../auth/credentials.ts';
import type { MasterContext } from '../context.ts';
import type { TaskRecord } from '../registry/commands.ts';
import { taskOwner } from '../framework-host/task-owner.ts';

/** Throws CAIRN_UNKNOWN_TASK (404) for no such task, CAIRN_FORBIDDEN (403) for one the caller may not act on. */
export function taskFor(ctx: MasterContext, principal: Principal, id: string, action: 'view_tasks' | 'kill_tasks'): TaskRecord {
  const t = ctx.registry.state.tasks.get(id);
  if (!t) throw new CairnError('CAIRN_UNKNOWN_TASK', `no task '${id}'`, 'id');
  const owner = taskOwner(ctx.registry.state, t);
  if (!ctx.auth.mayActOn(principal, action, owner)) {
    throw new CairnError('CAIRN_FORBIDDEN', `principal '${principal.name}' may not ${action === 'view_tasks' ? 'view' : 'kill'} the tasks of framework ${t.frameworkId}`, 'id');
  }
  return t;
}
