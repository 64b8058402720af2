// Maps errors to HTTP answers: a CairnError is the client's fault (4xx with its code,
// message and field); anything else is ours (500).

import type { FastifyReply } from 'fastify';
import { CairnError, type CairnErrorCode } from './errors.ts';

const STATUS: Partial<Record<CairnErrorCode, number>> = {
  CAIRN_UNKNOWN_FRAMEWORK: 403,
  CAIRN_UNAUTHENTICATED: 401,
  CAIRN_FORBIDDEN: 403,
  CAIRN_CROSS_SITE: 403,
  // As Kubernetes answers a create past a ResourceQuota: forbidden, not throttled.
  CAIRN_QUOTA_EXCEEDED: 403,
  CAIRN_UNKNOWN_TASK: 404,
  CAIRN_UNKNOWN_AGENT: 404,
  CAIRN_UNKNOWN_QUOTA: 404,
  CAIRN_UNKNOWN_SECRET: 404,
  CAIRN_AGENT_UNAVAILABLE: 503,
  CAIRN_NOT_LEADER: 503,
  // Membership changes the group cannot take as it is: valid requests, wrong moment.
  CAIRN_RAFT_BAD_CHANGE: 409,
  CAIRN_RAFT_CHANGE_PENDING: 409,
  CAIRN_RAFT_NO_QUORUM: 409,
  CAIRN_RAFT_LEARNER_BEHIND: 409,
  CAIRN_RAFT_TRANSFERRING: 503,
  CAIRN_NOT_READY: 503,
  // WebDAV's Insufficient Storage (RFC 4918): the server cannot store what the request needs.
  CAIRN_STORAGE_FULL: 507,
  CAIRN_RAFT_OFF: 404,
  // Well formed, but no agent of this cluster can ever hold it.
  CAIRN_UNSCHEDULABLE: 422,
};

export interface ErrorBody {
  code: string;
  message: string;
  field?: string;
}

export function toHttpError(err: unknown): { status: number; body: ErrorBody } {
  if (err instanceof CairnError) {
    const body: ErrorBody = { code: err.code, message: err.message };
    if (err.field !== undefined) body.field = err.field;
    return { status: STATUS[err.code] ?? 400, body };
  }
  const e = err as { statusCode?: number; message?: string; code?: string };
  if (typeof e.statusCode === 'number' && e.statusCode >= 400 && e.statusCode < 500) {
    // Fastify's own client errors (malformed JSON, wrong content type, body too large).
    return { status: e.statusCode, body: { code: 'CAIRN_BAD_REQUEST', message: `body: ${e.message ?? 'bad request'}`, field: 'body' } };
  }
  return { status: 500, body: { code: 'CAIRN_INTERNAL', message: (err as Error)?.message ?? String(err) } };
}

/** Answers a request with the error's status and body. */
export function sendHttpError(reply: FastifyReply, err: unknown): FastifyReply {
  const { status, body } = toHttpError(err);
  return reply.code(status).send(body);
}
