// The pure Raft core in one import: RaftNode and its values, the options compiler, in-memory
// storage and configuration changes. The pieces behind the core (log, progress, quorum) stay
// internal. The adapters a shell adds are imported from their own modules, so that this index
// stays a core (no SQLite, no protobuf): sqlite-storage.ts (durable log) and wire.ts (frames).
// The random source the core needs is shared/random.ts (SeededRandom; cryptoRandom for daemons).

export { RaftNode, type Ready, type SoftState, type RaftStatus, type ProgressStatus } from './node.ts';
export { NotLeaderError } from './raft.ts';
export { RAFT_DEFAULTS, compileRaftConfig, type RaftOptions, type RaftConfig } from './config.ts';
export type { RaftStorage } from './storage.ts';
export { MemoryStorage } from './memory-storage.ts';
export { bootstrapSnapshot, emptySnapshot } from './held-log.ts';
export { applyConfChangeTo, confChangeProblem, decodeConfChange, encodeConfChange, planReplacement } from './confchange.ts';
export * from './types.ts';
