// The checks the three search-space parsers (the paper's file, NNI's JSON, Katib's parameters)
// share, so a fault is refused in the same words whichever format it came in, each refusal
// naming the field the user wrote. Also the parsing of algorithm and early-stopping settings,
// which arrive as Katib's strings.

import { badRequest } from '../../errors.ts';
import { envName } from './sample.ts';
import type { Choice, Param, ParamValue, SearchSpace } from './types.ts';

export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** `base.key`, or `base["key"]` when the key is not a plain identifier (`--lr`, `a.b`). */
export function memberField(base: string, key: string): string {
  if (!/^[A-Za-z_][A-Za-z0-9_-]*$/.test(key)) return `${base}[${JSON.stringify(key)}]`;
  return base === '' ? key : `${base}.${key}`;
}

export function shown(value: unknown): string {
  if (value === undefined) return 'nothing';
  const text = JSON.stringify(value);
  return text === undefined ? String(value) : text.length > 60 ? `${text.slice(0, 57)}...` : text;
}

export function finiteNumber(value: unknown, field: string): number {
  if (typeof value !== 'number' || !Number.isFinite(value)) {
    throw badRequest(field, `must be a finite number, got ${shown(value)}`);
  }
  return value;
}

const NUMERIC = /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/;

/** A number, or a string holding one (Katib writes min, max and step as strings). */
export function numberLike(value: unknown, field: string): number {
  if (typeof value === 'string' && NUMERIC.test(value.trim())) return Number(value.trim());
  if (typeof value === 'number' && Number.isFinite(value)) return value;
  throw badRequest(field, `must be a finite number (or a string holding one), got ${shown(value)}`);
}

export function integer(value: number, field: string): number {
  if (!Number.isSafeInteger(value)) throw badRequest(field, `must be an integer, got ${value}`);
  return value;
}

/** An empty range is refused rather than collapsed: it is almost always swapped bounds. */
export function checkOrdered(low: number, high: number, field: string): void {
  if (low > high) throw badRequest(field, `low > high (${low} > ${high})`);
}

export function checkPositive(value: number, field: string, what: string): void {
  if (!(value > 0)) throw badRequest(field, `${what} must be > 0, got ${value}`);
}

export function checkKeys(obj: Record<string, unknown>, known: readonly string[], base: string): void {
  for (const key of Object.keys(obj)) {
    if (!known.includes(key)) {
      throw badRequest(memberField(base, key), `unknown key; known keys: ${known.join(', ')}`);
    }
  }
}

/** A parameter's own name: a non-empty string, not used before at its level. */
export function checkName(value: unknown, seen: Map<string, string>, field: string): string {
  if (typeof value !== 'string' || value === '') {
    throw badRequest(field, `a parameter needs a non-empty string name, got ${shown(value)}`);
  }
  const earlier = seen.get(value);
  if (earlier !== undefined) throw badRequest(field, `duplicate name "${value}" (also ${earlier})`);
  seen.set(value, field);
  return value;
}

/** Choices of one categorical: at least one, no value twice (a grid would try it twice). */
export function checkChoices(choices: readonly Choice[], fields: readonly string[], field: string): void {
  if (choices.length === 0) throw badRequest(field, 'needs at least one value');
  const seen = new Map<string, number>();
  choices.forEach((choice, i) => {
    const key = `${typeof choice.value}:${String(choice.value)}`;
    const earlier = seen.get(key);
    if (earlier !== undefined) {
      throw badRequest(fields[i], `duplicate value ${shown(choice.value)} (also ${fields[earlier]})`);
    }
    seen.set(key, i);
  });
}

export function isScalar(value: unknown): value is ParamValue {
  return typeof value === 'string' || typeof value === 'boolean' || (typeof value === 'number' && Number.isFinite(value));
}

interface Placed {
  readonly fullName: string;
  readonly field: string;
  /** The categorical choices this parameter lives under, as `categorical#choiceIndex`. */
  readonly branch: ReadonlyMap<Param, number>;
}

/**
 * The whole tree's checks, once a parser has built it: a top level with parameters, and no two
 * parameters that can be active together sharing a full name (`optimizer.lr` written at the top
 * and nested under `optimizer`) or an environment variable (`batch-size`, `batch_size`). The
 * same full name under two choices of one categorical is fine: only one is ever active.
 */
export function checkSpace(space: SearchSpace, fields: ReadonlyMap<Param, string>, field: string): SearchSpace {
  if (space.params.length === 0) throw badRequest(field, 'the search space has no parameters');
  const placed: Placed[] = [];
  const walk = (level: SearchSpace, prefix: string, branch: ReadonlyMap<Param, number>): void => {
    for (const param of level.params) {
      const fullName = prefix === '' ? param.name : `${prefix}.${param.name}`;
      placed.push({ fullName, field: fields.get(param) ?? memberField(field, fullName), branch });
      if (param.kind !== 'categorical') continue;
      param.choices.forEach((choice, i) => {
        if (choice.sub) walk(choice.sub, fullName, new Map([...branch, [param, i]]));
      });
    }
  };
  walk(space, '', new Map());

  const byEnv = new Map<string, Placed[]>();
  for (const p of placed) {
    const env = envName(p.fullName);
    const earlier = byEnv.get(env) ?? [];
    for (const q of earlier) {
      if (q.fullName !== p.fullName) {
        throw badRequest(p.field, `"${p.fullName}" and "${q.fullName}" (${q.field}) are both passed as ${env}`);
      }
      if (!exclusive(p.branch, q.branch)) {
        throw badRequest(p.field, `full name "${p.fullName}" is also the name of ${q.field}`);
      }
    }
    byEnv.set(env, [...earlier, p]);
  }
  return space;
}

/** Two parameters never active together: they sit under different choices of one categorical. */
function exclusive(a: ReadonlyMap<Param, number>, b: ReadonlyMap<Param, number>): boolean {
  for (const [param, choice] of a) {
    const other = b.get(param);
    if (other !== undefined && other !== choice) return true;
  }
  return false;
}

// Settings (`algorithm.settings`, `earlyStopping.settings`): Katib's strings, refused by name.

export type Settings = Readonly<Record<string, string>>;

export function checkSettingNames(settings: Settings, known: readonly string[], prefix: string): void {
  for (const name of Object.keys(settings)) {
    if (!known.includes(name)) {
      const list = known.length === 0 ? 'this one takes no settings' : `known settings: ${known.join(', ')}`;
      throw badRequest(`${prefix}.${name}`, `unknown setting; ${list}`);
    }
  }
}

export interface SettingRule {
  readonly integer?: boolean;
  /** Inclusive lower bound. */
  readonly min?: number;
  /** Exclusive lower bound. */
  readonly above?: number;
  readonly max?: number;
}

/** A numeric setting; `fallback` undefined makes it required. */
export function numberSetting(
  settings: Settings,
  name: string,
  prefix: string,
  fallback: number | undefined,
  rule: SettingRule,
): number {
  const field = `${prefix}.${name}`;
  const raw: unknown = Object.hasOwn(settings, name) ? settings[name] : undefined;
  if (raw === undefined) {
    if (fallback === undefined) throw badRequest(field, 'is required');
    return fallback;
  }
  const want = [
    rule.integer ? 'an integer' : 'a number',
    rule.min !== undefined ? `>= ${rule.min}` : '',
    rule.above !== undefined ? `> ${rule.above}` : '',
    rule.max !== undefined ? `<= ${rule.max}` : '',
  ].filter((s) => s !== '').join(' ');
  const text = typeof raw === 'number' ? String(raw) : typeof raw === 'string' ? raw.trim() : '';
  const value = NUMERIC.test(text) ? Number(text) : NaN;
  const ok =
    Number.isFinite(value) &&
    (!rule.integer || Number.isSafeInteger(value)) &&
    (rule.min === undefined || value >= rule.min) &&
    (rule.above === undefined || value > rule.above) &&
    (rule.max === undefined || value <= rule.max);
  if (!ok) throw badRequest(field, `must be ${want}, got ${shown(raw)}`);
  return value;
}
