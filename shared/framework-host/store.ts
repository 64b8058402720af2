// A framework's replicated store as the host hands it: keys and JSON values under the
// framework's name, read from this master's copy of the cluster's state (so followers answer
// reads too), written through the replicated log (a write resolves once a quorum of masters
// has it). The host backs it with the registry (master/framework-host/store.ts); a framework sees
// only this interface, and only its own keys.

export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };

/** One key set to a value, or removed with `null`. */
export interface StorePut {
  key: string;
  value: JsonValue | null;
}

export interface FrameworkStore {
  /** The framework whose keys these are. */
  readonly owner: string;
  /** The value under `key`, frozen (change a copy, then put it). */
  get<T extends JsonValue = JsonValue>(key: string): T | undefined;
  /** Every key starting with `prefix`, with its value, in key order. */
  entries<T extends JsonValue = JsonValue>(prefix?: string): [string, T][];
  /** Sets (or, with null, removes) every key at once; resolves when the change is durable. */
  write(puts: StorePut[]): Promise<void>;
  put(key: string, value: JsonValue | null): Promise<void>;
  /**
   * Calls `listener` with the keys a durable change touched, on every master (a follower's
   * view, an event stream). Returns a function that removes it.
   */
  onChange(listener: (keys: string[]) => void): () => void;
}
