// The master's gossip member. Its metadata says where this master's API and DNS are and which
// master leads in which term, as this one knows it, re-announced whenever that changes, so
// agents started with only `--join` find the leader and follow it. For the leader it is a
// second opinion on agents (an agent's gossip state, looked up by the agent id in its
// metadata), and it answers `GET /api/v1/members`.

import type { Logger } from 'pino';
import { agentStateInView, masterMeta, META_AGENT_ID, membersJson, type DaemonGossipOptions, type MasterMetaInput, type MembersJson } from '../shared/gossip/cluster.ts';
import type { MemberState } from '../shared/gossip/messages.ts';
import { startGossip, type GossipMember } from '../shared/gossip/udp-node.ts';
import type { AgentGossipView } from './master.ts';

/** The master's gossip options (see DaemonGossipOptions). */
export type MasterGossipOptions = DaemonGossipOptions;

export class MasterMembership implements AgentGossipView {
  private metaKey = '';

  private constructor(
    readonly member: GossipMember,
    private readonly log: Logger,
  ) {}

  /** Starts the member; `name` is unique in the cluster and the same across restarts. */
  static async start(opts: MasterGossipOptions, name: string, bindHost: string, meta: MasterMetaInput, log: Logger): Promise<MasterMembership> {
    const member = await startGossip({
      name,
      role: 'master',
      bindHost: opts.host ?? bindHost,
      bindPort: opts.port,
      anyPortIfTaken: opts.anyPortIfTaken,
      advertise: opts.advertise,
      join: opts.join,
      secret: opts.secret,
      encrypt: opts.encrypt,
      meta: masterMeta(meta),
      config: opts.config,
      logger: log,
    });
    const m = new MasterMembership(member, log);
    m.metaKey = JSON.stringify(masterMeta(meta));
    return m;
  }

  /** Announces new metadata (a new incarnation) if it differs from the last announced. */
  announce(meta: MasterMetaInput): void {
    const next = masterMeta(meta);
    const key = JSON.stringify(next);
    if (key === this.metaKey) return;
    this.metaKey = key;
    this.log.debug({ meta: next }, 'gossip: announcing new metadata');
    this.member.setMeta(next);
  }

  agentState(agentId: string): MemberState | undefined {
    return agentStateInView(this.member.members(), agentId);
  }

  /** Calls `listener` with the agent id whenever an agent member's state or metadata changes. */
  onAgentChange(listener: (agentId: string) => void): void {
    this.member.on('change', (e) => {
      const agentId = e.member.role === 'agent' ? e.member.meta[META_AGENT_ID] : undefined;
      if (agentId) listener(agentId);
    });
  }

  view(): MembersJson {
    return membersJson(this.member.name, this.member.members());
  }

  stop(): Promise<void> {
    return this.member.stop();
  }
}
