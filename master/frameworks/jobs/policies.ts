// What a replica's end means for its job: the kind's rules first (a ps-lite scheduler or
// server that ends takes the whole gang with it), then the job's Volcano-style failure
// policies, then the group's restart policy. And when a job has succeeded, by its kind's
// rule. Pure functions of the spec and the replicas' states.

import type { JobSpec, PolicyAction, ReplicaStatus } from '../../../shared/jobs/model.ts';

/** How a replica's task ended. `exitCode` is absent when it was lost (agent gone, unknown). */
export type ReplicaEnd =
  | { outcome: 'succeeded' }
  | { outcome: 'failed'; exitCode?: number };

export type EndDecision =
  /** Nothing to do for the job; see whether it has succeeded. */
  | { action: 'none' }
  | { action: 'RestartTask' | 'RestartJob' | 'AbortJob' | 'CompleteJob'; reason: string; message: string };

/** Exit codes from 128 up mean a signal ended the process: worth retrying. 1-127: the program's own verdict. */
export function retryableExitCode(exitCode: number | undefined): boolean {
  return exitCode === undefined || exitCode >= 128 || exitCode < 0;
}

function act(action: PolicyAction, reason: string, message: string): EndDecision {
  return { action, reason, message };
}

/** The kind's own rule for a replica's end, if it has one. */
function kindRule(spec: JobSpec, group: string, index: number, end: ReplicaEnd): EndDecision | undefined {
  if (spec.kind === 'pslite' && (group === 'scheduler' || group === 'server')) {
    // ps-lite cannot replace a scheduler or a server: every node hangs waiting for it.
    const how = end.outcome === 'succeeded' ? 'exited before the workers finished' : end.exitCode === undefined ? 'was lost' : `failed with exit code ${end.exitCode}`;
    return act('RestartJob', 'PsliteGangBroken', `${group} ${index} ${how}: ps-lite needs every scheduler and server, so the whole gang restarts`);
  }
  return undefined;
}

export function decideOnEnd(spec: JobSpec, group: string, index: number, end: ReplicaEnd): EndDecision {
  const byKind = kindRule(spec, group, index, end);
  if (byKind) return byKind;
  const event = end.outcome === 'succeeded' ? 'TaskCompleted' : 'TaskFailed';
  const policy = spec.failurePolicies.find((p) => p.event === event && (p.group === undefined || p.group === group));
  const what = end.outcome === 'succeeded' ? 'completed' : end.exitCode === undefined ? 'was lost' : `failed with exit code ${end.exitCode}`;
  if (policy) return act(policy.action, `${event}${policy.action}`, `${group} ${index} ${what}: policy ${event} → ${policy.action}`);
  const g = spec.groups.find((x) => x.name === group);
  const restart = g?.restartPolicy ?? 'Never';
  if (end.outcome === 'succeeded') {
    return restart === 'Always' ? act('RestartTask', 'RestartPolicyAlways', `${group} ${index} ${what}; its restart policy is Always`) : { action: 'none' };
  }
  switch (restart) {
    case 'Always':
    case 'OnFailure':
      return act('RestartTask', 'ReplicaFailed', `${group} ${index} ${what}; restarting it (${restart})`);
    case 'ExitCode':
      return retryableExitCode(end.exitCode)
        ? act('RestartTask', 'RetryableExitCode', `${group} ${index} ${what}, which is retryable; restarting it`)
        : act('AbortJob', 'PermanentExitCode', `${group} ${index} ${what}, which is permanent (1-127)`);
    case 'Never':
      return act('AbortJob', 'ReplicaFailed', `${group} ${index} ${what} and its restart policy is Never`);
  }
}

function succeeded(replicas: readonly ReplicaStatus[], group: string, index?: number): boolean {
  const rs = replicas.filter((r) => r.group === group && (index === undefined || r.index === index));
  return rs.length > 0 && rs.every((r) => r.state === 'Succeeded');
}

/** Whether the job has succeeded, by its kind's rule; the reason when it has. */
export function jobSucceeded(spec: JobSpec, replicas: readonly ReplicaStatus[]): string | undefined {
  const has = (g: string) => spec.groups.some((x) => x.name === g);
  switch (spec.kind) {
    case 'pslite':
      return succeeded(replicas, 'worker') ? 'every worker exited 0' : undefined;
    case 'tensorflow': {
      if (spec.successPolicy === 'AllWorkers') {
        const ok = succeeded(replicas, 'worker') && (!has('chief') || succeeded(replicas, 'chief'));
        return ok ? 'every worker exited 0 (successPolicy AllWorkers)' : undefined;
      }
      if (has('chief')) return succeeded(replicas, 'chief', 0) ? 'the chief exited 0' : undefined;
      if (has('master')) return succeeded(replicas, 'master', 0) ? 'the master exited 0' : undefined;
      return succeeded(replicas, 'worker', 0) ? 'worker 0 exited 0' : undefined;
    }
    case 'pytorch':
      if (has('master')) return succeeded(replicas, 'master', 0) ? 'the master exited 0' : undefined;
      return succeeded(replicas, spec.groups[0]!.name, 0) ? `${spec.groups[0]!.name} 0 exited 0` : undefined;
    case 'batch':
      return replicas.every((r) => r.state === 'Succeeded') ? 'every replica exited 0' : undefined;
  }
}

/** Groups that never end on their own and are stopped whatever the cleanup policy says. */
export function alwaysStopped(spec: JobSpec, group: string): boolean {
  return (spec.kind === 'pslite' && (group === 'scheduler' || group === 'server')) || (spec.kind === 'tensorflow' && group === 'ps');
}
