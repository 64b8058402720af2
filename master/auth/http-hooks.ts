// The master's HTTP front door: refuses cross-site requests (a browser on another origin
// may not change anything here, and CORS stays closed) — except from the other masters of this
// master's own replication group, whose dashboard page falls back to this master when the one
// that served it dies (CORS for exactly their origins, never with credentials: the token
// travels in the Authorization header, never in a cookie) —, authenticates every request but
// `/health`, what the operator opened (`--open`; an open scheduler API takes callers without a
// credential as `anonymous`) and the dashboard's open routes (its static files and
// login-link redemption: open-routes.ts), and writes one audit line per change with its
// principal. Routes read the caller as `req.principal`.

import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { IncomingMessage } from 'node:http';
import type { Logger } from 'pino';
import { CairnError } from '../../shared/errors.ts';
import { toHttpError } from '../../shared/http-errors.ts';
import type { Principal } from './credentials.ts';
import type { MasterAuth } from './master-auth.ts';
import { REDEEM_ROUTE, STATIC_UI_ROUTES } from './open-routes.ts';

declare module 'fastify' {
  interface FastifyRequest {
    principal: Principal;
  }
}

const SCHEDULER_ROUTE = '/api/v1/scheduler';

/** Answered to anyone: load balancers and `cairn up` probe it before they have a token. */
const ALWAYS_OPEN = new Set(['/health']);

/**
 * The dashboard's routes that need no token, by the route the request was matched to (not
 * its raw path, which could be spelt to look like one): its static files (no data in them)
 * and the redemption of a one-time login link (the code is the credential).
 */
function isOpenUiRoute(req: FastifyRequest): boolean {
  const route = req.routeOptions.url;
  if (route === undefined) return false;
  return isStaticUi(req) || (req.method === 'POST' && route === REDEEM_ROUTE);
}

/** The dashboard's page and files: no data, so a link from another site may open them (never framed: static-files.ts). */
function isStaticUi(req: FastifyRequest): boolean {
  const route = req.routeOptions.url;
  return (req.method === 'GET' || req.method === 'HEAD') && route !== undefined && STATIC_UI_ROUTES.has(route);
}

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

/** What a preflight from a member's origin may ask for. */
const CORS_METHODS = 'GET, POST, PUT, PATCH, DELETE';
const CORS_HEADERS = 'authorization, content-type';
const CORS_MAX_AGE_S = '600';

function originOf(url: string): string | undefined {
  try {
    const o = new URL(url).origin;
    return o === 'null' ? undefined : o;
  } catch {
    return undefined;
  }
}

/**
 * The request's Origin when it is another master of this group (its URL's scheme, host and
 * port exactly), not this master itself; undefined otherwise.
 */
export function groupMemberOrigin(req: IncomingMessage, groupUrls: readonly string[]): string | undefined {
  const origin = req.headers.origin;
  if (origin === undefined || groupUrls.length === 0) return undefined;
  const o = originOf(origin);
  if (o === undefined || o !== origin.replace(/\/$/, '')) return undefined;
  if (new URL(o).host === req.headers.host) return undefined;
  for (const url of groupUrls) if (url !== '' && originOf(url) === o) return o;
  return undefined;
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

/**
 * A scheduler call under `--open scheduler`: without a credential its caller is `anonymous`
 * (by the route matched, not the raw path). Only the scheduler API: reads stay closed.
 */
function isOpenScheduler(auth: MasterAuth, req: FastifyRequest): boolean {
  return auth.open.has('scheduler') && req.method === 'POST' && req.routeOptions.url === SCHEDULER_ROUTE;
}

/** One line per change, with who made it; scheduler calls are written by their route. */
export function auditLine(log: Logger, req: FastifyRequest, fields: Record<string, unknown>): void {
  log.info({ principal: req.principal?.name ?? '', method: req.method, path: req.url.split('?')[0], ip: req.ip, ...fields }, 'audit');
}

/**
 * `groupUrls` names the masters of this master's replication group (the Raft members' URLs):
 * their origins alone get CORS.
 */
export function registerAuthHooks(app: FastifyInstance, auth: MasterAuth, audit: Logger, groupUrls: () => readonly string[] = () => []): void {
  app.decorateRequest('principal', null as unknown as Principal);
  app.addHook('onRequest', async (req, reply) => {
    const member = req.headers.origin === undefined ? undefined : groupMemberOrigin(req.raw, groupUrls());
    if (member !== undefined) {
      // Set on the raw response so that hijacked answers (the event stream, followed logs) carry them too.
      reply.raw.setHeader('access-control-allow-origin', member);
      reply.raw.setHeader('vary', 'Origin');
      if (req.method === 'OPTIONS') {
        return reply
          .code(204)
          .header('access-control-allow-methods', CORS_METHODS)
          .header('access-control-allow-headers', CORS_HEADERS)
          .header('access-control-max-age', CORS_MAX_AGE_S)
          .send();
      }
    }
    const crossSite = isStaticUi(req) || member !== undefined ? undefined : crossSiteReason(req.raw);
    if (crossSite !== undefined || req.method === 'OPTIONS') {
      auditLine(audit, req, { refused: 'cross-site', why: crossSite ?? 'CORS preflight' });
      return refuse(reply, new CairnError('CAIRN_CROSS_SITE', `cross-site requests are refused (${crossSite ?? 'CORS preflight'})`, 'Origin'));
    }
    const path = req.url.split('?')[0]!;
    if (isOpen(auth, path) || isOpenUiRoute(req)) return;
    try {
      // Agents ask a master for the gossip members to join through; nothing else is theirs.
      req.principal = auth.authenticate(req.headers, req.method === 'GET' && path === '/api/v1/members' ? 'any' : 'user', isOpenScheduler(auth, req));
    } catch (err) {
      if (req.method !== 'GET' && req.method !== 'HEAD') auditLine(audit, req, { refused: (err as CairnError).code });
      return refuse(reply, err as CairnError);
    }
  });
  app.addHook('onResponse', async (req, reply) => {
    if (req.method === 'GET' || req.method === 'HEAD' || !req.principal) return;
    if (req.routeOptions.url === SCHEDULER_ROUTE) return;
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
