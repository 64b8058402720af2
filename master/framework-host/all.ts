// The built-in frameworks every master runs while it leads, unless told otherwise
// (MasterOptions.frameworks): the one list the host composes them from, each by its public
// entry (framework.ts) and nothing else of it. Each one subscribes only once it has work, so
// a cluster that never uses one sees no framework of it.

import type { HostedFramework } from '../../shared/framework-host/contract.ts';
import { SERVICES_FRAMEWORK } from '../frameworks/services/framework.ts';
import { JOBS_FRAMEWORK } from '../frameworks/jobs/framework.ts';
import { TUNING_FRAMEWORK } from '../frameworks/tuning/framework.ts';

export const BUILTIN_FRAMEWORKS: readonly HostedFramework[] = [SERVICES_FRAMEWORK as HostedFramework, JOBS_FRAMEWORK as HostedFramework, TUNING_FRAMEWORK as HostedFramework];
