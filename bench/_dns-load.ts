// DNS load generator for bench/dns.ts, run as its own process so that the server's core is
// not shared with the client: sends UDP queries for the given names round-robin, keeping
// `window` outstanding (a lost one is re-sent after 500 ms), for `seconds`, and prints
// JSON: queries answered per second, how many had answers, and round-trip percentiles.
//
//   node bin/run-ts.js bench/_dns-load.ts --port 8053 --type A --seconds 5 --window 64 name1 name2...

import dgram from 'node:dgram';
import dnsPacket from 'dns-packet';

function arg(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : fallback;
}

const host = arg('host', '127.0.0.1');
const port = Number(arg('port', '8053'));
const type = arg('type', 'A') as 'A' | 'SRV';
const seconds = Number(arg('seconds', '5'));
const window = Number(arg('window', '64'));
const names = process.argv.slice(2).filter((a, i, all) => !a.startsWith('--') && !all[i - 1]?.startsWith('--'));
if (names.length === 0) {
  console.error('usage: _dns-load.ts --port P [--type A|SRV] [--seconds S] [--window W] NAME...');
  process.exit(2);
}

const templates = names.map((name) => dnsPacket.encode({ type: 'query', id: 0, flags: dnsPacket.RECURSION_DESIRED, questions: [{ name, type }] }));
const socket = dgram.createSocket('udp4');
const outstanding = new Map<number, number>(); // id → sent at (ms)
let nextId = 0;
let nextName = 0;
let sent = 0;
let answered = 0;
let withAnswers = 0;
let lost = 0;
let measuring = false;
const rtts: number[] = [];
let stopAt = Infinity;

function sendOne(): void {
  if (performance.now() >= stopAt) return;
  let id = nextId;
  while (outstanding.has(id)) id = (id + 1) & 0xffff;
  nextId = (id + 1) & 0xffff;
  const q = Buffer.from(templates[nextName++ % templates.length]);
  q.writeUInt16BE(id, 0);
  outstanding.set(id, performance.now());
  sent++;
  socket.send(q, port, host);
}

socket.on('message', (msg) => {
  if (msg.length < 12) return;
  const id = msg.readUInt16BE(0);
  const at = outstanding.get(id);
  if (at === undefined) return;
  outstanding.delete(id);
  if (measuring) {
    answered++;
    if ((msg[3] & 0x0f) === 0 && msg.readUInt16BE(6) > 0) withAnswers++;
    if (rtts.length < 200_000) rtts.push(performance.now() - at);
  }
  sendOne();
});

await new Promise<void>((r) => socket.bind(0, '127.0.0.1', () => r()));
const lossTimer = setInterval(() => {
  const now = performance.now();
  for (const [id, at] of outstanding) {
    if (now - at > 500) {
      outstanding.delete(id);
      lost++;
      sendOne();
    }
  }
}, 100);

// Half a second of warm-up (JIT, caches), then the measured run.
const warmupEnd = performance.now() + 500;
stopAt = warmupEnd + seconds * 1000;
for (let i = 0; i < window; i++) sendOne();
await new Promise((r) => setTimeout(r, 500));
measuring = true;
const t0 = performance.now();
await new Promise((r) => setTimeout(r, seconds * 1000));
const elapsed = (performance.now() - t0) / 1000;
measuring = false;
clearInterval(lossTimer);
socket.close();

rtts.sort((a, b) => a - b);
const pct = (p: number) => (rtts.length ? Number(rtts[Math.min(rtts.length - 1, Math.floor(p * rtts.length))].toFixed(3)) : 0);
console.log(
  JSON.stringify({
    type,
    names: names.length,
    window,
    seconds: Number(elapsed.toFixed(2)),
    answered,
    withAnswers,
    lost,
    queriesPerSecond: Math.round(answered / elapsed),
    rttMs: { p50: pct(0.5), p99: pct(0.99) },
  }),
);
