// When the leader marks an agent unreachable: its own pings over the agent's WebSocket, with
// gossip as a second opinion. A pure function of the facts, so that every case is a test.
//
// - Pings alone (no gossip, or gossip does not know the agent): unreachable once
//   `maxMissedPings` pings in a row go unanswered, or once a disconnected agent has been gone
//   for that whole window — Mesos' rule.
// - Gossip declared the agent dead (or it left): no waiting for the window. Without a
//   connection it is unreachable at once; with one, a ping goes out to confirm, and silence
//   for `confirmMs` makes it unreachable (an answer means gossip was wrong — a UDP-only fault —
//   and the socket's word stands). An agent that left said goodbye itself (an orderly stop,
//   authenticated like all gossip): its verdict is `orderly`, logged as a stop, not a fault.
// - Gossip still sees the agent alive but the WebSocket is silent or gone: the agent runs and
//   is reachable, only its connection broke. A silent socket is closed so the agent reconnects,
//   and it gets `aliveGraceMs` beyond the window to do so before it is marked.

import type { MemberState } from '../../shared/gossip/messages.ts';

export interface LivenessPolicy {
  readonly pingIntervalMs: number;
  readonly maxMissedPings: number;
  /** After gossip declares an agent dead, how long its open socket has to answer a ping. */
  readonly confirmMs: number;
  /** Time beyond the ping window for an agent gossip sees alive to reconnect. */
  readonly aliveGraceMs: number;
}

export interface AgentLivenessFacts {
  readonly nowMs: number;
  /** The agent's state in gossip; undefined when gossip is off or does not know it. */
  readonly gossip: MemberState | undefined;
  /** A registered WebSocket to the agent is open. */
  readonly connected: boolean;
  /** Pings in a row unanswered on that socket. */
  readonly missedPings: number;
  /** When the agent was last heard from (registration, a pong, or its socket closing). */
  readonly lastHeardMs: number;
  /** When a ping went out to confirm gossip's verdict; undefined when none did. */
  readonly confirmSentAtMs: number | undefined;
}

export type LivenessVerdict =
  | { readonly action: 'keep' }
  /** Send a ping now and judge again after confirmMs. */
  | { readonly action: 'confirm' }
  /** Close the silent socket (the agent will reconnect); not unreachable yet. */
  | { readonly action: 'disconnect' }
  | { readonly action: 'unreachable'; readonly reason: string; readonly orderly?: true };

const KEEP: LivenessVerdict = { action: 'keep' };

/** Defaults from the ping settings: confirm within one ping interval (at most 2 s); one more window of grace. */
export function livenessPolicy(pingIntervalMs: number, maxMissedPings: number): LivenessPolicy {
  return { pingIntervalMs, maxMissedPings, confirmMs: Math.min(pingIntervalMs, 2_000), aliveGraceMs: pingIntervalMs * maxMissedPings };
}

export function judgeAgent(f: AgentLivenessFacts, p: LivenessPolicy): LivenessVerdict {
  const windowMs = p.pingIntervalMs * p.maxMissedPings;
  const pingsMissed = f.connected && f.missedPings >= p.maxMissedPings;
  if (f.gossip === 'dead' || f.gossip === 'left') {
    const said = f.gossip === 'dead' ? 'gossip declared it dead' : 'it left the gossip cluster';
    const orderly = f.gossip === 'left' ? { orderly: true as const } : {};
    if (!f.connected) return { action: 'unreachable', reason: `${said} and it has no connection`, ...orderly };
    if (pingsMissed) return { action: 'unreachable', reason: `${said} and it missed ${f.missedPings} pings`, ...orderly };
    if (f.confirmSentAtMs === undefined) return { action: 'confirm' };
    if (f.lastHeardMs >= f.confirmSentAtMs) return KEEP; // it answered: the socket's word stands
    if (f.nowMs - f.confirmSentAtMs >= p.confirmMs) return { action: 'unreachable', reason: `${said} and it did not answer a ping within ${p.confirmMs} ms`, ...orderly };
    return KEEP;
  }
  const silentTooLong = f.connected ? pingsMissed : f.nowMs - f.lastHeardMs >= windowMs;
  if (!silentTooLong) return KEEP;
  if (f.gossip === 'alive' || f.gossip === 'suspect') {
    if (f.connected) return { action: 'disconnect' };
    if (f.nowMs - f.lastHeardMs < windowMs + p.aliveGraceMs) return KEEP;
    return { action: 'unreachable', reason: `gone for ${f.nowMs - f.lastHeardMs} ms, past the window and the grace gossip earned it` };
  }
  return f.connected
    ? { action: 'unreachable', reason: `missed ${f.missedPings} pings` }
    : { action: 'unreachable', reason: `gone for ${f.nowMs - f.lastHeardMs} ms` };
}
