// Gossip datagrams encoded and decoded per second of CPU (this process's user + system time,
// so that other load on the host does not count): sealPacket then openPacket (protobuf,
// stamp, HMAC-SHA256, or AES-256-GCM with encryption), with the replay guard's check on the
// receiving side as the shell does it. Two sizes: a probe with three pieces of news
// piggybacked (what most datagrams are), and a fuller datagram. The median of five rounds.

import { randomBytes } from 'node:crypto';
import type { GossipMessage } from '../shared/gossip/messages.ts';
import { ReplayGuard } from '../shared/gossip/replay-guard.ts';
import { deriveGossipKeys, openPacket, sealPacket, type GossipKeys } from '../shared/gossip/wire.ts';

const SECRET = 'bench-gossip-secret-0123456789';
const FROM = '10.0.0.1:7946';

const alive = (i: number): GossipMessage => ({
  type: 'alive',
  member: { name: `agent@10.0.${i >> 8}.${i & 255}:5051`, address: `10.0.${i >> 8}.${i & 255}:7947`, role: 'agent', incarnation: 3, meta: { api: `http://10.0.${i >> 8}.${i & 255}:5051`, hostname: `host-${i}`, agent_id: `agent-id-${i}-S0` } },
});

const SMALL: GossipMessage[] = [{ type: 'ping', seq: 12345, target: 'agent@10.0.0.2:5051', from: 'master@10.0.0.1:5050' }, alive(1), alive(2), alive(3)];
const FULL: GossipMessage[] = [{ type: 'ping', seq: 12345, target: 'agent@10.0.0.2:5051', from: 'master@10.0.0.1:5050' }, ...Array.from({ length: 8 }, (_, i) => alive(i + 10))];

function rate(keys: GossipKeys, messages: GossipMessage[], ms: number): { bytes: number; datagramsPerCpuSecond: number } {
  const guard = new ReplayGuard();
  const run = randomBytes(8);
  let seq = 0;
  let bytes = 0;
  const rounds: number[] = [];
  for (let r = 0; r < 5; r++) {
    let n = 0;
    const cpu0 = process.cpuUsage();
    const until = performance.now() + ms / 5;
    while (performance.now() < until) {
      for (let i = 0; i < 200; i++) {
        const now = Date.now();
        const sealed = sealPacket(keys, FROM, messages, { run, stream: false, seq: ++seq, sentAtMs: now });
        const opened = openPacket(keys, sealed);
        if (guard.check(opened.stamp, now) !== 'fresh') throw new Error('a fresh packet was refused');
        bytes = sealed.length;
        n++;
      }
    }
    const cpu = process.cpuUsage(cpu0);
    rounds.push(n / ((cpu.user + cpu.system) / 1e6));
  }
  rounds.sort((a, b) => a - b);
  return { bytes, datagramsPerCpuSecond: Math.round(rounds[2]) };
}

export async function run(): Promise<unknown> {
  const plain = deriveGossipKeys(SECRET, 'cairn');
  const encrypted = deriveGossipKeys(SECRET, 'cairn', true);
  rate(plain, SMALL, 300);
  rate(encrypted, SMALL, 300); // warm up
  return {
    bench: 'gossip-wire',
    probeWithThreeNews: { authenticated: rate(plain, SMALL, 2000), encrypted: rate(encrypted, SMALL, 2000) },
    fullDatagram: { authenticated: rate(plain, FULL, 2000), encrypted: rate(encrypted, FULL, 2000) },
  };
}

if (import.meta.url === `file://${process.argv[1]}`) console.log(JSON.stringify(await run(), null, 2));
