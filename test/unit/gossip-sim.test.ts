// Gossip membership in the seeded network simulation (test/sim/gossip.sim.ts), at fixed seeds.
// Each scenario checks its invariants on every event and throws with `reproduce with --seed N`;
// here we also pin the figures the issue asks for. Longer runs: `npm run sim -- gossip`.

import { describe, expect, it } from 'vitest';
import { detection, joins, lifeguard, lifeguardAblation } from '../sim/gossip.sim.ts';

describe('gossip simulation', () => {
  it('declares a crashed member dead at all 999 others, within the SWIM bound (1,000 members, 1% loss)', () => {
    const r = detection({ seed: 1, members: 1_000, crashes: 10 });
    // First detection: e/(e-1) ≈ 1.6 periods in SWIM's synchronous rounds; here probes are out
    // of phase and a suspicion is raised at the end of the probe's own period.
    expect(r.firstDetectionPeriods.mean).toBeLessThanOrEqual(r.bounds.firstDetectionMeanPeriods);
    expect(r.firstDetectionPeriods.median).toBeLessThanOrEqual(2);
    // Confirmations from the members that probe the suspect bring the suspicion down to its
    // minimum (12 s at 1,000 members) from the lone-accuser maximum (72 s).
    expect(r.suspicionMinMs).toBe(12_000);
    expect(r.allDeadMs.p99).toBeLessThan(r.firstDetectionMs.p99 + r.suspicionMinMs + 5_000);
  });

  it('declares no healthy member dead over 10 minutes of 10% loss with a slow member (Lifeguard)', () => {
    const r = lifeguard({ seed: 3, members: 100 });
    expect(r.falsePositives).toBe(0);
    // The loss does make members suspect each other (all refuted), and the slow member does stall.
    expect(r.falseSuspicionEvents).toBeGreaterThan(1_000);
    expect(r.slowMember.stalledFraction).toBeGreaterThan(0.5);
    expect(r.slowMember.maxHealthScore).toBe(7);
  });

  it('shows what local health awareness buys: with fixed suspicion timeouts, the slow member declares healthy members dead only without it', () => {
    const { on, off } = lifeguardAblation(3, 100);
    expect(off.falsePositivesBySlowMember).toBeGreaterThan(0);
    expect(on.falsePositivesBySlowMember).toBe(0);
    expect(on.falsePositives).toBe(0);
    expect(on.slowMember.accusations).toBeLessThan(off.slowMember.accusations);
  });

  it('converges after members join one by one through a single random member each', () => {
    const r = joins({ seed: 1, members: 500, joinsPerSecond: 50 });
    expect(r.convergedAfterLastJoinMs).toBeLessThan(60_000);
  });
});
