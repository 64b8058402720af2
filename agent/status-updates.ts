// Status updates the master has not acknowledged yet. Each is kept, in the order it was
// made, until an ack names its uuid; the agent re-sends what is here on a timer and after
// every registration, so an update survives lost frames, reconnects and master failover.

import type { StatusUpdate } from '../shared/agent-protocol.ts';

export function uuidKey(uuid: Uint8Array): string {
  return Buffer.from(uuid.buffer, uuid.byteOffset, uuid.byteLength).toString('hex');
}

export class PendingUpdates {
  /** Insertion-ordered: Map iteration order is the order updates were made. */
  private readonly byUuid = new Map<string, StatusUpdate>();

  add(update: StatusUpdate): void {
    this.byUuid.set(uuidKey(update.uuid), update);
  }

  /** Removes and returns the acknowledged update; undefined for an unknown or repeated ack. */
  ack(uuid: Uint8Array): StatusUpdate | undefined {
    const key = uuidKey(uuid);
    const update = this.byUuid.get(key);
    if (update) this.byUuid.delete(key);
    return update;
  }

  /** Pending updates, oldest first. */
  list(): StatusUpdate[] {
    return [...this.byUuid.values()];
  }

  get size(): number {
    return this.byUuid.size;
  }
}
