// What the runtime needs of the scheduler API, and nothing more: one subscription that sends
// calls and hands back events. Production runs it over HTTP (http-transport.ts, the SDK's
// SchedulerClient); the simulator can run it over its datagram network, where a call may be
// lost, duplicated or late — the runtime must be right either way.

import type { FrameworkInfo, OfferJson, SchedulerCall, TaskStatusJson } from '../mesos-v1.ts';

/**
 * Events of a subscription. `update` may return a promise: the acknowledgement waits for it,
 * and is not sent when it rejects (the agent sends the update again).
 */
export type TransportEvents = {
  /** SUBSCRIBED, the first time and after every resubscription (a lost stream, a new leader). */
  subscribed: (frameworkId: string, info: { resubscribed: boolean }) => void;
  offers: (offers: OfferJson[]) => void;
  rescind: (offerId: string) => void;
  update: (status: TaskStatusJson) => void | Promise<void>;
  /** The master ended the framework (an ERROR event, a refused resubscription). */
  error: (message: string) => void;
  /** A subscribed stream was lost; the transport subscribes again with the framework id. */
  disconnected: (reason: string) => void;
};

/**
 * One framework's subscription. The transport keeps it: it subscribes (with the framework id
 * in its FrameworkInfo, if any), follows a follower's redirect to the leader, and after a lost
 * stream subscribes again with the id the master gave, until close(). It acknowledges each
 * update once its listeners are done.
 */
export interface SchedulerTransport {
  /** The framework id the master gave (or the one it was made with). */
  readonly frameworkId: string | undefined;
  /** True while subscribed on an open stream: calls may be sent. */
  readonly connected: boolean;
  /** Resolves with the framework id on the first SUBSCRIBED; rejects when no master took it. */
  subscribe(): Promise<string>;
  /** Sends one call on the subscription; rejects when the master refused it or it was lost. */
  call(call: SchedulerCall): Promise<void>;
  on<E extends keyof TransportEvents>(event: E, listener: TransportEvents[E]): unknown;
  /** Ends the subscription (the framework stays registered until its failover timeout). */
  close(): void;
}

/** Makes the transport of one subscription. */
export type TransportFactory = (frameworkInfo: FrameworkInfo) => SchedulerTransport;
