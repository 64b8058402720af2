// Gossip frames on the wire: protobuf (proto/gossip.proto) behind an authenticated envelope,
// optionally encrypted.
//
// Datagram, authenticated:  "CG" | version 2 | mode 0 | HMAC-SHA256(mac key, "CG" 2 0 || body) (32 bytes) | body
// Datagram, encrypted:      "CG" | version 2 | mode 1 | nonce (12 bytes) | AES-256-GCM(cipher key, nonce, aad "CG" 2 1)(body) | tag (16 bytes)
// body = stamp (21 bytes) | Packet (protobuf)
// stamp = sender run (8 random bytes, drawn when the member starts) | channel (0 datagram,
//         1 stream) | sequence (uint48be, per run and channel) | sent at (uint48be, ms since
//         the epoch, the sender's wall clock)
//
// The keys are derived from the cluster secret and the cluster name, so two clusters sharing a
// secret by accident still cannot talk: the MAC key as HMAC-SHA256(secret, "cairn-gossip-v1" NUL
// cluster), the cipher key by HKDF-SHA256 with its own label. Each encrypted datagram has a fresh
// random 96-bit nonce: at some tens of datagrams a second per member, the 2^32 messages under
// one key that random nonces allow are centuries away. The MAC or the tag is checked before the
// protobuf parser sees a byte; then every field is validated. The stamp is what the shell's
// ReplayGuard (replay-guard.ts) judges freshness by; this file reads no clock. Anything wrong is
// a CairnError: CAIRN_UNAUTHENTICATED (no envelope, the MAC or tag does not match, or the sender
// and this member disagree on encryption: field `packet.mode`) or CAIRN_BAD_FRAME (authentic but
// malformed), which the shell counts and drops.

import protobuf from 'protobufjs';
import { createCipheriv, createDecipheriv, createHmac, hkdfSync, randomBytes, timingSafeEqual } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { CairnError } from '../errors.ts';
import { tryParseAddress } from './address.ts';
import {
  MEMBER_ROLES,
  MEMBER_STATES,
  metaSize,
  type GossipMessage,
  type MemberMeta,
  type MemberRecord,
  type MemberRole,
  type MemberSnapshot,
  type MemberState,
} from './messages.ts';
import type { PacketStamp } from './replay-guard.ts';

const root = protobuf.loadSync(fileURLToPath(new URL('../../proto/gossip.proto', import.meta.url)));
const PacketType = root.lookupType('cairn.gossip.Packet');

const MAGIC_0 = 0x43; // 'C'
const MAGIC_1 = 0x47; // 'G'
const VERSION = 2;
const MODE_MAC = 0;
const MODE_GCM = 1;
const HEADER_BYTES = 4;
const MAC_BYTES = 32;
const NONCE_BYTES = 12;
const TAG_BYTES = 16;
/** Bytes of the sender's run id. */
export const RUN_BYTES = 8;
const STAMP_BYTES = RUN_BYTES + 1 + 6 + 6;
/** What an authenticated envelope adds to a Packet. */
export const ENVELOPE_BYTES = HEADER_BYTES + MAC_BYTES + STAMP_BYTES;
/** What an encrypted envelope adds to a Packet. */
export const SEALED_ENVELOPE_BYTES = HEADER_BYTES + NONCE_BYTES + TAG_BYTES + STAMP_BYTES;
/** Magic, version and mode, covered by the MAC (or the tag) too, so that no one can relabel a packet. */
const HEADER_MAC = Buffer.from([MAGIC_0, MAGIC_1, VERSION, MODE_MAC]);
const HEADER_GCM = Buffer.from([MAGIC_0, MAGIC_1, VERSION, MODE_GCM]);
const UINT48_MAX = 2 ** 48 - 1;

/** Names are short labels; anything longer is garbage or an attack. */
const MAX_NAME_BYTES = 255;
/** Metadata accepted from others, whatever our own limit: a peer may be configured differently. */
const MAX_REMOTE_META_BYTES = 4_096;
/** A datagram carries at most this many messages (a 1,400-byte packet holds far fewer). */
const MAX_MESSAGES = 1_024;

const ROLE_TO_WIRE: Record<MemberRole, number> = { master: 1, agent: 2 };
const ROLE_FROM_WIRE: Record<string, MemberRole> = { ROLE_MASTER: 'master', ROLE_AGENT: 'agent' };
const STATE_TO_WIRE: Record<MemberState, number> = { alive: 1, suspect: 2, dead: 3, left: 4 };
const STATE_FROM_WIRE: Record<string, MemberState> = {
  STATE_ALIVE: 'alive', STATE_SUSPECT: 'suspect', STATE_DEAD: 'dead', STATE_LEFT: 'left',
};

const TO_OBJECT: protobuf.IConversionOptions = { longs: Number, enums: String, defaults: true, arrays: true, objects: true, oneofs: true };

/** The keys of a cluster's gossip: a MAC key, and with encryption on an AES-256 key. */
export interface GossipKeys {
  readonly mac: Buffer;
  /** Set when packets are encrypted; then unencrypted ones are refused, and the other way round. */
  readonly cipher: Buffer | undefined;
}

function secretBytes(secret: string | Uint8Array, cluster: string): Buffer {
  const s = typeof secret === 'string' ? Buffer.from(secret, 'utf8') : Buffer.from(secret);
  if (s.length < 16) {
    throw new CairnError('CAIRN_BAD_REQUEST', `must be at least 16 bytes, got ${s.length}`, 'secret');
  }
  if (typeof cluster !== 'string' || cluster.length === 0) {
    throw new CairnError('CAIRN_BAD_REQUEST', 'must be a non-empty string', 'cluster');
  }
  return s;
}

/** A cluster's gossip keys; `encrypt` adds the cipher key (HKDF-SHA256, a label of its own). */
export function deriveGossipKeys(secret: string | Uint8Array, cluster: string, encrypt = false): GossipKeys {
  const s = secretBytes(secret, cluster);
  const mac = createHmac('sha256', s).update(`cairn-gossip-v1\0${cluster}`).digest();
  const cipher = encrypt ? Buffer.from(hkdfSync('sha256', s, Buffer.alloc(0), `cairn-gossip-aes-256-gcm-v1\0${cluster}`, 32)) : undefined;
  return { mac, cipher };
}

export interface OpenedPacket {
  readonly from: string;
  readonly messages: GossipMessage[];
  /** The replay fields, for the shell's ReplayGuard. */
  readonly stamp: PacketStamp;
}

/** The stamp a sealed packet carries: `run` as RUN_BYTES bytes. */
export interface SealStamp {
  readonly run: Uint8Array;
  readonly stream: boolean;
  readonly seq: number;
  readonly sentAtMs: number;
}

function writeStamp(out: Buffer, at: number, stamp: SealStamp): void {
  if (stamp.run.length !== RUN_BYTES) throw new CairnError('CAIRN_BAD_REQUEST', `must be ${RUN_BYTES} bytes`, 'stamp.run');
  for (const [v, f] of [[stamp.seq, 'seq'], [stamp.sentAtMs, 'sentAtMs']] as const) {
    if (!Number.isInteger(v) || v < 0 || v > UINT48_MAX) throw new CairnError('CAIRN_BAD_REQUEST', 'must be an integer within 48 bits', `stamp.${f}`);
  }
  out.set(stamp.run, at);
  out[at + RUN_BYTES] = stamp.stream ? 1 : 0;
  out.writeUIntBE(stamp.seq, at + RUN_BYTES + 1, 6);
  out.writeUIntBE(stamp.sentAtMs, at + RUN_BYTES + 7, 6);
}

/** Encodes, stamps and authenticates (or encrypts, with a cipher key) one packet. */
export function sealPacket(keys: GossipKeys, from: string, messages: readonly GossipMessage[], stamp: SealStamp): Buffer {
  const packet = PacketType.encode({ from, messages: messages.map(toWire) }).finish();
  if (keys.cipher === undefined) {
    const out = Buffer.allocUnsafe(ENVELOPE_BYTES + packet.length);
    HEADER_MAC.copy(out, 0);
    const bodyAt = HEADER_BYTES + MAC_BYTES;
    writeStamp(out, bodyAt, stamp);
    out.set(packet, bodyAt + STAMP_BYTES);
    createHmac('sha256', keys.mac).update(HEADER_MAC).update(out.subarray(bodyAt)).digest().copy(out, HEADER_BYTES);
    return out;
  }
  const body = Buffer.allocUnsafe(STAMP_BYTES + packet.length);
  writeStamp(body, 0, stamp);
  body.set(packet, STAMP_BYTES);
  const nonce = randomBytes(NONCE_BYTES);
  const cipher = createCipheriv('aes-256-gcm', keys.cipher, nonce);
  cipher.setAAD(HEADER_GCM);
  const encrypted = cipher.update(body);
  cipher.final();
  return Buffer.concat([HEADER_GCM, nonce, encrypted, cipher.getAuthTag()]);
}

/** Authenticates (or decrypts), decodes and validates one packet; throws a CairnError on anything wrong. */
export function openPacket(keys: GossipKeys, bytes: Uint8Array): OpenedPacket {
  if (bytes.length < HEADER_BYTES || bytes[0] !== MAGIC_0 || bytes[1] !== MAGIC_1) {
    throw new CairnError('CAIRN_UNAUTHENTICATED', 'not a gossip packet (no envelope)', 'packet');
  }
  if (bytes[2] !== VERSION) {
    throw new CairnError('CAIRN_BAD_FRAME', `unknown gossip envelope version ${bytes[2]} (this member speaks ${VERSION})`, 'packet.version');
  }
  const mode = bytes[3];
  if (mode !== MODE_MAC && mode !== MODE_GCM) {
    throw new CairnError('CAIRN_BAD_FRAME', `unknown gossip envelope mode ${mode}`, 'packet.mode');
  }
  if (mode === MODE_GCM && keys.cipher === undefined) {
    throw new CairnError('CAIRN_UNAUTHENTICATED', 'gossip packet is encrypted, but this member runs without gossip encryption (--gossip-encrypt): every member of a cluster must have it on, or all off', 'packet.mode');
  }
  if (mode === MODE_MAC && keys.cipher !== undefined) {
    throw new CairnError('CAIRN_UNAUTHENTICATED', 'gossip packet is not encrypted, but this member runs with gossip encryption (--gossip-encrypt): every member of a cluster must have it on, or all off', 'packet.mode');
  }
  let body: Buffer;
  if (mode === MODE_MAC) {
    if (bytes.length < ENVELOPE_BYTES) throw new CairnError('CAIRN_UNAUTHENTICATED', 'gossip packet too short for its envelope', 'packet');
    body = Buffer.from(bytes.buffer, bytes.byteOffset + HEADER_BYTES + MAC_BYTES, bytes.length - HEADER_BYTES - MAC_BYTES);
    const expected = createHmac('sha256', keys.mac).update(HEADER_MAC).update(body).digest();
    if (!timingSafeEqual(expected, bytes.subarray(HEADER_BYTES, HEADER_BYTES + MAC_BYTES))) {
      throw new CairnError('CAIRN_UNAUTHENTICATED', 'gossip packet MAC does not match (wrong secret or cluster, or altered)', 'packet');
    }
  } else {
    if (bytes.length < SEALED_ENVELOPE_BYTES) throw new CairnError('CAIRN_UNAUTHENTICATED', 'gossip packet too short for its envelope', 'packet');
    const nonce = bytes.subarray(HEADER_BYTES, HEADER_BYTES + NONCE_BYTES);
    const tag = bytes.subarray(bytes.length - TAG_BYTES);
    try {
      const decipher = createDecipheriv('aes-256-gcm', keys.cipher!, nonce);
      decipher.setAAD(HEADER_GCM);
      decipher.setAuthTag(tag);
      body = Buffer.concat([decipher.update(bytes.subarray(HEADER_BYTES + NONCE_BYTES, bytes.length - TAG_BYTES)), decipher.final()]);
    } catch {
      throw new CairnError('CAIRN_UNAUTHENTICATED', 'gossip packet does not decrypt (wrong secret or cluster, or altered)', 'packet');
    }
  }
  const stamp: PacketStamp = {
    run: body.toString('hex', 0, RUN_BYTES),
    stream: body[RUN_BYTES] === 1,
    seq: body.readUIntBE(RUN_BYTES + 1, 6),
    sentAtMs: body.readUIntBE(RUN_BYTES + 7, 6),
  };
  if (body[RUN_BYTES] > 1) throw bad('packet.stamp', `unknown channel ${body[RUN_BYTES]}`);
  let obj: Record<string, unknown>;
  try {
    obj = PacketType.toObject(PacketType.decode(body.subarray(STAMP_BYTES)), TO_OBJECT) as Record<string, unknown>;
  } catch (err) {
    throw bad('packet', `undecodable: ${(err as Error).message}`);
  }
  const from = address(obj.from, 'packet.from');
  const list = obj.messages as Record<string, unknown>[];
  if (list.length === 0) throw bad('packet.messages', 'empty');
  if (list.length > MAX_MESSAGES) throw bad('packet.messages', `${list.length} messages, at most ${MAX_MESSAGES}`);
  return { from, messages: list.map((m, i) => fromWire(m, `packet.messages[${i}]`)), stamp };
}

// ---- to the wire -------------------------------------------------------------------------

function memberToWire(r: MemberRecord, state?: MemberState): Record<string, unknown> {
  return {
    name: r.name,
    address: r.address,
    role: ROLE_TO_WIRE[r.role],
    incarnation: r.incarnation,
    meta: r.meta,
    state: state === undefined ? 0 : STATE_TO_WIRE[state],
  };
}

function toWire(m: GossipMessage): Record<string, unknown> {
  switch (m.type) {
    case 'ping':
      return { ping: { seq: m.seq, target: m.target, from: m.from } };
    case 'indirect-ping':
      return { indirectPing: { seq: m.seq, target: m.target, targetAddress: m.targetAddress, from: m.from, nack: m.nack } };
    case 'ack':
      return { ack: { seq: m.seq } };
    case 'nack':
      return { nack: { seq: m.seq } };
    case 'alive':
      return { alive: { member: memberToWire(m.member) } };
    case 'suspect':
      return { suspect: { name: m.name, incarnation: m.incarnation, from: m.from } };
    case 'dead':
      return { dead: { name: m.name, incarnation: m.incarnation, from: m.from } };
    case 'push-pull':
      return { pushPull: { join: m.join, reply: m.reply, members: m.members.map((s) => memberToWire(s, s.state)) } };
  }
}

// ---- from the wire -----------------------------------------------------------------------

function bad(field: string, message: string): CairnError {
  return new CairnError('CAIRN_BAD_FRAME', message, field);
}

function name(v: unknown, field: string): string {
  if (typeof v !== 'string' || v.length === 0) throw bad(field, 'must be a non-empty name');
  if (Buffer.byteLength(v, 'utf8') > MAX_NAME_BYTES) throw bad(field, `longer than ${MAX_NAME_BYTES} bytes`);
  return v;
}

function address(v: unknown, field: string): string {
  if (typeof v !== 'string' || tryParseAddress(v) === undefined) throw bad(field, `'${String(v).slice(0, 64)}' is not host:port`);
  return v;
}

function uint(v: unknown, field: string): number {
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 0 || v > 0xffffffff) throw bad(field, 'must be a 32-bit unsigned integer');
  return v;
}

function sub(obj: Record<string, unknown>, key: string, field: string): Record<string, unknown> {
  const v = obj[key];
  if (v === null || typeof v !== 'object') throw bad(field, `missing ${key}`);
  return v as Record<string, unknown>;
}

function memberFromWire(w: Record<string, unknown>, field: string): MemberRecord & { state: string } {
  const role = ROLE_FROM_WIRE[String(w.role)];
  if (role === undefined || !MEMBER_ROLES.includes(role)) throw bad(`${field}.role`, `unknown role ${String(w.role)}`);
  const meta = (w.meta ?? {}) as Record<string, unknown>;
  for (const k in meta) if (typeof meta[k] !== 'string') throw bad(`${field}.meta`, `value of '${k}' is not a string`);
  if (metaSize(meta as MemberMeta) > MAX_REMOTE_META_BYTES) throw bad(`${field}.meta`, `larger than ${MAX_REMOTE_META_BYTES} bytes`);
  return {
    name: name(w.name, `${field}.name`),
    address: address(w.address, `${field}.address`),
    role,
    incarnation: uint(w.incarnation, `${field}.incarnation`),
    meta: meta as MemberMeta,
    state: String(w.state),
  };
}

function fromWire(w: Record<string, unknown>, field: string): GossipMessage {
  switch (w.msg) {
    case 'ping': {
      const p = sub(w, 'ping', field);
      return { type: 'ping', seq: uint(p.seq, `${field}.seq`), target: name(p.target, `${field}.target`), from: name(p.from, `${field}.from`) };
    }
    case 'indirectPing': {
      const p = sub(w, 'indirectPing', field);
      return {
        type: 'indirect-ping',
        seq: uint(p.seq, `${field}.seq`),
        target: name(p.target, `${field}.target`),
        targetAddress: address(p.targetAddress, `${field}.targetAddress`),
        from: name(p.from, `${field}.from`),
        nack: p.nack === true,
      };
    }
    case 'ack':
      return { type: 'ack', seq: uint(sub(w, 'ack', field).seq, `${field}.seq`) };
    case 'nack':
      return { type: 'nack', seq: uint(sub(w, 'nack', field).seq, `${field}.seq`) };
    case 'alive': {
      const { state: _state, ...member } = memberFromWire(sub(sub(w, 'alive', field), 'member', `${field}.member`), `${field}.member`);
      return { type: 'alive', member };
    }
    case 'suspect':
    case 'dead': {
      const s = sub(w, w.msg, field);
      return { type: w.msg, name: name(s.name, `${field}.name`), incarnation: uint(s.incarnation, `${field}.incarnation`), from: name(s.from, `${field}.from`) };
    }
    case 'pushPull': {
      const p = sub(w, 'pushPull', field);
      const members: MemberSnapshot[] = (p.members as Record<string, unknown>[]).map((m, i) => {
        const f = `${field}.members[${i}]`;
        const { state: wireState, ...r } = memberFromWire(m, f);
        const state = STATE_FROM_WIRE[wireState];
        if (state === undefined || !MEMBER_STATES.includes(state)) throw bad(`${f}.state`, `unknown state ${wireState}`);
        return { ...r, state };
      });
      return { type: 'push-pull', join: p.join === true, reply: p.reply === true, members };
    }
    default:
      throw bad(field, 'carries no known message');
  }
}
