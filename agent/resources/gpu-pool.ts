// Which GPU device belongs to which task. The master accounts for GPU counts, the agent
// picks the devices. A device is held by at most one task at a time, unless the agent
// shares its GPUs (`--gpu-sharing N`: each device taken by up to N tasks at once, as
// time-slicing does; each share is one `gpus` in the offers). A task asking for several
// GPUs always gets distinct devices. A device found out of service (fallen off the bus,
// needing a reset) is never handed out again; a task holding it keeps it until it ends.

export class GpuPool {
  /** Free shares per device in service; devices in index order. */
  private readonly freeShares = new Map<number, number>();
  private readonly held = new Map<string, number[]>();
  private readonly out = new Map<number, string>();

  constructor(
    indices: readonly number[],
    /** How many tasks may hold one device at once (1: devices are never shared). */
    readonly sharing = 1,
  ) {
    if (!Number.isInteger(sharing) || sharing < 1) throw new RangeError(`GPU sharing must be a whole number of at least 1, got ${sharing}`);
    for (const i of [...new Set(indices)].sort((a, b) => a - b)) this.freeShares.set(i, sharing);
  }

  /** Shares free over all devices in service (equal to free devices without sharing). */
  freeCount(): number {
    let n = 0;
    for (const f of this.freeShares.values()) n += f;
    return n;
  }

  /** Devices held by a task, or an empty list. */
  heldBy(taskId: string): readonly number[] {
    return this.held.get(taskId) ?? [];
  }

  /**
   * Gives `count` distinct devices to a task, or returns undefined (and changes nothing)
   * when fewer have a free share or the task already holds devices. With sharing, the
   * devices with the most free shares go first (the load spreads), lowest index on a tie.
   */
  assign(taskId: string, count: number): number[] | undefined {
    if (count <= 0) return [];
    if (this.held.has(taskId)) return undefined;
    const candidates = [...this.freeShares].filter(([, f]) => f > 0).sort((a, b) => b[1] - a[1] || a[0] - b[0]);
    if (candidates.length < count) return undefined;
    const taken = candidates.slice(0, count).map(([i]) => i).sort((a, b) => a - b);
    for (const i of taken) this.freeShares.set(i, this.freeShares.get(i)! - 1);
    this.held.set(taskId, taken);
    return [...taken];
  }

  /**
   * Gives a task exactly these devices (a task recovered after a restart keeps the ones it
   * had). Returns false, changing nothing, when one of them has no free share.
   */
  claim(taskId: string, indices: readonly number[]): boolean {
    if (indices.length === 0) return true;
    if (this.held.has(taskId) || !indices.every((i) => (this.freeShares.get(i) ?? 0) > 0)) return false;
    for (const i of indices) this.freeShares.set(i, this.freeShares.get(i)! - 1);
    this.held.set(taskId, [...indices]);
    return true;
  }

  /** Returns a task's devices to the pool (those out of service excepted); releasing twice is harmless. */
  release(taskId: string): void {
    const taken = this.held.get(taskId);
    if (!taken) return;
    this.held.delete(taskId);
    for (const i of taken) {
      const f = this.freeShares.get(i);
      if (f !== undefined) this.freeShares.set(i, f + 1);
    }
  }

  /** Takes a device out of service for good; returns true the first time. */
  markUnhealthy(index: number, reason: string): boolean {
    if (this.out.has(index)) return false;
    this.out.set(index, reason);
    this.freeShares.delete(index);
    return true;
  }

  /** Devices out of service, with why. */
  unhealthy(): { index: number; reason: string }[] {
    return [...this.out].map(([index, reason]) => ({ index, reason })).sort((a, b) => a.index - b.index);
  }
}
