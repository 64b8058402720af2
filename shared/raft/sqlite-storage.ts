// Durable Raft storage in SQLite (shared/sqlite, WAL, synchronous=FULL): the hard state,
// the log and the latest snapshot, each row with a CRC-32 of its contents. The shell calls
// save() with each Ready's hard state, entries and snapshot — one transaction, one fsync —
// before it sends the Ready's messages. A Ready that changes only the commit index is
// written without an fsync (Ready.mustSync false): losing it loses nothing Raft needs.
//
// SQLite's WAL already makes a transaction all-or-nothing across a crash. The checksums
// guard against what it cannot see: bytes changed on disk after they were written. On
// open, every row is verified; the log is cut at the first bad or missing entry and
// everything after it dropped, never handed to the core. Cutting into entries the hard
// state says were committed would lose acknowledged data: by default that refuses to open
// (CAIRN_RAFT_CORRUPT_LOG) so an operator decides (wipe the member and re-add it, or open
// with onLostCommitted: 'truncate' to accept the loss on this member).

import { randomBytes } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { fileSize } from '../file-size.ts';
import { dirname } from 'node:path';
import { crc32 } from 'node:zlib';
import { CairnError } from '../errors.ts';
import { adoptIncrementalVacuum, openDurable, reclaim } from '../durable-sqlite.ts';
import type { SqliteDatabase, SqliteStatement } from '../sqlite/driver.ts';
import { isStorageRefusal } from '../storage-full.ts';
import { bootstrapSnapshot, HeldLog } from './held-log.ts';
import type { ConfState, Entry, HardState, NodeId, Snapshot } from './types.ts';

export interface SqliteRaftStorageOptions {
  /** What to do when a corrupt entry is at or below the stored commit index. Default 'refuse'. */
  onLostCommitted?: 'refuse' | 'truncate';
}

/** What opening found and repaired, for the shell to log. */
export interface RecoveryReport {
  /** First index dropped because it (or one before it) failed its checksum or was missing; undefined if none. */
  truncatedFrom: number | undefined;
  droppedEntries: number;
  /** Why the cut was made. */
  reason: string | undefined;
  /** The commit index had to be lowered to the new last index (only with onLostCommitted: 'truncate'). */
  commitClamped: boolean;
}

/** The part of a Ready that is written to disk. */
export interface RaftWrite {
  readonly hardState?: HardState | undefined;
  readonly entries?: readonly Entry[];
  readonly snapshot?: Snapshot | undefined;
  /**
   * False when only the commit index changed: that write need not reach the disk before
   * anything is sent (a restart re-learns the commit index), so it skips the fsync.
   * Absent means true.
   */
  readonly mustSync?: boolean;
}

const TYPE_CODE = { normal: 0, confChange: 1 } as const;

/** CRC-32 of `data` continuing from `value`. Empty input leaves it unchanged (zlib's crc32 returns 0 for some empty buffers SQLite hands back). */
function crc(data: Uint8Array, value: number): number {
  return data.length === 0 ? value : crc32(data, value);
}

function u64(view: DataView, at: number, n: number): void {
  view.setBigUint64(at, BigInt(n));
}

function entryCrc(index: number, term: number, type: number, data: Uint8Array): number {
  const head = new Uint8Array(17);
  const v = new DataView(head.buffer);
  u64(v, 0, index);
  u64(v, 8, term);
  v.setUint8(16, type);
  return crc(data, crc32(head));
}

function hardStateCrc(hs: HardState): number {
  const b = new Uint8Array(24);
  const v = new DataView(b.buffer);
  u64(v, 0, hs.term);
  u64(v, 8, hs.vote);
  u64(v, 16, hs.commit);
  return crc32(b);
}

function snapshotCrc(index: number, term: number, conf: string, data: Uint8Array): number {
  const head = new Uint8Array(16);
  const v = new DataView(head.buffer);
  u64(v, 0, index);
  u64(v, 8, term);
  return crc(data, crc32(Buffer.from(conf, 'utf8'), crc32(head)));
}

interface EntryRow { idx: number; term: number; type: number; data: Uint8Array; crc: number }
interface SnapshotRow { idx: number; term: number; conf: string; data: Uint8Array; crc: number }

function rowToEntry(row: EntryRow): Entry {
  return { index: row.idx, term: row.term, type: row.type === 1 ? 'confChange' : 'normal', data: new Uint8Array(row.data) };
}

/**
 * The tables are mirrored in memory (HeldLog) and reads served from there, so sending entries
 * to followers costs no disk read; compaction bounds its size. Every entry held was
 * checksum-verified when it was loaded or written, and memory moves only once a write is durable.
 */
export class SqliteRaftStorage extends HeldLog {
  private readonly db: SqliteDatabase;
  readonly recovery: RecoveryReport = { truncatedFrom: undefined, droppedEntries: 0, reason: undefined, commitClamped: false };
  private syncing = true;
  /**
   * This store's incarnation: a random id made when the store was created, so that peers can
   * tell a member that kept its storage from one whose storage was lost and made again.
   */
  readonly incarnation: string;
  /** The file as found on open: absent (made now), 0 bytes (emptied), or holding a database. */
  readonly found: 'absent' | 'empty' | 'existing';
  /** False when the file predates auto vacuum and the disk had no room to rewrite it: it shrinks only from a later start. */
  readonly shrinks: boolean = true;
  private readonly stmt: {
    insertEntry: SqliteStatement;
    deleteFrom: SqliteStatement;
    deleteUpTo: SqliteStatement;
    deleteAll: SqliteStatement;
    putHard: SqliteStatement;
    putSnapshot: SqliteStatement;
    putBase: SqliteStatement;
    getSnapshot: SqliteStatement;
  };

  /** Opens (creating if needed) the store at `path`, verifying and repairing it. */
  constructor(path: string, options: SqliteRaftStorageOptions = {}) {
    super();
    mkdirSync(dirname(path), { recursive: true });
    const size = fileSize(path);
    this.found = size === undefined ? 'absent' : size === 0 ? 'empty' : 'existing';
    this.db = openDurable(path);
    try {
      this.db.exec(`
        CREATE TABLE IF NOT EXISTS hard_state (id INTEGER PRIMARY KEY CHECK (id = 1), term INTEGER NOT NULL, vote INTEGER NOT NULL, commit_index INTEGER NOT NULL, crc INTEGER NOT NULL);
        CREATE TABLE IF NOT EXISTS log_base (id INTEGER PRIMARY KEY CHECK (id = 1), idx INTEGER NOT NULL, term INTEGER NOT NULL);
        CREATE TABLE IF NOT EXISTS snapshot (id INTEGER PRIMARY KEY CHECK (id = 1), idx INTEGER NOT NULL, term INTEGER NOT NULL, conf TEXT NOT NULL, data BLOB NOT NULL, crc INTEGER NOT NULL);
        CREATE TABLE IF NOT EXISTS entries (idx INTEGER PRIMARY KEY, term INTEGER NOT NULL, type INTEGER NOT NULL, data BLOB NOT NULL, crc INTEGER NOT NULL);
        CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
        CREATE TABLE IF NOT EXISTS peer_incarnations (id INTEGER PRIMARY KEY, incarnation TEXT NOT NULL);
      `);
      const inc = this.db.prepare("SELECT value FROM meta WHERE key = 'incarnation'").get() as { value: string } | undefined;
      this.incarnation = inc?.value ?? randomBytes(16).toString('hex');
      if (inc === undefined) this.db.prepare("INSERT INTO meta (key, value) VALUES ('incarnation', ?)").run(this.incarnation);
      this.stmt = {
        insertEntry: this.db.prepare('INSERT OR REPLACE INTO entries (idx, term, type, data, crc) VALUES (?, ?, ?, ?, ?)'),
        deleteFrom: this.db.prepare('DELETE FROM entries WHERE idx >= ?'),
        deleteUpTo: this.db.prepare('DELETE FROM entries WHERE idx <= ?'),
        deleteAll: this.db.prepare('DELETE FROM entries'),
        putHard: this.db.prepare('INSERT OR REPLACE INTO hard_state (id, term, vote, commit_index, crc) VALUES (1, ?, ?, ?, ?)'),
        putSnapshot: this.db.prepare('INSERT OR REPLACE INTO snapshot (id, idx, term, conf, data, crc) VALUES (1, ?, ?, ?, ?, ?)'),
        putBase: this.db.prepare('INSERT OR REPLACE INTO log_base (id, idx, term) VALUES (1, ?, ?)'),
        getSnapshot: this.db.prepare('SELECT idx, term, conf, data, crc FROM snapshot WHERE id = 1'),
      };
      this.load(options.onLostCommitted ?? 'refuse');
      this.shrinks = adoptIncrementalVacuum(this.db);
    } catch (err) {
      this.db.close();
      throw err;
    }
  }

  private corrupt(what: string): CairnError {
    return new CairnError('CAIRN_RAFT_CORRUPT_LOG', `raft storage ${this.db.name}: ${what}`);
  }

  private load(onLostCommitted: 'refuse' | 'truncate'): void {
    const h = this.db.prepare('SELECT term, vote, commit_index AS commitIndex, crc FROM hard_state WHERE id = 1').get() as
      | { term: number; vote: number; commitIndex: number; crc: number }
      | undefined;
    if (h !== undefined) {
      const hs = { term: h.term, vote: h.vote, commit: h.commitIndex };
      if (hardStateCrc(hs) !== h.crc) throw this.corrupt('the hard state (term, vote, commit) fails its checksum');
      this.hard = hs;
    }
    const s = this.stmt.getSnapshot.get() as SnapshotRow | undefined;
    if (s !== undefined) this.snap = this.snapshotFromRow(s);
    const base = this.db.prepare('SELECT idx, term FROM log_base WHERE id = 1').get() as { idx: number; term: number } | undefined;
    this.restartAfter(base?.idx ?? this.snap.metadata.index, base?.term ?? this.snap.metadata.term);

    // Verify the log front to back; the first entry that fails (checksum, gap, term going
    // backwards) and everything after it is a torn or corrupt tail.
    let expected = this.baseIndex + 1;
    let lastTerm = this.baseTerm;
    let cut: number | undefined;
    let reason: string | undefined;
    for (const row of this.db.prepare('SELECT idx, term, type, data, crc FROM entries ORDER BY idx').iterate() as IterableIterator<EntryRow>) {
      if (row.idx <= this.baseIndex) continue;
      if (row.idx !== expected) reason = `entry ${expected} is missing`;
      else if (entryCrc(row.idx, row.term, row.type, row.data) !== row.crc) reason = `entry ${row.idx} fails its checksum`;
      else if (row.term < lastTerm || (row.type !== 0 && row.type !== 1)) reason = `entry ${row.idx} is malformed`;
      if (reason !== undefined) {
        cut = expected;
        break;
      }
      this.log.push(rowToEntry(row));
      lastTerm = row.term;
      expected++;
    }
    if (cut !== undefined) {
      const dropped = (this.db.prepare('SELECT COUNT(*) AS n FROM entries WHERE idx >= ?').get(cut) as { n: number }).n;
      const lostCommitted = this.hard.commit >= cut;
      if (lostCommitted && onLostCommitted === 'refuse') {
        throw this.corrupt(
          `${reason}; cutting the log there would drop entries up to the commit index ${this.hard.commit}. ` +
            `Remove this member and add it back empty, or open with onLostCommitted: 'truncate' to accept the loss here`,
        );
      }
      this.db.transaction(() => {
        this.stmt.deleteFrom.run(cut);
        if (lostCommitted) {
          this.hard = { ...this.hard, commit: cut! - 1 };
          this.stmt.putHard.run(this.hard.term, this.hard.vote, this.hard.commit, hardStateCrc(this.hard));
        }
      })();
      Object.assign(this.recovery, { truncatedFrom: cut, droppedEntries: dropped, reason, commitClamped: lostCommitted });
    }
  }

  private snapshotFromRow(s: SnapshotRow): Snapshot {
    if (snapshotCrc(s.idx, s.term, s.conf, s.data) !== s.crc) throw this.corrupt(`the snapshot at index ${s.idx} fails its checksum`);
    let conf: ConfState;
    try {
      conf = JSON.parse(s.conf) as ConfState;
    } catch {
      throw this.corrupt(`the snapshot at index ${s.idx} has an unreadable membership`);
    }
    return { metadata: { index: s.idx, term: s.term, confState: conf }, data: new Uint8Array(s.data) };
  }

  /** Writes a founding member's first state (see MemoryStorage.bootstrap). Only on an empty store. */
  bootstrap(voters: readonly NodeId[]): void {
    if (this.lastIndex() !== 0 || this.hard.term !== 0) {
      throw new CairnError('CAIRN_BAD_REQUEST', 'raft storage already holds a group; refusing to bootstrap over it', 'dataDir');
    }
    this.save({ snapshot: bootstrapSnapshot(voters), hardState: { term: 1, vote: 0, commit: 1 } });
  }

  // -------------------------------------------------------------------------------------
  // Writes

  /**
   * Persists one Ready's snapshot, entries and hard state in one durable transaction.
   * Entries replace any stored ones from entries[0].index on.
   */
  save(w: RaftWrite): void {
    const entries = w.entries ?? [];
    if (w.snapshot === undefined && entries.length === 0 && w.hardState === undefined) return;
    const sync = w.mustSync !== false || w.snapshot !== undefined || entries.length > 0;
    if (sync !== this.syncing) {
      // In WAL mode, NORMAL commits without an fsync; the next FULL commit syncs it too.
      this.db.pragma(sync ? 'synchronous = FULL' : 'synchronous = NORMAL');
      this.syncing = sync;
    }
    let base = { index: this.baseIndex, term: this.baseTerm };
    // What the log in memory becomes once the write is durable: `keep` of its entries
    // (all of them when nothing is replaced), then `appended`.
    let keep = this.log.length;
    const appended: Entry[] = [];
    this.db.transaction(() => {
      if (w.snapshot !== undefined && w.snapshot.metadata.index > this.snap.metadata.index) {
        const { index, term, confState } = w.snapshot.metadata;
        const conf = JSON.stringify({ voters: [...confState.voters], learners: [...confState.learners] });
        this.stmt.putSnapshot.run(index, term, conf, w.snapshot.data, snapshotCrc(index, term, conf, w.snapshot.data));
        this.stmt.deleteAll.run();
        this.stmt.putBase.run(index, term);
        base = { index, term };
        keep = 0;
      }
      if (entries.length > 0) {
        const first = entries[0].index;
        const last = base.index + keep;
        if (first > last + 1) throw new Error(`save: gap between last index ${last} and ${first}`);
        // Entries from `first` on are replaced; a plain append has none to delete.
        if (first <= last) {
          this.stmt.deleteFrom.run(first);
          keep = Math.max(0, first - base.index - 1);
        }
        for (const e of entries) {
          if (e.index <= base.index) continue;
          const type = TYPE_CODE[e.type];
          this.stmt.insertEntry.run(e.index, e.term, type, e.data, entryCrc(e.index, e.term, type, e.data));
          appended.push(e);
        }
      }
      if (w.hardState !== undefined) {
        const hs = w.hardState;
        this.stmt.putHard.run(hs.term, hs.vote, hs.commit, hardStateCrc(hs));
      }
    })();
    // Only once the transaction is durable does memory move.
    if (w.snapshot !== undefined && w.snapshot.metadata.index > this.snap.metadata.index) {
      this.snap = w.snapshot;
      this.restartAfter(base.index, base.term);
      this.reclaimSpace();
    }
    this.replaceTail(keep, appended);
    if (w.hardState !== undefined) this.hard = w.hardState;
  }

  /**
   * Records a snapshot of the application's state at `index` (at most its applied index).
   * The log stays; compact() drops entries separately.
   */
  createSnapshot(index: number, confState: ConfState, data: Uint8Array): Snapshot {
    const snap = this.snapshotAt(index, confState, data);
    if (snap === undefined) return this.snap;
    const { term } = snap.metadata;
    const conf = JSON.stringify({ voters: [...confState.voters], learners: [...confState.learners] });
    this.stmt.putSnapshot.run(index, term, conf, data, snapshotCrc(index, term, conf, data));
    this.snap = snap;
    return this.snap;
  }

  /** Drops entries up to and including `index`, which the snapshot must cover. */
  compact(index: number): void {
    const term = this.compactionTerm(index);
    if (term === undefined) return;
    this.db.transaction(() => {
      this.stmt.deleteUpTo.run(index);
      this.stmt.putBase.run(index, term);
    })();
    this.dropUpTo(index, term);
    this.reclaimSpace();
  }

  /** Gives the pages dropped entries and snapshots held back to the file system; a disk that refuses it now is asked again at the next compaction. */
  private reclaimSpace(): void {
    try {
      reclaim(this.db);
    } catch (err) {
      if (!isStorageRefusal(err)) throw err;
    }
  }

  /** Each member's incarnation as first seen here or as the log records it (a member known to have kept its storage). */
  peerIncarnations(): Map<NodeId, string> {
    const rows = this.db.prepare('SELECT id, incarnation FROM peer_incarnations').all() as { id: number; incarnation: string }[];
    return new Map(rows.map((r) => [r.id, r.incarnation]));
  }

  /** Records `id`'s incarnation (undefined: forgets it, as when the member is removed). */
  setPeerIncarnation(id: NodeId, incarnation: string | undefined): void {
    if (incarnation === undefined) this.db.prepare('DELETE FROM peer_incarnations WHERE id = ?').run(id);
    else this.db.prepare('INSERT OR REPLACE INTO peer_incarnations (id, incarnation) VALUES (?, ?)').run(id, incarnation);
  }

  close(): void {
    if (this.db.open) this.db.close();
  }
}

