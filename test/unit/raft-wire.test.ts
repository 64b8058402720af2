// The Raft wire codec: every message survives a round trip; a handshake from another
// cluster or under a wrong secret, and frames with tampered bytes or made for another
// connection, are refused as unauthenticated; a frame sent again is refused as replayed;
// authenticated but malformed payloads are refused as bad frames.

import { describe, expect, it } from 'vitest';
import { createHmac } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import protobuf from 'protobufjs';
import { NONCE_BYTES, RaftWire, type RaftSession } from '../../shared/raft/wire.ts';
import { encodeConfChange } from '../../shared/raft/confchange.ts';
import type { Message } from '../../shared/raft/types.ts';

const SECRET = 'correct horse battery staple';
const wire = new RaftWire({ clusterId: 'prod', secret: SECRET });
const b = (s: string) => new TextEncoder().encode(s);

const root = protobuf.loadSync(fileURLToPath(new URL('../../proto/raft.proto', import.meta.url)));
const Batch = root.lookupType('cairn.raft.Batch');
const Frame = root.lookupType('cairn.raft.Frame');
const Hello = root.lookupType('cairn.raft.Hello');
const Welcome = root.lookupType('cairn.raft.Welcome');

/** A connection's two ends, after the handshake: the dialer's session and the listener's. */
function connect(dialerWire = wire, listenerWire = wire): { dialer: RaftSession; listener: RaftSession } {
  const { frame, dialing } = dialerWire.hello(1);
  const { welcome, session: listener } = listenerWire.accept(frame, 2);
  return { dialer: dialing.welcome(welcome), listener };
}

const { dialer, listener } = connect();

/** The key of one direction of a connection, derived the documented way. */
function sessionKey(dialerNonce: Uint8Array, listenerNonce: Uint8Array, direction: number, clusterId = 'prod', secret = SECRET): Buffer {
  const len = Buffer.alloc(4);
  len.writeUInt32BE(Buffer.byteLength(clusterId));
  return createHmac('sha256', secret).update('cairn-raft-session-v2').update(len).update(clusterId).update(dialerNonce).update(listenerNonce).update(Buffer.from([direction])).digest();
}

/** A hello or welcome frame around an arbitrary payload, authenticated the documented way. */
function signedHandshake(kind: 1 | 2, payload: Uint8Array, clusterId = 'prod', secret = SECRET): Uint8Array {
  const len = Buffer.alloc(4);
  len.writeUInt32BE(Buffer.byteLength(clusterId));
  const tag = kind === 1 ? 'cairn-raft-hello-v2' : 'cairn-raft-welcome-v2';
  const hmac = createHmac('sha256', secret).update(tag).update(len).update(clusterId).update(payload).digest();
  return Frame.encode({ kind, clusterId, payload, hmac }).finish();
}

/**
 * A connection made by hand the documented way (a hello, the listener's welcome read, the key
 * derived), and a data frame maker for it: for payloads the encoder would never make.
 */
function handMadeConnection(): { listener: RaftSession; signedFrame: (payload: Uint8Array, counter: number) => Uint8Array } {
  const nonce = Buffer.alloc(NONCE_BYTES, 7);
  const { welcome, session } = wire.accept(signedHandshake(1, Hello.encode({ nonce, from: 1 }).finish()), 2);
  const w = Welcome.decode((Frame.decode(welcome) as unknown as { payload: Uint8Array }).payload) as unknown as { nonce: Uint8Array };
  const key = sessionKey(nonce, w.nonce, 1);
  return {
    listener: session,
    signedFrame: (payload, counter) => {
      const c = Buffer.alloc(8);
      c.writeBigUInt64BE(BigInt(counter));
      return Frame.encode({ kind: 0, counter, payload, hmac: createHmac('sha256', key).update(c).update(payload).digest() }).finish();
    },
  };
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
  it('round-trips every message type, several to a frame, in both directions of a connection', () => {
    expect(listener.decode(dialer.encode(ALL))).toEqual(ALL);
    for (const m of ALL) expect(listener.decode(dialer.encode([m]))).toEqual([m]);
    expect(dialer.decode(listener.encode(ALL))).toEqual(ALL);
  });

  it('carries the largest safe ids, terms and indexes', () => {
    const big = Number.MAX_SAFE_INTEGER;
    const m: Message = { type: 'appendResponse', from: big, to: 1, term: big, index: big, reject: false, hintIndex: 0, hintTerm: 0 };
    expect(listener.decode(dialer.encode([m]))).toEqual([m]);
  });

  it('tells each side the other\'s id, as its handshake said', () => {
    const c = connect();
    expect(c.dialer.peer).toBe(2);
    expect(c.listener.peer).toBe(1);
  });

  it('refuses a frame sent again on its connection (CAIRN_REPLAYED), and any older one', () => {
    const c = connect();
    const first = c.dialer.encode([ALL[3]]);
    const second = c.dialer.encode([ALL[4]]);
    expect(c.listener.decode(first)).toEqual([ALL[3]]);
    expect(code(() => c.listener.decode(first))).toBe('CAIRN_REPLAYED');
    expect(c.listener.decode(second)).toEqual([ALL[4]]);
    expect(code(() => c.listener.decode(second))).toBe('CAIRN_REPLAYED');
    expect(code(() => c.listener.decode(first))).toBe('CAIRN_REPLAYED');
    expect(c.listener.lastReceived).toBe(2);
    // The connection goes on with the next frame.
    expect(c.listener.decode(c.dialer.encode([ALL[5]]))).toEqual([ALL[5]]);
  });

  it('refuses a frame made for another connection, even one with the same counter (CAIRN_UNAUTHENTICATED)', () => {
    const a = connect();
    const b = connect();
    const frame = a.dialer.encode([ALL[3]]);
    expect(code(() => b.listener.decode(frame))).toBe('CAIRN_UNAUTHENTICATED');
    // A captured hello sent again opens a new connection, but with the listener's fresh nonce:
    // the original connection's frames do not pass on it.
    const { frame: hello, dialing } = wire.hello(1);
    const original = wire.accept(hello, 2);
    const dialerSide = dialing.welcome(original.welcome);
    const captured = dialerSide.encode([ALL[3]]);
    expect(original.session.decode(captured)).toEqual([ALL[3]]);
    const replayedHello = wire.accept(hello, 2);
    expect(code(() => replayedHello.session.decode(captured))).toBe('CAIRN_UNAUTHENTICATED');
    // Nor does a frame go back the way it came: each direction has its own key.
    const c = connect();
    expect(code(() => c.dialer.decode(c.dialer.encode([ALL[3]])))).toBe('CAIRN_UNAUTHENTICATED');
  });

  it('refuses a welcome that answers another hello (an old welcome sent again)', () => {
    const first = wire.hello(1);
    const { welcome } = wire.accept(first.frame, 2);
    const second = wire.hello(1);
    expect(code(() => second.dialing.welcome(welcome))).toBe('CAIRN_REPLAYED');
    expect(() => first.dialing.welcome(welcome)).not.toThrow();
  });

  it('refuses a handshake from another cluster or under another secret (CAIRN_UNAUTHENTICATED)', () => {
    const { frame } = wire.hello(1);
    expect(code(() => new RaftWire({ clusterId: 'prod', secret: 'another secret, 16+ bytes' }).accept(frame))).toBe('CAIRN_UNAUTHENTICATED');
    expect(code(() => new RaftWire({ clusterId: 'staging', secret: SECRET }).accept(frame))).toBe('CAIRN_UNAUTHENTICATED');
    const staging = new RaftWire({ clusterId: 'staging', secret: SECRET }).hello(1).frame;
    const err = (() => { try { wire.accept(staging); } catch (e) { return e as { code: string; message: string }; } })();
    expect(err).toMatchObject({ code: 'CAIRN_UNAUTHENTICATED', message: expect.stringMatching(/cluster 'staging'/) });
    // The listener's welcome under another secret is refused by the dialer too.
    const d = wire.hello(1);
    const other = new RaftWire({ clusterId: 'prod', secret: 'another secret, 16+ bytes' });
    expect(code(() => d.dialing.welcome(other.accept(other.hello(1).frame).welcome))).toBe('CAIRN_UNAUTHENTICATED');
    // Re-labelled, zeroed or missing MAC, one payload byte flipped.
    const f = Frame.decode(frame) as unknown as { kind: number; clusterId: string; payload: Uint8Array; hmac: Uint8Array };
    expect(code(() => wire.accept(Frame.encode({ ...f, hmac: new Uint8Array(32) }).finish()))).toBe('CAIRN_UNAUTHENTICATED');
    expect(code(() => wire.accept(Frame.encode({ kind: 1, clusterId: 'prod', payload: f.payload }).finish()))).toBe('CAIRN_UNAUTHENTICATED');
    const tampered = new Uint8Array(f.payload);
    tampered[tampered.length - 1] ^= 1;
    expect(code(() => wire.accept(Frame.encode({ ...f, payload: tampered }).finish()))).toBe('CAIRN_UNAUTHENTICATED');
  });

  it('refuses tampered data frames (CAIRN_UNAUTHENTICATED), the counter included', () => {
    const c = connect();
    const f = Frame.decode(c.dialer.encode(ALL)) as unknown as { kind: number; counter: number; payload: Uint8Array; hmac: Uint8Array };
    const tampered = new Uint8Array(f.payload);
    tampered[tampered.length - 1] ^= 1;
    expect(code(() => c.listener.decode(Frame.encode({ ...f, payload: tampered }).finish()))).toBe('CAIRN_UNAUTHENTICATED');
    expect(code(() => c.listener.decode(Frame.encode({ ...f, counter: 7 }).finish()))).toBe('CAIRN_UNAUTHENTICATED');
    expect(code(() => c.listener.decode(Frame.encode({ ...f, hmac: undefined }).finish()))).toBe('CAIRN_UNAUTHENTICATED');
    // The genuine frame still passes: nothing refused moved the counter.
    expect(c.listener.decode(Frame.encode(f).finish())).toEqual(ALL);
  });

  it('refuses frames out of the handshake\'s order and garbage (CAIRN_BAD_FRAME)', () => {
    const c = connect();
    expect(code(() => wire.accept(c.dialer.encode(ALL)))).toBe('CAIRN_BAD_FRAME');
    expect(code(() => c.listener.decode(wire.hello(1).frame))).toBe('CAIRN_BAD_FRAME');
    expect(code(() => wire.hello(1).dialing.welcome(wire.hello(1).frame))).toBe('CAIRN_BAD_FRAME');
    expect(code(() => c.listener.decode(new Uint8Array([0xff, 0xff, 0xff, 0xff, 0x0f])))).toBe('CAIRN_BAD_FRAME');
    expect(code(() => wire.accept(new Uint8Array([0xff, 0xff, 0xff, 0xff, 0x0f])))).toBe('CAIRN_BAD_FRAME');
    expect(code(() => c.listener.decode(c.dialer.encode(ALL).subarray(0, 20)))).toMatch(/CAIRN_BAD_FRAME|CAIRN_UNAUTHENTICATED/);
    // An authentic hello with a short nonce.
    expect(code(() => wire.accept(signedHandshake(1, Hello.encode({ nonce: Buffer.alloc(4), from: 1 }).finish())))).toBe('CAIRN_BAD_FRAME');
  });

  it('refuses authenticated payloads that are malformed (CAIRN_BAD_FRAME, naming the field)', () => {
    const hand = handMadeConnection();
    let counter = 0;
    const batch = (messages: object[]) => hand.signedFrame(Batch.encode(Batch.fromObject({ messages })).finish(), ++counter);
    const bad = (messages: object[]) => {
      try {
        hand.listener.decode(batch(messages));
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
    const f = Frame.decode(hand.signedFrame(new Uint8Array([0xff, 0xff]), ++counter)) as unknown as object;
    expect(code(() => hand.listener.decode(Frame.encode({ ...f, hmac: Buffer.alloc(32, 1) }).finish()))).toBe('CAIRN_UNAUTHENTICATED');
    expect(code(() => hand.listener.decode(hand.signedFrame(new Uint8Array([0xff, 0xff]), ++counter)))).toBe('CAIRN_BAD_FRAME');
    // Counter 0 is never sent: the first frame of a connection is 1.
    expect(code(() => hand.listener.decode(hand.signedFrame(Batch.encode({ messages: [] }).finish(), 0)))).toBe('CAIRN_BAD_FRAME');
  });

  it('refuses a weak or missing secret and an empty cluster id', () => {
    expect(code(() => new RaftWire({ clusterId: 'prod', secret: 'short' }))).toBe('CAIRN_BAD_REQUEST');
    expect(code(() => new RaftWire({ clusterId: '', secret: SECRET }))).toBe('CAIRN_BAD_REQUEST');
  });
});
