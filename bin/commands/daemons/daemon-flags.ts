// The flags the daemons have in common (`up`, `master`, `agent`): ports, DNS, gossip, TLS,
// what is open without a credential, priority classes and object limits; each group added to
// a command, and what was given turned into the daemon's options.

import { resolve } from 'node:path';
import { Command, InvalidArgumentError, Option } from 'commander';
import type { TlsFiles } from '../../../shared/tls.ts';
import { OPENABLE, type Openable } from '../../../shared/openable.ts';
import { parseClassList, PriorityClasses } from '../../../shared/sharing/priority-classes.ts';
import type { ObjectLimits } from '../../../shared/sharing/object-limits.ts';
import { USAGE_EXIT_CODE } from '../common/context.ts';
import { durationFlag, gossipAddrFlag, integerFlag, joinFlag, resolversFlag, domainFlag } from '../common/flags.ts';
import type { AgentFlagOptions, DnsFlags, GossipFlags } from './options.ts';

export const PORT = integerFlag(0, 65535);

/** The master's object quotas and task environment cap, those given. */
export function objectLimitFlags(o: { maxObjectsPerPrincipal?: number; maxObjectBytesPerPrincipal?: number; maxTaskEnv?: number }): { objectLimits?: Partial<ObjectLimits> } {
  const limits: Partial<ObjectLimits> = {
    ...(o.maxObjectsPerPrincipal !== undefined ? { maxObjectsPerPrincipal: o.maxObjectsPerPrincipal } : {}),
    ...(o.maxObjectBytesPerPrincipal !== undefined ? { maxObjectBytesPerPrincipal: o.maxObjectBytesPerPrincipal } : {}),
    ...(o.maxTaskEnv !== undefined ? { maxTaskEnvBytes: o.maxTaskEnv } : {}),
  };
  return Object.keys(limits).length > 0 ? { objectLimits: limits } : {};
}

/** `--priority-classes a,b,c`: names checked here, the default with --default-priority-class. */
export function classListFlag(value: string): string[] {
  const names = parseClassList(value);
  try {
    new PriorityClasses(names);
  } catch (err) {
    throw new InvalidArgumentError((err as Error).message);
  }
  return names;
}

/** `--open metrics,dns-api,scheduler`: what is answered without a credential. */
export function openFlag(value: string): Openable[] {
  const items = value.split(',').map((v) => v.trim()).filter((v) => v !== '');
  for (const v of items) {
    if (!(OPENABLE as readonly string[]).includes(v)) throw new InvalidArgumentError(`'${v}' cannot be opened (known: ${OPENABLE.join(', ')})`);
  }
  return items as Openable[];
}

/** The `--open` of `cairn master` and `cairn up`. */
export function openOption(): Option {
  return new Option('--open <list>', "what is answered without a credential, comma-separated: metrics, dns-api, scheduler (the Mesos scheduler API; its callers without a credential act as the principal 'anonymous', which --acls governs)").argParser(openFlag);
}

/** The DNS flags, shared by `up` and `master`. */
export function addDnsOptions(cmd: Command): Command {
  return cmd
    .addOption(new Option('--dns-port <port>', 'DNS port, UDP and TCP (default: 53 as root, else 8053; 0: any free port)').argParser(PORT))
    .addOption(new Option('--dns-domain <domain>', 'the DNS zone tasks are named in, e.g. mesos for the names mesos-dns gives (default: cairn)').argParser(domainFlag))
    .addOption(new Option('--domain <domain>', 'the same as --dns-domain (its earlier name)').argParser(domainFlag).conflicts('dnsDomain'))
    .addOption(new Option('--dns-resolvers <list>', "comma-separated resolvers for names outside the zone, IP[:PORT] (default: /etc/resolv.conf's; '' for none)").argParser(resolversFlag));
}

/** `--dns-domain`, or `--domain` (its earlier name, kept so existing command lines still work). */
export type DnsFlagValues = DnsFlags & { dnsDomain?: string };

/** The DNS flags that were given, as options. */
export function dnsFlags(o: DnsFlagValues): DnsFlags {
  const domain = o.dnsDomain ?? o.domain;
  return {
    ...(o.dnsPort !== undefined ? { dnsPort: o.dnsPort } : {}),
    ...(domain !== undefined ? { domain } : {}),
    ...(o.dnsResolvers !== undefined ? { dnsResolvers: o.dnsResolvers } : {}),
  };
}

/** The gossip flags, shared by `master` and `agent`. */
export function addGossipOptions(cmd: Command, defaultPort: number): Command {
  return cmd
    .addOption(new Option('--gossip-port <port>', `gossip port, UDP and TCP (default: ${defaultPort}; 0: any free port)`).argParser(PORT))
    .addOption(new Option('--gossip-addr <host[:port]>', 'the address other members reach this one at (default: the advertised address)').argParser(gossipAddrFlag))
    .addOption(new Option('--join <host:port>', 'a gossip member (master or agent) to join through; repeatable, one live one is enough').argParser(joinFlag))
    .addOption(new Option('--gossip-interval <duration>', 'gossip probe period, e.g. 200ms; the other gossip periods scale with it (default: 1s)').argParser(durationFlag(10, 60_000)))
    .option('--gossip-encrypt', 'encrypt every gossip packet (AES-256-GCM, a key derived from the cluster secret); every member must have it on, or all off');
}

export interface TlsFlagValues {
  tlsCert?: string;
  tlsKey?: string;
  tlsCa?: string;
  tlsClientAuth?: boolean;
}

/** The TLS flags of the daemons (`up`, `master`, `agent`). */
export function addTlsOptions(cmd: Command): Command {
  return cmd
    .option('--tls-cert <file>', 'serve HTTPS/WSS with this certificate (PEM; with --tls-key); also presented when dialling masters and agents')
    .option('--tls-key <file>', 'the private key of --tls-cert (PEM)')
    .option('--tls-ca <file>', "the CA (PEM) that masters' and agents' certificates are verified against (default: Node's trusted CAs)")
    .option('--tls-client-auth', 'mutual TLS: refuse clients without a certificate signed by --tls-ca');
}

/** The TLS flags that were given, as options (paths made absolute). */
export function tlsFlags(o: TlsFlagValues): { tls?: TlsFiles } {
  const tls: TlsFiles = {
    ...(o.tlsCert !== undefined ? { cert: resolve(o.tlsCert) } : {}),
    ...(o.tlsKey !== undefined ? { key: resolve(o.tlsKey) } : {}),
    ...(o.tlsCa !== undefined ? { ca: resolve(o.tlsCa) } : {}),
    ...(o.tlsClientAuth ? { clientAuth: true } : {}),
  };
  return Object.keys(tls).length > 0 ? { tls } : {};
}

/** What commander parses `cairn agent`'s flags into: the agent's options, `--port` and `--sandbox-gc-age` by their flag's name. */
export type AgentFlagValues = Omit<AgentFlagOptions, 'httpPort' | 'sandboxGcAgeMs' | 'usageIntervalMs' | 'diskWatchIntervalMs' | 'defaultTaskDiskMb'> & { master?: string; port: number; sandboxGcAge: number; usageInterval: number; diskWatchInterval: number; defaultTaskDisk: number; credential?: string };

export interface GossipFlagValues {
  secretFile?: string;
  gossipPort?: number;
  gossipAddr?: string;
  join?: string[];
  gossipInterval?: number;
  gossipEncrypt?: boolean;
}

/** Gossip runs with a cluster secret only; other gossip flags without one are a usage error. */
export function gossipFlags(o: GossipFlagValues, cmd: Command): GossipFlags | undefined {
  if (!o.secretFile) {
    const given = [o.join && '--join', o.gossipPort !== undefined && '--gossip-port', o.gossipAddr && '--gossip-addr', o.gossipInterval !== undefined && '--gossip-interval', o.gossipEncrypt && '--gossip-encrypt'].filter(Boolean);
    if (given.length > 0) {
      return cmd.error(`error: option '--secret-file' is required for gossip (${given.join(', ')}): gossip packets are authenticated with the cluster secret`, { exitCode: USAGE_EXIT_CODE, code: 'cairn.badFlag' });
    }
    return undefined;
  }
  return {
    secretFile: resolve(o.secretFile),
    join: o.join ?? [],
    ...(o.gossipPort !== undefined ? { port: o.gossipPort } : {}),
    ...(o.gossipAddr !== undefined ? { advertise: o.gossipAddr } : {}),
    ...(o.gossipInterval !== undefined ? { probeIntervalMs: o.gossipInterval } : {}),
    ...(o.gossipEncrypt ? { encrypt: true } : {}),
  };
}
