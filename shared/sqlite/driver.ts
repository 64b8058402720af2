// The one way Cairn opens a SQLite database. Two engines sit behind it:
// - node:sqlite (DatabaseSync), built into Node: used wherever the running Node has it with
//   what this module needs (Node >= 22.16 and 24 LTS; see node-sqlite.ts);
// - better-sqlite3 12, a native module: only where Node has no usable node:sqlite (Node 20).
//   On Node 24 it aborts the process now and then when a statement is garbage-collected
//   (`Assertion failed: (env) != nullptr` in node::RemoveEnvironmentCleanupHook, upstream
//   WiseLibs/better-sqlite3#1515, not fixed in 12.x); 13.x fixes that but does not run on
//   Node 20. It is an optional dependency, so an install that cannot build it still works
//   on a Node that has node:sqlite.
// Callers see the subset of better-sqlite3's API they use, with its semantics on both engines
// (rows are plain objects, BLOBs Buffers, errors SqliteError with better-sqlite3's codes,
// nested transactions savepoints). Only this folder names either engine (an import rule).

import { CairnError } from '../errors.ts';
import { openBetterSqlite3 } from './better-sqlite3.ts';
import { nodeSqliteUnusable, openNodeSqlite } from './node-sqlite.ts';
import type { SqliteDatabase } from './types.ts';

export type { SqliteDatabase, SqliteRunResult, SqliteStatement } from './types.ts';
export { SqliteError } from './sqlite-error.ts';

export type SqliteEngine = 'node:sqlite' | 'better-sqlite3';

export interface OpenOptions {
  /** Opens for reading only: every write throws (SQLITE_READONLY). */
  readonly?: boolean;
  /** Which engine, instead of this Node's default (tests run both). */
  engine?: SqliteEngine;
}

/** The engine `openDatabase` uses on this Node: node:sqlite where usable, better-sqlite3 otherwise. */
export function defaultEngine(): SqliteEngine {
  return nodeSqliteUnusable() === undefined ? 'node:sqlite' : 'better-sqlite3';
}

/**
 * Opens (creating it if missing, unless readonly) the database at `path`; ':memory:' for one
 * in memory. Throws CAIRN_INTERNAL naming both engines when neither can be loaded.
 */
export function openDatabase(path: string, options: OpenOptions = {}): SqliteDatabase {
  const engine = options.engine ?? defaultEngine();
  const readonly = options.readonly === true;
  if (engine === 'node:sqlite') {
    const why = nodeSqliteUnusable();
    if (why !== undefined) throw new CairnError('CAIRN_INTERNAL', `SQLite: node:sqlite cannot be used here: ${why}`);
    return openNodeSqlite(path, readonly);
  }
  try {
    return openBetterSqlite3(path, readonly);
  } catch (err) {
    if ((err as { code?: unknown }).code !== 'MODULE_NOT_FOUND') throw err;
    throw new CairnError(
      'CAIRN_INTERNAL',
      `SQLite: Node ${process.version} has no usable node:sqlite (${nodeSqliteUnusable()}) and better-sqlite3 is not installed ` +
        '(an optional dependency: `npm install` builds it on Node 20, which needs a prebuilt binary or g++, make and python3). ' +
        'Run Cairn on Node 24, or reinstall on this Node',
    );
  }
}
