// The services framework as the master hosts it: `marathon`, so its tasks resolve as
// `<app>.marathon.<domain>` the way mesos-dns names Marathon's.

import type { HostedFramework, TaskOwnership } from '../../../shared/framework-host/contract.ts';
import { ownershipByLabel } from '../../../shared/framework-host/ownership.ts';
import { appKey } from './records.ts';
import { servicesMetrics } from './metrics.ts';
import { registerMarathonRoutes } from './routes.ts';
import { FRAMEWORK_NAME, ServicesRuntime } from './runtime.ts';
import { APP_LABEL } from './task-info.ts';

/** An app's task acts as the app's owner on the master's task routes. */
export const SERVICES_TASKS: TaskOwnership = ownershipByLabel((frameworkName) => frameworkName === FRAMEWORK_NAME, APP_LABEL, appKey);

export const SERVICES_FRAMEWORK: HostedFramework<ServicesRuntime> = {
  name: FRAMEWORK_NAME,
  start: (env) => new ServicesRuntime(env),
  routes: (app, env) => registerMarathonRoutes(app, env),
  metrics: ({ store, instance }) => servicesMetrics(store, instance),
  tasks: SERVICES_TASKS,
};
