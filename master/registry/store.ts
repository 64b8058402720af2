// Durable storage of the registry: a SQLite log of commands plus a periodic snapshot.
// WAL mode with synchronous=FULL, so a committed transaction survives a crash or power
// loss. Commands are written in groups: everything submitted within one turn of the event
// loop goes into one transaction (one fsync), which is what keeps launch throughput high.

import Database from 'better-sqlite3';
import { mkdirSync, renameSync } from 'node:fs';
import { fileSize } from '../../shared/file-size.ts';
import { CairnError } from '../../shared/errors.ts';
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
  private readonly db: Database.Database;
  private readonly insert: Database.Statement;
  private seq = 0;
  private commandsSinceSnapshot = 0;

  constructor(dataDir: string, options: RegistryStoreOptions = {}) {
    mkdirSync(dataDir, { recursive: true });
    const path = join(dataDir, 'registry.sqlite');
    const size = fileSize(path);
    // A brand-new data dir (no file) starts empty; a file that is there but empty or
    // unreadable is a registry that was lost, and starting empty would invent a new cluster.
    if (size === 0 && !options.acceptEmpty) throw unusable(path, 'is empty (0 bytes)');
    let db: Database.Database | undefined;
    try {
      db = new Database(path);
      db.pragma('journal_mode = WAL');
      db.pragma('synchronous = FULL');
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
      db = new Database(path);
      db.pragma('journal_mode = WAL');
      db.pragma('synchronous = FULL');
    }
    this.db = db;
    this.db.exec(`
      CREATE TABLE IF NOT EXISTS commands (seq INTEGER PRIMARY KEY, body TEXT NOT NULL);
      CREATE TABLE IF NOT EXISTS snapshot (id INTEGER PRIMARY KEY CHECK (id = 1), seq INTEGER NOT NULL, body TEXT NOT NULL);
    `);
    this.insert = this.db.prepare('INSERT INTO commands (seq, body) VALUES (?, ?)');
  }

  load(): LoadedRegistry {
    const snap = this.db.prepare('SELECT seq, body FROM snapshot WHERE id = 1').get() as { seq: number; body: string } | undefined;
    const from = snap?.seq ?? 0;
    const rows = this.db.prepare('SELECT seq, body FROM commands WHERE seq > ? ORDER BY seq').all(from) as { seq: number; body: string }[];
    this.seq = rows.length > 0 ? rows[rows.length - 1].seq : from;
    this.commandsSinceSnapshot = rows.length;
    return {
      snapshot: snap ? (JSON.parse(snap.body) as RegistrySnapshot) : undefined,
      commands: rows.map((r) => JSON.parse(r.body) as RegistryCommand),
      lastSeq: this.seq,
    };
  }

  /** Appends commands in one durable transaction. */
  append(commands: readonly RegistryCommand[]): void {
    const tx = this.db.transaction((cmds: readonly RegistryCommand[]) => {
      for (const c of cmds) this.insert.run(++this.seq, JSON.stringify(c));
    });
    tx(commands);
    this.commandsSinceSnapshot += commands.length;
  }

  get pendingCompaction(): number {
    return this.commandsSinceSnapshot;
  }

  /** Replaces the log up to now with a snapshot of the state it produced. */
  compact(snapshot: RegistrySnapshot): void {
    const seq = this.seq;
    this.db.transaction(() => {
      this.db.prepare('INSERT OR REPLACE INTO snapshot (id, seq, body) VALUES (1, ?, ?)').run(seq, JSON.stringify(snapshot));
      this.db.prepare('DELETE FROM commands WHERE seq <= ?').run(seq);
    })();
    this.commandsSinceSnapshot = 0;
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
