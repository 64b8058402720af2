// Fakes to drive the framework runtime (shared/framework-runtime/) by hand: a clock moved by
// the test, a transport that records every call and is told when the master answers, and an
// in-memory store whose writes can be held, so a test sees what is sent before a record is durable.

import type { FrameworkInfo, SchedulerCall } from '../../shared/mesos-v1.ts';
import type { FrameworkStore, JsonValue, StorePut } from '../../shared/framework-host/store.ts';
import type { RuntimeClock } from '../../shared/framework-runtime/clock.ts';
import type { SchedulerTransport, TransportEvents } from '../../shared/framework-runtime/transport.ts';

export class FakeClock implements RuntimeClock {
  ms = 1_000_000;
  private timers: { at: number; fn: () => void; every?: number; id: number }[] = [];
  private seq = 0;
  now(): number {
    return this.ms;
  }
  after(ms: number, fn: () => void): () => void {
    const id = ++this.seq;
    this.timers.push({ at: this.ms + ms, fn, id });
    return () => (this.timers = this.timers.filter((t) => t.id !== id));
  }
  every(ms: number, fn: () => void): () => void {
    const id = ++this.seq;
    this.timers.push({ at: this.ms + ms, fn, every: ms, id });
    return () => (this.timers = this.timers.filter((t) => t.id !== id));
  }
  advance(ms: number): void {
    const end = this.ms + ms;
    for (;;) {
      const due = this.timers.filter((t) => t.at <= end).sort((a, b) => a.at - b.at)[0];
      if (!due) break;
      this.ms = due.at;
      if (due.every) due.at += due.every;
      else this.timers = this.timers.filter((t) => t !== due);
      due.fn();
    }
    this.ms = end;
  }
}

export class FakeTransport implements SchedulerTransport {
  frameworkId: string | undefined;
  connected = false;
  closed = false;
  readonly calls: SchedulerCall[] = [];
  /** Calls of these types are refused. */
  readonly refuse = new Set<string>();
  private readonly listeners: { [E in keyof TransportEvents]?: TransportEvents[E][] } = {};
  private settle: { resolve(id: string): void; reject(e: Error): void } | undefined;

  constructor(readonly info: FrameworkInfo, private readonly log: string[]) {
    this.frameworkId = info.id?.value;
  }
  subscribe(): Promise<string> {
    return new Promise((resolve, reject) => (this.settle = { resolve, reject }));
  }
  call(call: SchedulerCall): Promise<void> {
    this.calls.push(call);
    this.log.push(call.type);
    return this.refuse.has(call.type) ? Promise.reject(new Error(`${call.type} refused`)) : Promise.resolve();
  }
  on<E extends keyof TransportEvents>(event: E, listener: TransportEvents[E]): this {
    const list = (this.listeners[event] ??= []) as TransportEvents[E][];
    list.push(listener);
    return this;
  }
  emit<E extends keyof TransportEvents>(event: E, ...args: Parameters<TransportEvents[E]>): unknown[] {
    const list = (this.listeners[event] ?? []) as ((...a: unknown[]) => unknown)[];
    return list.map((l) => l(...args));
  }
  close(): void {
    this.closed = true;
    this.connected = false;
  }
  /** The master takes the subscription. */
  accept(frameworkId: string, resubscribed = false): void {
    this.frameworkId = frameworkId;
    this.connected = true;
    this.settle?.resolve(frameworkId);
    this.emit('subscribed', frameworkId, { resubscribed });
  }
  /** No master takes it. */
  fail(message: string): void {
    this.settle?.reject(new Error(message));
  }
}

/** A store in memory; each key written is logged as `put KEY` once durable. hold() keeps writes pending until its release is called. */
export function memoryStore(log: string[]): FrameworkStore & { m: Map<string, JsonValue>; hold(): () => void } {
  const m = new Map<string, JsonValue>();
  const listeners = new Set<(keys: string[]) => void>();
  let gate: Promise<void> | undefined;
  const store = {
    owner: 'test',
    m,
    get<T extends JsonValue = JsonValue>(key: string): T | undefined {
      return m.get(key) as T | undefined;
    },
    entries<T extends JsonValue = JsonValue>(prefix = ''): [string, T][] {
      return [...m.entries()].filter(([k]) => k.startsWith(prefix)).sort(([a], [b]) => (a < b ? -1 : 1)) as [string, T][];
    },
    async write(puts: StorePut[]): Promise<void> {
      if (gate) await gate;
      for (const p of puts) {
        log.push(`put ${p.key}`);
        if (p.value === null) m.delete(p.key);
        else m.set(p.key, p.value);
      }
      for (const l of listeners) l(puts.map((p) => p.key));
    },
    put(key: string, value: JsonValue | null): Promise<void> {
      return store.write([{ key, value }]);
    },
    onChange(listener: (keys: string[]) => void): () => void {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    hold(): () => void {
      let release!: () => void;
      gate = new Promise<void>((r) => (release = r));
      return () => {
        gate = undefined;
        release();
      };
    },
  };
  return store;
}

export const flush = async (): Promise<void> => {
  for (let i = 0; i < 20; i++) await Promise.resolve();
};

