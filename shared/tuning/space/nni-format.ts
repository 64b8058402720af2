// NNI's search space: {"lr": {"_type": "loguniform", "_value": [1e-4, 1e-1]}, ...}, every one
// of NNI's types, and its nested choice, where a choice is an object naming itself with `_name`
// and carrying parameters of its own: {"_name": "sgd", "momentum": {"_type": ...}}. Those are
// active only when that choice is picked, and named `optimizer.momentum` in a trial.

import { badRequest } from '../../errors.ts';
import type { CategoricalParam, Choice, Param, SearchSpace } from './types.ts';
import {
  checkChoices, checkKeys, checkOrdered, checkPositive, checkSpace, finiteNumber, integer, isObject, isScalar,
  memberField, shown,
} from './validate.ts';

/** Each numeric type's `_value`, by position. */
const ARGS: Readonly<Record<string, readonly string[]>> = {
  randint: ['lower', 'upper'],
  uniform: ['low', 'high'],
  quniform: ['low', 'high', 'q'],
  loguniform: ['low', 'high'],
  qloguniform: ['low', 'high', 'q'],
  normal: ['mu', 'sigma'],
  qnormal: ['mu', 'sigma', 'q'],
  lognormal: ['mu', 'sigma'],
  qlognormal: ['mu', 'sigma', 'q'],
};
const TYPES = ['choice', ...Object.keys(ARGS)];

/** `field` is where the space sits in the caller's document (`searchSpace`); none at the top. */
export function parseNniSpace(json: unknown, field = ''): SearchSpace {
  const fields = new Map<Param, string>();
  if (!isObject(json)) {
    throw badRequest(field || 'searchSpace', `must be an object of parameters, got ${shown(json)}`);
  }
  const space = parseLevel(json, [], field, fields);
  return checkSpace(space, fields, field || 'searchSpace');
}

/** One level: the top, or one nested choice (whose `_name` is skipped as `reserved`). */
function parseLevel(obj: Record<string, unknown>, reserved: readonly string[], base: string, fields: Map<Param, string>): SearchSpace {
  const params = Object.entries(obj)
    .filter(([name]) => !reserved.includes(name))
    .map(([name, spec]) => {
      const at = memberField(base, name);
      if (name === '') throw badRequest(at, 'a parameter needs a non-empty name');
      const param = parseParam(name, spec, at, fields);
      fields.set(param, at);
      return param;
    });
  return { params };
}

function parseParam(name: string, spec: unknown, at: string, fields: Map<Param, string>): Param {
  if (!isObject(spec)) throw badRequest(at, `must be {"_type": ..., "_value": [...]}, got ${shown(spec)}`);
  checkKeys(spec, ['_type', '_value'], at);
  const type = spec._type;
  if (typeof type !== 'string' || !TYPES.includes(type)) {
    const got = type === undefined ? 'missing' : `unknown type ${shown(type)}`;
    throw badRequest(`${at}._type`, `${got}; known types: ${TYPES.join(', ')}`);
  }
  const field = `${at}._value`;
  const value = spec._value;
  if (!Array.isArray(value)) throw badRequest(field, `must be a list, got ${shown(value)}`);
  if (type === 'choice') return parseChoice(name, value, field, fields);

  const names = ARGS[type];
  if (value.length !== names.length) {
    throw badRequest(field, `${type} takes [${names.join(', ')}], got ${value.length} value(s)`);
  }
  const n = value.map((v, i) => finiteNumber(v, `${field}[${i}]`));
  const q = names.length === 3 ? n[2] : undefined;
  if (q !== undefined) checkPositive(q, `${field}[2]`, 'q');

  if (type === 'randint') {
    const [lower, upper] = [integer(n[0], `${field}[0]`), integer(n[1], `${field}[1]`)];
    // NNI's upper is excluded: [lower, upper) is [lower, upper - 1] with both ends included.
    if (lower >= upper) throw badRequest(field, `randint's upper is excluded: needs lower < upper, got [${lower}, ${upper})`);
    return { kind: 'int', name, low: lower, high: upper - 1, log: false, step: 1 };
  }
  if (names[0] === 'mu') {
    checkPositive(n[1], `${field}[1]`, 'sigma');
    const log = type.endsWith('lognormal');
    return { kind: 'normal', name, mu: n[0], sigma: n[1], log, ...(q !== undefined ? { q } : {}) };
  }
  checkOrdered(n[0], n[1], field);
  const log = type.endsWith('loguniform');
  if (log) checkPositive(n[0], `${field}[0]`, `${type}'s low`);
  return { kind: 'double', name, low: n[0], high: n[1], log, ...(q !== undefined ? { q } : {}) };
}

function parseChoice(name: string, value: unknown[], field: string, fields: Map<Param, string>): CategoricalParam {
  const at = value.map((_, i) => `${field}[${i}]`);
  const choices = value.map((v, i): Choice => {
    if (isScalar(v)) return { value: v };
    if (!isObject(v)) {
      throw badRequest(at[i], `a choice is a number, a string, a boolean or {"_name": ..., parameters}, got ${shown(v)}`);
    }
    if (!isScalar(v._name)) throw badRequest(`${at[i]}._name`, `a nested choice needs a _name (a string), got ${shown(v._name)}`);
    const sub = parseLevel(v, ['_name'], at[i], fields);
    return sub.params.length > 0 ? { value: v._name, sub } : { value: v._name };
  });
  checkChoices(choices, at, field);
  return { kind: 'categorical', name, choices };
}
