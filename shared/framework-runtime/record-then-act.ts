// Write the record, then ACCEPT: what a framework decided is durable in its replicated store
// before any launch or kill it decided is sent. A leader that dies between the two leaves a
// record the next leader acts on (it reconciles, and adopts or kills what it finds); one that
// sent first could leave a task no record names, or launch a replica twice.

import type { StorePut } from '../framework-host/store.ts';

/** Where decisions are recorded: resolves once the writes are durable. */
export interface RecordStore {
  write(puts: StorePut[]): Promise<void>;
}

/**
 * Writes `puts` (all at once, when there are any), then runs `act`. When the write fails,
 * nothing is sent and the error is the caller's (its core decides again on the next input).
 */
export async function recordThenAct<T>(store: RecordStore, puts: StorePut[], act: () => T | Promise<T>): Promise<T> {
  if (puts.length > 0) await store.write(puts);
  return act();
}
