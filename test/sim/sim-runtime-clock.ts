// The framework runtime's clock (shared/framework-runtime/clock.ts) in the whole-cluster
// simulation: timers are entries on the simulator's clock, so they run in its one order, and
// readings come from the clock its host gives (as FrameworkEnv.now on a master: the
// leadership's steady clock, anchored on a wall clock that clock-step faults move). A crash
// kills the clock: the dead instance's timers never fire again.

import type { Cancel, RuntimeClock } from '../../shared/framework-runtime/clock.ts';
import type { Clock } from '../../shared/steady-clock.ts';
import type { SimClock } from './cluster-clock.ts';

export class SimRuntimeClock implements RuntimeClock {
  private dead = false;

  constructor(
    private readonly clock: SimClock,
    readonly now: Clock,
  ) {}

  after(ms: number, fn: () => void): Cancel {
    let cancelled = false;
    this.clock.after(ms, () => {
      if (!cancelled && !this.dead) fn();
    });
    return () => (cancelled = true);
  }

  every(ms: number, fn: () => void): Cancel {
    let cancelled = false;
    const tick = () => {
      if (cancelled || this.dead) return;
      fn();
      this.clock.after(ms, tick);
    };
    this.clock.after(ms, tick);
    return () => (cancelled = true);
  }

  /** The process died: none of its timers runs again. */
  kill(): void {
    this.dead = true;
  }
}
