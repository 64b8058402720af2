// Role names, the one grammar every edge checks: `*` (the default role), or `/`-separated
// segments (`team/user` is a child of `team`). The master checks them in scheduler calls,
// quotas and specs; the command line checks them in flags before anything is sent. Pure.

import { CairnError } from '../errors.ts';

const MAX_ROLE_CHARS = 256;
const SEGMENT = /^[a-zA-Z0-9_][a-zA-Z0-9_.-]*$/;

function bad(field: string, message: string): CairnError {
  return new CairnError('CAIRN_BAD_REQUEST', message, field);
}

/** A value as an error message names it when it is not what the field takes. */
export function describeValue(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'a list';
  if (typeof v === 'string') return `the string ${JSON.stringify(v)}`;
  if (typeof v === 'object') return 'an object';
  return String(v);
}

/** Whether `role` is a role name (validRoleName says why not). */
export function isRoleName(role: string): boolean {
  if (role === '*') return true;
  if (role === '' || role.length > MAX_ROLE_CHARS) return false;
  return role.split('/').every((segment) => SEGMENT.test(segment));
}

/**
 * Checks a role name: `*`, or `/`-separated segments each of letters, digits, `_`, `.` and
 * `-` not starting with `.` or `-`, at most 256 characters in all. Throws a CairnError naming `field`.
 */
export function validRoleName(role: string, field = 'role'): void {
  if (typeof role !== 'string') throw bad(field, `must be a role name, not ${describeValue(role)}`);
  if (role === '*') return;
  if (role === '') throw bad(field, 'must not be empty');
  if (role.length > MAX_ROLE_CHARS) throw bad(field, `is ${role.length} characters; a role name has at most ${MAX_ROLE_CHARS}`);
  for (const segment of role.split('/')) {
    if (segment === '') throw bad(field, `'${role}' has an empty segment: roles look like 'team' or 'team/user'`);
    if (segment === '.' || segment === '..' || !SEGMENT.test(segment)) {
      throw bad(field, `'${role}' has a bad segment '${segment}': use letters, digits, '_', '.' and '-', not starting with '.' or '-'`);
    }
  }
}
