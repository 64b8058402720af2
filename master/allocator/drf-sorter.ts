// Dominant Resource Fairness sorter: orders clients by weighted dominant share.
//
// It knows only client names, their weights, what each holds and the cluster total; it knows
// nothing of agents, offers or filters (the allocator is the mechanism around it). A client's
// dominant share is the largest of allocated/total over the scalars cpus, mem, disk and gpus
// (a scalar the cluster has none of is ignored), divided by the client's weight.
//
// Ports are not counted: they are per-agent numbers, so the same range held on two agents
// would merge as a set, and a share of "ports" would mean nothing anyway.
//
// The allocator asks for the order once per agent per cycle and then changes one client's
// allocation, so the order is kept up to date incrementally: a changed client is moved to its
// new place by binary search. Changes that move everyone (the total, a weight) only mark the
// order stale; it is recomputed once, at the next read.

import { CairnError } from '../../shared/errors.ts';
import { Resources, SCALAR_NAMES } from '../../shared/resources.ts';

const SCALARS = SCALAR_NAMES.length;

interface Client {
  readonly name: string;
  weight: number;
  /** Allocated scalars in thousandths, indexed like SCALAR_NAMES. */
  readonly alloc: number[];
  /** Unweighted dominant share; valid only while the sorter is not stale. */
  dominant: number;
  /** dominant / weight: the sort key, with the name as tie-breaker. */
  key: number;
  active: boolean;
}

/** Strict total order: lower weighted share first, then name (names are unique). */
function before(a: Client, b: Client): boolean {
  return a.key < b.key || (a.key === b.key && a.name < b.name);
}

function validateWeight(weight: number): void {
  if (!Number.isFinite(weight) || weight <= 0) {
    throw new CairnError('CAIRN_BAD_REQUEST', `must be a finite number > 0, got ${weight}`, 'weight');
  }
}

export class DrfSorter {
  private readonly clients = new Map<string, Client>();
  /** Active clients; in sort order whenever `unsorted` is false. */
  private order: Client[] = [];
  private readonly total: number[] = new Array<number>(SCALARS).fill(0);
  /** Shares must be recomputed (the total changed). Implies `unsorted`. */
  private stale = false;
  /** `order` must be re-sorted (shares or weights changed for many clients). */
  private unsorted = false;

  add(name: string, weight = 1): void {
    validateWeight(weight);
    if (this.clients.has(name)) throw new CairnError('CAIRN_BAD_REQUEST', `client '${name}' is already in the sorter`, 'client');
    const c: Client = { name, weight, alloc: new Array<number>(SCALARS).fill(0), dominant: 0, key: 0, active: false };
    this.clients.set(name, c);
  }

  remove(name: string): void {
    const c = this.client(name);
    if (c.active) this.deactivate(name);
    this.clients.delete(name);
  }

  has(name: string): boolean {
    return this.clients.has(name);
  }

  /** Active clients are the ones `sort` and `first` return; inactive ones keep their allocation. */
  activate(name: string): void {
    const c = this.client(name);
    if (c.active) return;
    c.active = true;
    if (this.unsorted) this.order.push(c);
    else this.order.splice(this.lowerBound(c, 0, this.order.length), 0, c);
  }

  deactivate(name: string): void {
    const c = this.client(name);
    if (!c.active) return;
    c.active = false;
    const i = this.unsorted ? this.order.indexOf(c) : this.indexOf(c);
    this.order.splice(i, 1);
  }

  isActive(name: string): boolean {
    return this.client(name).active;
  }

  /** Clients in the sorter, active or not. */
  get size(): number {
    return this.clients.size;
  }

  get activeCount(): number {
    return this.order.length;
  }

  setWeight(name: string, weight: number): void {
    validateWeight(weight);
    const c = this.client(name);
    if (c.weight === weight) return;
    c.weight = weight;
    if (!this.stale) c.key = c.dominant / weight;
    if (c.active) this.unsorted = true;
  }

  weight(name: string): number {
    return this.client(name).weight;
  }

  /** The cluster total that shares are relative to. Marks every share stale. */
  setTotal(total: Resources): void {
    let changed = false;
    for (let k = 0; k < SCALARS; k++) {
      const v = total.getMilli(SCALAR_NAMES[k]);
      if (this.total[k] !== v) {
        this.total[k] = v;
        changed = true;
      }
    }
    if (changed) {
      this.stale = true;
      this.unsorted = true;
    }
  }

  /** Adds `resources` (scalars only) to what the client holds. */
  allocated(name: string, resources: Resources): void {
    const c = this.client(name);
    for (let k = 0; k < SCALARS; k++) c.alloc[k] += resources.getMilli(SCALAR_NAMES[k]);
    this.changed(c);
  }

  /** Takes `resources` (scalars only) back from what the client holds; throws if it holds less. */
  unallocated(name: string, resources: Resources): void {
    const c = this.client(name);
    for (let k = 0; k < SCALARS; k++) {
      if (resources.getMilli(SCALAR_NAMES[k]) > c.alloc[k]) {
        throw new CairnError(
          'CAIRN_INSUFFICIENT_RESOURCES',
          `client '${name}' holds ${this.allocation(name).toString() || 'nothing'}, cannot give back ${resources.toString()}`,
        );
      }
    }
    for (let k = 0; k < SCALARS; k++) c.alloc[k] -= resources.getMilli(SCALAR_NAMES[k]);
    this.changed(c);
  }

  /** What the client holds (scalars only). */
  allocation(name: string): Resources {
    const c = this.client(name);
    const init: Record<string, number> = {};
    for (let k = 0; k < SCALARS; k++) init[SCALAR_NAMES[k]] = c.alloc[k] / 1000;
    return Resources.of(init);
  }

  /** Unweighted dominant share, in [0, 1] while allocations stay within the total. */
  share(name: string): number {
    const c = this.client(name);
    this.refresh();
    return c.dominant;
  }

  /** Dominant share divided by weight: what the order is by. */
  weightedShare(name: string): number {
    const c = this.client(name);
    this.refresh();
    return c.key;
  }

  /** Active clients, lowest weighted share first. A fresh array. */
  sort(): string[] {
    this.refresh();
    return this.order.map((c) => c.name);
  }

  /**
   * The first active client, in sort order, that `accept` takes; undefined if none does.
   * Allocates nothing, which matters when called for every agent of a cycle.
   * `accept` must not change this sorter.
   */
  first(accept: (name: string) => boolean): string | undefined {
    this.refresh();
    const order = this.order;
    for (let i = 0; i < order.length; i++) {
      if (accept(order[i].name)) return order[i].name;
    }
    return undefined;
  }

  private client(name: string): Client {
    const c = this.clients.get(name);
    if (c === undefined) throw new CairnError('CAIRN_BAD_REQUEST', `no client '${name}' in the sorter`, 'client');
    return c;
  }

  private dominantShare(c: Client): number {
    let s = 0;
    for (let k = 0; k < SCALARS; k++) {
      const t = this.total[k];
      if (t > 0) {
        const r = c.alloc[k] / t;
        if (r > s) s = r;
      }
    }
    return s;
  }

  /** One client's allocation changed: recompute its share and move it to its place. */
  private changed(c: Client): void {
    if (this.stale) return; // refresh() will recompute everyone
    const dominant = this.dominantShare(c);
    const key = dominant / c.weight;
    if (!c.active || this.unsorted) {
      c.dominant = dominant;
      c.key = key;
      return;
    }
    const from = this.indexOf(c); // searched with the old key
    c.dominant = dominant;
    c.key = key;
    // Everything but c is still in order: find its new place on the side it moved to and
    // shift the clients in between by one.
    // (Plain loops: Array.prototype.copyWithin is far slower on ordinary arrays in V8.)
    const order = this.order;
    if (from + 1 < order.length && before(order[from + 1], c)) {
      const to = this.lowerBound(c, from + 1, order.length) - 1;
      for (let i = from; i < to; i++) order[i] = order[i + 1];
      order[to] = c;
    } else if (from > 0 && before(c, order[from - 1])) {
      const to = this.lowerBound(c, 0, from);
      for (let i = from; i > to; i--) order[i] = order[i - 1];
      order[to] = c;
    }
  }

  /** Index of an active client in a sorted order, by binary search on its current key. */
  private indexOf(c: Client): number {
    const order = this.order;
    const i = this.lowerBound(c, 0, order.length);
    if (order[i] === c) return i;
    // Only reachable if the order invariant was broken; a linear search keeps us correct.
    return order.indexOf(c);
  }

  /** The first index in [lo, hi) of `order` whose client does not sort before c. */
  private lowerBound(c: Client, lo: number, hi: number): number {
    const order = this.order;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (before(order[mid], c)) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  private refresh(): void {
    if (this.stale) {
      for (const c of this.clients.values()) {
        c.dominant = this.dominantShare(c);
        c.key = c.dominant / c.weight;
      }
      this.stale = false;
    }
    if (this.unsorted) {
      this.order.sort((a, b) => (before(a, b) ? -1 : before(b, a) ? 1 : 0));
      this.unsorted = false;
    }
  }
}
