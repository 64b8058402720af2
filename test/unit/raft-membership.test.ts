// Single-server membership changes (dissertation §4.1, §4.2.1): learners that catch up
// before they vote, replacement as add-learner/promote/remove, and the refusals — a second
// change while one is pending, a change that would leave no quorum, a learner promoted
// before it caught up, a change that makes no sense — each with a stable code, the group
// unharmed.

import { describe, expect, it } from 'vitest';
import { RaftNode } from '../../shared/raft/node.ts';
import { MemoryStorage } from '../../shared/raft/memory-storage.ts';
import { SeededRandom } from '../../shared/random.ts';
import { applyConfChangeTo, decodeConfChange, encodeConfChange } from '../../shared/raft/confchange.ts';
import { RaftHarness } from '../sim/raft-harness.ts';

const E = 10;

function refused(fn: () => unknown, code: string): void {
  expect(fn).toThrowError(expect.objectContaining({ code }));
}

describe('membership changes', () => {
  it('a learner receives the log, never votes or campaigns, and does not count towards commits', () => {
    const h = new RaftHarness([1, 2, 3]);
    h.elect(1);
    h.propose(1, 'a');
    h.addEmptyNode(4);
    h.get(1).node.proposeConfChange({ type: 'addLearner', nodeId: 4 });
    h.tick(3);
    expect(h.get(1).config).toEqual({ voters: [1, 2, 3], learners: [4] });
    const n4 = h.get(4);
    expect(n4.config).toEqual({ voters: [1, 2, 3], learners: [4] });
    // Node 4 started empty: it got the group's snapshot, then the entries after it.
    expect(n4.applied).toEqual(['<snapshot 1>', 'a']);
    // Two voters down: the learner does not make a quorum.
    h.get(2).up = false;
    h.get(3).up = false;
    const before = h.get(1).node.commitIndex;
    h.propose(1, 'b');
    expect(h.get(1).node.commitIndex).toBe(before);
    // Left alone, the learner never campaigns.
    h.get(1).up = false;
    h.tick(5 * E, [4]);
    expect(n4.node.role).toBe('follower');
  });

  it('replaces a voter: add a learner, promote it once caught up, remove the old one (the leader)', () => {
    const h = new RaftHarness([1, 2, 3], { seed: 4 });
    h.elect(1);
    h.propose(1, 'a');
    h.addEmptyNode(4);
    h.get(1).node.proposeConfChange({ type: 'addLearner', nodeId: 4 });
    h.tick(2);
    h.get(1).node.proposeConfChange({ type: 'promote', nodeId: 4 });
    h.tick(2);
    expect(h.get(1).config).toEqual({ voters: [1, 2, 3, 4], learners: [] });
    h.get(1).node.proposeConfChange({ type: 'remove', nodeId: 1 });
    h.tick(2);
    // The leader applied its own removal: it handed over and stepped down.
    expect(h.get(1).node.role).toBe('follower');
    h.get(1).up = false;
    h.tick(3 * E);
    const [leader] = h.leaders();
    expect([2, 3, 4]).toContain(leader);
    expect(h.get(leader).config).toEqual({ voters: [2, 3, 4], learners: [] });
    h.propose(leader, 'b');
    h.tick(2);
    for (const id of [2, 3, 4]) expect(h.get(id).applied.slice(-2)).toEqual(['a', 'b']);
  });

  it('refuses a second change while one is pending (CAIRN_RAFT_CHANGE_PENDING)', () => {
    const h = new RaftHarness([1, 2, 3]);
    h.elect(1);
    const leader = h.get(1).node;
    leader.proposeConfChange({ type: 'addLearner', nodeId: 4 });
    refused(() => leader.proposeConfChange({ type: 'addLearner', nodeId: 5 }), 'CAIRN_RAFT_CHANGE_PENDING');
    h.deliverAll();
    // Applied: the next one is welcome.
    leader.proposeConfChange({ type: 'addLearner', nodeId: 5 });
  });

  it('a new leader accepts no change until everything before its first entry is applied', () => {
    const h = new RaftHarness([1, 2, 3]);
    // The election is won, but no follower's acknowledgement of the leader's first entry arrives.
    h.drop = (m) => m.type === 'appendResponse';
    h.elect(1);
    expect(h.get(1).node.role).toBe('leader');
    refused(() => h.get(1).node.proposeConfChange({ type: 'addLearner', nodeId: 4 }), 'CAIRN_RAFT_CHANGE_PENDING');
  });

  it('refuses a change that would leave no quorum (CAIRN_RAFT_NO_QUORUM)', () => {
    const h = new RaftHarness([1, 2, 3, 4]);
    h.elect(1);
    // Nodes 3 and 4 die; after a CheckQuorum round the leader knows they are gone.
    h.get(3).up = false;
    h.get(4).up = false;
    h.tick(E, [1, 2]);
    // Still leader (the first CheckQuorum round counted 3 and 4, which answered the
    // election), but since that round only node 2 has answered.
    expect(h.get(1).node.role).toBe('leader');
    // Removing node 2 would leave voters {1, 3, 4}, of which only 1 is reachable.
    refused(() => h.get(1).node.proposeConfChange({ type: 'remove', nodeId: 2 }), 'CAIRN_RAFT_NO_QUORUM');
  });

  it('refuses removing the last voter (CAIRN_RAFT_NO_QUORUM)', () => {
    const h = new RaftHarness([1]);
    h.elect(1);
    refused(() => h.get(1).node.proposeConfChange({ type: 'remove', nodeId: 1 }), 'CAIRN_RAFT_NO_QUORUM');
  });

  it('refuses promoting a learner that has not caught up (CAIRN_RAFT_LEARNER_BEHIND)', () => {
    const h = new RaftHarness([1, 2, 3], { learnerCatchUpEntries: 5 });
    h.elect(1);
    h.addEmptyNode(4);
    h.get(1).node.proposeConfChange({ type: 'addLearner', nodeId: 4 });
    h.tick(2);
    h.get(4).up = false;
    for (let i = 0; i < 10; i++) h.propose(1, `e${i}`);
    refused(() => h.get(1).node.proposeConfChange({ type: 'promote', nodeId: 4 }), 'CAIRN_RAFT_LEARNER_BEHIND');
    h.get(4).up = true;
    h.tick(3);
    h.get(1).node.proposeConfChange({ type: 'promote', nodeId: 4 });
    h.tick(2);
    expect(h.get(4).config.voters).toEqual([1, 2, 3, 4]);
  });

  it('refuses changes that make no sense (CAIRN_RAFT_BAD_CHANGE), and non-leaders refuse all', () => {
    const h = new RaftHarness([1, 2, 3]);
    h.elect(1);
    const leader = h.get(1).node;
    refused(() => leader.proposeConfChange({ type: 'promote', nodeId: 2 }), 'CAIRN_RAFT_BAD_CHANGE');
    refused(() => leader.proposeConfChange({ type: 'promote', nodeId: 9 }), 'CAIRN_RAFT_BAD_CHANGE');
    refused(() => leader.proposeConfChange({ type: 'addLearner', nodeId: 3 }), 'CAIRN_RAFT_BAD_CHANGE');
    refused(() => leader.proposeConfChange({ type: 'remove', nodeId: 9 }), 'CAIRN_RAFT_BAD_CHANGE');
    refused(() => leader.proposeConfChange({ type: 'addLearner', nodeId: 0 }), 'CAIRN_RAFT_BAD_CHANGE');
    refused(() => h.get(2).node.proposeConfChange({ type: 'addLearner', nodeId: 4 }), 'CAIRN_NOT_LEADER');
    // None of it reached the log: the group carries on.
    h.propose(1, 'still fine');
    for (const n of h.nodes.values()) {
      expect(n.applied).toEqual(['still fine']);
      expect(n.config).toEqual({ voters: [1, 2, 3], learners: [] });
    }
  });

  it('a node that has not applied a committed change does not campaign on the old membership', () => {
    // Node 3's log holds a committed removal of node 2 it has not applied yet.
    const s = new MemoryStorage();
    s.bootstrap([1, 2, 3]);
    s.append([
      { index: 2, term: 2, type: 'normal', data: new Uint8Array() },
      { index: 3, term: 2, type: 'confChange', data: encodeConfChange({ type: 'remove', nodeId: 2 }) },
    ]);
    s.setHardState({ term: 2, vote: 0, commit: 3 });
    const n = new RaftNode({ id: 3, random: new SeededRandom(1) }, s);
    n.campaign();
    expect(n.role).toBe('follower');
    // Once applied, it may.
    const rd = n.ready();
    for (const e of rd.committedEntries) if (e.type === 'confChange') n.applyConfChange(decodeConfChange(e.data));
    n.advance();
    n.campaign();
    expect(n.role).toBe('preCandidate');
  });

  it('membership arithmetic', () => {
    const cs = { voters: [1, 2, 3], learners: [] };
    expect(applyConfChangeTo(cs, { type: 'addLearner', nodeId: 4 })).toEqual({ voters: [1, 2, 3], learners: [4] });
    expect(applyConfChangeTo({ voters: [1, 2, 3], learners: [4] }, { type: 'promote', nodeId: 4 })).toEqual({ voters: [1, 2, 3, 4], learners: [] });
    expect(applyConfChangeTo(cs, { type: 'remove', nodeId: 2 })).toEqual({ voters: [1, 3], learners: [] });
    // A change that cannot apply leaves the membership alone.
    expect(applyConfChangeTo(cs, { type: 'promote', nodeId: 2 })).toBe(cs);
    expect(decodeConfChange(encodeConfChange({ type: 'remove', nodeId: 2 ** 40 }))).toEqual({ type: 'remove', nodeId: 2 ** 40 });
    expect(() => decodeConfChange(new Uint8Array([7, 0, 0]))).toThrowError(expect.objectContaining({ code: 'CAIRN_RAFT_BAD_CHANGE' }));
  });
});
