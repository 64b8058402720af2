// What callers see of a SQLite database, whichever engine is behind it (driver.ts): the
// subset of better-sqlite3's API that Cairn uses, with better-sqlite3's semantics.

/** What a write changed. */
export interface SqliteRunResult {
  changes: number;
  lastInsertRowid: number | bigint;
}

/**
 * A prepared statement. Parameters are positional (`?`), or one object for named ones
 * (`$id`, `:id`, `@id`, bound by the bare name `{ id: 1 }`), as in better-sqlite3. Values:
 * null, number, bigint, string, Buffer/Uint8Array. Rows are plain objects keyed by column.
 */
export interface SqliteStatement {
  run(...params: unknown[]): SqliteRunResult;
  /** The first row, or undefined when there is none. */
  get(...params: unknown[]): unknown;
  all(...params: unknown[]): unknown[];
  /** Rows one at a time; leaving the loop early ends the statement. */
  iterate(...params: unknown[]): IterableIterator<unknown>;
  /**
   * Integers read as bigint (exact) instead of number. Without it an integer beyond 2^53 is
   * inexact with better-sqlite3 and a RangeError with node:sqlite: ask for this to read such values.
   */
  safeIntegers(on?: boolean): this;
}

export interface SqliteDatabase {
  /** The path it was opened with. */
  readonly name: string;
  readonly open: boolean;
  readonly readonly: boolean;
  readonly inTransaction: boolean;
  prepare(sql: string): SqliteStatement;
  /** Runs one or more statements that return nothing. */
  exec(sql: string): this;
  /** `PRAGMA source`: its rows, or with `simple` the first column of the first row. */
  pragma(source: string, options?: { simple?: boolean }): unknown;
  /**
   * Wraps `fn` so that each call runs in a transaction: committed when it returns, rolled
   * back when it throws (and the error rethrown). A call made inside another transaction is a
   * savepoint, released or rolled back on its own.
   */
  transaction<A extends unknown[], R>(fn: (...args: A) => R): (...args: A) => R;
  /** Closes it; closing a closed database does nothing. */
  close(): void;
}
