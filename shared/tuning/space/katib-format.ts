// A Katib experiment's `parameters`: [{name, parameterType, feasibleSpace}]. Katib writes
// min, max and step as strings; numbers are taken too (a hand-written JSON experiment). Its
// normal and logNormal distributions over [min, max] are read as Katib's suggestion services
// read them: centred on the range, with the range ±3 sigma (in log space for logNormal).

import { badRequest } from '../../errors.ts';
import type { Param, SearchSpace } from './types.ts';
import {
  checkChoices, checkKeys, checkName, checkOrdered, checkPositive, checkSpace, integer, isObject, memberField,
  numberLike, shown,
} from './validate.ts';

const TYPES = ['double', 'int', 'discrete', 'categorical'];
const DISTRIBUTIONS = ['uniform', 'logUniform', 'normal', 'logNormal'];
type Distribution = 'uniform' | 'logUniform' | 'normal' | 'logNormal';

export function parseKatibParameters(json: unknown, field = 'parameters'): SearchSpace {
  if (!Array.isArray(json)) throw badRequest(field, `must be a list of parameters, got ${shown(json)}`);
  if (json.length === 0) throw badRequest(field, 'is empty: give at least one parameter');
  const seen = new Map<string, string>();
  const fields = new Map<Param, string>();
  const params = json.map((entry: unknown, i): Param => {
    const at = `${field}[${i}]`;
    if (!isObject(entry)) throw badRequest(at, `must be an object {name, parameterType, feasibleSpace}, got ${shown(entry)}`);
    const name = checkName(entry.name, seen, `${at}.name`);
    const base = memberField(field, name);
    checkKeys(entry, ['name', 'parameterType', 'feasibleSpace'], base);
    const param = parseParam(name, entry.parameterType, entry.feasibleSpace, base);
    fields.set(param, base);
    return param;
  });
  return checkSpace({ params }, fields, field);
}

function parseParam(name: string, type: unknown, space: unknown, base: string): Param {
  if (typeof type !== 'string' || !TYPES.includes(type)) {
    const got = type === undefined ? 'missing' : `unknown type ${shown(type)}`;
    throw badRequest(`${base}.parameterType`, `${got}; known types: ${TYPES.join(', ')}`);
  }
  const at = `${base}.feasibleSpace`;
  if (!isObject(space)) throw badRequest(at, `must be an object, got ${shown(space)}`);
  checkKeys(space, ['min', 'max', 'step', 'list', 'distribution'], at);
  const distribution = parseDistribution(space.distribution, `${at}.distribution`);
  if (type === 'double' || type === 'int') return parseRange(name, type, space, distribution, at);

  for (const key of ['min', 'max', 'step']) {
    if (space[key] !== undefined) throw badRequest(`${at}.${key}`, `a ${type} parameter takes a list, not ${key}`);
  }
  if (distribution !== 'uniform') {
    throw badRequest(`${at}.distribution`, `a ${type} parameter is picked uniformly from its list`);
  }
  const list = space.list;
  if (!Array.isArray(list)) throw badRequest(`${at}.list`, `must be a list, got ${shown(list)}`);
  const fields = list.map((_, i) => `${at}.list[${i}]`);
  const choices = list.map((v: unknown, i) => {
    if (type === 'discrete') return { value: numberLike(v, fields[i]) };
    if (typeof v !== 'string') throw badRequest(fields[i], `a categorical value is a string, got ${shown(v)}`);
    return { value: v };
  });
  checkChoices(choices, fields, `${at}.list`);
  return { kind: 'categorical', name, choices };
}

function parseDistribution(value: unknown, field: string): Distribution {
  // Katib leaves it empty (DISTRIBUTION_UNSPECIFIED) when the user gave none: uniform.
  if (value === undefined || value === '') return 'uniform';
  if (typeof value !== 'string' || !DISTRIBUTIONS.includes(value)) {
    throw badRequest(field, `unknown distribution ${shown(value)}; known: ${DISTRIBUTIONS.join(', ')}`);
  }
  return value as Distribution;
}

function parseRange(
  name: string,
  type: 'double' | 'int',
  space: Record<string, unknown>,
  distribution: Distribution,
  at: string,
): Param {
  if (space.list !== undefined) throw badRequest(`${at}.list`, `a ${type} parameter takes min and max, not a list`);
  const read = (key: string): number | undefined => {
    if (space[key] === undefined) return undefined;
    const n = numberLike(space[key], `${at}.${key}`);
    return type === 'int' ? integer(n, `${at}.${key}`) : n;
  };
  const min = read('min');
  const max = read('max');
  const step = read('step');
  if (min === undefined) throw badRequest(`${at}.min`, `a ${type} parameter needs min`);
  if (max === undefined) throw badRequest(`${at}.max`, `a ${type} parameter needs max`);
  checkOrdered(min, max, at);
  if (step !== undefined) checkPositive(step, `${at}.step`, 'step');
  const log = distribution === 'logUniform' || distribution === 'logNormal';
  if (log) checkPositive(min, `${at}.min`, `${distribution}'s min`);

  if (distribution === 'normal' || distribution === 'logNormal') {
    const [lo, hi] = log ? [Math.log(min), Math.log(max)] : [min, max];
    if (!(hi > lo)) throw badRequest(at, `${distribution} needs min < max (sigma is (max - min) / 6), got ${min} and ${max}`);
    // An int stays an int: rounded to its step, 1 unless given.
    const q = step ?? (type === 'int' ? 1 : undefined);
    return { kind: 'normal', name, mu: (lo + hi) / 2, sigma: (hi - lo) / 6, log, ...(q !== undefined ? { q } : {}) };
  }
  if (type === 'int') return { kind: 'int', name, low: min, high: max, log, step: step ?? 1 };
  return { kind: 'double', name, low: min, high: max, log, ...(step !== undefined ? { q: step } : {}) };
}
