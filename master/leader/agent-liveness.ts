// Agent liveness on the leader: a ping round every ping interval, gossip's second opinion
// confirmed by a ping of its own, and the verdict (liveness-verdict.ts) carried out — a
// connection closed, or the agent marked unreachable and its offers rescinded.

import { judgeAgent } from './liveness-verdict.ts';
import { recoverOffers } from './allocation.ts';
import type { LeaderState } from './leader-state.ts';
import { forwardEvents } from './updates.ts';

/** A confirming ping's answer may come just after the window; judge a little later. */
const CONFIRM_SLACK_MS = 10;

/** Pings every registered agent (counting the unanswered ones) and judges every agent. */
export function pingRound(leader: LeaderState): void {
  const now = leader.nowMs;
  for (const c of leader.links.values()) {
    if (c.awaitingPong) c.missedPings++;
    c.awaitingPong = true;
    leader.sendConn(c, { ping: { sentMs: now } });
  }
  judgeAgents(leader, undefined);
}

/** Judges again the agents whose confirming ping has had its time. */
export function judgeConfirmed(leader: LeaderState): void {
  const now = leader.nowMs;
  const due = [...leader.confirmations].filter(([, sent]) => now >= confirmDueMs(leader, sent)).map(([id]) => id);
  if (due.length > 0) judgeAgents(leader, due);
}

/** When the earliest confirming ping is due to be judged (Infinity: none out). */
export function nextConfirmationMs(leader: LeaderState): number {
  let t = Infinity;
  for (const sent of leader.confirmations.values()) t = Math.min(t, confirmDueMs(leader, sent));
  return t;
}

function confirmDueMs(leader: LeaderState, sentMs: number): number {
  return sentMs + leader.liveness.confirmMs + CONFIRM_SLACK_MS;
}

/**
 * Applies the liveness verdict (liveness-verdict.ts) to the given agents (default: every
 * reachable one): pings and, when there is one, gossip's opinion.
 */
export function judgeAgents(leader: LeaderState, agentIds: Iterable<string> | undefined): void {
  const state = leader.registry();
  const now = leader.nowMs;
  for (const agentId of agentIds ?? [...state.agents.keys()]) {
    if (!state.agents.get(agentId)?.reachable) {
      leader.confirmations.delete(agentId);
      continue;
    }
    const c = leader.links.get(agentId);
    const gossip = leader.gossip?.(agentId);
    if (gossip !== 'dead' && gossip !== 'left') leader.confirmations.delete(agentId);
    const verdict = judgeAgent({
      nowMs: now,
      gossip,
      connected: c !== undefined,
      missedPings: c?.missedPings ?? 0,
      lastHeardMs: leader.lastSeenMs.get(agentId) ?? now,
      confirmSentAtMs: leader.confirmations.get(agentId),
    }, leader.liveness);
    if (verdict.action === 'confirm') {
      if (c) leader.sendConn(c, { ping: { sentMs: now } });
      leader.confirmations.set(agentId, now);
    } else if (verdict.action === 'disconnect' && c) {
      leader.log('warn', 'agent silent on its connection but alive in gossip: closing the connection for it to reconnect', { agentId });
      leader.closeConn(c, 1000, 'missed too many pings');
      leader.links.delete(agentId);
    } else if (verdict.action === 'unreachable') {
      if (c) {
        leader.closeConn(c, 1000, 'missed too many pings');
        leader.links.delete(agentId);
      }
      leader.confirmations.delete(agentId);
      markUnreachable(leader, agentId, verdict.reason, verdict.orderly === true);
    }
  }
}

function markUnreachable(leader: LeaderState, agentId: string, reason: string, orderly: boolean): void {
  const state = leader.registry();
  const agent = state.agents.get(agentId);
  if (!agent?.reachable) return;
  // An agent that said goodbye stopped as its operator asked: the same state, but no fault to warn of.
  if (orderly) leader.log('info', 'agent stopped: it left the cluster (unreachable until it registers again)', { agentId, host: agent.hostname, reason });
  else leader.log('warn', 'agent unreachable', { agentId, host: agent.hostname, reason });
  recoverOffers(leader, (o) => o.agentId === agentId, true);
  if (leader.allocator.hasAgent(agentId)) leader.allocator.setAgentActive(agentId, false);
  const n = state.activeTasksOn(agentId).length;
  // Stale once the agent registers again before this commits: the state machine then ignores
  // it, and the registration has already put the agent back in the allocator.
  leader.propose({ type: 'agent_unreachable', agentId, uuids: leader.uuids(n), atMs: leader.nowMs, registrations: agent.registrations ?? 0 }, (events) => forwardEvents(leader, events));
}
