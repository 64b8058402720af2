// Raft messages on the wire between masters (proto/raft.proto). A connection opens with a
// handshake (the dialer's HELLO, the listener's WELCOME, each with a fresh 16-byte nonce, the
// cluster id and an HMAC-SHA256 under the cluster secret); both sides then hold a RaftSession
// with one key per direction, derived from the secret, the cluster id and both nonces. Every
// data frame carries a batch of messages, a counter and one HMAC under its direction's key, so
// that a frame cannot be replayed: not on its own connection (its counter is no longer above
// the last accepted), not on another one (other nonces, other keys). Decoding refuses, with a
// CairnError and nothing half-read:
//  - CAIRN_UNAUTHENTICATED: another cluster's hello or welcome, a missing or wrong HMAC (checked
//    before the payload is decoded, in constant time), a frame made for another connection;
//  - CAIRN_REPLAYED: an authentic frame whose counter is not above the last one accepted;
//  - CAIRN_BAD_FRAME: anything undecodable or out of range (unknown message, zero or
//    over-2^53 ids/terms/indexes, entries that do not follow prevIndex, bad membership), or a
//    frame of the wrong kind for the handshake's step.
// Raft itself tolerates duplicated and delayed messages; what replay protection adds is that
// only a master holding the secret, on a connection it opened now, can make a master act.

import { createHmac, createSecretKey, randomBytes, timingSafeEqual, type KeyObject } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import protobuf from 'protobufjs';
import { CairnError } from '../errors.ts';
import type { ConfState, Entry, EntryType, Message, NodeId, Snapshot } from './types.ts';

const root = protobuf.loadSync(fileURLToPath(new URL('../../proto/raft.proto', import.meta.url)));
const FrameType = root.lookupType('cairn.raft.Frame');
const BatchType = root.lookupType('cairn.raft.Batch');
const HelloType = root.lookupType('cairn.raft.Hello');
const WelcomeType = root.lookupType('cairn.raft.Welcome');

const KIND_DATA = 0;
const KIND_HELLO = 1;
const KIND_WELCOME = 2;
const HELLO_TAG = Buffer.from('cairn-raft-hello-v2');
const WELCOME_TAG = Buffer.from('cairn-raft-welcome-v2');
const SESSION_TAG = Buffer.from('cairn-raft-session-v2');
const DIALER_TO_LISTENER = 1;
const LISTENER_TO_DIALER = 2;
const HMAC_BYTES = 32;
/** Bytes of each side's nonce: 128 bits, never repeated by chance. */
export const NONCE_BYTES = 16;
/** Frames above this are refused unread; snapshots larger than this must be split by the transport. */
export const MAX_FRAME_BYTES = 256 << 20;

export interface WireOptions {
  /** Names the group; a peer of another group is refused even if the secret matches. */
  clusterId: string;
  /** The shared secret (the contents of --secret-file); at least 16 bytes. */
  secret: Uint8Array | string;
  /**
   * This member's storage incarnation (a random id made with its Raft storage), told to
   * peers in the handshake so that they can tell a member whose storage was lost.
   */
  incarnation?: string;
}

const ENTRY_TYPE_CODE: Record<EntryType, number> = { normal: 0, confChange: 1 };

interface ProtoFrame { clusterId: string; payload: Uint8Array; hmac: Uint8Array; kind: number; counter: Uint64 }

/** Opens a frame's envelope: size, protobuf, kind. */
function parseFrame(frame: Uint8Array, kind: number): ProtoFrame {
  if (frame.length > MAX_FRAME_BYTES) {
    throw new CairnError('CAIRN_BAD_FRAME', `frame of ${frame.length} bytes exceeds ${MAX_FRAME_BYTES}`, 'frame');
  }
  let f: ProtoFrame;
  try {
    f = FrameType.decode(frame) as unknown as ProtoFrame;
  } catch (err) {
    throw new CairnError('CAIRN_BAD_FRAME', `undecodable raft frame: ${(err as Error).message}`, 'frame');
  }
  const got = f.kind ?? KIND_DATA;
  if (got !== kind) {
    throw new CairnError('CAIRN_BAD_FRAME', `expected a ${KIND_NAMES[kind]} frame, got a ${KIND_NAMES[got] ?? `kind ${got}`} frame`, 'frame.kind');
  }
  return f;
}

const KIND_NAMES: Record<number, string> = { [KIND_DATA]: 'data', [KIND_HELLO]: 'hello', [KIND_WELCOME]: 'welcome' };

function macMatches(got: Uint8Array | undefined, expected: Buffer): boolean {
  return got !== undefined && got.length === HMAC_BYTES && timingSafeEqual(Buffer.from(got.buffer, got.byteOffset, got.length), expected);
}

/**
 * The handshake of one cluster. The dialer calls `hello()` and sends its frame, then hands
 * the answer to `Dialing.welcome()`; the listener hands the first frame it gets to `accept()`
 * and sends back the welcome. Both come out with a RaftSession for the connection.
 */
export class RaftWire {
  private readonly clusterId: string;
  private readonly clusterIdBytes: Buffer;
  private readonly secret: Buffer;
  /** uint32be(len(cluster)) || cluster: what every MAC under the secret starts with after its tag. */
  private readonly clusterPrefix: Buffer;
  private readonly incarnation: string;

  constructor(options: WireOptions) {
    if (typeof options.clusterId !== 'string' || options.clusterId.length === 0) {
      throw new CairnError('CAIRN_BAD_REQUEST', 'a cluster id is required', 'clusterId');
    }
    const secret = typeof options.secret === 'string' ? Buffer.from(options.secret, 'utf8') : Buffer.from(options.secret);
    if (secret.length < 16) {
      throw new CairnError('CAIRN_BAD_REQUEST', `the cluster secret must be at least 16 bytes, got ${secret.length}`, 'secret');
    }
    if (options.incarnation !== undefined && (typeof options.incarnation !== 'string' || options.incarnation.length > 64)) {
      throw new CairnError('CAIRN_BAD_REQUEST', 'an incarnation is a string of at most 64 characters', 'incarnation');
    }
    this.incarnation = options.incarnation ?? '';
    this.clusterId = options.clusterId;
    this.clusterIdBytes = Buffer.from(options.clusterId, 'utf8');
    this.secret = secret;
    const len = Buffer.alloc(4);
    len.writeUInt32BE(this.clusterIdBytes.length);
    this.clusterPrefix = Buffer.concat([len, this.clusterIdBytes]);
  }

  private handshakeMac(tag: Buffer, payload: Uint8Array): Buffer {
    return createHmac('sha256', this.secret).update(tag).update(this.clusterPrefix).update(payload).digest();
  }

  private sessionKey(dialerNonce: Uint8Array, listenerNonce: Uint8Array, direction: number): KeyObject {
    const key = createHmac('sha256', this.secret)
      .update(SESSION_TAG).update(this.clusterPrefix).update(dialerNonce).update(listenerNonce).update(Buffer.from([direction]))
      .digest();
    return createSecretKey(key);
  }

  /** Reads and checks a hello or welcome under the secret; returns its payload. */
  private openHandshake(frame: Uint8Array, kind: number, tag: Buffer): Uint8Array {
    const f = parseFrame(frame, kind);
    if (f.clusterId !== this.clusterId) {
      throw new CairnError('CAIRN_UNAUTHENTICATED', `peer is of cluster '${f.clusterId}', not '${this.clusterId}'`, 'frame.clusterId');
    }
    if (!macMatches(f.hmac, this.handshakeMac(tag, f.payload))) {
      throw new CairnError('CAIRN_UNAUTHENTICATED', `${KIND_NAMES[kind]} HMAC does not match the cluster secret`, 'frame.hmac');
    }
    return f.payload;
  }

  /** The dialer's side: the hello to send first, and what takes the listener's welcome. */
  hello(from: NodeId = 0): { frame: Uint8Array; dialing: Dialing } {
    const nonce = randomBytes(NONCE_BYTES);
    const payload = HelloType.encode({ nonce, from, incarnation: this.incarnation }).finish();
    const frame = FrameType.encode({ kind: KIND_HELLO, clusterId: this.clusterId, payload, hmac: this.handshakeMac(HELLO_TAG, payload) }).finish();
    return { frame, dialing: new Dialing(nonce, (welcome) => this.completeDial(nonce, welcome)) };
  }

  private completeDial(dialerNonce: Buffer, frame: Uint8Array): RaftSession {
    const payload = this.openHandshake(frame, KIND_WELCOME, WELCOME_TAG);
    let w: { dialerNonce: Uint8Array; nonce: Uint8Array; from: Uint64; incarnation?: string; known?: string };
    try {
      w = WelcomeType.decode(payload) as unknown as typeof w;
    } catch (err) {
      throw bad('frame.payload', `undecodable welcome: ${(err as Error).message}`);
    }
    // An authentic welcome for another connection (an old one sent again) is not ours.
    if (w.dialerNonce.length !== NONCE_BYTES || !timingSafeEqual(Buffer.from(w.dialerNonce), dialerNonce)) {
      throw new CairnError('CAIRN_REPLAYED', 'the welcome answers another connection\'s hello', 'welcome.dialerNonce');
    }
    if (w.nonce.length !== NONCE_BYTES) throw bad('welcome.nonce', `must be ${NONCE_BYTES} bytes, got ${w.nonce.length}`);
    const peer = num(w.from, 'welcome.from');
    return new RaftSession(
      this.sessionKey(dialerNonce, w.nonce, DIALER_TO_LISTENER),
      this.sessionKey(dialerNonce, w.nonce, LISTENER_TO_DIALER),
      peer,
      incarnationField(w.incarnation, 'welcome.incarnation'),
      incarnationField(w.known, 'welcome.known'),
    );
  }

  /**
   * The listener's side: checks the connection's first frame (a hello of this cluster, under
   * the secret) and returns the welcome to send back and the connection's session. `known`
   * gives the incarnation this side knows for the dialer's id, told back in the welcome.
   */
  accept(frame: Uint8Array, self: NodeId = 0, known: (peer: NodeId) => string | undefined = () => undefined): { welcome: Uint8Array; session: RaftSession } {
    const payload = this.openHandshake(frame, KIND_HELLO, HELLO_TAG);
    let h: { nonce: Uint8Array; from: Uint64; incarnation?: string };
    try {
      h = HelloType.decode(payload) as unknown as typeof h;
    } catch (err) {
      throw bad('frame.payload', `undecodable hello: ${(err as Error).message}`);
    }
    if (h.nonce.length !== NONCE_BYTES) throw bad('hello.nonce', `must be ${NONCE_BYTES} bytes, got ${h.nonce.length}`);
    const peer = num(h.from, 'hello.from');
    const peerIncarnation = incarnationField(h.incarnation, 'hello.incarnation');
    // A hello sent again (captured, replayed) gets a fresh nonce here, so the keys differ from
    // the original connection's and none of its frames will pass.
    const nonce = randomBytes(NONCE_BYTES);
    const wp = WelcomeType.encode({ dialerNonce: h.nonce, nonce, from: self, incarnation: this.incarnation, known: peer !== 0 ? known(peer) ?? '' : '' }).finish();
    const welcome = FrameType.encode({ kind: KIND_WELCOME, clusterId: this.clusterId, payload: wp, hmac: this.handshakeMac(WELCOME_TAG, wp) }).finish();
    const session = new RaftSession(
      this.sessionKey(h.nonce, nonce, LISTENER_TO_DIALER),
      this.sessionKey(h.nonce, nonce, DIALER_TO_LISTENER),
      peer,
      peerIncarnation,
      '',
    );
    return { welcome, session };
  }
}

function incarnationField(v: string | undefined, field: string): string {
  const s = v ?? '';
  if (s.length > 64) throw bad(field, `must be at most 64 characters, got ${s.length}`);
  return s;
}

/** A dialer waiting for the welcome to its hello. */
export class Dialing {
  /** @internal */
  constructor(
    readonly nonce: Uint8Array,
    private readonly complete: (welcome: Uint8Array) => RaftSession,
  ) {}

  /** Checks the listener's answer (this cluster, under the secret, to this hello): the session. */
  welcome(frame: Uint8Array): RaftSession {
    return this.complete(frame);
  }
}

/**
 * One connection's frames, after the handshake: encode() numbers and authenticates outgoing
 * batches, decode() refuses a frame not made for this connection and direction or whose
 * counter is not above the last one accepted. One HMAC per frame either way.
 */
export class RaftSession {
  private sent = 0;
  private received = 0;

  /** @internal made by RaftWire's handshake */
  constructor(
    private readonly sendKey: KeyObject,
    private readonly receiveKey: KeyObject,
    /** The other side's Raft id as it said in the handshake (0: none given). */
    readonly peer: NodeId,
    /** The other side's storage incarnation as it said in the handshake ("": none given). */
    readonly peerIncarnation: string = '',
    /** On the dialer's side: the incarnation the listener knows for this side ("": none). */
    readonly known: string = '',
  ) {}

  /** The counter of the last frame accepted (0: none yet). */
  get lastReceived(): number {
    return this.received;
  }

  private mac(key: KeyObject, counter: number, payload: Uint8Array): Buffer {
    const c = Buffer.allocUnsafe(8);
    c.writeBigUInt64BE(BigInt(counter));
    return createHmac('sha256', key).update(c).update(payload).digest();
  }

  encode(messages: readonly Message[]): Uint8Array {
    return this.frame(BatchType.encode({ messages: messages.map(toProto) }).finish());
  }

  /**
   * The dialer's first frame after the welcome: no messages, only proof that the connection
   * is a member's (the listener holds a connection to few bytes until one of its frames passes).
   */
  opening(): Uint8Array {
    return this.frame(BatchType.encode({ messages: [], opening: true }).finish());
  }

  private frame(payload: Uint8Array): Uint8Array {
    const counter = ++this.sent;
    return FrameType.encode({ kind: KIND_DATA, counter, payload, hmac: this.mac(this.sendKey, counter, payload) }).finish();
  }

  decode(frame: Uint8Array): Message[] {
    const f = parseFrame(frame, KIND_DATA);
    const counter = num(f.counter, 'frame.counter', 1);
    if (!macMatches(f.hmac, this.mac(this.receiveKey, counter, f.payload))) {
      throw new CairnError('CAIRN_UNAUTHENTICATED', 'frame HMAC does not match this connection (made for another connection, or a wrong secret)', 'frame.hmac');
    }
    if (counter <= this.received) {
      throw new CairnError('CAIRN_REPLAYED', `frame counter ${counter} is not above the last accepted, ${this.received}: a replayed frame`, 'frame.counter');
    }
    let batch: { messages: ProtoMessage[] };
    try {
      batch = BatchType.decode(f.payload) as unknown as typeof batch;
    } catch (err) {
      throw new CairnError('CAIRN_BAD_FRAME', `undecodable raft payload: ${(err as Error).message}`, 'frame.payload');
    }
    const messages = batch.messages.map((m, i) => fromProto(m, `messages[${i}]`));
    // Counted only once the whole frame is accepted: a refused one closes the connection anyway.
    this.received = counter;
    return messages;
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
