// What one principal may keep in the replicated registry, and how much environment one task
// may carry: a master setting, the same on every master of a group. Every master holds every
// object in memory and on disk; without a bound one tenant's hundred fat apps (900 KB of env
// each) cost the masters a quarter of a gigabyte, which every tenant then shares.
//
// Options in, defaults filled, compiled limits out (errors name the flag). Pure.

import { CairnError } from '../errors.ts';
import { utf8Length } from '../gossip/math.ts';

export interface ObjectLimits {
  /** Apps, jobs, experiments and secrets one principal may own at once (`--max-objects-per-principal`). */
  readonly maxObjectsPerPrincipal: number;
  /**
   * Bytes of JSON those objects may hold together, an app's kept versions and an experiment's
   * trials included (`--max-object-bytes-per-principal`).
   */
  readonly maxObjectBytesPerPrincipal: number;
  /** One task's environment, every `NAME=value` with its terminator, in bytes (`--max-task-env`). */
  readonly maxTaskEnvBytes: number;
}

/**
 * A thousand objects is ten times what a busy team keeps; 64 MiB lets each of them be a
 * 64 KiB definition. 128 KiB of environment is Linux' bound on one execve string
 * (MAX_ARG_STRLEN): a task whose environment is larger rarely starts anywhere anyway.
 */
export const DEFAULT_OBJECT_LIMITS: ObjectLimits = Object.freeze({
  maxObjectsPerPrincipal: 1000,
  maxObjectBytesPerPrincipal: 64 * 1024 * 1024,
  maxTaskEnvBytes: 128 * 1024,
});

/** The command-line flag of each limit, named in refusals so an operator knows what to raise. */
export const OBJECT_LIMIT_FLAGS: Readonly<Record<keyof ObjectLimits, string>> = {
  maxObjectsPerPrincipal: '--max-objects-per-principal',
  maxObjectBytesPerPrincipal: '--max-object-bytes-per-principal',
  maxTaskEnvBytes: '--max-task-env',
};

/** Bounds on the limits themselves: a task's environment beyond 1 MiB fails execve on Linux's defaults. */
const RANGE: Readonly<Record<keyof ObjectLimits, [number, number]>> = {
  maxObjectsPerPrincipal: [1, 10_000_000],
  maxObjectBytesPerPrincipal: [1024, 2 ** 40],
  maxTaskEnvBytes: [1024, 1024 * 1024],
};

/** Fills defaults and checks each given limit; CAIRN_BAD_FLAG naming the flag. */
export function compileObjectLimits(given: Partial<ObjectLimits> = {}): ObjectLimits {
  const out = { ...DEFAULT_OBJECT_LIMITS };
  for (const k of Object.keys(RANGE) as (keyof ObjectLimits)[]) {
    const v = given[k];
    if (v === undefined) continue;
    const [min, max] = RANGE[k];
    if (!Number.isInteger(v) || v < min || v > max) throw new CairnError('CAIRN_BAD_FLAG', `must be a whole number from ${min} to ${max}, got ${v}`, OBJECT_LIMIT_FLAGS[k]);
    out[k] = v;
  }
  return Object.freeze(out);
}

/** Bytes of an environment as the kernel copies it: `NAME=value\0` per variable, in UTF-8. */
export function envBytes(env: Iterable<readonly [string, string]>): number {
  let n = 0;
  for (const [name, value] of env) n += utf8Length(name) + utf8Length(value) + 2;
  return n;
}

/** The refusal of an environment over the cap, or undefined when it fits. */
export function envTooLarge(bytes: number, limits: ObjectLimits): string | undefined {
  if (bytes <= limits.maxTaskEnvBytes) return undefined;
  return `the environment is ${bytes} bytes; a task carries at most ${limits.maxTaskEnvBytes} (the master's ${OBJECT_LIMIT_FLAGS.maxTaskEnvBytes})`;
}
