// Gossip frames on the wire: protobuf (proto/gossip.proto) behind an HMAC-SHA256 envelope.
//
// Datagram: "CG" | version 1 | HMAC-SHA256(key, "CG" 1 packet) (32 bytes) | Packet (protobuf).
// The key is derived from the cluster secret and the cluster name, so two clusters sharing a
// secret by accident still cannot talk. The MAC is checked before the protobuf parser sees a
// byte; then every field is validated. Anything wrong is a CairnError: CAIRN_UNAUTHENTICATED
// (no envelope, or the MAC does not match) or CAIRN_BAD_FRAME (authentic but malformed), which
// the shell counts and drops.

import protobuf from 'protobufjs';
import { createHmac, timingSafeEqual } from 'node:crypto';
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

const root = protobuf.loadSync(fileURLToPath(new URL('../../proto/gossip.proto', import.meta.url)));
const PacketType = root.lookupType('cairn.gossip.Packet');

const MAGIC_0 = 0x43; // 'C'
const MAGIC_1 = 0x47; // 'G'
const VERSION = 1;
const MAC_BYTES = 32;
export const ENVELOPE_BYTES = 3 + MAC_BYTES;
/** Magic and version, covered by the MAC too, so that no one can relabel a packet's version. */
const HEADER = Buffer.from([MAGIC_0, MAGIC_1, VERSION]);

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

/** The MAC key of a cluster: HMAC-SHA256(secret, "cairn-gossip-v1" NUL cluster). */
export function deriveGossipKey(secret: string | Uint8Array, cluster: string): Buffer {
  const s = typeof secret === 'string' ? Buffer.from(secret, 'utf8') : Buffer.from(secret);
  if (s.length < 16) {
    throw new CairnError('CAIRN_BAD_REQUEST', `must be at least 16 bytes, got ${s.length}`, 'secret');
  }
  if (typeof cluster !== 'string' || cluster.length === 0) {
    throw new CairnError('CAIRN_BAD_REQUEST', 'must be a non-empty string', 'cluster');
  }
  return createHmac('sha256', s).update(`cairn-gossip-v1\0${cluster}`).digest();
}

export interface OpenedPacket {
  readonly from: string;
  readonly messages: GossipMessage[];
}

/** Encodes and authenticates one packet. */
export function sealPacket(key: Uint8Array, from: string, messages: readonly GossipMessage[]): Buffer {
  const body = PacketType.encode({ from, messages: messages.map(toWire) }).finish();
  const mac = createHmac('sha256', key).update(HEADER).update(body).digest();
  const out = Buffer.allocUnsafe(ENVELOPE_BYTES + body.length);
  out[0] = MAGIC_0;
  out[1] = MAGIC_1;
  out[2] = VERSION;
  mac.copy(out, 3);
  out.set(body, ENVELOPE_BYTES);
  return out;
}

/** Authenticates, decodes and validates one packet; throws a CairnError on anything wrong. */
export function openPacket(key: Uint8Array, bytes: Uint8Array): OpenedPacket {
  if (bytes.length < ENVELOPE_BYTES || bytes[0] !== MAGIC_0 || bytes[1] !== MAGIC_1) {
    throw new CairnError('CAIRN_UNAUTHENTICATED', 'not a gossip packet (no envelope)', 'packet');
  }
  if (bytes[2] !== VERSION) {
    throw new CairnError('CAIRN_BAD_FRAME', `unknown gossip envelope version ${bytes[2]}`, 'packet.version');
  }
  const body = bytes.subarray(ENVELOPE_BYTES);
  const expected = createHmac('sha256', key).update(HEADER).update(body).digest();
  if (!timingSafeEqual(expected, bytes.subarray(3, ENVELOPE_BYTES))) {
    throw new CairnError('CAIRN_UNAUTHENTICATED', 'gossip packet MAC does not match (wrong secret or cluster, or altered)', 'packet');
  }
  let obj: Record<string, unknown>;
  try {
    obj = PacketType.toObject(PacketType.decode(body), TO_OBJECT) as Record<string, unknown>;
  } catch (err) {
    throw bad('packet', `undecodable: ${(err as Error).message}`);
  }
  const from = address(obj.from, 'packet.from');
  const list = obj.messages as Record<string, unknown>[];
  if (list.length === 0) throw bad('packet.messages', 'empty');
  if (list.length > MAX_MESSAGES) throw bad('packet.messages', `${list.length} messages, at most ${MAX_MESSAGES}`);
  return { from, messages: list.map((m, i) => fromWire(m, `packet.messages[${i}]`)) };
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
