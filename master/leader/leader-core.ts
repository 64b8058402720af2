// The leader's core: everything the leading master decides — agent registration and
// liveness, framework subscription and failover, offers and rescinds, ACCEPT/DECLINE
// validation, kills, status-update forwarding and acknowledgement, drains, reconciliation.
//
// Pure, in the manner of etcd's raft: `step(nowMs, input)` is the one entry point and
// returns effects (registry commands to make durable, frames for agents, events for
// frameworks, answers to requests) for the shell to carry out in order. Time comes in as
// `nowMs` (monotonic, in the epoch's range: see master.ts), chance from the injected random
// source; nothing here reads a clock, sets a timer or touches a socket. The shell calls `step(now, {type: 'tick'})` at `nextWakeMs()`.
//
// What must hold: nothing that depends on a registry change (an ack to an agent, a launch,
// an update to a framework, an answer) is emitted before the change is committed — the core
// emits `propose` and waits for `committed` with the same proposal id.
//
// This file is the one dispatch: every input, every scheduler call and every timer is sent to
// the concern that handles it, over the one state of leader-state.ts. The concerns, each in a
// file of its own: agents.ts (connections, frames, registration), agent-liveness.ts (pings,
// gossip), subscriptions.ts (SUBSCRIBE, failover, heartbeats, teardown), launches.ts (ACCEPT,
// DECLINE, kills), updates.ts (status updates, acknowledgements, reconciliation),
// allocation.ts (offers made and taken back), quotas.ts, preempting.ts (REQUEST), operators.ts.

import type { UsageReport } from '../../shared/agent-messages.ts';
import type { Allocator } from '../allocator/allocator.ts';
import type { MasterMetrics } from '../metrics.ts';
import type { OfferBook } from '../offers.ts';
import { judgeAgents, judgeConfirmed, nextConfirmationMs, pingRound } from './agent-liveness.ts';
import { agentConnected, agentDisconnected, agentFrame, badAgentFrame, restoreAgents } from './agents.ts';
import { allocate } from './allocation.ts';
import { accept, decline, frameworkKill } from './launches.ts';
import { LeaderState, type LeaderCoreOptions } from './leader-state.ts';
import type { LeaderEffect, LeaderInput, SchedulerCall, StreamId } from './messages.ts';
import { operator } from './operators.ts';
import { expirePreemptions, request, resumePreemptions } from './preempting.ts';
import { setQuotas } from './quotas.ts';
import { expireFailovers, nextSubscriptionWakeMs, requireSession, restoreFrameworks, sendHeartbeats, streamClosed, subscribe, teardown } from './subscriptions.ts';
import { acknowledge, reconcile, resendUnacknowledged } from './updates.ts';

export type { LeaderCoreOptions } from './leader-state.ts';

export class LeaderCore {
  readonly allocator: Allocator;
  readonly offers: OfferBook;
  readonly metrics: MasterMetrics;
  readonly startedAtMs: number;
  private readonly leader: LeaderState;

  constructor(opts: LeaderCoreOptions) {
    const leader = new LeaderState(opts);
    this.leader = leader;
    this.allocator = leader.allocator;
    this.offers = leader.offers;
    this.metrics = leader.metrics;
    this.startedAtMs = leader.startedAtMs;
    setQuotas(leader, [...leader.registry().quotas.values()]);
    restoreFrameworks(leader);
    restoreAgents(leader);
    resumePreemptions(leader);
  }

  // ------------------------------------------------------------------ the entry point

  /**
   * Feeds one input and returns what to do, in order. Throws CairnError only for a
   * scheduler call, subscription or operator call that is invalid — and then nothing has
   * changed and no effect is lost.
   */
  step(nowMs: number, input: LeaderInput): LeaderEffect[] {
    const leader = this.leader;
    // `nowMs` is the shell's steady clock (shared/steady-clock.ts), never the wall clock: fed
    // wall time, a step forward then back held every timer here at the high-water mark until
    // the wall clock caught up (an hour's step froze failure detection for an hour). On a
    // monotonic clock this keeps only a shell's same-millisecond reorderings from moving time back.
    if (nowMs > leader.nowMs) leader.nowMs = nowMs;
    leader.take(); // what an earlier step that threw had collected
    if (leader.stopped) return [];
    switch (input.type) {
      case 'agent_connected':
        agentConnected(leader, input);
        break;
      case 'agent_disconnected':
        agentDisconnected(leader, input.conn);
        break;
      case 'agent_bad_frame':
        badAgentFrame(leader, input.conn, input.error);
        break;
      case 'agent_frame':
        agentFrame(leader, input.conn, input.frame);
        break;
      case 'subscribe':
        subscribe(leader, input.request, input.stream, input.spec);
        break;
      case 'stream_closed':
        streamClosed(leader, input.stream);
        break;
      case 'scheduler_call':
        this.schedulerCall(input.call, input.streamId);
        break;
      case 'operator':
        operator(leader, input.request, input.call);
        break;
      case 'gossip_changed':
        judgeAgents(leader, input.agentIds);
        break;
      case 'committed':
        leader.settle(input.proposal, { events: input.events });
        break;
      case 'proposal_failed':
        leader.settle(input.proposal, { message: input.message });
        break;
      case 'tick':
        this.tick();
        break;
      case 'allocate':
        leader.allocationRequested = false;
        allocate(leader);
        break;
    }
    return leader.take();
  }

  /** When the core next needs a `tick`, at the latest. */
  nextWakeMs(): number {
    const leader = this.leader;
    return Math.min(leader.nextPingRoundMs, leader.nextAllocationMs, leader.nextResendMs, nextSubscriptionWakeMs(leader), nextConfirmationMs(leader));
  }

  /** Ends every stream and connection; the core takes no more input. */
  stop(): LeaderEffect[] {
    const leader = this.leader;
    if (leader.stopped) return [];
    leader.take();
    for (const s of leader.sessions.values()) leader.emit({ type: 'end_stream', stream: s.stream });
    for (const c of leader.conns.values()) leader.emit({ type: 'close_agent', conn: c.conn, code: 1001, reason: 'master stopping' });
    leader.sessions.clear();
    leader.conns.clear();
    leader.links.clear();
    leader.pending.clear();
    leader.stopped = true;
    return leader.take();
  }

  // ------------------------------------------------------------------ queries (soft state)

  isConnected(agentId: string): boolean {
    return this.leader.links.has(agentId);
  }

  frameworkConnected(frameworkId: string): boolean {
    return this.leader.sessions.has(frameworkId);
  }

  /** The latest usage sums of a connected agent; undefined when none came yet. */
  agentUsageReport(agentId: string): UsageReport | undefined {
    return this.leader.usage.get(agentId);
  }

  /** Proposals handed to the log and not yet answered (for tests and the simulator). */
  get pendingProposals(): number {
    return this.leader.pending.size;
  }

  // ------------------------------------------------------------------ dispatch

  /** The timers, in this order: liveness, failovers, preemptions, heartbeats, re-sends, allocation. */
  private tick(): void {
    const leader = this.leader;
    const now = leader.nowMs;
    if (now >= leader.nextPingRoundMs) {
      leader.nextPingRoundMs = now + leader.config.pingIntervalMs;
      pingRound(leader);
    } else {
      judgeConfirmed(leader);
    }
    expireFailovers(leader);
    expirePreemptions(leader);
    sendHeartbeats(leader);
    if (now >= leader.nextResendMs) {
      leader.nextResendMs = now + leader.config.updateRetryMs;
      resendUnacknowledged(leader);
    }
    if (now >= leader.nextAllocationMs) {
      leader.nextAllocationMs = now + leader.config.allocationIntervalMs;
      allocate(leader);
    }
  }

  private schedulerCall(call: SchedulerCall, streamId: StreamId | undefined): void {
    const leader = this.leader;
    requireSession(leader, call.frameworkId, streamId);
    leader.metrics.calls.set(call.type, (leader.metrics.calls.get(call.type) ?? 0) + 1);
    switch (call.type) {
      case 'ACCEPT':
        return accept(leader, call);
      case 'DECLINE':
        return decline(leader, call);
      case 'REVIVE':
        leader.allocator.revive(call.frameworkId);
        leader.requestAllocation();
        return;
      case 'SUPPRESS':
        leader.allocator.suppress(call.frameworkId);
        return;
      case 'KILL':
        return frameworkKill(leader, call);
      case 'ACKNOWLEDGE':
        return acknowledge(leader, call);
      case 'RECONCILE':
        return reconcile(leader, call);
      case 'TEARDOWN':
        teardown(leader, call.frameworkId, 'torn down by the framework');
        return;
      case 'REQUEST':
        request(leader, call);
        return;
    }
  }
}
