// One framework's subscription: a chunked HTTP response carrying RecordIO-framed JSON
// events, one event per chunk, as Mesos v1's scheduler API does. A framework that stops
// reading it is cut off once its unsent events pass a bound (shared/bounded-stream.ts):
// the stream closes as if it had hung up, and the leader disconnects it.

import type { ServerResponse } from 'node:http';
import { boundedWriter } from '../shared/bounded-stream.ts';
import type { Logger } from '../shared/logger.ts';
import { encodeRecord } from '../shared/recordio.ts';
import type { SchedulerEvent } from '../shared/mesos-v1.ts';

export class EventStream {
  private closed = false;
  private readonly onCloseHandlers: (() => void)[] = [];
  private readonly write: (chunk: Uint8Array) => boolean;
  /** Set once the subscription is durable, for the log of a stream cut for its backlog. */
  frameworkId: string | undefined;

  constructor(
    readonly streamId: string,
    private readonly res: ServerResponse,
    /** Where a stream cut for its backlog is logged; `who` says whose it is. */
    log: Logger,
    who: Record<string, unknown> = {},
    backlogLimitBytes?: number,
  ) {
    this.write = boundedWriter(res, log, () => ({ streamId, frameworkId: this.frameworkId, ...who }), backlogLimitBytes);
    res.on('close', () => this.markClosed());
    res.on('error', () => this.markClosed());
  }

  get isOpen(): boolean {
    return !this.closed;
  }

  /** Whether the 200 went out (with SUBSCRIBED, the first event): until then a failed SUBSCRIBE can still be answered with its error status. */
  get started(): boolean {
    return this.res.headersSent;
  }

  send(event: SchedulerEvent): void {
    if (this.closed) return;
    this.write(encodeRecord(JSON.stringify(event)));
  }

  onClose(handler: () => void): void {
    this.onCloseHandlers.push(handler);
  }

  /** Ends the stream from our side (teardown, failover to a newer subscription). */
  end(): void {
    if (this.closed) return;
    this.res.end();
    this.markClosed();
  }

  private markClosed(): void {
    if (this.closed) return;
    this.closed = true;
    for (const h of this.onCloseHandlers.splice(0)) h();
  }
}
