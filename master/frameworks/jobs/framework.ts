// The training-job engine as a built-in framework named `jobs`: one instance on the leading
// master (runtime.ts), its REST routes on every master (routes.ts), and the API it offers the
// other frameworks (shared/jobs/api.ts: tuning submits its distributed trials through it).

import type { HostedFramework, FrameworkApis, TaskOwnership } from '../../../shared/framework-host/contract.ts';
import { ownershipByLabel } from '../../../shared/framework-host/ownership.ts';
import type { FrameworkStore, JsonValue } from '../../../shared/framework-host/store.ts';
import type { JobsApi } from '../../../shared/jobs/api.ts';
import { jobView, type JobRecord } from './record.ts';
import { jobsMetrics } from './metrics.ts';
import { registerJobRoutes } from './routes.ts';
import { JOB_KEY_PREFIX, jobKey, JOBS_FRAMEWORK_NAME, JobsRuntime, type JobsRuntimeOptions } from './runtime.ts';
import { JOB_LABEL } from './task-info.ts';

/** A job's task acts as the job's owner on the master's task routes. */
export const JOBS_TASKS: TaskOwnership = ownershipByLabel((frameworkName) => frameworkName === JOBS_FRAMEWORK_NAME, JOB_LABEL, jobKey, (name) => `job ${name}`);

function notRunning(): Error {
  return new Error('the jobs framework is not running on this master');
}

/** The jobs API over the framework's store and its instance, while one runs here. */
export function jobsApi(store: FrameworkStore, instance: () => JobsRuntime | undefined): FrameworkApis['jobs'] {
  const api: JobsApi = {
    running: () => instance() !== undefined,
    submit: async (spec, ignored, owner) => {
      const jobs = instance();
      if (!jobs) throw notRunning();
      const r = await jobs.submit(spec, ignored, owner);
      return r === 'exists' ? r : jobView(r);
    },
    remove: (name) => instance()?.remove(name) ?? Promise.reject(notRunning()),
    get: (name) => {
      const r = store.get<JsonValue>(jobKey(name)) as unknown as JobRecord | undefined;
      return r && jobView(r);
    },
    onChange: (listener) => store.onChange((keys) => {
      const names = keys.filter((k) => k.startsWith(JOB_KEY_PREFIX)).map((k) => k.slice(JOB_KEY_PREFIX.length));
      if (names.length > 0) listener(names);
    }),
  };
  return api;
}

export function jobsFramework(opts: JobsRuntimeOptions = {}): HostedFramework<JobsRuntime> {
  return {
    name: JOBS_FRAMEWORK_NAME,
    start: (env) => new JobsRuntime(env, opts),
    routes: (app, env) => registerJobRoutes(app, env),
    api: ({ store, instance }) => jobsApi(store, instance),
    metrics: ({ store }) => jobsMetrics(store),
    tasks: JOBS_TASKS,
  };
}

export const JOBS_FRAMEWORK: HostedFramework<JobsRuntime> = jobsFramework();
