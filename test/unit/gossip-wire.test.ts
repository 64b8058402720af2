// Gossip frames: protobuf behind an HMAC-SHA256 envelope. Round trips, rejection of anything
// unauthenticated or malformed (with the error codes the shell counts), and the size estimate
// the core packs datagrams by.

import { describe, expect, it } from 'vitest';
import { createHmac } from 'node:crypto';
import { deriveGossipKey, ENVELOPE_BYTES, openPacket, sealPacket } from '../../shared/gossip/wire.ts';
import { estimateSize, type GossipMessage } from '../../shared/gossip/messages.ts';
import { GossipNode } from '../../shared/gossip/node.ts';
import { randomFloat } from '../../shared/random.ts';
import { splitMix32 } from '../sim/splitmix32.ts';
import { parseAddress, tryParseAddress } from '../../shared/gossip/address.ts';
import { CairnError } from '../../shared/errors.ts';

const KEY = deriveGossipKey('a-cluster-secret-of-some-length', 'cairn');
const FROM = '10.0.0.1:7946';

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

/** An envelope around any body, authenticated with `key`: for frames the sealer would never make. */
function envelope(body: Uint8Array, key = KEY): Buffer {
  const header = Buffer.from([0x43, 0x47, 1]);
  const mac = createHmac('sha256', key).update(header).update(body).digest();
  return Buffer.concat([header, mac, body]);
}

describe('gossip wire', () => {
  it('round-trips every message, each alone and all in one packet', () => {
    for (const m of EVERY_MESSAGE) expect(openPacket(KEY, sealPacket(KEY, FROM, [m]))).toEqual({ from: FROM, messages: [m] });
    expect(openPacket(KEY, sealPacket(KEY, FROM, EVERY_MESSAGE)).messages).toEqual(EVERY_MESSAGE);
  });

  it('rejects another secret, another cluster, an altered byte, and a packet with no envelope as unauthenticated', () => {
    const sealed = sealPacket(KEY, FROM, [{ type: 'ack', seq: 1 }]);
    expect(code(() => openPacket(deriveGossipKey('another-secret-entirely', 'cairn'), sealed))).toBe('CAIRN_UNAUTHENTICATED');
    expect(code(() => openPacket(deriveGossipKey('a-cluster-secret-of-some-length', 'staging'), sealed))).toBe('CAIRN_UNAUTHENTICATED');
    for (const i of [3, 20, ENVELOPE_BYTES, sealed.length - 1]) {
      const altered = Buffer.from(sealed);
      altered[i] ^= 0x01;
      expect(code(() => openPacket(KEY, altered))).toBe('CAIRN_UNAUTHENTICATED');
    }
    expect(code(() => openPacket(KEY, Buffer.from('hello')))).toBe('CAIRN_UNAUTHENTICATED');
    expect(code(() => openPacket(KEY, new Uint8Array(0)))).toBe('CAIRN_UNAUTHENTICATED');
  });

  it('rejects authentic frames that are not valid gossip as malformed, naming the field', () => {
    expect(code(() => openPacket(KEY, envelope(Buffer.from([0x0a, 0xff, 0xff, 0xff]))))).toBe('CAIRN_BAD_FRAME');
    // A packet with no messages, or a bad sender address.
    expect(code(() => openPacket(KEY, envelope(Buffer.from([0x0a, 0x03, 0x61, 0x3a, 0x31]))))).toBe('CAIRN_BAD_FRAME');
    expect(code(() => openPacket(KEY, sealPacket(KEY, 'no-port', [{ type: 'ack', seq: 1 }])))).toBe('CAIRN_BAD_FRAME');
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
        openPacket(KEY, sealPacket(KEY, FROM, [m]));
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(CairnError);
      expect((err as CairnError).code).toBe('CAIRN_BAD_FRAME');
      expect((err as CairnError).field).toMatch(/^packet\.messages\[0\]/);
    }
    expect(code(() => openPacket(KEY, envelope(Buffer.from([0x0a, 0x03, 0x61, 0x3a, 0x31])).fill(9, 2, 3)))).toBe('CAIRN_BAD_FRAME');
  });

  it('refuses a secret shorter than 16 bytes', () => {
    expect(() => deriveGossipKey('short', 'cairn')).toThrow(/secret/);
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
        const encoded = sealPacket(KEY, FROM, [m]).length - sealPacket(KEY, FROM, []).length;
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
        const sealed = sealPacket(KEY, '[fd00::1]:7946', p.messages);
        expect(sealed.length).toBeLessThanOrEqual(1_400);
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
