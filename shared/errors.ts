// Errors with stable codes: tests and clients match on `code`, people read `message`.
// `field` names the piece of input that was wrong, when there is one.

export type CairnErrorCode =
  | 'CAIRN_BAD_RESOURCES'
  | 'CAIRN_BAD_REQUEST'
  | 'CAIRN_BAD_FRAME'
  | 'CAIRN_UNKNOWN_CALL'
  | 'CAIRN_UNKNOWN_OFFER'
  | 'CAIRN_OFFER_RESCINDED'
  | 'CAIRN_INSUFFICIENT_RESOURCES'
  | 'CAIRN_UNKNOWN_FRAMEWORK'
  | 'CAIRN_UNKNOWN_TASK'
  | 'CAIRN_UNKNOWN_AGENT'
  | 'CAIRN_UNKNOWN_QUOTA'
  | 'CAIRN_STREAM_MISMATCH'
  | 'CAIRN_DUPLICATE_TASK'
  // A task's log that is not a regular file of its sandbox (a symlink planted by the task)
  | 'CAIRN_LOG_REFUSED'
  | 'CAIRN_BAD_FLAG'
  | 'CAIRN_AGENT_UNAVAILABLE'
  | 'CAIRN_INTERNAL'
  // A data or work dir another process holds
  | 'CAIRN_DIR_LOCKED'
  // Gossip membership
  | 'CAIRN_GOSSIP_OFF'
  // Raft-replicated masters
  | 'CAIRN_NOT_LEADER'
  | 'CAIRN_RAFT_OFF'
  | 'CAIRN_UNAUTHENTICATED'
  // An authentic Raft frame or gossip packet seen before (or too old to tell).
  | 'CAIRN_REPLAYED'
  // Authentication and authorization
  | 'CAIRN_FORBIDDEN'
  | 'CAIRN_CROSS_SITE'
  | 'CAIRN_BAD_CREDENTIALS'
  | 'CAIRN_BAD_ACLS'
  | 'CAIRN_RAFT_CHANGE_PENDING'
  | 'CAIRN_RAFT_NO_QUORUM'
  | 'CAIRN_RAFT_BAD_CHANGE'
  | 'CAIRN_RAFT_LEARNER_BEHIND'
  | 'CAIRN_RAFT_TRANSFERRING'
  | 'CAIRN_RAFT_OVERLOADED'
  | 'CAIRN_RAFT_CORRUPT_LOG'
  | 'CAIRN_RAFT_STORAGE_LOST'
  | 'CAIRN_REGISTRY_UNUSABLE'
  // The data dir cannot take a write (disk full, quota, I/O error): writes refused, reads served
  | 'CAIRN_STORAGE_FULL'
  | 'CAIRN_NOT_READY'
  // A job document (Cairn's own, a TFJob, a PyTorchJob, a Volcano Job, or flags) refused
  | 'CAIRN_INVALID_JOB'
  // A job with a replica bigger than every agent: waiting cannot help (allowUnschedulable submits it anyway)
  | 'CAIRN_UNSCHEDULABLE'
  // Registry credentials: a Docker config.json refused, a stored credential (secret) not found
  | 'CAIRN_BAD_DOCKER_CONFIG'
  | 'CAIRN_UNKNOWN_SECRET'
  // A principal's objects past its quota (count or bytes: master/sharing/object-quota.ts)
  | 'CAIRN_QUOTA_EXCEEDED';

export class CairnError extends Error {
  readonly code: CairnErrorCode;
  readonly field: string | undefined;

  constructor(code: CairnErrorCode, message: string, field?: string) {
    super(field !== undefined && !message.includes(field) ? `${field}: ${message}` : message);
    this.name = 'CairnError';
    this.code = code;
    this.field = field;
  }
}

export function badRequest(field: string, message: string): CairnError {
  return new CairnError('CAIRN_BAD_REQUEST', message, field);
}
