// Whose a task of a built-in framework is. Such tasks belong to the built-in principal, which
// no ACL names; the master's own task routes (a task, its log, its kill) act on them as the
// principal that owns their app or job, so those routes cannot reach around the rules the
// services and jobs APIs apply (owner-access.ts). Pure: reads the replicated state only.

import type { JsonValue, FrameworkRecord, TaskRecord } from '../registry/commands.ts';
import { BUILTIN_PRINCIPAL } from '../auth/master-auth.ts';
import { appKey } from '../frameworks/marathon/records.ts';
import { APP_LABEL } from '../frameworks/marathon/task-info.ts';
import { JOB_LABEL } from '../frameworks/jobs/task-info.ts';
import { JOBS_FRAMEWORK_NAME, jobKey } from '../frameworks/jobs/runtime.ts';
import { EXPERIMENT_LABEL } from '../frameworks/tuning/trial-command.ts';

/** The tuning framework's name and its experiments' frameworks' prefix (tuning/runtime.ts). */
const TUNING_FRAMEWORK_NAME = 'tuning';
const EXPERIMENT_FRAMEWORK_PREFIX = 'tuning:';

/** The services framework's name (service.ts), kept here to spare this module its imports. */
const SERVICES_FRAMEWORK_NAME = 'marathon';

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
  const label = (name: string) => task.labels.find((l) => l.name === name)?.value;
  let record: JsonValue | undefined;
  if (fw.name === SERVICES_FRAMEWORK_NAME) {
    const appId = label(APP_LABEL);
    if (appId !== undefined) record = state.builtin.get(SERVICES_FRAMEWORK_NAME)?.get(appKey(appId));
  } else if (fw.name === JOBS_FRAMEWORK_NAME) {
    const job = label(JOB_LABEL);
    if (job !== undefined) record = state.builtin.get(JOBS_FRAMEWORK_NAME)?.get(jobKey(job));
  } else if (fw.name.startsWith(EXPERIMENT_FRAMEWORK_PREFIX)) {
    const experiment = label(EXPERIMENT_LABEL);
    if (experiment !== undefined) record = state.builtin.get(TUNING_FRAMEWORK_NAME)?.get(`experiment/${experiment}`);
  }
  const owner = (record as { owner?: unknown } | undefined)?.owner;
  return typeof owner === 'string' ? owner : '';
}
