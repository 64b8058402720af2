// The master's DNS server end to end: a real master in this process, a simulated agent and
// a raw Mesos framework, asked with dig and with Node's resolver over loopback. A task's
// A and SRV records appear within 100 ms of its RUNNING update and go within 100 ms of its
// end; leader names; forwarding to a fake upstream (nothing leaves the machine); malformed
// packets; TCP; the HTTP API; records served from the registry right after a restart.

import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { execFile, spawnSync } from 'node:child_process';
import dgram from 'node:dgram';
import { Resolver } from 'node:dns/promises';
import net from 'node:net';
import { rmSync } from 'node:fs';
import { promisify } from 'node:util';
import dnsPacket from 'dns-packet';
import { startMaster, type MasterHandle } from '../../master/server.ts';
import { silentLogger } from '../../shared/logger.ts';
import { FakeAgent } from '../harness/fake-agent.ts';
import { tempDir, waitFor } from '../harness/processes.ts';
import { RawScheduler, taskInfo } from '../harness/raw-scheduler.ts';
import { MasterAuth } from '../../master/auth/master-auth.ts';

const execFileAsync = promisify(execFile);
const HAVE_DIG = spawnSync('dig', ['-v']).status === 0;
if (!HAVE_DIG) {
  if (process.env.CI === 'true') throw new Error('dig is required in CI (install dnsutils)');
  console.warn('dig is not installed (apt-get install dnsutils): the dig cases of the DNS tests are skipped');
}

/** A fake upstream resolver on loopback: answers `outside.example` and ignores `silent.example`. */
class FakeUpstream {
  readonly socket = dgram.createSocket('udp4');
  readonly asked: string[] = [];

  async start(): Promise<number> {
    this.socket.on('message', (msg, rinfo) => {
      const q = dnsPacket.decode(msg);
      const name = q.questions?.[0]?.name ?? '';
      this.asked.push(name);
      if (name !== 'outside.example') return;
      const reply = dnsPacket.encode({
        type: 'response',
        id: q.id,
        flags: dnsPacket.RECURSION_DESIRED | dnsPacket.RECURSION_AVAILABLE,
        questions: q.questions,
        answers: [{ name, type: 'A', ttl: 60, data: '192.0.2.7' }],
      });
      this.socket.send(reply, rinfo.port, rinfo.address);
    });
    await new Promise<void>((r) => this.socket.bind(0, '127.0.0.1', () => r()));
    return this.socket.address().port;
  }

  close(): void {
    this.socket.close();
  }
}

let upstream: FakeUpstream;
let upstreamPort: number;
let master: MasterHandle;
let dir: string;
let agent: FakeAgent;
let scheduler: RawScheduler;
let resolver: Resolver;

beforeAll(async () => {
  upstream = new FakeUpstream();
  upstreamPort = await upstream.start();
});

afterAll(() => upstream.close());

async function start(dataDir: string): Promise<void> {
  master = await startMaster({ auth: MasterAuth.off(),
    dataDir,
    port: 0,
    host: '127.0.0.1',
    dnsPort: 0,
    dnsResolvers: [`127.0.0.1:${upstreamPort}`],
    dnsForwardTimeoutMs: 300,
    logger: silentLogger(),
    allocationIntervalMs: 50,
  });
  resolver = new Resolver({ timeout: 1000, tries: 1 });
  resolver.setServers([`127.0.0.1:${master.dnsPort}`]);
}

beforeEach(async () => {
  dir = tempDir();
  await start(dir);
  agent = new FakeAgent({ masterUrl: master.url, hostname: 'host-a' });
  await agent.connect();
  scheduler = new RawScheduler(master.url);
  expect((await scheduler.subscribe({ user: 'test', name: 'My_Framework' })).status).toBe(200);
});

afterEach(async () => {
  scheduler.close();
  await agent.close();
  await master.stop();
  rmSync(dir, { recursive: true, force: true });
});

/** Times (performance.now) at which the agent sent each status update, by "task state". */
function recordUpdates(a: FakeAgent): Map<string, number> {
  const sent = new Map<string, number>();
  const update = a.update.bind(a);
  a.update = (taskId, frameworkId, state, exitCode) => {
    sent.set(`${taskId} ${state}`, performance.now());
    return update(taskId, frameworkId, state, exitCode);
  };
  return sent;
}

async function launch(id: string, name: string, ports?: [number, number][]): Promise<void> {
  const offer = scheduler.offers().find((o) => !launched.has(o.id.value));
  const o = offer ?? (await scheduler.next((e) => e.type === 'OFFERS' && e.offers.offers.some((x: any) => !launched.has(x.id.value)))).offers.offers.find((x: any) => !launched.has(x.id.value));
  launched.add(o.id.value);
  const res = await scheduler.call({
    type: 'ACCEPT',
    accept: { offer_ids: [o.id], operations: [{ type: 'LAUNCH', launch: { task_infos: [taskInfo(id, agent.agentId, { cpus: 0.5, mem: 64, ports }, 'sleep 100', { name })] } }], filters: { refuse_seconds: 0 } },
  });
  expect(res.status).toBe(202);
}
const launched = new Set<string>();

/** Asks until `ok` holds for the answer (or the error); returns when it did. */
async function until<T>(ask: () => Promise<T>, ok: (r: T | Error) => boolean, limitMs = 5_000): Promise<number> {
  const deadline = performance.now() + limitMs;
  for (;;) {
    let r: T | Error;
    try {
      r = await ask();
    } catch (err) {
      r = err as Error;
    }
    if (ok(r)) return performance.now();
    if (performance.now() > deadline) throw new Error(`no expected answer within ${limitMs} ms; last: ${r instanceof Error ? r.message : JSON.stringify(r)}`);
    await new Promise((res) => setTimeout(res, 1));
  }
}

const notFound = (r: unknown) => r instanceof Error && (r as NodeJS.ErrnoException).code === 'ENOTFOUND';

async function dig(...args: string[]): Promise<string> {
  const { stdout } = await execFileAsync('dig', ['@127.0.0.1', '-p', String(master.dnsPort), '+time=2', '+tries=1', ...args]);
  return stdout;
}

describe('DNS server', () => {
  it('resolves a task (A and SRV) within 100 ms of RUNNING, and stops within 100 ms of its end', async () => {
    const sent = recordUpdates(agent);
    const name = 'web.my-framework.cairn';
    expect(await resolver.resolve4(name).catch((e) => e)).toSatisfy(notFound);
    await launch('web-1', 'Web', [[31000, 31001]]);
    const resolvedAt = await until(() => resolver.resolve4(name), (r) => Array.isArray(r) && r[0] === '127.0.0.1');
    const runningSentAt = sent.get('web-1 TASK_RUNNING')!;
    expect(runningSentAt).toBeDefined();
    expect(resolvedAt - runningSentAt).toBeLessThan(100);

    const srv = await resolver.resolveSrv('_web._tcp.my-framework.cairn');
    expect(srv.map((s) => s.port).sort()).toEqual([31000, 31001]);
    const target = srv[0].name;
    expect(target).toMatch(/^web-[a-z0-9]{5}-s0\.my-framework\.slave\.cairn$/);
    expect(await resolver.resolve4(target)).toEqual(['127.0.0.1']);
    expect((await resolver.resolveSrv('_web._udp.my-framework.cairn')).length).toBe(2);

    if (HAVE_DIG) {
      expect((await dig('+short', name)).trim()).toBe('127.0.0.1');
      const srvLines = (await dig('+short', '_web._tcp.my-framework.cairn', 'SRV')).trim().split('\n').sort();
      expect(srvLines).toEqual([`0 0 31000 ${target}.`, `0 0 31001 ${target}.`]);
    }

    const endedAt = performance.now();
    agent.update('web-1', scheduler.frameworkId, 'TASK_FINISHED');
    const goneAt = await until(() => resolver.resolve4(name), notFound);
    expect(goneAt - endedAt).toBeLessThan(100);
    await until(() => resolver.resolveSrv('_web._tcp.my-framework.cairn'), notFound, 100);
    if (HAVE_DIG) expect(await dig(name)).toContain('status: NXDOMAIN');
  });

  it('answers leader, master and agent names, and SOA and NS for the zone', async () => {
    expect(await resolver.resolve4('leader.cairn')).toEqual(['127.0.0.1']);
    expect(await resolver.resolve4('master.cairn')).toEqual(['127.0.0.1']);
    expect(await resolver.resolve4('agent.cairn')).toEqual(['127.0.0.1']);
    expect(await resolver.resolve4('slave.cairn')).toEqual(['127.0.0.1']);
    // Node 24's resolver adds the record's ttl; the fields SRV carries are what is checked.
    const leaderSrv = (await resolver.resolveSrv('_leader._tcp.cairn')).map(({ name, port, priority, weight }) => ({ name, port, priority, weight }));
    expect(leaderSrv).toEqual([{ name: 'leader.cairn', port: master.port, priority: 0, weight: 0 }]);
    expect(await resolver.resolveSoa('cairn')).toMatchObject({ nsname: 'ns1.cairn', hostmaster: 'root.ns1.cairn' });
    expect(await resolver.resolveNs('cairn')).toEqual(['ns1.cairn']);
    if (HAVE_DIG) {
      expect((await dig('+short', 'LEADER.Cairn')).trim()).toBe('127.0.0.1');
      const nx = await dig('nothing.cairn');
      expect(nx).toContain('status: NXDOMAIN');
      expect(nx).toMatch(/AUTHORITY SECTION:\ncairn\.\s+1\s+IN\s+SOA\s+ns1\.cairn\. root\.ns1\.cairn\./);
      expect(await dig('cairn', 'SOA')).toContain('flags: qr aa rd ra');
    }
  });

  it('forwards names outside the domain upstream, and answers SERVFAIL when the upstream is silent', async () => {
    expect(await resolver.resolve4('outside.example')).toEqual(['192.0.2.7']);
    expect(upstream.asked).toContain('outside.example');
    const t0 = performance.now();
    const err = await resolver.resolve4('silent.example').catch((e) => e);
    expect(err.code).toBe('ESERVFAIL');
    expect(performance.now() - t0).toBeLessThan(900); // the 300 ms forward timeout, not the client's
    if (HAVE_DIG) {
      expect((await dig('+short', 'outside.example')).trim()).toBe('192.0.2.7');
      expect(await dig('silent.example')).toContain('status: SERVFAIL');
      expect((await dig('+tcp', '+short', 'outside.example')).trim()).toBe('192.0.2.7');
    }
  });

  it('answers over TCP, several queries on one connection', async () => {
    await launch('db-1', 'db', [[31010, 31010]]);
    await until(() => resolver.resolve4('db.my-framework.cairn'), (r) => Array.isArray(r));
    if (HAVE_DIG) {
      expect(await dig('+tcp', 'db.my-framework.cairn')).toContain('(TCP)');
      expect((await dig('+tcp', '+short', 'db.my-framework.cairn')).trim()).toBe('127.0.0.1');
    }
    const socket = net.connect(master.dnsPort, '127.0.0.1');
    await new Promise((r) => socket.once('connect', r));
    const frame = (id: number, name: string, type: 'A' | 'SRV') => {
      const q = dnsPacket.encode({ type: 'query', id, questions: [{ name, type }] });
      const len = Buffer.alloc(2);
      len.writeUInt16BE(q.length);
      return Buffer.concat([len, q]);
    };
    // Two queries in one write, the second split across two writes.
    const second = frame(2, '_db._tcp.my-framework.cairn', 'SRV');
    socket.write(Buffer.concat([frame(1, 'db.my-framework.cairn', 'A'), second.subarray(0, 5)]));
    await new Promise((r) => setTimeout(r, 20));
    socket.write(second.subarray(5));
    const replies: any[] = [];
    let buf = Buffer.alloc(0);
    await new Promise<void>((resolve) => {
      socket.on('data', (chunk: Buffer) => {
        buf = Buffer.concat([buf, chunk]);
        while (buf.length >= 2 && buf.length >= 2 + buf.readUInt16BE(0)) {
          replies.push(dnsPacket.decode(buf.subarray(2, 2 + buf.readUInt16BE(0))));
          buf = buf.subarray(2 + buf.readUInt16BE(0));
        }
        if (replies.length === 2) resolve();
      });
    });
    socket.destroy();
    expect(replies.map((r) => r.id).sort()).toEqual([1, 2]);
    const byId = new Map(replies.map((r) => [r.id, r]));
    expect(byId.get(1).answers.map((a: any) => a.data)).toEqual(['127.0.0.1']);
    expect(byId.get(2).answers.map((a: any) => a.data.port)).toEqual([31010]);
  });

  it('answers FORMERR to malformed queries or drops them, and goes on answering', async () => {
    const client = dgram.createSocket('udp4');
    await new Promise<void>((r) => client.bind(0, '127.0.0.1', () => r()));
    const replies: Buffer[] = [];
    client.on('message', (m) => replies.push(m));
    const send = (b: Buffer) => new Promise<void>((r) => client.send(b, master.dnsPort, '127.0.0.1', () => r()));
    const header = Buffer.from([0xbe, 0xef, 0x01, 0x00, 0x00, 0x01, 0, 0, 0, 0, 0, 0]); // one question, none there
    await send(header);
    await send(Buffer.from([1, 2, 3])); // too short for a header: dropped
    await send(Buffer.concat([header, Buffer.from([0xc0, 0x0c, 0, 1, 0, 1])])); // a pointer loop as the name
    await send(Buffer.concat([header, Buffer.from([63, 0x61])])); // a label longer than the packet
    await waitFor('two FORMERR answers', () => replies.length >= 3 || undefined, 2000).catch(() => undefined);
    client.close();
    expect(replies).toHaveLength(3);
    for (const r of replies) {
      expect(r.readUInt16BE(0)).toBe(0xbeef);
      expect(r[2] & 0x80).toBe(0x80); // a response
      expect(r[3] & 0x0f).toBe(1); // FORMERR
    }
    if (HAVE_DIG) expect(await dig('+short', 'leader.cairn')).toContain('127.0.0.1');
    expect(await resolver.resolve4('leader.cairn')).toEqual(['127.0.0.1']);
    const metrics = await (await fetch(`${master.url}/metrics`)).text();
    expect(metrics).toMatch(/cairn_dns_responses_total\{rcode="FORMERR"\} 3/);
    expect(metrics).toMatch(/cairn_dns_dropped_total 1/);
  });

  it('serves the mesos-dns HTTP API', async () => {
    await launch('api-1', 'api', [[31020, 31020]]);
    await until(() => resolver.resolve4('api.my-framework.cairn'), (r) => Array.isArray(r));
    const get = async (path: string) => (await fetch(`${master.url}${path}`)).json() as Promise<any>;
    expect(await get('/v1/hosts/api.my-framework.cairn.')).toEqual([{ host: 'api.my-framework.cairn.', ip: '127.0.0.1' }]);
    expect(await get('/v1/hosts/nothing.cairn')).toEqual([{ host: '', ip: '' }]);
    const services = await get('/v1/services/_api._tcp.my-framework.cairn.');
    expect(services).toEqual([{ service: '_api._tcp.my-framework.cairn.', host: expect.stringMatching(/^api-[a-z0-9]{5}-s0\.my-framework\.slave\.cairn\.$/), ip: '127.0.0.1', port: '31020' }]);
    const enumerate = await get('/v1/enumerate');
    expect(enumerate.frameworks).toEqual([{ name: 'My_Framework', tasks: [expect.objectContaining({ name: 'api', id: 'api-1' })] }]);
    expect(enumerate.frameworks[0].tasks[0].records).toContainEqual({ name: 'api.my-framework.cairn.', host: '127.0.0.1', rtype: 'A' });
    expect(await get('/v1/version')).toMatchObject({ Service: 'Cairn-DNS', Version: expect.any(String) });
    expect(await get('/v1/config')).toMatchObject({ Domain: 'cairn', Port: master.dnsPort, Resolvers: [`127.0.0.1:${upstreamPort}`], ExternalOn: true });
    const axfr = await get('/v1/axfr');
    expect(axfr.Records.As['leader.cairn.']).toEqual(['127.0.0.1']);
  });

  it('answers from the registry at once after a restart (no window of NXDOMAIN)', async () => {
    await launch('keep-1', 'keep');
    await until(() => resolver.resolve4('keep.my-framework.cairn'), (r) => Array.isArray(r));
    scheduler.close();
    await agent.close();
    await master.stop();
    await start(dir);
    expect(await resolver.resolve4('keep.my-framework.cairn')).toEqual(['127.0.0.1']);
    // Let afterEach close fresh handles.
    agent = new FakeAgent({ masterUrl: master.url, hostname: 'host-a' });
    scheduler = new RawScheduler(master.url);
  });
});
