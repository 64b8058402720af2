// The principals a master knows, read from its credentials file (Mesos' `--credentials`
// shape, with one addition: `agent: true` marks an agent's credential). A secret is
// presented as `Authorization: Bearer SECRET`, as DC/OS's `token=SECRET`, or as HTTP Basic `principal:secret`.
//
// An agent's principal may register an agent and do nothing else; a user's principal may
// never register an agent. Keeping the two kinds apart is what stops a leaked user token
// from turning into a fake agent that receives other users' tasks.

import { createHash, timingSafeEqual } from 'node:crypto';
import { chmodSync, existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { CairnError } from '../../shared/errors.ts';

export type PrincipalKind = 'user' | 'agent';

export interface Principal {
  readonly name: string;
  readonly kind: PrincipalKind;
  /** The master's own built-in frameworks (master-auth.ts): no ACL applies to them. */
  readonly internal?: true;
}

/** Longest principal name and secret taken; longer is a mistake or an attack. */
const MAX_PRINCIPAL_CHARS = 256;
const MAX_SECRET_CHARS = 4096;
/** Shortest secret taken: a guessable one is no authentication. */
const MIN_SECRET_CHARS = 16;
const PRINCIPAL_RE = /^[A-Za-z0-9_][A-Za-z0-9._@:/-]*$/;

function digest(secret: string): string {
  return createHash('sha256').update(secret).digest('hex');
}

export class Credentials {
  /** sha256(secret) -> principal: a lookup by digest leaks nothing of the secret by its timing. */
  private readonly bySecret = new Map<string, Principal>();
  private readonly secrets = new Map<string, string>();

  constructor(entries: readonly { principal: string; secret: string; agent?: boolean }[]) {
    for (const e of entries) {
      const d = digest(e.secret);
      if (this.secrets.has(e.principal)) throw new CairnError('CAIRN_BAD_CREDENTIALS', `principal '${e.principal}' is listed twice`, 'credentials');
      if (this.bySecret.has(d)) throw new CairnError('CAIRN_BAD_CREDENTIALS', `principal '${e.principal}' has the same secret as '${this.bySecret.get(d)!.name}'`, 'credentials');
      this.bySecret.set(d, { name: e.principal, kind: e.agent ? 'agent' : 'user' });
      this.secrets.set(e.principal, e.secret);
    }
  }

  get size(): number {
    return this.secrets.size;
  }

  has(principal: string): boolean {
    return this.secrets.has(principal);
  }

  /** The principal whose secret this is, if any. */
  bySecretValue(secret: string): Principal | undefined {
    return this.bySecret.get(digest(secret));
  }

  /** The principal named, if the secret given is its own. */
  check(principal: string, secret: string): Principal | undefined {
    const known = this.secrets.get(principal);
    if (known === undefined) return undefined;
    const a = Buffer.from(digest(known), 'hex');
    const b = Buffer.from(digest(secret), 'hex');
    return timingSafeEqual(a, b) ? this.bySecret.get(digest(known)) : undefined;
  }

  /** The first principal of this kind in the file, with its secret. */
  first(kind: PrincipalKind): { principal: string; secret: string } | undefined {
    for (const [principal, secret] of this.secrets) {
      if (this.bySecret.get(digest(secret))?.kind === kind) return { principal, secret };
    }
    return undefined;
  }

  /** An agent principal's secret: the master presents it when it calls that agent's API. */
  agentSecret(principal: string): string | undefined {
    const s = this.secrets.get(principal);
    return s !== undefined && this.bySecret.get(digest(s))?.kind === 'agent' ? s : undefined;
  }
}

/** Parses a credentials file's text; every error names the entry and field at fault. */
export function parseCredentials(text: string, source = 'credentials'): Credentials {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (err) {
    throw new CairnError('CAIRN_BAD_CREDENTIALS', `${source} is not JSON: ${(err as Error).message}`, source);
  }
  const list = (doc as { credentials?: unknown } | null)?.credentials;
  if (!Array.isArray(list)) throw new CairnError('CAIRN_BAD_CREDENTIALS', `${source} must be an object with a "credentials" array`, `${source}.credentials`);
  const entries = list.map((e: unknown, i) => {
    const field = `${source}.credentials[${i}]`;
    if (typeof e !== 'object' || e === null) throw new CairnError('CAIRN_BAD_CREDENTIALS', 'must be an object', field);
    const { principal, secret, agent, ...rest } = e as Record<string, unknown>;
    const unknown = Object.keys(rest);
    if (unknown.length > 0) throw new CairnError('CAIRN_BAD_CREDENTIALS', `unknown field '${unknown[0]}' (known: principal, secret, agent)`, `${field}.${unknown[0]}`);
    if (typeof principal !== 'string' || principal.length > MAX_PRINCIPAL_CHARS || !PRINCIPAL_RE.test(principal)) {
      throw new CairnError('CAIRN_BAD_CREDENTIALS', `must be a name of letters, digits and ._@:/- (at most ${MAX_PRINCIPAL_CHARS})`, `${field}.principal`);
    }
    if (typeof secret !== 'string' || secret.length < MIN_SECRET_CHARS || secret.length > MAX_SECRET_CHARS || /\s/.test(secret)) {
      throw new CairnError('CAIRN_BAD_CREDENTIALS', `must be ${MIN_SECRET_CHARS} to ${MAX_SECRET_CHARS} characters without spaces`, `${field}.secret`);
    }
    if (agent !== undefined && typeof agent !== 'boolean') throw new CairnError('CAIRN_BAD_CREDENTIALS', 'must be true or false', `${field}.agent`);
    return { principal, secret, agent: agent === true };
  });
  return new Credentials(entries);
}

/** Reads a credentials file; refuses one that others than its owner may read. */
export function loadCredentials(path: string): Credentials {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new CairnError('CAIRN_BAD_FLAG', `cannot read ${path}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`, 'credentials');
  }
  if ((statSync(path).mode & 0o077) !== 0) {
    throw new CairnError('CAIRN_BAD_FLAG', `${path} may be read by others than its owner; chmod 600 it`, 'credentials');
  }
  return parseCredentials(text, path);
}

export interface BootstrapCredentials {
  path: string;
  credentials: Credentials;
  admin: { principal: string; secret: string };
  agent: { principal: string; secret: string };
  created: boolean;
}

/**
 * The credentials of a master started without a file of its own: an `admin` principal and
 * an `agent` principal, made once with fresh secrets in the data dir (mode 0600) and read
 * back on every later start, so the embedded default needs no setup and is never open.
 */
export function bootstrapCredentials(path: string, randomSecret: () => string): BootstrapCredentials {
  const created = !existsSync(path);
  if (created) {
    const doc = {
      credentials: [
        { principal: 'admin', secret: randomSecret() },
        { principal: 'agent', secret: randomSecret(), agent: true },
      ],
    };
    writeFileSync(path, `${JSON.stringify(doc, null, 2)}\n`, { mode: 0o600, flag: 'wx' });
    chmodSync(path, 0o600);
  }
  // Read back through the checks every credentials file gets: a file of the user's own
  // (`cairn up --credentials`) is refused with the entry and field at fault.
  const credentials = loadCredentials(path);
  const admin = credentials.first('user');
  const agent = credentials.first('agent');
  if (!admin || !agent) throw new CairnError('CAIRN_BAD_CREDENTIALS', `${path} lacks a user or an agent principal`, 'credentials');
  return { path, credentials, admin, agent, created };
}
