// The registry as the master uses it: the state machine plus its durable log.
// `submit` applies a command to the in-memory state at once (so the next validation sees
// it) and resolves only once the command is durable; callers send nothing that depends on
// the change (acks, launches, updates to frameworks) before that. If the process dies
// before the write, the command is lost together with every message that depended on it,
// which keeps the outside world consistent with the disk.

import { RegistryStateMachine, type RegistryEvent } from './state-machine.ts';
import { RegistryStore } from './store.ts';
import type { RegistryCommand } from './commands.ts';

/** Commands between snapshots; bounds replay time at start. */
const COMPACT_EVERY = 20_000;

/** Told of each command once it is applied and durable, with the events it produced. */
export type AppliedListener = (command: RegistryCommand, events: RegistryEvent[]) => void;

interface Pending {
  command: RegistryCommand;
  events: RegistryEvent[];
  resolve: (events: RegistryEvent[]) => void;
  reject: (err: Error) => void;
}

export class Registry {
  readonly state: RegistryStateMachine;
  private readonly store: RegistryStore;
  private queue: Pending[] = [];
  private flushScheduled = false;
  private closed = false;
  private readonly appliedListeners: AppliedListener[] = [];
  /** Counts of applied commands by type, for metrics. */
  readonly applied = new Map<string, number>();

  constructor(dataDir: string) {
    this.store = new RegistryStore(dataDir);
    const loaded = this.store.load();
    this.state = loaded.snapshot ? RegistryStateMachine.fromSnapshot(loaded.snapshot) : new RegistryStateMachine();
    for (const c of loaded.commands) this.state.apply(c);
  }

  submit(command: RegistryCommand): Promise<RegistryEvent[]> {
    if (this.closed) return Promise.reject(new Error('registry is closed'));
    const events = this.state.apply(command);
    this.applied.set(command.type, (this.applied.get(command.type) ?? 0) + 1);
    return new Promise((resolve, reject) => {
      this.queue.push({ command, events, resolve, reject });
      if (!this.flushScheduled) {
        this.flushScheduled = true;
        setImmediate(() => this.flush());
      }
    });
  }

  /**
   * Calls `listener` for every command, in log order, right after the batch holding it is
   * durable: readers that answer from the state (DNS) then never show a change the disk
   * could lose. The state is that of the whole batch by then. A listener must not throw
   * (it runs inside the write path). Returns a function that removes the listener.
   */
  onApplied(listener: AppliedListener): () => void {
    this.appliedListeners.push(listener);
    return () => {
      const i = this.appliedListeners.indexOf(listener);
      if (i >= 0) this.appliedListeners.splice(i, 1);
    };
  }

  private flush(): void {
    this.flushScheduled = false;
    const batch = this.queue;
    this.queue = [];
    if (batch.length === 0) return;
    try {
      this.store.append(batch.map((p) => p.command));
    } catch (err) {
      // The in-memory state is now ahead of the disk; the only safe course is to stop.
      for (const p of batch) p.reject(err as Error);
      throw err;
    }
    if (this.store.pendingCompaction >= COMPACT_EVERY) this.store.compact(this.state.snapshot());
    for (const listener of this.appliedListeners) {
      for (const p of batch) listener(p.command, p.events);
    }
    for (const p of batch) p.resolve(p.events);
  }

  close(): void {
    if (this.closed) return;
    this.flush();
    this.closed = true;
    this.store.close();
  }
}
