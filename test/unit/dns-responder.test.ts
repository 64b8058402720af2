// The DNS responder, bytes in and bytes out: authoritative answers, NXDOMAIN and NODATA
// with the SOA, the zone apex, forwarding decisions, malformed packets, EDNS, truncation,
// the answer cache following zone changes, and round-robin order.

import { beforeEach, describe, expect, it } from 'vitest';
import dnsPacket, { type Packet } from 'dns-packet';
import type { RegistryCommand } from '../../master/registry/commands.ts';
import { RegistryStateMachine } from '../../master/registry/state-machine.ts';
import { DnsResponder, type Decision } from '../../master/dns/responder.ts';
import { DnsZone } from '../../master/dns/zone.ts';

let sm: RegistryStateMachine;
let zone: DnsZone;
let responder: DnsResponder;

function apply(...commands: RegistryCommand[]): void {
  for (const c of commands) zone.applyCommand(c, sm.apply(c), sm);
}

const agentCmd = (id: string, ip: string): RegistryCommand => ({
  type: 'agent_registered',
  agent: { id, hostname: id, ip, httpPort: 5051, resources: 'cpus:64;mem:65536;ports:[31000-32000]', attributes: {}, registeredAtMs: 1 },
  uuids: [],
  atMs: 1,
});
let n = 0;
function runTask(id: string, name: string, agentId: string, resources = 'cpus:1;mem:32'): void {
  apply(
    { type: 'task_launched', task: { id, name, frameworkId: 'f1', agentId, resources, command: { shell: true, value: 'true', arguments: [], environment: [] }, labels: [], killGraceMs: 0, launchedAtMs: 2 }, atMs: 2 },
    { type: 'status_update', taskId: id, state: 'TASK_RUNNING', message: '', reason: '', source: 'SOURCE_AGENT', uuid: `u${n++}`, atMs: 3 },
  );
}
function endTask(id: string): void {
  apply({ type: 'status_update', taskId: id, state: 'TASK_FINISHED', message: '', reason: '', source: 'SOURCE_AGENT', uuid: `u${n++}`, atMs: 4 });
}

function query(name: string, type: string, extra: Partial<Packet> = {}): Buffer {
  return dnsPacket.encode({ type: 'query', id: 4242, flags: dnsPacket.RECURSION_DESIRED, questions: [{ name, type: type as 'A', class: 'IN' }], ...extra });
}

/** A decoded answer; dns-packet's types leave out `rcode` and make records a wide union. */
type Reply = Omit<ReturnType<typeof dnsPacket.decode>, 'answers' | 'authorities' | 'additionals'> & { rcode: string; answers: any[]; authorities: any[]; additionals: any[] };

function answer(d: Decision): Reply {
  expect(d.kind).toBe('answer');
  return dnsPacket.decode((d as Extract<Decision, { kind: 'answer' }>).bytes) as Reply;
}

function ask(name: string, type = 'A', transport: 'udp' | 'tcp' = 'udp', extra: Partial<Packet> = {}) {
  return answer(responder.respond(query(name, type, extra), transport));
}

beforeEach(() => {
  sm = new RegistryStateMachine();
  zone = new DnsZone({ domain: 'cairn', leader: { ip: '10.0.0.1', port: 5050 }, nsIp: '10.0.0.1', serialBase: 7 });
  responder = new DnsResponder(zone, { ttlS: 5, negativeTtlS: 1, forwarding: true });
  apply(agentCmd('a1-S0', '10.0.0.11'), agentCmd('a2-S1', '10.0.0.12'), { type: 'framework_subscribed', framework: { id: 'f1', name: 'jobs', user: 'u', role: '*', principal: '', failoverTimeoutS: 60, registeredAtMs: 1 }, atMs: 1 });
});

describe('DNS responder', () => {
  it('answers A authoritatively, echoing the id, the question as asked and RD', () => {
    runTask('t1', 'web', 'a1-S0');
    const r = ask('Web.Jobs.CAIRN');
    expect(r.id).toBe(4242);
    expect(r.flag_qr).toBe(true);
    expect(r.flag_aa).toBe(true);
    expect(r.flag_rd).toBe(true);
    expect(r.flag_ra).toBe(true);
    expect(r.rcode).toBe('NOERROR');
    expect(r.questions).toEqual([{ name: 'Web.Jobs.CAIRN', type: 'A', class: 'IN' }]);
    expect(r.answers).toEqual([{ name: 'web.jobs.cairn', type: 'A', ttl: 5, class: 'IN', flush: false, data: '10.0.0.11' }]);
  });

  it('answers SRV with the targets\' addresses in the additional section', () => {
    runTask('t1', 'web', 'a1-S0', 'cpus:1;mem:32;ports:[31000-31001]');
    const r = ask('_web._tcp.jobs.cairn', 'SRV');
    expect(r.answers?.map((a) => a.type === 'SRV' && a.data)).toEqual([
      { priority: 0, weight: 0, port: 31000, target: expect.stringMatching(/^web-[a-z0-9]{5}-s0\.jobs\.slave\.cairn$/) },
      { priority: 0, weight: 0, port: 31001, target: expect.stringMatching(/^web-[a-z0-9]{5}-s0\.jobs\.slave\.cairn$/) },
    ]);
    const target = (r.answers![0] as { data: { target: string } }).data.target;
    expect(r.additionals).toEqual([expect.objectContaining({ name: target, type: 'A', data: '10.0.0.11' })]);
  });

  it('answers NXDOMAIN with the SOA for unknown names, NODATA for known names and names above them', () => {
    const nx = ask('nothing.jobs.cairn');
    expect(nx.rcode).toBe('NXDOMAIN');
    expect(nx.answers).toEqual([]);
    expect(nx.authorities).toEqual([expect.objectContaining({ name: 'cairn', type: 'SOA', ttl: 1, data: expect.objectContaining({ mname: 'ns1.cairn', rname: 'root.ns1.cairn', minimum: 1 }) })]);

    runTask('t1', 'web', 'a1-S0');
    for (const [name, type] of [['web.jobs.cairn', 'AAAA'], ['web.jobs.cairn', 'MX'], ['jobs.cairn', 'A'], ['leader.cairn', 'TXT']]) {
      const r = ask(name, type);
      expect([name, type, r.rcode, r.answers]).toEqual([name, type, 'NOERROR', []]);
      expect(r.authorities?.[0]?.type).toBe('SOA');
    }
  });

  it('answers SOA and NS at the apex, and leader names', () => {
    const soa = ask('cairn', 'SOA');
    expect(soa.answers).toEqual([expect.objectContaining({ type: 'SOA', data: expect.objectContaining({ mname: 'ns1.cairn', serial: zone.serial }) })]);
    const ns = ask('cairn', 'NS');
    expect(ns.answers).toEqual([expect.objectContaining({ type: 'NS', data: 'ns1.cairn' })]);
    expect(ns.additionals).toEqual([expect.objectContaining({ name: 'ns1.cairn', type: 'A', data: '10.0.0.1' })]);
    expect(ask('leader.cairn').answers?.map((a) => a.data)).toEqual(['10.0.0.1']);
    expect(ask('_leader._tcp.cairn', 'SRV').answers?.map((a) => a.data)).toEqual([{ priority: 0, weight: 0, port: 5050, target: 'leader.cairn' }]);
    expect(ask('agent.cairn').answers?.map((a) => a.data)).toEqual(['10.0.0.11', '10.0.0.12']);
  });

  it('hands names outside the domain back for forwarding, or refuses them when it cannot forward', () => {
    const d = responder.respond(query('example.com', 'A'), 'udp');
    expect(d.kind).toBe('forward');
    expect(d.kind === 'forward' && d.query.name).toBe('example.com');
    const closed = new DnsResponder(zone, { ttlS: 5, negativeTtlS: 1, forwarding: false });
    const r = answer(closed.respond(query('example.com', 'A'), 'udp'));
    expect(r.rcode).toBe('REFUSED');
    expect(r.flag_ra).toBe(false);
    expect(r.questions).toEqual([{ name: 'example.com', type: 'A', class: 'IN' }]);
  });

  it('answers FORMERR to readable but malformed queries, NOTIMP to other opcodes, and drops the rest', () => {
    const good = query('web.jobs.cairn', 'A');
    const formerr = (bytes: Buffer) => {
      const r = answer(responder.respond(bytes, 'udp'));
      expect(r.rcode).toBe('FORMERR');
      expect(r.id).toBe(4242);
      return r;
    };
    formerr(good.subarray(0, 12)); // header says one question, there is none
    formerr(good.subarray(0, good.length - 2)); // question cut short
    const pointer = Buffer.from(good);
    pointer[12] = 0xc0; // a compression pointer in the question
    formerr(pointer);
    const twoQuestions = Buffer.from(good);
    twoQuestions[5] = 2;
    formerr(twoQuestions);
    const badOpt = Buffer.from(good);
    badOpt[11] = 1; // an additional record that is not there
    formerr(badOpt);
    const update = Buffer.from(good);
    update[2] = (update[2] & 0x87) | (5 << 3); // opcode UPDATE
    expect(answer(responder.respond(update, 'udp')).rcode).toBe('NOTIMP');

    expect(responder.respond(Buffer.alloc(0), 'udp').kind).toBe('drop');
    expect(responder.respond(Buffer.from([1, 2, 3]), 'udp').kind).toBe('drop');
    const response = Buffer.from(good);
    response[2] |= 0x80; // a response, not a query
    expect(responder.respond(response, 'udp').kind).toBe('drop');
    // Random bytes never throw.
    for (let i = 0; i < 2000; i++) {
      const junk = Buffer.from(Array.from({ length: (i % 60) + 1 }, (_, j) => (i * 31 + j * 17) & 0xff));
      expect(() => responder.respond(junk, i % 2 ? 'udp' : 'tcp')).not.toThrow();
    }
  });

  it('answers NXDOMAIN for names with dots or control bytes inside a label', () => {
    const q = Buffer.from(query('ab.jobs.cairn', 'A'));
    q[14] = 0x2e; // 'b' → '.' inside the first label
    const r = answer(responder.respond(q, 'udp'));
    expect(r.rcode).toBe('NXDOMAIN');
  });

  it('echoes EDNS, and truncates over UDP to what the requester can take', () => {
    for (let i = 0; i < 40; i++) {
      const id = `a${i}-S${i}`;
      apply(agentCmd(id, `10.1.0.${i + 1}`));
      runTask(`t${i}`, 'many', id);
    }
    const plain = ask('many.jobs.cairn'); // 512 bytes without EDNS: 40 answers do not fit
    expect(plain.flag_tc).toBe(true);
    expect(plain.answers!.length).toBeGreaterThan(0);
    expect(plain.answers!.length).toBeLessThan(40);
    expect(dnsPacket.encode(plain).length).toBeLessThanOrEqual(512);

    const opt: Partial<Packet> = { additionals: [{ type: 'OPT', name: '.', udpPayloadSize: 4096, extendedRcode: 0, ednsVersion: 0, flags: 0, flag_do: false, options: [] }] };
    const edns = ask('many.jobs.cairn', 'A', 'udp', opt);
    expect(edns.flag_tc).toBe(false);
    expect(edns.answers).toHaveLength(40);
    expect(edns.additionals).toEqual([expect.objectContaining({ type: 'OPT', udpPayloadSize: 1232 })]);

    const tcp = ask('many.jobs.cairn', 'A', 'tcp');
    expect(tcp.flag_tc).toBe(false);
    expect(tcp.answers).toHaveLength(40);
  });

  it('rotates several answers from one query to the next', () => {
    runTask('w1', 'pool', 'a1-S0');
    runTask('w2', 'pool', 'a2-S1');
    const firsts = Array.from({ length: 4 }, () => ask('pool.jobs.cairn').answers![0].data);
    expect(firsts).toEqual(['10.0.0.11', '10.0.0.12', '10.0.0.11', '10.0.0.12']);
  });

  it('never serves a cached answer the zone has moved past', () => {
    expect(ask('svc.jobs.cairn').rcode).toBe('NXDOMAIN'); // cached negative answer
    expect(ask('svc.jobs.cairn').rcode).toBe('NXDOMAIN');
    runTask('s1', 'svc', 'a1-S0');
    expect(ask('svc.jobs.cairn').answers?.map((a) => a.data)).toEqual(['10.0.0.11']); // cached positive answer
    expect(ask('svc.jobs.cairn').answers?.map((a) => a.data)).toEqual(['10.0.0.11']);
    expect(ask('jobs.cairn').rcode).toBe('NOERROR');
    const serial = (ask('cairn', 'SOA').answers![0].data as { serial: number }).serial;
    endTask('s1');
    expect(ask('svc.jobs.cairn').rcode).toBe('NXDOMAIN');
    expect(ask('jobs.cairn').rcode).toBe('NXDOMAIN'); // the parent went with its only child
    expect((ask('cairn', 'SOA').answers![0].data as { serial: number }).serial).toBe(serial + 1);
  });
});
