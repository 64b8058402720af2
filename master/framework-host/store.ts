// A built-in framework's replicated state: keys and JSON values under its name in the
// registry (the `builtin_state` command). Reads come from this master's copy of the registry,
// so followers answer them too; writes go through the command log and resolve once durable
// (committed by a quorum of masters), so nothing that depends on a write happens before it
// could survive a leader's death.

import type { StorePut, JsonValue } from '../registry/commands.ts';
import type { Registry } from '../registry/registry.ts';
import type { FrameworkStore } from '../../shared/framework-host/store.ts';

export class RegistryFrameworkStore implements FrameworkStore {
  constructor(
    private readonly registry: Registry,
    readonly owner: string,
  ) {}

  /** The value under `key`, frozen (change a copy, then put it). */
  get<T extends JsonValue = JsonValue>(key: string): T | undefined {
    return this.registry.state.builtin.get(this.owner)?.get(key) as T | undefined;
  }

  /** Every key starting with `prefix`, with its value, in key order. */
  entries<T extends JsonValue = JsonValue>(prefix = ''): [string, T][] {
    const m = this.registry.state.builtin.get(this.owner);
    if (!m) return [];
    const out: [string, T][] = [];
    for (const [k, v] of m) if (k.startsWith(prefix)) out.push([k, v as T]);
    return out.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  }

  /** Sets (or, with null, removes) every key at once; resolves when the change is durable. */
  async write(puts: StorePut[]): Promise<void> {
    if (puts.length === 0) return;
    await this.registry.submit({ type: 'builtin_state', owner: this.owner, puts });
  }

  put(key: string, value: JsonValue | null): Promise<void> {
    return this.write([{ key, value }]);
  }

  /**
   * Calls `listener` with the keys of this owner that a durable change touched, on every
   * master (a follower's view, an event stream). Returns a function that removes it.
   */
  onChange(listener: (keys: string[]) => void): () => void {
    const off = this.registry.onApplied((cmd) => {
      if (cmd.type === 'builtin_state' && cmd.owner === this.owner) listener(cmd.puts.map((p) => p.key));
    });
    return off;
  }
}
