// The services framework as the master hosts it: `marathon`, so its tasks resolve as
// `<app>.marathon.<domain>` the way mesos-dns names Marathon's.

import type { BuiltinFramework } from '../../builtin/host.ts';
import { registerMarathonRoutes } from './routes.ts';
import { FRAMEWORK_NAME, MarathonService } from './service.ts';

export const marathonFramework: BuiltinFramework<MarathonService> = {
  name: FRAMEWORK_NAME,
  start: (env) => new MarathonService(env),
  routes: (app, env) => registerMarathonRoutes(app, env),
};
