// Everything a shell (the master) needs from shared/raft: the pure core (RaftNode and its
// values), durable storage (SqliteRaftStorage) and the wire codec (RaftWire). The core's
// own modules import neither SQLite nor protobuf; only this index and the two adapters do.
// The pieces behind the core (log, progress, quorum) stay internal.

export { RaftNode, type Ready, type SoftState, type RaftStatus, type ProgressStatus } from './node.ts';
export { NotLeaderError } from './raft.ts';
export { RAFT_DEFAULTS, compileRaftConfig, type RaftOptions, type RaftConfig } from './config.ts';
export { SeededRandom, type RandomSource } from './random.ts';
export type { RaftStorage } from './storage.ts';
export { MemoryStorage, bootstrapSnapshot, emptySnapshot } from './memory-storage.ts';
export { applyConfChangeTo, confChangeProblem, decodeConfChange, encodeConfChange, planReplacement } from './confchange.ts';
export { SqliteRaftStorage, type SqliteRaftStorageOptions, type RecoveryReport, type RaftWrite } from './sqlite-storage.ts';
export { RaftWire, MAX_FRAME_BYTES, type WireOptions } from './wire.ts';
export * from './types.ts';
