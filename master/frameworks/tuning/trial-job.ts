// A distributed trial as a job of the job engine: the experiment's job document with every
// `${name}` replaced by the trial's parameter (as in a task trial's command; Katib's
// `${trialParameters.<name>}` in a trialSpec, with the value as it is), parsed and checked
// by the job engine's own parser, then named for the trial's attempt, put in the experiment's
// role, and given the parameters as variables in every replica. Its metrics are read from the
// first replica of its first group: the chief, PyTorch's master, ps-lite's scheduler. Pure.

import { parseJobDocument } from '../../../shared/jobs/spec-parse.ts';
import type { JobSpec, IgnoredField as JobIgnoredField } from '../../../shared/jobs/model.ts';
import type { ExperimentSpec, JobDocument } from '../../../shared/tuning/model.ts';
import type { Assignment } from '../../../shared/tuning/space/types.ts';
import { substitute } from './trial-command.ts';
import { placeholderNames } from '../../../shared/tuning/placeholders.ts';
import { envName } from '../../../shared/tuning/space/sample.ts';
import { fillStrings, fillTrialParameters, stringsOf } from '../../../shared/tuning/trial-parameters.ts';

/** A finished trial's job is kept this long for its logs, unless the document says otherwise. */
const JOB_TTL_SECONDS = 3600;

/** Every `${name}` in the document's strings. */
export function jobPlaceholderNames(doc: unknown): string[] {
  return stringsOf(doc).flatMap(placeholderNames);
}

export function trialJobSpec(spec: ExperimentSpec, doc: JobDocument, jobName: string, index: number, params: Assignment): { job: JobSpec; ignored: JobIgnoredField[] } {
  // Katib's form: each `${trialParameters.<name>}` gets its value as it is (Katib's textual substitution).
  const declared = spec.trial?.trialParameters;
  const withName = (declared
    ? fillStrings(doc, (s) => fillTrialParameters(s, declared, params, `${spec.name}-${index}`))
    : fillStrings(doc, (s) => substitute(s, params))) as Record<string, unknown>;
  // The name is the trial's: a document's own name (metadata.name, name) is replaced; a
  // Kubernetes-shaped one (an apiVersion) without metadata, as Katib's trialSpec is, is given it.
  if (typeof withName.metadata === 'object' && withName.metadata !== null) withName.metadata = { ...(withName.metadata as object), name: jobName };
  else if (typeof withName.apiVersion === 'string') withName.metadata = { name: jobName };
  else withName.name = jobName;
  const parsed = parseJobDocument(withName, 'application/json');
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(params)) env[envName(name)] = String(value);
  env.CAIRN_EXPERIMENT = spec.name;
  env.CAIRN_TRIAL = String(index);
  env.CAIRN_TRIAL_NAME = `${spec.name}-${index}`;
  env.CAIRN_METRIC = spec.objective.metricName;
  const job: JobSpec = {
    ...parsed.spec,
    name: jobName,
    role: spec.role,
    ...(spec.priorityClass !== undefined ? { priorityClass: spec.priorityClass } : {}),
    ttlSecondsAfterFinished: parsed.spec.ttlSecondsAfterFinished ?? JOB_TTL_SECONDS,
    groups: parsed.spec.groups.map((g) => ({ ...g, template: { ...g.template, env: { ...env, ...g.template.env } } })),
  };
  return { job, ignored: parsed.ignored };
}

/** The replica whose stdout holds a distributed trial's metrics: the first of the first group. */
export function chiefGroup(job: Pick<JobSpec, 'groups'>): string {
  return job.groups[0]!.name;
}
