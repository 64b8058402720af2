// Whose a task of a built-in framework is. Such tasks belong to the built-in principal, which
// no ACL names; the master's own task routes (a task, its log, its kill) act on them as the
// principal that owns their app or job, so those routes cannot reach around the rules the
// services and jobs APIs apply (owner-access.ts). Each framework says which of its tasks'
// frameworks are its own and whose a task is (its TaskOwnership); this asks the one that
// runs the task. Pure: reads the replicated state only.

import type { JsonValue, FrameworkRecord, TaskRecord } from '../registry/commands.ts';
import { BUILTIN_PRINCIPAL } from '../builtin-principal.ts';
import { BUILTIN_FRAMEWORKS } from './all.ts';

export interface OwnerState {
  readonly frameworks: ReadonlyMap<string, FrameworkRecord>;
  readonly builtin: ReadonlyMap<string, ReadonlyMap<string, JsonValue>>;
}

/**
 * The principal a task is acted on as: its framework's, or for a built-in framework's task
 * the owner of its app or job ('' when it has none, or they are gone: owned by nobody).
 */
export function taskOwner(state: OwnerState, task: Pick<TaskRecord, 'frameworkId' | 'labels'>): string {
  const fw = state.frameworks.get(task.frameworkId);
  if (!fw) return '';
  if (fw.principal !== BUILTIN_PRINCIPAL) return fw.principal;
  const builtin = BUILTIN_FRAMEWORKS.find((b) => b.tasks?.runs(fw.name));
  if (!builtin?.tasks) return '';
  const store = state.builtin.get(builtin.name);
  return builtin.tasks.ownerOf(task.labels, (key) => store?.get(key));
}
