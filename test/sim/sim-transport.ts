// The framework runtime's SchedulerTransport (shared/framework-runtime/transport.ts) over the
// whole-cluster simulator's network: what the production runtime and frameworks run on in
// the simulation, in place of HTTP. SUBSCRIBE opens a stream to a master (a follower closes
// it naming the leader, which is tried next); events arrive on the stream in order, or not
// at all once it is cut or closed; every other call is a datagram, which may be lost,
// duplicated or late, and is parsed by the master's own parser (master/scheduler-calls.ts)
// as an HTTP body would be. After a lost stream the transport subscribes again with the
// framework id it was given, until closed; updates are acknowledged once their listeners are done.

import type { FrameworkInfo, SchedulerCall, SchedulerEvent } from '../../shared/mesos-v1.ts';
import type { SeededRandom } from '../../shared/random.ts';
import type { SchedulerTransport, TransportEvents, TransportFactory } from '../../shared/framework-runtime/transport.ts';
import { parseSchedulerCall } from '../../master/scheduler-calls.ts';
import type { FrameworkWorld } from './cluster-framework.ts';
import { NOT_LEADER_CLOSE, sendSchedulerCall, type StreamConn } from './cluster-master.ts';
import { TransportListeners } from './transport-events.ts';

export class SimTransport implements SchedulerTransport {
  frameworkId: string | undefined;
  private stream: StreamConn | undefined;
  private subscribedOn: StreamConn | undefined;
  private closed = false;
  private hint: number | undefined;
  private nextMaster: number;
  private first: { resolve(id: string): void } | undefined;
  private readonly events = new TransportListeners();

  constructor(
    private readonly world: FrameworkWorld,
    private readonly rng: SeededRandom,
    private readonly info: FrameworkInfo,
    /** Told of each call sent (for the simulation's counts). */
    private readonly sent: (call: SchedulerCall) => void,
  ) {
    this.frameworkId = info.id?.value;
    this.nextMaster = rng.range(0, 2);
  }

  /** Closed by its framework (a crash, a stop): it never subscribes again. */
  get isClosed(): boolean {
    return this.closed;
  }

  get connected(): boolean {
    return !this.closed && this.stream !== undefined && this.subscribedOn === this.stream && this.stream.usable;
  }

  subscribe(): Promise<string> {
    const p = new Promise<string>((resolve) => (this.first = { resolve }));
    this.world.clock.after(this.rng.range(10, 300), () => this.connect());
    return p;
  }

  call(call: SchedulerCall): Promise<void> {
    if (!this.connected) return Promise.reject(new Error('not subscribed'));
    let parsed;
    try {
      parsed = parseSchedulerCall(call);
    } catch (err) {
      return Promise.reject(err as Error);
    }
    if (parsed.type === 'SUBSCRIBE') return Promise.reject(new Error('SUBSCRIBE is the transport\'s own'));
    this.sent(call);
    sendSchedulerCall(this.world, this.stream, true, parsed);
    return Promise.resolve();
  }

  on<E extends keyof TransportEvents>(event: E, listener: TransportEvents[E]): this {
    this.events.on(event, listener);
    return this;
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    const s = this.stream;
    this.stream = undefined;
    s?.close('peer', 1006, 'framework gone', false);
  }

  private connect(): void {
    if (this.closed || this.stream) return;
    const masters = this.world.masters();
    const target = (this.hint !== undefined ? masters.find((m) => m.id === this.hint) : undefined) ?? masters[this.nextMaster++ % masters.length];
    this.hint = undefined;
    const stream = this.world.net.connect<never, SchedulerEvent>(target.id);
    this.stream = stream;
    stream.peer = {
      onMessage: (event) => {
        if (this.stream === stream && !this.closed) this.onEvent(stream, event);
      },
      onClose: (code, reason) => {
        if (this.stream !== stream) return;
        if (code === NOT_LEADER_CLOSE && reason !== '0') this.hint = Number(reason);
        const wasSubscribed = this.subscribedOn === stream;
        this.stream = undefined;
        this.subscribedOn = undefined;
        if (wasSubscribed) this.events.emit('disconnected', reason);
        this.world.clock.after(this.rng.range(100, 1_000), () => this.connect());
      },
    };
    const framework = parseSchedulerCall({ type: 'SUBSCRIBE', subscribe: { framework_info: { ...this.info, ...(this.frameworkId ? { id: { value: this.frameworkId } } : {}) } } });
    if (framework.type !== 'SUBSCRIBE') throw new Error('SUBSCRIBE parsed as another call');
    this.world.clock.after(this.world.net.delay(), () => {
      if (this.stream === stream) target.acceptSubscription(stream, framework.framework);
    });
  }

  private onEvent(stream: StreamConn, event: SchedulerEvent): void {
    this.events.dispatch(event, this, (id) => {
      const resubscribed = this.frameworkId !== undefined;
      this.frameworkId = id;
      this.subscribedOn = stream;
      const first = this.first;
      this.first = undefined;
      first?.resolve(id);
      return resubscribed;
    });
  }
}

/** Transports over the simulated network, each told to `sent` of the calls it makes. */
export function simTransports(world: FrameworkWorld, rng: SeededRandom, sent: (call: SchedulerCall) => void): TransportFactory {
  return (info) => new SimTransport(world, rng.fork(), info, sent);
}
