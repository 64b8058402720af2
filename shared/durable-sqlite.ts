// How Cairn opens its SQLite stores (the registry, the Raft log) and gives back the space
// they free. Three settings beyond WAL and synchronous=FULL:
// - locking_mode=EXCLUSIVE: one process holds a data dir (cairn.lock), and with the lock held
//   exclusively SQLite keeps its WAL index in heap memory instead of a `-shm` file. That file
//   is made (32 KiB) at every open, and on a full disk it cannot be: without this a master
//   could not start, even to serve reads, until space was freed.
// - auto_vacuum=INCREMENTAL: pages freed by deleting rows (a compacted log, a replaced
//   snapshot) go back to the file system when `reclaim` runs, so the file shrinks after
//   objects are deleted instead of keeping its largest size forever. It takes effect only on
//   a file made with it; `adoptIncrementalVacuum` rewrites an older file once.
// - journal_size_limit: the WAL is cut back to this size after a checkpoint, so one large
//   transaction does not leave a large `-wal` file behind.

import { openDatabase, type SqliteDatabase } from './sqlite/driver.ts';
import { fileSize } from './file-size.ts';
import { isStorageRefusal } from './storage-full.ts';

/** What the WAL is cut back to after a checkpoint. */
export const WAL_LIMIT_BYTES = 4 * 1024 * 1024;

const AUTO_VACUUM_INCREMENTAL = 2;

/** Opens (creating if missing) the database at `path` with Cairn's durable settings. */
export function openDurable(path: string): SqliteDatabase {
  const size = fileSize(path);
  const db = openDatabase(path);
  try {
    // Both before the first access that reads the file: a new file is made with them.
    db.pragma('locking_mode = EXCLUSIVE');
    // Only for a new file: on an existing one this pragma writes, which a full disk refuses.
    if (size === undefined || size === 0) db.pragma('auto_vacuum = INCREMENTAL');
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = FULL');
    db.pragma(`journal_size_limit = ${WAL_LIMIT_BYTES}`);
  } catch (err) {
    db.close();
    throw err;
  }
  return db;
}

/**
 * Makes a file created before auto vacuum return freed pages from now on (one VACUUM, which
 * rewrites it: needs free space about its size). Returns false when the disk refused that:
 * the file works as before and the next start tries again. Other errors are thrown.
 */
export function adoptIncrementalVacuum(db: SqliteDatabase): boolean {
  if (db.pragma('auto_vacuum', { simple: true }) === AUTO_VACUUM_INCREMENTAL) return true;
  try {
    db.pragma('auto_vacuum = INCREMENTAL');
    db.exec('VACUUM');
    return true;
  } catch (err) {
    if (isStorageRefusal(err)) return false;
    throw err;
  }
}

/**
 * Gives the pages freed by deletions back to the file system and cuts the WAL back. Run it
 * after dropping much (a compaction); it writes, so it throws what a full disk throws.
 */
export function reclaim(db: SqliteDatabase): void {
  if (db.pragma('freelist_count', { simple: true }) !== 0) db.pragma('incremental_vacuum');
  db.pragma('wal_checkpoint(TRUNCATE)');
}
