// Fakes to drive the framework runtime (shared/framework-runtime/) by hand: a clock moved by
// the test, a transport that records every call and is told when the master answers, and an
// in-memory store whose writes can be held, so a test sees what is sent before a record is durable.

import pino from 'pino';
import type { FrameworkInfo, OfferJson, SchedulerCall } from '../../shared/mesos-v1.ts';
import { Resources } from '../../shared/resources.ts';
import { PriorityClasses } from '../../shared/sharing/priority-classes.ts';
import type { FrameworkEnv } from '../../shared/framework-host/contract.ts';
import type { FrameworkStore, JsonValue, StorePut } from '../../shared/framework-host/store.ts';
import type { RuntimeClock } from '../../shared/framework-runtime/clock.ts';
import type { SchedulerTransport, TransportEvents, TransportFactory } from '../../shared/framework-runtime/transport.ts';

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


/** The resources of the one agent fakeEnv's cluster has, `a1` on `h1`. */
export const FAKE_AGENT = 'cpus:4;mem:1024;ports:[31000-31009]';

/** What the host hands a built-in framework, over `store` and `clock`: one agent, no tasks, no HTTP. */
export function fakeEnv(name: string, store: FrameworkStore, clock: FakeClock): FrameworkEnv {
  return {
    name, store,
    cluster: {
      tasks: () => new Map(),
      agents: () => new Map([['a1', { id: 'a1', hostname: 'h1', ip: '10.0.0.1', resources: FAKE_AGENT, attributes: {}, reachable: true }]]),
      holders: () => [],
    },
    priorityClasses: new PriorityClasses(),
    schedulerOptions: () => {
      throw new Error('the test passes its own transport');
    },
    agentFetch: () => undefined,
    domain: 'cairn', log: pino({ level: 'silent' }), now: () => clock.now(),
    api: () => undefined,
  };
}

/** Transports that log their calls into `log`, each kept in `made`. */
export function fakeTransports(log: string[], made: FakeTransport[]): TransportFactory {
  return (info) => {
    const t = new FakeTransport(info, log);
    made.push(t);
    return t;
  };
}

/** An offer of the whole of fakeEnv's agent. */
export function fakeOffer(id: string, frameworkId: string): OfferJson {
  return {
    id: { value: id }, framework_id: { value: frameworkId }, agent_id: { value: 'a1' }, hostname: 'h1',
    url: { scheme: 'http', address: { hostname: 'h1', ip: '10.0.0.1', port: 5051 } },
    resources: Resources.parse(FAKE_AGENT).toMesos(), attributes: [],
  };
}

/** The id of the first task an ACCEPT call launches. */
export function launchedTaskId(call: SchedulerCall | undefined): string | undefined {
  if (call?.type !== 'ACCEPT') return undefined;
  return call.accept.operations[0]?.launch?.task_infos[0]?.task_id.value;
}

/** Everything a built-in framework needs to run by hand: its env, and the transport and clock to pass it. */
export function fakeWorld(name: string) {
  const log: string[] = [];
  const clock = new FakeClock();
  const store = memoryStore(log);
  const transports: FakeTransport[] = [];
  return { log, clock, store, transports, env: fakeEnv(name, store, clock), io: { clock, transport: fakeTransports(log, transports) } };
}
