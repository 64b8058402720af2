// The runtime's time: readings for decisions and timers for ticks and retries, passed in so a
// test (or the simulator) drives them by hand. Production runs on the leadership's steady
// clock (FrameworkEnv.now) and Node's timers, unreferenced so they never keep a process alive.

import type { Clock } from '../steady-clock.ts';

/** Cancels a timer; calling it twice is harmless. */
export type Cancel = () => void;

export interface RuntimeClock {
  /** Milliseconds in the epoch's range, never stepped back (a steady clock). */
  now(): number;
  /** Calls `fn` once, `ms` from now. */
  after(ms: number, fn: () => void): Cancel;
  /** Calls `fn` every `ms`, the first time `ms` from now. */
  every(ms: number, fn: () => void): Cancel;
}

/** Readings from `now`, timers from Node. */
export function timerClock(now: Clock): RuntimeClock {
  return {
    now,
    after(ms, fn) {
      const t = setTimeout(fn, ms);
      t.unref();
      return () => clearTimeout(t);
    },
    every(ms, fn) {
      const t = setInterval(fn, ms);
      t.unref();
      return () => clearInterval(t);
    },
  };
}
