// The small pure pieces under the Raft core: majority arithmetic, the inflight window,
// a follower's progress states, the seeded random source and the options compiler.

import { describe, expect, it } from 'vitest';
import { isQuorum, quorumMatchIndex, quorumSize, voteResult } from '../../shared/raft/quorum.ts';
import { Inflights } from '../../shared/raft/inflights.ts';
import { Progress } from '../../shared/raft/progress.ts';
import { SeededRandom } from '../../shared/random.ts';
import { compileRaftConfig, RAFT_DEFAULTS } from '../../shared/raft/config.ts';
import { planReplacement } from '../../shared/raft/confchange.ts';

describe('quorum', () => {
  it('counts majorities', () => {
    expect([1, 2, 3, 4, 5].map(quorumSize)).toEqual([1, 2, 2, 3, 3]);
    // Matched indexes 9, 7, 5, 3, 1 in a group of five: three of them hold 5.
    const match = new Map([[1, 9], [2, 7], [3, 5], [4, 3], [5, 1]]);
    expect(quorumMatchIndex(match.keys(), (id) => match.get(id)!)).toBe(5);
    expect(quorumMatchIndex([], () => 9)).toBe(0);
    expect(isQuorum([1, 2, 3], (id) => id !== 3)).toBe(true);
    expect(isQuorum([1, 2, 3, 4], (id) => id <= 2)).toBe(false);
  });

  it('decides elections as soon as the outcome is certain', () => {
    const votes = (entries: [number, boolean][]) => new Map(entries);
    expect(voteResult([1, 2, 3], votes([[1, true]]))).toBe('pending');
    expect(voteResult([1, 2, 3], votes([[1, true], [2, true]]))).toBe('won');
    expect(voteResult([1, 2, 3], votes([[1, true], [2, false]]))).toBe('pending');
    expect(voteResult([1, 2, 3], votes([[1, true], [2, false], [3, false]]))).toBe('lost');
    expect(voteResult([1, 2, 3, 4], votes([[2, false], [3, false]]))).toBe('lost'); // 2 of 4 cannot reach 3
    expect(voteResult([1, 2, 3], votes([[7, true], [8, true]]))).toBe('pending'); // strangers do not count
  });
});

describe('inflight window', () => {
  it('bounds messages and bytes, and frees by acknowledged index', () => {
    const w = new Inflights(3, 100);
    w.add(5, 10);
    w.add(8, 10);
    expect(w.full()).toBe(false);
    w.add(9, 10);
    expect(w.full()).toBe(true);
    w.freeUpTo(8);
    expect([w.count, w.bytes, w.full()]).toEqual([1, 10, false]);
    w.add(12, 95);
    expect(w.full()).toBe(true); // by bytes
    w.freeOldest();
    expect([w.count, w.bytes]).toEqual([1, 95]);
    w.reset();
    expect(w.count).toBe(0);
  });
});

describe('progress', () => {
  it('probe sends one append at a time; replicate pipelines; a reject falls back to after the match', () => {
    const p = new Progress(11, 4, 0, false);
    expect(p.state).toBe('probe');
    p.sentAppend(10, 0, 0);
    expect(p.isPaused()).toBe(true);
    // The follower rejects prevIndex 10 and hints that it could match at 4.
    expect(p.maybeDecrease(10, 4)).toBe(true);
    expect([p.next, p.isPaused()]).toEqual([5, false]);
    expect(p.maybeDecrease(10, 4)).toBe(false); // stale: that probe was answered already
    expect(p.maybeUpdate(7)).toBe(true);
    p.becomeReplicate();
    expect(p.next).toBe(8);
    p.sentAppend(9, 50, 2);
    p.sentAppend(12, 50, 3);
    expect(p.next).toBe(13);
    expect(p.inflights.count).toBe(2);
    expect(p.maybeDecrease(7, 0)).toBe(false); // at or below match: stale
    expect(p.maybeDecrease(9, 0)).toBe(true);
    expect(p.next).toBe(8);
  });

  it('after a snapshot, probes from just past it', () => {
    const p = new Progress(3, 4, 0, false);
    p.becomeSnapshot(50);
    expect(p.isPaused()).toBe(true);
    p.becomeProbe();
    expect(p.next).toBe(51);
  });
});

describe('seeded random', () => {
  it('replays the same sequence for the same seed, and stays in range', () => {
    const a = new SeededRandom(42);
    const b = new SeededRandom(42);
    const xs = Array.from({ length: 100 }, () => a.int(10));
    expect(Array.from({ length: 100 }, () => b.int(10))).toEqual(xs);
    expect(xs.every((x) => x >= 0 && x < 10)).toBe(true);
    expect(new Set(xs).size).toBe(10);
    expect(new SeededRandom(43).int(1_000_000)).not.toBe(new SeededRandom(42).int(1_000_000));
  });
});

describe('options', () => {
  it('fills defaults and names the field at fault', () => {
    const cfg = compileRaftConfig({ id: 1, random: new SeededRandom(1) });
    expect(cfg.electionTicks).toBe(RAFT_DEFAULTS.electionTicks);
    expect(Object.isFrozen(cfg)).toBe(true);
    const bad = (o: object) => {
      try {
        compileRaftConfig({ id: 1, random: new SeededRandom(1), ...o });
      } catch (err) {
        return (err as { field: string }).field;
      }
      return 'accepted';
    };
    expect(bad({ id: 0 })).toBe('id');
    expect(bad({ electionTicks: 1 })).toBe('electionTicks');
    expect(bad({ heartbeatTicks: 10 })).toBe('heartbeatTicks');
    expect(bad({ maxInflightMessages: 0 })).toBe('maxInflightMessages');
    expect(bad({ random: undefined })).toBe('random');
  });
});

describe('replacement plan', () => {
  it('is add as learner, promote, remove — refused when it makes no sense', () => {
    const cs = { voters: [1, 2, 3], learners: [] };
    expect(planReplacement(cs, 2, 4)).toEqual([
      { type: 'addLearner', nodeId: 4 },
      { type: 'promote', nodeId: 4 },
      { type: 'remove', nodeId: 2 },
    ]);
    expect(() => planReplacement(cs, 9, 4)).toThrowError(expect.objectContaining({ code: 'CAIRN_RAFT_BAD_CHANGE' }));
    expect(() => planReplacement(cs, 2, 3)).toThrowError(expect.objectContaining({ code: 'CAIRN_RAFT_BAD_CHANGE' }));
  });
});
