// The body of a drain request (`POST /api/v1/agents/:id/drain`, `cairn agent drain`):
// checked at the edge, naming the field at fault.

import { CairnError } from './errors.ts';

/** The longest deadline accepted: a drain is for maintenance, not a way of life. */
export const MAX_DRAIN_DEADLINE_MS = 7 * 24 * 3600 * 1000;

/**
 * Checks a drain request body `{ deadlineMs? }` (milliseconds from now; absent: no
 * deadline) and returns the absolute deadline. Throws CAIRN_BAD_REQUEST naming the field.
 */
export function parseDrainRequest(body: unknown, nowMs: number): { deadlineAtMs: number | null } {
  if (body === undefined || body === null || body === '') return { deadlineAtMs: null };
  if (typeof body !== 'object' || Array.isArray(body)) throw new CairnError('CAIRN_BAD_REQUEST', 'the body must be a JSON object like {"deadlineMs": 60000}', 'body');
  const extra = Object.keys(body).filter((k) => k !== 'deadlineMs');
  if (extra.length > 0) throw new CairnError('CAIRN_BAD_REQUEST', `unknown field '${extra[0]}'`, extra[0]);
  const d = (body as { deadlineMs?: unknown }).deadlineMs;
  if (d === undefined || d === null) return { deadlineAtMs: null };
  if (typeof d !== 'number' || !Number.isInteger(d) || d < 0 || d > MAX_DRAIN_DEADLINE_MS) {
    throw new CairnError('CAIRN_BAD_REQUEST', `must be a whole number of milliseconds from 0 to ${MAX_DRAIN_DEADLINE_MS}, got ${JSON.stringify(d)}`, 'deadlineMs');
  }
  return { deadlineAtMs: nowMs + d };
}

