// The window of append messages a leader has sent a follower and not yet heard back about:
// pipelining keeps several in flight, and this bounds them by count and by bytes, so a slow
// follower cannot make the leader queue without limit.

export class Inflights {
  // A ring of (last index, bytes) per message, oldest first.
  private readonly indexes: number[];
  private readonly sizes: number[];
  private start = 0;
  private length = 0;
  private bytesInFlight = 0;

  constructor(
    readonly maxMessages: number,
    readonly maxBytes: number,
  ) {
    this.indexes = new Array<number>(maxMessages).fill(0);
    this.sizes = new Array<number>(maxMessages).fill(0);
  }

  get count(): number {
    return this.length;
  }

  get bytes(): number {
    return this.bytesInFlight;
  }

  /** Records a message whose last entry is `index`; indexes only grow. */
  add(index: number, bytes: number): void {
    if (this.length >= this.maxMessages) throw new Error('inflights: window is full');
    const slot = (this.start + this.length) % this.maxMessages;
    this.indexes[slot] = index;
    this.sizes[slot] = bytes;
    this.length++;
    this.bytesInFlight += bytes;
  }

  /** Forgets every message whose last index is ≤ `index` (the follower has acknowledged it). */
  freeUpTo(index: number): void {
    while (this.length > 0 && this.indexes[this.start] <= index) {
      this.bytesInFlight -= this.sizes[this.start];
      this.start = (this.start + 1) % this.maxMessages;
      this.length--;
    }
    if (this.length === 0) this.start = 0;
  }

  /** Forgets the oldest message (taken as lost), opening the window by one. */
  freeOldest(): void {
    if (this.length === 0) return;
    this.freeUpTo(this.indexes[this.start]);
  }

  full(): boolean {
    return this.length >= this.maxMessages || (this.maxBytes > 0 && this.bytesInFlight >= this.maxBytes);
  }

  reset(): void {
    this.start = 0;
    this.length = 0;
    this.bytesInFlight = 0;
  }
}
