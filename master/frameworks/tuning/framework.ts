// The tuning framework as a built-in framework named `tuning`: one runtime on the leading
// master (runtime.ts), whose experiments each subscribe as a framework of their own, and its
// REST routes on every master (routes.ts).

import type { BuiltinFramework } from '../../builtin/host.ts';
import { registerTuningRoutes } from './routes.ts';
import { TUNING_FRAMEWORK_NAME, TuningRuntime, type TuningRuntimeOptions } from './runtime.ts';

export function tuningFramework(opts: TuningRuntimeOptions = {}): BuiltinFramework<TuningRuntime> {
  return {
    name: TUNING_FRAMEWORK_NAME,
    start: (env) => new TuningRuntime(env, opts),
    routes: (app, env) => registerTuningRoutes(app, env),
  };
}

export const TUNING_FRAMEWORK: BuiltinFramework<TuningRuntime> = tuningFramework();
