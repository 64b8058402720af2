// The body of a normal entry of the masters' Raft log: `{p, c}`, a registry command `c` under
// its proposal id `p`. A member's storage incarnation record (incarnations.ts) has the same
// shape, with an empty proposal id, and is taken out here for the replication layer, so the
// registry never sees it. A body of no kind known (not JSON, no command) is told apart, so
// that every master skips it alike rather than stopping.

import type { RegistryCommand } from '../registry/commands.ts';
import { asIncarnationRecord, INCARNATION_RECORD, type IncarnationRecord } from './incarnations.ts';

const encoder = new TextEncoder();
const decoder = new TextDecoder();

export type LogEntryBody =
  | { kind: 'command'; proposal: string | undefined; command: RegistryCommand }
  | { kind: 'incarnation'; record: IncarnationRecord }
  | { kind: 'unknown' };

export function encodeCommandEntry(proposal: string, command: RegistryCommand | IncarnationRecord): Uint8Array {
  return encoder.encode(JSON.stringify({ p: proposal, c: command }));
}

export function encodeIncarnationEntry(record: IncarnationRecord): Uint8Array {
  return encodeCommandEntry('', record);
}

export function readLogEntry(data: Uint8Array): LogEntryBody {
  let body: unknown;
  try {
    body = JSON.parse(decoder.decode(data));
  } catch {
    return { kind: 'unknown' };
  }
  if (typeof body !== 'object' || body === null) return { kind: 'unknown' };
  const { p, c } = body as { p?: unknown; c?: unknown };
  const record = asIncarnationRecord(c);
  if (record !== undefined) return { kind: 'incarnation', record };
  const type = typeof c === 'object' && c !== null ? (c as { type?: unknown }).type : undefined;
  // A malformed record is no command either: the registry never sees one.
  if (typeof type !== 'string' || type === INCARNATION_RECORD) return { kind: 'unknown' };
  return { kind: 'command', proposal: typeof p === 'string' ? p : undefined, command: c as RegistryCommand };
}
