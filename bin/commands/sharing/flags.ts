// The flags of `cairn quota set` and the role arguments of the sharing commands. Amounts are
// written as `cpus=4,mem=8192,gpus=2` (mem and disk in MB, or a size such as 16G); each bad
// one is refused here, naming its flag, before anything is sent, so a typo ('gpu=2') never
// becomes a quota the master would store without the scalar that was meant.

import { InvalidArgumentError } from 'commander';
import { parseSizeMiB } from '../../../shared/sizes.ts';
import { validRoleName } from '../../../shared/sharing/roles.ts';
import type { QuotaJson } from '../../../shared/sharing/views.ts';
import { CairnError } from '../../../shared/errors.ts';
import { SCALAR_NAMES, type ScalarName } from '../../../shared/resources.ts';
import type { QuotaBody } from './client.ts';

export type Amounts = Partial<Record<ScalarName, number>>;

/** `cairn preemptions` shows this many unless `--limit` says otherwise. */
export const DEFAULT_PREEMPTION_LIMIT = 20;

const AMOUNTS_EXAMPLE = 'e.g. cpus=4,mem=8192,gpus=2';
const NUMBER = /^(\d+(\.\d+)?|\.\d+)$/;

/** A refused flag: the message reads as commander's own ("option '--limit': ..."); `field` is the flag. */
export function flagError(flag: string, why: string): CairnError {
  return new CairnError('CAIRN_BAD_FLAG', `option '${flag}': ${why}`, flag);
}

function isScalarName(name: string): name is ScalarName {
  return (SCALAR_NAMES as readonly string[]).includes(name);
}

/** One amount in the scalar's unit: a number of 0 or more; mem and disk also as a size (16G, 512Mi, 16GiB). */
function amountOf(name: ScalarName, value: string, flag: string): number {
  const v = value.trim();
  if (NUMBER.test(v)) return Number(v);
  if (v.startsWith('-')) throw flagError(flag, `${name}=${value}: must be 0 or more`);
  if (name === 'mem' || name === 'disk') {
    try {
      // 16GiB as 16Gi: the tuning flags' size parser knows the Kubernetes spelling, not the IEC one.
      return parseSizeMiB(v.replace(/([kmgt]i)b$/i, '$1'), flag);
    } catch {
      throw flagError(flag, `${name}=${value}: must be a number of MB or a size such as 512M, 16G or 16GiB`);
    }
  }
  throw flagError(flag, `${name}=${value}: must be a number of ${name}, 0 or more`);
}

/**
 * `--guarantee cpus=4,mem=16G` (repeatable; the entries of every occurrence together) as
 * amounts in each scalar's unit, mem and disk in MB. Undefined when the flag was not given.
 */
export function parseAmounts(values: readonly string[] | undefined, flag: string): Amounts | undefined {
  if (values === undefined) return undefined;
  const items = values.flatMap((v) => v.split(',')).map((s) => s.trim()).filter((s) => s !== '');
  if (items.length === 0) throw flagError(flag, `names no resource (${AMOUNTS_EXAMPLE})`);
  const out: Amounts = {};
  for (const item of items) {
    const eq = item.indexOf('=');
    if (eq <= 0) throw flagError(flag, `'${item}' is not NAME=AMOUNT (${AMOUNTS_EXAMPLE})`);
    const name = item.slice(0, eq).trim();
    if (!isScalarName(name)) throw flagError(flag, `'${name}' is not a resource (${SCALAR_NAMES.join(', ')})`);
    if (out[name] !== undefined) throw flagError(flag, `names ${name} twice`);
    out[name] = amountOf(name, item.slice(eq + 1), flag);
  }
  return out;
}

/** What `cairn quota set` was asked to change; null: remove that part. Absent: keep it as it is. */
export interface QuotaChange {
  guarantee?: Amounts | null;
  limit?: Amounts | null;
}

/** The flags of `cairn quota set` as the program collects them. */
export interface QuotaSetFlags {
  guarantee?: readonly string[];
  limit?: readonly string[];
  noGuarantee?: boolean;
  noLimit?: boolean;
}

/** The change the flags ask for; throws a CAIRN_BAD_FLAG (its message names the flag). */
export function quotaChangeFromFlags(f: QuotaSetFlags): QuotaChange {
  if (f.guarantee !== undefined && f.noGuarantee) throw flagError('--no-guarantee', 'goes against --guarantee: give one');
  if (f.limit !== undefined && f.noLimit) throw flagError('--no-limit', 'goes against --limit: give one');
  const guarantee = parseAmounts(f.guarantee, '--guarantee');
  const limit = parseAmounts(f.limit, '--limit');
  if (guarantee === undefined && limit === undefined && !f.noGuarantee && !f.noLimit) {
    throw new CairnError('CAIRN_BAD_FLAG', 'give what to set: --guarantee, --limit, --no-guarantee or --no-limit');
  }
  return {
    ...(guarantee !== undefined ? { guarantee } : f.noGuarantee ? { guarantee: null } : {}),
    ...(limit !== undefined ? { limit } : f.noLimit ? { limit: null } : {}),
  };
}

/**
 * The whole quota to store: the role's present one with the change applied. The master
 * replaces a quota as a whole, so `--limit` alone must not drop the guarantee already set.
 */
export function mergedQuota(current: QuotaJson | undefined, change: QuotaChange): QuotaBody {
  const guarantee = change.guarantee === undefined ? current?.guarantee ?? {} : change.guarantee ?? {};
  const limit = change.limit === undefined ? current?.limit ?? undefined : change.limit ?? undefined;
  return { guarantee: { ...guarantee }, ...(limit && Object.keys(limit).length > 0 ? { limit: { ...limit } } : {}) };
}

/** A role name as the master takes one (`*`, `team`, `team/alice`), for an argument or `--role`. */
export function roleNameFlag(value: string): string {
  try {
    validRoleName(value, 'role');
  } catch (err) {
    throw new InvalidArgumentError(`${(err as Error).message.replace(/^role: /, '')}.`);
  }
  return value;
}

/** Whether `role` is `top` or lies under it (`*` has nothing under it). */
export function inSubtree(role: string, top: string): boolean {
  return role === top || (top !== '*' && role.startsWith(`${top}/`));
}
