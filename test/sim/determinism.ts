// Inside a simulated run the clock, chance and timers of the host are off limits: anything
// nondeterministic reached from a core or the harness would make seeds unreplayable, so
// those globals throw while the run lasts (the run is synchronous, nothing else is running).

export function forbidNondeterminism(): () => void {
  const saved = {
    random: Math.random,
    now: Date.now,
    setTimeout: globalThis.setTimeout,
    setInterval: globalThis.setInterval,
    setImmediate: globalThis.setImmediate,
  };
  const forbid = (what: string) => () => {
    throw new Error(`${what} called inside the deterministic simulation`);
  };
  Math.random = forbid('Math.random()');
  Date.now = forbid('Date.now()');
  globalThis.setTimeout = forbid('setTimeout()') as unknown as typeof setTimeout;
  globalThis.setInterval = forbid('setInterval()') as unknown as typeof setInterval;
  globalThis.setImmediate = forbid('setImmediate()') as unknown as typeof setImmediate;
  return () => {
    Math.random = saved.random;
    Date.now = saved.now;
    globalThis.setTimeout = saved.setTimeout;
    globalThis.setInterval = saved.setInterval;
    globalThis.setImmediate = saved.setImmediate;
  };
}
