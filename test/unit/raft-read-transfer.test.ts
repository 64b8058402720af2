// Linearizable reads through ReadIndex (dissertation §6.4) and leadership transfer (§3.10).

import { describe, expect, it } from 'vitest';
import { RaftHarness } from '../sim/raft-harness.ts';

const E = 10;
const ctx = (s: string) => new TextEncoder().encode(s);
const text = (b: Uint8Array) => new TextDecoder().decode(b);

describe('ReadIndex (§6.4)', () => {
  it('a leader confirms its leadership with a heartbeat round, then answers with its commit index', () => {
    const h = new RaftHarness([1, 2, 3]);
    h.elect(1);
    h.propose(1, 'a');
    const commit = h.get(1).node.commitIndex;
    const leader = h.get(1);
    expect(leader.node.readIndex(ctx('r1'))).toBe(true);
    const out = leader.drain();
    expect(out.filter((m) => m.type === 'heartbeat' && m.context.length > 0)).toHaveLength(2);
    expect(leader.readStates).toEqual([]); // not before a quorum answered
    h.queue.push(...out);
    h.deliverAll();
    expect(leader.readStates.map((r) => [r.index, text(r.context)])).toEqual([[commit, 'r1']]);
  });

  it('a follower gets a read index from the leader', () => {
    const h = new RaftHarness([1, 2, 3]);
    h.elect(1);
    h.propose(1, 'a');
    expect(h.get(3).node.readIndex(ctx('f1'))).toBe(true);
    h.deliverAll();
    expect(h.get(3).readStates.map((r) => [r.index, text(r.context)])).toEqual([[h.get(1).node.commitIndex, 'f1']]);
  });

  it('a leader cut off from the quorum never confirms a read (it may no longer be leader)', () => {
    const h = new RaftHarness([1, 2, 3]);
    h.elect(1);
    h.isolate(1);
    h.get(1).node.readIndex(ctx('stale?'));
    h.tick(3 * E, [2, 3]);
    h.propose(h.leaders().find((id) => id !== 1)!, 'newer');
    h.tick(2 * E, [1]);
    expect(h.get(1).readStates).toEqual([]);
    expect(h.get(1).node.role).toBe('follower');
  });

  it('a new leader holds reads until an entry of its own term commits', () => {
    const h = new RaftHarness([1, 2, 3]);
    h.drop = (m) => m.type === 'appendResponse'; // the first entry of the term does not commit
    h.elect(1);
    const leader = h.get(1);
    leader.node.readIndex(ctx('early'));
    h.tick(2);
    expect(leader.readStates).toEqual([]);
    h.heal();
    h.tick(2);
    expect(leader.readStates.map((r) => text(r.context))).toEqual(['early']);
    expect(leader.readStates[0].index).toBeGreaterThanOrEqual(2);
  });

  it('with no leader known, a read is dropped at once so the caller can retry', () => {
    const h = new RaftHarness([1, 2, 3]);
    expect(h.get(2).node.readIndex(ctx('nobody'))).toBe(false);
  });

  it('a single-voter group answers reads without a round trip', () => {
    const h = new RaftHarness([1]);
    h.elect(1);
    h.get(1).node.readIndex(ctx('solo'));
    h.get(1).drain();
    expect(h.get(1).readStates.map((r) => text(r.context))).toEqual(['solo']);
  });
});

describe('leadership transfer (§3.10)', () => {
  it('hands leadership to an up-to-date follower in the next term', () => {
    const h = new RaftHarness([1, 2, 3]);
    h.elect(1);
    h.propose(1, 'a');
    const term = h.get(1).node.term;
    h.get(1).node.transferLeadership(2);
    h.deliverAll();
    expect(h.leaders()).toEqual([2]);
    expect(h.get(2).node.term).toBe(term + 1);
    h.propose(2, 'b');
    for (const n of h.nodes.values()) expect(n.applied).toEqual(['a', 'b']);
  });

  it('catches a lagging target up before telling it to campaign', () => {
    const h = new RaftHarness([1, 2, 3]);
    h.elect(1);
    h.drop = (m) => m.to === 3;
    h.propose(1, 'a');
    h.propose(1, 'b');
    h.heal();
    expect(h.get(3).node.lastIndex).toBeLessThan(h.get(1).node.lastIndex);
    h.get(1).node.transferLeadership(3);
    h.deliverAll();
    expect(h.leaders()).toEqual([3]);
    expect(h.get(3).applied).toEqual(['a', 'b']);
  });

  it('refuses proposals while transferring, and gives up after an election timeout if the target is gone', () => {
    const h = new RaftHarness([1, 2, 3]);
    h.elect(1);
    h.get(3).up = false;
    h.propose(1, 'a'); // node 3 now lags
    h.get(1).node.transferLeadership(3);
    expect(() => h.get(1).node.propose(ctx('x'))).toThrowError(expect.objectContaining({ code: 'CAIRN_RAFT_TRANSFERRING' }));
    h.tick(E, [1, 2]);
    expect(h.get(1).node.role).toBe('leader');
    h.propose(1, 'after');
    expect(h.get(2).applied).toEqual(['a', 'after']);
  });

  it('the target wins even though the other followers hold a leader lease', () => {
    const h = new RaftHarness([1, 2, 3, 4, 5]);
    h.elect(1);
    h.get(1).node.transferLeadership(5);
    h.deliverAll();
    expect(h.leaders()).toEqual([5]);
  });

  it('refuses a target that is not a voter, and non-leaders refuse to transfer', () => {
    const h = new RaftHarness([1, 2, 3]);
    h.elect(1);
    expect(() => h.get(1).node.transferLeadership(9)).toThrowError(expect.objectContaining({ code: 'CAIRN_RAFT_BAD_CHANGE' }));
    expect(() => h.get(2).node.transferLeadership(3)).toThrowError(expect.objectContaining({ code: 'CAIRN_NOT_LEADER' }));
  });
});
