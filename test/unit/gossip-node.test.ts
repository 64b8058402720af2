// The SWIM core, message by message: one member driven by hand (ticks and packets in, packets and
// events out), then small simulated clusters for what needs several (partitions, restarts).

import { describe, expect, it } from 'vitest';
import { GossipNode, type GossipOutput, type MembershipEvent } from '../../shared/gossip/node.ts';
import type { GossipConfigOptions } from '../../shared/gossip/config.ts';
import type { GossipMessage, MemberRecord, OutgoingPacket } from '../../shared/gossip/messages.ts';
import { splitMix32 } from '../sim/splitmix32.ts';
import { SimNetwork, formedCluster } from '../sim/gossip-network.ts';

const addr = (name: string) => `${name}:7946`;
const rec = (name: string, incarnation = 0): MemberRecord => ({ name, address: addr(name), role: 'agent', incarnation, meta: {} });

/** A member that knows `others`, with push/pull and reconnects out of the way. */
function node(name: string, others: string[], config: GossipConfigOptions = {}, nowMs = 0): GossipNode {
  return new GossipNode({
    name, address: addr(name), role: 'agent', random: splitMix32(7), nowMs,
    initialMembers: others.map((o) => rec(o)),
    config: { pushPullIntervalMs: 1_000_000, reconnectIntervalMs: 1_000_000, ...config },
  });
}

interface Log { packets: (OutgoingPacket & { at: number })[]; events: (MembershipEvent & { at: number })[] }

/** Ticks `n` at each of its deadlines up to `untilMs`, collecting what it says; nobody answers. */
function runAlone(n: GossipNode, untilMs: number, log: Log = { packets: [], events: [] }): Log {
  for (;;) {
    const d = n.nextDeadline();
    if (d > untilMs) return log;
    collect(log, n.tick(d), d);
  }
}

/**
 * Like runAlone, but the other members answer: a ping to anyone not `silent` is acked 1 ms
 * later, and an indirect probe is acked (or nacked, for a silent target) by its helper.
 */
function runAmong(n: GossipNode, untilMs: number, silent: ReadonlySet<string> = new Set(), log: Log = { packets: [], events: [] }): Log {
  const replies: { at: number; from: string; messages: GossipMessage[] }[] = [];
  const answer = (out: GossipOutput, at: number) => {
    collect(log, out, at);
    for (const p of out.packets) {
      for (const m of p.messages) {
        const to = p.to.split(':')[0];
        if (m.type === 'ping' && !silent.has(to)) replies.push({ at: at + 1, from: p.to, messages: [{ type: 'ack', seq: m.seq }] });
        if (m.type === 'indirect-ping') {
          replies.push({ at: at + 2, from: p.to, messages: [silent.has(m.target) ? { type: 'nack', seq: m.seq } : { type: 'ack', seq: m.seq }] });
        }
      }
    }
  };
  for (;;) {
    replies.sort((x, y) => x.at - y.at);
    const d = n.nextDeadline();
    const r = replies[0];
    if (r !== undefined && r.at <= d && r.at <= untilMs) {
      replies.shift();
      answer(n.receive(r.from, r.messages, r.at), r.at);
    } else if (d <= untilMs) {
      answer(n.tick(d), d);
    } else {
      return log;
    }
  }
}

function collect(log: Log, out: GossipOutput, at: number): Log {
  for (const p of out.packets) log.packets.push({ ...p, at });
  for (const e of out.events) log.events.push({ ...e, at });
  return log;
}

const messagesOf = (log: Log, type: GossipMessage['type']) =>
  log.packets.flatMap((p) => p.messages.filter((m) => m.type === type).map((m) => ({ to: p.to, at: p.at, m })));

describe('probing', () => {
  it('pings, asks others to ping indirectly after the timeout, suspects at the end of the period', () => {
    const a = node('a', ['b', 'c', 'd'], { indirectChecks: 2 });
    const log = runAlone(a, 2_000);
    const [ping] = messagesOf(log, 'ping');
    const target = (ping.m as { target: string }).target;
    expect(ping.to).toBe(addr(target));
    // 500 ms later: indirect pings through the two others, asking for nacks.
    const indirect = messagesOf(log, 'indirect-ping').filter((x) => x.at === ping.at + 500);
    expect(indirect.map((x) => x.to).sort()).toEqual(['b', 'c', 'd'].filter((x) => x !== target).map(addr).sort());
    expect(indirect.every((x) => (x.m as { nack: boolean }).nack && (x.m as { seq: number }).seq === (ping.m as { seq: number }).seq)).toBe(true);
    // At the end of the period: suspected.
    const suspect = log.events.find((e) => e.type === 'suspect')!;
    expect(suspect).toMatchObject({ at: ping.at + 1_000, member: { name: target, state: 'suspect' } });
    expect(a.stats.suspicionsRaised).toBe(1);
  });

  it('counts a probe that got an ack in time as a success and suspects nobody', () => {
    const a = node('a', ['b']);
    const t = a.nextDeadline();
    const out = a.tick(t);
    const ping = out.packets[0].messages.find((m) => m.type === 'ping') as { seq: number };
    a.receive(addr('b'), [{ type: 'ack', seq: ping.seq }], t + 5);
    const log = runAlone(a, t + 1_500);
    expect(log.events).toEqual([]);
    expect(messagesOf(log, 'indirect-ping')).toEqual([]);
  });

  it('answers a ping with an ack, and ignores one meant for whoever had its address before', () => {
    const b = node('b', ['a']);
    const out = b.receive(addr('a'), [{ type: 'ping', seq: 9, target: 'b', from: 'a' }], 10);
    expect(out.packets).toEqual([{ to: addr('a'), messages: [{ type: 'ack', seq: 9 }], stream: false }]);
    expect(b.receive(addr('a'), [{ type: 'ping', seq: 10, target: 'old-b', from: 'a' }], 11).packets).toEqual([]);
    expect(b.stats.misdirectedPings).toBe(1);
  });

  it('relays an indirect probe: forwards the ack, or nacks after its own probe timeout', () => {
    const r = node('r', ['a', 't']);
    const out = r.receive(addr('a'), [{ type: 'indirect-ping', seq: 7, target: 't', targetAddress: addr('t'), from: 'a', nack: true }], 100);
    const ping = out.packets[0];
    expect(ping.to).toBe(addr('t'));
    const relaySeq = (ping.messages[0] as { seq: number }).seq;
    // The target answers: the ack goes back to a under a's sequence number.
    const acked = r.receive(addr('t'), [{ type: 'ack', seq: relaySeq }], 150);
    expect(acked.packets).toEqual([{ to: addr('a'), messages: [{ type: 'ack', seq: 7 }], stream: false }]);
    // A second one the target never answers: a nack 500 ms later.
    const out2 = r.receive(addr('a'), [{ type: 'indirect-ping', seq: 8, target: 't', targetAddress: addr('t'), from: 'a', nack: true }], 200);
    expect(out2.packets).toHaveLength(1);
    const log = runAlone(r, 700);
    expect(messagesOf(log, 'nack')).toEqual([{ to: addr('a'), at: 700, m: { type: 'nack', seq: 8 } }]);
  });
});

describe('suspicion', () => {
  it('lasts the maximum for a lone accuser and shrinks to the minimum with two confirmations', () => {
    // 4 members: min = 4 · max(1, log10 4) s = 4 s, max = 6 · 4 = 24 s, 2 confirmations expected.
    const lone = node('a', ['b', 'c', 'd']);
    lone.receive(addr('c'), [{ type: 'suspect', name: 'b', incarnation: 0, from: 'c' }], 1_000);
    const l1 = runAmong(lone, 30_000);
    expect(l1.events.find((e) => e.type === 'dead')).toMatchObject({ at: 25_000, member: { name: 'b', state: 'dead' } });

    const confirmed = node('a', ['b', 'c', 'd']);
    confirmed.receive(addr('c'), [{ type: 'suspect', name: 'b', incarnation: 0, from: 'c' }], 1_000);
    runAmong(confirmed, 2_000);
    // One confirmation: 24 - log(2)/log(3) · 20 = 11.381 s after the start.
    confirmed.receive(addr('d'), [{ type: 'suspect', name: 'b', incarnation: 0, from: 'd' }], 2_000);
    const l2 = runAmong(confirmed, 4_500);
    expect(l2.events.filter((e) => e.type === 'dead')).toEqual([]);
    // The same accuser again does not count.
    confirmed.receive(addr('d'), [{ type: 'suspect', name: 'b', incarnation: 0, from: 'd' }], 4_500);
    confirmed.receive(addr('a'), [{ type: 'suspect', name: 'b', incarnation: 0, from: 'a' }], 4_600);
    const l3 = runAmong(confirmed, 30_000);
    // Two confirmations: the 4 s minimum after the suspicion began.
    expect(l3.events.find((e) => e.type === 'dead')?.at).toBe(5_000);
  });

  it('is refuted by the suspect with a higher incarnation, which clears it everywhere', () => {
    const b = node('b', ['a', 'c']);
    b.receive(addr('a'), [{ type: 'suspect', name: 'b', incarnation: 0, from: 'a' }], 100);
    expect(b.incarnation()).toBe(1);
    expect(b.healthScore()).toBe(1); // being accused hints that we may be the slow one
    const log = runAmong(b, 400);
    const alive = messagesOf(log, 'alive').map((x) => x.m);
    expect(alive[0]).toEqual({ type: 'alive', member: rec('b', 1) });

    const c = node('c', ['a', 'b']);
    c.receive(addr('a'), [{ type: 'suspect', name: 'b', incarnation: 0, from: 'a' }], 100);
    const out = c.receive(addr('b'), [{ type: 'alive', member: rec('b', 1) }], 150);
    expect(out.events).toMatchObject([{ type: 'update', member: { name: 'b', state: 'alive', incarnation: 1 } }]);
    expect(runAmong(c, 60_000).events.filter((e) => e.type === 'dead')).toEqual([]);
  });

  it('re-asserts its incarnation, on the ack itself, to a member that still holds an old accusation', () => {
    const b = node('b', ['a', 'c']);
    b.receive(addr('c'), [{ type: 'suspect', name: 'b', incarnation: 0, from: 'c' }], 100);
    runAmong(b, 5_000); // the refutation has been gossiped and dropped from the queue
    const out = b.receive(addr('a'), [
      { type: 'suspect', name: 'b', incarnation: 0, from: 'a' },
      { type: 'ping', seq: 3, target: 'b', from: 'a' },
    ], 5_000);
    expect(out.packets[0].messages).toEqual([{ type: 'ack', seq: 3 }, { type: 'alive', member: rec('b', 1) }]);
  });

  it('does not count a suspicion learned from a state exchange as an accusation, nor pass it on', () => {
    const a = node('a', ['b', 'c', 'd']);
    a.receive(addr('c'), [{
      type: 'push-pull', join: false, reply: true,
      members: [{ ...rec('b'), state: 'suspect' }, { ...rec('c'), state: 'alive' }],
    }], 100);
    expect(a.member('b')?.state).toBe('suspect');
    const log = runAmong(a, 3_000);
    expect(messagesOf(log, 'suspect').filter((x) => (x.m as { from: string }).from === 'a' && x.to !== addr('b'))).toEqual([]);
  });
});

describe('local health (Lifeguard)', () => {
  it('rises with missing nacks and stretches the probe period and timeout', () => {
    const a = node('a', ['b', 'c', 'd'], { indirectChecks: 2 });
    const start = a.nextDeadline();
    const log = runAlone(a, start + 999);
    expect(messagesOf(log, 'ping')).toHaveLength(1);
    // The first probe ends with neither helper having sent a nack: both count against us.
    const log2 = runAlone(a, start + 1_000);
    expect(a.healthScore()).toBe(2);
    // The next probe starts at once and lasts 3 periods (score 2, plus 1): indirect probes after
    // 3 · 500 ms, the probe after that 3 s later.
    const [second] = messagesOf(log2, 'ping');
    expect(second.at).toBe(start + 1_000);
    const log3 = runAlone(a, start + 4_000);
    expect(messagesOf(log3, 'indirect-ping')[0].at).toBe(start + 2_500);
    expect(messagesOf(log3, 'ping').map((x) => x.at)).toEqual([start + 4_000]);
  });

  it('does not count a failed probe against itself when the helpers nack', () => {
    const a = node('a', ['b', 'c', 'd'], { indirectChecks: 2 });
    const t = a.nextDeadline();
    a.tick(t);
    const out = a.tick(t + 500);
    const seq = (out.packets.find((p) => p.messages[0].type === 'indirect-ping')!.messages[0] as { seq: number }).seq;
    a.receive(addr('c'), [{ type: 'nack', seq }], t + 600);
    a.receive(addr('d'), [{ type: 'nack', seq }], t + 600);
    a.tick(t + 1_000);
    expect(a.healthScore()).toBe(0);
    expect(a.stats.nacksReceived).toBe(2);
  });

  it('after a stall of its own, reads what queued up before declaring anyone dead', () => {
    const a = node('a', ['b', 'c', 'd']);
    a.receive(addr('c'), [{ type: 'suspect', name: 'b', incarnation: 0, from: 'c' }], 1_000);
    runAmong(a, 20_000);
    // Stalled from 20 s to 40 s: the suspicion (due at 25 s) is not concluded on waking...
    const woke = a.tick(40_000);
    expect(woke.events.filter((e) => e.type === 'dead')).toEqual([]);
    expect(a.stats.stalls).toBe(1);
    // ...and the refutation waiting in the socket clears it.
    const out = a.receive(addr('b'), [{ type: 'alive', member: rec('b', 1) }], 40_001);
    expect(out.events).toMatchObject([{ type: 'update', member: { name: 'b', state: 'alive' } }]);
  });

  it('with local health off, a stalled member concludes at once', () => {
    const a = node('a', ['b', 'c', 'd'], { localHealthAwareness: false });
    a.receive(addr('c'), [{ type: 'suspect', name: 'b', incarnation: 0, from: 'c' }], 1_000);
    runAmong(a, 20_000);
    expect(a.tick(40_000).events.filter((e) => e.type === 'dead').map((e) => e.member.name)).toEqual(['b']);
  });
});

describe('joining, metadata and leaving', () => {
  it('joins through one address with a full state exchange both ways', () => {
    const a = node('a', ['b', 'c']);
    const j = new GossipNode({ name: 'j', address: addr('j'), role: 'agent', random: splitMix32(1), nowMs: 0 });
    const hello = j.join([addr('a')], 0);
    expect(hello.packets).toHaveLength(1);
    expect(hello.packets[0]).toMatchObject({ to: addr('a'), stream: true, messages: [{ type: 'push-pull', join: true, reply: false }] });
    const answer = a.receive(addr('j'), hello.packets[0].messages, 10);
    expect(answer.events).toMatchObject([{ type: 'join', member: { name: 'j' } }]);
    expect(answer.packets[0]).toMatchObject({ to: addr('j'), stream: true, messages: [{ type: 'push-pull', reply: true }] });
    const joined = j.receive(addr('a'), answer.packets[0].messages, 20);
    expect(joined.events.map((e) => e.member.name).sort()).toEqual(['a', 'b', 'c']);
    expect(j.liveCount()).toBe(4);
  });

  it('retries its join addresses while it knows nobody', () => {
    const j = new GossipNode({ name: 'j', address: addr('j'), role: 'agent', random: splitMix32(1), nowMs: 0, config: { rejoinIntervalMs: 5_000 } });
    j.join([addr('a')], 0);
    const log = runAlone(j, 12_000);
    expect(messagesOf(log, 'push-pull').map((x) => [x.to, x.at])).toEqual([[addr('a'), 5_000], [addr('a'), 10_000]]);
  });

  it('bumps its incarnation on new metadata and gossips it', () => {
    const a = node('a', ['b']);
    a.setMeta({ leader: 'master-1', term: '3' }, 100);
    expect(a.incarnation()).toBe(1);
    const log = runAlone(a, 500);
    expect(messagesOf(log, 'alive')[0].m).toEqual({
      type: 'alive', member: { name: 'a', address: addr('a'), role: 'agent', incarnation: 1, meta: { leader: 'master-1', term: '3' } },
    });
    expect(() => a.setMeta({ big: 'x'.repeat(600) }, 200)).toThrow(/meta/);
  });

  it('says goodbye at once; others record a leave, not a failure', () => {
    const l = node('l', ['a', 'b']);
    const out = l.leave(100);
    const goodbye = out.packets.flatMap((p) => p.messages);
    expect(goodbye).toContainEqual({ type: 'dead', name: 'l', incarnation: 0, from: 'l' });
    // Accusations after leaving are not refuted.
    l.receive(addr('a'), [{ type: 'suspect', name: 'l', incarnation: 0, from: 'a' }], 150);
    expect(l.incarnation()).toBe(0);
    const a = node('a', ['l', 'b']);
    const seen = a.receive(addr('l'), goodbye, 120);
    expect(seen.events).toMatchObject([{ type: 'leave', member: { name: 'l', state: 'left' } }]);
    runAlone(l, 10_000);
    expect(l.leaveSpread()).toBe(true);
  });

  it('keeps a live member from being taken over by another address', () => {
    const a = node('a', ['b']);
    const out = a.receive(addr('x'), [{ type: 'alive', member: { ...rec('b', 5), address: 'elsewhere:1' } }], 10);
    expect(out.events).toEqual([]);
    expect(a.member('b')?.address).toBe(addr('b'));
    expect(a.stats.addressConflicts).toBe(1);
  });

  it('forgets a dead member after the retention period', () => {
    const a = node('a', ['b', 'c'], { deadMemberRetentionMs: 60_000 });
    a.receive(addr('c'), [{ type: 'dead', name: 'b', incarnation: 0, from: 'c' }], 10);
    expect(a.member('b')?.state).toBe('dead');
    runAmong(a, 30_000);
    expect(a.member('b')).toBeDefined();
    runAmong(a, 70_000);
    expect(a.member('b')).toBeUndefined();
  });
});

describe('small simulated clusters', () => {
  it('heals a partition: both sides declare each other dead, then find each other again', () => {
    const net = new SimNetwork({ seed: 5, delayMs: { min: 1, max: 5 } });
    const ms = formedCluster(net, 20);
    const side = (name: string) => Number(name.slice(1)) % 2;
    net.blocked = (from, to) => side(from.name) !== side(to.name);
    net.run(60_000);
    for (const m of ms) {
      for (const o of ms) if (side(o.name) !== side(m.name)) expect(m.node.stateOf(o.name)).toBe('dead');
    }
    net.blocked = undefined;
    // Reconnection runs every 30 s; after that, refutations and syncs spread.
    net.run(150_000);
    for (const m of ms) expect(m.node.liveCount()).toBe(20);
  });

  it('lets a crashed member that restarts under its name rejoin with a higher incarnation', () => {
    const net = new SimNetwork({ seed: 6, delayMs: { min: 1, max: 5 } });
    const ms = formedCluster(net, 10);
    net.run(2_000);
    net.crash(ms[3]);
    net.run(40_000);
    expect(ms[0].node.stateOf('m3')).toBe('dead');
    // Same name and address, a fresh process at incarnation 0.
    net.byAddress.delete(ms[3].address);
    const back = net.add('m3', { join: [ms[0].address] });
    net.run(60_000);
    expect(back.node.incarnation()).toBeGreaterThan(0);
    for (const m of ms.filter((x) => !x.crashed)) expect(m.node.stateOf('m3')).toBe('alive');
    expect(back.node.liveCount()).toBe(10);
  });
});
