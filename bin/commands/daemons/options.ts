// The parsed, validated options of `cairn up`, `cairn master`, `cairn agent` (and its drain),
// and `cairn masters`: what the command-line parser hands to the code that runs them. Paths
// are absolute; numbers are numbers.

import type { AgentOptions as AgentDaemonOptions } from '../../../agent/entry.ts';
import type { TlsFiles } from '../../../shared/tls.ts';
import type { Openable } from '../../../shared/openable.ts';
import type { LogFormat, LogLevelName } from '../../../shared/logger.ts';
import type { PriorityClasses } from '../../../shared/sharing/priority-classes.ts';
import type { ObjectLimits } from '../../../shared/sharing/object-limits.ts';
import type { MasterClientCommandOptions } from '../common/options.ts';

/** DNS flags of `cairn up` and `cairn master`; left out, the master's defaults apply. */
export interface DnsFlags {
  dnsPort?: number;
  /** `--dns-domain` (or its earlier name `--domain`). */
  domain?: string;
  dnsResolvers?: string[];
}

/**
 * Gossip flags of `cairn master` and `cairn agent`. Gossip runs only with a cluster secret
 * (`--secret-file`): packets are authenticated with it, and there is no unauthenticated mode.
 */
export interface GossipFlags {
  secretFile: string;
  /** `--gossip-port`; undefined: the default, or a free port if that is taken. */
  port?: number;
  /** `--gossip-addr`: host or host:port others reach this member at. */
  advertise?: string;
  /** `--join`, in the order given. */
  join: string[];
  /** `--gossip-interval`: the probe period every other gossip period scales with. */
  probeIntervalMs?: number;
  /** `--gossip-encrypt`: encrypt every gossip packet (every member must agree). */
  encrypt?: boolean;
}

/** Default gossip ports: a master and an agent on one host each get their own. */
export const DEFAULT_MASTER_GOSSIP_PORT = 7946;
export const DEFAULT_AGENT_GOSSIP_PORT = 7947;

/** `--log-format`, `--log-level` of the daemons; left out, CAIRN_LOG_FORMAT/CAIRN_LOG_LEVEL or the defaults (log-flags.ts). */
export interface LogFlags {
  format?: LogFormat;
  level?: LogLevelName;
}

export interface UpOptions extends DnsFlags {
  log?: LogFlags;
  dataDir: string;
  /** `--tls-cert/--tls-key/--tls-ca/--tls-client-auth`: both daemons serve TLS with them. */
  tls?: TlsFiles;
  port: number;
  agentPort: number;
  /** Masters to run (1, 3 or 5); more than one form a replicated group on consecutive ports. */
  masters?: number;
  resources?: string;
  /** `--gossip-encrypt`: the gossip between the daemons is encrypted. */
  gossipEncrypt?: boolean;
  /** `--gossip-port`: the first master's gossip port (UDP and TCP); left out, any free port. */
  gossipPort?: number;
  /** A credentials file to use instead of the bootstrap one made in the data dir. */
  credentials?: string;
  /** --acls: who may do what; left out, every user principal may do everything. */
  acls?: string;
  /** --open: what is answered without a credential. */
  open?: Openable[];
  /** `--host-path-allow`: host directories the agent's containers may mount. */
  hostPathAllow?: string[];
}

export interface MasterOptions extends DnsFlags {
  log?: LogFlags;
  port: number;
  /** `--tls-cert/--tls-key/--tls-ca/--tls-client-auth`. */
  tls?: TlsFiles;
  host: string;
  dataDir: string;
  /**
   * A member of a replicated group: its id, every member's URL, and the secret file;
   * `join`: it joins a running group (`--new-member`) instead of founding one.
   */
  raft?: { id: number; peers: Map<number, string>; secretFile: string | undefined; join?: boolean };
  /** `--accept-empty-registry`: a single master starts although registry.sqlite is empty or unreadable. */
  acceptEmptyRegistry?: boolean;
  pingIntervalMs?: number;
  maxMissedPings?: number;
  offerTimeoutMs?: number;
  /** `--priority-classes`, `--default-priority-class`; left out, production > iteration > research. */
  priorityClasses?: PriorityClasses;
  /** `--preemption-grace`. */
  preemptionGraceMs?: number;
  /** `--max-objects-per-principal`, `--max-object-bytes-per-principal`, `--max-task-env`. */
  objectLimits?: Partial<ObjectLimits>;
  gossip?: GossipFlags;
  /** --credentials: the principals; left out, a bootstrap file in the data dir (made once). */
  credentials?: string;
  /** --acls: who may do what; left out, every user principal may do everything. */
  acls?: string;
  /** --open: endpoints answered without a credential. */
  open?: Openable[];
}

/** The agent's options that `cairn agent` has a flag for. */
export type AgentFlagOptions = Pick<
  AgentDaemonOptions,
  | 'workDir' | 'httpPort' | 'resources' | 'attributes' | 'hostname' | 'recover' | 'cgroups' | 'cgroupsRoot'
  | 'cgroupsCpuQuota' | 'usageIntervalMs' | 'gpuSharing' | 'docker' | 'dockerSocket' | 'dockerRuntime' | 'dockerConfig' | 'hostPathAllow' | 'containerCapAdd'
  | 'sandboxGcAgeMs' | 'sandboxGcDiskPercent' | 'jobDirs' | 'defaultTaskUser' | 'taskUidRange' | 'taskUserMap' | 'allowRootTasks' | 'taskPidsMax' | 'openMetrics'
  | 'enforceDisk' | 'diskWatchIntervalMs' | 'defaultTaskDiskMb'
  | 'taskDns' | 'taskDnsAddress' | 'dnsResolvers'
>;

/**
 * `cairn agent`: the agent's own options (agent/options.ts), with the master given as a
 * string and gossip as flags (the secret is read from its file when the agent starts).
 */
export interface AgentOptions extends AgentFlagOptions {
  log?: LogFlags;
  /** '' when the agent learns the leader from gossip only (`--join` without `--master`). */
  masterUrl: string;
  gossip?: GossipFlags;
  /** `--tls-cert/--tls-key/--tls-ca/--tls-client-auth`. */
  tls?: TlsFiles;
  /** --credential: the file of the agent's own credential. */
  credentialFile?: string;
}

export interface DrainOptions {
  masterUrl: string;
  /** The command line's TLS as a client (../common/client-tls.ts). */
  tls?: TlsFiles;
  /** Agent id, host name or address. */
  host: string;
  /** From now until running tasks are killed; undefined: they run until they finish. */
  deadlineMs?: number;
  /** End the drain instead. */
  undrain: boolean;
}

/** `cairn masters` (list), `masters add ID=URL`, `masters replace OLD ID=URL`, `masters remove ID`. */
export type MastersOptions = MasterClientCommandOptions & (
  | { action: 'list' }
  | { action: 'add'; id: number; url: string; replaces?: number }
  | { action: 'remove'; id: number }
);
