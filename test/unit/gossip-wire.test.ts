// Gossip frames: protobuf behind an HMAC-SHA256 envelope, or encrypted (AES-256-GCM). Round
// trips, the stamp the replay guard judges by, rejection of anything unauthenticated or
// malformed (with the error codes the shell counts), members that disagree on encryption, and
// the size estimate the core packs datagrams by.

import { describe, expect, it } from 'vitest';
import { createHmac } from 'node:crypto';
import { deriveGossipKeys, ENVELOPE_BYTES, openPacket, SEALED_ENVELOPE_BYTES, sealPacket, type GossipKeys } from '../../shared/gossip/wire.ts';
import { estimateSize, type GossipMessage } from '../../shared/gossip/messages.ts';
import { GossipNode } from '../../shared/gossip/node.ts';
import { randomFloat } from '../../shared/random.ts';
import { splitMix32 } from '../sim/splitmix32.ts';
import { parseAddress, tryParseAddress } from '../../shared/gossip/address.ts';
import { CairnError } from '../../shared/errors.ts';

const SECRET = 'a-cluster-secret-of-some-length';
const KEY = deriveGossipKeys(SECRET, 'cairn');
const SEALED = deriveGossipKeys(SECRET, 'cairn', true);
const FROM = '10.0.0.1:7946';
const RUN = Buffer.from('0123456789abcdef', 'hex');
let nextSeq = 1;
/** A fresh stamp: this run, the next sequence number, a fixed time (this file reads no clock). */
const st = (over: Partial<{ stream: boolean; seq: number; sentAtMs: number }> = {}) => ({ run: RUN, stream: false, seq: nextSeq++, sentAtMs: 1_700_000_000_000, ...over });
const seal = (key: GossipKeys, from: string, messages: readonly GossipMessage[]) => sealPacket(key, from, messages, st());

const member = { name: 'agent-1', address: '10.0.0.2:7946', role: 'agent' as const, incarnation: 3, meta: { api: 'http://10.0.0.2:5051' } };
const EVERY_MESSAGE: GossipMessage[] = [
  { type: 'ping', seq: 1, target: 'agent-1', from: 'master-1' },
  { type: 'indirect-ping', seq: 4_000_000_000, target: 'agent-1', targetAddress: '[::1]:7946', from: 'master-1', nack: true },
  { type: 'ack', seq: 2 },
  { type: 'nack', seq: 3 },
  { type: 'alive', member },
  { type: 'suspect', name: 'agent-1', incarnation: 3, from: 'master-1' },
  { type: 'dead', name: 'agent-1', incarnation: 4, from: 'agent-1' },
  {
    type: 'push-pull', join: true, reply: false,
    members: [{ ...member, state: 'alive' }, { ...member, name: 'agent-2', meta: {}, state: 'suspect' }, { ...member, name: 'm', role: 'master', state: 'left' }],
  },
];

function code(f: () => unknown): string | undefined {
  try {
    f();
  } catch (err) {
    return err instanceof CairnError ? err.code : 'not a CairnError';
  }
  return undefined;
}

/** An authenticated envelope around any Packet bytes, with a stamp: for frames the sealer would never make. */
function envelope(packet: Uint8Array, key = KEY): Buffer {
  const header = Buffer.from([0x43, 0x47, 2, 0]);
  const stamp = Buffer.alloc(21);
  RUN.copy(stamp, 0);
  stamp.writeUIntBE(nextSeq++, 9, 6);
  stamp.writeUIntBE(1_700_000_000_000, 15, 6);
  const body = Buffer.concat([stamp, packet]);
  const mac = createHmac('sha256', key.mac).update(header).update(body).digest();
  return Buffer.concat([header, mac, body]);
}

describe('gossip wire', () => {
  it('round-trips every message, each alone and all in one packet, authenticated or encrypted', () => {
    for (const keys of [KEY, SEALED]) {
      for (const m of EVERY_MESSAGE) expect(openPacket(keys, seal(keys, FROM, [m]))).toMatchObject({ from: FROM, messages: [m] });
      expect(openPacket(keys, seal(keys, FROM, EVERY_MESSAGE)).messages).toEqual(EVERY_MESSAGE);
    }
  });

  it('carries the stamp under the MAC or inside the encryption', () => {
    for (const keys of [KEY, SEALED]) {
      const big = 2 ** 48 - 1;
      const opened = openPacket(keys, sealPacket(keys, FROM, [{ type: 'ack', seq: 1 }], { run: RUN, stream: true, seq: big, sentAtMs: 1_700_000_000_123 }));
      expect(opened.stamp).toEqual({ run: '0123456789abcdef', stream: true, seq: big, sentAtMs: 1_700_000_000_123 });
    }
    // A stamp that does not fit is refused when sealing.
    expect(code(() => sealPacket(KEY, FROM, [{ type: 'ack', seq: 1 }], { ...st(), seq: 2 ** 48 }))).toBe('CAIRN_BAD_REQUEST');
    expect(code(() => sealPacket(KEY, FROM, [{ type: 'ack', seq: 1 }], { ...st(), run: Buffer.alloc(4) }))).toBe('CAIRN_BAD_REQUEST');
  });

  it('encrypts: nothing of the packet shows, and each datagram has its own nonce', () => {
    const m: GossipMessage = { type: 'alive', member: { ...member, meta: { api: 'http://very-visible.example:5051' } } };
    const sealed = seal(SEALED, FROM, [m]);
    const clear = seal(KEY, FROM, [m]);
    for (const text of ['agent-1', 'very-visible', '10.0.0.2:7946', FROM]) {
      expect(clear.includes(text), text).toBe(true); // the control: authenticated only, it is all readable
      expect(sealed.includes(text), text).toBe(false);
    }
    expect(sealed.length).toBe(clear.length - ENVELOPE_BYTES + SEALED_ENVELOPE_BYTES);
    const again = sealPacket(SEALED, FROM, [m], { run: RUN, stream: false, seq: 1, sentAtMs: 1 });
    const twice = sealPacket(SEALED, FROM, [m], { run: RUN, stream: false, seq: 1, sentAtMs: 1 });
    expect(again.subarray(4, 16).equals(twice.subarray(4, 16))).toBe(false);
    expect(again.equals(twice)).toBe(false);
  });

  it('refuses, naming why, a packet from a member that disagrees on encryption', () => {
    const sealed = seal(SEALED, FROM, [{ type: 'ack', seq: 1 }]);
    const clear = seal(KEY, FROM, [{ type: 'ack', seq: 1 }]);
    for (const [keys, bytes, says] of [[KEY, sealed, /is encrypted, but this member runs without/], [SEALED, clear, /is not encrypted, but this member runs with/]] as const) {
      let err: unknown;
      try {
        openPacket(keys, bytes);
      } catch (e) {
        err = e;
      }
      expect(err).toMatchObject({ code: 'CAIRN_UNAUTHENTICATED', field: 'packet.mode', message: expect.stringMatching(says) });
    }
  });

  it('rejects another secret, another cluster, an altered byte, and a packet with no envelope as unauthenticated', () => {
    for (const [keys, encrypt] of [[KEY, false], [SEALED, true]] as const) {
      const sealed = seal(keys, FROM, [{ type: 'ack', seq: 1 }]);
      expect(code(() => openPacket(deriveGossipKeys('another-secret-entirely', 'cairn', encrypt), sealed))).toBe('CAIRN_UNAUTHENTICATED');
      expect(code(() => openPacket(deriveGossipKeys(SECRET, 'staging', encrypt), sealed))).toBe('CAIRN_UNAUTHENTICATED');
      for (const i of [4, 20, ENVELOPE_BYTES, sealed.length - 1]) {
        const altered = Buffer.from(sealed);
        altered[i] ^= 0x01;
        expect(code(() => openPacket(keys, altered)), `byte ${i}`).toBe('CAIRN_UNAUTHENTICATED');
      }
      expect(code(() => openPacket(keys, sealed.subarray(0, 30)))).toBe('CAIRN_UNAUTHENTICATED');
      expect(code(() => openPacket(keys, Buffer.from('hello')))).toBe('CAIRN_UNAUTHENTICATED');
      expect(code(() => openPacket(keys, new Uint8Array(0)))).toBe('CAIRN_UNAUTHENTICATED');
    }
    // The keys of the two modes are unrelated: the MAC key does not decrypt, nor the other way.
    expect(SEALED.cipher!.equals(KEY.mac)).toBe(false);
    expect(SEALED.mac.equals(KEY.mac)).toBe(true);
  });

  it('rejects authentic frames that are not valid gossip as malformed, naming the field', () => {
    expect(code(() => openPacket(KEY, envelope(Buffer.from([0x0a, 0xff, 0xff, 0xff]))))).toBe('CAIRN_BAD_FRAME');
    // A packet with no messages, or a bad sender address.
    expect(code(() => openPacket(KEY, envelope(Buffer.from([0x0a, 0x03, 0x61, 0x3a, 0x31]))))).toBe('CAIRN_BAD_FRAME');
    expect(code(() => openPacket(KEY, seal(KEY, 'no-port', [{ type: 'ack', seq: 1 }])))).toBe('CAIRN_BAD_FRAME');
    // Empty names, bad addresses, unknown roles slip through protobuf but not validation.
    const bad: GossipMessage[] = [
      { type: 'ping', seq: 1, target: '', from: 'x' },
      { type: 'indirect-ping', seq: 1, target: 't', targetAddress: 'nowhere', from: 'x', nack: false },
      { type: 'alive', member: { ...member, address: 'host:99999' } },
      { type: 'suspect', name: 'a', incarnation: 1, from: '' },
    ];
    for (const m of bad) {
      let err: unknown;
      try {
        openPacket(KEY, seal(KEY, FROM, [m]));
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(CairnError);
      expect((err as CairnError).code).toBe('CAIRN_BAD_FRAME');
      expect((err as CairnError).field).toMatch(/^packet\.messages\[0\]/);
    }
    // Another version (1 was before stamps), another mode, another channel.
    expect(code(() => openPacket(KEY, envelope(Buffer.from([0x0a, 0x03, 0x61, 0x3a, 0x31])).fill(9, 2, 3)))).toBe('CAIRN_BAD_FRAME');
    expect(code(() => openPacket(KEY, envelope(Buffer.from([0x0a, 0x03, 0x61, 0x3a, 0x31])).fill(1, 2, 3)))).toBe('CAIRN_BAD_FRAME');
    expect(code(() => openPacket(KEY, envelope(Buffer.from([0x0a, 0x03, 0x61, 0x3a, 0x31])).fill(7, 3, 4)))).toBe('CAIRN_BAD_FRAME');
    const channel = Buffer.from(seal(KEY, FROM, [{ type: 'ack', seq: 1 }]));
    channel[36 + 8] = 5;
    const mac = createHmac('sha256', KEY.mac).update(channel.subarray(0, 4)).update(channel.subarray(36)).digest();
    mac.copy(channel, 4);
    expect(code(() => openPacket(KEY, channel))).toBe('CAIRN_BAD_FRAME');
  });

  it('refuses a secret shorter than 16 bytes', () => {
    expect(() => deriveGossipKeys('short', 'cairn')).toThrow(/secret/);
    expect(() => deriveGossipKeys('short', 'cairn', true)).toThrow(/secret/);
  });

  it('estimates no message smaller than it encodes', () => {
    const r = splitMix32(3);
    const word = (n: number) => Array.from({ length: 1 + Math.floor(randomFloat(r) * n) }, () => String.fromCharCode(97 + Math.floor(randomFloat(r) * 26))).join('');
    for (let i = 0; i < 200; i++) {
      const meta: Record<string, string> = {};
      for (let k = 0; k < Math.floor(randomFloat(r) * 5); k++) meta[word(10)] = word(40) + 'é';
      const rec = { name: word(30), address: `${word(20)}:${1 + Math.floor(randomFloat(r) * 65_000)}`, role: 'master' as const, incarnation: Math.floor(randomFloat(r) * 4e9), meta };
      const samples: GossipMessage[] = [
        { type: 'alive', member: rec },
        { type: 'suspect', name: rec.name, incarnation: rec.incarnation, from: word(30) },
        { type: 'ping', seq: Math.floor(randomFloat(r) * 4e9), target: rec.name, from: word(30) },
        { type: 'indirect-ping', seq: 4e9, target: rec.name, targetAddress: rec.address, from: word(30), nack: true },
        { type: 'push-pull', join: false, reply: true, members: [{ ...rec, state: 'suspect' }, { ...rec, state: 'alive' }] },
      ];
      for (const m of samples) {
        const encoded = seal(KEY, FROM, [m]).length - seal(KEY, FROM, []).length;
        expect(estimateSize(m)).toBeGreaterThanOrEqual(encoded);
      }
    }
  });

  it('keeps every datagram the core sends within maxPacketBytes, however much news is queued', () => {
    const others = Array.from({ length: 300 }, (_, i) => ({
      name: `agent-with-a-long-name-${i}`, address: `192.168.100.${i % 250}:7946`, role: 'agent' as const, incarnation: 0,
      meta: { api: `http://192.168.100.${i % 250}:5051`, rack: `rack-${i % 17}` },
    }));
    const node = new GossipNode({ name: 'master-1', address: '[fd00::1]:7946', role: 'master', random: splitMix32(1), nowMs: 0 });
    // A reply listing 300 members: 300 alive messages to gossip about.
    node.receive(others[0].address, [{ type: 'push-pull', join: false, reply: true, members: others.map((o) => ({ ...o, state: 'alive' as const })) }], 0);
    let datagrams = 0;
    for (let t = 0; t < 10_000; t = node.nextDeadline()) {
      for (const p of node.tick(t).packets) {
        if (p.stream) continue;
        datagrams++;
        const sealed = seal(KEY, '[fd00::1]:7946', p.messages);
        expect(sealed.length).toBeLessThanOrEqual(1_400);
        expect(seal(SEALED, '[fd00::1]:7946', p.messages).length).toBeLessThanOrEqual(1_400);
        // The estimate errs on the large side, but not by much: the datagram is well used.
        expect(sealed.length).toBeGreaterThan(900);
      }
      if (datagrams > 30) break;
    }
    expect(datagrams).toBeGreaterThan(30);
  });
});

describe('addresses', () => {
  it('parses host:port and [v6]:port, and names the field when it cannot', () => {
    expect(tryParseAddress('10.0.0.1:7946')).toEqual({ host: '10.0.0.1', port: 7946 });
    expect(tryParseAddress('master-1.cairn:7946')).toEqual({ host: 'master-1.cairn', port: 7946 });
    expect(tryParseAddress('[fd00::1]:7946')).toEqual({ host: 'fd00::1', port: 7946 });
    for (const bad of ['', 'host', ':7946', 'host:0', 'host:65536', 'fd00::1:7946', 'host:12a']) expect(tryParseAddress(bad)).toBeUndefined();
    expect(() => parseAddress('host', 'join[0]')).toThrow(/join\[0\]/);
  });
});
