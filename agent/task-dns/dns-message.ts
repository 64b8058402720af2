// The little of a DNS message the task resolver reads and writes itself (pure): the question's
// name, to route the query, and the error replies it answers on its own. Everything else it
// passes through unchanged.

/** The question of a query: its name (lower case, no trailing dot) and where it ends. */
export interface Question {
  name: string;
  /** The offset just past QTYPE and QCLASS. */
  end: number;
}

/**
 * The first question of `msg`, or undefined when the message is not a query with one
 * readable question (compression pointers never appear in a query's question).
 */
export function readQuestion(msg: Buffer): Question | undefined {
  if (msg.length < 12 || msg[2] & 0x80 || msg.readUInt16BE(4) < 1) return undefined;
  const labels: string[] = [];
  let i = 12;
  for (;;) {
    if (i >= msg.length) return undefined;
    const len = msg[i];
    if (len === 0) break;
    if (len > 63 || i + 1 + len > msg.length) return undefined;
    labels.push(msg.toString('latin1', i + 1, i + 1 + len).toLowerCase());
    i += 1 + len;
  }
  const end = i + 1 + 4;
  if (end > msg.length) return undefined;
  return { name: labels.join('.'), end };
}

/** RCODEs the resolver answers itself. */
export const RCODE = { FORMERR: 1, SERVFAIL: 2 } as const;

/**
 * A reply to `query` carrying only its question and `rcode` (recursion available; the
 * query's own id, opcode and RD bit kept). `questionEnd` 12: no question is echoed.
 */
export function errorReply(query: Buffer, questionEnd: number, rcode: number): Buffer {
  const out = Buffer.alloc(questionEnd);
  query.copy(out, 0, 0, questionEnd);
  out[2] = 0x80 | (query[2] & 0x79); // QR, the query's opcode and RD
  out[3] = 0x80 | (rcode & 0x0f); // RA
  out.writeUInt16BE(questionEnd > 12 ? 1 : 0, 4);
  out.writeUInt16BE(0, 6);
  out.writeUInt16BE(0, 8);
  out.writeUInt16BE(0, 10);
  return out;
}

/** Whether `name` is `domain` or below it. */
export function inZone(name: string, domain: string): boolean {
  return name === domain || name.endsWith(`.${domain}`);
}
