// The better-sqlite3 engine, for a Node without a usable node:sqlite (Node 20). Its Database
// is handed out as it is: the adapter's API is the subset of better-sqlite3's that Cairn uses,
// so on this engine nothing changes from calling it directly. Loaded only when asked for:
// it is an optional dependency, absent where it could not be built, and never needed on a
// Node that has node:sqlite (driver.ts says why it is avoided there).

import { createRequire } from 'node:module';
import type BetterSqlite3 from 'better-sqlite3';
import type { SqliteDatabase } from './types.ts';

let Database: typeof BetterSqlite3 | undefined;

/** Opens `path` with better-sqlite3; throws MODULE_NOT_FOUND when it is not installed. */
export function openBetterSqlite3(path: string, readonly: boolean): SqliteDatabase {
  Database ??= createRequire(import.meta.url)('better-sqlite3') as typeof BetterSqlite3;
  const db: BetterSqlite3.Database = new Database(path, { readonly });
  return db;
}
