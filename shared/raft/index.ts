// The Raft core's public surface. Shells (the master) use RaftNode with a RaftStorage and
// the wire codec; the pieces behind it (log, progress, quorum) stay internal.

export { RaftNode, type Ready, type SoftState, type RaftStatus, type ProgressStatus } from './node.ts';
export { NotLeaderError } from './raft.ts';
export { RAFT_DEFAULTS, compileRaftConfig, type RaftOptions, type RaftConfig } from './config.ts';
export { SeededRandom, type RandomSource } from './random.ts';
export type { RaftStorage } from './storage.ts';
export { MemoryStorage, bootstrapSnapshot, emptySnapshot } from './memory-storage.ts';
export { applyConfChangeTo, confChangeProblem, decodeConfChange, encodeConfChange } from './confchange.ts';
export * from './types.ts';
