// What gossip members say to each other, as plain values. The core speaks these; wire.ts turns
// them into protobuf frames (proto/gossip.proto) and back.

import { utf8Length } from './math.ts';

export type MemberRole = 'master' | 'agent';
export const MEMBER_ROLES: readonly MemberRole[] = ['master', 'agent'];

/** alive and suspect members take part; dead (failed) and left (said goodbye) do not. */
export type MemberState = 'alive' | 'suspect' | 'dead' | 'left';
export const MEMBER_STATES: readonly MemberState[] = ['alive', 'suspect', 'dead', 'left'];

export type MemberMeta = Readonly<Record<string, string>>;

/** A member as it announces itself. `address` is its advertised `host:port`. */
export interface MemberRecord {
  readonly name: string;
  readonly address: string;
  readonly role: MemberRole;
  readonly incarnation: number;
  readonly meta: MemberMeta;
}

/** One entry of a full-state exchange. */
export interface MemberSnapshot extends MemberRecord {
  readonly state: MemberState;
}

/** Probe `target` (the name the sender expects at this address); answer with an ack. */
export interface PingMessage { readonly type: 'ping'; readonly seq: number; readonly target: string; readonly from: string }
/** Probe `target` at `targetAddress` for the sender; nack if asked and no ack comes in time. */
export interface IndirectPingMessage {
  readonly type: 'indirect-ping';
  readonly seq: number;
  readonly target: string;
  readonly targetAddress: string;
  readonly from: string;
  readonly nack: boolean;
}
export interface AckMessage { readonly type: 'ack'; readonly seq: number }
/** From an indirect prober: I am alive and asked, but the target did not answer me in time. */
export interface NackMessage { readonly type: 'nack'; readonly seq: number }
export interface AliveMessage { readonly type: 'alive'; readonly member: MemberRecord }
export interface SuspectMessage { readonly type: 'suspect'; readonly name: string; readonly incarnation: number; readonly from: string }
/** `from === name` means the member left on purpose. */
export interface DeadMessage { readonly type: 'dead'; readonly name: string; readonly incarnation: number; readonly from: string }
/** A full-state exchange: `join` on first contact; `reply` is the answer (never answered again). */
export interface PushPullMessage {
  readonly type: 'push-pull';
  readonly join: boolean;
  readonly reply: boolean;
  readonly members: readonly MemberSnapshot[];
}

export type GossipMessage =
  | PingMessage
  | IndirectPingMessage
  | AckMessage
  | NackMessage
  | AliveMessage
  | SuspectMessage
  | DeadMessage
  | PushPullMessage;

/** News about one member, spread by piggybacking. */
export type Broadcast = AliveMessage | SuspectMessage | DeadMessage;

/**
 * What the core asks its shell to send. `stream` messages (full-state exchanges) may be larger
 * than a datagram and need a reliable transport; the others fit one datagram of
 * `maxPacketBytes` with the envelope.
 */
export interface OutgoingPacket {
  readonly to: string;
  readonly messages: readonly GossipMessage[];
  readonly stream: boolean;
}

/** Room kept in every datagram for the envelope (magic, version, HMAC) and the sender address. */
export const PACKET_OVERHEAD_BYTES = 128;

/**
 * An upper bound of a message's protobuf size, without encoding it: every field counted with
 * its tag and a generous length prefix. wire tests check the bound holds.
 */
export function estimateSize(m: GossipMessage): number {
  switch (m.type) {
    case 'ping':
      return 24 + utf8Length(m.target) + utf8Length(m.from);
    case 'indirect-ping':
      return 30 + utf8Length(m.target) + utf8Length(m.targetAddress) + utf8Length(m.from);
    case 'ack':
    case 'nack':
      return 12;
    case 'alive':
      return 8 + recordSize(m.member);
    case 'suspect':
    case 'dead':
      return 24 + utf8Length(m.name) + utf8Length(m.from);
    case 'push-pull': {
      let n = 16;
      for (const s of m.members) n += 4 + recordSize(s);
      return n;
    }
  }
}

export function recordSize(r: MemberRecord): number {
  return 32 + utf8Length(r.name) + utf8Length(r.address) + metaSize(r.meta);
}

/** Bytes the metadata takes in a frame (keys, values and per-entry framing). */
export function metaSize(meta: MemberMeta): number {
  let n = 0;
  for (const k in meta) n += 8 + utf8Length(k) + utf8Length(meta[k]);
  return n;
}
