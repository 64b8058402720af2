// The runtime's time-outs, each with its reason, in one place.

/**
 * A launch not heard of for this long is asked about with a RECONCILE: the ACCEPT, or the
 * leader it went to, may be lost, and the master answers TASK_LOST for a task it never saw.
 */
export const STARTING_TIMEOUT_MS = 5_000;
