// What the HTTP and WebSocket endpoints of a master see: the registry every master holds,
// the leader's services (allocator, offers, agents, frameworks) when this master leads, and
// where the leader is when it does not.

import type { FastifyReply, FastifyRequest } from 'fastify';
import type { TlsClient } from '../shared/tls.ts';
import type { Logger } from 'pino';
import type { MasterAuth } from './auth/master-auth.ts';
import type { Master } from './master.ts';
import type { Registry } from './registry/registry.ts';
import type { ReplicationStatus } from './replication/raft-log.ts';
import type { PriorityClasses } from '../shared/sharing/priority-classes.ts';
import type { QuotaGate } from './sharing/quota-gate.ts';

export interface MasterContext {
  readonly registry: Registry;
  /** The leader's shell (master.ts): its allocator, offers, agents and frameworks; undefined on a follower. */
  master(): Master | undefined;
  /** The leader's base URL when another master leads; undefined when unknown or this one. */
  leaderUrl(): string | undefined;
  /** This master's own base URL. */
  selfUrl(): string;
  /** How this master dials agents and other masters: their certificates verified against its CA, its own presented (shared/tls.ts); absent: plain fetch. */
  readonly tlsClient?: TlsClient;
  /** Who may call this master, and what they may do. */
  readonly auth: MasterAuth;
  /** Where every change is written with its principal. */
  readonly audit: Logger;
  /** Raft status of this master; undefined for a single master without replication. */
  replication(): ReplicationStatus | undefined;
  /** The built-in frameworks' families for /metrics at `nowMs` (FrameworkHost.metricsFamilies). */
  frameworkMetrics(nowMs: number): string[];
  /** The cluster's priority classes (a master setting, the same on every master of a group). */
  readonly priorityClasses: PriorityClasses;
  /** Per-principal quotas on stored objects, and the task environment cap (`quotas.limits`). */
  readonly quotas: QuotaGate;
}

export const APPLIED_INDEX_HEADER = 'cairn-applied-index';

/**
 * The leader's services, or — having answered the request with a redirect to the leader
 * (307 with Location, as Mesos does) or a 503 while none is known — undefined.
 */
export function leaderOrRedirect(ctx: MasterContext, req: FastifyRequest, reply: FastifyReply): Master | undefined {
  const master = ctx.master();
  if (master) return master;
  const leader = ctx.leaderUrl();
  if (leader) {
    void reply.code(307).header('location', new URL(req.url, leader).toString()).send({ code: 'CAIRN_NOT_LEADER', message: `this master is not the leader; the leader is ${leader}`, leader });
  } else {
    void reply.code(503).header('retry-after', '1').send({ code: 'CAIRN_NOT_LEADER', message: 'no leader is elected yet; retry shortly' });
  }
  return undefined;
}
