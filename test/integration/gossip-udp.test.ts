// Real sockets: four gossip members on 127.0.0.1 in this process, joined through one address.
// Short periods (200 ms probes) so that failure detection takes about a second.

import { afterAll, describe, expect, it } from 'vitest';
import { createSocket } from 'node:dgram';
import { connect } from 'node:net';
import { createHmac } from 'node:crypto';
import pino from 'pino';
import { startGossip, type GossipMember } from '../../shared/gossip/udp-node.ts';
import { deriveGossipKeys, openPacket, sealPacket, type GossipKeys, type SealStamp } from '../../shared/gossip/wire.ts';
import type { GossipConfigOptions } from '../../shared/gossip/config.ts';
import type { MembershipEvent } from '../../shared/gossip/node.ts';

const SECRET = 'test-cluster-secret-0123456789';
const KEYS = deriveGossipKeys(SECRET, 'cairn');
let seq = 0;
/** A stamp of this test's own run, fresh now. */
const stampNow = (over: Partial<SealStamp> = {}): SealStamp => ({ run: Buffer.from('7e57000000000001', 'hex'), stream: false, seq: ++seq, sentAtMs: Date.now(), ...over });
const CONFIG: GossipConfigOptions = {
  probeIntervalMs: 200,
  probeTimeoutMs: 100,
  gossipIntervalMs: 50,
  pushPullIntervalMs: 2_000,
  rejoinIntervalMs: 500,
};

const started: GossipMember[] = [];
afterAll(async () => {
  await Promise.all(started.map((m) => m.stop()));
});

async function member(name: string, role: 'master' | 'agent', join: string[] = [], bindPort = 0): Promise<GossipMember> {
  const m = await startGossip({
    name, role, bindHost: '127.0.0.1', bindPort, secret: SECRET, join, config: CONFIG,
    meta: { api: `http://${name}.example:5050` },
  });
  started.push(m);
  return m;
}

async function waitFor(what: string, cond: () => boolean, timeoutMs = 5_000): Promise<number> {
  const t0 = Date.now();
  while (!cond()) {
    if (Date.now() - t0 > timeoutMs) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
  return Date.now() - t0;
}

/** Alive, or suspected for a moment on a busy machine: not dead, not gone. */
const live = (v: { state: string }) => v.state === 'alive' || v.state === 'suspect';

function stateAt(observer: GossipMember, name: string): string | undefined {
  return observer.member(name)?.state;
}

async function sendDatagram(port: number, bytes: Uint8Array): Promise<void> {
  const s = createSocket('udp4');
  await new Promise<void>((resolve, reject) => s.send(bytes, port, '127.0.0.1', (err) => (err ? reject(err) : resolve())));
  s.close();
}

/** A UDP socket of the test's own on loopback: what members send it, as it came off the wire. */
/** A bare socket that records what reaches it; with `answerPingsWith`, it acks probes so that members keep it alive. */
async function spySocket(answerPingsWith?: GossipKeys): Promise<{ address: string; port: number; received: Buffer[]; close: () => void }> {
  const s = createSocket('udp4');
  const received: Buffer[] = [];
  s.on('message', (bytes, rinfo) => {
    received.push(bytes);
    if (answerPingsWith === undefined) return;
    for (const m of openPacket(answerPingsWith, bytes).messages) {
      if (m.type === 'ping') s.send(sealPacket(answerPingsWith, `127.0.0.1:${s.address().port}`, [{ type: 'ack', seq: m.seq }], stampNow()), rinfo.port, rinfo.address);
    }
  });
  await new Promise<void>((resolve) => s.bind(0, '127.0.0.1', () => resolve()));
  const port = s.address().port;
  return { address: `127.0.0.1:${port}`, port, received, close: () => s.close() };
}

/** The acks among what a spy received, opened with `keys`. */
function acksIn(received: Buffer[], keys: GossipKeys): number[] {
  return received.flatMap((bytes) => openPacket(keys, bytes).messages.flatMap((m) => (m.type === 'ack' ? [m.seq] : [])));
}

describe('gossip over UDP on loopback', () => {
  let a: GossipMember, b: GossipMember, c: GossipMember, d: GossipMember;

  it('joins three members through one address; all see all four', async () => {
    a = await member('master-a', 'master');
    b = await member('agent-b', 'agent', [a.address]);
    c = await member('agent-c', 'agent', [a.address]);
    d = await member('agent-d', 'agent', [a.address]);
    const all = [a, b, c, d];
    await waitFor('every member to see four alive', () =>
      all.every((m) => m.members().filter((v) => v.state === 'alive').length === 4));
    // Role and metadata travel with the membership.
    expect(b.member('master-a')).toMatchObject({ role: 'master', meta: { api: 'http://master-a.example:5050' } });
    expect(a.member('agent-d')?.address).toBe(d.address);
  });

  it('spreads a metadata change under a new incarnation', async () => {
    const before = a.member('master-a')!.incarnation;
    a.setMeta({ api: 'http://master-a.example:5050', leader: 'master-a', term: '7' });
    await waitFor('the new metadata everywhere', () =>
      [b, c, d].every((m) => m.member('master-a')?.meta.term === '7'));
    expect(b.member('master-a')!.incarnation).toBe(before + 1);
  });

  it('drops and counts packets with a bad HMAC, garbage, and authentic but malformed frames', async () => {
    const port = Number(a.address.split(':')[1]);
    const before = { ...a.counters };
    // A well-formed packet sealed with another secret: an alive message that would add a member.
    const forged = sealPacket(deriveGossipKeys('another-secret-0123456789', 'cairn'), '127.0.0.1:9', [
      { type: 'alive', member: { name: 'intruder', address: '127.0.0.1:9', role: 'master', incarnation: 1, meta: {} } },
    ], stampNow());
    await sendDatagram(port, forged);
    // Same secret, other cluster name.
    await sendDatagram(port, sealPacket(deriveGossipKeys(SECRET, 'other-cluster'), '127.0.0.1:9', [{ type: 'ack', seq: 1 }], stampNow()));
    await sendDatagram(port, Buffer.from('GET / HTTP/1.1\r\n\r\n'));
    // Right key, but the body is not a gossip packet.
    const header = Buffer.from([0x43, 0x47, 2, 0]);
    const body = Buffer.concat([Buffer.alloc(21), Buffer.from([0x0a, 0xff, 0xff, 0xff])]);
    const mac = createHmac('sha256', KEYS.mac).update(header).update(body).digest();
    await sendDatagram(port, Buffer.concat([header, mac, body]));
    await waitFor('four drops counted', () =>
      a.counters.droppedUnauthenticated - before.droppedUnauthenticated === 3 &&
      a.counters.droppedMalformed - before.droppedMalformed === 1);
    expect(a.member('intruder')).toBeUndefined();
    expect(a.members().filter(live)).toHaveLength(4);
  });

  it('drops a datagram sent again (over UDP or TCP), and one sent long ago, without acting on it', async () => {
    const port = Number(a.address.split(':')[1]);
    const spy = await spySocket();
    try {
      const before = { ...a.counters };
      const ping = (seq: number, stamp = stampNow()) => sealPacket(KEYS, spy.address, [{ type: 'ping', seq, target: 'master-a', from: 'spy' }], stamp);
      // A ping that a answers, to where it says it is from: that answer is what a replay would get again.
      const first = ping(101);
      await sendDatagram(port, first);
      await waitFor('the ack of the first ping', () => acksIn(spy.received, KEYS).includes(101));
      // The same bytes again, as one who captured them would send them.
      await sendDatagram(port, first);
      await waitFor('the replay counted', () => a.counters.droppedReplayed - before.droppedReplayed === 1);
      // The same bytes over TCP, where the stream sequence has not seen them: the stamp says datagram.
      await new Promise<void>((resolve, reject) => {
        const header = Buffer.alloc(4);
        header.writeUInt32BE(first.length);
        const sock = connect({ host: '127.0.0.1', port }, () => sock.end(Buffer.concat([header, first])));
        sock.on('close', () => resolve());
        sock.on('error', reject);
      });
      await waitFor('the replay over TCP counted', () => a.counters.droppedReplayed - before.droppedReplayed === 2);
      // Authentic and never seen, but sent a minute ago.
      await sendDatagram(port, ping(102, stampNow({ sentAtMs: Date.now() - 60_000 })));
      await waitFor('the old one counted', () => a.counters.droppedStale - before.droppedStale === 1);
      // A fresh ping, answered: on loopback the answers come in order, so had the replays or
      // the old ping been answered, their acks would be in before this one.
      await sendDatagram(port, ping(103));
      await waitFor('the ack of the fresh ping', () => acksIn(spy.received, KEYS).includes(103));
      expect(acksIn(spy.received, KEYS)).toEqual([101, 103]);
      expect(a.counters.droppedUnauthenticated).toBe(before.droppedUnauthenticated);
      expect(a.members().filter(live)).toHaveLength(4);
    } finally {
      spy.close();
    }
  });

  it('declares a member that stops abruptly dead at every other member within a few seconds', async () => {
    const events: MembershipEvent[] = [];
    a.on('change', (e) => events.push(e));
    await d.stop();
    const took = await waitFor('agent-d dead at a, b and c', () =>
      [a, b, c].every((m) => stateAt(m, 'agent-d') === 'dead'), 8_000);
    // Probes every 200 ms, suspicion 800 ms at minimum, 4.8 s for a lone accuser.
    expect(took).toBeLessThan(6_000);
    expect(events.some((e) => e.type === 'suspect' && e.member.name === 'agent-d')).toBe(true);
    expect(events.some((e) => e.type === 'dead' && e.member.name === 'agent-d')).toBe(true);
    for (const m of [a, b, c]) expect(m.members().filter(live)).toHaveLength(3);
  });

  it('tells the others when a member leaves on purpose', async () => {
    await c.leave();
    await waitFor('agent-c left at a and b', () => [a, b].every((m) => stateAt(m, 'agent-c') === 'left'), 3_000);
  });

  it('takes a full state larger than any datagram over TCP, and refuses an oversized frame', async () => {
    const big = await member('master-big', 'master');
    const [host, port] = [big.address.split(':')[0], Number(big.address.split(':')[1])];
    const members = Array.from({ length: 3_000 }, (_, i) => ({
      name: `agent-${i}`, address: `127.0.0.2:${20_000 + i}`, role: 'agent' as const, incarnation: 0,
      meta: { api: `http://127.0.0.2:${30_000 + i}` }, state: 'alive' as const,
    }));
    const frame = sealPacket(KEYS, '127.0.0.2:19999', [{ type: 'push-pull', join: false, reply: true, members }], stampNow({ stream: true }));
    expect(frame.length).toBeGreaterThan(150_000); // over 100 datagrams of 1,400 bytes
    const header = Buffer.alloc(4);
    header.writeUInt32BE(frame.length);
    await new Promise<void>((resolve, reject) => {
      const s = connect({ host, port }, () => s.end(Buffer.concat([header, frame])));
      s.on('close', () => resolve());
      s.on('error', reject);
    });
    await waitFor('3,000 members learned', () => big.members().length === 3_001);
    // A stream that announces more than a state could ever need is cut off unread.
    const huge = Buffer.alloc(4);
    huge.writeUInt32BE(0xffffffff);
    await new Promise<void>((resolve) => {
      const s = connect({ host, port }, () => s.write(huge));
      s.on('close', () => resolve());
      s.on('error', () => resolve());
    });
    expect(big.counters.droppedOversized).toBe(1);
    await big.stop();
  });

  it('lets a member restarted at the same address rejoin: it learns it was declared dead and refutes', async () => {
    const again = await member('agent-d', 'agent', [b.address], Number(d.address.split(':')[1]));
    await waitFor('agent-d alive again at a and b', () => [a, b].every((m) => stateAt(m, 'agent-d') === 'alive'));
    expect(again.member('agent-d')!.incarnation).toBeGreaterThan(0);
    expect(a.member('agent-d')!.address).toBe(again.address);
  });

  it('fails on a taken port, or takes a free one when told to (a default port on a shared host)', async () => {
    const port = Number(a.address.split(':')[1]);
    const opts = { name: 'second', role: 'master' as const, bindHost: '127.0.0.1', bindPort: port, secret: SECRET, config: CONFIG };
    await expect(startGossip(opts)).rejects.toMatchObject({ code: 'CAIRN_BAD_REQUEST', field: 'bindPort' });
    const second = await startGossip({ ...opts, anyPortIfTaken: true });
    started.push(second);
    expect(Number(second.address.split(':')[1])).not.toBe(port);
  });
});

describe('gossip encrypted (AES-256-GCM)', () => {
  const ENCRYPTED = deriveGossipKeys(SECRET, 'cairn', true);
  const logged: string[] = [];
  const logger = pino({ level: 'warn' }, { write: (line: string) => void logged.push(line) });
  const encrypted = async (name: string, join: string[] = [], secret = SECRET, encrypt = true): Promise<GossipMember> => {
    const m = await startGossip({
      name, role: 'agent', bindHost: '127.0.0.1', bindPort: 0, secret, join, config: CONFIG, encrypt,
      meta: { api: `http://${name}.example:5050` }, ...(name === 'enc-a' ? { logger } : {}),
    });
    started.push(m);
    return m;
  };
  let ea: GossipMember, eb: GossipMember, ec: GossipMember;

  it('converges', async () => {
    ea = await encrypted('enc-a');
    eb = await encrypted('enc-b', [ea.address]);
    ec = await encrypted('enc-c', [ea.address]);
    await waitFor('every encrypted member to see three alive', () =>
      [ea, eb, ec].every((m) => m.members().filter((v) => v.state === 'alive').length === 3));
    expect(eb.member('enc-a')).toMatchObject({ meta: { api: 'http://enc-a.example:5050' } });
    expect(ea.counters.droppedUnauthenticated + ea.counters.droppedEncryptionMismatch + ea.counters.droppedReplayed + ea.counters.droppedStale).toBe(0);
  });

  it('sends nothing of its members in clear: a datagram read off the wire shows no name or metadata', async () => {
    // The spy acks probes, so it stays a live member that enc-a keeps gossiping to however slow this machine is.
    const spy = await spySocket(ENCRYPTED);
    const eaPort = Number(ea.address.split(':')[1]);
    try {
      // Told of a member at the spy's address, enc-a probes it and gossips to it. Each piece
      // of news is a datagram: it is sent again each second until its effect shows, as a
      // member's own rejoin would, so one datagram lost on a loaded machine is not a failure.
      const read = (bytes: Buffer) => JSON.stringify(openPacket(ENCRYPTED, bytes));
      const untilSpySees = async (what: string, news: Parameters<typeof sealPacket>[2], text: string) => {
        let sentAt = 0;
        await waitFor(what, () => {
          if (spy.received.some((bytes) => read(bytes).includes(text))) return true;
          if (Date.now() - sentAt >= 1_000) {
            sentAt = Date.now();
            void sendDatagram(eaPort, sealPacket(ENCRYPTED, spy.address, news, stampNow()));
          }
          return false;
        }, 15_000).catch((err: Error) => {
          throw new Error(`${err.message}; enc-a sees ${JSON.stringify(ea.members().map((m) => [m.name, m.state]))}, counters ${JSON.stringify(ea.counters)}, the spy got ${spy.received.length} packets`);
        });
      };
      await untilSpySees('a probe naming enc-a at the spy', [
        { type: 'alive', member: { name: 'spy', address: spy.address, role: 'agent', incarnation: 1, meta: {} } },
      ], '"from":"enc-a"');
      // News with metadata, fresh now: the members' own news may have been sent its last time before the spy came.
      await untilSpySees('news with metadata at the spy', [
        { type: 'alive', member: { name: 'enc-x', address: '127.0.0.1:9', role: 'agent', incarnation: 1, meta: { api: 'http://enc-x.example:5050' } } },
      ], 'enc-x.example:5050');
      const seen = spy.received.slice();
      for (const bytes of seen) {
        for (const text of ['enc-a', 'enc-b', 'enc-c', 'enc-x', 'example', ea.address]) expect(bytes.includes(text), text).toBe(false);
        // Nor can they be read as the authenticated-only format.
        expect(() => openPacket(KEYS, bytes)).toThrow(/encrypted/);
      }
    } finally {
      spy.close();
    }
  });

  it('ignores a member without the key, and one with encryption off, saying why', async () => {
    const before = { ...ea.counters };
    const outsider = await encrypted('outsider', [ea.address], 'another-secret-0123456789');
    const plain = await encrypted('plain', [ea.address], SECRET, false);
    await waitFor('the outsider and the plain member dropped at enc-a', () =>
      ea.counters.droppedUnauthenticated > before.droppedUnauthenticated && ea.counters.droppedEncryptionMismatch > before.droppedEncryptionMismatch);
    // Both try again every rejoin interval; wait out a few, then nobody has let them in.
    await waitFor('a few more tries', () => ea.counters.droppedEncryptionMismatch >= before.droppedEncryptionMismatch + 3, 10_000);
    for (const m of [ea, eb, ec]) {
      expect(m.member('outsider')).toBeUndefined();
      expect(m.member('plain')).toBeUndefined();
    }
    expect(outsider.members().map((v) => v.name)).toEqual(['outsider']);
    expect(plain.members().map((v) => v.name)).toEqual(['plain']);
    expect(plain.counters.droppedEncryptionMismatch + ea.counters.droppedEncryptionMismatch).toBeGreaterThan(0);
    // One line says why, not one per packet.
    const why = logged.filter((l) => l.includes('--gossip-encrypt'));
    expect(why).toHaveLength(1);
    expect(why[0]).toMatch(/is not encrypted, but this member runs with gossip encryption/);
    await outsider.stop();
    await plain.stop();
  });
});
