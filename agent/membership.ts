// The agent's gossip member. It announces the agent's API and id (the leader matches gossip
// members to registered agents by that id), and reads from the view where the leader is (the
// newest-term leader hint of the live masters) and where the masters' DNS servers are. An
// agent started with only `--join` finds its master this way; when the leader changes, the
// connection follows the view. Without `--join`, the members to join through are asked of the
// masters given with `--master` (GET /api/v1/members), until one answers.

import type { Logger } from 'pino';
import {
  agentMeta,
  dnsServersFromView,
  domainFromView,
  isLive,
  leaderFromView,
  membersJson,
  type MembersJson,
} from '../shared/gossip/cluster.ts';
import { startGossip, type GossipMember } from '../shared/gossip/udp-node.ts';
import { masterWebSocketUrl, type AgentGossipOptions } from './options.ts';

/** The masters' DNS servers and zone as gossip tells them. */
export interface ClusterDns {
  servers: string[];
  domain: string | undefined;
}

/** How often the masters are asked for members to join through while this member is alone. */
const SEED_RETRY_MS = 2_000;

export class AgentMembership {
  private leaderWs: string | undefined;
  private readonly leaderListeners: ((wsUrl: string) => void)[] = [];
  private seedTimer: NodeJS.Timeout | undefined;
  private stopped = false;

  private constructor(
    readonly member: GossipMember,
    private readonly log: Logger,
  ) {
    member.on('change', () => this.checkLeader());
  }

  static async start(
    opts: AgentGossipOptions,
    self: { name: string; bindHost: string; advertiseHost: string; api: string; hostname: string; agentId: string | undefined },
    log: Logger,
  ): Promise<AgentMembership> {
    const member = await startGossip({
      name: self.name,
      role: 'agent',
      bindHost: opts.host ?? self.bindHost,
      bindPort: opts.port,
      anyPortIfTaken: opts.anyPortIfTaken,
      advertise: opts.advertise ?? self.advertiseHost,
      join: opts.join,
      secret: opts.secret,
      encrypt: opts.encrypt,
      meta: agentMeta(self),
      config: opts.config,
      logger: log,
    });
    return new AgentMembership(member, log);
  }

  /** Announces the agent's metadata (after registration: with its id). */
  announce(meta: { api: string; hostname: string; agentId: string | undefined }): void {
    const next = agentMeta(meta);
    const now = this.member.member(this.member.name)?.meta ?? {};
    if (JSON.stringify(now) !== JSON.stringify(next)) this.member.setMeta(next);
  }

  /** The leader's agent endpoint (ws://…/api/v1/agent) according to the view, if any. */
  leader(): string | undefined {
    return this.leaderWs;
  }

  /** Calls `listener` whenever the view names a different leader. */
  onLeaderChange(listener: (wsUrl: string) => void): void {
    this.leaderListeners.push(listener);
  }

  /**
   * Calls `listener` with a master's agent endpoint when gossip declares that master dead or
   * gone. An agent cut off from the cluster declares every master dead this way, and drops its
   * connection to the leader instead of waiting out a long ping window, so that it reconnects
   * (and the leader, which has marked it unreachable meanwhile, takes it back) once healed.
   */
  onMasterDown(listener: (wsUrl: string) => void): void {
    this.member.on('change', (e) => {
      if (e.member.role !== 'master' || (e.type !== 'dead' && e.type !== 'leave') || !e.member.meta.api) return;
      try {
        listener(masterWebSocketUrl(e.member.meta.api));
      } catch {
        // not a URL: nothing to compare with
      }
    });
  }

  dns(): ClusterDns {
    const members = this.member.members();
    return { servers: dnsServersFromView(members), domain: domainFromView(members) };
  }

  view(): MembersJson {
    return membersJson(this.member.name, this.member.members());
  }

  /** Joins through the members the masters list, retrying while this member knows nobody. */
  seedFromMasters(masterUrls: readonly string[], dial: typeof fetch = fetch, headers: Record<string, string> = {}): void {
    if (masterUrls.length === 0 || this.stopped) return;
    const attempt = async () => {
      this.seedTimer = undefined;
      if (this.stopped || this.member.members().some((m) => m.name !== this.member.name && isLive(m.state))) return;
      for (const url of masterUrls) {
        try {
          const r = await dial(new URL('/api/v1/members', url), { headers, signal: AbortSignal.timeout(2_000) });
          if (!r.ok) continue;
          const body = (await r.json()) as MembersJson;
          const addresses = body.members.filter((m) => isLive(m.state) && m.name !== this.member.name).map((m) => m.address);
          if (addresses.length > 0 && !this.stopped) {
            this.log.info({ master: url, addresses }, 'gossip: joining through the members a master lists');
            this.member.join(addresses);
            break;
          }
        } catch {
          // That master is down or runs no gossip; try the next.
        }
      }
      if (!this.stopped) {
        this.seedTimer = setTimeout(() => void attempt(), SEED_RETRY_MS);
        this.seedTimer.unref();
      }
    };
    void attempt();
  }

  /**
   * `leave`: say goodbye, so the leader marks the agent at once (it is going away for good).
   * Otherwise stop as a crash looks: an agent restarting to be upgraded is back within the
   * suspicion time, and the leader gives it its usual time.
   */
  async stop(leave: boolean): Promise<void> {
    this.stopped = true;
    clearTimeout(this.seedTimer);
    if (leave) await this.member.leave(1_000);
    else await this.member.stop();
  }

  private checkLeader(): void {
    const hint = leaderFromView(this.member.members());
    let ws: string | undefined;
    try {
      ws = hint ? masterWebSocketUrl(hint.url) : undefined;
    } catch {
      ws = undefined; // a master announcing a URL that is not one: ignore it
    }
    if (ws === undefined || ws === this.leaderWs) return;
    this.leaderWs = ws;
    this.log.info({ leader: hint!.url, term: hint!.term }, 'gossip names the leader');
    for (const l of this.leaderListeners) l(ws);
  }
}
