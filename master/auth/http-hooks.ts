// The master's HTTP front door: refuses cross-site requests (a browser on another origin
// may not change anything here, and CORS stays closed), authenticates every request but
// `/health` and what the operator opened, and writes one audit line per change with its
// principal. Routes read the caller as `req.principal`.

import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { IncomingMessage } from 'node:http';
import type { Logger } from 'pino';
import { CairnError } from '../../shared/errors.ts';
import { toHttpError } from '../api/http-errors.ts';
import type { Principal } from './credentials.ts';
import type { MasterAuth } from './master-auth.ts';

declare module 'fastify' {
  interface FastifyRequest {
    principal: Principal;
  }
}

/** Answered to anyone: load balancers and `cairn up` probe it before they have a token. */
const ALWAYS_OPEN = new Set(['/health']);

/**
 * A request a browser sent from another site: its Origin names another host, or its
 * Sec-Fetch-Site says cross-site. Tools (curl, the CLI, frameworks) send neither.
 */
export function crossSiteReason(req: IncomingMessage): string | undefined {
  const site = req.headers['sec-fetch-site'];
  if (site === 'cross-site' || site === 'same-site') return `Sec-Fetch-Site: ${site}`;
  const origin = req.headers.origin;
  if (origin === undefined) return undefined;
  let host: string;
  try {
    host = new URL(origin).host;
  } catch {
    return `Origin '${origin}'`;
  }
  return host === req.headers.host ? undefined : `Origin '${origin}' is not this master`;
}

function refuse(reply: FastifyReply, err: CairnError): FastifyReply {
  const { status, body } = toHttpError(err);
  return reply.code(status).send(body);
}

function isOpen(auth: MasterAuth, path: string): boolean {
  if (ALWAYS_OPEN.has(path)) return true;
  if (path === '/metrics' || path === '/metrics/snapshot') return auth.open.has('metrics');
  if (path.startsWith('/v1/')) return auth.open.has('dns-api');
  return false;
}

/** One line per change, with who made it; scheduler calls are written by their route. */
export function auditLine(log: Logger, req: FastifyRequest, fields: Record<string, unknown>): void {
  log.info({ principal: req.principal?.name ?? '', method: req.method, path: req.url.split('?')[0], ip: req.ip, ...fields }, 'audit');
}

export function registerAuthHooks(app: FastifyInstance, auth: MasterAuth, audit: Logger): void {
  app.decorateRequest('principal', null as unknown as Principal);
  app.addHook('onRequest', async (req, reply) => {
    const crossSite = crossSiteReason(req.raw);
    if (crossSite !== undefined || req.method === 'OPTIONS') {
      auditLine(audit, req, { refused: 'cross-site', why: crossSite ?? 'CORS preflight' });
      return refuse(reply, new CairnError('CAIRN_CROSS_SITE', `cross-site requests are refused (${crossSite ?? 'CORS preflight'})`, 'Origin'));
    }
    const path = req.url.split('?')[0]!;
    if (isOpen(auth, path)) return;
    try {
      // Agents ask a master for the gossip members to join through; nothing else is theirs.
      req.principal = auth.authenticate(req.headers, req.method === 'GET' && path === '/api/v1/members' ? 'any' : 'user');
    } catch (err) {
      if (req.method !== 'GET' && req.method !== 'HEAD') auditLine(audit, req, { refused: (err as CairnError).code });
      return refuse(reply, err as CairnError);
    }
  });
  app.addHook('onResponse', async (req, reply) => {
    if (req.method === 'GET' || req.method === 'HEAD' || !req.principal) return;
    if (req.routeOptions.url === '/api/v1/scheduler') return;
    auditLine(audit, req, { status: reply.statusCode });
  });
}

/** The same checks for a WebSocket upgrade (agents): answers 401/403 on the raw socket. */
export function refuseUpgrade(socket: { write(s: string): unknown; destroy(): void }, err: CairnError): void {
  const { status, body } = toHttpError(err);
  const text = JSON.stringify(body);
  socket.write(`HTTP/1.1 ${status} ${status === 401 ? 'Unauthorized' : 'Forbidden'}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(text)}\r\nconnection: close\r\n\r\n${text}`);
  socket.destroy();
}
