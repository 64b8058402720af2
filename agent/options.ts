// The agent's options: what callers (the `cairn agent` command, `cairn up`, tests) give,
// checked once and turned into a complete configuration with every default
// (shared/agent-defaults.ts) filled in. Bad input fails here, naming the option, before
// anything is measured or connected. `cairn agent`'s options are these
// (bin/commands/daemons/options.ts picks the ones it has flags for).

import { isIPv4 } from 'node:net';
import { networkInterfaces, hostname as osHostname } from 'node:os';
import { resolve } from 'node:path';
import type { Logger } from 'pino';
import { CairnError } from '../shared/errors.ts';
import { parseUpstream } from '../shared/dns/upstream.ts';
import { tryParseAddress } from '../shared/gossip/address.ts';
import type { DaemonGossipOptions } from '../shared/gossip/cluster.ts';
import type { TlsMaterial } from '../shared/tls.ts';
import { CAIRN_VERSION } from '../shared/version.ts';
import { ADDABLE_CAPABILITIES, AGENT_DEFAULTS, MAX_GPU_SHARING, MAX_TASK_DISK_MB, MAX_TASK_PIDS, RECOVER_MODES, type RecoverMode } from '../shared/agent-defaults.ts';
import { isValidUserName, parseTaskUserMap } from './task-users.ts';
import { parseUidRange, type UidRange } from './task-uids.ts';
import { validateResourcesOverride } from './resources/discover.ts';
import type { AgentCredential } from './credential.ts';
import type { DockerConfig } from '../shared/docker-auth.ts';
import { loadDockerConfig } from './executors/docker/registry-auth.ts';
import { HostPathAllowList } from './executors/docker/host-path-allow.ts';

/** The agent's gossip member (see membership.ts); without `join`, the masters are asked for members. */
export type AgentGossipOptions = DaemonGossipOptions;

/** Each option left out takes its value from AGENT_DEFAULTS (defaults.ts), where there is one. */
export interface AgentOptions {
  /**
   * The masters' HTTP addresses, comma-separated, e.g. http://10.0.0.1:5050. May be left out
   * when gossip has `join` addresses: the leader is then learnt from gossip.
   */
  masterUrl?: string;
  workDir: string;
  /**
   * What the agent authenticates to masters with (agent/credential.ts); its HTTP API then
   * answers only requests bearing the same secret. Left out: for masters that authenticate
   * no one (embedded), and the API is open.
   */
  credential?: AgentCredential;
  /** Mesos text form; each resource named here replaces what was measured. */
  resources?: string;
  /** `k:v;k2:v2`. */
  attributes?: string;
  hostname?: string;
  /** The address the master and users reach this agent at. */
  ip?: string;
  /** Port of the agent's HTTP endpoint; 0 picks a free one. */
  httpPort?: number;
  logger?: Logger;
  /** Longest wait between reconnect attempts. */
  reconnectMaxMs?: number;
  /** How often unacknowledged status updates are sent again. */
  statusResendMs?: number;
  /** Grace period for kills when neither the kill nor the task names one. */
  defaultKillGraceMs?: number;
  /** Replaces process.env as the source of tasks' inherited basics (PATH, HOME, ...). */
  taskBaseEnv?: Readonly<Record<string, string | undefined>>;
  /**
   * What a starting agent does with the tasks an earlier agent process left running:
   * `reconnect` re-attaches to them, `cleanup` kills them.
   */
  recover?: RecoverMode;
  /** How often re-attached tasks (not this process's children) are checked for exit. */
  recoveredPollMs?: number;
  /** Put each task in its own cgroup with its limits (where the host allows). */
  cgroups?: boolean;
  /** Directory under each cgroup hierarchy that holds Cairn's cgroups. */
  cgroupsRoot?: string;
  /** Cap each task's CPU time at its `cpus` (CFS quota) besides weighting it. */
  cgroupsCpuQuota?: boolean;
  /** How often tasks' CPU, memory and GPU use is sampled. */
  usageIntervalMs?: number;
  /** Tasks that may hold one GPU device at once (time-sharing it); each device is offered this many times. */
  gpuSharing?: number;
  /** Run container tasks through the Docker daemon (where one answers). */
  docker?: boolean;
  /** The Docker daemon's socket. */
  dockerSocket?: string;
  /**
   * The OCI runtime the Docker daemon starts containers with (its `--runtime`, e.g. crun);
   * it must be one the daemon has registered. Left out, the daemon's default.
   */
  dockerRuntime?: string;
  /** A Docker config.json (`auths`) whose registry credentials pull images no launch brings one for (Mesos' --docker_config). */
  dockerConfig?: string;
  /**
   * Host directories containers may mount (or mount a path under); none by default. Never the
   * host's root, the Docker socket or the agent's own directories: such a one is refused at start.
   */
  hostPathAllow?: string[];
  /** Capabilities added back to every container after all are dropped (ADDABLE_CAPABILITIES); none by default. */
  containerCapAdd?: string[];
  /** How long a finished task's sandbox is kept after it was last written. */
  sandboxGcAgeMs?: number;
  /**
   * Where training jobs' shared directories are made (job-dirs.ts); default
   * `<work dir>/job-dirs`. A shared filesystem mount here shares them across hosts.
   */
  jobDirs?: string;
  /** Above this percentage of the work dir's disk in use, finished sandboxes go sooner, oldest first. */
  sandboxGcDiskPercent?: number;
  /** How often sandboxes are checked. */
  sandboxGcIntervalMs?: number;
  /** Run a gossip member; left out, none runs. */
  gossip?: AgentGossipOptions;
  /**
   * TLS (shared/tls.ts loadTls): with a certificate the HTTP endpoint serves HTTPS; the CA and
   * certificate are also what the agent verifies and presents when it dials the masters.
   */
  tls?: TlsMaterial;
  /** The user tasks without a principal run as when their framework names none (a root agent only). */
  defaultTaskUser?: string;
  /**
   * `FIRST-LAST`: the uids a root agent gives principals, one each, for tasks whose framework
   * names no user (task-uids.ts); `none` turns it off (every such task runs as the default user).
   */
  taskUidRange?: string;
  /** `PRINCIPAL=USER` entries: that principal's tasks run as that user instead of a uid from the range. */
  taskUserMap?: string[];
  /** Let tasks run as root (uid 0). */
  allowRootTasks?: boolean;
  /** Processes and threads one task may have at once (its cgroup's pids limit); 0: no limit. */
  taskPidsMax?: number;
  /** Answer GET /metrics without the credential (for a Prometheus that holds none). */
  openMetrics?: boolean;
  /** Kill a task whose sandbox grows past its `disk` (agent/isolation/disk-watcher.ts); off, disk use is only reported. */
  enforceDisk?: boolean;
  /** How often tasks' disk use is measured. */
  diskWatchIntervalMs?: number;
  /** The disk limit (MiB) of a task that asks for no disk; 0: such tasks are not limited. */
  defaultTaskDiskMb?: number;
  /**
   * Run the task resolver (agent/task-dns/): tasks' system resolver answers the cluster zone
   * and forwards the rest. Needs root; without it tasks keep the host's resolver.
   */
  taskDns?: boolean;
  /** The IPv4 address the task resolver answers on; left out, one of 169.254.53.0/24. */
  taskDnsAddress?: string;
  /** `ip[:port]` resolvers for names outside the zone; left out, the host's resolv.conf's. */
  dnsResolvers?: string[];
}

export interface Attribute {
  name: string;
  value: string;
}

export interface AgentConfig {
  /** As given; '' when the leader is learnt from gossip only. */
  masterUrl: string;
  /** ws://HOST:PORT/api/v1/agent of the first master; '' when none is given. */
  masterWsUrl: string;
  /** Every master given (`--master a,b,c`); the agent tries them in turn and follows redirects to the leader. */
  masterWsUrls: string[];
  workDir: string;
  credential: AgentCredential | undefined;
  resourcesText: string | undefined;
  attributes: Attribute[];
  hostname: string;
  /** Advertised to the master. */
  ip: string;
  /** Where the HTTP endpoint listens. */
  httpHost: string;
  httpPort: number;
  reconnectMinMs: number;
  reconnectMaxMs: number;
  statusResendMs: number;
  /** How long to wait for `registered` after the socket opens before trying again. */
  registrationTimeoutMs: number;
  /** Without a ping for this many ping intervals the master counts as gone. */
  missedPingsAllowed: number;
  defaultKillGraceMs: number;
  /** Longest stop() waits for killed tasks' terminal updates to be acknowledged. */
  stopAckWaitMs: number;
  taskBaseEnv: Readonly<Record<string, string | undefined>>;
  version: string;
  recover: RecoverMode;
  recoveredPollMs: number;
  cgroups: boolean;
  cgroupsRoot: string;
  cgroupsCpuQuota: boolean;
  usageIntervalMs: number;
  gpuSharing: number;
  docker: boolean;
  dockerSocket: string;
  dockerRuntime: string | undefined;
  /** Read and checked at start: a bad file stops the agent, naming it. */
  dockerConfig: DockerConfig | undefined;
  /** Checked at start against the Docker socket and the agent's own directories. */
  hostPathAllow: HostPathAllowList;
  /** Upper-case names without CAP_. */
  containerCapAdd: string[];
  sandboxGcAgeMs: number;
  jobDirs: string;
  sandboxGcDiskPercent: number;
  sandboxGcIntervalMs: number;
  gossip: AgentGossipOptions | undefined;
  tls: TlsMaterial | undefined;
  defaultTaskUser: string;
  /** As given (checked): `FIRST-LAST` or `none`. */
  taskUidRange: string;
  /** The range it names; undefined: off. */
  taskUids: UidRange | undefined;
  /** principal → user name. */
  taskUserMap: Map<string, string>;
  allowRootTasks: boolean;
  /** 0: no limit. */
  taskPidsMax: number;
  openMetrics: boolean;
  enforceDisk: boolean;
  diskWatchIntervalMs: number;
  /** 0: none. */
  defaultTaskDiskMb: number;
  taskDns: boolean;
  taskDnsAddress: string | undefined;
  dnsResolvers: string[] | undefined;
}

/** Parses `k:v;k2:v2` (Mesos' --attributes). Empty text means no attributes. */
export function parseAttributes(text: string | undefined, field = 'attributes'): Attribute[] {
  if (text === undefined || text.trim() === '') return [];
  const out: Attribute[] = [];
  const seen = new Set<string>();
  for (const raw of text.split(';')) {
    const part = raw.trim();
    if (part === '') continue;
    const colon = part.indexOf(':');
    if (colon <= 0) throw new CairnError('CAIRN_BAD_FLAG', `'${part}' is not NAME:VALUE`, field);
    const name = part.slice(0, colon).trim();
    const value = part.slice(colon + 1).trim();
    if (!/^[A-Za-z0-9_.\-/]+$/.test(name)) throw new CairnError('CAIRN_BAD_FLAG', `bad attribute name '${name}'`, field);
    if (value === '') throw new CairnError('CAIRN_BAD_FLAG', `attribute '${name}' has no value`, field);
    if (seen.has(name)) throw new CairnError('CAIRN_BAD_FLAG', `attribute '${name}' given twice`, field);
    seen.add(name);
    out.push({ name, value });
  }
  return out;
}

/** ws(s)://HOST:PORT/api/v1/agent for an http(s) master address. */
export function masterWebSocketUrl(masterUrl: string, field = 'masterUrl'): string {
  let url: URL;
  try {
    url = new URL(masterUrl);
  } catch {
    throw new CairnError('CAIRN_BAD_FLAG', `'${masterUrl}' is not a URL like http://host:5050`, field);
  }
  const scheme = { 'http:': 'ws:', 'https:': 'wss:', 'ws:': 'ws:', 'wss:': 'wss:' }[url.protocol];
  if (!scheme) throw new CairnError('CAIRN_BAD_FLAG', `unsupported scheme '${url.protocol}' (use http://host:port)`, field);
  return `${scheme}//${url.host}/api/v1/agent`;
}

export function isLoopbackHost(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, '').toLowerCase();
  return h === 'localhost' || h === '::1' || /^127\./.test(h);
}

/** The address to advertise: loopback when the master is local, else the first external IPv4. */
export function defaultAdvertisedIp(
  masterUrl: string,
  interfaces: ReturnType<typeof networkInterfaces> = networkInterfaces(),
): string {
  if (isLoopbackHost(new URL(masterUrl).hostname)) return '127.0.0.1';
  for (const list of Object.values(interfaces)) {
    for (const addr of list ?? []) {
      if (addr.family === 'IPv4' && !addr.internal) return addr.address;
    }
  }
  return '127.0.0.1';
}

function checkGpuSharing(n: number): number {
  if (!Number.isInteger(n) || n < 1 || n > MAX_GPU_SHARING) throw new CairnError('CAIRN_BAD_FLAG', `must be a whole number from 1 to ${MAX_GPU_SHARING}, got ${n}`, 'gpuSharing');
  return n;
}

function checkSocketPath(path: string): string {
  if (typeof path !== 'string' || !path.startsWith('/')) throw new CairnError('CAIRN_BAD_FLAG', `must be an absolute path to the Docker daemon's socket, got '${String(path)}'`, 'dockerSocket');
  return path;
}

/** Runtime names as the Docker daemon registers them (`runtimes` in daemon.json). */
const RUNTIME_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;

function checkRuntimeName(name: string | undefined): string | undefined {
  if (name === undefined) return undefined;
  if (typeof name !== 'string' || !RUNTIME_NAME.test(name)) throw new CairnError('CAIRN_BAD_FLAG', `must be the name of a runtime the Docker daemon has registered (letters, digits, '.', '_', '-'), got '${String(name)}'`, 'dockerRuntime');
  return name;
}

function checkCapAdd(list: readonly string[]): string[] {
  const out: string[] = [];
  for (const raw of list) {
    const name = raw.trim().toUpperCase().replace(/^CAP_/, '');
    if (name === '') continue;
    if (!ADDABLE_CAPABILITIES.includes(name)) {
      throw new CairnError('CAIRN_BAD_FLAG', `--container-cap-add '${raw}' is not one a container may be given (${ADDABLE_CAPABILITIES.join(', ')})`, 'containerCapAdd');
    }
    if (!out.includes(name)) out.push(name);
  }
  return out;
}

function positiveMs(value: number | undefined, fallback: number, field: string): number {
  if (value === undefined) return fallback;
  if (!Number.isFinite(value) || value <= 0) throw new CairnError('CAIRN_BAD_FLAG', `must be a positive number of milliseconds, got ${value}`, field);
  return value;
}

/** Checks the gossip options once, naming the field at fault. */
function checkGossip(g: AgentGossipOptions | undefined): AgentGossipOptions | undefined {
  if (g === undefined) return undefined;
  if (!Number.isInteger(g.port) || g.port < 0 || g.port > 65535) throw new CairnError('CAIRN_BAD_FLAG', `must be a port number 0-65535, got ${g.port}`, 'gossipPort');
  for (const a of g.join ?? []) {
    if (tryParseAddress(a) === undefined) throw new CairnError('CAIRN_BAD_FLAG', `'${a}' is not host:port`, 'join');
  }
  if (typeof g.secret !== 'string' || Buffer.byteLength(g.secret) < 16) throw new CairnError('CAIRN_BAD_FLAG', 'the cluster secret must be at least 16 bytes', 'secret');
  return g;
}

function checkTaskUser(name: string): string {
  if (typeof name !== 'string' || !isValidUserName(name)) throw new CairnError('CAIRN_BAD_FLAG', `must be a user name (letters, digits, '.', '_', '-'), got '${String(name)}'`, 'defaultTaskUser');
  return name;
}

function checkPidsMax(n: number): number {
  if (!Number.isInteger(n) || n < 0 || n > MAX_TASK_PIDS) throw new CairnError('CAIRN_BAD_FLAG', `must be a whole number from 0 (no limit) to ${MAX_TASK_PIDS}, got ${n}`, 'taskPidsMax');
  return n;
}

export function compileAgentOptions(opts: AgentOptions): AgentConfig {
  const masterUrl = opts.masterUrl ?? '';
  const masterWsUrls = masterUrl.split(',').map((u) => u.trim()).filter((u) => u !== '').map((u) => masterWebSocketUrl(u));
  const gossip = checkGossip(opts.gossip);
  const join = gossip?.join ?? [];
  if (masterWsUrls.length === 0 && join.length === 0) throw new CairnError('CAIRN_BAD_FLAG', 'at least one master URL (or a gossip member to join through) is required', 'masterUrl');
  const masterWsUrl = masterWsUrls[0] ?? '';
  // What the advertised address is chosen against: the first master, else the first member joined through.
  const reference = masterWsUrls.length > 0 ? masterUrl.split(',')[0].trim() : `http://${join[0]}`;
  const advertisedIp = opts.ip ?? defaultAdvertisedIp(reference);
  if (typeof opts.workDir !== 'string' || opts.workDir.trim() === '') {
    throw new CairnError('CAIRN_BAD_FLAG', 'a work directory is required', 'workDir');
  }
  validateResourcesOverride(opts.resources, 'resources');
  const attributes = parseAttributes(opts.attributes, 'attributes');
  const httpPort = opts.httpPort ?? AGENT_DEFAULTS.httpPort;
  if (!Number.isInteger(httpPort) || httpPort < 0 || httpPort > 65535) {
    throw new CairnError('CAIRN_BAD_FLAG', `must be a port number 0-65535, got ${httpPort}`, 'httpPort');
  }
  const reconnectMaxMs = positiveMs(opts.reconnectMaxMs, AGENT_DEFAULTS.reconnectMaxMs, 'reconnectMaxMs');
  const sandboxGcDiskPercent = opts.sandboxGcDiskPercent ?? AGENT_DEFAULTS.sandboxGcDiskPercent;
  if (!Number.isFinite(sandboxGcDiskPercent) || sandboxGcDiskPercent <= 0 || sandboxGcDiskPercent > 100) {
    throw new CairnError('CAIRN_BAD_FLAG', `must be a percentage above 0 and at most 100, got ${sandboxGcDiskPercent}`, 'sandboxGcDiskPercent');
  }
  const cgroupsRoot = opts.cgroupsRoot ?? AGENT_DEFAULTS.cgroupsRoot;
  if (!/^[A-Za-z0-9_.-]+(\/[A-Za-z0-9_.-]+)*$/.test(cgroupsRoot) || cgroupsRoot.split('/').some((p) => p === '.' || p === '..')) {
    throw new CairnError('CAIRN_BAD_FLAG', `must be a relative path of plain names like 'cairn', got '${cgroupsRoot}'`, 'cgroupsRoot');
  }
  const workDir = resolve(opts.workDir);
  const jobDirs = opts.jobDirs !== undefined && opts.jobDirs.trim() !== '' ? resolve(opts.jobDirs) : resolve(opts.workDir, 'job-dirs');
  const dockerSocket = checkSocketPath(opts.dockerSocket ?? AGENT_DEFAULTS.dockerSocket);
  const recover = opts.recover ?? AGENT_DEFAULTS.recover;
  if (!RECOVER_MODES.includes(recover)) {
    throw new CairnError('CAIRN_BAD_FLAG', `must be one of ${RECOVER_MODES.join(', ')}, got '${String(recover)}'`, 'recover');
  }
  return {
    masterUrl,
    masterWsUrl,
    masterWsUrls,
    workDir,
    jobDirs,
    credential: opts.credential,
    resourcesText: opts.resources,
    attributes,
    hostname: opts.hostname ?? osHostname(),
    ip: advertisedIp,
    // Listen where we advertise when told; otherwise on every interface, as Mesos does.
    // The advertised address only, never every interface: loopback when the master is local.
    httpHost: advertisedIp,
    httpPort,
    reconnectMinMs: Math.min(100, reconnectMaxMs),
    reconnectMaxMs,
    statusResendMs: positiveMs(opts.statusResendMs, AGENT_DEFAULTS.statusResendMs, 'statusResendMs'),
    registrationTimeoutMs: 10_000,
    missedPingsAllowed: 5,
    defaultKillGraceMs: positiveMs(opts.defaultKillGraceMs, AGENT_DEFAULTS.defaultKillGraceMs, 'defaultKillGraceMs'),
    stopAckWaitMs: 1000,
    taskBaseEnv: opts.taskBaseEnv ?? process.env,
    version: CAIRN_VERSION,
    recover,
    recoveredPollMs: positiveMs(opts.recoveredPollMs, AGENT_DEFAULTS.recoveredPollMs, 'recoveredPollMs'),
    cgroups: opts.cgroups ?? AGENT_DEFAULTS.cgroups,
    cgroupsRoot,
    cgroupsCpuQuota: opts.cgroupsCpuQuota ?? AGENT_DEFAULTS.cgroupsCpuQuota,
    usageIntervalMs: positiveMs(opts.usageIntervalMs, AGENT_DEFAULTS.usageIntervalMs, 'usageIntervalMs'),
    gpuSharing: checkGpuSharing(opts.gpuSharing ?? AGENT_DEFAULTS.gpuSharing),
    docker: opts.docker ?? AGENT_DEFAULTS.docker,
    dockerSocket,
    dockerRuntime: checkRuntimeName(opts.dockerRuntime),
    dockerConfig: opts.dockerConfig === undefined ? undefined : loadDockerConfig(resolve(opts.dockerConfig)),
    hostPathAllow: HostPathAllowList.compile(opts.hostPathAllow ?? [], { dockerSocket, ownDirs: [workDir, jobDirs] }),
    containerCapAdd: checkCapAdd(opts.containerCapAdd ?? []),
    sandboxGcAgeMs: positiveMs(opts.sandboxGcAgeMs, AGENT_DEFAULTS.sandboxGcAgeMs, 'sandboxGcAgeMs'),
    sandboxGcDiskPercent,
    sandboxGcIntervalMs: positiveMs(opts.sandboxGcIntervalMs, AGENT_DEFAULTS.sandboxGcIntervalMs, 'sandboxGcIntervalMs'),
    gossip,
    tls: opts.tls,
    defaultTaskUser: checkTaskUser(opts.defaultTaskUser ?? AGENT_DEFAULTS.defaultTaskUser),
    taskUidRange: opts.taskUidRange ?? AGENT_DEFAULTS.taskUidRange,
    taskUids: parseUidRange(opts.taskUidRange ?? AGENT_DEFAULTS.taskUidRange),
    taskUserMap: parseTaskUserMap(opts.taskUserMap ?? []),
    allowRootTasks: opts.allowRootTasks ?? AGENT_DEFAULTS.allowRootTasks,
    taskPidsMax: checkPidsMax(opts.taskPidsMax ?? AGENT_DEFAULTS.taskPidsMax),
    openMetrics: opts.openMetrics ?? false,
    enforceDisk: opts.enforceDisk ?? AGENT_DEFAULTS.enforceDisk,
    diskWatchIntervalMs: positiveMs(opts.diskWatchIntervalMs, AGENT_DEFAULTS.diskWatchIntervalMs, 'diskWatchIntervalMs'),
    defaultTaskDiskMb: checkTaskDisk(opts.defaultTaskDiskMb ?? AGENT_DEFAULTS.defaultTaskDiskMb),
    taskDns: opts.taskDns ?? AGENT_DEFAULTS.taskDns,
    taskDnsAddress: checkTaskDnsAddress(opts.taskDnsAddress),
    dnsResolvers: checkResolvers(opts.dnsResolvers),
  };
}

function checkTaskDisk(n: number): number {
  if (!Number.isInteger(n) || n < 0 || n > MAX_TASK_DISK_MB) throw new CairnError('CAIRN_BAD_FLAG', `must be a whole number of MB from 0 (no limit) to ${MAX_TASK_DISK_MB}, got ${n}`, 'defaultTaskDiskMb');
  return n;
}

function checkTaskDnsAddress(address: string | undefined): string | undefined {
  if (address === undefined || address.trim() === '') return undefined;
  if (!isIPv4(address.trim())) throw new CairnError('CAIRN_BAD_FLAG', `must be an IPv4 address (the nameserver tasks are given), got '${address}'`, 'taskDnsAddress');
  return address.trim();
}

function checkResolvers(list: string[] | undefined): string[] | undefined {
  if (list === undefined) return undefined;
  const out = list.map((r) => r.trim()).filter((r) => r !== '');
  for (const r of out) parseUpstream(r, 'dnsResolvers');
  return out;
}
