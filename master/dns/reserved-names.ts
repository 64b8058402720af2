// Framework names no tenant may take: the built-in frameworks' (a framework named `marathon`
// would answer under `marathon.<domain>` beside the services' tasks and pass for them), and
// `slave`, under which mesos-dns puts every framework's agent-side names (`x.slave` would
// write into `x.slave.<domain>`). Compared by the DNS label a name claims (names.ts
// frameworkNameKey), so `Marathon`, `marathon.` and `web.jobs` are the same claim.

import { BUILTIN_PRINCIPAL } from '../builtin-principal.ts';
import { frameworkNameKey } from './names.ts';

/** The names services, jobs and tuning subscribe under (checked against them in test/unit/reserved-names.test.ts). */
export const BUILTIN_FRAMEWORK_NAMES = ['marathon', 'jobs', 'tuning'] as const;

/** DNS labels held by the built-in principal whatever subscribes. */
export const RESERVED_NAME_KEYS: ReadonlyMap<string, string> = new Map([...BUILTIN_FRAMEWORK_NAMES, 'slave'].map((k) => [k, BUILTIN_PRINCIPAL]));

/** The reserved label `frameworkName` claims, if any. */
export function reservedNameKey(frameworkName: string): string | undefined {
  const key = frameworkNameKey(frameworkName);
  return RESERVED_NAME_KEYS.has(key) ? key : undefined;
}
