// JSON request bodies, bounded before they are parsed: in size (fastify's body limit) and
// in nesting depth. The parse itself copes with deep nesting, but every walk over the
// value afterwards (null stripping, validation) recurses, and 100,000 nested arrays
// overflowed the stack there: a 500 for what is the client's mistake. A body nested deeper
// than any Mesos call is refused up front with a 400 naming the body.

import type { FastifyInstance } from 'fastify';
import { CairnError } from './errors.ts';

/**
 * The largest request body the master takes. The largest legitimate call is an ACCEPT
 * launching many tasks: 4 MiB holds about 2,000 TaskInfos of 2 KiB (an agent's worth and
 * more); a task's own command is bounded at 64 KiB by the scheduler API.
 */
export const MAX_BODY_BYTES = 4 * 1024 * 1024;

/**
 * The deepest nesting of arrays and objects a body may have. A Mesos call nests about ten
 * deep (accept.operations[].launch.task_infos[].container.docker.port_mappings[]).
 */
export const MAX_JSON_DEPTH = 64;

/** The nesting depth of JSON text (outside strings), stopping as soon as it passes `limit`. */
export function jsonDepth(text: string, limit = Number.MAX_SAFE_INTEGER): number {
  let depth = 0;
  let deepest = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++; // backslash: the next character is escaped
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) {
      inString = true;
    } else if (c === 0x5b || c === 0x7b) {
      if (++depth > deepest) {
        deepest = depth;
        if (deepest > limit) return deepest;
      }
    } else if (c === 0x5d || c === 0x7d) {
      depth--;
    }
  }
  return deepest;
}

/** Throws CAIRN_BAD_REQUEST (field `body`) when the text nests deeper than MAX_JSON_DEPTH. */
export function checkJsonDepth(text: string, maxDepth = MAX_JSON_DEPTH): void {
  if (jsonDepth(text, maxDepth) > maxDepth) {
    throw new CairnError('CAIRN_BAD_REQUEST', `nests arrays and objects more than ${maxDepth} deep`, 'body');
  }
}

/**
 * Replaces the app's JSON body parser with one that checks the depth first, then parses as
 * fastify's own does (with its protection against `__proto__` keys).
 */
export function registerJsonBodyParser(app: FastifyInstance, maxDepth = MAX_JSON_DEPTH): void {
  const parse = app.getDefaultJsonParser('error', 'ignore');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (req, body, done) => {
    try {
      checkJsonDepth(body as string, maxDepth);
    } catch (err) {
      done(err as Error, undefined);
      return;
    }
    parse(req, body as string, done);
  });
}
