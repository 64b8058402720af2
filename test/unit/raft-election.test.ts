// Leader election, tied to the sentences of the Raft paper (§5.2, §5.4.1) and of Ongaro's
// dissertation (§9.6 PreVote, §6.2 CheckQuorum, §4.2.3 leader lease).

import { describe, expect, it } from 'vitest';
import { RaftNode } from '../../shared/raft/node.ts';
import { MemoryStorage } from '../../shared/raft/memory-storage.ts';
import { SeededRandom } from '../../shared/random.ts';
import type { Message } from '../../shared/raft/types.ts';
import { RaftHarness } from '../sim/raft-harness.ts';

const E = 10; // default election timeout in ticks

describe('election (§5.2)', () => {
  it('a follower that hears nothing for a randomized timeout in [E, 2E) campaigns', () => {
    const seen = new Set<number>();
    for (let seed = 1; seed <= 20; seed++) {
      const h = new RaftHarness([1, 2, 3], { seed });
      h.drop = () => true;
      const n = h.get(1).node;
      let ticks = 0;
      while (n.role === 'follower' && ticks < 100) {
        n.tick();
        ticks++;
      }
      expect(ticks).toBeGreaterThanOrEqual(E);
      expect(ticks).toBeLessThan(2 * E);
      expect(n.role).toBe('preCandidate');
      seen.add(ticks);
    }
    // Randomized: not everyone times out together.
    expect(seen.size).toBeGreaterThan(3);
  });

  it('a candidate that wins a majority becomes leader, and its first entry commits everywhere', () => {
    const h = new RaftHarness([1, 2, 3]);
    h.elect(1);
    expect(h.leaders()).toEqual([1]);
    for (const n of h.nodes.values()) {
      const st = n.node.status();
      expect(st.term).toBe(2);
      expect(st.leader).toBe(1);
      // Bootstrap snapshot at 1, the leader's empty entry at 2.
      expect(st.commit).toBe(2);
    }
  });

  it('elections happen by themselves when nodes just tick', () => {
    const h = new RaftHarness([1, 2, 3, 4, 5], { seed: 7 });
    h.tick(3 * E);
    expect(h.leaders()).toHaveLength(1);
  });

  it('a node grants one vote per term, to the first candidate that asks', () => {
    const s = new MemoryStorage();
    s.bootstrap([1, 2, 3]);
    const n = new RaftNode({ id: 1, random: new SeededRandom(1), checkQuorum: false }, s);
    const vote = (from: number): Message => ({ type: 'vote', from, to: 1, term: 5, lastIndex: 1, lastTerm: 1, transfer: false });
    n.step(vote(2));
    n.step(vote(3));
    n.step(vote(2)); // a retransmission from the same candidate is granted again
    const rd = n.ready();
    expect(rd.messages.map((m) => [m.to, m.type, 'reject' in m && m.reject])).toEqual([
      [2, 'voteResponse', false],
      [3, 'voteResponse', true],
      [2, 'voteResponse', false],
    ]);
    // The vote leaves together with the hard state recording it: persist, then send.
    expect(rd.hardState).toEqual({ term: 5, vote: 2, commit: 1 });
    expect(rd.mustSync).toBe(true);
  });
});

describe('election restriction (§5.4.1)', () => {
  function groupWhereNode3MissedAnEntry(preVote: boolean): RaftHarness {
    const h = new RaftHarness([1, 2, 3], { checkQuorum: false, preVote });
    h.elect(1);
    h.drop = (m) => m.to === 3;
    h.propose(1, 'x'); // on 1 and 2 only: committed by the majority {1, 2}
    h.heal();
    h.get(1).up = false; // the leader dies
    expect(h.get(2).node.lastIndex).toBe(3);
    expect(h.get(3).node.lastIndex).toBe(2);
    return h;
  }

  it('a candidate whose log is behind a majority does not win (with PreVote)', () => {
    const h = groupWhereNode3MissedAnEntry(true);
    const before = h.get(2).node.term;
    h.elect(3);
    expect(h.get(3).node.role).not.toBe('leader');
    // A pre-vote round that fails changes nobody's term.
    expect(h.get(2).node.term).toBe(before);
    expect(h.get(3).node.term).toBe(before);
    h.elect(2);
    expect(h.leaders()).toEqual([2]);
    expect(h.get(2).applied).toEqual(['x']);
  });

  it('a candidate whose log is behind a majority does not win (without PreVote)', () => {
    const h = groupWhereNode3MissedAnEntry(false);
    h.elect(3);
    // Node 2 said no; node 1 is down, so node 3 waits as a candidate and never wins.
    expect(h.get(3).node.role).toBe('candidate');
    h.elect(2);
    expect(h.leaders()).toEqual([2]);
  });

  it('the committed entry survives: the new leader has it and the stale node gets it', () => {
    const h = groupWhereNode3MissedAnEntry(true);
    h.elect(2);
    h.propose(2, 'y');
    expect(h.get(3).applied).toEqual(['x', 'y']);
  });
});

describe('CheckQuorum (§6.2)', () => {
  it('a leader that stops hearing from a quorum steps down within two election timeouts', () => {
    const h = new RaftHarness([1, 2, 3]);
    h.elect(1);
    h.isolate(1);
    for (let i = 0; i < 2 * E; i++) {
      h.get(1).node.tick();
      h.deliverAll();
    }
    expect(h.get(1).node.role).toBe('follower');
    expect(h.get(1).node.leader).toBe(0);
  });

  it('a leader that hears from a quorum stays leader', () => {
    const h = new RaftHarness([1, 2, 3]);
    h.elect(1);
    h.drop = (m) => m.to === 3 || m.from === 3; // one follower lost, quorum kept
    h.tick(5 * E, [1]);
    expect(h.get(1).node.role).toBe('leader');
  });

  it('a follower hearing from its leader ignores a vote request (leader lease)', () => {
    const h = new RaftHarness([1, 2, 3]);
    h.elect(1);
    const n2 = h.get(2).node;
    const term = n2.term;
    n2.step({ type: 'vote', from: 3, to: 2, term: term + 5, lastIndex: 100, lastTerm: term + 4, transfer: false });
    expect(n2.term).toBe(term);
    expect(h.get(2).drain()).toEqual([]);
  });
});

describe('PreVote (§9.6)', () => {
  it('a partitioned node rejoining does not depose a healthy leader', () => {
    const h = new RaftHarness([1, 2, 3], { seed: 3 });
    h.elect(1);
    const term = h.get(1).node.term;
    h.isolate(3);
    h.tick(10 * E);
    // Node 3 kept asking "would you vote for me" without raising its term.
    expect(h.get(3).node.term).toBe(term);
    h.heal();
    h.tick(3 * E);
    expect(h.leaders()).toEqual([1]);
    expect(h.get(1).node.term).toBe(term);
    expect(h.get(3).node.leader).toBe(1);
  });

  it('without PreVote and CheckQuorum the rejoining node does depose the leader (the problem PreVote solves)', () => {
    const h = new RaftHarness([1, 2, 3], { seed: 3, preVote: false, checkQuorum: false });
    h.elect(1);
    const term = h.get(1).node.term;
    h.isolate(3);
    h.tick(10 * E);
    expect(h.get(3).node.term).toBeGreaterThan(term + 3);
    h.heal();
    h.tick(1);
    expect(h.get(1).node.term).toBeGreaterThan(term);
  });
});

describe('a broken connection to the leader (transport hint)', () => {
  it('lets followers that lost the leader elect a new one within a few ticks', () => {
    const h = new RaftHarness([1, 2, 3], { seed: 3 });
    h.elect(1);
    h.get(1).up = false; // crashed: its sockets reset
    for (const id of [2, 3]) h.get(id).node.reportLeaderConnectionLost(1);
    let ticks = 0;
    while (h.leaders().filter((l) => l !== 1).length === 0 && ticks < E) {
      h.tick(1, [2, 3]);
      ticks++;
    }
    expect(h.leaders().filter((l) => l !== 1)).toHaveLength(1);
    expect(ticks).toBeLessThanOrEqual(4); // not a whole election timeout (≥ E ticks)
  });

  it('does not depose a live leader when only one follower lost its connection', () => {
    const h = new RaftHarness([1, 2, 3], { seed: 4 });
    h.elect(1);
    const term = h.get(1).node.term;
    h.get(2).node.reportLeaderConnectionLost(1);
    // Node 2 cannot hear the leader any more; node 3 still does and refuses the pre-vote.
    h.drop = (m) => (m.from === 1 && m.to === 2) || (m.from === 2 && m.to === 1);
    h.tick(E - 1);
    expect(h.get(1).node.role).toBe('leader');
    expect(h.get(1).node.term).toBe(term);
  });
});
