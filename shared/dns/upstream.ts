// Resolvers given by address (`ip`, `ip:port`, `[v6]:port`) and what a resolv.conf says: the
// masters' DNS forwards to upstreams parsed here, and an agent's task resolver forwards both
// to the masters and to the host's own upstreams.

import { isIP } from 'node:net';
import { CairnError } from '../errors.ts';

export interface Upstream {
  /** An IP literal (IPv6 in canonical form), as replies' source addresses are reported. */
  host: string;
  port: number;
  family: 4 | 6;
}

/** `ip`, `ip:port` or `[v6]:port` → an upstream; throws naming `field`. */
export function parseUpstream(text: string, field = 'dnsResolvers'): Upstream {
  const t = text.trim();
  let host = t;
  let port = 53;
  const bracketed = /^\[([^\]]+)\](?::(\d+))?$/.exec(t);
  if (bracketed) {
    host = bracketed[1];
    if (bracketed[2] !== undefined) port = Number(bracketed[2]);
  } else if (/^[^:]+:\d+$/.test(t)) {
    const i = t.lastIndexOf(':');
    host = t.slice(0, i);
    port = Number(t.slice(i + 1));
  }
  const family = isIP(host);
  if (family === 0) throw new CairnError('CAIRN_BAD_FLAG', `'${text}' is not an IP address or IP:port (resolvers are given by address)`, field);
  if (!Number.isInteger(port) || port < 1 || port > 65535) throw new CairnError('CAIRN_BAD_FLAG', `'${text}' has a bad port`, field);
  if (family === 6) host = new URL(`http://[${host}]/`).hostname.slice(1, -1);
  return { host, port, family: family as 4 | 6 };
}

/** What a resolver configuration file says that Cairn uses. */
export interface ResolvConf {
  nameservers: Upstream[];
  /** The `search` list (the last `search` or `domain` line wins, as in glibc). */
  search: string[];
}

/** Reads a resolv.conf: nameserver lines that are not addresses (scoped, odd) are skipped. */
export function readResolvConf(text: string): ResolvConf {
  const nameservers: Upstream[] = [];
  let search: string[] = [];
  for (const line of text.split('\n')) {
    const m = /^\s*(nameserver|search|domain)\s+(.+?)\s*$/.exec(line);
    if (!m) continue;
    if (m[1] === 'nameserver') {
      try {
        nameservers.push(parseUpstream(m[2].split(/\s+/)[0].replace(/%.*$/, '')));
      } catch {
        // not usable from here
      }
    } else {
      search = m[2].split(/\s+/).map((d) => d.replace(/\.$/, '')).filter((d) => d !== '' && d !== '.');
    }
  }
  return { nameservers, search };
}

/** The `nameserver` lines of a resolv.conf. */
export function parseResolvConf(text: string): Upstream[] {
  return readResolvConf(text).nameservers;
}

/** `host:port` for logs and messages (`[v6]:port`). */
export function upstreamText(u: Upstream): string {
  return u.family === 6 ? `[${u.host}]:${u.port}` : `${u.host}:${u.port}`;
}
