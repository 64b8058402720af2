// Durable storage of the registry: a SQLite log of commands plus a periodic snapshot.
// WAL mode with synchronous=FULL, so a committed transaction survives a crash or power
// loss. Commands are written in groups: everything submitted within one turn of the event
// loop goes into one transaction (one fsync), which is what keeps launch throughput high.
// The store counts the bytes of its log and snapshot (compaction-policy.ts decides from
// them), and gives the space a compaction frees back to the file system (durable-sqlite.ts).
// A write the disk refuses throws and changes nothing, in memory as on disk.

import { mkdirSync, renameSync } from 'node:fs';
import { fileSize } from '../../shared/file-size.ts';
import { CairnError } from '../../shared/errors.ts';
import { adoptIncrementalVacuum, openDurable, reclaim } from '../../shared/durable-sqlite.ts';
import type { SqliteDatabase, SqliteStatement } from '../../shared/sqlite/driver.ts';
import type { LogSize } from './compaction-policy.ts';
import { join } from 'node:path';
import type { RegistryCommand } from './commands.ts';
import type { RegistrySnapshot } from './state-machine.ts';

export interface LoadedRegistry {
  snapshot: RegistrySnapshot | undefined;
  commands: RegistryCommand[];
  lastSeq: number;
}

export interface RegistryStoreOptions {
  /**
   * Start from an empty registry although registry.sqlite is empty (0 bytes) or unreadable
   * (truncated, not a database): the unreadable file is moved aside, not deleted.
   * Without it such a file refuses to start (CAIRN_REGISTRY_UNUSABLE), since starting empty
   * would forget every agent and task, and agents re-registering would have their tasks
   * killed as unknown.
   */
  acceptEmpty?: boolean;
}

/** The flag that accepts starting from an empty registry. */
export const ACCEPT_EMPTY_REGISTRY_FLAG = '--accept-empty-registry';

export class RegistryStore {
  private readonly db: SqliteDatabase;
  private readonly insert: SqliteStatement;
  private seq = 0;
  private readonly size: LogSize = { entries: 0, bytes: 0, snapshotBytes: 0 };
  /** The file, for messages. */
  readonly path: string;
  /** False when the file predates auto vacuum and could not be rewritten yet (a full disk): it does not shrink until a later start. */
  readonly shrinks: boolean;

  constructor(dataDir: string, options: RegistryStoreOptions = {}) {
    mkdirSync(dataDir, { recursive: true });
    const path = join(dataDir, 'registry.sqlite');
    this.path = path;
    const size = fileSize(path);
    // A brand-new data dir (no file) starts empty; a file that is there but empty or
    // unreadable is a registry that was lost, and starting empty would invent a new cluster.
    if (size === 0 && !options.acceptEmpty) throw unusable(path, 'is empty (0 bytes)');
    let db: SqliteDatabase | undefined;
    try {
      db = openDurable(path);
      if (size !== undefined && size > 0) {
        const tables = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name IN ('commands', 'snapshot')").all();
        if (tables.length < 2) throw unusable(path, 'holds no registry (its tables are missing)');
        db.prepare('SELECT COUNT(*) FROM commands').get();
      }
    } catch (err) {
      db?.close();
      if (!options.acceptEmpty) {
        if (err instanceof CairnError) throw err;
        throw unusable(path, `is unreadable (${(err as Error).message}): truncated or not a registry`);
      }
      if (size !== undefined && size > 0) renameSync(path, `${path}.unusable-${Date.now()}`);
      db = openDurable(path);
    }
    this.db = db;
    this.db.exec(`
      CREATE TABLE IF NOT EXISTS commands (seq INTEGER PRIMARY KEY, body TEXT NOT NULL);
      CREATE TABLE IF NOT EXISTS snapshot (id INTEGER PRIMARY KEY CHECK (id = 1), seq INTEGER NOT NULL, body TEXT NOT NULL);
    `);
    this.insert = this.db.prepare('INSERT INTO commands (seq, body) VALUES (?, ?)');
    this.shrinks = adoptIncrementalVacuum(this.db);
  }

  load(): LoadedRegistry {
    const snap = this.db.prepare('SELECT seq, body FROM snapshot WHERE id = 1').get() as { seq: number; body: string } | undefined;
    const from = snap?.seq ?? 0;
    const rows = this.db.prepare('SELECT seq, body FROM commands WHERE seq > ? ORDER BY seq').all(from) as { seq: number; body: string }[];
    this.seq = rows.length > 0 ? rows[rows.length - 1].seq : from;
    this.size.entries = rows.length;
    this.size.bytes = rows.reduce((n, r) => n + Buffer.byteLength(r.body), 0);
    this.size.snapshotBytes = snap ? Buffer.byteLength(snap.body) : 0;
    return {
      snapshot: snap ? (JSON.parse(snap.body) as RegistrySnapshot) : undefined,
      commands: rows.map((r) => JSON.parse(r.body) as RegistryCommand),
      lastSeq: this.seq,
    };
  }

  /** Appends commands in one durable transaction; throws (changing nothing) when the disk refuses it. */
  append(commands: readonly RegistryCommand[]): void {
    const bodies = commands.map((c) => JSON.stringify(c));
    const first = this.seq + 1;
    this.db.transaction(() => {
      bodies.forEach((body, i) => this.insert.run(first + i, body));
    })();
    this.seq += bodies.length;
    this.size.entries += bodies.length;
    this.size.bytes += bodies.reduce((n, b) => n + Buffer.byteLength(b), 0);
  }

  /** The log since the snapshot, and the snapshot, in commands and bytes. */
  logSize(): Readonly<LogSize> {
    return this.size;
  }

  /**
   * Replaces the log up to now with a snapshot of the state it produced (`body`, its JSON),
   * then gives the freed space back to the file system. Throws when the disk refuses the
   * snapshot (the log stays as it was); the space is given back at the next compaction if
   * only that step was refused.
   */
  compact(body: string): void {
    const seq = this.seq;
    this.db.transaction(() => {
      this.db.prepare('INSERT OR REPLACE INTO snapshot (id, seq, body) VALUES (1, ?, ?)').run(seq, body);
      this.db.prepare('DELETE FROM commands WHERE seq <= ?').run(seq);
    })();
    Object.assign(this.size, { entries: 0, bytes: 0, snapshotBytes: Buffer.byteLength(body) });
    reclaim(this.db);
  }

  close(): void {
    this.db.close();
  }
}


function unusable(path: string, what: string): CairnError {
  return new CairnError(
    'CAIRN_REGISTRY_UNUSABLE',
    `${path} ${what}; starting from it would start a new, empty cluster and agents re-registering would have their tasks killed as unknown. ` +
      `Restore it from a backup, or start with ${ACCEPT_EMPTY_REGISTRY_FLAG} to accept an empty registry`,
    'dataDir',
  );
}
