// A built-in framework's replicated store (shared/framework-host/store.ts) in the whole-cluster
// simulation: it outlives the framework's crashes, as the masters' replicated log outlives a
// leader. A write becomes durable a Raft round trip after it is made (its commit);
// one still in flight when its writer crashes is lost, and its promise never settles (the
// process is gone). With the planted bug 'ack-before-durable' a write is acknowledged at once,
// before it is durable: a framework that acts on the acknowledgement may then launch what no
// record names once it crashes.

import type { FrameworkStore, JsonValue, StorePut } from '../../shared/framework-host/store.ts';
import type { SimClock } from './cluster-clock.ts';

export type StoreBug = 'ack-before-durable';

export class SimStore {
  readonly data = new Map<string, JsonValue>();
  private generation = 0;
  private lastCommitAtMs = 0;
  private readonly listeners = new Set<(keys: string[]) => void>();

  constructor(
    private readonly clock: SimClock,
    /** How long the next write takes to commit. */
    private readonly commitMs: () => number,
    /** Told of every write when it is made (what the framework decided, durable or not). */
    private readonly onWrite: (puts: StorePut[]) => void,
    private readonly plant?: StoreBug,
  ) {}

  /** A write made elsewhere (the REST API), durable at once. */
  apply(puts: StorePut[]): void {
    for (const p of puts) {
      if (p.value === null) this.data.delete(p.key);
      else this.data.set(p.key, structuredClone(p.value));
    }
    for (const l of this.listeners) l(puts.map((p) => p.key));
  }

  /** The writer crashed: what it has in flight is lost. */
  crash(): void {
    this.generation++;
  }

  /** The store as one instance of the framework sees it; its writes die with that instance. */
  view(owner: string): FrameworkStore {
    const gen = this.generation;
    const view: FrameworkStore = {
      owner,
      get: <T extends JsonValue = JsonValue>(key: string) => structuredClone(this.data.get(key)) as T | undefined,
      entries: <T extends JsonValue = JsonValue>(prefix = '') =>
        [...this.data.entries()].filter(([k]) => k.startsWith(prefix)).sort(([a], [b]) => (a < b ? -1 : 1)).map(([k, v]) => [k, structuredClone(v)]) as [string, T][],
      write: (puts) => this.write(gen, puts),
      put: (key, value) => view.write([{ key, value }]),
      onChange: (listener) => {
        this.listeners.add(listener);
        return () => this.listeners.delete(listener);
      },
    };
    return view;
  }

  private write(gen: number, puts: StorePut[]): Promise<void> {
    const copy = puts.map((p) => ({ key: p.key, value: p.value === null ? null : (structuredClone(p.value) as JsonValue) }));
    this.onWrite(copy);
    // The log commits in order: no write lands before one made earlier.
    this.lastCommitAtMs = Math.max(this.lastCommitAtMs, this.clock.nowMs + this.commitMs());
    return new Promise<void>((resolve) => {
      if (this.plant === 'ack-before-durable') resolve();
      this.clock.at(this.lastCommitAtMs, () => {
        if (gen !== this.generation) return;
        this.apply(copy);
        resolve();
      });
    });
  }
}
