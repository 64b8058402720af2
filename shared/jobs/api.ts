// What the jobs framework offers the other built-in frameworks (tuning runs its distributed
// trials as jobs): the host hands it to them as `env.api('jobs')`. Reads come from the jobs
// framework's replicated store on any master; submitting and removing need its instance,
// which runs on the leader.

import type { IgnoredField, JobSpec, JobView } from './model.ts';

/** The jobs framework's name: its store's owner and its subscriptions' framework name. */
export const JOBS_FRAMEWORK_NAME = 'jobs';

export interface JobsApi {
  /** Whether the jobs framework runs on this master now (submit and remove need it). */
  running(): boolean;
  /** Submits a job owned by `owner`; 'exists' while a live job has its name. Resolves once durable. */
  submit(spec: JobSpec, ignored: IgnoredField[], owner: string): Promise<JobView | 'exists'>;
  /** Kills a job's replicas and removes it; false when there is none. Resolves once durable. */
  remove(name: string): Promise<boolean>;
  /** The job as stored now. */
  get(name: string): JobView | undefined;
  /** Calls `listener` with the names of the jobs a durable change touched; returns the unsubscribe. */
  onChange(listener: (names: string[]) => void): () => void;
}
