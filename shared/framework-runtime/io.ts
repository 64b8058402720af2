// Where a built-in framework's runtime gets its I/O and time: from the host (the scheduler
// API over HTTP, the leadership's steady clock and Node's timers) unless a test or the
// simulator passes its own transport and clock.

import type { FrameworkEnv } from '../framework-host/contract.ts';
import type { Clock } from '../steady-clock.ts';
import { timerClock, type RuntimeClock } from './clock.ts';
import { httpTransport } from './http-transport.ts';
import type { TransportFactory } from './transport.ts';

export interface RuntimeIoOptions {
  /** The subscriptions' transport (default: HTTP to this master). */
  transport?: TransportFactory;
  /** Readings and timers (default: the leadership's clock, Node's timers). */
  clock?: RuntimeClock;
  /** Readings only (timers stay Node's): for tests that move time by hand. */
  now?: Clock;
}

export interface RuntimeIo {
  transport: TransportFactory;
  clock: RuntimeClock;
}

export function runtimeIo(env: Pick<FrameworkEnv, 'schedulerOptions' | 'now'>, o: RuntimeIoOptions = {}): RuntimeIo {
  return {
    transport: o.transport ?? httpTransport((info) => env.schedulerOptions(info)),
    clock: o.clock ?? timerClock(o.now ?? env.now),
  };
}
