// The agent's task resolver: what a task's resolv.conf says (search list, ndots), the little
// of DNS it parses itself, how it picks its address, and its routing, against stand-in
// resolvers on loopback: the zone to the masters (the next master when one is dead), the rest
// to the host's upstreams, SERVFAIL when nobody answers, FORMERR for a message it cannot read.

import { afterEach, describe, expect, it } from 'vitest';
import dgram from 'node:dgram';
import net from 'node:net';
import dnsPacket from 'dns-packet';
import pino from 'pino';
import { taskResolvConf, taskSearchList } from '../../agent/task-dns/resolv-conf.ts';
import { errorReply, inZone, readQuestion } from '../../agent/task-dns/dns-message.ts';
import { addressLabel, candidateAddresses } from '../../agent/task-dns/address.ts';
import { TaskDnsServer } from '../../agent/task-dns/server.ts';
import { Forwarder } from '../../shared/dns/forwarder.ts';
import { parseUpstream, readResolvConf } from '../../shared/dns/upstream.ts';
import { StandInDns } from '../harness/stand-in-dns.ts';

/** dns-packet decodes the response code, but its types leave it out. */
const rcodeOf = (p: dnsPacket.Packet) => (p as { rcode?: string }).rcode;
const query = (name: string, id = 7) => dnsPacket.encode({ id, type: 'query', flags: dnsPacket.RECURSION_DESIRED, questions: [{ type: 'A', name }] });

describe('a task resolv.conf', () => {
  it("searches the task's framework, then the zone, then the host's domains, within glibc's limits", () => {
    expect(taskSearchList('ddp-master-0.jobs.cairn', 'cairn', ['corp.example'])).toEqual(['jobs.cairn', 'cairn', 'corp.example']);
    expect(taskSearchList('web.dev.team.marathon.cairn', 'cairn', [])).toEqual(['dev.team.marathon.cairn', 'cairn']);
    // No name of its own: the zone only; no zone known yet: the host's.
    expect(taskSearchList('', 'cairn', ['a.example', 'cairn'])).toEqual(['cairn', 'a.example']);
    expect(taskSearchList('', undefined, ['a.example'])).toEqual(['a.example']);
    expect(taskSearchList('x.jobs.cairn', 'cairn', ['a', 'b', 'c', 'd', 'e', 'f'])).toHaveLength(6);
    expect(taskResolvConf('169.254.53.9', ['jobs.cairn', 'cairn'])).toMatch(/^nameserver 169\.254\.53\.9\nsearch jobs\.cairn cairn\noptions ndots:2\n$/m);
  });

  it("reads the host's resolv.conf: nameservers by address, the last search or domain line", () => {
    const r = readResolvConf('domain old.example\nnameserver 10.0.0.2\nnameserver fe80::1%eth0\nnameserver bogus\nsearch a.example b.example.\noptions ndots:1\n');
    expect(r.nameservers.map((u) => `${u.host}:${u.port}`)).toEqual(['10.0.0.2:53', 'fe80::1:53']);
    expect(r.search).toEqual(['a.example', 'b.example']);
  });
});

describe('DNS messages the resolver reads', () => {
  it('reads the question name in lower case and answers errors with the question echoed', () => {
    const q = query('Peer-0.JOBS.cairn');
    const read = readQuestion(q)!;
    expect(read.name).toBe('peer-0.jobs.cairn');
    expect(inZone(read.name, 'cairn')).toBe(true);
    expect(inZone('notcairn', 'cairn')).toBe(false);
    const reply = dnsPacket.decode(errorReply(q, read.end, 2));
    expect(reply).toMatchObject({ id: 7, type: 'response', rcode: 'SERVFAIL', questions: [{ name: 'Peer-0.JOBS.cairn', type: 'A' }] });
    expect(readQuestion(Buffer.from('garbage'))).toBeUndefined();
    // A label running past the end.
    const cut = Buffer.from(q.subarray(0, 16));
    expect(readQuestion(cut)).toBeUndefined();
  });
});

describe("the resolver's address", () => {
  it('keeps its own, reuses one a killed agent left, and never takes one that is not a resolver', () => {
    const mine = addressLabel('/w/a');
    expect(mine).toMatch(/^lo:cairn[0-9a-f]{7}$/);
    const fresh = candidateAddresses('/w/a', new Map());
    expect(fresh[0]).toMatch(/^169\.254\.53\.\d+$/);
    expect(candidateAddresses('/w/a', new Map())).toEqual(fresh); // the same work dir, the same address
    const local = new Map([['169.254.53.200', mine], [fresh[0], 'lo:cairn0000000'], [fresh[1], 'eth0']]);
    const c = candidateAddresses('/w/a', local);
    expect(c[0]).toBe('169.254.53.200'); // its own from before
    expect(c).toContain(fresh[0]); // a stale resolver's: taken over if nobody answers there
    expect(c).not.toContain(fresh[1]); // somebody else's interface
    expect(candidateAddresses('/w/a', local, '10.1.2.3')).toEqual(['10.1.2.3']);
  });
});

describe('the task resolver routes queries', () => {
  const closers: (() => unknown)[] = [];
  afterEach(async () => {
    for (const c of closers.splice(0).reverse()) await c();
  });

  async function resolverWith(masters: string[], upstreams: string[], domain: string | undefined = 'cairn') {
    const udp = dgram.createSocket('udp4');
    await new Promise<void>((r) => udp.bind(0, '127.0.0.1', () => r()));
    const tcp = net.createServer();
    await new Promise<void>((r) => tcp.listen(0, '127.0.0.1', () => r()));
    const m = new Forwarder(masters.map((s) => parseUpstream(s)), 300);
    const u = new Forwarder(upstreams.map((s) => parseUpstream(s)), 300);
    const server = new TaskDnsServer({ udp, tcp, domain: () => domain, masters: m, upstreams: u, log: pino({ level: 'silent' }) });
    closers.push(() => server.close(), () => m.close(), () => u.close());
    return { server, udpPort: udp.address().port, tcpPort: (tcp.address() as net.AddressInfo).port };
  }

  async function ask(port: number, name: string): Promise<dnsPacket.Packet> {
    const s = dgram.createSocket('udp4');
    try {
      return await new Promise((resolve, reject) => {
        s.on('message', (m) => resolve(dnsPacket.decode(m)));
        setTimeout(() => reject(new Error(`no answer for ${name}`)), 5000).unref();
        s.send(query(name), port, '127.0.0.1');
      });
    } finally {
      s.close();
    }
  }

  it('sends the zone to the masters and the rest to the upstreams; a dead master costs one time-out', async () => {
    const master = await StandInDns.start({ 'peer-0.jobs.cairn': '10.0.0.5' });
    const upstream = await StandInDns.start({ 'pypi.org': '151.101.0.223' });
    closers.push(() => master.close(), () => upstream.close());
    const dead = await StandInDns.start({});
    const deadAddress = dead.address;
    dead.close();
    const { server, udpPort } = await resolverWith([deadAddress, master.address], [upstream.address]);
    expect((await ask(udpPort, 'peer-0.jobs.cairn')).answers).toMatchObject([{ type: 'A', data: '10.0.0.5' }]);
    expect((await ask(udpPort, 'pypi.org')).answers).toMatchObject([{ type: 'A', data: '151.101.0.223' }]);
    expect(master.asked).toEqual(['A peer-0.jobs.cairn']);
    expect(upstream.asked).toEqual(['A pypi.org']);
    // The live master answered last: it is asked first now, with no time-out in between.
    const t0 = Date.now();
    expect((await ask(udpPort, 'PEER-0.jobs.cairn')).answers).toHaveLength(1);
    expect(Date.now() - t0).toBeLessThan(250);
    expect(rcodeOf(await ask(udpPort, 'missing.jobs.cairn'))).toBe('NXDOMAIN');
    expect(server.counters).toMatchObject({ queries: 4, zone: 3, forwarded: 1, failed: 0 });
  });

  it('answers SERVFAIL when nobody answers and FORMERR to what it cannot read; speaks TCP', async () => {
    const upstream = await StandInDns.start({ 'pypi.org': '151.101.0.223' });
    closers.push(() => upstream.close());
    const gone = await StandInDns.start({});
    const goneAddress = gone.address;
    gone.close();
    const { udpPort, tcpPort } = await resolverWith([goneAddress], [upstream.address]);
    expect(rcodeOf(await ask(udpPort, 'peer-0.jobs.cairn'))).toBe('SERVFAIL');
    const s = dgram.createSocket('udp4');
    const formerr = await new Promise<dnsPacket.Packet>((resolve) => {
      s.on('message', (m) => resolve(dnsPacket.decode(m)));
      s.send(Buffer.from([0, 9, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 63]), udpPort, '127.0.0.1');
    });
    s.close();
    expect(formerr).toMatchObject({ id: 9, rcode: 'FORMERR' });
    // Over TCP (two-byte length framing), through the upstream.
    const reply = await new Promise<dnsPacket.Packet>((resolve, reject) => {
      const c = net.connect(tcpPort, '127.0.0.1', () => c.write(dnsPacket.streamEncode({ id: 3, type: 'query', flags: dnsPacket.RECURSION_DESIRED, questions: [{ type: 'A', name: 'pypi.org' }] })));
      c.on('data', (d) => {
        resolve(dnsPacket.streamDecode(d));
        c.destroy();
      });
      c.on('error', reject);
    });
    expect(reply.answers).toMatchObject([{ data: '151.101.0.223' }]);
  });

  it('asks the masters for everything while the host has no upstreams of its own', async () => {
    const master = await StandInDns.start({ 'pypi.org': '151.101.0.223' });
    closers.push(() => master.close());
    const { udpPort } = await resolverWith([master.address], []);
    expect((await ask(udpPort, 'pypi.org')).answers).toMatchObject([{ data: '151.101.0.223' }]);
  });
});
