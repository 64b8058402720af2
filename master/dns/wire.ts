// The few DNS wire operations on the hot path, done on the bytes: read a query's header,
// question and EDNS size without building objects, and patch a cached answer for one
// request (id, RD/CD, the question's letter case, an OPT record). Everything else —
// building answers, reading upstream replies in tests — goes through dns-packet.
// Every read is bounds-checked: a malformed packet gives a 'formerr' or 'drop' result,
// never an exception.

export const RCODE = { NOERROR: 0, FORMERR: 1, SERVFAIL: 2, NXDOMAIN: 3, NOTIMP: 4, REFUSED: 5 } as const;
export type Rcode = (typeof RCODE)[keyof typeof RCODE];

export const QTYPE = { A: 1, NS: 2, SOA: 6, AAAA: 28, SRV: 33, OPT: 41, IXFR: 251, AXFR: 252, ANY: 255 } as const;
export const QCLASS_IN = 1;
export const QCLASS_ANY = 255;

const HEADER = 12;
const QR = 0x8000;
const AA = 0x0400;
const TC = 0x0200;
const RD = 0x0100;
const RA = 0x0080;
const CD = 0x0010;

/** What the server says about its own UDP payload size in OPT records (the DNS flag day 2020 value). */
export const EDNS_UDP_SIZE = 1232;

export interface Query {
  id: number;
  opcode: number;
  /** Lower-case name without the trailing dot ('' for the root). */
  name: string;
  /** A label holds a dot or a byte outside printable ASCII: no zone name can match it. */
  odd: boolean;
  /** Offset just past the question name's final zero byte. */
  nameEnd: number;
  /** Offset just past QTYPE and QCLASS. */
  questionEnd: number;
  qtype: number;
  qclass: number;
  /** The requester's EDNS UDP payload size, when it sent an OPT record. */
  ednsUdpSize: number | undefined;
}

export type ParsedPacket =
  | { kind: 'query'; query: Query }
  /** The header is readable but the rest is not a query we understand. */
  | { kind: 'error'; rcode: Rcode; id: number }
  /** Too short to answer, or a response (answering responses invites loops). */
  | { kind: 'drop' };

/** Reads a query. Never throws. */
export function parseQuery(buf: Uint8Array): ParsedPacket {
  if (buf.length < HEADER) return { kind: 'drop' };
  const id = (buf[0] << 8) | buf[1];
  const flags = (buf[2] << 8) | buf[3];
  if (flags & QR) return { kind: 'drop' };
  const opcode = (flags >> 11) & 0xf;
  if (opcode !== 0) return { kind: 'error', rcode: RCODE.NOTIMP, id };
  const qd = (buf[4] << 8) | buf[5];
  const an = (buf[6] << 8) | buf[7];
  const ns = (buf[8] << 8) | buf[9];
  const ar = (buf[10] << 8) | buf[11];
  if (qd !== 1) return { kind: 'error', rcode: RCODE.FORMERR, id };

  // The question name: plain labels only (a compression pointer has nothing to point to).
  let off = HEADER;
  let name = '';
  let odd = false;
  for (;;) {
    if (off >= buf.length) return { kind: 'error', rcode: RCODE.FORMERR, id };
    const len = buf[off];
    if (len === 0) {
      off++;
      break;
    }
    if (len & 0xc0 || off + 1 + len > buf.length || off + 1 + len - HEADER > 255) return { kind: 'error', rcode: RCODE.FORMERR, id };
    let label = '';
    for (let i = off + 1; i <= off + len; i++) {
      let c = buf[i];
      if (c >= 65 && c <= 90) c += 32;
      else if (c === 46 || c < 33 || c > 126) odd = true;
      label += String.fromCharCode(c);
    }
    name = name === '' ? label : `${name}.${label}`;
    off += 1 + len;
  }
  const nameEnd = off;
  if (off + 4 > buf.length) return { kind: 'error', rcode: RCODE.FORMERR, id };
  const qtype = (buf[off] << 8) | buf[off + 1];
  const qclass = (buf[off + 2] << 8) | buf[off + 3];
  off += 4;
  const questionEnd = off;

  // Look for an OPT record among the other sections, skipping whatever else is there.
  let ednsUdpSize: number | undefined;
  for (let i = 0; i < an + ns + ar; i++) {
    const after = skipName(buf, off);
    if (after < 0 || after + 10 > buf.length) return { kind: 'error', rcode: RCODE.FORMERR, id };
    const type = (buf[after] << 8) | buf[after + 1];
    const rdlen = (buf[after + 8] << 8) | buf[after + 9];
    if (after + 10 + rdlen > buf.length) return { kind: 'error', rcode: RCODE.FORMERR, id };
    if (type === QTYPE.OPT) {
      if (ednsUdpSize !== undefined || i < an + ns) return { kind: 'error', rcode: RCODE.FORMERR, id };
      ednsUdpSize = (buf[after + 2] << 8) | buf[after + 3];
    }
    off = after + 10 + rdlen;
  }
  return { kind: 'query', query: { id, opcode, name, odd, nameEnd, questionEnd, qtype, qclass, ednsUdpSize } };
}

/** Offset after a (possibly compressed) name starting at `off`, or -1. */
function skipName(buf: Uint8Array, off: number): number {
  for (let hops = 0; hops < 128; hops++) {
    if (off >= buf.length) return -1;
    const len = buf[off];
    if (len === 0) return off + 1;
    if ((len & 0xc0) === 0xc0) return off + 2 <= buf.length ? off + 2 : -1;
    if (len & 0xc0) return -1;
    off += 1 + len;
  }
  return -1;
}

/** The largest response a requester can take over UDP (RFC 1035 512, or its EDNS size). */
export function udpLimit(q: Query): number {
  if (q.ednsUdpSize === undefined) return 512;
  return Math.min(Math.max(q.ednsUdpSize, 512), 4096);
}

const OPT_RR = Buffer.from([0, 0, QTYPE.OPT, EDNS_UDP_SIZE >> 8, EDNS_UDP_SIZE & 0xff, 0, 0, 0, 0, 0, 0]);

/**
 * A cached answer (id 0, the question in lower case, RD/CD clear, no OPT) made into the
 * answer to one request: its id, its RD and CD bits, its question bytes as sent (resolvers
 * that randomise letter case check them; the class too), and an OPT record when it sent one.
 */
export function patchAnswer(cached: Uint8Array, request: Uint8Array, q: Query): Buffer {
  const edns = q.ednsUdpSize !== undefined;
  const out = Buffer.allocUnsafe(cached.length + (edns ? OPT_RR.length : 0));
  out.set(cached, 0);
  out[0] = request[0];
  out[1] = request[1];
  out[2] = (out[2] & ~(RD >> 8)) | (request[2] & (RD >> 8));
  out[3] = (out[3] & ~CD) | (request[3] & CD);
  out.set(request.subarray(HEADER, q.questionEnd), HEADER);
  if (edns) {
    out.set(OPT_RR, cached.length);
    const ar = ((out[10] << 8) | out[11]) + 1;
    out[10] = ar >> 8;
    out[11] = ar & 0xff;
  }
  return out;
}

/**
 * An answer with no records, built from the request's own bytes: its id and opcode, RD
 * and CD copied, the question echoed when `question` is set (and readable), an OPT record
 * when the request had one.
 */
export function emptyAnswer(request: Uint8Array, rcode: Rcode, opts: { question?: Query; recursionAvailable: boolean; authoritative?: boolean }): Buffer {
  const q = opts.question;
  const questionBytes = q ? request.subarray(HEADER, q.questionEnd) : new Uint8Array(0);
  const edns = q?.ednsUdpSize !== undefined;
  const out = Buffer.alloc(HEADER + questionBytes.length + (edns ? OPT_RR.length : 0));
  const reqFlags = (request[2] << 8) | request[3];
  let flags = QR | (reqFlags & 0x7800) | (reqFlags & RD) | (reqFlags & CD) | rcode;
  if (opts.recursionAvailable) flags |= RA;
  if (opts.authoritative) flags |= AA;
  out[0] = request[0];
  out[1] = request[1];
  out[2] = flags >> 8;
  out[3] = flags & 0xff;
  out[5] = q ? 1 : 0;
  out.set(questionBytes, HEADER);
  if (edns) {
    out.set(OPT_RR, HEADER + questionBytes.length);
    out[11] = 1;
  }
  return out;
}

/** Header flags for an answer the server builds (id and RD/CD are patched per request). */
export function answerFlags(rcode: Rcode, authoritative: boolean, recursionAvailable: boolean, truncated = false): number {
  return (authoritative ? AA : 0) | (recursionAvailable ? RA : 0) | (truncated ? TC : 0) | rcode;
}

/** The rcode of a response (low four bits of the flags). */
export function rcodeOf(response: Uint8Array): number {
  return response.length >= 4 ? response[3] & 0xf : RCODE.SERVFAIL;
}
