// Names of the registry credentials stored in the cluster (`cairn secret create NAME`), as
// apps, jobs and scheduler calls name them, and how many one container may name. Pure.

import { CairnError } from './errors.ts';

/** Secret names: a path of letters, digits, '.', '_' and '-' (Marathon's sources, `/team/regcred`, fit). */
export const SECRET_NAME = /^\/?[A-Za-z0-9][A-Za-z0-9._-]*(\/[A-Za-z0-9][A-Za-z0-9._-]*)*$/;
export const MAX_SECRET_NAME = 253;

/** Throws CAIRN_BAD_REQUEST naming `field` unless `name` is a secret name. */
export function checkSecretName(name: unknown, field: string): string {
  if (typeof name !== 'string' || name.length === 0 || name.length > MAX_SECRET_NAME || !SECRET_NAME.test(name)) {
    throw new CairnError('CAIRN_BAD_REQUEST', `${JSON.stringify(name)} is not a secret name (letters, digits, '.', '_', '-', parts joined by '/'; at most ${MAX_SECRET_NAME})`, field);
  }
  return name;
}

/** How many secrets one container may name. */
export const MAX_PULL_SECRETS = 16;
