// The SQLite adapter behaves the same on both engines: every test runs on each engine this
// Node can load (node:sqlite from Node 22.16, better-sqlite3 where it is installed), and
// checks what better-sqlite3 did before the adapter existed — plain rows, BLOBs as Buffers,
// named parameters by bare name, pragma shapes, transactions with savepoints when nested,
// SqliteError codes by name (a full disk included), close and readonly.
// better-sqlite3 is left out on Node >= 24, where it aborts the process now and then
// (WiseLibs/better-sqlite3#1515), and where Cairn never uses it.

import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { defaultEngine, openDatabase, SqliteError, type SqliteDatabase, type SqliteEngine } from '../../shared/sqlite/driver.ts';
import { isStorageRefusal } from '../../shared/storage-full.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const [major, minor] = process.versions.node.split('.').map(Number);

function loads(engine: SqliteEngine): boolean {
  if (engine === 'better-sqlite3' && major >= 24) return false;
  try {
    openDatabase(':memory:', { engine }).close();
    return true;
  } catch {
    return false;
  }
}
const ENGINES = (['node:sqlite', 'better-sqlite3'] as const).filter(loads);

const dirs: string[] = [];
const open: SqliteDatabase[] = [];
function tempPath(name = 'db.sqlite'): string {
  const d = mkdtempSync(join(tmpdir(), 'cairn-sqlite-'));
  dirs.push(d);
  return join(d, name);
}
afterEach(() => {
  for (const db of open.splice(0)) db.close();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

it('picks node:sqlite where this Node has it (22.16 and later), better-sqlite3 otherwise', () => {
  const hasNodeSqlite = (major === 22 && minor >= 16) || major >= 24;
  expect(defaultEngine()).toBe(hasNodeSqlite ? 'node:sqlite' : 'better-sqlite3');
  expect(ENGINES).toContain(defaultEngine());
});

it.skipIf(defaultEngine() === 'node:sqlite')('says why node:sqlite cannot be used on a Node without it', () => {
  expect(() => openDatabase(':memory:', { engine: 'node:sqlite' })).toThrow(
    expect.objectContaining({ code: 'CAIRN_INTERNAL', message: expect.stringMatching(/node:sqlite cannot be used here: .*Node >= 22\.16/) }),
  );
});

it('prints no warning when it loads node:sqlite', () => {
  const script = "const m = await import('./shared/sqlite/driver.ts'); m.openDatabase(':memory:').close(); console.log(m.defaultEngine());";
  const r = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { cwd: ROOT, encoding: 'utf8', timeout: 30_000 });
  expect(r.status, r.stderr).toBe(0);
  expect(r.stdout.trim()).toBe(defaultEngine());
  expect(r.stderr).toBe('');
});

describe.each(ENGINES)('on %s', (engine) => {
  function db(path = ':memory:', readonly = false): SqliteDatabase {
    const d = openDatabase(path, { engine, readonly });
    open.push(d);
    return d;
  }

  it('returns plain rows, BLOBs as Buffers, and what a write changed', () => {
    const d = db();
    d.exec('CREATE TABLE t (id INTEGER PRIMARY KEY, n INTEGER, r REAL, s TEXT, b BLOB)');
    const ins = d.prepare('INSERT INTO t (n, r, s, b) VALUES (?, ?, ?, ?)');
    expect(ins.run(7, 1.5, 'seven', Buffer.from([1, 2, 3]))).toEqual({ changes: 1, lastInsertRowid: 1 });
    expect(ins.run(null, null, null, new Uint8Array(0))).toEqual({ changes: 1, lastInsertRowid: 2 });
    const row = d.prepare('SELECT n, r, s, b FROM t WHERE id = 1').get() as Record<string, unknown>;
    expect(Object.getPrototypeOf(row)).toBe(Object.prototype);
    expect(Buffer.isBuffer(row.b)).toBe(true);
    expect(row).toStrictEqual({ n: 7, r: 1.5, s: 'seven', b: Buffer.from([1, 2, 3]) });
    const empty = d.prepare('SELECT n, b FROM t WHERE id = 2').get() as { n: unknown; b: Buffer };
    expect(empty.n).toBeNull();
    expect(Buffer.isBuffer(empty.b) && empty.b.length === 0).toBe(true);
    expect(d.prepare('SELECT n FROM t WHERE id = 99').get()).toBeUndefined();
    expect(d.prepare('UPDATE t SET n = 0').run()).toMatchObject({ changes: 2 });
    expect(d.prepare('SELECT id FROM t ORDER BY id').all()).toStrictEqual([{ id: 1 }, { id: 2 }]);
  });

  it('binds named parameters ($, : and @) by their bare names', () => {
    const d = db();
    expect(d.prepare('SELECT $a + :b + @c AS sum').get({ a: 1, b: 10, c: 100 })).toStrictEqual({ sum: 111 });
  });

  it('stores integers beyond 2^53 exactly and reads them exactly with safeIntegers', () => {
    const d = db();
    d.exec('CREATE TABLE big (v INTEGER)');
    const big = 2n ** 60n + 1n;
    d.prepare('INSERT INTO big (v) VALUES (?)').run(big);
    expect(d.prepare('SELECT CAST(v AS TEXT) AS t FROM big').get()).toStrictEqual({ t: big.toString() });
    expect(d.prepare('SELECT v FROM big').safeIntegers().get()).toStrictEqual({ v: big });
    // Without it the value cannot be a number: better-sqlite3 rounds it, node:sqlite refuses.
    if (engine === 'node:sqlite') expect(() => d.prepare('SELECT v FROM big').get()).toThrow(RangeError);
    else expect((d.prepare('SELECT v FROM big').get() as { v: number }).v).toBe(Number(big));
    expect(d.prepare('SELECT 5 AS v').safeIntegers().safeIntegers(false).get()).toStrictEqual({ v: 5 });
  });

  it('runs pragmas: rows, or with simple the first value', () => {
    const d = db(tempPath());
    expect(d.pragma('journal_mode = WAL')).toStrictEqual([{ journal_mode: 'wal' }]);
    expect(d.pragma('journal_mode', { simple: true })).toBe('wal');
    expect(d.pragma('synchronous = NORMAL')).toStrictEqual([]);
    expect(d.pragma('synchronous', { simple: true })).toBe(1);
    expect(d.pragma('synchronous = FULL', { simple: true })).toBeUndefined();
    expect(d.pragma('synchronous', { simple: true })).toBe(2);
    expect(d.pragma('busy_timeout', { simple: true })).toBe(5000);
    expect(d.pragma('foreign_keys', { simple: true })).toBe(1);
  });

  it('commits a transaction, rolls it back on a throw, and nests savepoints', () => {
    const d = db();
    d.exec('CREATE TABLE t (v INTEGER)');
    const ins = d.prepare('INSERT INTO t (v) VALUES (?)');
    const values = () => (d.prepare('SELECT v FROM t ORDER BY v').all() as { v: number }[]).map((r) => r.v);

    const add = d.transaction((a: number, b: number) => {
      expect(d.inTransaction).toBe(true);
      ins.run(a);
      ins.run(b);
      return a + b;
    });
    expect(add(1, 2)).toBe(3);
    expect(d.inTransaction).toBe(false);
    expect(values()).toEqual([1, 2]);

    const boom = new Error('boom');
    expect(() => d.transaction(() => {
      ins.run(3);
      throw boom;
    })()).toThrow(boom);
    expect(d.inTransaction).toBe(false);
    expect(values()).toEqual([1, 2]);

    // The inner call fails and is undone alone; the outer one goes on and commits.
    const inner = d.transaction((v: number) => {
      ins.run(v);
      if (v === 5) throw boom;
    });
    d.transaction(() => {
      inner(4);
      expect(() => inner(5)).toThrow(boom);
      expect(d.inTransaction).toBe(true);
      inner(6);
    })();
    expect(values()).toEqual([1, 2, 4, 6]);

    // An outer failure undoes the inner calls that succeeded.
    expect(() => d.transaction(() => {
      inner(7);
      throw boom;
    })()).toThrow(boom);
    expect(values()).toEqual([1, 2, 4, 6]);
    expect(() => d.transaction(async () => undefined)()).toThrow(TypeError);
    expect(d.inTransaction).toBe(false);
  });

  it('iterates lazily; leaving early frees the statement for the next run', () => {
    const d = db();
    d.exec('CREATE TABLE t (v INTEGER, b BLOB); INSERT INTO t VALUES (1, x\'01\'), (2, x\'02\'), (3, x\'03\')');
    const stmt = d.prepare('SELECT v, b FROM t WHERE v >= ? ORDER BY v');
    const seen: unknown[] = [];
    for (const row of stmt.iterate(2) as IterableIterator<{ v: number; b: Buffer }>) {
      expect(Buffer.isBuffer(row.b)).toBe(true);
      seen.push(row.v);
      break;
    }
    expect(seen).toEqual([2]);
    expect([...stmt.iterate(1)].map((r) => (r as { v: number }).v)).toEqual([1, 2, 3]);
    d.prepare('INSERT INTO t (v) VALUES (4)').run();
    expect((d.prepare('SELECT COUNT(*) AS n FROM t').get() as { n: number }).n).toBe(4);
  });

  it('throws SqliteError with the extended code by name, a full database included', () => {
    const d = db(tempPath());
    d.exec('CREATE TABLE t (id INTEGER PRIMARY KEY, body BLOB)');
    d.prepare('INSERT INTO t (id) VALUES (1)').run();
    let err: unknown;
    try {
      d.prepare('INSERT INTO t (id) VALUES (1)').run();
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(SqliteError);
    expect(err).toMatchObject({ name: 'SqliteError', code: 'SQLITE_CONSTRAINT_PRIMARYKEY', message: 'UNIQUE constraint failed: t.id' });
    expect(isStorageRefusal(err)).toBe(false);
    expect(() => d.exec('SELEC 1')).toThrow(expect.objectContaining({ code: 'SQLITE_ERROR' }));

    // A database that may not grow is full as a full disk is: SQLITE_FULL, nothing written.
    const pages = d.pragma('page_count', { simple: true }) as number;
    d.pragma(`max_page_count = ${pages + 1}`);
    const write = d.transaction(() => d.prepare('INSERT INTO t (id, body) VALUES (2, ?)').run(Buffer.alloc(64 * 1024)));
    let full: unknown;
    try {
      write();
    } catch (e) {
      full = e;
    }
    expect(full).toMatchObject({ code: 'SQLITE_FULL' });
    expect(isStorageRefusal(full)).toBe(true);
    expect(d.inTransaction).toBe(false);
    expect(d.prepare('SELECT id FROM t').all()).toStrictEqual([{ id: 1 }]);
  });

  it('reports a file that is no database as SQLITE_NOTADB', () => {
    const path = tempPath();
    writeFileSync(path, 'this is not a database, only some text that is long enough to be read '.repeat(20));
    const d = db(path);
    expect(() => d.prepare('SELECT * FROM sqlite_master').all()).toThrow(expect.objectContaining({ code: 'SQLITE_NOTADB' }));
  });

  it('opens readonly: reads work, writes throw SQLITE_READONLY', () => {
    const path = tempPath();
    const w = db(path);
    w.exec('CREATE TABLE t (v INTEGER); INSERT INTO t VALUES (1)');
    w.close();
    const r = db(path, true);
    expect(r.readonly).toBe(true);
    expect(r.prepare('SELECT v FROM t').all()).toStrictEqual([{ v: 1 }]);
    expect(() => r.exec('INSERT INTO t VALUES (2)')).toThrow(expect.objectContaining({ code: 'SQLITE_READONLY' }));
  });

  it('names its file, says whether it is open, and closes twice without complaint', () => {
    const path = tempPath();
    const d = db(path);
    expect(d.name).toBe(path);
    expect(d.readonly).toBe(false);
    expect(d.open).toBe(true);
    d.close();
    expect(d.open).toBe(false);
    expect(d.inTransaction).toBe(false);
    d.close();
    expect(() => d.prepare('SELECT 1')).toThrow();
  });
});
