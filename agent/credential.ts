// The agent's credential: the principal and secret it authenticates to masters with
// (`--credential FILE`), and the one bearer its own HTTP API accepts. Masters know every
// agent's secret from their credentials file and present it when they read logs or usage,
// so only the masters (and whoever the operator gave the secret) read this agent's sandboxes.

import { timingSafeEqual, createHash } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import type { IncomingHttpHeaders } from 'node:http';
import { bearerToken } from '../shared/authorization.ts';
import { CairnError } from '../shared/errors.ts';

export interface AgentCredential {
  readonly principal: string;
  readonly secret: string;
}

/**
 * Reads `{"principal": "...", "secret": "..."}` (Mesos' --credential shape), or a master's
 * credentials file, taking its one entry marked `"agent": true`.
 */
export function loadAgentCredential(path: string): AgentCredential {
  let doc: unknown;
  try {
    doc = JSON.parse(readFileSync(path, 'utf8'));
  } catch (err) {
    throw new CairnError('CAIRN_BAD_FLAG', `cannot read ${path}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`, 'credential');
  }
  if ((statSync(path).mode & 0o077) !== 0) throw new CairnError('CAIRN_BAD_FLAG', `${path} may be read by others than its owner; chmod 600 it`, 'credential');
  const o = doc as { principal?: unknown; secret?: unknown; credentials?: unknown };
  if (Array.isArray(o.credentials)) {
    const agents = o.credentials.filter((c: { agent?: unknown }) => c?.agent === true);
    if (agents.length !== 1) throw new CairnError('CAIRN_BAD_FLAG', `${path} must hold exactly one entry marked "agent": true (it holds ${agents.length})`, 'credential');
    return checked(agents[0], path);
  }
  return checked(o, path);
}

function checked(o: { principal?: unknown; secret?: unknown }, path: string): AgentCredential {
  if (typeof o.principal !== 'string' || o.principal === '') throw new CairnError('CAIRN_BAD_FLAG', `${path}: principal must be a non-empty string`, 'credential.principal');
  if (typeof o.secret !== 'string' || o.secret.length < 16) throw new CairnError('CAIRN_BAD_FLAG', `${path}: secret must be a string of at least 16 characters`, 'credential.secret');
  return { principal: o.principal, secret: o.secret };
}

/** The header the agent sends when it dials a master. */
export function authorizationHeader(c: AgentCredential): string {
  return `Basic ${Buffer.from(`${c.principal}:${c.secret}`).toString('base64')}`;
}

const digest = (s: string) => createHash('sha256').update(s).digest();

/** Does this request bear the agent's own secret (`Authorization: Bearer SECRET` or `token=SECRET`)? */
export function bearsSecret(headers: IncomingHttpHeaders, c: AgentCredential): boolean {
  const token = bearerToken(headers.authorization);
  return token !== undefined && timingSafeEqual(digest(token), digest(c.secret));
}
