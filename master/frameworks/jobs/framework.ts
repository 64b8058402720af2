// The training-job engine as a built-in framework named `jobs`: one instance on the leading
// master (runtime.ts), its REST routes on every master (routes.ts).

import type { BuiltinFramework } from '../../builtin/host.ts';
import { registerJobRoutes } from './routes.ts';
import { JOBS_FRAMEWORK_NAME, JobsRuntime, type JobsRuntimeOptions } from './runtime.ts';

export function jobsFramework(opts: JobsRuntimeOptions = {}): BuiltinFramework<JobsRuntime> {
  return {
    name: JOBS_FRAMEWORK_NAME,
    start: (env) => new JobsRuntime(env, opts),
    routes: (app, env) => registerJobRoutes(app, env),
  };
}

export const JOBS_FRAMEWORK: BuiltinFramework<JobsRuntime> = jobsFramework();
