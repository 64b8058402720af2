// Log replication (§5.3), the commit rule (§5.4.2, Figure 8), the Ready contract (persist
// before send, the leader counts itself only once persisted), batching and pipelining,
// fast back-off, snapshots and InstallSnapshot (§7), and restarts.

import { describe, expect, it } from 'vitest';
import { RaftNode } from '../../shared/raft/node.ts';
import { MemoryStorage } from '../../shared/raft/memory-storage.ts';
import { SeededRandom } from '../../shared/random.ts';
import type { AppendMessage, Message } from '../../shared/raft/types.ts';
import { RaftHarness } from '../sim/raft-harness.ts';

const E = 10;
const bytes = (s: string) => new TextEncoder().encode(s);
const appendsTo = (msgs: Message[], to: number) => msgs.filter((m): m is AppendMessage => m.type === 'append' && m.to === to);

describe('log replication (§5.3)', () => {
  it('the leader appends, replicates, commits, and every node applies in order', () => {
    const h = new RaftHarness([1, 2, 3]);
    h.elect(1);
    for (const c of ['a', 'b', 'c']) h.propose(1, c);
    h.tick(2);
    for (const n of h.nodes.values()) expect(n.applied).toEqual(['a', 'b', 'c']);
  });

  it('a proposal on a follower is refused with the leader named', () => {
    const h = new RaftHarness([1, 2, 3]);
    h.elect(1);
    expect(() => h.get(2).node.propose(bytes('x'))).toThrowError(expect.objectContaining({ code: 'CAIRN_NOT_LEADER', leaderId: 1 }));
  });

  it("a follower's conflicting uncommitted suffix is replaced by the leader's", () => {
    const h = new RaftHarness([1, 2, 3]);
    h.elect(1);
    h.propose(1, 'a');
    h.isolate(1);
    h.propose(1, 'lost-1'); // the old leader, cut off, appends entries nobody else sees
    h.propose(1, 'lost-2');
    h.tick(3 * E, [2, 3]);
    const newLeader = h.leaders().find((id) => id !== 1)!;
    h.propose(newLeader, 'b');
    h.heal();
    h.tick(3);
    for (const n of h.nodes.values()) {
      expect(n.applied).toEqual(['a', 'b']);
      expect(n.node.lastIndex).toBe(h.get(newLeader).node.lastIndex);
    }
  });

  it('a follower refuses entries whose previous entry does not match its log (§5.3 consistency check)', () => {
    const s = new MemoryStorage();
    s.bootstrap([1, 2, 3]);
    s.append([{ index: 2, term: 2, type: 'normal', data: bytes('a') }]);
    s.setHardState({ term: 3, vote: 0, commit: 1 });
    const n = new RaftNode({ id: 2, random: new SeededRandom(1) }, s);
    const append = (prevIndex: number, prevTerm: number): Message => ({
      type: 'append', from: 1, to: 2, term: 3, prevIndex, prevTerm, commit: 1,
      entries: [{ index: prevIndex + 1, term: 3, type: 'normal', data: bytes('b') }],
    });
    n.step(append(2, 3)); // our entry 2 is from term 2, not 3
    n.step(append(5, 3)); // we have nothing at 5
    n.step(append(2, 2)); // matches
    const rd = n.ready();
    expect(rd.messages.map((m) => m.type === 'appendResponse' && [m.reject, m.index, m.hintIndex, m.hintTerm])).toEqual([
      [true, 2, 2, 2], // rejected at 2; our last entry with term ≤ 3 is 2 (term 2)
      [true, 5, 2, 2], // rejected at 5; we end at 2 (term 2)
      [false, 3, 0, 0],
    ]);
    expect(rd.entries.map((e) => [e.index, e.term])).toEqual([[3, 3]]);
    n.advance();
  });

  it('fast back-off: a long divergent suffix is skipped a term at a time, not an entry at a time', () => {
    const h = new RaftHarness([1, 2, 3], { seed: 2 });
    h.elect(1);
    h.isolate(1);
    for (let i = 0; i < 50; i++) h.get(1).node.propose(bytes(`stale-${i}`));
    h.deliverAll();
    h.tick(3 * E, [2, 3]);
    const leader = h.leaders().find((id) => id !== 1)!;
    for (let i = 0; i < 5; i++) h.propose(leader, `new-${i}`);
    h.delivered = [];
    h.heal();
    h.tick(3);
    const rejects = h.delivered.filter((m) => m.type === 'appendResponse' && m.from === 1 && m.reject);
    expect(rejects.length).toBeLessThanOrEqual(2);
    expect(h.get(1).applied).toEqual(['new-0', 'new-1', 'new-2', 'new-3', 'new-4']);
  });

  it('proposals made between two Readys travel in one append per follower (batching)', () => {
    const h = new RaftHarness([1, 2, 3]);
    h.elect(1);
    const leader = h.get(1);
    for (let i = 0; i < 5; i++) leader.node.propose(bytes(`p${i}`));
    const out = leader.drain();
    for (const to of [2, 3]) {
      const appends = appendsTo(out, to);
      expect(appends).toHaveLength(1);
      expect(appends[0].entries.map((e) => new TextDecoder().decode(e.data))).toEqual(['p0', 'p1', 'p2', 'p3', 'p4']);
    }
  });

  it('a leader pipelines appends without waiting for answers, up to the inflight window', () => {
    // One entry per message, at most 3 messages in flight per follower.
    const h = new RaftHarness([1, 2, 3], { maxMessageBytes: 1, maxInflightMessages: 3 });
    h.elect(1);
    h.tick(1);
    const leader = h.get(1);
    for (let i = 0; i < 10; i++) leader.node.propose(bytes(`p${i}`));
    const out = leader.drain();
    expect(appendsTo(out, 2).map((m) => m.entries.length)).toEqual([1, 1, 1]);
    // As answers come back, the window slides on.
    h.queue.push(...out);
    h.deliverAll();
    h.tick(2);
    for (const n of h.nodes.values()) expect(n.applied).toHaveLength(10);
  });

  it('a lost append in a full window is recovered on the next heartbeat answer', () => {
    const h = new RaftHarness([1, 2, 3], { maxInflightMessages: 1 });
    h.elect(1);
    let dropOnce = true;
    h.drop = (m) => {
      if (dropOnce && m.type === 'append' && m.to === 2 && m.entries.length > 0) {
        dropOnce = false;
        return true;
      }
      return false;
    };
    h.propose(1, 'a');
    h.propose(1, 'b');
    h.tick(3);
    expect(h.get(2).applied).toEqual(['a', 'b']);
  });
});

describe('commit rule (§5.4.2, Figure 8)', () => {
  it('an entry from an earlier term is not committed by counting replicas, only with one of the current term', () => {
    // Node 1 holds entry 2 from term 2 that nobody else has; nodes 2 and 3 are empty.
    const storages = [1, 2, 3].map(() => {
      const s = new MemoryStorage();
      s.bootstrap([1, 2, 3]);
      return s;
    });
    storages[0].append([{ index: 2, term: 2, type: 'normal', data: bytes('old') }]);
    for (const s of storages) s.setHardState({ term: 2, vote: 0, commit: 1 });
    const nodes = storages.map((s, i) => new RaftNode({ id: i + 1, random: new SeededRandom(i), maxMessageBytes: 1 }, s));
    const route = (block: (m: Message) => boolean) => {
      for (let round = 0; round < 50; round++) {
        const msgs: Message[] = [];
        for (const [i, n] of nodes.entries()) {
          while (n.hasReady()) {
            const rd = n.ready();
            storages[i].append(rd.entries);
            if (rd.hardState) storages[i].setHardState(rd.hardState);
            msgs.push(...rd.messages);
            n.advance();
          }
        }
        if (msgs.length === 0) return;
        for (const m of msgs) if (!block(m)) nodes[m.to - 1].step(m);
      }
    };
    nodes[0].campaign();
    // The leader hears the followers acknowledge the old entry 2, but not its own entry 3.
    const ackOfTerm3Entry = (m: Message) => m.type === 'appendResponse' && m.index >= 3;
    route(ackOfTerm3Entry);
    expect(nodes[0].role).toBe('leader');
    expect(nodes[0].term).toBe(3);
    for (const n of nodes) expect(n.termAt(2)).toBe(2); // on all three: a majority
    expect(nodes[0].status().progress.get(2)?.match).toBe(2);
    expect(nodes[0].commitIndex).toBe(1); // ... yet not committed: it is from term 2
    nodes[0].tick(); // a heartbeat round; this time the acknowledgements get through
    route(() => false);
    expect(nodes[0].commitIndex).toBe(3); // committed with the term-3 entry after it
  });
});

describe('Ready contract', () => {
  it('a leader counts its own entry only after the shell persisted it', () => {
    const s = new MemoryStorage();
    s.bootstrap([1]);
    const n = new RaftNode({ id: 1, random: new SeededRandom(1) }, s);
    n.campaign();
    const drain = () => {
      while (n.hasReady()) {
        const rd = n.ready();
        s.append(rd.entries);
        if (rd.hardState) s.setHardState(rd.hardState);
        n.advance();
      }
    };
    drain();
    expect(n.role).toBe('leader');
    const index = n.propose(bytes('x'));
    expect(n.commitIndex).toBe(index - 1);
    const rd = n.ready();
    expect(rd.entries.map((e) => e.index)).toEqual([index]);
    expect(rd.committedEntries).toEqual([]);
    expect(n.commitIndex).toBe(index - 1); // not yet: the entry is not on disk
    s.append(rd.entries);
    n.advance();
    expect(n.commitIndex).toBe(index);
    const next = n.ready();
    expect(next.hardState?.commit).toBe(index);
    expect(next.committedEntries.map((e) => e.index)).toEqual([index]);
  });

  it("a follower's acknowledgement leaves in the same Ready as the entries it acknowledges", () => {
    const h = new RaftHarness([1, 2, 3]);
    h.elect(1);
    const leaderOut = (() => {
      h.get(1).node.propose(bytes('x'));
      return h.get(1).drain();
    })();
    const follower = h.get(2).node;
    for (const m of appendsTo(leaderOut, 2)) follower.step(m);
    const rd = follower.ready();
    const ack = rd.messages.find((m) => m.type === 'appendResponse');
    expect(ack).toBeDefined();
    expect(rd.entries.length).toBeGreaterThan(0);
    expect(rd.mustSync).toBe(true);
    follower.advance();
  });

  it('ready() twice without advance() is refused', () => {
    const h = new RaftHarness([1]);
    const n = h.get(1).node;
    n.campaign();
    n.ready();
    expect(n.hasReady()).toBe(false);
    expect(() => n.ready()).toThrow(/advance/);
  });

  it('a restarted node re-applies its committed entries from storage', () => {
    const h = new RaftHarness([1, 2, 3]);
    h.elect(1);
    h.propose(1, 'a');
    h.propose(1, 'b');
    h.tick(1);
    const n2 = h.get(2);
    n2.restart(42);
    expect(n2.node.term).toBe(h.get(1).node.term);
    n2.drain();
    expect(n2.applied).toEqual(['a', 'b']);
  });
});

describe('snapshots and InstallSnapshot (§7)', () => {
  function compact(h: RaftHarness, id: number): number {
    const n = h.get(id);
    const index = n.node.status().applied;
    n.storage.createSnapshot(index, n.config, bytes(`state@${index}`));
    n.storage.compact(index);
    return index;
  }

  it('a follower behind the leader’s compacted log gets the snapshot, then the entries after it', () => {
    const h = new RaftHarness([1, 2, 3]);
    h.elect(1);
    h.isolate(3);
    for (let i = 0; i < 10; i++) h.propose(1, `e${i}`);
    h.tick(1);
    const snapIndex = compact(h, 1);
    h.propose(1, 'after');
    h.heal();
    h.tick(3);
    const n3 = h.get(3);
    expect(n3.applied).toEqual([`<snapshot ${snapIndex}>`, 'after']);
    expect(n3.storage.snapshot().metadata.index).toBe(snapIndex);
    expect(new TextDecoder().decode(n3.storage.snapshot().data)).toBe(`state@${snapIndex}`);
    expect(n3.node.commitIndex).toBe(h.get(1).node.commitIndex);
  });

  it('a lost snapshot is sent again', () => {
    const h = new RaftHarness([1, 2, 3]);
    h.elect(1);
    h.isolate(3);
    for (let i = 0; i < 5; i++) h.propose(1, `e${i}`);
    compact(h, 1);
    let lost = 0;
    h.drop = (m) => {
      if (m.type === 'snapshot' && lost === 0) {
        lost++;
        return true;
      }
      return false;
    };
    h.tick(3 * E);
    expect(lost).toBe(1);
    expect(h.get(3).applied[0]).toMatch(/^<snapshot/);
  });

  it('a snapshot older than what the follower has is ignored', () => {
    const h = new RaftHarness([1, 2, 3]);
    h.elect(1);
    h.propose(1, 'a');
    const n2 = h.get(2).node;
    const commit = n2.commitIndex;
    n2.step({
      type: 'snapshot', from: 1, to: 2, term: n2.term,
      snapshot: { metadata: { index: 1, term: 1, confState: { voters: [1, 2, 3], learners: [] } }, data: bytes('old') },
    });
    const rd = n2.ready();
    expect(rd.snapshot).toBeUndefined();
    expect(rd.messages).toEqual([expect.objectContaining({ type: 'appendResponse', index: commit, reject: false })]);
    n2.advance();
  });
});
