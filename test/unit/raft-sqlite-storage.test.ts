// SQLite Raft storage: what is saved comes back after a restart, the pragmas that make it
// durable are set, and bytes changed on disk are caught by checksums — a corrupt tail is
// cut off and never reaches the core; a corrupt committed entry refuses to open.

import { afterEach, describe, expect, it } from 'vitest';
import { openDatabase, type SqliteDatabase } from '../../shared/sqlite/driver.ts';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SqliteRaftStorage } from '../../shared/raft/sqlite-storage.ts';
import { RaftNode } from '../../shared/raft/node.ts';
import { SeededRandom } from '../../shared/random.ts';
import type { Entry } from '../../shared/raft/types.ts';

const dirs: string[] = [];
function dbPath(): string {
  const d = mkdtempSync(join(tmpdir(), 'cairn-raft-'));
  dirs.push(d);
  return join(d, 'raft.sqlite');
}
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

const bytes = (s: string) => new TextEncoder().encode(s);
const entry = (index: number, term: number, data: string): Entry => ({ index, term, type: 'normal', data: bytes(data) });
const text = (e: Entry) => new TextDecoder().decode(e.data);

/** Flips one byte inside the stored copy of `marker` in the database file (after a clean close, so the WAL is checkpointed). */
function corruptInFile(path: string, marker: string): void {
  const file = readFileSync(path);
  const at = file.indexOf(Buffer.from(marker));
  expect(at).toBeGreaterThan(0);
  expect(file.indexOf(Buffer.from(marker), at + 1)).toBe(-1);
  file[at + 2] ^= 0xff;
  writeFileSync(path, file);
}

describe('SqliteRaftStorage', () => {
  it('keeps hard state, entries and snapshots across a reopen', () => {
    const path = dbPath();
    let s = new SqliteRaftStorage(path);
    s.bootstrap([1, 2, 3]);
    s.save({ entries: [entry(2, 2, 'a'), entry(3, 2, 'b'), entry(4, 2, 'c')], hardState: { term: 2, vote: 1, commit: 3 } });
    // A conflicting suffix replaces what was there.
    s.save({ entries: [entry(4, 3, 'c2'), entry(5, 3, 'd')], hardState: { term: 3, vote: 2, commit: 4 } });
    s.close();

    s = new SqliteRaftStorage(path);
    expect(s.recovery.truncatedFrom).toBeUndefined();
    expect(s.initialState()).toEqual({ hardState: { term: 3, vote: 2, commit: 4 }, confState: { voters: [1, 2, 3], learners: [] } });
    expect([s.firstIndex(), s.lastIndex(), s.term(1), s.term(4), s.term(6)]).toEqual([2, 5, 1, 3, undefined]);
    expect(s.entries(2, 6, Infinity)!.map(text)).toEqual(['a', 'b', 'c2', 'd']);
    expect(s.entries(2, 6, 1)!.map(text)).toEqual(['a']); // at least one, even over the size limit

    s.createSnapshot(4, { voters: [1, 2, 3], learners: [4] }, bytes('state@4'));
    s.compact(3);
    s.close();
    s = new SqliteRaftStorage(path);
    expect([s.firstIndex(), s.lastIndex(), s.term(3), s.term(2)]).toEqual([4, 5, 2, undefined]);
    expect(s.entries(2, 4, Infinity)).toBeUndefined(); // compacted
    expect(s.snapshot().metadata).toEqual({ index: 4, term: 3, confState: { voters: [1, 2, 3], learners: [4] } });
    expect(new TextDecoder().decode(s.snapshot().data)).toBe('state@4');

    // A snapshot from the leader replaces the whole log.
    s.save({
      snapshot: { metadata: { index: 9, term: 4, confState: { voters: [1, 2], learners: [] } }, data: bytes('state@9') },
      entries: [entry(10, 4, 'e')],
      hardState: { term: 4, vote: 0, commit: 10 },
    });
    s.close();
    s = new SqliteRaftStorage(path);
    expect([s.firstIndex(), s.lastIndex(), s.term(9)]).toEqual([10, 10, 4]);
    expect(s.initialState().confState).toEqual({ voters: [1, 2], learners: [] });
    s.close();
  });

  it('runs WAL with synchronous=FULL', () => {
    const path = dbPath();
    new SqliteRaftStorage(path).close();
    const db = openDatabase(path);
    // synchronous is per connection; the store sets it on every open. Check the file is WAL.
    expect(db.pragma('journal_mode', { simple: true })).toBe('wal');
    db.close();
    const s = new SqliteRaftStorage(path);
    expect((s as unknown as { db: SqliteDatabase }).db.pragma('synchronous', { simple: true })).toBe(2);
    s.close();
  });

  it('writes a commit-only Ready without an fsync, and syncs again for the next entries', () => {
    const path = dbPath();
    let s = new SqliteRaftStorage(path);
    const db = (s as unknown as { db: SqliteDatabase }).db;
    s.bootstrap([1]);
    s.save({ entries: [entry(2, 2, 'a')], hardState: { term: 2, vote: 1, commit: 1 }, mustSync: true });
    s.save({ hardState: { term: 2, vote: 1, commit: 2 }, mustSync: false });
    expect(db.pragma('synchronous', { simple: true })).toBe(1);
    s.save({ entries: [entry(3, 2, 'b')], mustSync: false }); // entries always sync
    expect(db.pragma('synchronous', { simple: true })).toBe(2);
    s.close();
    s = new SqliteRaftStorage(path);
    expect(s.initialState().hardState).toEqual({ term: 2, vote: 1, commit: 2 });
    expect(s.lastIndex()).toBe(3);
    s.close();
  });

  it('refuses to bootstrap over an existing group', () => {
    const s = new SqliteRaftStorage(dbPath());
    s.bootstrap([1]);
    expect(() => s.bootstrap([1])).toThrowError(expect.objectContaining({ code: 'CAIRN_BAD_REQUEST' }));
    s.close();
  });

  it('cuts a corrupt uncommitted tail on open, and the core never sees it', () => {
    const path = dbPath();
    let s = new SqliteRaftStorage(path);
    s.bootstrap([1]);
    s.save({ entries: [entry(2, 2, 'first-entry-payload'), entry(3, 2, 'LAST-ENTRY-PAYLOAD-0123456789')], hardState: { term: 2, vote: 1, commit: 2 } });
    s.close();
    corruptInFile(path, 'LAST-ENTRY-PAYLOAD-0123456789');

    s = new SqliteRaftStorage(path);
    expect(s.recovery).toEqual({ truncatedFrom: 3, droppedEntries: 1, reason: 'entry 3 fails its checksum', commitClamped: false });
    expect(s.lastIndex()).toBe(2);
    const node = new RaftNode({ id: 1, random: new SeededRandom(1) }, s);
    expect(node.lastIndex).toBe(2);
    const rd = node.ready();
    expect(rd.committedEntries.map(text)).toEqual(['first-entry-payload']);
    node.advance();
    s.close();
    // The cut is itself durable: the next open is clean.
    s = new SqliteRaftStorage(path);
    expect(s.recovery.truncatedFrom).toBeUndefined();
    expect(s.lastIndex()).toBe(2);
    s.close();
  });

  it('refuses to open when a committed entry is corrupt, unless told to accept the loss', () => {
    const path = dbPath();
    let s = new SqliteRaftStorage(path);
    s.bootstrap([1]);
    s.save({ entries: [entry(2, 2, 'COMMITTED-PAYLOAD-abcdefgh'), entry(3, 2, 'later')], hardState: { term: 2, vote: 1, commit: 3 } });
    s.close();
    corruptInFile(path, 'COMMITTED-PAYLOAD-abcdefgh');

    expect(() => new SqliteRaftStorage(path)).toThrowError(expect.objectContaining({ code: 'CAIRN_RAFT_CORRUPT_LOG' }));
    // Refusing changed nothing; accepting the loss cuts from the bad entry and lowers the commit index.
    s = new SqliteRaftStorage(path, { onLostCommitted: 'truncate' });
    expect(s.recovery).toMatchObject({ truncatedFrom: 2, droppedEntries: 2, commitClamped: true });
    expect(s.initialState().hardState.commit).toBe(1);
    expect(s.lastIndex()).toBe(1);
    s.close();
  });

  it('refuses a corrupt hard state', () => {
    const path = dbPath();
    const s = new SqliteRaftStorage(path);
    s.bootstrap([1]);
    s.close();
    const db = openDatabase(path);
    db.prepare('UPDATE hard_state SET term = 7').run();
    db.close();
    expect(() => new SqliteRaftStorage(path)).toThrowError(expect.objectContaining({ code: 'CAIRN_RAFT_CORRUPT_LOG' }));
  });

  it('drives a node: persist each Ready, restart, and find everything again', () => {
    const path = dbPath();
    let s = new SqliteRaftStorage(path);
    s.bootstrap([1]);
    let node = new RaftNode({ id: 1, random: new SeededRandom(1) }, s);
    const applied: string[] = [];
    const drain = () => {
      while (node.hasReady()) {
        const rd = node.ready();
        s.save(rd);
        for (const e of rd.committedEntries) if (e.data.length > 0) applied.push(text(e));
        node.advance();
      }
    };
    node.campaign();
    drain();
    for (const c of ['x', 'y', 'z']) {
      node.propose(bytes(c));
      drain();
    }
    expect(applied).toEqual(['x', 'y', 'z']);
    const term = node.term;
    s.close();

    s = new SqliteRaftStorage(path);
    node = new RaftNode({ id: 1, random: new SeededRandom(2) }, s);
    applied.length = 0;
    drain();
    expect(applied).toEqual(['x', 'y', 'z']);
    expect(node.term).toBe(term);
    s.close();
  });
});
