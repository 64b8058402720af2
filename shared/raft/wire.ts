// Raft messages on the wire between masters (proto/raft.proto). A frame carries a batch of
// messages, the cluster id, and an HMAC-SHA256 keyed by the cluster secret. Decoding
// refuses, with a CairnError and nothing half-read:
//  - CAIRN_UNAUTHENTICATED: another cluster's frame, or a missing or wrong HMAC (checked
//    before the payload is decoded, in constant time);
//  - CAIRN_BAD_FRAME: anything undecodable or out of range (unknown message, zero or
//    over-2^53 ids/terms/indexes, entries that do not follow prevIndex, bad membership).
// There is no replay protection: Raft already tolerates duplicated and delayed messages.

import { createHmac, timingSafeEqual } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import protobuf from 'protobufjs';
import { CairnError } from '../errors.ts';
import type { ConfState, Entry, EntryType, Message, Snapshot } from './types.ts';

const root = protobuf.loadSync(fileURLToPath(new URL('../../proto/raft.proto', import.meta.url)));
const FrameType = root.lookupType('cairn.raft.Frame');
const BatchType = root.lookupType('cairn.raft.Batch');

const HMAC_TAG = Buffer.from('cairn-raft-frame-v1');
const HMAC_BYTES = 32;
/** Frames above this are refused unread; snapshots larger than this must be split by the transport. */
export const MAX_FRAME_BYTES = 256 << 20;

export interface WireOptions {
  /** Names the group; a frame from another group is refused even if the secret matches. */
  clusterId: string;
  /** The shared secret (the contents of --secret-file); at least 16 bytes. */
  secret: Uint8Array | string;
}

const ENTRY_TYPE_CODE: Record<EntryType, number> = { normal: 0, confChange: 1 };

/** Encodes and decodes authenticated frames for one cluster. */
export class RaftWire {
  private readonly clusterId: string;
  private readonly clusterIdBytes: Buffer;
  private readonly secret: Buffer;

  constructor(options: WireOptions) {
    if (typeof options.clusterId !== 'string' || options.clusterId.length === 0) {
      throw new CairnError('CAIRN_BAD_REQUEST', 'a cluster id is required', 'clusterId');
    }
    const secret = typeof options.secret === 'string' ? Buffer.from(options.secret, 'utf8') : Buffer.from(options.secret);
    if (secret.length < 16) {
      throw new CairnError('CAIRN_BAD_REQUEST', `the cluster secret must be at least 16 bytes, got ${secret.length}`, 'secret');
    }
    this.clusterId = options.clusterId;
    this.clusterIdBytes = Buffer.from(options.clusterId, 'utf8');
    this.secret = secret;
  }

  private mac(clusterIdBytes: Uint8Array, payload: Uint8Array): Buffer {
    const len = Buffer.alloc(4);
    len.writeUInt32BE(clusterIdBytes.length);
    return createHmac('sha256', this.secret).update(HMAC_TAG).update(len).update(clusterIdBytes).update(payload).digest();
  }

  encode(messages: readonly Message[]): Uint8Array {
    const payload = BatchType.encode({ messages: messages.map(toProto) }).finish();
    return FrameType.encode({ clusterId: this.clusterId, payload, hmac: this.mac(this.clusterIdBytes, payload) }).finish();
  }

  decode(frame: Uint8Array): Message[] {
    if (frame.length > MAX_FRAME_BYTES) {
      throw new CairnError('CAIRN_BAD_FRAME', `frame of ${frame.length} bytes exceeds ${MAX_FRAME_BYTES}`, 'frame');
    }
    let f: { clusterId: string; payload: Uint8Array; hmac: Uint8Array };
    try {
      f = FrameType.decode(frame) as unknown as typeof f;
    } catch (err) {
      throw new CairnError('CAIRN_BAD_FRAME', `undecodable raft frame: ${(err as Error).message}`, 'frame');
    }
    if (f.clusterId !== this.clusterId) {
      throw new CairnError('CAIRN_UNAUTHENTICATED', `frame is for cluster '${f.clusterId}', not '${this.clusterId}'`, 'frame.clusterId');
    }
    const expected = this.mac(this.clusterIdBytes, f.payload);
    if (f.hmac.length !== HMAC_BYTES || !timingSafeEqual(Buffer.from(f.hmac.buffer, f.hmac.byteOffset, f.hmac.length), expected)) {
      throw new CairnError('CAIRN_UNAUTHENTICATED', 'frame HMAC does not match the cluster secret', 'frame.hmac');
    }
    let batch: { messages: ProtoMessage[] };
    try {
      batch = BatchType.decode(f.payload) as unknown as typeof batch;
    } catch (err) {
      throw new CairnError('CAIRN_BAD_FRAME', `undecodable raft payload: ${(err as Error).message}`, 'frame.payload');
    }
    return batch.messages.map((m, i) => fromProto(m, `messages[${i}]`));
  }
}

// ---------------------------------------------------------------------------------------
// TS <-> protobuf shapes

type Uint64 = number | { low: number; high: number; unsigned?: boolean };

interface ProtoEntry { index: Uint64; term: Uint64; type: number; data: Uint8Array }
interface ProtoSnapshot { index: Uint64; term: Uint64; confState?: { voters: Uint64[]; learners: Uint64[] } | null; data: Uint8Array }
interface ProtoMessage {
  from: Uint64;
  to: Uint64;
  term: Uint64;
  body?: string;
  append?: { prevIndex: Uint64; prevTerm: Uint64; entries: ProtoEntry[]; commit: Uint64 };
  appendResponse?: { index: Uint64; reject: boolean; hintIndex: Uint64; hintTerm: Uint64 };
  vote?: { preVote: boolean; lastIndex: Uint64; lastTerm: Uint64; transfer: boolean };
  voteResponse?: { preVote: boolean; reject: boolean };
  heartbeat?: { commit: Uint64; context: Uint8Array };
  heartbeatResponse?: { context: Uint8Array };
  snapshot?: { snapshot?: ProtoSnapshot | null };
  timeoutNow?: object;
  readIndex?: { context: Uint8Array };
  readIndexResponse?: { index: Uint64; context: Uint8Array; reject: boolean };
}

function entryToProto(e: Entry): ProtoEntry {
  return { index: e.index, term: e.term, type: ENTRY_TYPE_CODE[e.type], data: e.data };
}

function snapshotToProto(s: Snapshot): ProtoSnapshot {
  const cs = s.metadata.confState;
  return { index: s.metadata.index, term: s.metadata.term, confState: { voters: [...cs.voters], learners: [...cs.learners] }, data: s.data };
}

function toProto(m: Message): ProtoMessage {
  const base = { from: m.from, to: m.to, term: m.term };
  switch (m.type) {
    case 'append':
      return { ...base, append: { prevIndex: m.prevIndex, prevTerm: m.prevTerm, entries: m.entries.map(entryToProto), commit: m.commit } };
    case 'appendResponse':
      return { ...base, appendResponse: { index: m.index, reject: m.reject, hintIndex: m.hintIndex, hintTerm: m.hintTerm } };
    case 'vote':
    case 'preVote':
      return { ...base, vote: { preVote: m.type === 'preVote', lastIndex: m.lastIndex, lastTerm: m.lastTerm, transfer: m.transfer } };
    case 'voteResponse':
    case 'preVoteResponse':
      return { ...base, voteResponse: { preVote: m.type === 'preVoteResponse', reject: m.reject } };
    case 'heartbeat':
      return { ...base, heartbeat: { commit: m.commit, context: m.context } };
    case 'heartbeatResponse':
      return { ...base, heartbeatResponse: { context: m.context } };
    case 'snapshot':
      return { ...base, snapshot: { snapshot: snapshotToProto(m.snapshot) } };
    case 'timeoutNow':
      return { ...base, timeoutNow: {} };
    case 'readIndex':
      return { ...base, readIndex: { context: m.context } };
    case 'readIndexResponse':
      return { ...base, readIndexResponse: { index: m.index, context: m.context, reject: m.reject } };
  }
}

function bad(field: string, message: string): CairnError {
  return new CairnError('CAIRN_BAD_FRAME', message, field);
}

/** A uint64 as a safe integer ≥ min, or a CAIRN_BAD_FRAME naming the field. */
function num(v: Uint64 | undefined | null, field: string, min = 0): number {
  let n: number;
  if (v === undefined || v === null) n = 0;
  else if (typeof v === 'number') n = v;
  else {
    const high = v.high >>> 0;
    if (high >= 1 << 21) throw bad(field, 'is beyond 2^53');
    n = high * 4294967296 + (v.low >>> 0);
  }
  if (!Number.isSafeInteger(n) || n < min) throw bad(field, `must be an integer ≥ ${min}, got ${n}`);
  return n;
}

function bytes(v: Uint8Array | undefined | null): Uint8Array {
  // Copy out of the frame's buffer so a message never pins (or aliases) the whole frame.
  return v === undefined || v === null || v.length === 0 ? new Uint8Array(0) : new Uint8Array(v);
}

function ids(list: Uint64[] | undefined, field: string): number[] {
  const out = (list ?? []).map((v, i) => num(v, `${field}[${i}]`, 1));
  if (new Set(out).size !== out.length) throw bad(field, 'lists a node twice');
  return out;
}

function entryFromProto(e: ProtoEntry, field: string): Entry {
  const type: EntryType | undefined = e.type === 0 ? 'normal' : e.type === 1 ? 'confChange' : undefined;
  if (type === undefined) throw bad(`${field}.type`, `unknown entry type ${e.type}`);
  return { index: num(e.index, `${field}.index`, 1), term: num(e.term, `${field}.term`, 1), type, data: bytes(e.data) };
}

function snapshotFromProto(s: ProtoSnapshot | null | undefined, field: string): Snapshot {
  if (s === undefined || s === null) throw bad(field, 'is missing');
  const voters = ids(s.confState?.voters, `${field}.confState.voters`);
  const learners = ids(s.confState?.learners, `${field}.confState.learners`);
  if (voters.some((id) => learners.includes(id))) throw bad(`${field}.confState`, 'a node is both voter and learner');
  return {
    metadata: { index: num(s.index, `${field}.index`, 1), term: num(s.term, `${field}.term`, 1), confState: { voters, learners } as ConfState },
    data: bytes(s.data),
  };
}

function fromProto(p: ProtoMessage, field: string): Message {
  const from = num(p.from, `${field}.from`, 1);
  const to = num(p.to, `${field}.to`, 1);
  const term = num(p.term, `${field}.term`, 1);
  const base = { from, to, term };
  switch (p.body) {
    case 'append': {
      const a = p.append!;
      const prevIndex = num(a.prevIndex, `${field}.append.prevIndex`);
      const entries = (a.entries ?? []).map((e, i) => entryFromProto(e, `${field}.append.entries[${i}]`));
      entries.forEach((e, i) => {
        if (e.index !== prevIndex + 1 + i) throw bad(`${field}.append.entries[${i}].index`, `expected ${prevIndex + 1 + i}, got ${e.index}`);
      });
      return { type: 'append', ...base, prevIndex, prevTerm: num(a.prevTerm, `${field}.append.prevTerm`), entries, commit: num(a.commit, `${field}.append.commit`) };
    }
    case 'appendResponse': {
      const r = p.appendResponse!;
      return {
        type: 'appendResponse', ...base,
        index: num(r.index, `${field}.appendResponse.index`),
        reject: r.reject === true,
        hintIndex: num(r.hintIndex, `${field}.appendResponse.hintIndex`),
        hintTerm: num(r.hintTerm, `${field}.appendResponse.hintTerm`),
      };
    }
    case 'vote': {
      const v = p.vote!;
      return {
        type: v.preVote ? 'preVote' : 'vote', ...base,
        lastIndex: num(v.lastIndex, `${field}.vote.lastIndex`),
        lastTerm: num(v.lastTerm, `${field}.vote.lastTerm`),
        transfer: v.transfer === true,
      };
    }
    case 'voteResponse': {
      const v = p.voteResponse!;
      return { type: v.preVote ? 'preVoteResponse' : 'voteResponse', ...base, reject: v.reject === true };
    }
    case 'heartbeat': {
      const h = p.heartbeat!;
      return { type: 'heartbeat', ...base, commit: num(h.commit, `${field}.heartbeat.commit`), context: bytes(h.context) };
    }
    case 'heartbeatResponse':
      return { type: 'heartbeatResponse', ...base, context: bytes(p.heartbeatResponse!.context) };
    case 'snapshot':
      return { type: 'snapshot', ...base, snapshot: snapshotFromProto(p.snapshot!.snapshot, `${field}.snapshot.snapshot`) };
    case 'timeoutNow':
      return { type: 'timeoutNow', ...base };
    case 'readIndex':
      return { type: 'readIndex', ...base, context: bytes(p.readIndex!.context) };
    case 'readIndexResponse': {
      const r = p.readIndexResponse!;
      return { type: 'readIndexResponse', ...base, index: num(r.index, `${field}.readIndexResponse.index`), context: bytes(r.context), reject: r.reject === true };
    }
    default:
      throw bad(`${field}.body`, p.body === undefined ? 'carries no message' : `unknown message '${p.body}'`);
  }
}
