// How registry names become DNS names, following mesos-dns so that existing setups keep
// resolving: a task or framework name is turned into RFC 1123 host labels (lower case,
// `.` and `_` become `-`, other characters are dropped, at most 63 characters, no leading
// or trailing `-`); a framework name keeps its dots as label separators, as in mesos-dns;
// canonical task names carry a short hash of the task id and the agent id's last field.

import { createHash } from 'node:crypto';
import { isIPv4, isIPv6 } from 'node:net';

/** RFC 1035: a label is at most 63 octets, a name at most 255 (253 in text). */
export const MAX_LABEL = 63;
export const MAX_NAME = 253;

/** One host label from any string; '' when nothing usable is left. */
export function toLabel(name: string): string {
  let out = '';
  for (let i = 0; i < name.length; i++) {
    const c = name.charCodeAt(i);
    if (c >= 65 && c <= 90) out += String.fromCharCode(c + 32); // A-Z
    else if ((c >= 97 && c <= 122) || (c >= 48 && c <= 57)) out += name[i]; // a-z 0-9
    else if (c === 45 || c === 46 || c === 95) out += '-'; // - . _
    // anything else is dropped
  }
  out = out.replace(/^-+/, '').slice(0, MAX_LABEL);
  return out.replace(/-+$/, '');
}

/** One or more labels joined by dots: each dot-separated part is a label; empty ones go. */
export function toDomainFragment(name: string): string {
  return name
    .split('.')
    .map(toLabel)
    .filter((l) => l !== '')
    .join('.');
}

/**
 * The label a framework's name claims in the zone: its fragment's last label, the one right
 * under the domain (or under slave.<domain>). Frameworks that share it share a namespace
 * (`x.svc` writes names under `svc`'s), so names belong to whoever holds this label;
 * '' when the name makes no fragment (such a framework's tasks get no names).
 */
export function frameworkNameKey(frameworkName: string): string {
  const fragment = toDomainFragment(frameworkName);
  return fragment.slice(fragment.lastIndexOf('.') + 1);
}

// z-base-32 (human-oriented base 32), as mesos-dns uses for its task id hashes.
const ZBASE32 = 'ybndrfg8ejkmcpqxot1uwisza345h769';

export function zbase32(bytes: Uint8Array): string {
  let out = '';
  let acc = 0;
  let bits = 0;
  for (const b of bytes) {
    acc = (acc << 8) | b;
    bits += 8;
    while (bits >= 5) {
      bits -= 5;
      out += ZBASE32[(acc >> bits) & 31];
    }
    acc &= (1 << bits) - 1;
  }
  if (bits > 0) out += ZBASE32[(acc << (5 - bits)) & 31];
  return out;
}

/** Five z-base-32 characters of the SHA-1 of the task id: short, readable, rarely equal. */
export function taskIdHash(taskId: string): string {
  return zbase32(createHash('sha1').update(taskId).digest()).slice(0, 5);
}

/** The last `-` field of an agent id (`…-S0` gives `s0`), lower case, as a label. */
export function agentIdTail(agentId: string): string {
  const i = agentId.lastIndexOf('-');
  return toLabel(i >= 0 ? agentId.slice(i + 1) : agentId);
}

/**
 * A configured domain in canonical form: lower case, no leading or trailing dot, each label
 * valid. Returns undefined when it is not a usable domain.
 */
export function canonicalDomain(domain: string): string | undefined {
  const d = domain.trim().toLowerCase().replace(/^\.+|\.+$/g, '');
  if (d === '' || d.length > MAX_NAME - 10) return undefined;
  for (const label of d.split('.')) {
    if (!/^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/.test(label)) return undefined;
  }
  return d;
}

/** Whether `name` (canonical, no trailing dot) is `domain` or below it. */
export function inDomain(name: string, domain: string): boolean {
  return name === domain || (name.length > domain.length && name.endsWith(domain) && name.charCodeAt(name.length - domain.length - 1) === 46);
}

/** The names between `name` (exclusive) and `domain` (inclusive), nearest first. */
export function ancestorsWithin(name: string, domain: string): string[] {
  const out: string[] = [];
  let rest = name;
  while (rest !== domain) {
    const dot = rest.indexOf('.');
    if (dot < 0) break;
    rest = rest.slice(dot + 1);
    out.push(rest);
  }
  return out;
}

export type AddressFamily = 4 | 6;

/**
 * An agent's address as DNS data: IPv4 (also IPv4-mapped IPv6, as sockets report it) or
 * IPv6; undefined for anything else (a host name, say), which gets no address record.
 */
export function addressOf(ip: string): { family: AddressFamily; address: string } | undefined {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(ip);
  if (mapped && isIPv4(mapped[1])) return { family: 4, address: mapped[1] };
  if (isIPv4(ip)) return { family: 4, address: ip };
  if (isIPv6(ip)) return { family: 6, address: ip.toLowerCase() };
  return undefined;
}

/** Whether a name is short enough to be encoded (labels were made valid by construction). */
export function fitsInDns(name: string): boolean {
  return name.length <= MAX_NAME;
}

/**
 * A task's plain name, `task.framework.domain`, as the zone serves it for a RUNNING task (see
 * zone.ts taskRecords); '' when its name or its framework's leaves no label or it is too long.
 */
export function taskDnsName(taskName: string, frameworkName: string, domain: string): string {
  const label = toLabel(taskName);
  const fragment = toDomainFragment(frameworkName);
  const name = `${label}.${fragment}.${domain}`;
  return label === '' || fragment === '' || !fitsInDns(name) ? '' : name;
}
