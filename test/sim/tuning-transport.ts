// The framework runtime's SchedulerTransport (shared/framework-runtime/transport.ts) to the
// tuning simulation's master (tuning-master.ts): what the production tuning runtime runs on
// there, in place of HTTP. Calls and events each take a fixed one-way delay on the simulated
// clock and keep their order; nothing is lost, since this simulation measures scheduling
// (cluster.sim.ts loses, duplicates and delays calls over its network). Calls are parsed by
// the master's own parser (master/scheduler-calls.ts), as an HTTP body would be; updates are
// acknowledged once their listeners are done, as the production transport does.

import type { FrameworkInfo, SchedulerCall, SchedulerEvent } from '../../shared/mesos-v1.ts';
import type { SchedulerTransport, TransportEvents } from '../../shared/framework-runtime/transport.ts';
import { parseSchedulerCall, type FrameworkSpec, type SchedulerCallParsed } from '../../master/scheduler-calls.ts';
import type { SimClock } from './cluster-clock.ts';
import { TransportListeners } from './transport-events.ts';

/** What the transport needs of the master: a subscription taken, and a call handled. */
export interface SchedulerEndpoint {
  subscribe(framework: FrameworkSpec, stream: TuningSimTransport): void;
  handle(call: SchedulerCallParsed): void;
}

export class TuningSimTransport implements SchedulerTransport {
  frameworkId: string | undefined;
  private subscribed = false;
  private closed = false;
  private first: ((id: string) => void) | undefined;
  private readonly events = new TransportListeners();

  constructor(
    private readonly clock: SimClock,
    private readonly master: SchedulerEndpoint,
    private readonly info: FrameworkInfo,
    private readonly oneWayMs: number,
  ) {
    this.frameworkId = info.id?.value;
  }

  get connected(): boolean {
    return this.subscribed && !this.closed;
  }

  subscribe(): Promise<string> {
    const p = new Promise<string>((resolve) => (this.first = resolve));
    const parsed = parseSchedulerCall({ type: 'SUBSCRIBE', subscribe: { framework_info: this.info } });
    if (parsed.type !== 'SUBSCRIBE') throw new Error('SUBSCRIBE parsed as another call');
    this.clock.after(this.oneWayMs, () => {
      if (!this.closed) this.master.subscribe(parsed.framework, this);
    });
    return p;
  }

  /** Sent at once; the master has it a one-way delay later (a TEARDOWN still arrives after close()). */
  call(call: SchedulerCall): Promise<void> {
    if (!this.connected) return Promise.reject(new Error('not subscribed'));
    let parsed: SchedulerCallParsed;
    try {
      parsed = parseSchedulerCall(call);
    } catch (err) {
      return Promise.reject(err as Error);
    }
    if (parsed.type === 'SUBSCRIBE') return Promise.reject(new Error('SUBSCRIBE is the transport\'s own'));
    this.clock.after(this.oneWayMs, () => this.master.handle(parsed));
    return Promise.resolve();
  }

  on<E extends keyof TransportEvents>(event: E, listener: TransportEvents[E]): this {
    this.events.on(event, listener);
    return this;
  }

  close(): void {
    this.closed = true;
  }

  /** An event from the master: the framework has it a one-way delay later, unless it closed the subscription by then. */
  deliver(event: SchedulerEvent): void {
    this.clock.after(this.oneWayMs, () => {
      if (!this.closed) this.onEvent(event);
    });
  }

  private onEvent(event: SchedulerEvent): void {
    this.events.dispatch(event, this, (id) => {
      const resubscribed = this.frameworkId !== undefined;
      this.frameworkId = id;
      this.subscribed = true;
      this.first?.(id);
      this.first = undefined;
      return resubscribed;
    });
  }
}
