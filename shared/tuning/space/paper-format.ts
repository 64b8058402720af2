// The tuning paper's parameter file: {"parameters": [{"name", "type", "value"}]}, where a
// `bound` is a real range [low, high] and a `number` a list of numbers to choose from. The
// paper's files end lists and objects with a trailing comma, which JSON refuses: those are
// blanked out before JSON.parse (no JSON5 dependency for one leniency).

import { badRequest } from '../../errors.ts';
import type { CategoricalParam, DoubleParam, Param, SearchSpace } from './types.ts';
import {
  checkChoices, checkKeys, checkName, checkOrdered, checkSpace, finiteNumber, isObject, memberField, shown,
} from './validate.ts';

const TYPES = ['bound', 'number'];

export function parsePaperSpace(text: string): SearchSpace {
  const doc = parseLaxJson(text);
  if (!isObject(doc)) {
    throw badRequest('document', `must be a JSON object with a "parameters" list, got ${shown(doc)}`);
  }
  const list = doc.parameters;
  if (list === undefined) throw badRequest('parameters', 'missing: the file needs a "parameters" list');
  if (!Array.isArray(list)) throw badRequest('parameters', `must be a list, got ${shown(list)}`);
  if (list.length === 0) throw badRequest('parameters', 'is empty: give at least one parameter');

  const seen = new Map<string, string>();
  const fields = new Map<Param, string>();
  const params = list.map((entry: unknown, i): Param => {
    const at = `parameters[${i}]`;
    if (!isObject(entry)) throw badRequest(at, `must be an object {name, type, value}, got ${shown(entry)}`);
    const name = checkName(entry.name, seen, `${at}.name`);
    const base = memberField('parameters', name);
    checkKeys(entry, ['name', 'type', 'value'], base);
    const param = parseParam(name, entry.type, entry.value, base);
    fields.set(param, base);
    return param;
  });
  return checkSpace({ params }, fields, 'parameters');
}

function parseParam(name: string, type: unknown, value: unknown, base: string): Param {
  if (type === 'bound') return parseBound(name, value, `${base}.value`);
  if (type === 'number') return parseNumbers(name, value, `${base}.value`);
  const got = type === undefined ? 'missing' : `unknown type ${shown(type)}`;
  throw badRequest(`${base}.type`, `${got}; known types: ${TYPES.join(', ')}`);
}

function parseBound(name: string, value: unknown, field: string): DoubleParam {
  if (!Array.isArray(value) || value.length !== 2 || !value.every((v) => typeof v === 'number' && Number.isFinite(v))) {
    throw badRequest(field, `a bound is [low, high], two finite numbers; got ${shown(value)}`);
  }
  const [low, high] = value as number[];
  checkOrdered(low, high, field);
  return { kind: 'double', name, low, high, log: false };
}

function parseNumbers(name: string, value: unknown, field: string): CategoricalParam {
  if (!Array.isArray(value)) throw badRequest(field, `a number parameter is a list of numbers; got ${shown(value)}`);
  const fields = value.map((_, i) => `${field}[${i}]`);
  const choices = value.map((v, i) => ({ value: finiteNumber(v, fields[i]) }));
  checkChoices(choices, fields, field);
  return { kind: 'categorical', name, choices };
}

/** JSON.parse after blanking the commas that close a list or object; where it fails, says so. */
export function parseLaxJson(text: string): unknown {
  // Blanked, not removed: offsets stay those of the user's text for the error message.
  const lax = stripTrailingCommas(text);
  try {
    return JSON.parse(lax);
  } catch (err) {
    const where = locateJsonError(lax);
    const reason = where?.reason ?? (err as Error).message;
    const at = where === undefined ? '' : ` at ${lineColumn(text, where.offset)}`;
    throw badRequest('document', `not valid JSON${at}: ${reason}`);
  }
}

export function stripTrailingCommas(text: string): string {
  const out = text.split('');
  let inString = false;
  for (let i = 0; i < out.length; i++) {
    const c = out[i];
    if (inString) {
      if (c === '\\') i++;
      else if (c === '"') inString = false;
    } else if (c === '"') {
      inString = true;
    } else if (c === ',') {
      let j = i + 1;
      while (j < out.length && ' \t\r\n'.includes(out[j])) j++;
      if (out[j] === '}' || out[j] === ']') out[i] = ' ';
    }
  }
  return out.join('');
}

function lineColumn(text: string, offset: number): string {
  const before = text.slice(0, offset).split('\n');
  return `line ${before.length}, column ${before[before.length - 1].length + 1}`;
}

interface JsonFault {
  readonly offset: number;
  readonly reason: string;
}

/**
 * Where JSON text first goes wrong. JSON.parse in Node 20 gives a position for some faults
 * and not others ("Unexpected token '}'"), so a small recogniser finds it; it builds nothing.
 */
export function locateJsonError(text: string): JsonFault | undefined {
  let pos = 0;
  const fail = (reason: string): never => {
    throw { offset: pos, reason } satisfies JsonFault;
  };
  const ws = (): void => {
    while (pos < text.length && ' \t\r\n'.includes(text[pos])) pos++;
  };
  const expect = (c: string, what: string): void => {
    if (text[pos] !== c) fail(pos >= text.length ? `unexpected end of text, expected ${what}` : `expected ${what}`);
    pos++;
  };
  const string = (): void => {
    expect('"', 'a string');
    for (;;) {
      if (pos >= text.length) fail('unterminated string');
      const c = text.charCodeAt(pos);
      if (c === 0x22) break;
      if (c < 0x20) fail('a control character inside a string (write it as an escape)');
      if (c === 0x5c) {
        pos++;
        if (text[pos] === 'u') {
          if (!/^[0-9a-fA-F]{4}$/.test(text.slice(pos + 1, pos + 5))) fail('a \\u escape needs four hex digits');
          pos += 4;
        } else if (!'"\\/bfnrt'.includes(text[pos] ?? 'x')) {
          fail('an unknown escape');
        }
      }
      pos++;
    }
    pos++;
  };
  const NUMBER = /-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?/y;
  const value = (): void => {
    ws();
    const c = text[pos];
    if (c === '{') {
      pos++;
      ws();
      if (text[pos] === '}') {
        pos++;
        return;
      }
      for (;;) {
        ws();
        string();
        ws();
        expect(':', "':' after a key");
        value();
        ws();
        if (text[pos] === ',') pos++;
        else return expect('}', "',' or '}'");
      }
    }
    if (c === '[') {
      pos++;
      ws();
      if (text[pos] === ']') {
        pos++;
        return;
      }
      for (;;) {
        value();
        ws();
        if (text[pos] === ',') pos++;
        else return expect(']', "',' or ']'");
      }
    }
    if (c === '"') return string();
    for (const word of ['true', 'false', 'null']) {
      if (text.startsWith(word, pos)) {
        pos += word.length;
        return;
      }
    }
    NUMBER.lastIndex = pos;
    if (NUMBER.test(text)) {
      pos = NUMBER.lastIndex;
      return;
    }
    fail(pos >= text.length ? 'unexpected end of text, expected a value' : 'expected a value');
  };
  try {
    value();
    ws();
    if (pos < text.length) fail('unexpected text after the end');
    return undefined;
  } catch (err) {
    // Deep nesting overflows the stack: say nothing rather than something wrong.
    if (err instanceof RangeError) return undefined;
    return err as JsonFault;
  }
}
