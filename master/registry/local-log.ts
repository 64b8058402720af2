// The command log of a single master: SQLite on local disk (RegistryStore). Everything
// proposed within one turn of the event loop is written in one transaction — one fsync —
// and then applied in order. The log is folded into a snapshot when compaction-policy.ts
// says so: when it outgrew the snapshot, or when deletions left a state much smaller than
// what the store holds (checked on a timer).
//
// A disk that refuses a write (full, over quota, failing) does not stop the master: the
// batch is not applied and its proposers are told CAIRN_STORAGE_FULL (507); every later
// write tries the disk again, so writes resume by themselves once there is room. Reads are
// answered from the state in memory throughout.

import { Registry, type CommandLog } from './registry.ts';
import type { RegistryCommand } from './commands.ts';
import { RegistryStore, type RegistryStoreOptions } from './store.ts';
import { DEFAULT_COMPACTION, logOutgrown, ShrinkPacer, snapshotShrinks, type CompactionLimits } from './compaction-policy.ts';
import { isStorageRefusal, storageFull } from '../../shared/storage-full.ts';
import { monotonicMs } from '../../shared/steady-clock.ts';

/** Where the log says what happened to its disk. */
export interface StorageLog {
  warn(obj: object, msg: string): void;
  info(obj: object, msg: string): void;
}

export interface LocalLogOptions extends RegistryStoreOptions {
  compaction?: Partial<CompactionLimits>;
  log?: StorageLog;
}

export class LocalCommandLog implements CommandLog {
  private queue: { id: string; command: RegistryCommand }[] = [];
  private flushScheduled = false;
  private closed = false;
  private readonly limits: CompactionLimits;
  private readonly pacer: ShrinkPacer;
  private readonly timer: NodeJS.Timeout;
  /** Set while the disk refuses writes: the first refusal is logged, and the recovery. */
  private refusing: Error | undefined;
  private readonly log: StorageLog | undefined;

  private constructor(
    private readonly store: RegistryStore,
    private readonly registry: Registry,
    private readonly dataDir: string,
    options: LocalLogOptions,
  ) {
    this.limits = { ...DEFAULT_COMPACTION, ...options.compaction };
    this.log = options.log;
    this.pacer = new ShrinkPacer(this.limits.checkEveryMs, monotonicMs());
    this.timer = setInterval(() => this.shrinkIfWorth(), Math.min(this.limits.checkEveryMs, 10_000));
    this.timer.unref();
    if (!store.shrinks) this.log?.warn({ path: store.path }, 'the registry file was made without auto vacuum and the disk has no room to rewrite it now: it shrinks after deletions only from a later start');
  }

  /** Opens the store, rebuilds the registry from it, and attaches itself. */
  static open(dataDir: string, proposalPrefix: string, options: LocalLogOptions = {}): Registry {
    const store = new RegistryStore(dataDir, options);
    const loaded = store.load();
    const registry = new Registry(loaded.snapshot, proposalPrefix);
    for (const c of loaded.commands) registry.applyCommitted(c);
    registry.attach(new LocalCommandLog(store, registry, dataDir, options));
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
      // Nothing of the batch was written or applied; its proposers learn why.
      if (!isStorageRefusal(err)) throw err;
      this.refused(err as Error);
      this.registry.failPending(storageFull(this.dataDir, err));
      return;
    }
    this.writable();
    for (const p of batch) this.registry.applyCommitted(p.command, p.id);
    if (logOutgrown(this.store.logSize(), this.limits)) this.compact(JSON.stringify(this.registry.state.snapshot()));
  }

  /** Measures the state now and then: after deletions a snapshot of it may shrink the store. */
  private shrinkIfWorth(): void {
    const started = monotonicMs();
    if (this.closed || this.refusing || !this.pacer.due(started, this.store.logSize())) return;
    const body = JSON.stringify(this.registry.state.snapshot());
    this.pacer.measured(monotonicMs(), monotonicMs() - started);
    if (snapshotShrinks(this.store.logSize(), Buffer.byteLength(body))) this.compact(body);
  }

  private compact(body: string): void {
    try {
      this.store.compact(body);
    } catch (err) {
      // The log stays whole and is folded at a later write; the state in memory is unaffected.
      if (!isStorageRefusal(err)) throw err;
      this.refused(err as Error);
    }
  }

  private refused(err: Error): void {
    if (this.refusing === undefined) {
      this.log?.warn({ dataDir: this.dataDir, err: err.message }, 'the data dir refuses writes (disk full?): registry changes are refused with 507 until it has room; reads are served');
    }
    this.refusing = err;
  }

  private writable(): void {
    if (this.refusing === undefined) return;
    this.refusing = undefined;
    this.log?.info({ dataDir: this.dataDir }, 'the data dir takes writes again: registry changes are accepted');
  }

  close(): void {
    if (this.closed) return;
    clearInterval(this.timer);
    try {
      this.flush();
    } finally {
      this.closed = true;
      this.store.close();
    }
  }
}
