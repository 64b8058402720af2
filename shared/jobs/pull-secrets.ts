// A replica template's `imagePullSecrets`, as a Kubernetes pod spec writes them
// (`[{name: regcred}]`; plain names are taken too): credentials stored in the cluster
// (`cairn secret create`) that the replica's image is pulled with. Pure; whether each
// exists and is the submitter's to use is checked when the job is submitted (routes.ts).

import { checkSecretName, MAX_PULL_SECRETS } from '../secret-names.ts';
import { invalidJob, type Locate } from './field-paths.ts';

export function readImagePullSecrets(value: unknown, field: string, at: Locate, image: string | undefined): string[] {
  if (!Array.isArray(value)) throw invalidJob(at(field), 'must be a list of {name: SECRET}');
  if (value.length > MAX_PULL_SECRETS) throw invalidJob(at(field), `names ${value.length} secrets; at most ${MAX_PULL_SECRETS}`);
  if (image === undefined && value.length > 0) throw invalidJob(at(field), 'needs an image: a replica without one pulls nothing');
  return Array.from(value as unknown[]).map((entry, i) => {
    const f = `${field}[${i}]`;
    const named = typeof entry === 'object' && entry !== null && !Array.isArray(entry);
    if (named) {
      const extra = Object.keys(entry).find((k) => k !== 'name');
      if (extra !== undefined) throw invalidJob(at(`${f}.${extra}`), `unknown field '${extra}' (known: name)`);
    }
    const name = named ? (entry as { name?: unknown }).name : entry;
    try {
      return checkSecretName(name, f);
    } catch (err) {
      throw invalidJob(at(named ? `${f}.name` : f), (err as Error).message.replace(/^[^:]*: /, ''));
    }
  });
}
