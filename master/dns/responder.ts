// Answers DNS queries from the zone: authoritative for the domain, everything else handed
// back to the caller to forward. No sockets here: bytes in, a decision out.
//
// Answers are encoded once per (name, type) and cached as bytes; a hit costs a header
// read, a map lookup and a copy with the request's id and question patched in. The zone
// tells the responder which names changed, and exactly those (and their parents, whose
// existence may have changed) are dropped from the cache, together with every cached
// NXDOMAIN; so an answer is never staler than the zone. Names with several answers get a
// few rotated encodings, served in turn (round-robin, as mesos-dns shuffles).

import dnsPacket, { type Answer, type Packet } from 'dns-packet';
import { ancestorsWithin, inDomain } from './names.ts';
import type { DnsZone } from './zone.ts';
import { answerFlags, emptyAnswer, parseQuery, patchAnswer, QCLASS_ANY, QCLASS_IN, QTYPE, RCODE, udpLimit, type Query, type Rcode } from './wire.ts';

export interface ResponderOptions {
  /** TTL of the zone's records (s). */
  ttlS: number;
  /** How long a resolver may remember that a name does not exist (SOA minimum, s). */
  negativeTtlS: number;
  /** Whether names outside the domain are forwarded (upstream resolvers are configured). */
  forwarding: boolean;
}

export type Transport = 'udp' | 'tcp';

export type Decision =
  | { kind: 'answer'; bytes: Buffer; rcode: number }
  /** Outside the domain: forward the request; `query` is its parsed form. */
  | { kind: 'forward'; query: Query }
  | { kind: 'drop' };

interface CachedAnswer {
  packet: Packet;
  rcode: Rcode;
  /** Encodings with the answers rotated by 0, 1, 2...; built on first use. */
  variants: (Buffer | undefined)[];
  next: number;
  /** Shortened encodings by size limit, for requesters with small UDP buffers. */
  truncated?: Map<number, Buffer>;
}

/** At most this many rotations of one answer set are kept. */
const MAX_VARIANTS = 8;
/** Bounds on the caches: past these the cache is emptied (a flood of random names must not grow memory). */
const MAX_CACHED = 50_000;
const MAX_NEGATIVE = 10_000;
/** Query types whose answers are cached (others are rare and answered afresh). */
const CACHED_TYPES = new Set<number>([QTYPE.A, QTYPE.AAAA, QTYPE.SRV, QTYPE.ANY, QTYPE.SOA, QTYPE.NS]);
/** TCP answers are limited only by the 16-bit length prefix. */
const TCP_LIMIT = 65_535;

export class DnsResponder {
  private readonly cache = new Map<string, CachedAnswer>();
  /** NXDOMAIN answers, dropped wholesale on any change (a new name may now exist). */
  private readonly negative = new Map<string, CachedAnswer>();
  /** Cache keys per name, so that a change drops every type cached for it. */
  private readonly keysByName = new Map<string, string[]>();
  private readonly disposeZoneListener: () => void;

  constructor(
    private readonly zone: DnsZone,
    private readonly opts: ResponderOptions,
  ) {
    this.disposeZoneListener = zone.onChange((names) => this.invalidate(names));
  }

  /** Decides what to do with one request. Never throws on any input. */
  respond(request: Buffer, transport: Transport): Decision {
    const parsed = parseQuery(request);
    if (parsed.kind === 'drop') return { kind: 'drop' };
    if (parsed.kind === 'error') {
      return { kind: 'answer', bytes: emptyAnswer(request, parsed.rcode, { recursionAvailable: this.opts.forwarding }), rcode: parsed.rcode };
    }
    const q = parsed.query;
    if (!inDomain(q.name, this.zone.domain)) {
      if (this.opts.forwarding) return { kind: 'forward', query: q };
      return this.refuse(request, q);
    }
    if ((q.qclass !== QCLASS_IN && q.qclass !== QCLASS_ANY) || q.qtype === QTYPE.AXFR || q.qtype === QTYPE.IXFR || q.qtype === QTYPE.OPT) {
      return this.refuse(request, q);
    }
    if (q.odd) {
      // A label with a dot or a control byte in it: no name of the zone can match.
      const bytes = emptyAnswer(request, RCODE.NXDOMAIN, { question: q, recursionAvailable: this.opts.forwarding, authoritative: true });
      return { kind: 'answer', bytes, rcode: RCODE.NXDOMAIN };
    }
    const cacheable = CACHED_TYPES.has(q.qtype);
    const key = `${q.qtype}/${q.name}`;
    let cached = cacheable ? (this.cache.get(key) ?? this.negative.get(key)) : undefined;
    if (!cached) {
      cached = this.build(q);
      if (cacheable) this.remember(key, q.name, cached);
    }
    const limit = transport === 'udp' ? udpLimit(q) : TCP_LIMIT;
    return { kind: 'answer', bytes: this.finish(cached, request, q, limit), rcode: cached.rcode };
  }

  /** SERVFAIL for a request that could not be forwarded (no upstream answered in time). */
  serverFailure(request: Buffer, q: Query): Buffer {
    return emptyAnswer(request, RCODE.SERVFAIL, { question: q, recursionAvailable: this.opts.forwarding });
  }

  close(): void {
    this.disposeZoneListener();
    this.cache.clear();
    this.negative.clear();
    this.keysByName.clear();
  }

  // ---------------------------------------------------------------- answers

  private refuse(request: Buffer, q: Query): Decision {
    return { kind: 'answer', bytes: emptyAnswer(request, RCODE.REFUSED, { question: q, recursionAvailable: this.opts.forwarding }), rcode: RCODE.REFUSED };
  }

  /** The answer to (name, type), with id 0 and the question in lower case. */
  private build(q: Query): CachedAnswer {
    const zone = this.zone;
    const { ttlS } = this.opts;
    const name = q.name;
    const answers: Answer[] = [];
    const additionals: Answer[] = [];
    const records = zone.lookup(name);
    const any = q.qtype === QTYPE.ANY;
    if (records) {
      if (q.qtype === QTYPE.A || any) for (const ip of records.a) answers.push({ name, type: 'A', ttl: ttlS, data: ip });
      if (q.qtype === QTYPE.AAAA || any) for (const ip of records.aaaa) answers.push({ name, type: 'AAAA', ttl: ttlS, data: ip });
      if (q.qtype === QTYPE.SRV || any) {
        const targets = new Set<string>();
        for (const s of records.srv) {
          answers.push({ name, type: 'SRV', ttl: ttlS, data: { priority: 0, weight: 0, port: s.port, target: s.target } });
          targets.add(s.target);
        }
        // The targets' addresses save the client a second round trip.
        for (const target of targets) {
          const t = zone.lookup(target);
          for (const ip of t?.a ?? []) additionals.push({ name: target, type: 'A', ttl: ttlS, data: ip });
          for (const ip of t?.aaaa ?? []) additionals.push({ name: target, type: 'AAAA', ttl: ttlS, data: ip });
        }
      }
    }
    if (name === zone.domain) {
      if (q.qtype === QTYPE.SOA || any) answers.push(this.soa(ttlS));
      if (q.qtype === QTYPE.NS || any) {
        answers.push({ name, type: 'NS', ttl: ttlS, data: zone.nsName });
        for (const ip of zone.lookup(zone.nsName)?.a ?? []) additionals.push({ name: zone.nsName, type: 'A', ttl: ttlS, data: ip });
      }
    }
    let rcode: Rcode = RCODE.NOERROR;
    const authorities: Answer[] = [];
    if (answers.length === 0) {
      // NODATA for a name that exists (records of another type, or names below it);
      // NXDOMAIN otherwise. Both carry the SOA, whose minimum bounds negative caching.
      if (!zone.exists(name)) rcode = RCODE.NXDOMAIN;
      authorities.push(this.soa(this.opts.negativeTtlS));
    }
    const packet: Packet = {
      type: 'response',
      id: 0,
      flags: answerFlags(rcode, true, this.opts.forwarding),
      // The question's bytes are replaced by the request's own; the type only fixes the length.
      questions: [{ name, type: `UNKNOWN_${q.qtype}` as 'A', class: 'IN' }],
      answers,
      authorities,
      additionals,
    };
    const n = Math.min(answers.length, MAX_VARIANTS);
    return { packet, rcode, variants: new Array<Buffer | undefined>(Math.max(n, 1)), next: 0 };
  }

  private soa(ttl: number): Answer {
    const d = this.zone.domain;
    return {
      name: d,
      type: 'SOA',
      ttl,
      data: {
        mname: this.zone.nsName,
        rname: `root.${this.zone.nsName}`,
        serial: this.zone.serial,
        refresh: 60,
        retry: 600,
        expire: 86_400,
        minimum: this.opts.negativeTtlS,
      },
    };
  }

  private finish(cached: CachedAnswer, request: Buffer, q: Query, limit: number): Buffer {
    const i = cached.variants.length > 1 ? cached.next++ % cached.variants.length : 0;
    let bytes = cached.variants[i];
    if (!bytes) {
      const answers = cached.packet.answers ?? [];
      const rotated = i === 0 ? cached.packet : { ...cached.packet, answers: [...answers.slice(i), ...answers.slice(0, i)] };
      bytes = dnsPacket.encode(rotated);
      cached.variants[i] = bytes;
    }
    const optBytes = q.ednsUdpSize !== undefined ? 11 : 0;
    if (bytes.length + optBytes > limit) {
      cached.truncated ??= new Map();
      let short = cached.truncated.get(limit - optBytes);
      if (!short) cached.truncated.set(limit - optBytes, (short = truncate(cached.packet, limit - optBytes)));
      bytes = short;
    }
    return patchAnswer(bytes, request, q);
  }

  // ---------------------------------------------------------------- cache

  private remember(key: string, name: string, answer: CachedAnswer): void {
    if (answer.rcode === RCODE.NXDOMAIN) {
      if (this.negative.size >= MAX_NEGATIVE) this.negative.clear();
      this.negative.set(key, answer);
      return;
    }
    if (this.cache.size >= MAX_CACHED) {
      this.cache.clear();
      this.keysByName.clear();
    }
    this.cache.set(key, answer);
    const keys = this.keysByName.get(name);
    if (keys) keys.push(key);
    else this.keysByName.set(name, [key]);
  }

  private invalidate(names: ReadonlySet<string>): void {
    this.negative.clear();
    const drop = (name: string) => {
      const keys = this.keysByName.get(name);
      if (!keys) return;
      this.keysByName.delete(name);
      for (const k of keys) this.cache.delete(k);
    };
    for (const name of names) {
      drop(name);
      for (const p of ancestorsWithin(name, this.zone.domain)) drop(p);
    }
    // The apex's SOA carries the serial, which every change moves.
    drop(this.zone.domain);
  }
}

/**
 * The largest answer that fits `limit`: first without the additional section (no TC
 * needed, RFC 2181 §9), then with as many answers as fit and TC set so that the client
 * retries over TCP.
 */
function truncate(packet: Packet, limit: number): Buffer {
  const noExtra = { ...packet, additionals: [] };
  const bytes = dnsPacket.encode(noExtra);
  if (bytes.length <= limit) return bytes;
  const answers = packet.answers ?? [];
  let lo = 0;
  let hi = answers.length;
  const flags = (packet.flags ?? 0) | dnsPacket.TRUNCATED_RESPONSE;
  const encode = (n: number) => dnsPacket.encode({ ...noExtra, flags, answers: answers.slice(0, n), authorities: n === 0 ? [] : noExtra.authorities });
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2);
    if (encode(mid).length <= limit) lo = mid;
    else hi = mid - 1;
  }
  return encode(lo);
}
