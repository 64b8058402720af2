// The node:sqlite engine (DatabaseSync, built into Node), made to behave as better-sqlite3
// does for what Cairn uses (types.ts). Where the two differ:
// - rows: node:sqlite gives null-prototype objects and BLOBs as Uint8Array; here rows are
//   plain objects and BLOBs Buffers (a view of the same bytes, not a copy);
// - errors: node:sqlite throws code 'ERR_SQLITE_ERROR' with the number in `errcode`; here a
//   SqliteError whose code is the name better-sqlite3 gives ('SQLITE_FULL', ...);
// - transactions: node:sqlite has none; here better-sqlite3's, savepoints when nested;
// - pragma(): node:sqlite has none; here `PRAGMA ...` with better-sqlite3's `simple`;
// - run(): `changes` is always a number (node:sqlite gives a bigint under readBigInts);
// - close() of a closed database does nothing (node:sqlite throws);
// - the lock wait: better-sqlite3 waits up to 5 s for a lock held elsewhere, node:sqlite not
//   at all unless told; here it is told the same 5 s.
// What stays different: an integer beyond 2^53 read without safeIntegers() throws a
// RangeError here where better-sqlite3 gives an inexact number; too few positional or named
// parameters bind NULL here where better-sqlite3 throws; the page cache is SQLite's default
// (2 MB) where better-sqlite3 compiles in 16 MB. Cairn stores no such integers and binds every
// parameter.
//
// Usable from Node 22.16 and 24 LTS: node:sqlite is there unflagged from 22.13, and
// `isTransaction`, which nested transactions need to know whether one is open, from 22.16.
// Node 22 prints an ExperimentalWarning when node:sqlite is first loaded; it is kept out of
// Cairn's output (the engine is chosen here, not by the user).

import { sqliteCodeName } from './result-codes.ts';
import { SqliteError } from './sqlite-error.ts';
import type { SqliteDatabase, SqliteRunResult, SqliteStatement } from './types.ts';

// The parts of node:sqlite used here (the @types/node Cairn builds against is Node 20's,
// which has no node:sqlite).
type Row = Record<string, unknown>;
interface StatementSync {
  run(...params: unknown[]): { changes: number | bigint; lastInsertRowid: number | bigint };
  get(...params: unknown[]): Row | undefined;
  all(...params: unknown[]): Row[];
  iterate(...params: unknown[]): IterableIterator<Row>;
  setReadBigInts(on: boolean): void;
}
interface DatabaseSync {
  readonly isTransaction: boolean;
  exec(sql: string): void;
  prepare(sql: string): StatementSync;
  close(): void;
}
interface NodeSqlite {
  DatabaseSync: new (path: string, options: { readOnly: boolean }) => DatabaseSync;
}

/** better-sqlite3's default lock wait. */
const BUSY_TIMEOUT_MS = 5000;

let loaded: { sqlite: NodeSqlite } | { why: string } | undefined;

function load(): { sqlite: NodeSqlite } | { why: string } {
  if (loaded !== undefined) return loaded;
  let sqlite: NodeSqlite | undefined;
  try {
    sqlite = withoutSqliteWarning(() => process.getBuiltinModule?.('node:sqlite')) as NodeSqlite | undefined;
  } catch {
    sqlite = undefined;
  }
  if (sqlite === undefined) loaded = { why: `Node ${process.version} has no node:sqlite (Node >= 22.16 has)` };
  else if (!hasIsTransaction(sqlite)) loaded = { why: `the node:sqlite of Node ${process.version} lacks isTransaction (Node >= 22.16 has it)` };
  else loaded = { sqlite };
  return loaded;
}

/** Whether a database says if a transaction is open (an accessor on each instance, not the prototype). */
function hasIsTransaction(sqlite: NodeSqlite): boolean {
  const probe = new sqlite.DatabaseSync(':memory:', { readOnly: false });
  try {
    return typeof (probe as { isTransaction?: unknown }).isTransaction === 'boolean';
  } finally {
    probe.close();
  }
}

/** Why node:sqlite cannot be used on this Node, or undefined when it can. */
export function nodeSqliteUnusable(): string | undefined {
  const l = load();
  return 'why' in l ? l.why : undefined;
}

/** Runs `fn` with node:sqlite's ExperimentalWarning (Node 22) dropped; every other warning passes. */
function withoutSqliteWarning<T>(fn: () => T): T {
  const emit = process.emitWarning;
  process.emitWarning = function (warning: string | Error, ...rest: unknown[]): void {
    const type = typeof rest[0] === 'string' ? rest[0] : (rest[0] as { type?: unknown } | undefined)?.type;
    const text = typeof warning === 'string' ? warning : warning.message;
    if (type === 'ExperimentalWarning' && /sqlite/i.test(text)) return;
    (emit as (...args: unknown[]) => void).call(process, warning, ...rest);
  } as typeof process.emitWarning;
  try {
    return fn();
  } finally {
    process.emitWarning = emit;
  }
}

/** A node:sqlite error as better-sqlite3 would have thrown it; anything else unchanged. */
function translate(err: unknown): unknown {
  const e = err as { code?: unknown; errcode?: unknown; message?: unknown } | null;
  if (e?.code === 'ERR_SQLITE_ERROR' && typeof e.errcode === 'number') return new SqliteError(String(e.message), sqliteCodeName(e.errcode));
  return err;
}

function plainRow(row: Row): Row {
  const out: Row = {};
  for (const key in row) {
    const v = row[key];
    out[key] = v instanceof Uint8Array ? Buffer.from(v.buffer, v.byteOffset, v.byteLength) : v;
  }
  return out;
}

function* plainRows(it: IterableIterator<Row>): Generator<Row, void, undefined> {
  try {
    for (;;) {
      let r: IteratorResult<Row>;
      try {
        r = it.next();
      } catch (err) {
        throw translate(err);
      }
      if (r.done === true) return;
      yield plainRow(r.value);
    }
  } finally {
    // Leaving a loop early resets the statement, as better-sqlite3's iterator does.
    it.return?.();
  }
}

class NodeStatement implements SqliteStatement {
  constructor(private readonly stmt: StatementSync) {}

  run(...params: unknown[]): SqliteRunResult {
    try {
      const r = this.stmt.run(...params);
      return { changes: Number(r.changes), lastInsertRowid: r.lastInsertRowid };
    } catch (err) {
      throw translate(err);
    }
  }

  get(...params: unknown[]): unknown {
    try {
      const row = this.stmt.get(...params);
      return row === undefined ? undefined : plainRow(row);
    } catch (err) {
      throw translate(err);
    }
  }

  all(...params: unknown[]): unknown[] {
    try {
      return this.stmt.all(...params).map(plainRow);
    } catch (err) {
      throw translate(err);
    }
  }

  iterate(...params: unknown[]): IterableIterator<unknown> {
    try {
      return plainRows(this.stmt.iterate(...params));
    } catch (err) {
      throw translate(err);
    }
  }

  safeIntegers(on = true): this {
    this.stmt.setReadBigInts(on);
    return this;
  }
}

interface TransactionStatements {
  begin: NodeStatement;
  commit: NodeStatement;
  rollback: NodeStatement;
  savepoint: NodeStatement;
  release: NodeStatement;
  rollbackTo: NodeStatement;
}

class NodeDatabase implements SqliteDatabase {
  private readonly db: DatabaseSync;
  private isOpen = true;
  private tx: TransactionStatements | undefined;

  constructor(sqlite: NodeSqlite, readonly name: string, readonly readonly: boolean) {
    try {
      this.db = new sqlite.DatabaseSync(name, { readOnly: readonly });
      // Reads nothing from the file: the caller's first pragmas still come before any access.
      this.db.exec(`PRAGMA busy_timeout = ${BUSY_TIMEOUT_MS}`);
    } catch (err) {
      throw translate(err);
    }
  }

  get open(): boolean {
    return this.isOpen;
  }

  get inTransaction(): boolean {
    return this.isOpen && this.db.isTransaction;
  }

  prepare(sql: string): SqliteStatement {
    return this.prepareNode(sql);
  }

  private prepareNode(sql: string): NodeStatement {
    try {
      return new NodeStatement(this.db.prepare(sql));
    } catch (err) {
      throw translate(err);
    }
  }

  exec(sql: string): this {
    try {
      this.db.exec(sql);
    } catch (err) {
      throw translate(err);
    }
    return this;
  }

  pragma(source: string, options: { simple?: boolean } = {}): unknown {
    const stmt = this.prepareNode(`PRAGMA ${source}`);
    if (options.simple !== true) return stmt.all();
    const row = stmt.get() as Row | undefined;
    return row === undefined ? undefined : Object.values(row)[0];
  }

  /** better-sqlite3's transaction wrapper (lib/methods/transaction.js), on node:sqlite. */
  transaction<A extends unknown[], R>(fn: (...args: A) => R): (...args: A) => R {
    const db = this;
    return function (this: unknown, ...args: A): R {
      const t = db.transactionStatements();
      const nested = db.inTransaction;
      (nested ? t.savepoint : t.begin).run();
      try {
        const result = fn.apply(this, args);
        if (result !== null && typeof (result as { then?: unknown } | undefined)?.then === 'function') {
          throw new TypeError('Transaction function cannot return a promise');
        }
        (nested ? t.release : t.commit).run();
        return result;
      } catch (err) {
        // SQLite may have rolled the whole transaction back itself (a full disk can): then
        // there is nothing left to undo.
        if (db.inTransaction) {
          (nested ? t.rollbackTo : t.rollback).run();
          if (nested) t.release.run();
        }
        throw err;
      }
    };
  }

  private transactionStatements(): TransactionStatements {
    this.tx ??= {
      begin: this.prepareNode('BEGIN'),
      commit: this.prepareNode('COMMIT'),
      rollback: this.prepareNode('ROLLBACK'),
      savepoint: this.prepareNode('SAVEPOINT cairn_nested'),
      release: this.prepareNode('RELEASE cairn_nested'),
      rollbackTo: this.prepareNode('ROLLBACK TO cairn_nested'),
    };
    return this.tx;
  }

  close(): void {
    if (!this.isOpen) return;
    this.db.close();
    this.isOpen = false;
  }
}

/** Opens `path` with node:sqlite; the caller checked nodeSqliteUnusable(). */
export function openNodeSqlite(path: string, readonly: boolean): SqliteDatabase {
  const l = load();
  if ('why' in l) throw new Error(l.why);
  return new NodeDatabase(l.sqlite, path, readonly);
}
