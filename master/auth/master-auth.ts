// Authentication and authorization of a master's callers: who is asking (a principal from
// its credentials file), whether it may (ACLs, plus the rules no ACL can lift: a framework
// is acted on only by its own principal, an agent only speaks for itself), and the audit
// trail of every change with its principal.
//
// `MasterAuth.off()` exists for embedding a master in a program of one's own (and tests of
// parts that are not about security); `cairn master` and `cairn up` always authenticate.

import { randomBytes, timingSafeEqual } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { bearerToken } from '../../shared/authorization.ts';
import { CairnError } from '../../shared/errors.ts';
import { OPENABLE, type Openable } from '../../shared/openable.ts';
import { Acls, type AclAction } from './acls.ts';
import type { Credentials, Principal, PrincipalKind } from './credentials.ts';
import { BUILTIN_PRINCIPAL } from '../builtin-principal.ts';

/**
 * The principal of an unauthenticated scheduler call under `--open scheduler` (Mesos with
 * `--authenticate_http_frameworks=false`): the ACLs govern it by this name like any other.
 */
export const ANONYMOUS_PRINCIPAL = 'anonymous';
const ANONYMOUS: Principal = { name: ANONYMOUS_PRINCIPAL, kind: 'user' };

/**
 * Authorization headers already checked, and whose they are: a framework sends the same
 * header with every call, and parsing and hashing it again is most of what authentication
 * costs a request. Only valid headers are kept, so guessing fills nothing; bounded.
 */
const HEADER_CACHE_ENTRIES = 4096;

/** The principal of a master that authenticates no one: every check passes. */
const NOBODY: Principal = { name: '', kind: 'user' };

export interface MasterAuthOptions {
  credentials: Credentials;
  /** Left out: every authenticated user may do everything (Mesos' default without ACLs). */
  acls?: Acls;
  /** Endpoints answered without a credential. */
  open?: readonly Openable[];
}

export class MasterAuth {
  private readonly checked = new Map<string, Principal>();
  /**
   * The token of this process's built-in frameworks: random at every start and never
   * written anywhere, so only code in this master process holds it.
   */
  readonly builtinToken = randomBytes(32).toString('base64url');

  private constructor(
    readonly enabled: boolean,
    private readonly credentials: Credentials | undefined,
    private readonly acls: Acls,
    readonly open: ReadonlySet<Openable>,
  ) {}

  static on(opts: MasterAuthOptions): MasterAuth {
    if (opts.credentials.size === 0) throw new CairnError('CAIRN_BAD_CREDENTIALS', 'the credentials file lists no principal', 'credentials');
    // Otherwise a caller without a credential would act for that principal's frameworks.
    if (opts.open?.includes('scheduler') && opts.credentials.has(ANONYMOUS_PRINCIPAL)) {
      throw new CairnError('CAIRN_BAD_CREDENTIALS', `the credentials file lists principal '${ANONYMOUS_PRINCIPAL}', which --open scheduler gives to every unauthenticated scheduler call: rename it`, 'credentials');
    }
    return new MasterAuth(true, opts.credentials, opts.acls ?? Acls.permissiveDefault(), new Set(opts.open ?? []));
  }

  static off(): MasterAuth {
    return new MasterAuth(false, undefined, Acls.permissiveDefault(), new Set(OPENABLE));
  }

  /**
   * Who sent these headers: `Authorization: Bearer SECRET`, `token=SECRET` (DC/OS) or
   * `Basic base64(principal:secret)`. Throws CAIRN_UNAUTHENTICATED (401) without one or with
   * a wrong one — but for `anonymousIfNone`: then no header at all is ANONYMOUS (a wrong one
   * is still refused).
   */
  authenticate(headers: IncomingHttpHeaders, kind: PrincipalKind | 'any' = 'user', anonymousIfNone = false): Principal {
    if (!this.enabled) return kind === 'agent' ? { name: '', kind: 'agent' } : NOBODY;
    const h = headers.authorization;
    if (typeof h !== 'string' || h.length === 0) {
      if (anonymousIfNone && kind !== 'agent') return ANONYMOUS;
      throw new CairnError('CAIRN_UNAUTHENTICATED', 'this master requires a credential: send Authorization: Bearer TOKEN (the CLI finds it in CAIRN_TOKEN or ~/.config/cairn/credentials, which `cairn up` writes)', 'Authorization');
    }
    let p = this.checked.get(h);
    if (p === undefined) {
      p = this.parse(h);
      if (!p) throw new CairnError('CAIRN_UNAUTHENTICATED', 'the credential is not valid on this master', 'Authorization');
      if (this.checked.size >= HEADER_CACHE_ENTRIES) this.checked.clear();
      this.checked.set(h, p);
    }
    if (kind !== 'any' && p.kind !== kind) {
      throw new CairnError('CAIRN_FORBIDDEN', kind === 'agent'
        ? `principal '${p.name}' is not an agent's: only a credential marked "agent": true registers agents`
        : `principal '${p.name}' is an agent's: it may register its agent and do nothing else`, 'Authorization');
    }
    return p;
  }

  /** The principal an Authorization header proves, if any. */
  private parse(h: string): Principal | undefined {
    const token = bearerToken(h);
    if (token !== undefined) {
      return sameSecret(token, this.builtinToken) ? { name: BUILTIN_PRINCIPAL, kind: 'user', internal: true } : this.credentials!.bySecretValue(token);
    }
    const m = /^Basic\s+(\S+)\s*$/i.exec(h);
    if (!m) return undefined;
    const decoded = Buffer.from(m[1]!, 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    return colon > 0 ? this.credentials!.check(decoded.slice(0, colon), decoded.slice(colon + 1)) : undefined;
  }

  /** Throws CAIRN_FORBIDDEN (403) unless the ACLs let `principal` do `action` on `object`. */
  require(principal: Principal, action: AclAction, object: string, field?: string): void {
    if (!this.enabled || principal.internal) return;
    this.acls.require(action, principal.name, object, field);
  }

  allows(principal: Principal, action: AclAction, object: string): boolean {
    return !this.enabled || principal.internal === true || this.acls.decide(action, principal.name, object).allowed;
  }

  /**
   * May `principal` act (view, kill, tear down) on what a framework of `frameworkPrincipal`
   * owns? Its own principal always may; others as the ACLs say.
   */
  mayActOn(principal: Principal, action: 'view_tasks' | 'kill_tasks' | 'teardown_frameworks', frameworkPrincipal: string): boolean {
    if (!this.enabled || principal.internal || principal.name === frameworkPrincipal) return true;
    return this.acls.decide(action, principal.name, frameworkPrincipal).allowed;
  }

  /** The framework's own principal only: resubscribing and every call on its behalf. */
  requireOwner(principal: Principal, frameworkId: string, frameworkPrincipal: string, field: string): void {
    if (!this.enabled || principal.name === frameworkPrincipal) return;
    throw new CairnError('CAIRN_FORBIDDEN', `framework ${frameworkId} belongs to principal '${frameworkPrincipal}', not '${principal.name}'`, field);
  }

  /** The secret the master presents to an agent's API: that agent's own. */
  agentSecret(agentPrincipal: string | undefined): string | undefined {
    return agentPrincipal ? this.credentials?.agentSecret(agentPrincipal) : undefined;
  }
}

function sameSecret(given: string, expected: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}
