// A small typed event emitter. Unlike node:events it gives `error` no special meaning
// (the scheduler API has an ERROR event that is just data), and it lets the caller see
// what each listener returned, so a client can wait for asynchronous handlers.

export type EventMap = { [event: string]: (...args: any[]) => unknown };

export class TypedEmitter<Events extends EventMap> {
  private readonly listeners = new Map<keyof Events, Events[keyof Events][]>();

  on<E extends keyof Events>(event: E, listener: Events[E]): this {
    const list = this.listeners.get(event) ?? [];
    // A new array each time, so a listener removed during an emit does not skip another.
    this.listeners.set(event, [...list, listener]);
    return this;
  }

  once<E extends keyof Events>(event: E, listener: Events[E]): this {
    const wrapper = ((...args: Parameters<Events[E]>) => {
      this.off(event, wrapper);
      return listener(...args);
    }) as Events[E];
    return this.on(event, wrapper);
  }

  off<E extends keyof Events>(event: E, listener: Events[E]): this {
    const list = this.listeners.get(event);
    if (list) this.listeners.set(event, list.filter((l) => l !== listener));
    return this;
  }

  listenerCount<E extends keyof Events>(event: E): number {
    return this.listeners.get(event)?.length ?? 0;
  }

  removeAllListeners(): this {
    this.listeners.clear();
    return this;
  }

  /**
   * Calls every listener of `event` in order and returns what they returned. A listener
   * that throws does not stop the others; the first error is rethrown after all ran.
   */
  protected emit<E extends keyof Events>(event: E, ...args: Parameters<Events[E]>): unknown[] {
    const list = this.listeners.get(event);
    if (!list || list.length === 0) return [];
    const results: unknown[] = [];
    let failure: { error: unknown } | undefined;
    for (const listener of list) {
      try {
        results.push(listener(...args));
      } catch (error) {
        failure ??= { error };
      }
    }
    if (failure) throw failure.error;
    return results;
  }
}
