// The registry as the master uses it: the state machine fed by a durable command log.
// `submit` hands a command to the log and resolves once the command is durable (committed,
// when the log is replicated) and applied; callers send nothing that depends on a change
// (acks, launches, updates to frameworks) before that. Every replica applies the same
// commands in the same order through `applyCommitted`, so all of them hold the same state;
// only the replica that proposed a command has a promise waiting for it.

import { RegistryStateMachine, type RegistryEvent, type RegistrySnapshot } from './state-machine.ts';
import type { RegistryCommand } from './commands.ts';
import { DURATION_BUCKETS_S, Histogram } from '../../shared/prometheus.ts';

/** Told of each command once it is applied and durable, with the events it produced. */
export type AppliedListener = (command: RegistryCommand, events: RegistryEvent[]) => void;

/** Where commands become durable: a local SQLite log, or the Raft log of a master group. */
export interface CommandLog {
  /** Takes a command to make durable; the log later calls `applyCommitted` with its id. */
  propose(proposalId: string, command: RegistryCommand): void;
  close(): void;
}

interface Waiter {
  resolve: (events: RegistryEvent[]) => void;
  reject: (err: Error) => void;
  /** performance.now() when proposed. */
  proposedAt: number;
}

export class Registry {
  state: RegistryStateMachine;
  private log: CommandLog | undefined;
  private readonly waiting = new Map<string, Waiter>();
  private readonly appliedListeners: AppliedListener[] = [];
  private readonly restoredListeners: (() => void)[] = [];
  private counter = 0;
  private closed = false;
  /** Counts of applied commands by type, for metrics. */
  readonly applied = new Map<string, number>();
  /** From this replica's proposal of a command to its commit and application (Raft's quorum, or the local fsync). */
  readonly commitSeconds = new Histogram(DURATION_BUCKETS_S);

  constructor(
    snapshot: RegistrySnapshot | undefined,
    private readonly proposalPrefix: string,
  ) {
    this.state = snapshot ? RegistryStateMachine.fromSnapshot(snapshot) : new RegistryStateMachine();
  }

  attach(log: CommandLog): void {
    this.log = log;
  }

  submit(command: RegistryCommand): Promise<RegistryEvent[]> {
    if (this.closed || !this.log) return Promise.reject(new Error('registry is closed'));
    const id = `${this.proposalPrefix}:${++this.counter}`;
    const log = this.log;
    return new Promise((resolve, reject) => {
      this.waiting.set(id, { resolve, reject, proposedAt: performance.now() });
      try {
        log.propose(id, command);
      } catch (err) {
        this.waiting.delete(id);
        reject(err as Error);
      }
    });
  }

  /** Applies one durable command; called by the log in commit order on every replica. */
  applyCommitted(command: RegistryCommand, proposalId?: string): RegistryEvent[] {
    const events = this.state.apply(command);
    this.applied.set(command.type, (this.applied.get(command.type) ?? 0) + 1);
    for (const listener of this.appliedListeners) listener(command, events);
    if (proposalId !== undefined) {
      const w = this.waiting.get(proposalId);
      if (w) {
        this.waiting.delete(proposalId);
        this.commitSeconds.observe((performance.now() - w.proposedAt) / 1000);
        w.resolve(events);
      }
    }
    return events;
  }

  /** Replaces the whole state (a snapshot installed from a peer). */
  restore(snapshot: RegistrySnapshot): void {
    this.state = RegistryStateMachine.fromSnapshot(snapshot);
    for (const l of this.restoredListeners) l();
  }

  /** Rejects every proposal still waiting (this replica lost leadership, or is stopping). */
  failPending(err: Error): void {
    for (const w of this.waiting.values()) w.reject(err);
    this.waiting.clear();
  }

  /**
   * Calls `listener` for every command, in log order, right after it is durable and
   * applied: readers that answer from the state (DNS) then never show a change the disk
   * could lose. A listener must not throw (it runs inside the write path). Returns a
   * function that removes the listener.
   */
  onApplied(listener: AppliedListener): () => void {
    this.appliedListeners.push(listener);
    return () => {
      const i = this.appliedListeners.indexOf(listener);
      if (i >= 0) this.appliedListeners.splice(i, 1);
    };
  }

  /** Calls `listener` after the state was replaced wholesale by a snapshot. */
  onRestored(listener: () => void): void {
    this.restoredListeners.push(listener);
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.log?.close();
    this.failPending(new Error('registry is closed'));
  }
}
