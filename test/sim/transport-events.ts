// How a simulated SchedulerTransport hands the master's events to the runtime's listeners:
// shared by the whole-cluster simulator's transport (sim-transport.ts) and the tuning
// simulation's (tuning-transport.ts). An update is acknowledged once its listeners are done,
// and not when one of them rejects (the agent sends it again), as the production transport does.

import { acknowledgeCall } from '../../shared/sdk/scheduler-calls.ts';
import type { SchedulerEvent } from '../../shared/mesos-v1.ts';
import type { SchedulerTransport, TransportEvents } from '../../shared/framework-runtime/transport.ts';

type Listeners = { [E in keyof TransportEvents]?: TransportEvents[E][] };

export class TransportListeners {
  private readonly listeners: Listeners = {};

  on<E extends keyof TransportEvents>(event: E, listener: TransportEvents[E]): void {
    ((this.listeners[event] ??= []) as TransportEvents[E][]).push(listener);
  }

  emit<E extends keyof TransportEvents>(event: E, ...args: Parameters<TransportEvents[E]>): unknown[] {
    return ((this.listeners[event] ?? []) as ((...a: unknown[]) => unknown)[]).map((l) => l(...args));
  }

  /**
   * Hands `event` to the listeners. On SUBSCRIBED, `subscribed` first records the framework
   * id on `transport` and says whether it had one already (a resubscription).
   */
  dispatch(event: SchedulerEvent, transport: Pick<SchedulerTransport, 'frameworkId' | 'call'>, subscribed: (frameworkId: string) => boolean): void {
    switch (event.type) {
      case 'SUBSCRIBED': {
        const id = event.subscribed.framework_id.value;
        this.emit('subscribed', id, { resubscribed: subscribed(id) });
        return;
      }
      case 'OFFERS':
        this.emit('offers', event.offers.offers);
        return;
      case 'RESCIND':
        this.emit('rescind', event.rescind.offer_id.value);
        return;
      case 'UPDATE': {
        const status = event.update.status;
        void Promise.all(this.emit('update', status)).then(
          () => {
            const id = transport.frameworkId;
            if (status.uuid && id && status.agent_id) void transport.call(acknowledgeCall({ value: id }, { ...status, uuid: status.uuid, agent_id: status.agent_id })).catch(() => {});
          },
          () => {},
        );
        return;
      }
      case 'ERROR':
        this.emit('error', event.error.message);
        return;
      default:
        return;
    }
  }
}
