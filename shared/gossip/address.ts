// `host:port` addresses as gossip members advertise them ("[::1]:7946" for IPv6).

import { CairnError } from '../errors.ts';

export interface HostPort { readonly host: string; readonly port: number }

/** Parses `host:port`; returns undefined when it is not one. */
export function tryParseAddress(address: string): HostPort | undefined {
  if (typeof address !== 'string' || address.length > 300) return undefined;
  let host: string;
  let portText: string;
  if (address.startsWith('[')) {
    const close = address.indexOf(']');
    if (close < 0 || address[close + 1] !== ':') return undefined;
    host = address.slice(1, close);
    portText = address.slice(close + 2);
  } else {
    const colon = address.lastIndexOf(':');
    if (colon <= 0) return undefined;
    host = address.slice(0, colon);
    portText = address.slice(colon + 1);
    if (host.includes(':')) return undefined;
  }
  if (host.length === 0 || !/^[0-9]{1,5}$/.test(portText)) return undefined;
  const port = Number(portText);
  if (port < 1 || port > 65_535) return undefined;
  return { host, port };
}

/** Parses `host:port` or throws a CairnError naming `field`. */
export function parseAddress(address: string, field: string): HostPort {
  const hp = tryParseAddress(address);
  if (hp === undefined) {
    throw new CairnError('CAIRN_BAD_REQUEST', `'${String(address)}' is not host:port (port 1-65535; IPv6 as [::1]:7946)`, field);
  }
  return hp;
}

export function formatAddress(host: string, port: number): string {
  return host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
}
