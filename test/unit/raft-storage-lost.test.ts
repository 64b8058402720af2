// Issue 22 finding 10, the pure parts: a member's storage incarnation in the handshake (the
// dialer's in the hello; the listener's, and what it knows of the dialer, in the welcome),
// and a leader that is told a follower's storage was lost forgetting its match, so that the
// wiped member counts for nothing.

import { describe, expect, it } from 'vitest';
import { RaftWire } from '../../shared/raft/wire.ts';
import { RaftHarness } from '../sim/raft-harness.ts';

const SECRET = 'a-test-secret-of-enough-bytes';

describe('storage incarnations in the handshake', () => {
  it('carries both sides\' incarnations and what the listener knows of the dialer', () => {
    const dialer = new RaftWire({ clusterId: 'prod', secret: SECRET, incarnation: 'new-one' });
    const listener = new RaftWire({ clusterId: 'prod', secret: SECRET, incarnation: 'listener-1' });
    const hello = dialer.hello(2);
    const asked: number[] = [];
    const { welcome, session } = listener.accept(hello.frame, 1, (id) => (asked.push(id), id === 2 ? 'old-one' : undefined));
    expect(asked).toEqual([2]);
    expect(session.peer).toBe(2);
    expect(session.peerIncarnation).toBe('new-one');
    const dialed = hello.dialing.welcome(welcome);
    expect(dialed.peer).toBe(1);
    expect(dialed.peerIncarnation).toBe('listener-1');
    expect(dialed.known).toBe('old-one');
  });

  it('knows nothing when none is recorded, and refuses an over-long incarnation naming the field', () => {
    const wire = new RaftWire({ clusterId: 'prod', secret: SECRET });
    const hello = wire.hello(3);
    const { welcome, session } = wire.accept(hello.frame, 1);
    expect(session.peerIncarnation).toBe('');
    expect(hello.dialing.welcome(welcome).known).toBe('');
    expect(() => new RaftWire({ clusterId: 'prod', secret: SECRET, incarnation: 'x'.repeat(65) })).toThrowError(expect.objectContaining({ code: 'CAIRN_BAD_REQUEST', field: 'incarnation' }));
  });
});

describe('a leader told a follower\'s storage was lost', () => {
  it('forgets its match and probes it as a new, unmatched peer', () => {
    const h = new RaftHarness([1, 2, 3]);
    h.elect(1);
    for (const c of ['a', 'b', 'c']) h.propose(1, c);
    h.tick(2);
    const leader = h.get(1).node;
    const before = leader.status().progress.get(2)!;
    expect(before.match).toBe(leader.lastIndex);
    leader.reportStorageLost(2);
    const after = leader.status().progress.get(2)!;
    expect(after.match).toBe(0);
    expect(after.recentActive).toBe(false);
    // Only a leader keeps progress; on a follower it changes nothing.
    h.get(2).node.reportStorageLost(3);
    expect(h.get(2).node.status().role).toBe('follower');
  });

  it('with the lost member and another voter silent, counts no quorum: it steps down rather than hold writes', () => {
    const h = new RaftHarness([1, 2, 3]);
    h.elect(1);
    h.propose(1, 'a');
    h.tick(2);
    h.get(1).node.reportStorageLost(2);
    h.isolate(2, 3);
    h.tick(30, [1]);
    expect(h.get(1).node.status().role).not.toBe('leader');
  });
});
