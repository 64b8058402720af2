// Restart back-off, pure: how long a replica (or a trial, or an app's next instance) waits
// before it starts again after an end it did not choose. Exponential and capped, as
// Kubernetes' CrashLoopBackOff (10 s, 20 s, 40 s … 5 min) and Marathon's backoffSeconds ×
// backoffFactor^n up to maxLaunchDelaySeconds; the count starts over after a stable run
// (Kubernetes: once a container ran 10 minutes). The result is a time to restart at, not a
// timer: written in the replicated record, a new leader honours the same wait.

export interface RestartBackoffPolicy {
  /** The wait before the first restart in a row. */
  initialMs: number;
  /** Each restart in a row waits this many times longer than the one before (1: constant). */
  factor: number;
  /** No wait is longer. */
  maxMs: number;
  /** A run at least this long was stable: the next restart waits `initialMs` again. */
  resetAfterMs: number;
}

/**
 * Kubernetes' kubelet defaults: 10 s doubling to 5 minutes (its maxContainerBackOff), reset
 * once a container has run 10 minutes without a problem (the Pod lifecycle documentation).
 */
export const DEFAULT_RESTART_BACKOFF: Readonly<RestartBackoffPolicy> = Object.freeze({
  initialMs: 10_000,
  factor: 2,
  maxMs: 300_000,
  resetAfterMs: 600_000,
});

/** The wait before restart number `n` in a row (1: the first); 0 for n < 1. */
export function backoffDelayMs(p: Pick<RestartBackoffPolicy, 'initialMs' | 'factor' | 'maxMs'>, n: number): number {
  if (n < 1) return 0;
  // Capped before it is raised further: a thousandth restart neither overflows nor waits longer.
  let d = p.initialMs;
  for (let i = 1; i < n && d > 0 && d < p.maxMs; i++) d *= p.factor;
  return Math.round(Math.min(d, p.maxMs));
}

export interface RestartDecision {
  /** Restarts in a row without a stable run, this one included. */
  inRow: number;
  delayMs: number;
  restartAtMs: number;
}

/**
 * The next restart after an end at `nowMs`: `inRowBefore` restarts in a row came before it,
 * and the run that just ended lasted `ranMs` (0 when it never ran). A stable run starts the
 * count over.
 */
export function nextRestart(p: RestartBackoffPolicy, inRowBefore: number, ranMs: number, nowMs: number): RestartDecision {
  const inRow = ranMs >= p.resetAfterMs ? 1 : Math.max(0, inRowBefore) + 1;
  const delayMs = backoffDelayMs(p, inRow);
  return { inRow, delayMs, restartAtMs: nowMs + delayMs };
}

/** Whole seconds left until `atMs` (rounded up), 0 once it has passed: "restarting in 40 s". */
export function secondsUntil(atMs: number | undefined, nowMs: number): number {
  return atMs === undefined || atMs <= nowMs ? 0 : Math.ceil((atMs - nowMs) / 1000);
}
