// A fixed set of seeds of the Raft simulation (test/sim/raft.sim.ts): faults, crashes,
// membership changes and snapshots, with the safety properties checked at every step, a
// liveness phase, and a linearizability check of the clients' history. More seeds:
// `npm run sim -- raft --seeds N`.

import { describe, expect, it } from 'vitest';
import { runSeed } from '../sim/raft.sim.ts';

// Seeds that once found a bug, kept as regressions:
const REGRESSIONS: Record<number, string> = {
  1: 'a restarted node re-applied entries from the first index kept rather than from its snapshot',
  7: 'a follower stalled for good when every append in a full inflight window was lost',
  80: 'reads sent to a stale leader were counted as unanswered writes (harness)',
  339: 'a removed leader stepped down before the remaining voters knew the removal was committed',
  1003: 'a stale leader, elected late in an older term, was held to entries committed in a newer term (checker)',
  2486: 'writes taken by a leader deposed while the group settled were counted as unanswered (harness)',
};

const BATCHES = 6;
const PER_BATCH = 20;

describe('raft simulation', () => {
  it.each(Object.keys(REGRESSIONS).map(Number))('regression seed %i', (seed) => {
    const r = runSeed(seed);
    expect(r.linearizable).toBe(true);
  });

  for (let b = 0; b < BATCHES; b++) {
    const first = 1000 + b * PER_BATCH;
    it(`seeds ${first}..${first + PER_BATCH - 1}: safe, live and linearizable`, () => {
      let operations = 0;
      let crashes = 0;
      let changes = 0;
      for (let seed = first; seed < first + PER_BATCH; seed++) {
        const r = runSeed(seed);
        expect(r.linearizable, `seed ${seed}`).not.toBe(false);
        operations += r.operations;
        crashes += r.cluster.crashes;
        changes += r.cluster.confChangesApplied;
      }
      // The batch really exercised something.
      expect(operations).toBeGreaterThan(PER_BATCH * 50);
      expect(crashes).toBeGreaterThan(0);
      expect(changes).toBeGreaterThan(0);
    });
  }

  it('one seed replays identically', () => {
    expect(runSeed(4242)).toEqual(runSeed(4242));
  });
});
