// Outstanding offers: soft state on the leader, rebuilt from scratch after a restart.
// Each offer is one agent's resources lent to one framework until it is accepted,
// declined, rescinded or times out.

import type { Resources } from '../shared/resources.ts';

export interface OutstandingOffer {
  id: string;
  frameworkId: string;
  agentId: string;
  resources: Resources;
  createdAtMs: number;
}

export class OfferBook {
  private readonly offers = new Map<string, OutstandingOffer>();
  private counter = 0;

  constructor(private readonly prefix: string) {}

  create(frameworkId: string, agentId: string, resources: Resources, nowMs: number): OutstandingOffer {
    const offer = { id: `${this.prefix}-O${++this.counter}`, frameworkId, agentId, resources, createdAtMs: nowMs };
    this.offers.set(offer.id, offer);
    return offer;
  }

  get(id: string): OutstandingOffer | undefined {
    return this.offers.get(id);
  }

  remove(id: string): OutstandingOffer | undefined {
    const o = this.offers.get(id);
    if (o) this.offers.delete(id);
    return o;
  }

  /** Removes and returns the offers matching a predicate. */
  removeWhere(pred: (o: OutstandingOffer) => boolean): OutstandingOffer[] {
    const out: OutstandingOffer[] = [];
    for (const o of this.offers.values()) if (pred(o)) out.push(o);
    for (const o of out) this.offers.delete(o.id);
    return out;
  }

  all(): IterableIterator<OutstandingOffer> {
    return this.offers.values();
  }

  get size(): number {
    return this.offers.size;
  }
}
