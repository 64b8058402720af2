// Owns what a daemon starts (servers, sockets, timers, children) and releases it in
// reverse order, so stop() is deterministic and tests leave nothing running.

export type Disposable = () => void | Promise<void>;

export class Disposer {
  private readonly items: { what: string; dispose: Disposable }[] = [];
  private disposed = false;

  /** Registers something to release; if already disposed, releases it at once. */
  add(what: string, dispose: Disposable): void {
    if (this.disposed) {
      void Promise.resolve().then(dispose).catch(() => {});
      return;
    }
    this.items.push({ what, dispose });
  }

  /** Releases everything, newest first. One failure does not stop the rest; all are returned. */
  async disposeAll(): Promise<{ what: string; error: Error }[]> {
    this.disposed = true;
    const failures: { what: string; error: Error }[] = [];
    while (this.items.length > 0) {
      const item = this.items.pop()!;
      try {
        await item.dispose();
      } catch (err) {
        failures.push({ what: item.what, error: err as Error });
      }
    }
    return failures;
  }
}
