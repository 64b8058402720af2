// An experiment's bounds that depend on the master's settings: its trials' environment against
// the scheduler API's per-variable bounds and the master's cap on a task's environment
// (sharing/object-limits.ts); and what storing it adds to its owner's quota
// (sharing/quota-gate.ts): the experiment, its trials' records counting as they come.

import { objectKey, type Admission, type ObjectQuotas } from '../../../shared/framework-host/quotas.ts';
import { MAX_LENGTH } from '../../../shared/field-limits.ts';
import { badRequest } from '../../../shared/errors.ts';
import { envBytes, envTooLarge, type ObjectLimits } from '../../../shared/sharing/object-limits.ts';
import type { ExperimentSpec } from '../../../shared/tuning/model.ts';

/** Throws CAIRN_BAD_REQUEST naming `spec.trialTemplate.env` (or the variable) when a trial's environment is too large. */
export function checkTrialEnv(spec: ExperimentSpec, limits: ObjectLimits): void {
  const field = 'spec.trialTemplate.env';
  for (const [name, value] of Object.entries(spec.trial.env)) {
    if (name.length > MAX_LENGTH.envName) throw badRequest(field, `the variable name '${name.slice(0, 40)}…' is ${name.length} characters, at most ${MAX_LENGTH.envName}`);
    if (value.length > MAX_LENGTH.command) throw badRequest(`${field}.${name}`, `is ${value.length} characters, at most ${MAX_LENGTH.command}`);
  }
  const tooLarge = envTooLarge(envBytes(Object.entries(spec.trial.env)), limits);
  if (tooLarge) throw badRequest(field, tooLarge);
}

/** Storing the experiment: a new object, or one replacing a settled experiment of its name. */
export function experimentAdmission(gate: ObjectQuotas, owner: string, spec: ExperimentSpec): Admission {
  const bytes = gate.sizeOf(spec);
  return { owner, key: objectKey.experiment(spec.name), bytesAfter: () => bytes, what: `experiment '${spec.name}'`, field: 'metadata.name' };
}
