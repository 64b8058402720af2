// The agent's task resolver, wired: the claimed address, the forwarders (the masters' DNS from
// gossip for the zone; the host's upstreams for the rest) and what each task is given:
// a resolv.conf mounted over its /etc/resolv.conf (process tasks), or Docker's Dns, DnsSearch
// and DnsOptions (containers). Started once with the agent; where it cannot run (not root, no
// `ip`, no address) the agent says so at start and tasks keep the host's resolver.

import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync, renameSync } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { Forwarder } from '../../shared/dns/forwarder.ts';
import { parseUpstream, readResolvConf, upstreamText, type Upstream } from '../../shared/dns/upstream.ts';
import { claimAddress, type ClaimedAddress } from './address.ts';
import { taskResolvConf, taskResolverOptions, taskSearchList } from './resolv-conf.ts';
import { TaskDnsServer, type TaskDnsCounters } from './server.ts';

/** A master answers from memory on the same network: one second is long; then the next master. */
const MASTER_TIMEOUT_MS = 1_000;
/** The host's upstreams may be far away; well under a stub resolver's own 5 s retry. */
const UPSTREAM_TIMEOUT_MS = 2_000;

export interface TaskDnsOptions {
  workDir: string;
  /** The address to answer on; left out, one of 169.254.53.0/24 (address.ts). */
  address?: string;
  /** `ip[:port]` resolvers for names outside the zone; left out, the host's resolv.conf's. */
  upstreams?: readonly string[];
  /** The host's resolver configuration (tests point it elsewhere). */
  resolvConfPath?: string;
  /** The masters' DNS servers (`host:port`) and the zone, as gossip tells them now. */
  cluster: () => { servers: readonly string[]; domain?: string } | undefined;
  log: Logger;
}

/** How a container is pointed at the task resolver (Docker's HostConfig fields). */
export interface ContainerDns {
  servers: string[];
  search: string[];
  options: string[];
}

export class TaskDns {
  private readonly filesDir: string;
  private readonly files = new Map<string, string>();
  private mastersKey = '';
  private masters: Upstream[] = [];

  private constructor(
    private readonly opts: TaskDnsOptions,
    private readonly claimed: ClaimedAddress,
    private readonly server: TaskDnsServer,
    /** The host's own search domains, after the task's. */
    private readonly hostSearch: readonly string[],
    private readonly forwarders: Forwarder[],
  ) {
    this.filesDir = join(opts.workDir, 'task-dns');
  }

  /** Starts the resolver; throws with the reason when it cannot (the caller warns and goes on without). */
  static async start(opts: TaskDnsOptions): Promise<TaskDns> {
    if (process.getuid?.() !== 0) throw new Error('the agent is not root: it cannot listen on port 53 or give tasks their own resolv.conf');
    let host = { nameservers: [] as Upstream[], search: [] as string[] };
    try {
      host = readResolvConf(readFileSync(opts.resolvConfPath ?? '/etc/resolv.conf', 'utf8'));
    } catch {
      // no resolv.conf: no upstreams of the host's own (the masters forward)
    }
    const given = opts.upstreams?.filter((u) => u.trim() !== '').map((u) => parseUpstream(u, 'dnsResolvers'));
    const claimed = await claimAddress(opts.workDir, opts.address);
    const upstreams = (given ?? host.nameservers).filter((u) => !(u.host === claimed.address && u.port === 53));
    let self: TaskDns | undefined;
    const masters = new Forwarder(() => self?.masterUpstreams() ?? [], MASTER_TIMEOUT_MS);
    const forwardUpstream = new Forwarder(upstreams, UPSTREAM_TIMEOUT_MS);
    const server = new TaskDnsServer({
      udp: claimed.udp,
      tcp: claimed.tcp,
      domain: () => opts.cluster()?.domain,
      masters,
      upstreams: forwardUpstream,
      log: opts.log,
    });
    self = new TaskDns(opts, claimed, server, host.search, [masters, forwardUpstream]);
    mkdirSync(self.filesDir, { recursive: true, mode: 0o755 });
    // Where it answers, for operators (and tests' cleanup) to find after an agent was killed.
    writeFileSync(join(self.filesDir, 'address'), `${claimed.address}\n`);
    if (claimed.tcpProblem) opts.log.warn({ address: claimed.address, err: claimed.tcpProblem }, 'the task resolver answers over UDP only: TCP port 53 is taken there');
    opts.log.info({ address: claimed.address, upstreams: upstreams.map(upstreamText), search: host.search }, 'task resolver started: tasks resolve cluster names through the system resolver');
    return self;
  }

  get address(): string {
    return this.claimed.address;
  }

  get counters(): TaskDnsCounters {
    return this.server.counters;
  }

  /** The masters' DNS servers as upstreams, parsed again only when gossip's list changes. */
  private masterUpstreams(): Upstream[] {
    const servers = this.opts.cluster()?.servers ?? [];
    const key = servers.join(',');
    if (key !== this.mastersKey) {
      this.mastersKey = key;
      this.masters = servers.flatMap((s) => {
        try {
          return [parseUpstream(s, 'dns')];
        } catch {
          return [];
        }
      });
    }
    return this.masters;
  }

  private searchFor(dnsName: string): string[] {
    return taskSearchList(dnsName, this.opts.cluster()?.domain, this.hostSearch);
  }

  /** The resolv.conf a process task named `dnsName` gets (one file per search list, written once). */
  resolvFileFor(dnsName: string): string {
    const text = taskResolvConf(this.address, this.searchFor(dnsName));
    const key = createHash('sha1').update(text).digest('hex').slice(0, 16);
    let file = this.files.get(key);
    if (file === undefined) {
      file = join(this.filesDir, `resolv-${key}.conf`);
      const tmp = `${file}.${process.pid}.tmp`;
      writeFileSync(tmp, text, { mode: 0o644 });
      renameSync(tmp, file);
      this.files.set(key, file);
    }
    return file;
  }

  /** What a container task named `dnsName` is given. */
  containerDns(dnsName: string): ContainerDns {
    return { servers: [this.address], search: this.searchFor(dnsName), options: taskResolverOptions() };
  }

  async stop(): Promise<void> {
    for (const f of this.forwarders) f.close();
    await this.server.close();
    await this.claimed.release();
  }
}
