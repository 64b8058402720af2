// The Raft wire codec: every message survives a round trip; frames from another cluster,
// with a wrong secret or tampered bytes are refused as unauthenticated; authenticated but
// malformed payloads are refused as bad frames.

import { describe, expect, it } from 'vitest';
import { createHmac } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import protobuf from 'protobufjs';
import { RaftWire } from '../../shared/raft/wire.ts';
import { encodeConfChange } from '../../shared/raft/confchange.ts';
import type { Message } from '../../shared/raft/types.ts';

const SECRET = 'correct horse battery staple';
const wire = new RaftWire({ clusterId: 'prod', secret: SECRET });
const b = (s: string) => new TextEncoder().encode(s);

const root = protobuf.loadSync(fileURLToPath(new URL('../../proto/raft.proto', import.meta.url)));
const Batch = root.lookupType('cairn.raft.Batch');
const Frame = root.lookupType('cairn.raft.Frame');

/** A frame around an arbitrary payload, authenticated the documented way. */
function signedFrame(payload: Uint8Array, clusterId = 'prod', secret = SECRET): Uint8Array {
  const len = Buffer.alloc(4);
  len.writeUInt32BE(Buffer.byteLength(clusterId));
  const hmac = createHmac('sha256', secret).update('cairn-raft-frame-v1').update(len).update(clusterId).update(payload).digest();
  return Frame.encode({ clusterId, payload, hmac }).finish();
}

const code = (fn: () => unknown) => {
  try {
    fn();
  } catch (err) {
    return (err as { code?: string }).code;
  }
  return 'no error';
};

const ALL: Message[] = [
  {
    type: 'append', from: 1, to: 2, term: 7, prevIndex: 10, prevTerm: 6, commit: 9,
    entries: [
      { index: 11, term: 7, type: 'normal', data: b('put x') },
      { index: 12, term: 7, type: 'confChange', data: encodeConfChange({ type: 'addLearner', nodeId: 4 }) },
      { index: 13, term: 7, type: 'normal', data: new Uint8Array() },
    ],
  },
  { type: 'append', from: 1, to: 2, term: 7, prevIndex: 13, prevTerm: 7, commit: 13, entries: [] },
  { type: 'appendResponse', from: 2, to: 1, term: 7, index: 10, reject: true, hintIndex: 8, hintTerm: 5 },
  { type: 'vote', from: 3, to: 1, term: 8, lastIndex: 13, lastTerm: 7, transfer: false },
  { type: 'preVote', from: 3, to: 1, term: 8, lastIndex: 13, lastTerm: 7, transfer: true },
  { type: 'voteResponse', from: 1, to: 3, term: 8, reject: false },
  { type: 'preVoteResponse', from: 1, to: 3, term: 8, reject: true },
  { type: 'heartbeat', from: 1, to: 2, term: 7, commit: 12, context: b('round-1') },
  { type: 'heartbeatResponse', from: 2, to: 1, term: 7, context: new Uint8Array() },
  {
    type: 'snapshot', from: 1, to: 4, term: 7,
    snapshot: { metadata: { index: 100, term: 6, confState: { voters: [1, 2, 3], learners: [4] } }, data: b('state') },
  },
  { type: 'timeoutNow', from: 1, to: 2, term: 7 },
  { type: 'readIndex', from: 2, to: 1, term: 7, context: b('read-9') },
  { type: 'readIndexResponse', from: 1, to: 2, term: 7, index: 12, context: b('read-9'), reject: false },
];

describe('raft wire', () => {
  it('round-trips every message type, several to a frame', () => {
    expect(wire.decode(wire.encode(ALL))).toEqual(ALL);
    for (const m of ALL) expect(wire.decode(wire.encode([m]))).toEqual([m]);
  });

  it('carries the largest safe ids, terms and indexes', () => {
    const big = Number.MAX_SAFE_INTEGER;
    const m: Message = { type: 'appendResponse', from: big, to: 1, term: big, index: big, reject: false, hintIndex: 0, hintTerm: 0 };
    expect(wire.decode(wire.encode([m]))).toEqual([m]);
  });

  it('refuses frames that are not from this cluster or not signed with its secret (CAIRN_UNAUTHENTICATED)', () => {
    const frame = wire.encode(ALL);
    expect(code(() => new RaftWire({ clusterId: 'prod', secret: 'another secret, 16+ bytes' }).decode(frame))).toBe('CAIRN_UNAUTHENTICATED');
    expect(code(() => new RaftWire({ clusterId: 'staging', secret: SECRET }).decode(frame))).toBe('CAIRN_UNAUTHENTICATED');
    // Same payload, frame re-labelled for another cluster with the original MAC.
    const f = Frame.decode(frame) as unknown as { payload: Uint8Array; hmac: Uint8Array };
    expect(code(() => wire.decode(Frame.encode({ clusterId: 'prod', payload: f.payload, hmac: new Uint8Array(32) }).finish()))).toBe('CAIRN_UNAUTHENTICATED');
    expect(code(() => wire.decode(Frame.encode({ clusterId: 'prod', payload: f.payload }).finish()))).toBe('CAIRN_UNAUTHENTICATED');
    // One payload byte flipped.
    const tampered = new Uint8Array(f.payload);
    tampered[tampered.length - 1] ^= 1;
    expect(code(() => wire.decode(Frame.encode({ clusterId: 'prod', payload: tampered, hmac: f.hmac }).finish()))).toBe('CAIRN_UNAUTHENTICATED');
  });

  it('refuses garbage (CAIRN_BAD_FRAME)', () => {
    expect(code(() => wire.decode(new Uint8Array([0xff, 0xff, 0xff, 0xff, 0x0f])))).toBe('CAIRN_BAD_FRAME');
    expect(code(() => wire.decode(wire.encode(ALL).subarray(0, 20)))).toMatch(/CAIRN_BAD_FRAME|CAIRN_UNAUTHENTICATED/);
  });

  it('refuses authenticated payloads that are malformed (CAIRN_BAD_FRAME, naming the field)', () => {
    const batch = (messages: object[]) => signedFrame(Batch.encode(Batch.fromObject({ messages })).finish());
    const bad = (messages: object[]) => {
      try {
        wire.decode(batch(messages));
      } catch (err) {
        const e = err as { code: string; field: string };
        return `${e.code} ${e.field}`;
      }
      return 'accepted';
    };
    expect(bad([{ from: 1, to: 2, term: 3, timeoutNow: {} }])).toBe('accepted'); // the control
    expect(bad([{ from: 1, to: 2, term: 3 }])).toBe('CAIRN_BAD_FRAME messages[0].body');
    expect(bad([{ from: 0, to: 2, term: 3, timeoutNow: {} }])).toBe('CAIRN_BAD_FRAME messages[0].from');
    expect(bad([{ from: 1, to: 2, term: 0, timeoutNow: {} }])).toBe('CAIRN_BAD_FRAME messages[0].term');
    expect(bad([{ from: 1, to: 2, term: '18446744073709551615', timeoutNow: {} }])).toBe('CAIRN_BAD_FRAME messages[0].term');
    expect(bad([{ from: 1, to: 2, term: 3, append: { prevIndex: 5, prevTerm: 3, entries: [{ index: 7, term: 3 }] } }])).toBe(
      'CAIRN_BAD_FRAME messages[0].append.entries[0].index',
    );
    expect(bad([{ from: 1, to: 2, term: 3, append: { prevIndex: 5, prevTerm: 3, entries: [{ index: 6, term: 3, type: 9 }] } }])).toBe(
      'CAIRN_BAD_FRAME messages[0].append.entries[0].type',
    );
    expect(bad([{ from: 1, to: 2, term: 3, snapshot: {} }])).toBe('CAIRN_BAD_FRAME messages[0].snapshot.snapshot');
    expect(bad([{ from: 1, to: 2, term: 3, snapshot: { snapshot: { index: 5, term: 2, confState: { voters: [1, 1] } } } }])).toBe(
      'CAIRN_BAD_FRAME messages[0].snapshot.snapshot.confState.voters',
    );
    // An unauthenticated payload is never even decoded: garbage with a wrong MAC is unauthenticated.
    expect(code(() => wire.decode(signedFrame(new Uint8Array([0xff, 0xff]), 'prod', 'wrong secret, long enough')))).toBe('CAIRN_UNAUTHENTICATED');
    expect(code(() => wire.decode(signedFrame(new Uint8Array([0xff, 0xff]))))).toBe('CAIRN_BAD_FRAME');
  });

  it('refuses a weak or missing secret and an empty cluster id', () => {
    expect(code(() => new RaftWire({ clusterId: 'prod', secret: 'short' }))).toBe('CAIRN_BAD_REQUEST');
    expect(code(() => new RaftWire({ clusterId: '', secret: SECRET }))).toBe('CAIRN_BAD_REQUEST');
  });
});
