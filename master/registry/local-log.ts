// The command log of a single master: SQLite on local disk (RegistryStore). Everything
// proposed within one turn of the event loop is written in one transaction — one fsync —
// and then applied in order. Every COMPACT_EVERY commands the log is folded into a snapshot.

import { Registry, type CommandLog } from './registry.ts';
import type { RegistryCommand } from './commands.ts';
import { RegistryStore, type RegistryStoreOptions } from './store.ts';

/** Commands between snapshots; bounds replay time at start. */
const COMPACT_EVERY = 20_000;

export class LocalCommandLog implements CommandLog {
  private queue: { id: string; command: RegistryCommand }[] = [];
  private flushScheduled = false;
  private closed = false;

  private constructor(
    private readonly store: RegistryStore,
    private readonly registry: Registry,
  ) {}

  /** Opens the store, rebuilds the registry from it, and attaches itself. */
  static open(dataDir: string, proposalPrefix: string, options: RegistryStoreOptions = {}): Registry {
    const store = new RegistryStore(dataDir, options);
    const loaded = store.load();
    const registry = new Registry(loaded.snapshot, proposalPrefix);
    for (const c of loaded.commands) registry.applyCommitted(c);
    registry.attach(new LocalCommandLog(store, registry));
    return registry;
  }

  propose(proposalId: string, command: RegistryCommand): void {
    if (this.closed) throw new Error('registry is closed');
    this.queue.push({ id: proposalId, command });
    if (!this.flushScheduled) {
      this.flushScheduled = true;
      setImmediate(() => this.flush());
    }
  }

  private flush(): void {
    this.flushScheduled = false;
    const batch = this.queue;
    this.queue = [];
    if (batch.length === 0) return;
    try {
      this.store.append(batch.map((p) => p.command));
    } catch (err) {
      // Nothing of the batch was applied; the proposers learn it failed.
      this.registry.failPending(err as Error);
      throw err;
    }
    for (const p of batch) this.registry.applyCommitted(p.command, p.id);
    if (this.store.pendingCompaction >= COMPACT_EVERY) this.store.compact(this.registry.state.snapshot());
  }

  close(): void {
    if (this.closed) return;
    this.flush();
    this.closed = true;
    this.store.close();
  }
}
