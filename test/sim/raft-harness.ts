// A small, synchronous Raft group for focused tests: nodes over MemoryStorage, a message
// queue the test delivers by hand (optionally dropping some), and each node's applied
// commands and confirmed reads. Ready handling follows the documented order: persist,
// send, apply, advance.

import { RaftNode } from '../../shared/raft/node.ts';
import { MemoryStorage } from '../../shared/raft/memory-storage.ts';
import { SeededRandom } from '../../shared/random.ts';
import { decodeConfChange } from '../../shared/raft/confchange.ts';
import type { RaftOptions } from '../../shared/raft/config.ts';
import type { ConfState, Entry, Message, NodeId, ReadState } from '../../shared/raft/types.ts';

export class HarnessNode {
  node: RaftNode;
  /** Commands applied, in order (the leader's empty no-ops left out). */
  applied: string[] = [];
  appliedEntries: Entry[] = [];
  readStates: ReadState[] = [];
  config: ConfState;
  up = true;

  constructor(
    readonly id: NodeId,
    readonly storage: MemoryStorage,
    private readonly options: Partial<RaftOptions>,
    seed: number,
  ) {
    this.node = new RaftNode({ id, random: new SeededRandom(seed), ...options }, storage);
    this.config = storage.snapshot().metadata.confState;
  }

  /** Restarts from what is on (simulated) disk, as after a crash. */
  restart(seed: number): void {
    this.node = new RaftNode({ id: this.id, random: new SeededRandom(seed), ...this.options }, this.storage);
    this.applied = [];
    this.appliedEntries = [];
    this.readStates = [];
    this.config = this.storage.snapshot().metadata.confState;
    this.up = true;
  }

  /** Handles every pending Ready; returns the messages to send. */
  drain(): Message[] {
    const out: Message[] = [];
    while (this.node.hasReady()) {
      const rd = this.node.ready();
      if (rd.snapshot) this.storage.applySnapshot(rd.snapshot);
      this.storage.append(rd.entries);
      if (rd.hardState) this.storage.setHardState(rd.hardState);
      out.push(...rd.messages);
      if (rd.snapshot) {
        this.config = rd.snapshot.metadata.confState;
        this.applied.push(`<snapshot ${rd.snapshot.metadata.index}>`);
      }
      for (const e of rd.committedEntries) {
        this.appliedEntries.push(e);
        if (e.type === 'confChange') this.config = this.node.applyConfChange(decodeConfChange(e.data));
        else if (e.data.length > 0) this.applied.push(new TextDecoder().decode(e.data));
      }
      this.readStates.push(...rd.readStates);
      this.node.advance();
    }
    return out;
  }
}

export interface HarnessOptions extends Partial<RaftOptions> {
  seed?: number;
}

export class RaftHarness {
  readonly nodes = new Map<NodeId, HarnessNode>();
  queue: Message[] = [];
  /** Messages for which this returns true are dropped on delivery. */
  drop: (m: Message) => boolean = () => false;
  /** Every message delivered, for assertions. */
  delivered: Message[] = [];
  private seed: number;

  constructor(
    voters: NodeId[],
    readonly options: HarnessOptions = {},
  ) {
    this.seed = options.seed ?? 1;
    for (const id of voters) {
      const storage = new MemoryStorage();
      storage.bootstrap(voters);
      this.nodes.set(id, new HarnessNode(id, storage, options, this.seed * 1000 + id));
    }
  }

  /** Adds a node with empty storage (to be added to the group as a learner). */
  addEmptyNode(id: NodeId): HarnessNode {
    const n = new HarnessNode(id, new MemoryStorage(), this.options, this.seed * 1000 + id);
    this.nodes.set(id, n);
    return n;
  }

  get(id: NodeId): HarnessNode {
    const n = this.nodes.get(id);
    if (n === undefined) throw new Error(`no node ${id}`);
    return n;
  }

  /** Collects every node's Ready output into the queue. */
  flush(): void {
    for (const n of this.nodes.values()) {
      if (n.up) this.queue.push(...n.drain());
    }
  }

  /** Delivers queued messages until the group is quiet (bounded). */
  deliverAll(maxRounds = 1000): void {
    for (let round = 0; round < maxRounds; round++) {
      this.flush();
      if (this.queue.length === 0) return;
      const batch = this.queue;
      this.queue = [];
      for (const m of batch) {
        const to = this.nodes.get(m.to);
        if (to === undefined || !to.up || this.drop(m)) continue;
        this.delivered.push(m);
        to.node.step(m);
      }
    }
    throw new Error('deliverAll: the group did not go quiet');
  }

  /** Ticks the given nodes (all by default) `n` times, delivering after each tick. */
  tick(n = 1, ids?: NodeId[]): void {
    for (let i = 0; i < n; i++) {
      for (const node of this.nodes.values()) {
        if (node.up && (ids === undefined || ids.includes(node.id))) node.node.tick();
      }
      this.deliverAll();
    }
  }

  /** Makes `id` campaign now and delivers until quiet. */
  elect(id: NodeId): void {
    this.get(id).node.campaign();
    this.deliverAll();
  }

  leaders(): NodeId[] {
    return [...this.nodes.values()].filter((n) => n.up && n.node.status().role === 'leader').map((n) => n.id);
  }

  propose(id: NodeId, command: string): number {
    const index = this.get(id).node.propose(new TextEncoder().encode(command));
    this.deliverAll();
    return index;
  }

  /** Cuts `ids` off from everyone else (both directions). */
  isolate(...ids: NodeId[]): void {
    const cut = new Set(ids);
    this.drop = (m) => cut.has(m.from) !== cut.has(m.to);
  }

  heal(): void {
    this.drop = () => false;
  }
}
