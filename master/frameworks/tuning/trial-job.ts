// A distributed trial as a job of the job engine: the experiment's job document with every
// `${name}` replaced by the trial's parameter (as in a task trial's command), parsed and checked
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

/** A finished trial's job is kept this long for its logs, unless the document says otherwise. */
const JOB_TTL_SECONDS = 3600;

/** Every string of the document with its `${name}`s replaced. */
function substituteAll(v: unknown, params: Assignment): unknown {
  if (typeof v === 'string') return substitute(v, params);
  if (Array.isArray(v)) return v.map((x) => substituteAll(x, params));
  if (typeof v === 'object' && v !== null) return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, substituteAll(x, params)]));
  return v;
}

/** Every `${name}` in the document's strings. */
export function jobPlaceholderNames(doc: unknown): string[] {
  if (typeof doc === 'string') return placeholderNames(doc);
  if (Array.isArray(doc)) return doc.flatMap(jobPlaceholderNames);
  if (typeof doc === 'object' && doc !== null) return Object.values(doc).flatMap(jobPlaceholderNames);
  return [];
}

export function trialJobSpec(spec: ExperimentSpec, doc: JobDocument, jobName: string, index: number, params: Assignment): { job: JobSpec; ignored: JobIgnoredField[] } {
  const withName = substituteAll(doc, params) as Record<string, unknown>;
  // The name is the trial's: a document's own name (metadata.name, name) is replaced.
  if (typeof withName.metadata === 'object' && withName.metadata !== null) withName.metadata = { ...(withName.metadata as object), name: jobName };
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
