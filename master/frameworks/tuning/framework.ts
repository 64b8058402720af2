// The tuning framework as a built-in framework named `tuning`: one runtime on the leading
// master (runtime.ts), whose experiments each subscribe as a framework of their own, and its
// REST routes on every master (routes.ts). Its distributed trials are jobs, submitted through
// the jobs framework's API.

import type { HostedFramework, TaskOwnership } from '../../../shared/framework-host/contract.ts';
import { ownershipByLabel } from '../../../shared/framework-host/ownership.ts';
import { experimentKey } from './record.ts';
import { tuningMetrics } from './metrics.ts';
import { registerTuningRoutes } from './routes.ts';
import { EXPERIMENT_FRAMEWORK_PREFIX, TUNING_FRAMEWORK_NAME, TuningRuntime, type TuningRuntimeOptions } from './runtime.ts';
import { EXPERIMENT_LABEL } from './trial-command.ts';

/** A trial's task (of its experiment's framework) acts as the experiment's owner on the master's task routes. */
export const TUNING_TASKS: TaskOwnership = ownershipByLabel((frameworkName) => frameworkName.startsWith(EXPERIMENT_FRAMEWORK_PREFIX), EXPERIMENT_LABEL, experimentKey, (name) => `experiment ${name}`);

export function tuningFramework(opts: TuningRuntimeOptions = {}): HostedFramework<TuningRuntime> {
  return {
    name: TUNING_FRAMEWORK_NAME,
    start: (env) => new TuningRuntime(env, opts),
    routes: (app, env) => registerTuningRoutes(app, env),
    metrics: ({ store }) => tuningMetrics(store),
    tasks: TUNING_TASKS,
  };
}

export const TUNING_FRAMEWORK: HostedFramework<TuningRuntime> = tuningFramework();
