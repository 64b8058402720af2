// A leader's ReadIndex rounds. A read may be served at index I once the leader has shown
// it was still leader after the read arrived (a quorum answered a heartbeat sent after it)
// and I, the commit index when it arrived, is applied. Each round is one heartbeat
// broadcast tagged with the round's number; a quorum on a later round also confirms every
// earlier one, so rounds complete in order.

import type { NodeId } from './types.ts';

/** Who asked (this node or a follower) and the tag they will recognise the answer by. */
export interface ReadRequest {
  readonly from: NodeId;
  readonly context: Uint8Array;
}

interface Round {
  readonly id: number;
  readonly index: number;
  readonly acks: Set<NodeId>;
  readonly requests: ReadRequest[];
}

export class ReadIndexRounds {
  private rounds: Round[] = [];
  private nextId = 1;

  /** Starts a round for `request` at commit index `index`; returns the tag to send in heartbeats. */
  start(index: number, request: ReadRequest, self: NodeId): Uint8Array {
    const id = this.nextId++;
    this.rounds.push({ id, index, acks: new Set([self]), requests: [request] });
    return encodeRoundTag(id);
  }

  /**
   * Records a heartbeat answer carrying `tag`. When `confirmed(acks)` says the round has a
   * quorum, returns that round and all earlier ones with their read index, and forgets them.
   */
  ack(from: NodeId, tag: Uint8Array, confirmed: (acks: ReadonlySet<NodeId>) => boolean): { index: number; requests: ReadRequest[] }[] {
    const id = decodeRoundTag(tag);
    if (id === undefined) return [];
    const at = this.rounds.findIndex((r) => r.id === id);
    if (at < 0) return [];
    const round = this.rounds[at];
    round.acks.add(from);
    if (!confirmed(round.acks)) return [];
    const done = this.rounds.slice(0, at + 1);
    this.rounds = this.rounds.slice(at + 1);
    return done.map((r) => ({ index: r.index, requests: r.requests }));
  }

  get pending(): number {
    return this.rounds.length;
  }

  /** Forgets everything (leadership lost): the readers time out and retry elsewhere. */
  clear(): void {
    this.rounds = [];
  }
}

function encodeRoundTag(id: number): Uint8Array {
  const out = new Uint8Array(8);
  new DataView(out.buffer).setFloat64(0, id);
  return out;
}

function decodeRoundTag(tag: Uint8Array): number | undefined {
  if (tag.length !== 8) return undefined;
  const id = new DataView(tag.buffer, tag.byteOffset, 8).getFloat64(0);
  return Number.isSafeInteger(id) && id > 0 ? id : undefined;
}
