// Which GPU device belongs to which task. A device is held by at most one task at a time;
// the master accounts for GPU counts, the agent picks the devices. A device found out of
// service (fallen off the bus, needing a reset) is never handed out again; a task holding
// it keeps it until it ends.

export class GpuPool {
  /** Free device indices, kept sorted so assignment is predictable (lowest first). */
  private free: number[];
  private readonly held = new Map<string, number[]>();
  private readonly out = new Map<number, string>();

  constructor(indices: readonly number[]) {
    this.free = [...new Set(indices)].sort((a, b) => a - b);
  }

  freeCount(): number {
    return this.free.length;
  }

  /** Devices held by a task, or an empty list. */
  heldBy(taskId: string): readonly number[] {
    return this.held.get(taskId) ?? [];
  }

  /**
   * Gives `count` devices to a task, or returns undefined (and changes nothing) when fewer
   * are free or the task already holds devices.
   */
  assign(taskId: string, count: number): number[] | undefined {
    if (count <= 0) return [];
    if (this.held.has(taskId) || count > this.free.length) return undefined;
    const taken = this.free.slice(0, count);
    this.free = this.free.slice(count);
    this.held.set(taskId, taken);
    return [...taken];
  }

  /**
   * Gives a task exactly these devices (a task recovered after a restart keeps the ones it
   * had). Returns false, changing nothing, when one of them is not free.
   */
  claim(taskId: string, indices: readonly number[]): boolean {
    if (indices.length === 0) return true;
    if (this.held.has(taskId) || !indices.every((i) => this.free.includes(i))) return false;
    this.free = this.free.filter((i) => !indices.includes(i));
    this.held.set(taskId, [...indices]);
    return true;
  }

  /** Returns a task's devices to the pool (those out of service excepted); releasing twice is harmless. */
  release(taskId: string): void {
    const taken = this.held.get(taskId);
    if (!taken) return;
    this.held.delete(taskId);
    this.free = [...this.free, ...taken.filter((i) => !this.out.has(i))].sort((a, b) => a - b);
  }

  /** Takes a device out of service for good; returns true the first time. */
  markUnhealthy(index: number, reason: string): boolean {
    if (this.out.has(index)) return false;
    this.out.set(index, reason);
    this.free = this.free.filter((i) => i !== index);
    return true;
  }

  /** Devices out of service, with why. */
  unhealthy(): { index: number; reason: string }[] {
    return [...this.out].map(([index, reason]) => ({ index, reason })).sort((a, b) => a.index - b.index);
  }
}
