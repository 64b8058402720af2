// Durable storage of the registry: a SQLite log of commands plus a periodic snapshot.
// WAL mode with synchronous=FULL, so a committed transaction survives a crash or power
// loss. Commands are written in groups: everything submitted within one turn of the event
// loop goes into one transaction (one fsync), which is what keeps launch throughput high.

import Database from 'better-sqlite3';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { RegistryCommand } from './commands.ts';
import type { RegistrySnapshot } from './state-machine.ts';

export interface LoadedRegistry {
  snapshot: RegistrySnapshot | undefined;
  commands: RegistryCommand[];
  lastSeq: number;
}

export class RegistryStore {
  private readonly db: Database.Database;
  private readonly insert: Database.Statement;
  private seq = 0;
  private commandsSinceSnapshot = 0;

  constructor(dataDir: string) {
    mkdirSync(dataDir, { recursive: true });
    this.db = new Database(join(dataDir, 'registry.sqlite'));
    this.db.pragma('journal_mode = WAL');
    this.db.pragma('synchronous = FULL');
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
