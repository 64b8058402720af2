// The simulated network between Raft nodes: every message is delayed by a random number of
// steps (so messages overtake each other), may be lost or duplicated, and is dropped on
// delivery if its link is cut at that moment. Links are directed, so partitions can be
// asymmetric (a hears b, b does not hear a).

import type { SeededRandom } from '../../shared/random.ts';
import type { Message, NodeId } from '../../shared/raft/types.ts';

export interface NetworkConditions {
  /** Probability that a message is lost. */
  loss: number;
  /** Probability that a message is delivered twice. */
  duplicate: number;
  /** Delay range in steps, both included; minDelay ≥ 1. */
  minDelay: number;
  maxDelay: number;
}

export const RELIABLE: NetworkConditions = { loss: 0, duplicate: 0, minDelay: 1, maxDelay: 3 };

export interface NetworkStats {
  sent: number;
  lost: number;
  duplicated: number;
  cut: number;
  delivered: number;
}

export class SimNetwork {
  conditions: NetworkConditions = RELIABLE;
  readonly stats: NetworkStats = { sent: 0, lost: 0, duplicated: 0, cut: 0, delivered: 0 };
  private readonly inFlight = new Map<number, Message[]>();
  private readonly blocked = new Set<string>();

  constructor(private readonly rng: SeededRandom) {}

  send(m: Message, now: number): void {
    this.stats.sent++;
    if (this.rng.chance(this.conditions.loss)) {
      this.stats.lost++;
      return;
    }
    this.enqueue(m, now);
    if (this.rng.chance(this.conditions.duplicate)) {
      this.stats.duplicated++;
      this.enqueue(m, now);
    }
  }

  private enqueue(m: Message, now: number): void {
    this.deliverAt(m, now + this.rng.range(this.conditions.minDelay, this.conditions.maxDelay));
  }

  /** Holds a message for a paused receiver until `at` (its bytes sit in a socket buffer meanwhile). */
  deliverAt(m: Message, at: number): void {
    let bucket = this.inFlight.get(at);
    if (bucket === undefined) this.inFlight.set(at, (bucket = []));
    bucket.push(m);
  }

  /** Messages arriving at `now`, in a random order; those on cut links are dropped. */
  arrivals(now: number): Message[] {
    const bucket = this.inFlight.get(now);
    if (bucket === undefined) return [];
    this.inFlight.delete(now);
    for (let i = bucket.length - 1; i > 0; i--) {
      const j = this.rng.int(i + 1);
      [bucket[i], bucket[j]] = [bucket[j], bucket[i]];
    }
    const out: Message[] = [];
    for (const m of bucket) {
      if (this.blocked.has(link(m.from, m.to))) this.stats.cut++;
      else out.push(m);
    }
    this.stats.delivered += out.length;
    return out;
  }

  cut(from: NodeId, to: NodeId): void {
    this.blocked.add(link(from, to));
  }

  /** Splits the nodes into groups that cannot reach each other (both directions). */
  partition(groups: NodeId[][]): void {
    this.blocked.clear();
    for (let a = 0; a < groups.length; a++) {
      for (let b = 0; b < groups.length; b++) {
        if (a === b) continue;
        for (const x of groups[a]) for (const y of groups[b]) this.cut(x, y);
      }
    }
  }

  heal(): void {
    this.blocked.clear();
  }

  get cutLinks(): number {
    return this.blocked.size;
  }

  get pending(): number {
    let n = 0;
    for (const b of this.inFlight.values()) n += b.length;
    return n;
  }
}

function link(from: NodeId, to: NodeId): string {
  return `${from}>${to}`;
}
