// What a master answers without a credential when its operator says so (`cairn master --open`):
// the master checks every call against it; the command line checks the flag before starting one.

/**
 * What an operator may open to callers without a credential (`--open a,b`): the metrics,
 * the DNS API, and the scheduler API, whose unauthenticated callers act as ANONYMOUS.
 */
export const OPENABLE = ['metrics', 'dns-api', 'scheduler'] as const;
export type Openable = (typeof OPENABLE)[number];
