// One framework's subscription: a chunked HTTP response carrying RecordIO-framed JSON
// events, one event per chunk, as Mesos v1's scheduler API does.

import type { ServerResponse } from 'node:http';
import { encodeRecord } from '../../shared/recordio.ts';
import type { SchedulerEvent } from '../../shared/mesos-v1.ts';

export class EventStream {
  private closed = false;
  private readonly onCloseHandlers: (() => void)[] = [];

  constructor(
    readonly streamId: string,
    private readonly res: ServerResponse,
  ) {
    res.on('close', () => this.markClosed());
    res.on('error', () => this.markClosed());
  }

  get isOpen(): boolean {
    return !this.closed;
  }

  send(event: SchedulerEvent): void {
    if (this.closed) return;
    this.res.write(encodeRecord(JSON.stringify(event)));
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
