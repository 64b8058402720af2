// A job's bounds that depend on the master's settings, checked once its document is parsed:
// each replica's own environment against the scheduler API's per-variable bounds and the
// master's cap on a task's environment (sharing/object-limits.ts), naming the field where
// the user wrote it; and what storing the job adds to its owner's quota (sharing/quota-gate.ts).
// The variables a kind adds (TF_CONFIG, MASTER_ADDR...) come on top and are checked at launch.

import { objectKey, type Admission, type ObjectQuotas } from '../../../shared/framework-host/quotas.ts';
import { MAX_LENGTH } from '../../../shared/field-limits.ts';
import { envBytes, envTooLarge, type ObjectLimits } from '../../../shared/sharing/object-limits.ts';
import { invalidJob } from '../../../shared/jobs/field-paths.ts';
import type { ParsedJob } from '../../../shared/jobs/spec-parse.ts';

/** Throws CAIRN_INVALID_JOB naming the template's env (or the variable) that is too large. */
export function checkJobEnv(parsed: ParsedJob, limits: ObjectLimits): void {
  parsed.spec.groups.forEach((g, i) => {
    const field = `groups[${i}].template.env`;
    for (const [name, value] of Object.entries(g.template.env)) {
      if (name.length > MAX_LENGTH.envName) throw invalidJob(parsed.locate(field), `the variable name '${name.slice(0, 40)}…' is ${name.length} characters, at most ${MAX_LENGTH.envName}`);
      if (value.length > MAX_LENGTH.command) throw invalidJob(parsed.locate(`${field}.${name}`), `is ${value.length} characters, at most ${MAX_LENGTH.command}`);
    }
    const tooLarge = envTooLarge(envBytes(Object.entries(g.template.env)), limits);
    if (tooLarge) throw invalidJob(parsed.locate(field), tooLarge);
  });
}

/** Storing the job: a new object, or one replacing a finished job of its name. */
export function jobAdmission(gate: ObjectQuotas, owner: string, parsed: ParsedJob): Admission {
  const bytes = gate.sizeOf(parsed.spec);
  return { owner, key: objectKey.job(parsed.spec.name), bytesAfter: () => bytes, what: `job '${parsed.spec.name}'`, field: 'name' };
}
