// DNS options in, defaults filled, a checked configuration out. Errors name the option.

import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { CairnError } from '../../shared/errors.ts';
import { canonicalDomain } from './names.ts';
import { parseResolvConf, parseUpstream, type Upstream } from '../../shared/dns/upstream.ts';

export { parseResolvConf, parseUpstream, type Upstream };

export interface DnsOptions {
  /** The zone (default `cairn`). */
  domain?: string;
  /** 0: any free port (the same for UDP and TCP). Default: 53 when root, else 8053. */
  port?: number;
  host?: string;
  /** `ip` or `ip:port` (`[v6]:port`); default: the nameservers of /etc/resolv.conf. */
  resolvers?: string[];
  /** The leading master's address and HTTP port (leader.<domain>, _leader._tcp.<domain>). */
  leaderIp?: string;
  leaderPort?: number;
  /** This server's address as published (ns1.<domain>); default: leaderIp. */
  nsIp?: string;
  ttlS?: number;
  negativeTtlS?: number;
  forwardTimeoutMs?: number;
  /** Where the default resolvers come from (tests point it elsewhere). */
  resolvConfPath?: string;
}

export interface DnsConfig {
  domain: string;
  port: number;
  host: string;
  upstreams: Upstream[];
  leaderIp: string;
  leaderPort: number;
  nsIp: string;
  ttlS: number;
  negativeTtlS: number;
  forwardTimeoutMs: number;
}

export const DEFAULT_DOMAIN = 'cairn';
/** The unprivileged default, as mesos-dns' docs and dnsmasq examples commonly use. */
export const UNPRIVILEGED_DNS_PORT = 8053;

export const DNS_DEFAULTS = {
  // Records change the moment the registry does; a short TTL lets resolvers' caches follow.
  ttlS: 5,
  // A name asked for just before its task runs must not stay "missing" in caches for long.
  negativeTtlS: 1,
  // Two seconds per upstream: well under a stub resolver's own 5 s retry.
  forwardTimeoutMs: 2_000,
};

/** 53 for root (the port resolvers expect), 8053 otherwise. */
export function defaultDnsPort(): number {
  return process.getuid?.() === 0 ? 53 : UNPRIVILEGED_DNS_PORT;
}

function bad(field: string, message: string): CairnError {
  return new CairnError('CAIRN_BAD_FLAG', message, field);
}

function positive(value: number, field: string, min = 1): number {
  if (!Number.isInteger(value) || value < min) throw bad(field, `must be a whole number of at least ${min}, got ${value}`);
  return value;
}

export function compileDnsConfig(opts: DnsOptions): DnsConfig {
  const domain = canonicalDomain(opts.domain ?? DEFAULT_DOMAIN);
  if (domain === undefined) throw bad('domain', `'${opts.domain}' is not a domain name (letters, digits and '-' in dot-separated labels)`);
  const port = opts.port ?? defaultDnsPort();
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw bad('dnsPort', `must be a port number, got ${port}`);
  const host = opts.host ?? '0.0.0.0';
  if (isIP(host) === 0) throw bad('dnsHost', `'${host}' is not an IP address`);
  let upstreams: Upstream[];
  if (opts.resolvers !== undefined) {
    upstreams = opts.resolvers.filter((r) => r.trim() !== '').map((r) => parseUpstream(r));
  } else {
    try {
      upstreams = parseResolvConf(readFileSync(opts.resolvConfPath ?? '/etc/resolv.conf', 'utf8'));
    } catch {
      upstreams = [];
    }
  }
  const leaderIp = opts.leaderIp ?? '127.0.0.1';
  if (isIP(leaderIp) === 0) throw bad('advertiseIp', `'${leaderIp}' is not an IP address`);
  const nsIp = opts.nsIp ?? leaderIp;
  return {
    domain,
    port,
    host,
    upstreams,
    leaderIp,
    leaderPort: opts.leaderPort ?? 5050,
    nsIp,
    ttlS: positive(opts.ttlS ?? DNS_DEFAULTS.ttlS, 'dnsTtlS', 0),
    negativeTtlS: positive(opts.negativeTtlS ?? DNS_DEFAULTS.negativeTtlS, 'dnsNegativeTtlS', 0),
    forwardTimeoutMs: positive(opts.forwardTimeoutMs ?? DNS_DEFAULTS.forwardTimeoutMs, 'dnsForwardTimeoutMs'),
  };
}
