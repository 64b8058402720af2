// Issue 22 finding 10, members' storage incarnations recorded in the log
// (master/replication/incarnations.ts, log-entry.ts): a master added later knows every
// member by the group's record, not only those it happened to hear from, so a member wiped
// after it joined is refused there too; first sight is the fallback for members with no
// record yet; removing or adding a member again forgets its record; snapshots carry them.

import { describe, expect, it } from 'vitest';
import { MemberIncarnations, recordsFromSnapshot, type IncarnationRecord } from '../../master/replication/incarnations.ts';
import { encodeCommandEntry, encodeIncarnationEntry, readLogEntry } from '../../master/replication/log-entry.ts';

const rec = (id: number, incarnation: string): IncarnationRecord => ({ type: 'member_incarnation', id, incarnation });

describe('a member known by the group\'s record', () => {
  it('refuses a wiped member it never heard from, once the log records the member (the first-sight rule alone admits it)', () => {
    // Master 3, re-added as a learner, heard only from the leader: it never saw member 2.
    const firstSightOnly = new MemberIncarnations(new Map());
    expect(firstSightOnly.admit(2, 'wiped', true).admitted).toBe(true); // the hazard: the wiped storage is taken for member 2
    const seen = new Map<number, string>();
    const learner = new MemberIncarnations(seen);
    // The log it caught up from records member 2's storage as the leader saw it.
    expect(learner.record(rec(2, 'original'), true)).toEqual([[2, 'original']]);
    expect(seen.get(2)).toBe('original'); // persisted in its own table too
    const wiped = learner.admit(2, 'wiped', true);
    expect(wiped).toEqual({ admitted: false, changes: [] });
    expect(learner.known(2)).toBe('original'); // what its welcome tells the wiped member
    expect(learner.admit(2, 'original', true).admitted).toBe(true);
  });

  it('pins a member with no record at first sight (a fresh handshake of a member only), and the record overrides it', () => {
    const seen = new Map<number, string>();
    const m = new MemberIncarnations(seen);
    expect(m.admit(4, 'a', false)).toEqual({ admitted: true, changes: [] });
    expect(m.known(4)).toBeUndefined();
    expect(m.admit(4, 'a', true)).toEqual({ admitted: true, changes: [[4, 'a']] });
    expect(m.admit(4, 'b', true).admitted).toBe(false);
    // The group recorded another: the group's word stands here.
    expect(m.record(rec(4, 'b'), true)).toEqual([[4, 'b']]);
    expect(m.admit(4, 'b', true).admitted).toBe(true);
    expect(m.admit(4, 'a', true).admitted).toBe(false);
  });

  it('keeps the first record of a membership; ignores a record of an id no longer a member', () => {
    const m = new MemberIncarnations(new Map());
    m.record(rec(2, 'first'), true);
    // A second record for the same membership can only name storage made again.
    expect(m.record(rec(2, 'second'), true)).toEqual([]);
    expect(m.recorded(2)).toBe('first');
    // Proposed before its removal applied, committed after it: ignored.
    expect(m.record(rec(5, 'late'), false)).toEqual([]);
    expect(m.recorded(5)).toBeUndefined();
  });

  it('forgets a member removed or added again, so its next storage is recorded afresh', () => {
    const seen = new Map([[2, 'old']]);
    const m = new MemberIncarnations(seen, new Map([[2, 'old']]));
    expect(m.confChange({ type: 'promote', nodeId: 2 }, 1)).toEqual([]);
    expect(m.confChange({ type: 'remove', nodeId: 2 }, 1)).toEqual([[2, undefined]]);
    expect(m.known(2)).toBeUndefined();
    expect(m.confChange({ type: 'addLearner', nodeId: 2 }, 1)).toEqual([]);
    expect(m.record(rec(2, 'new-member'), true)).toEqual([[2, 'new-member']]);
    expect(m.admit(2, 'old', true).admitted).toBe(false);
  });

  it('takes a snapshot\'s records, dropping first-sight pins of the history it replaced', () => {
    const seen = new Map([[2, 'pinned-before'], [3, 'c']]);
    const m = new MemberIncarnations(seen);
    const changes = m.restore(new Map([[3, 'c'], [4, 'd']]));
    expect(changes).toEqual([[2, undefined], [4, 'd']]);
    expect(seen).toEqual(new Map([[3, 'c'], [4, 'd']]));
    expect(m.snapshotRecords()).toEqual([[3, 'c'], [4, 'd']]);
    // Member 2 may have been removed and added back in the replaced history: learnt afresh.
    expect(m.admit(2, 'after-re-add', true).admitted).toBe(true);
    expect(recordsFromSnapshot(m.snapshotRecords())).toEqual(new Map([[3, 'c'], [4, 'd']]));
    expect(recordsFromSnapshot(undefined)).toEqual(new Map());
    expect(recordsFromSnapshot([[0, 'x'], ['2', 'y'], [5, ''], 'junk', [6, 'ok']])).toEqual(new Map([[6, 'ok']]));
  });

  it('on the leader: proposes each member it knows without a record once, itself included, until withdrawn', () => {
    const m = new MemberIncarnations(new Map([[2, 'b']]), new Map([[3, 'c']]));
    expect(m.due([1, 2, 3, 4], 1, 'a')).toEqual([rec(1, 'a'), rec(2, 'b')]); // 3 is recorded, 4 not seen yet
    expect(m.due([1, 2, 3, 4], 1, 'a')).toEqual([]);
    m.admit(4, 'd', true);
    expect(m.due([1, 2, 3, 4], 1, 'a')).toEqual([rec(4, 'd')]);
    m.withdraw(); // its leadership ended before they committed
    expect(m.due([1, 2, 3, 4], 1, 'a').map((r) => r.id)).toEqual([1, 2, 4]);
    m.record(rec(1, 'a'), true);
    m.withdraw();
    expect(m.due([1, 2, 3, 4], 1, 'a').map((r) => r.id)).toEqual([2, 4]);
  });
});

describe('the log\'s entries', () => {
  it('tells registry commands, incarnation records and entries of no known kind apart', () => {
    const command = { type: 'framework_removed', frameworkId: 'f', atMs: 1 } as const;
    expect(readLogEntry(encodeCommandEntry('p-1', command))).toEqual({ kind: 'command', proposal: 'p-1', command });
    expect(readLogEntry(encodeIncarnationEntry(rec(3, 'c')))).toEqual({ kind: 'incarnation', record: rec(3, 'c') });
    const enc = new TextEncoder();
    for (const junk of ['not json', '42', 'null', '{"p":"x"}', '{"c":{"no":"type"}}', '{"c":{"type":"member_incarnation","id":-1,"incarnation":"x"}}']) {
      expect(readLogEntry(enc.encode(junk))).toEqual({ kind: 'unknown' });
    }
  });
});
