// The replicated masters' membership over HTTP (`cairn masters`):
//   GET    /api/v1/masters       the members, as this master sees them (any master answers)
//   POST   /api/v1/masters       {id, url, replaces?}: add a master (learner, then voter once
//                                caught up), replacing voter `replaces` if given
//   DELETE /api/v1/masters/:id   remove a master
// Changes run on the leader; a follower redirects them there (307 with Location). Bad input
// and changes the membership cannot take (no quorum left, one already in progress) are
// refused with a 4xx, a stable code and the field named, and nothing changes.

import type { FastifyInstance, FastifyReply } from 'fastify';
import type { MastersView } from '../../shared/masters-view.ts';
import type { NodeId } from '../../shared/raft/types.ts';
import { leaderOrRedirect, type MasterContext } from '../context.ts';
import { checkMemberId, mastersListing, parseAddMasterRequest, type RemoteReplication } from '../replication/members.ts';
import type { RaftCommandLog } from '../replication/raft-log.ts';

/** How long a member may take to say how it is doing before it is listed as unreachable. */
const MEMBER_ANSWER_TIMEOUT_MS = 1000;

/** `authorization`: the caller's own, which every master of the group takes (one credentials file). */
async function askMember(url: string, authorization: string | undefined, dial: typeof fetch): Promise<RemoteReplication | undefined> {
  try {
    const r = await dial(`${url}/api/v1/replication`, { headers: authorization ? { authorization } : {}, signal: AbortSignal.timeout(MEMBER_ANSWER_TIMEOUT_MS) });
    if (!r.ok) return undefined;
    const s = (await r.json()) as Partial<RemoteReplication>;
    if (typeof s.role !== 'string' || typeof s.term !== 'number' || typeof s.applied !== 'number') return undefined;
    return { role: s.role, term: s.term, applied: s.applied };
  } catch {
    return undefined;
  }
}

/** The listing, with each other member's own word on its role, term and applied index. */
export async function mastersView(raft: RaftCommandLog, authorization?: string, dial: typeof fetch = fetch): Promise<MastersView> {
  const local = raft.membership();
  const others = [...local.urls].filter(([id]) => id !== local.id);
  const answers = await Promise.all(others.map(async ([id, url]) => [id, await askMember(url, authorization, dial)] as const));
  return mastersListing(raft.membership(), new Map<NodeId, RemoteReplication | undefined>(answers));
}

export function registerMastersApi(app: FastifyInstance, ctx: MasterContext, raft: RaftCommandLog | undefined): void {
  const off = (reply: FastifyReply) =>
    reply.code(404).send({ code: 'CAIRN_RAFT_OFF', message: 'this master is not replicated (it was started without --id and --peers)' });

  app.get('/api/v1/masters', async (req, reply) => (raft ? mastersView(raft, req.headers.authorization, ctx.tlsClient?.fetch) : off(reply)));

  app.post('/api/v1/masters', async (req, reply) => {
    const add = parseAddMasterRequest(req.body);
    ctx.auth.require(req.principal, 'update_masters', String(add.id), 'id');
    if (!raft) return off(reply);
    if (!leaderOrRedirect(ctx, req, reply)) return reply;
    await raft.addMaster(add);
    return mastersView(raft, req.headers.authorization, ctx.tlsClient?.fetch);
  });

  app.delete<{ Params: { id: string } }>('/api/v1/masters/:id', async (req, reply) => {
    const id = checkMemberId(req.params.id, 'id');
    ctx.auth.require(req.principal, 'update_masters', String(id), 'id');
    if (!raft) return off(reply);
    if (!leaderOrRedirect(ctx, req, reply)) return reply;
    await raft.removeMaster(id);
    return mastersView(raft, req.headers.authorization, ctx.tlsClient?.fetch);
  });
}
