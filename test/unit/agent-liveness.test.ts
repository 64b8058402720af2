// The leader's verdict on an agent: its pings, with gossip as a second opinion.
// Policy throughout: pings every 1 s, 5 missed make the window (5 s), a gossip verdict is
// confirmed within 1 s, and an agent gossip sees alive gets one more window (5 s).

import { describe, expect, it } from 'vitest';
import { judgeAgent, livenessPolicy, type AgentLivenessFacts } from '../../master/leader/liveness-verdict.ts';

const policy = livenessPolicy(1_000, 5);
const T = 100_000;

function facts(f: Partial<AgentLivenessFacts>): AgentLivenessFacts {
  return { nowMs: T, gossip: undefined, connected: true, missedPings: 0, lastHeardMs: T, confirmSentAtMs: undefined, ...f };
}

describe('livenessPolicy', () => {
  it('confirms within one ping interval, at most 2 s, and gives one more window of grace', () => {
    expect(policy).toEqual({ pingIntervalMs: 1_000, maxMissedPings: 5, confirmMs: 1_000, aliveGraceMs: 5_000 });
    expect(livenessPolicy(15_000, 5).confirmMs).toBe(2_000);
  });
});

describe('judgeAgent without gossip (Mesos rule)', () => {
  it('keeps a connected agent until maxMissedPings go unanswered', () => {
    expect(judgeAgent(facts({ missedPings: 4 }), policy)).toEqual({ action: 'keep' });
    expect(judgeAgent(facts({ missedPings: 5 }), policy)).toEqual({ action: 'unreachable', reason: 'missed 5 pings' });
  });

  it('gives a disconnected agent the whole window from when it was last heard', () => {
    expect(judgeAgent(facts({ connected: false, lastHeardMs: T - 4_999 }), policy).action).toBe('keep');
    expect(judgeAgent(facts({ connected: false, lastHeardMs: T - 5_000 }), policy)).toEqual({ action: 'unreachable', reason: 'gone for 5000 ms' });
  });
});

describe('judgeAgent when gossip declares the agent dead', () => {
  it('marks a disconnected agent at once, long before the window', () => {
    expect(judgeAgent(facts({ gossip: 'dead', connected: false, lastHeardMs: T - 10 }), policy))
      .toEqual({ action: 'unreachable', reason: 'gossip declared it dead and it has no connection' });
    expect(judgeAgent(facts({ gossip: 'left', connected: false }), policy).action).toBe('unreachable');
  });

  it('confirms over an open socket first: silence for confirmMs makes it unreachable', () => {
    expect(judgeAgent(facts({ gossip: 'dead', lastHeardMs: T - 800 }), policy)).toEqual({ action: 'confirm' });
    // Waiting for the answer.
    expect(judgeAgent(facts({ gossip: 'dead', lastHeardMs: T - 1_800, confirmSentAtMs: T - 999 }), policy)).toEqual({ action: 'keep' });
    expect(judgeAgent(facts({ gossip: 'dead', lastHeardMs: T - 1_800, confirmSentAtMs: T - 1_000 }), policy))
      .toEqual({ action: 'unreachable', reason: 'gossip declared it dead and it did not answer a ping within 1000 ms' });
  });

  it("keeps an agent that answers the confirming ping: the socket's word stands over gossip's", () => {
    expect(judgeAgent(facts({ gossip: 'dead', lastHeardMs: T - 500, confirmSentAtMs: T - 600 }), policy)).toEqual({ action: 'keep' });
    expect(judgeAgent(facts({ gossip: 'dead', lastHeardMs: T - 5_000, confirmSentAtMs: T - 6_000 }), policy)).toEqual({ action: 'keep' });
  });

  it('calls an agent that left (its own goodbye) an orderly stop, and one declared dead not', () => {
    expect(judgeAgent(facts({ gossip: 'left', connected: false }), policy))
      .toEqual({ action: 'unreachable', reason: 'it left the gossip cluster and it has no connection', orderly: true });
    expect(judgeAgent(facts({ gossip: 'left', lastHeardMs: T - 1_800, confirmSentAtMs: T - 1_000 }), policy)).toMatchObject({ action: 'unreachable', orderly: true });
    expect(judgeAgent(facts({ gossip: 'dead', connected: false }), policy)).not.toHaveProperty('orderly');
    expect(judgeAgent(facts({ connected: false, lastHeardMs: T - 5_000 }), policy)).not.toHaveProperty('orderly');
  });

  it('gives no grace to an agent that also missed its pings', () => {
    expect(judgeAgent(facts({ gossip: 'dead', missedPings: 5, confirmSentAtMs: T - 100 }), policy).action).toBe('unreachable');
  });
});

describe('judgeAgent when gossip still sees the agent alive', () => {
  it('closes a silent socket instead of marking the agent, so that it reconnects', () => {
    expect(judgeAgent(facts({ gossip: 'alive', missedPings: 5 }), policy)).toEqual({ action: 'disconnect' });
    expect(judgeAgent(facts({ gossip: 'suspect', missedPings: 5 }), policy)).toEqual({ action: 'disconnect' });
  });

  it('gives a disconnected agent the grace beyond the window, then marks it', () => {
    expect(judgeAgent(facts({ gossip: 'alive', connected: false, lastHeardMs: T - 5_000 }), policy)).toEqual({ action: 'keep' });
    expect(judgeAgent(facts({ gossip: 'alive', connected: false, lastHeardMs: T - 9_999 }), policy)).toEqual({ action: 'keep' });
    expect(judgeAgent(facts({ gossip: 'alive', connected: false, lastHeardMs: T - 10_000 }), policy).action).toBe('unreachable');
  });

  it('keeps a healthy agent', () => {
    expect(judgeAgent(facts({ gossip: 'alive' }), policy)).toEqual({ action: 'keep' });
  });
});
