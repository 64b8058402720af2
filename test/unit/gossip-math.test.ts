// The pure helpers of SWIM and Lifeguard, and the transmit-limited queue, figure by figure.

import { describe, expect, it } from 'vitest';
import {
  pushPullIntervalMs,
  remainingSuspicionMs,
  retransmitLimit,
  scaleByHealth,
  suspicionTimeoutMs,
  utf8Length,
} from '../../shared/gossip/math.ts';
import { BroadcastQueue } from '../../shared/gossip/broadcast-queue.ts';
import { compileGossipConfig, defaultGossipConfig } from '../../shared/gossip/config.ts';
import type { Broadcast } from '../../shared/gossip/messages.ts';

describe('suspicion timeout', () => {
  it('is mult · max(1, log10 n) probe periods', () => {
    expect(suspicionTimeoutMs(4, 1, 1_000)).toBe(4_000); // log10(1) = 0, floored at 1
    expect(suspicionTimeoutMs(4, 10, 1_000)).toBe(4_000);
    expect(suspicionTimeoutMs(4, 100, 1_000)).toBe(8_000);
    expect(suspicionTimeoutMs(4, 1_000, 1_000)).toBe(12_000);
    expect(suspicionTimeoutMs(4, 1_000, 200)).toBe(2_400);
  });

  it('falls from max to min on a log scale as confirmations arrive (k = 2 expected)', () => {
    const [min, max] = [12_000, 72_000];
    expect(remainingSuspicionMs(0, 2, 0, min, max)).toBe(max); // a lone accuser waits longest
    // One confirmation: max - log(2)/log(3) · (max - min) = 72 - 0.6309 · 60 = 34.144 s
    expect(remainingSuspicionMs(1, 2, 0, min, max)).toBe(34_144);
    expect(remainingSuspicionMs(2, 2, 0, min, max)).toBe(min);
    // Time already waited is subtracted; an overdue suspicion is negative.
    expect(remainingSuspicionMs(2, 2, 5_000, min, max)).toBe(7_000);
    expect(remainingSuspicionMs(2, 2, 20_000, min, max)).toBe(-8_000);
    // No confirmations expected (tiny cluster): min at once.
    expect(remainingSuspicionMs(0, 0, 0, min, max)).toBe(min);
  });
});

describe('retransmit limit', () => {
  it('is mult · ceil(log10(n + 1))', () => {
    expect(retransmitLimit(4, 1)).toBe(4);
    expect(retransmitLimit(4, 9)).toBe(4);
    expect(retransmitLimit(4, 10)).toBe(8);
    expect(retransmitLimit(4, 99)).toBe(8);
    expect(retransmitLimit(4, 100)).toBe(12);
    expect(retransmitLimit(4, 999)).toBe(12);
    expect(retransmitLimit(4, 1_000)).toBe(16);
  });
});

describe('push/pull interval', () => {
  it('stays at the base up to 32 members, then grows one base per doubling', () => {
    expect(pushPullIntervalMs(30_000, 32)).toBe(30_000);
    expect(pushPullIntervalMs(30_000, 33)).toBe(60_000); // ceil(log2 33 - 5) + 1 = 2
    expect(pushPullIntervalMs(30_000, 64)).toBe(60_000);
    expect(pushPullIntervalMs(30_000, 65)).toBe(90_000);
    expect(pushPullIntervalMs(30_000, 1_000)).toBe(180_000); // ceil(9.97 - 5) + 1 = 6
  });
});

describe('local health', () => {
  it('stretches a duration by score + 1', () => {
    expect(scaleByHealth(500, 0)).toBe(500);
    expect(scaleByHealth(500, 7)).toBe(4_000);
  });
});

describe('utf8Length', () => {
  it('counts bytes as UTF-8 encodes them', () => {
    for (const s of ['', 'agent-1', 'é', '€', '𝄞', 'mix é€𝄞 end']) expect(utf8Length(s)).toBe(Buffer.byteLength(s));
  });
});

describe('default configuration', () => {
  it('has memberlist LAN values and validates overrides, naming the field', () => {
    const c = defaultGossipConfig();
    expect(c).toMatchObject({
      probeIntervalMs: 1_000, probeTimeoutMs: 500, indirectChecks: 3, suspicionMult: 4, suspicionMaxTimeoutMult: 6,
      retransmitMult: 4, gossipIntervalMs: 200, gossipNodes: 3, pushPullIntervalMs: 30_000, awarenessMaxMultiplier: 8,
    });
    expect(() => compileGossipConfig({ probeIntervalMs: 0 })).toThrow(/gossip.probeIntervalMs/);
    expect(() => compileGossipConfig({ probeTimeoutMs: 1_000 })).toThrow(/gossip.probeTimeoutMs/);
    expect(Object.isFrozen(compileGossipConfig())).toBe(true);
  });
});

describe('broadcast queue', () => {
  const suspect = (name: string, from = 'x'): Broadcast => ({ type: 'suspect', name, incarnation: 1, from });

  it('sends each item `limit` times, then drops it', () => {
    const q = new BroadcastQueue();
    q.enqueue('a', suspect('a'));
    let sent = 0;
    while (q.take(1_000, 12).length > 0) sent++;
    expect(sent).toBe(12);
    expect(q.size).toBe(0);
  });

  it('sends the least-sent first and, among equals, the newest first', () => {
    const q = new BroadcastQueue();
    q.enqueue('a', suspect('a'));
    q.take(1_000, 10); // a sent once
    q.enqueue('b', suspect('b'));
    q.enqueue('c', suspect('c'));
    const names = q.take(1_000, 10).map((m) => (m as { name: string }).name);
    expect(names).toEqual(['c', 'b', 'a']);
  });

  it('replaces older news about the same member', () => {
    const q = new BroadcastQueue();
    q.enqueue('a', suspect('a', 'x'));
    q.enqueue('a', suspect('a', 'y'));
    expect(q.size).toBe(1);
    expect(q.take(1_000, 4)).toEqual([suspect('a', 'y')]);
  });

  it('fits what it takes into the bytes given', () => {
    const q = new BroadcastQueue();
    for (let i = 0; i < 100; i++) q.enqueue(`m${i}`, suspect(`m${i}`));
    const one = q.take(1_000, 4).length;
    expect(one).toBeGreaterThan(10);
    expect(one).toBeLessThan(100);
    expect(q.take(10, 4)).toEqual([]);
  });
});
