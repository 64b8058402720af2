// Time for deciding, apart from time for showing. Deadlines, leases, time-outs and liveness
// are measured on the monotonic clock (performance.now()), which an operator, NTP or a
// virtual machine's resume never steps; the wall clock (Date.now()) is for timestamps a
// person reads. A steady clock joins the two: it reads the wall clock once, when it is made,
// and from then on advances only with the monotonic clock — so its readings look like epoch
// milliseconds (they can be stored and shown as timestamps) while a wall-clock step, either
// way, moves none of them. A step shows in a steady clock made after it.

export type Clock = () => number;

/** Milliseconds on the monotonic clock (arbitrary origin): only differences mean anything. */
export function monotonicMs(): number {
  return performance.now();
}

/** A clock in the epoch's range, anchored at `wallMs` (now, by default), that advances monotonically. */
export function steadyClock(wallMs: number = Date.now(), mono: Clock = monotonicMs): Clock {
  const origin = wallMs - mono();
  return () => origin + mono();
}
