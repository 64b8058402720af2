// The production transport: the scheduler API over HTTP through the SDK's client, which
// subscribes, follows redirects, resubscribes with its framework id and acknowledges updates.

import type { FrameworkInfo, SchedulerCall } from '../mesos-v1.ts';
import { SchedulerClient, type SchedulerClientOptions } from '../sdk/scheduler-client.ts';
import type { SchedulerTransport, TransportEvents, TransportFactory } from './transport.ts';

class HttpTransport implements SchedulerTransport {
  constructor(private readonly client: SchedulerClient) {}

  get frameworkId(): string | undefined {
    return this.client.frameworkId;
  }

  get connected(): boolean {
    return this.client.connected;
  }

  subscribe(): Promise<string> {
    return this.client.subscribe();
  }

  call(call: SchedulerCall): Promise<void> {
    return this.client.call(call);
  }

  on<E extends keyof TransportEvents>(event: E, listener: TransportEvents[E]): this {
    // The client's events of these names carry the same arguments (and more).
    (this.client.on as (e: string, l: unknown) => unknown)(event, listener);
    return this;
  }

  close(): void {
    this.client.close();
  }
}

/** Transports over HTTP, each with the options `options` gives for its FrameworkInfo. */
export function httpTransport(options: (frameworkInfo: FrameworkInfo) => SchedulerClientOptions): TransportFactory {
  return (frameworkInfo) => new HttpTransport(new SchedulerClient(options(frameworkInfo)));
}
