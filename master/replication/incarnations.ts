// Each master's storage incarnation (a random id made with its raft.sqlite) as this master
// knows it, in pure code shared by the daemon's shell (raft-log.ts) and the cluster
// simulation. Two sources, the group's first:
//   - the group's record, replicated in the log: the leader proposes (id -> incarnation) for
//     every member, itself included, it has no record of; applying it records it on every
//     master, and snapshots carry the records, so a master added later — which may never
//     hear from some members — knows them all the same;
//   - first sight here, for a member with no record yet (a fresh handshake pins it).
// A member presenting another incarnation than the one known lost its storage: nothing it
// says counts until an operator removes it and adds it back. Removing or adding a member
// forgets both, so the member's next incarnation is recorded afresh.
//
// The record travels as a registry-shaped command the replication layer takes out before the
// registry sees it; a master from before records existed applies it as a command it does not
// know, which changes nothing there.

import type { ConfChange, NodeId } from '../../shared/raft/types.ts';

export const INCARNATION_RECORD = 'member_incarnation';

/** The log's record of one member's storage incarnation. */
export interface IncarnationRecord {
  readonly type: typeof INCARNATION_RECORD;
  readonly id: NodeId;
  readonly incarnation: string;
}

/** Changes to persist in the member's own table (undefined: forget the id). */
export type IncarnationChanges = [NodeId, string | undefined][];

/** `command` as an incarnation record, if it is one (and well formed). */
export function asIncarnationRecord(command: unknown): IncarnationRecord | undefined {
  if (typeof command !== 'object' || command === null) return undefined;
  const c = command as Record<string, unknown>;
  if (c.type !== INCARNATION_RECORD) return undefined;
  if (typeof c.id !== 'number' || !Number.isSafeInteger(c.id) || c.id <= 0) return undefined;
  if (typeof c.incarnation !== 'string' || c.incarnation === '') return undefined;
  return { type: INCARNATION_RECORD, id: c.id, incarnation: c.incarnation };
}

/** The records a snapshot holds (none in a snapshot from before records existed). */
export function recordsFromSnapshot(records: unknown): Map<NodeId, string> {
  const out = new Map<NodeId, string>();
  if (!Array.isArray(records)) return out;
  for (const r of records) {
    if (!Array.isArray(r)) continue;
    const rec = asIncarnationRecord({ type: INCARNATION_RECORD, id: r[0], incarnation: r[1] });
    if (rec) out.set(rec.id, rec.incarnation);
  }
  return out;
}

export class MemberIncarnations {
  /** From the log, as of the applied index. */
  private records: Map<NodeId, string>;
  /** Records proposed by this master while it leads, until applied or its leadership ends. */
  private readonly proposed = new Set<NodeId>();

  /**
   * `seen`: this master's own table (first sight, and every record applied), as persisted;
   * it is changed in place. `recorded`: the records of the snapshot this master starts from.
   */
  constructor(
    private readonly seen: Map<NodeId, string>,
    recorded: ReadonlyMap<NodeId, string> = new Map(),
  ) {
    this.records = new Map(recorded);
  }

  /** The incarnation `id` is known by: the group's record, else the first seen here. */
  known(id: NodeId): string | undefined {
    return this.records.get(id) ?? this.seen.get(id);
  }

  /** The incarnation the log records for `id`, if any. */
  recorded(id: NodeId): string | undefined {
    return this.records.get(id);
  }

  /**
   * `id` presented `incarnation`. Admitted when it is the one known; with none known, it is
   * admitted and — `pinnable`: a fresh handshake of a current member — pinned as first seen.
   */
  admit(id: NodeId, incarnation: string, pinnable: boolean): { admitted: boolean; changes: IncarnationChanges } {
    const known = this.known(id);
    if (known === incarnation) return { admitted: true, changes: [] };
    if (known !== undefined) return { admitted: false, changes: [] };
    if (!pinnable) return { admitted: true, changes: [] };
    this.seen.set(id, incarnation);
    return { admitted: true, changes: [[id, incarnation]] };
  }

  /**
   * Applies a committed record. The first record of a member since it was added stands
   * (a later one, for the same membership, can only name storage made again); a record of
   * an id that is no member at its index (removed meanwhile) is ignored.
   */
  record(rec: IncarnationRecord, isMember: boolean): IncarnationChanges {
    this.proposed.delete(rec.id);
    if (!isMember || this.records.has(rec.id)) return [];
    this.records.set(rec.id, rec.incarnation);
    if (this.seen.get(rec.id) === rec.incarnation) return [];
    this.seen.set(rec.id, rec.incarnation);
    return [[rec.id, rec.incarnation]];
  }

  /** A membership change applied: a member removed or added (again) is learnt afresh. */
  confChange(cc: ConfChange, self: NodeId): IncarnationChanges {
    if (cc.type !== 'remove' && cc.type !== 'addLearner') return [];
    this.records.delete(cc.nodeId);
    this.proposed.delete(cc.nodeId);
    if (cc.nodeId === self || !this.seen.has(cc.nodeId)) return [];
    this.seen.delete(cc.nodeId);
    return [[cc.nodeId, undefined]];
  }

  /**
   * A snapshot from the leader replaced the log: its records are the group's. First-sight
   * pins are dropped with the history this master missed (a member may have been removed
   * and added back in it); members with no record are learnt afresh.
   */
  restore(recorded: ReadonlyMap<NodeId, string>): IncarnationChanges {
    this.records = new Map(recorded);
    this.proposed.clear();
    const changes: IncarnationChanges = [];
    for (const id of this.seen.keys()) if (!recorded.has(id)) changes.push([id, undefined]);
    for (const [id, inc] of recorded) if (this.seen.get(id) !== inc) changes.push([id, inc]);
    for (const [id, inc] of changes) {
      if (inc === undefined) this.seen.delete(id);
      else this.seen.set(id, inc);
    }
    return changes;
  }

  /** The records, for a snapshot. */
  snapshotRecords(): [NodeId, string][] {
    return [...this.records];
  }

  /**
   * On the leader: the records to propose now — each member (`members`, this one included)
   * with no record whose incarnation is known here and not already proposed.
   */
  due(members: readonly NodeId[], self: NodeId, ownIncarnation: string): IncarnationRecord[] {
    const out: IncarnationRecord[] = [];
    for (const id of members) {
      if (this.records.has(id) || this.proposed.has(id)) continue;
      const incarnation = id === self ? ownIncarnation : this.seen.get(id);
      if (incarnation === undefined || incarnation === '') continue;
      this.proposed.add(id);
      out.push({ type: INCARNATION_RECORD, id, incarnation });
    }
    return out;
  }

  /** A record could not be proposed (or this master stopped leading): it may be proposed again. */
  withdraw(id?: NodeId): void {
    if (id === undefined) this.proposed.clear();
    else this.proposed.delete(id);
  }
}
