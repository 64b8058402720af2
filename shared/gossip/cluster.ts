// What Cairn's daemons say about themselves in gossip, and what they read from the view.
//
// Every member carries its API URL; a master also carries its Raft leader hint (the leader's
// id and URL as this master knows it, and the term it knows it in) and its DNS address; an
// agent carries its agent id (so the leader can match a gossip member to a registered agent)
// and its host name. These helpers are pure: they read a view (a list of members), so agents,
// masters and tests agree on what the view says.

import type { GossipConfigOptions } from './config.ts';
import type { MemberMeta, MemberRole, MemberSnapshot, MemberState } from './messages.ts';

/** How a master or an agent runs its gossip member (`--gossip-port`, `--gossip-addr`, `--join`). */
export interface DaemonGossipOptions {
  /** UDP and TCP port; 0 picks a free one. */
  port: number;
  /** The port is a default: if it is taken, use a free one (see StartGossipOptions). */
  anyPortIfTaken?: boolean;
  /** Bind address; default where the daemon's HTTP endpoint listens. */
  host?: string;
  /** `host` or `host:port` others reach this member at; default the daemon's advertised address. */
  advertise?: string;
  /** Members (`host:port`) to join through, masters and agents alike; one live one is enough. */
  join?: readonly string[];
  /** The cluster secret that authenticates every packet (at least 16 bytes). */
  secret: string;
  /** Encrypt every packet (`--gossip-encrypt`); every member of the cluster must agree. */
  encrypt?: boolean;
  config?: GossipConfigOptions;
}

/** Metadata keys. Short: metadata rides in every alive message. */
export const META_API = 'api';
export const META_TERM = 'term';
export const META_LEADER_ID = 'leader_id';
export const META_LEADER = 'leader';
export const META_DNS = 'dns';
export const META_DOMAIN = 'domain';
export const META_AGENT_ID = 'agent_id';
export const META_HOSTNAME = 'hostname';

export interface MasterMetaInput {
  /** This master's base URL as agents and clients reach it. */
  readonly api: string;
  /** The Raft term this master knows; 0 for a master without replication. */
  readonly term: number;
  /** The leader's Raft id (0: unknown, or no replication) and base URL ('' when unknown). */
  readonly leaderId: number;
  readonly leaderUrl: string;
  /** `host:port` of this master's DNS server, when it serves DNS. */
  readonly dns?: string;
  readonly domain?: string;
}

export function masterMeta(m: MasterMetaInput): MemberMeta {
  const meta: Record<string, string> = {
    [META_API]: m.api,
    [META_TERM]: String(m.term),
    [META_LEADER_ID]: String(m.leaderId),
    [META_LEADER]: m.leaderUrl,
  };
  if (m.dns) meta[META_DNS] = m.dns;
  if (m.domain) meta[META_DOMAIN] = m.domain;
  return meta;
}

export function agentMeta(m: { api: string; hostname: string; agentId?: string }): MemberMeta {
  const meta: Record<string, string> = { [META_API]: m.api, [META_HOSTNAME]: m.hostname };
  if (m.agentId) meta[META_AGENT_ID] = m.agentId;
  return meta;
}

/** A member that takes part: alive, or suspected but not yet declared dead. */
export function isLive(state: MemberState): boolean {
  return state === 'alive' || state === 'suspect';
}

export interface LeaderHint {
  /** The leader's base URL. */
  readonly url: string;
  readonly leaderId: number;
  readonly term: number;
}

/**
 * The leader according to the view: among the live masters' hints, the one of the newest term
 * (a newer term's leader has superseded every older one). A hint naming a master that gossip
 * has declared dead or left is ignored — a killed leader is still named by followers that have
 * not yet elected its successor. At equal terms a leader's word about itself comes first.
 * Undefined when no live master knows a leader.
 */
export function leaderFromView(members: readonly MemberSnapshot[]): LeaderHint | undefined {
  const gone = new Set<string>();
  for (const m of members) if (m.role === 'master' && !isLive(m.state) && m.meta[META_API]) gone.add(m.meta[META_API]);
  // A URL both live and gone (a master restarted under a new name) counts as live.
  for (const m of members) if (m.role === 'master' && isLive(m.state)) gone.delete(m.meta[META_API] ?? '');
  let best: { hint: LeaderHint; self: boolean } | undefined;
  for (const m of members) {
    if (m.role !== 'master' || !isLive(m.state)) continue;
    const url = m.meta[META_LEADER] ?? '';
    const term = Number(m.meta[META_TERM]);
    if (url === '' || !Number.isSafeInteger(term) || term < 0 || gone.has(url)) continue;
    const self = m.meta[META_API] === url;
    if (best === undefined || term > best.hint.term || (term === best.hint.term && self && !best.self)) {
      const leaderId = Number(m.meta[META_LEADER_ID]);
      best = { hint: { url, term, leaderId: Number.isSafeInteger(leaderId) ? leaderId : 0 }, self };
    }
  }
  return best?.hint;
}

/** The live masters' DNS servers (`host:port`), sorted, each once. */
export function dnsServersFromView(members: readonly MemberSnapshot[]): string[] {
  const out = new Set<string>();
  for (const m of members) if (m.role === 'master' && isLive(m.state) && m.meta[META_DNS]) out.add(m.meta[META_DNS]);
  return [...out].sort();
}

/** The DNS domain the live masters serve (the first one found), or undefined. */
export function domainFromView(members: readonly MemberSnapshot[]): string | undefined {
  for (const m of members) if (m.role === 'master' && isLive(m.state) && m.meta[META_DOMAIN]) return m.meta[META_DOMAIN];
  return undefined;
}

/** The state gossip gives the agent with this id; a live member wins over older dead ones. */
export function agentStateInView(members: readonly MemberSnapshot[], agentId: string): MemberState | undefined {
  let found: MemberState | undefined;
  for (const m of members) {
    if (m.role !== 'agent' || m.meta[META_AGENT_ID] !== agentId) continue;
    if (isLive(m.state)) return m.state;
    found = m.state;
  }
  return found;
}

/** One row of `GET /api/v1/members`. */
export interface MemberJson {
  name: string;
  address: string;
  role: MemberRole;
  state: MemberState;
  incarnation: number;
  meta: Record<string, string>;
}

/** The body of `GET /api/v1/members` on masters and agents. */
export interface MembersJson {
  /** The answering member's name. */
  self: string;
  members: MemberJson[];
}

/** The view as JSON, masters first, then by name. */
export function membersJson(self: string, members: readonly MemberSnapshot[]): MembersJson {
  const rows = members.map((m) => ({ name: m.name, address: m.address, role: m.role, state: m.state, incarnation: m.incarnation, meta: { ...m.meta } }));
  rows.sort((a, b) => (a.role === b.role ? (a.name < b.name ? -1 : a.name > b.name ? 1 : 0) : a.role === 'master' ? -1 : 1));
  return { self, members: rows };
}
