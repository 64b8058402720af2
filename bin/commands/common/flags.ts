// Parsers for flag values. Each throws commander's InvalidArgumentError, so commander's
// message names the flag ("option '--port <n>' argument 'x' is invalid. ...").

import { isIP } from 'node:net';
import { InvalidArgumentError } from 'commander';
import { Resources } from '../../../shared/resources.ts';
import { CairnError } from '../../../shared/errors.ts';
import { tryParseAddress } from '../../../shared/gossip/address.ts';
import { durationProblem, formatDurationMs, parseDurationMs } from '../../../shared/duration.ts';
import { DEFAULT_MASTER_URL } from './options.ts';
import { isRoleName } from '../../../shared/sharing/roles.ts';

export function integerFlag(min: number, max: number): (value: string) => number {
  return (value) => {
    if (!/^-?\d+$/.test(value.trim())) throw new InvalidArgumentError(`must be a whole number from ${min} to ${max}.`);
    const n = Number(value);
    if (n < min || n > max) throw new InvalidArgumentError(`must be a whole number from ${min} to ${max}.`);
    return n;
  };
}

const BYTE_UNITS: Record<string, number> = { '': 1, k: 1024, ki: 1024, kib: 1024, m: 1024 ** 2, mi: 1024 ** 2, mib: 1024 ** 2, g: 1024 ** 3, gi: 1024 ** 3, gib: 1024 ** 3 };

/** A size in bytes: a whole number, with a binary unit or none (`65536`, `128KiB`, `64MiB`, `1GiB`), within [min, max]. */
export function bytesFlag(min: number, max: number): (value: string) => number {
  return (value) => {
    const m = /^(\d+)\s*([a-z]*)$/i.exec(value.trim());
    const unit = m ? BYTE_UNITS[m[2]!.toLowerCase()] : undefined;
    if (!m || unit === undefined) throw new InvalidArgumentError('must be a size: a whole number of bytes, or with KiB, MiB or GiB (e.g. 128KiB).');
    const n = Number(m[1]) * unit;
    if (n < min || n > max) throw new InvalidArgumentError(`must be from ${min} to ${max} bytes.`);
    return n;
  };
}

/**
 * A duration flag (`500ms`, `45s`, `30m`, `12h`, `7d`), in milliseconds, within [minMs, maxMs].
 * The unit is required: a bare number is refused, and commander's message names the flag.
 */
export function durationFlag(minMs = 1, maxMs = Number.MAX_SAFE_INTEGER): (value: string) => number {
  return (value) => {
    const ms = parseDurationMs(value);
    if (ms === undefined) throw new InvalidArgumentError(durationProblem(value));
    if (ms < minMs || ms > maxMs) {
      throw new InvalidArgumentError(`must be from ${formatDurationMs(minMs)} to ${formatDurationMs(maxMs)}.`);
    }
    return ms;
  };
}

/** A decimal number; `positive` excludes zero. Resources keep three decimals. */
export function numberFlag(opts: { positive: boolean }): (value: string) => number {
  return (value) => {
    const ok = /^\d+(\.\d+)?$/.test(value.trim()) || /^\.\d+$/.test(value.trim());
    const n = Number(value);
    if (!ok || !Number.isFinite(n) || (opts.positive ? n <= 0 : n < 0)) {
      throw new InvalidArgumentError(opts.positive ? 'must be a number greater than 0.' : 'must be a number of 0 or more.');
    }
    return n;
  };
}

/** Mesos text resources (`cpus:4;mem:8192;ports:[31000-32000]`); returned as given once valid. */
export function resourcesFlag(value: string): string {
  try {
    Resources.parse(value);
  } catch (err) {
    throw new InvalidArgumentError(`${err instanceof CairnError ? err.message : String(err)}.`);
  }
  return value;
}

/** Agent attributes `name:value;name:value`; returned as given once valid. */
export function attributesFlag(value: string): string {
  for (const part of value.split(';')) {
    if (part.trim() === '') continue;
    const colon = part.indexOf(':');
    const name = colon > 0 ? part.slice(0, colon).trim() : '';
    if (!/^[A-Za-z0-9_.\-/]+$/.test(name)) {
      throw new InvalidArgumentError(`'${part.trim()}' is not NAME:VALUE (expected e.g. rack:r1;zone:a).`);
    }
  }
  return value;
}

/** One `--env K=V`, collected in order. */
export function envFlag(value: string, previous: [string, string][] | undefined): [string, string][] {
  const eq = value.indexOf('=');
  const name = eq > 0 ? value.slice(0, eq) : '';
  if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) {
    throw new InvalidArgumentError(`'${value}' is not NAME=VALUE with a valid variable name.`);
  }
  return [...(previous ?? []), [name, value.slice(eq + 1)]];
}

/** A task or framework name usable inside task ids and DNS names. */
export function nameFlag(value: string): string {
  if (!/^[A-Za-z0-9]([A-Za-z0-9_.-]{0,62})$/.test(value)) {
    throw new InvalidArgumentError('must be 1-63 letters, digits, ".", "_" or "-", starting with a letter or digit.');
  }
  return value;
}

/** An OS user name, as useradd allows them. */
export function userFlag(value: string): string {
  if (!/^[A-Za-z0-9_.][A-Za-z0-9_.-]{0,63}\$?$/.test(value)) {
    throw new InvalidArgumentError("must be a user name of letters, digits, '_', '-' and '.'.");
  }
  return value;
}

export function roleFlag(value: string): string {
  if (!isRoleName(value)) {
    throw new InvalidArgumentError("must be '*' or a role name of letters, digits, '_', '-' and '.', with '/' between levels (team/alice).");
  }
  return value;
}

/** Validates a master URL; returns it without a trailing slash. Throws a plain message. */
export function checkMasterUrl(value: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new Error(`'${value}' is not a URL (expected e.g. ${DEFAULT_MASTER_URL})`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new Error(`'${value}' must start with http:// or https://`);
  }
  return value.replace(/\/+$/, '');
}

/** A DNS domain such as `cairn` or `cluster.example`; returned in lower case without dots at the ends. */
export function domainFlag(value: string): string {
  const d = value.trim().toLowerCase().replace(/^\.+|\.+$/g, '');
  if (d === '' || d.length > 200 || !d.split('.').every((l) => /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/.test(l))) {
    throw new InvalidArgumentError("must be a domain name: labels of letters, digits and '-' separated by dots (e.g. cairn).");
  }
  return d;
}

/** Comma-separated upstream resolvers `ip`, `ip:port` or `[v6]:port`; '' means none. */
/** A comma-separated list that may also be given again (`--flag a,b --flag c`); checked where it is used. */
export function listFlag(value: string, previous: string[] | undefined): string[] {
  return [...(previous ?? []), ...value.split(',').map((s) => s.trim()).filter((s) => s !== '')];
}

export function resolversFlag(value: string): string[] {
  const list = value.split(',').map((s) => s.trim()).filter((s) => s !== '');
  for (const r of list) {
    const m = /^\[([^\]]+)\](?::(\d+))?$/.exec(r) ?? /^([^:]+)(?::(\d+))?$/.exec(r) ?? [r, r, undefined];
    const port = m[2] === undefined ? 53 : Number(m[2]);
    if (isIP(m[1]) === 0 || !Number.isInteger(port) || port < 1 || port > 65535) {
      throw new InvalidArgumentError(`'${r}' is not IP or IP:PORT (e.g. 10.0.0.2,10.0.0.3:5353).`);
    }
  }
  return list;
}

/** `1=http://h1:5050,2=http://h2:5050`: the masters of a replicated group by id. */
/** An IPv4 address, e.g. the task resolver's 169.254.53.53. */
export function ipv4Flag(value: string): string {
  if (isIP(value.trim()) !== 4) throw new InvalidArgumentError(`'${value}' is not an IPv4 address (e.g. 169.254.53.53).`);
  return value.trim();
}

export function peersFlag(value: string): Map<number, string> {
  const out = new Map<number, string>();
  for (const part of value.split(',').map((p) => p.trim()).filter((p) => p !== '')) {
    const m = /^(\d+)=(.+)$/.exec(part);
    if (!m) throw new InvalidArgumentError(`'${part}' is not ID=URL (e.g. 1=http://10.0.0.1:5050).`);
    const id = Number(m[1]);
    if (!Number.isSafeInteger(id) || id < 1) throw new InvalidArgumentError(`'${m[1]}' is not a positive id.`);
    if (out.has(id)) throw new InvalidArgumentError(`id ${id} is given twice.`);
    try {
      out.set(id, checkMasterUrl(m[2]));
    } catch (err) {
      throw new InvalidArgumentError((err as Error).message);
    }
  }
  if (out.size === 0) throw new InvalidArgumentError('names no master.');
  return out;
}

/** A group size Raft can run without a split vote: 1, 3 or 5. */
export function mastersFlag(value: string): number {
  if (!['1', '3', '5'].includes(value.trim())) throw new InvalidArgumentError('must be 1, 3 or 5.');
  return Number(value);
}

/** One or more `--join host:port` (comma-separated or repeated), collected in order. */
export function joinFlag(value: string, previous: string[] | undefined): string[] {
  const list = value.split(',').map((a) => a.trim()).filter((a) => a !== '');
  for (const a of list) {
    if (tryParseAddress(a) === undefined) throw new InvalidArgumentError(`'${a}' is not host:port (e.g. 10.0.0.5:7946; IPv6 as [::1]:7946).`);
  }
  if (list.length === 0) throw new InvalidArgumentError('names no member.');
  return [...(previous ?? []), ...list];
}

/** `--gossip-addr`: `host` or `host:port`. */
export function gossipAddrFlag(value: string): string {
  const v = value.trim();
  const bare = v !== '' && (!v.includes(':') || isIP(v) === 6);
  if (!bare && tryParseAddress(v) === undefined) throw new InvalidArgumentError('must be host or host:port (e.g. 10.0.0.5 or 10.0.0.5:7946).');
  return v;
}

/** A Docker image reference (`busybox`, `registry:5000/team/app:1.2`, `app@sha256:…`), as the master accepts one. */
export function imageFlag(value: string): string {
  if (!/^[A-Za-z0-9][A-Za-z0-9._/:@-]*$/.test(value) || value.length > 1024) {
    throw new InvalidArgumentError('must be an image reference, e.g. busybox or registry:5000/team/app:1.2.');
  }
  return value;
}
