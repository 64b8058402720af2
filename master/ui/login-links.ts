// One-time login links for the dashboard (`cairn ui`): the CLI, holding a credential, asks
// its master for a code; the browser opens `<master>/ui/#login=<code>` and trades the code
// for that credential once. The fragment never leaves the browser (no server log or Referer
// sees it), and the code:
//   - is 32 random bytes, so it cannot be guessed;
//   - is redeemed once: a second try, like an unknown code, answers 404;
//   - lives LINK_TTL_MS (or less, when asked: `ttlMs`), and only in this master's memory (a
//     restart forgets every link); an expired one answers 410 CAIRN_LINK_EXPIRED for a while
//     after (EXPIRED_MEMORY_MS, at most MAX_EXPIRED remembered), so the page can say "expired,
//     run cairn ui again" rather than a bare "no such link";
//   - counts against its principal's MAX_LINKS_PER_PRINCIPAL waiting links, so one principal's
//     runaway script locks out only itself (memory: principals × the limit).
//   POST /api/v1/ui/links   (authenticated) {ttlMs?} → { code, url, expiresAtMs }
//   POST /api/v1/ui/redeem  {code} (no credential: the code is the credential) → { token }

import type { FastifyInstance, FastifyRequest } from 'fastify';
import { createHash, randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import { bearerToken } from '../../shared/authorization.ts';
import { CairnError } from '../../shared/errors.ts';
import { auditLine } from '../auth/http-hooks.ts';
import type { MasterContext } from '../context.ts';
import { REDEEM_ROUTE } from '../auth/open-routes.ts';
import { steadyClock } from '../../shared/steady-clock.ts';

export const LINK_TTL_MS = 60_000;
/** How long an expired code is still known as expired (its hash only); and how many at most. */
export const EXPIRED_MEMORY_MS = 3_600_000;
export const MAX_EXPIRED = 10_000;
/** Links one principal may have waiting at once; more are refused (a runaway script, not a person). */
export const MAX_LINKS_PER_PRINCIPAL = 100;

interface Link {
  token: string;
  principal: string;
  expiresAtMs: number;
}

/** Codes are kept by their hash: a heap dump shows no usable code. */
const keyOf = (code: string) => createHash('sha256').update(code).digest('base64url');

export class LoginLinks {
  private readonly links = new Map<string, Link>();
  /** Waiting links by principal. */
  private readonly waiting = new Map<string, number>();
  /** Hashes of codes that expired unused, with when they expired (oldest first). */
  private readonly expired = new Map<string, number>();

  // Expiry on a steady clock: a wall-clock step neither voids fresh links nor keeps old ones.
  constructor(private readonly now: () => number = steadyClock()) {}

  get size(): number {
    this.sweep();
    return this.links.size;
  }

  create(token: string, principal: string, ttlMs = LINK_TTL_MS): { code: string; expiresAtMs: number } {
    this.sweep();
    const mine = this.waiting.get(principal) ?? 0;
    if (mine >= MAX_LINKS_PER_PRINCIPAL) {
      throw new CairnError('CAIRN_BAD_REQUEST', `too many login links waiting for principal '${principal}' (${MAX_LINKS_PER_PRINCIPAL}, a principal's most); they expire in ${LINK_TTL_MS / 1000} s`);
    }
    const code = randomBytes(32).toString('base64url');
    const expiresAtMs = this.now() + ttlMs;
    this.links.set(keyOf(code), { token, principal, expiresAtMs });
    this.waiting.set(principal, mine + 1);
    return { code, expiresAtMs };
  }

  /** The link's credential, once; 'expired' for a code that expired unused; undefined for an unknown or used code. */
  redeem(code: string): Link | 'expired' | undefined {
    const key = keyOf(code);
    this.sweep();
    if (this.expired.has(key)) return 'expired';
    const link = this.links.get(key);
    if (!link) return undefined;
    this.forget(key, link);
    return link;
  }

  private sweep(): void {
    const now = this.now();
    for (const [k, l] of this.links) {
      if (l.expiresAtMs > now) continue;
      this.forget(k, l);
      this.expired.set(k, l.expiresAtMs);
    }
    for (const [k, at] of this.expired) {
      if (at > now - EXPIRED_MEMORY_MS && this.expired.size <= MAX_EXPIRED) break;
      this.expired.delete(k);
    }
  }

  private forget(key: string, link: Link): void {
    this.links.delete(key);
    const n = (this.waiting.get(link.principal) ?? 1) - 1;
    if (n <= 0) this.waiting.delete(link.principal);
    else this.waiting.set(link.principal, n);
  }
}

/** The `ttlMs` a link was asked for (1 ms up to LINK_TTL_MS; absent: LINK_TTL_MS). */
function linkTtl(body: unknown): number {
  const ttl = (body as { ttlMs?: unknown } | null | undefined)?.ttlMs;
  if (ttl === undefined) return LINK_TTL_MS;
  if (typeof ttl !== 'number' || !Number.isInteger(ttl) || ttl < 1 || ttl > LINK_TTL_MS) {
    throw new CairnError('CAIRN_BAD_REQUEST', `must be a whole number of milliseconds from 1 to ${LINK_TTL_MS}`, 'ttlMs');
  }
  return ttl;
}

/** The base URL the caller reached this master at (what a browser on its machine can open). */
function reachedAt(req: FastifyRequest, ctx: MasterContext): string {
  const host = req.headers.host;
  if (typeof host === 'string' && /^[A-Za-z0-9.\-:[\]]+$/.test(host)) return `${req.protocol}://${host}`;
  return ctx.selfUrl();
}

export function registerLoginLinks(app: FastifyInstance, ctx: MasterContext, links = new LoginLinks(), audit: Logger = ctx.audit): LoginLinks {
  app.post('/api/v1/ui/links', async (req, reply) => {
    const h = req.headers.authorization;
    let token = '';
    if (ctx.auth.enabled) {
      const bearer = bearerToken(h);
      if (bearer === undefined) throw new CairnError('CAIRN_BAD_REQUEST', 'a login link carries a Bearer token: create it with Authorization: Bearer TOKEN', 'Authorization');
      token = bearer;
    }
    const { code, expiresAtMs } = links.create(token, req.principal?.name ?? '', linkTtl(req.body));
    return reply.code(201).header('cache-control', 'no-store').send({ code, url: `${reachedAt(req, ctx)}/ui/#login=${code}`, expiresAtMs });
  });

  app.post(REDEEM_ROUTE, async (req, reply) => {
    const body = req.body as { code?: unknown } | null | undefined;
    const code = body?.code;
    if (typeof code !== 'string' || code.length === 0 || code.length > 200) throw new CairnError('CAIRN_BAD_REQUEST', 'must be the code of a login link', 'code');
    const link = links.redeem(code);
    if (link === 'expired') {
      auditLine(audit, req, { refused: 'CAIRN_LINK_EXPIRED' });
      return reply.code(410).send({ code: 'CAIRN_LINK_EXPIRED', message: `this login link has expired (links last ${LINK_TTL_MS / 1000} s): run cairn ui again for a new one`, field: 'code' });
    }
    if (!link) {
      auditLine(audit, req, { refused: 'CAIRN_UNKNOWN_LINK' });
      return reply.code(404).send({ code: 'CAIRN_UNKNOWN_LINK', message: 'no such login link: it was used already, it expired (they last 60 s), or it was made by another master', field: 'code' });
    }
    auditLine(audit, req, { loginLinkOf: link.principal });
    return reply.header('cache-control', 'no-store').send({ token: link.token });
  });
  return links;
}
