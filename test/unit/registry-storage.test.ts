// The registry's storage when the disk says no, and when objects are deleted (issue 22,
// findings 7 and 12): the compaction policy's arithmetic; a single master's log that the
// disk refuses a write answers CAIRN_STORAGE_FULL naming the data dir instead of throwing
// from the write path (which killed the process), and takes writes again by itself; a
// registry file made before auto vacuum is converted at open, its contents kept.

import { afterEach, describe, expect, it } from 'vitest';
import { openDatabase, type SqliteDatabase } from '../../shared/sqlite/driver.ts';
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { LocalCommandLog } from '../../master/registry/local-log.ts';
import { RegistryStore } from '../../master/registry/store.ts';
import { logOutgrown, ShrinkPacer, snapshotShrinks, DEFAULT_COMPACTION } from '../../master/registry/compaction-policy.ts';
import { isStorageRefusal } from '../../shared/storage-full.ts';
import { toHttpError } from '../../shared/http-errors.ts';
import type { RegistryCommand } from '../../master/registry/commands.ts';
import { tempDir } from '../harness/processes.ts';

const MiB = 1024 * 1024;
const put = (key: string, value: string): RegistryCommand => ({ type: 'builtin_state', owner: 'marathon', puts: [{ key, value }] });

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

describe('compaction policy', () => {
  it('folds a log that outgrew its snapshot (count, or bytes above the floor)', () => {
    const limits = { ...DEFAULT_COMPACTION, maxEntries: 100, minLogBytes: 10 * MiB };
    expect(logOutgrown({ entries: 100, bytes: 1, snapshotBytes: 0 }, limits)).toBe(true);
    expect(logOutgrown({ entries: 5, bytes: 9 * MiB, snapshotBytes: 0 }, limits)).toBe(false);
    expect(logOutgrown({ entries: 5, bytes: 10 * MiB, snapshotBytes: 0 }, limits)).toBe(true);
    // Above the floor the log must outgrow the snapshot itself.
    expect(logOutgrown({ entries: 5, bytes: 20 * MiB, snapshotBytes: 30 * MiB }, limits)).toBe(false);
    expect(logOutgrown({ entries: 5, bytes: 30 * MiB, snapshotBytes: 30 * MiB }, limits)).toBe(true);
  });

  it('writes a measured snapshot only when it at least halves the store', () => {
    // Deleted apps: 12 MiB stored, a state of 100 KiB.
    expect(snapshotShrinks({ entries: 200, bytes: 4 * MiB, snapshotBytes: 8 * MiB }, 100 * 1024)).toBe(true);
    // Nothing deleted: the state is about what is stored.
    expect(snapshotShrinks({ entries: 200, bytes: 4 * MiB, snapshotBytes: 8 * MiB }, 11 * MiB)).toBe(false);
    // Nothing since the snapshot: nothing to fold.
    expect(snapshotShrinks({ entries: 0, bytes: 0, snapshotBytes: 8 * MiB }, 0)).toBe(false);
  });

  it('measures at most every checkEveryMs, and at most 1% of the time', () => {
    const pacer = new ShrinkPacer(1000, 0);
    const size = { entries: 10, bytes: 2 * MiB, snapshotBytes: 0 };
    expect(pacer.due(999, size)).toBe(false);
    expect(pacer.due(1000, size)).toBe(true);
    expect(pacer.due(1000, { entries: 0, bytes: 0, snapshotBytes: 2 * MiB })).toBe(false);
    // A measuring that took 50 ms puts the next one 5 s off.
    pacer.measured(1000, 50);
    expect(pacer.due(5999, size)).toBe(false);
    expect(pacer.due(6000, size)).toBe(true);
  });
});

describe("a single master's registry log on a disk that refuses writes", () => {
  it('answers CAIRN_STORAGE_FULL (507) naming the data dir, keeps the state, and takes writes again', async () => {
    const dir = tempDir();
    dirs.push(dir);
    const registry = LocalCommandLog.open(dir, 'p');
    await registry.submit(put('a', 'kept'));
    const append = RegistryStore.prototype.append;
    RegistryStore.prototype.append = () => {
      throw Object.assign(new Error('database or disk is full'), { code: 'SQLITE_FULL' });
    };
    try {
      const err = await registry.submit(put('b', 'refused')).then(() => undefined, (e: unknown) => e);
      expect(isStorageRefusal({ code: 'SQLITE_FULL' })).toBe(true);
      expect(err).toMatchObject({ code: 'CAIRN_STORAGE_FULL', field: 'dataDir' });
      expect((err as Error).message).toContain(dir);
      expect(toHttpError(err).status).toBe(507);
    } finally {
      RegistryStore.prototype.append = append;
    }
    // Nothing of the refused write was applied; the next write goes through.
    expect(registry.state.builtin.get('marathon')?.get('b')).toBeUndefined();
    await registry.submit(put('c', 'after'));
    registry.close();
    const again = LocalCommandLog.open(dir, 'p');
    expect([...again.state.builtin.get('marathon')!.entries()]).toEqual([['a', 'kept'], ['c', 'after']]);
    again.close();
  });

  it('still throws what is not the disk refusing (a bug stays loud)', () => {
    expect(isStorageRefusal(new TypeError('x'))).toBe(false);
    expect(isStorageRefusal({ code: 'SQLITE_CONSTRAINT_PRIMARYKEY' })).toBe(false);
    expect(isStorageRefusal({ code: 'SQLITE_IOERR_FSYNC' })).toBe(true);
    expect(isStorageRefusal({ code: 'ENOSPC' })).toBe(true);
  });
});

describe('a registry file made before auto vacuum', () => {
  it('is converted at open, its contents kept, and shrinks after a compaction', () => {
    const dir = tempDir();
    dirs.push(dir);
    mkdirSync(dir, { recursive: true });
    const path = join(dir, 'registry.sqlite');
    const old = openDatabase(path);
    old.pragma('journal_mode = WAL');
    old.exec(`
      CREATE TABLE commands (seq INTEGER PRIMARY KEY, body TEXT NOT NULL);
      CREATE TABLE snapshot (id INTEGER PRIMARY KEY CHECK (id = 1), seq INTEGER NOT NULL, body TEXT NOT NULL);
    `);
    const insert = old.prepare('INSERT INTO commands (seq, body) VALUES (?, ?)');
    old.transaction(() => {
      for (let i = 1; i <= 40; i++) insert.run(i, JSON.stringify(put(`k${i}`, 'x'.repeat(100 * 1024))));
    })();
    expect(old.pragma('auto_vacuum', { simple: true })).toBe(0);
    old.close();

    const store = new RegistryStore(dir);
    expect(store.shrinks).toBe(true);
    const db = (store as unknown as { db: SqliteDatabase }).db;
    expect(db.pragma('auto_vacuum', { simple: true })).toBe(2);
    const loaded = store.load();
    expect(loaded.commands).toHaveLength(40);
    expect(store.logSize()).toMatchObject({ entries: 40 });
    expect(store.logSize().bytes).toBeGreaterThan(40 * 100 * 1024);
    const pages = () => db.pragma('page_count', { simple: true }) as number;
    const before = pages();
    store.compact(JSON.stringify({ agents: [], frameworks: [], tasks: [] }));
    expect(pages()).toBeLessThan(before / 10);
    expect(store.logSize()).toMatchObject({ entries: 0, bytes: 0 });
    store.close();
  });
});
