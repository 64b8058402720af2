// News waiting to be piggybacked, memberlist's "transmit-limited queue": each item goes out a
// limited number of times (retransmitLimit), least-sent first and, among equals, newest first
// (fresh news such as a suspicion or its refutation should not wait behind a join storm). News
// about a member replaces older news about the same member, which it supersedes.

import type { Broadcast } from './messages.ts';
import { estimateSize } from './messages.ts';

interface Entry {
  readonly key: string;
  readonly message: Broadcast;
  readonly size: number;
  transmits: number;
  prev: Entry | undefined;
  next: Entry | undefined;
}

/** A list per transmit count; the head is the newest. */
interface Bucket { head: Entry | undefined; tail: Entry | undefined }

/** Below this many bytes left, no broadcast fits (the smallest is a suspect or dead notice). */
const SMALLEST_BROADCAST_BYTES = 26;
/** Entries that do not fit the room left are skipped; past this many skips the packet is full enough. */
const MAX_SKIPS = 32;

export class BroadcastQueue {
  private readonly byKey = new Map<string, Entry>();
  private readonly buckets: Bucket[] = [];

  get size(): number {
    return this.byKey.size;
  }

  has(key: string): boolean {
    return this.byKey.has(key);
  }

  /** Queues `message` about member `key`, replacing any older news about it. */
  enqueue(key: string, message: Broadcast): void {
    const old = this.byKey.get(key);
    if (old !== undefined) this.unlink(old);
    const entry: Entry = { key, message, size: estimateSize(message), transmits: 0, prev: undefined, next: undefined };
    this.byKey.set(key, entry);
    this.linkHead(entry);
  }

  /**
   * Takes up to `budgetBytes` of news for one packet, each item counting one transmission;
   * items sent `limit` times are dropped.
   */
  take(budgetBytes: number, limit: number): Broadcast[] {
    const out: Broadcast[] = [];
    if (this.byKey.size === 0) return out;
    let left = budgetBytes;
    let skips = 0;
    const taken: Entry[] = [];
    for (let t = 0; t < this.buckets.length && left >= SMALLEST_BROADCAST_BYTES && skips < MAX_SKIPS; t++) {
      let e = this.buckets[t].head;
      while (e !== undefined && left >= SMALLEST_BROADCAST_BYTES && skips < MAX_SKIPS) {
        const next = e.next;
        if (e.transmits >= limit) {
          // The cluster shrank and lowered the limit: this one has been sent enough.
          this.unlink(e);
          this.byKey.delete(e.key);
        } else if (e.size <= left) {
          out.push(e.message);
          taken.push(e);
          left -= e.size;
        } else {
          skips++;
        }
        e = next;
      }
    }
    // Relinked oldest first so that the newest ends up at the head again.
    for (let i = taken.length - 1; i >= 0; i--) {
      const e = taken[i];
      this.unlink(e);
      e.transmits++;
      if (e.transmits >= limit) this.byKey.delete(e.key);
      else this.linkHead(e);
    }
    return out;
  }

  clear(): void {
    this.byKey.clear();
    this.buckets.length = 0;
  }

  private linkHead(e: Entry): void {
    while (this.buckets.length <= e.transmits) this.buckets.push({ head: undefined, tail: undefined });
    const b = this.buckets[e.transmits];
    e.prev = undefined;
    e.next = b.head;
    if (b.head !== undefined) b.head.prev = e;
    else b.tail = e;
    b.head = e;
  }

  private unlink(e: Entry): void {
    const b = this.buckets[e.transmits];
    if (e.prev !== undefined) e.prev.next = e.next;
    else b.head = e.next;
    if (e.next !== undefined) e.next.prev = e.prev;
    else b.tail = e.prev;
    e.prev = undefined;
    e.next = undefined;
  }
}
