// The masters' membership as the shell sees it, in pure functions: which URL each member
// has (learnt from --peers, from the snapshot, and from the membership changes in the log),
// what an operator's add, replace or remove means as single-server changes, which requests
// are refused before anything is proposed, and the listing `GET /api/v1/masters` answers.
// The core (shared/raft) knows ids only; URLs travel in the changes' context and in the
// snapshot, so that every master — one restarted, one added later — learns them from the log.

import { CairnError } from '../../shared/errors.ts';
import { confChangeProblem, planReplacement } from '../../shared/raft/confchange.ts';
import type { ConfChange, ConfState, NodeId } from '../../shared/raft/types.ts';
import type { MasterMemberView, MastersView } from '../../shared/masters-view.ts';
import type { RegistrySnapshot } from '../registry/state-machine.ts';
import { recordsFromSnapshot } from './incarnations.ts';

export type MemberUrls = ReadonlyMap<NodeId, string>;

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** A master's base URL: http(s)://host:port and nothing after it; returned as its origin. */
export function checkMemberUrl(value: unknown, field = 'url'): string {
  if (typeof value !== 'string' || value.trim() === '') {
    throw new CairnError('CAIRN_BAD_REQUEST', 'must be the master\'s base URL, e.g. http://10.0.0.4:5050', field);
  }
  let url: URL;
  try {
    url = new URL(value.trim());
  } catch {
    throw new CairnError('CAIRN_BAD_REQUEST', `'${value}' is not a URL (expected e.g. http://10.0.0.4:5050)`, field);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new CairnError('CAIRN_BAD_REQUEST', `'${value}' must start with http:// or https://`, field);
  }
  if (url.hostname === '' || url.username !== '' || url.password !== '' || url.pathname !== '/' || url.search !== '' || url.hash !== '') {
    throw new CairnError('CAIRN_BAD_REQUEST', `'${value}' must be a base URL (scheme, host and port only)`, field);
  }
  return url.origin;
}

/** A master's id: a positive integer (a path parameter arrives as a string of digits). */
export function checkMemberId(value: unknown, field = 'id'): NodeId {
  const n = typeof value === 'string' && /^\d{1,15}$/.test(value.trim()) ? Number(value.trim()) : value;
  if (typeof n !== 'number' || !Number.isSafeInteger(n) || n <= 0) {
    throw new CairnError('CAIRN_BAD_REQUEST', `must be a positive integer, got ${JSON.stringify(value) ?? 'nothing'}`, field);
  }
  return n;
}

/** `POST /api/v1/masters`: add master `id` at `url`, replacing voter `replaces` if given. */
export interface AddMasterRequest {
  readonly id: NodeId;
  readonly url: string;
  readonly replaces?: NodeId;
}

export function parseAddMasterRequest(body: unknown): AddMasterRequest {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new CairnError('CAIRN_BAD_REQUEST', 'must be a JSON object {"id": N, "url": "http://host:port"}', 'body');
  }
  const b = body as Record<string, unknown>;
  const unknown = Object.keys(b).filter((k) => k !== 'id' && k !== 'url' && k !== 'replaces');
  if (unknown.length > 0) throw new CairnError('CAIRN_BAD_REQUEST', `unknown field '${unknown[0]}'`, unknown[0]);
  const id = checkMemberId(b.id, 'id');
  const url = checkMemberUrl(b.url, 'url');
  if (b.replaces === undefined || b.replaces === null) return { id, url };
  return { id, url, replaces: checkMemberId(b.replaces, 'replaces') };
}

function isMember(conf: ConfState, id: NodeId): boolean {
  return conf.voters.includes(id) || conf.learners.includes(id);
}

/**
 * Why the add (or replacement) cannot start with this membership, or undefined when it can.
 * A learner already at the same URL is no problem: a retried add goes on to promote it.
 */
export function addMasterProblem(conf: ConfState, urls: MemberUrls, req: AddMasterRequest): CairnError | undefined {
  if (conf.voters.includes(req.id)) {
    return new CairnError('CAIRN_RAFT_BAD_CHANGE', `master ${req.id} is already a voter`, 'id');
  }
  if (conf.learners.includes(req.id) && urls.get(req.id) !== req.url) {
    return new CairnError('CAIRN_RAFT_BAD_CHANGE', `master ${req.id} is already a learner at ${urls.get(req.id) ?? 'an unknown URL'}; remove it first, or give that URL to finish adding it`, 'id');
  }
  for (const [id, url] of urls) {
    if (id !== req.id && isMember(conf, id) && sameOrigin(url, req.url)) {
      return new CairnError('CAIRN_RAFT_BAD_CHANGE', `${req.url} is already master ${id}'s URL`, 'url');
    }
  }
  if (req.replaces !== undefined) {
    if (req.replaces === req.id) return new CairnError('CAIRN_RAFT_BAD_CHANGE', 'a master cannot replace itself', 'replaces');
    if (!conf.voters.includes(req.replaces)) {
      return new CairnError('CAIRN_RAFT_BAD_CHANGE', `master ${req.replaces} is not a voter`, 'replaces');
    }
  }
  return undefined;
}

/** Why master `id` cannot be removed from this membership, or undefined. Reachability is the core's check. */
export function removeMasterProblem(conf: ConfState, id: NodeId): CairnError | undefined {
  const problem = confChangeProblem(conf, { type: 'remove', nodeId: id });
  return problem === undefined ? undefined : renameField(problem, 'id');
}

/**
 * The single-server changes that carry out `req`, in order: add as a learner (with its URL),
 * promote once caught up, remove the replaced voter. A learner already there skips the first.
 */
export function planAddMaster(conf: ConfState, req: AddMasterRequest): ConfChange[] {
  const context = encodeMemberContext(req.url);
  const resume = conf.learners.includes(req.id);
  let plan: ConfChange[];
  if (req.replaces !== undefined && !resume) plan = planReplacement(conf, req.replaces, req.id);
  else {
    plan = [{ type: 'addLearner', nodeId: req.id }, { type: 'promote', nodeId: req.id }];
    if (req.replaces !== undefined) plan.push({ type: 'remove', nodeId: req.replaces });
  }
  plan = plan.map((cc) => (cc.type === 'addLearner' ? { ...cc, context } : cc));
  return resume ? plan.filter((cc) => cc.type !== 'addLearner') : plan;
}

/** The same error under the name the HTTP API uses for the field. */
export function renameField(err: CairnError, field: string): CairnError {
  if (err.field === undefined || err.field === field) return err;
  const prefix = `${err.field}: `;
  return new CairnError(err.code, err.message.startsWith(prefix) ? err.message.slice(prefix.length) : err.message, field);
}

function sameOrigin(a: string, b: string): boolean {
  try {
    return new URL(a).origin === new URL(b).origin;
  } catch {
    return a === b;
  }
}

// ---------------------------------------------------------------------------------------
// Where URLs come from.

/** An added master's URL in its change's context: JSON, so more can be said later. */
export function encodeMemberContext(url: string): Uint8Array {
  return encoder.encode(JSON.stringify({ url }));
}

/** The URL in a change's context; undefined for none or one this version cannot read. */
export function decodeMemberContext(context: Uint8Array | undefined): string | undefined {
  if (context === undefined || context.length === 0) return undefined;
  try {
    const v = JSON.parse(decoder.decode(context)) as { url?: unknown };
    return typeof v.url === 'string' ? v.url : undefined;
  } catch {
    return undefined;
  }
}

/** URLs after a committed change: an added member's from its context; a removed one forgotten (never this master's own). */
export function urlsAfterChange(urls: MemberUrls, cc: ConfChange, selfId: NodeId): Map<NodeId, string> {
  const out = new Map(urls);
  if (cc.type === 'addLearner') {
    const url = decodeMemberContext(cc.context);
    if (url !== undefined) out.set(cc.nodeId, url);
  } else if (cc.type === 'remove' && cc.nodeId !== selfId) {
    out.delete(cc.nodeId);
  }
  return out;
}

/**
 * URLs as of a snapshot with membership `conf`: what the snapshot recorded, else --peers',
 * for the members only (a master removed long ago but still in --peers is not dialled).
 * A master that holds nothing yet (empty `conf`: one added later, before the leader has
 * reached it) has only --peers to go by. Its own URL is always --peers'.
 */
export function urlsFromSnapshot(recorded: MemberUrls | undefined, peers: MemberUrls, conf: ConfState, selfId: NodeId): Map<NodeId, string> {
  const ids = [...conf.voters, ...conf.learners];
  if (ids.length === 0) return new Map(peers);
  const out = new Map<NodeId, string>();
  for (const id of ids) {
    const url = recorded?.get(id) ?? peers.get(id);
    if (url !== undefined) out.set(id, url);
  }
  const own = peers.get(selfId);
  if (own !== undefined) out.set(selfId, own);
  return out;
}

// ---------------------------------------------------------------------------------------
// The snapshot: the registry's state, the members' URLs and their recorded storage
// incarnations (incarnations.ts), as of the same index.

const SNAPSHOT_FORMAT = 'cairn-replica/1';

export function encodeReplicaSnapshot(registry: RegistrySnapshot, urls: MemberUrls, incarnations: readonly [NodeId, string][] = []): Uint8Array {
  return encoder.encode(JSON.stringify({ format: SNAPSHOT_FORMAT, registry, masters: [...urls], incarnations }));
}

export interface ReplicaSnapshot {
  registry: RegistrySnapshot | undefined;
  urls: Map<NodeId, string> | undefined;
  /** Members' recorded incarnations; empty in a snapshot from before they were recorded. */
  incarnations: Map<NodeId, string>;
}

/** Reads a snapshot; one from before URLs were recorded holds the registry's state alone. */
export function decodeReplicaSnapshot(data: Uint8Array): ReplicaSnapshot {
  if (data.length === 0) return { registry: undefined, urls: undefined, incarnations: new Map() };
  const v = JSON.parse(decoder.decode(data)) as { format?: unknown; registry?: RegistrySnapshot; masters?: [NodeId, string][]; incarnations?: unknown };
  if (v.format !== SNAPSHOT_FORMAT) return { registry: v as RegistrySnapshot, urls: undefined, incarnations: new Map() };
  return { registry: v.registry, urls: new Map(v.masters ?? []), incarnations: recordsFromSnapshot(v.incarnations) };
}

// ---------------------------------------------------------------------------------------
// The listing.

export interface LocalMembership {
  readonly id: NodeId;
  readonly role: string;
  readonly leader: NodeId;
  readonly term: number;
  readonly commit: number;
  readonly applied: number;
  readonly conf: ConfState;
  readonly urls: MemberUrls;
  /** The leader's view of each member (empty unless this master leads). */
  readonly progress: ReadonlyMap<NodeId, { match: number; recentActive: boolean }>;
  readonly change: MastersView['change'];
}

/** What a member says of itself (its `GET /api/v1/replication`), undefined when it did not answer. */
export interface RemoteReplication {
  readonly role: string;
  readonly term: number;
  readonly applied: number;
}

export function mastersListing(local: LocalMembership, remote: ReadonlyMap<NodeId, RemoteReplication | undefined>): MastersView {
  const voters = new Set(local.conf.voters);
  const ids = [...local.conf.voters, ...local.conf.learners].sort((a, b) => a - b);
  const masters = ids.map((id): MasterMemberView => {
    const self = id === local.id;
    const said: RemoteReplication | undefined = self ? local : remote.get(id);
    const pr = local.progress.get(id);
    return {
      id,
      url: local.urls.get(id) ?? '',
      voter: voters.has(id),
      leader: id === local.leader,
      self,
      reachable: said !== undefined,
      ...(said !== undefined ? { role: said.role, term: said.term, applied: said.applied } : {}),
      ...(pr !== undefined ? { match: pr.match, active: self || pr.recentActive } : {}),
    };
  });
  return { self: local.id, leader: local.leader, term: local.term, commit: local.commit, change: local.change, masters };
}
