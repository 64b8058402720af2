// Real sockets: four gossip members on 127.0.0.1 in this process, joined through one address.
// Short periods (200 ms probes) so that failure detection takes about a second.

import { afterAll, describe, expect, it } from 'vitest';
import { createSocket } from 'node:dgram';
import { connect } from 'node:net';
import { createHmac } from 'node:crypto';
import { startGossip, type GossipMember } from '../../shared/gossip/udp-node.ts';
import { deriveGossipKey, sealPacket } from '../../shared/gossip/wire.ts';
import type { GossipConfigOptions } from '../../shared/gossip/config.ts';
import type { MembershipEvent } from '../../shared/gossip/node.ts';

const SECRET = 'test-cluster-secret-0123456789';
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
    const forged = sealPacket(deriveGossipKey('another-secret-0123456789', 'cairn'), '127.0.0.1:9', [
      { type: 'alive', member: { name: 'intruder', address: '127.0.0.1:9', role: 'master', incarnation: 1, meta: {} } },
    ]);
    await sendDatagram(port, forged);
    // Same secret, other cluster name.
    await sendDatagram(port, sealPacket(deriveGossipKey(SECRET, 'other-cluster'), '127.0.0.1:9', [{ type: 'ack', seq: 1 }]));
    await sendDatagram(port, Buffer.from('GET / HTTP/1.1\r\n\r\n'));
    // Right key, but the body is not a gossip packet.
    const header = Buffer.from([0x43, 0x47, 1]);
    const body = Buffer.from([0x0a, 0xff, 0xff, 0xff]);
    const mac = createHmac('sha256', deriveGossipKey(SECRET, 'cairn')).update(header).update(body).digest();
    await sendDatagram(port, Buffer.concat([header, mac, body]));
    await waitFor('four drops counted', () =>
      a.counters.droppedUnauthenticated - before.droppedUnauthenticated === 3 &&
      a.counters.droppedMalformed - before.droppedMalformed === 1);
    expect(a.member('intruder')).toBeUndefined();
    expect(a.members().filter(live)).toHaveLength(4);
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
    const frame = sealPacket(deriveGossipKey(SECRET, 'cairn'), '127.0.0.2:19999', [{ type: 'push-pull', join: false, reply: true, members }]);
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
