// How long the master keeps a built-in framework's tasks after its subscription is lost.
// One definition: what every built-in framework subscribes with, and what `/v2/info` reports.

/** A week: the frameworks' tasks outlive any leader change and any restart of every master. */
export const FAILOVER_TIMEOUT_S = 7 * 24 * 3600;
