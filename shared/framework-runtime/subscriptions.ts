// The offer loop of a built-in framework: its subscriptions to the scheduler API, one per key
// (the jobs framework has one per role and class, tuning one per experiment, services one).
// A subscription starts with the framework id its store recorded (so a new leader, or this
// one after a lost stream, takes back the same framework and its tasks within the failover
// timeout); once subscribed, the id is recorded, every task is reconciled (known ones come
// back with their state; unknown ones, launched by a leader that died before recording, are
// the framework's to kill) and, where the framework wants it, offers are revived. One that
// no master took is tried again a moment later. Calls are sent only on an open subscription:
// a launch without one did not happen, and a kill waits for one.

import type { Logger } from 'pino';
import type { FrameworkInfo, Filters, OfferJson, TaskInfoJson, TaskStatusJson } from '../mesos-v1.ts';
import type { Resources } from '../resources.ts';
import { CairnError } from '../errors.ts';
import type { FrameworkStore } from '../framework-host/store.ts';
import { acceptCall, declineCall, killCall, reconcileCall, requestRoomCall, reviveCall, suppressCall, teardownCall } from '../sdk/scheduler-calls.ts';
import type { RuntimeClock } from './clock.ts';
import { FAILOVER_TIMEOUT_S } from './failover.ts';
import { OfferInterest, type InterestPolicy, type OfferSwitch } from './offer-interest.ts';
import type { SchedulerTransport, TransportFactory } from './transport.ts';

/** A subscription no master took is tried again after this long. */
export const RETRY_SUBSCRIBE_MS = 1_000;

/** What a framework gives its offer loop. */
export interface SubscriptionHandlers<K> {
  /** The subscription's FrameworkInfo; the runtime adds the recorded id and the failover timeout. */
  frameworkInfo(key: K): FrameworkInfo;
  /** The store key the subscription's framework id is recorded under. */
  idKey(key: K): string;
  /** Whether `key` still wants a subscription (asked before trying again). */
  wanted(key: K): boolean;
  offers(key: K, offers: OfferJson[]): void;
  rescind?(key: K, offerId: string): void;
  /** A status update; a promise holds its acknowledgement until it resolves (none when it rejects). */
  update(key: K, status: TaskStatusJson): void | Promise<void>;
  /** After the id is recorded and every task reconciled (before any revive). */
  subscribed?(key: K, frameworkId: string): void;
}

export interface SubscriptionsOptions<K> {
  /** For logs: the framework's name. */
  name: string;
  /** The transport and clock (io.ts). */
  io: { transport: TransportFactory; clock: RuntimeClock };
  store: Pick<FrameworkStore, 'get' | 'put'>;
  log: Logger;
  interest: InterestPolicy;
  /** REVIVE once subscribed and reconciled, whatever the framework wants (it may have waited out a filter). */
  reviveOnSubscribe: boolean;
  /** Resolves once the decisions in flight are carried out: the subscription's bookkeeping follows them. */
  settled?: () => Promise<void>;
  handlers: SubscriptionHandlers<K>;
}

interface HeldKill<K> {
  key: K;
  taskId: string;
  agentId?: string;
}

export class Subscriptions<K> {
  private readonly transports = new Map<K, SchedulerTransport>();
  private readonly interest: OfferInterest<K>;
  /** Kills decided while their subscription was not up: sent once it is. */
  private held: HeldKill<K>[] = [];
  private readonly retries = new Set<() => void>();
  private stopped = false;

  private readonly clock: RuntimeClock;

  constructor(private readonly o: SubscriptionsOptions<K>) {
    this.interest = new OfferInterest<K>(o.interest);
    this.clock = o.io.clock;
  }

  /** The subscription of `key`, made (and subscribing) if there is none. */
  ensure(key: K): SchedulerTransport | undefined {
    const existing = this.transports.get(key);
    if (existing || this.stopped) return existing;
    const h = this.o.handlers;
    const idKey = h.idKey(key);
    const stored = this.o.store.get<string>(idKey);
    const t = this.o.io.transport({
      ...h.frameworkInfo(key),
      failover_timeout: FAILOVER_TIMEOUT_S,
      ...(stored ? { id: { value: stored } } : {}),
    });
    this.transports.set(key, t);
    t.on('subscribed', (frameworkId) => {
      this.interest.subscribed(key, this.o.reviveOnSubscribe, this.clock.now());
      void this.onSubscribed(key, t, idKey, frameworkId).catch((err: unknown) => this.o.log.warn({ err, framework: this.o.name }, 'could not record the framework id'));
    });
    t.on('offers', (offers) => h.offers(key, offers));
    t.on('rescind', (offerId) => h.rescind?.(key, offerId));
    t.on('update', (status) => h.update(key, status));
    t.on('error', (message) => this.o.log.error({ message, framework: this.o.name, key }, 'the master ended a built-in framework'));
    t.subscribe().catch((err: Error) => {
      this.o.log.warn({ err: err.message, framework: this.o.name, key }, 'a built-in framework could not subscribe; trying again');
      if (this.transports.get(key) === t) this.transports.delete(key);
      t.close();
      if (this.stopped) return;
      const cancel = this.clock.after(RETRY_SUBSCRIBE_MS, () => {
        this.retries.delete(cancel);
        if (!this.stopped && h.wanted(key)) this.ensure(key);
      });
      this.retries.add(cancel);
    });
    return t;
  }

  private async onSubscribed(key: K, t: SchedulerTransport, idKey: string, frameworkId: string): Promise<void> {
    await this.o.settled?.();
    if (this.transports.get(key) !== t) return;
    if (this.o.store.get(idKey) !== frameworkId) await this.o.store.put(idKey, frameworkId);
    await this.reconcile(key, []).catch((err: Error) => this.o.log.warn({ err: err.message, framework: this.o.name }, 'reconcile not sent'));
    this.sendHeldKills();
    this.o.handlers.subscribed?.(key, frameworkId);
    if (this.o.reviveOnSubscribe) await this.send(key, (id) => reviveCall(id)).catch(() => {});
  }

  get(key: K): SchedulerTransport | undefined {
    return this.transports.get(key);
  }

  has(key: K): boolean {
    return this.transports.has(key);
  }

  connected(key: K): boolean {
    return this.transports.get(key)?.connected === true;
  }

  keys(): K[] {
    return [...this.transports.keys()];
  }

  /** One call on `key`'s open subscription; rejects without one. */
  private send(key: K, build: (frameworkId: { value: string }) => Parameters<SchedulerTransport['call']>[0]): Promise<void> {
    const t = this.transports.get(key);
    const id = t?.frameworkId;
    if (t?.connected !== true || id === undefined) return Promise.reject(new Error('not subscribed'));
    return t.call(build({ value: id }));
  }

  /** ACCEPT: launches `tasks` on the offers. Only after their records are durable (record-then-act.ts). */
  accept(key: K, offerIds: string[], tasks: TaskInfoJson[], filters?: Filters): Promise<void> {
    return this.send(key, (id) => acceptCall(id, offerIds, tasks, filters));
  }

  /**
   * A launch the framework's core is told of when it did not happen: at once (on the next
   * turn) without a subscription, since offers come only on one; when the master refused it.
   */
  launch(key: K, offerIds: string[], tasks: TaskInfoJson[], filters: Filters, failed: (message: string) => void): void {
    if (!this.connected(key)) {
      queueMicrotask(() => failed('not subscribed'));
      return;
    }
    this.accept(key, offerIds, tasks, filters).catch((err: Error) => {
      // An offer rescinded or gone before the ACCEPT arrived (its agent left, the offer timed
      // out) is a race every framework meets, as in Mesos: the tasks go back to waiting. Any
      // other refusal is worth a warning.
      const code = err instanceof CairnError ? err.code : undefined;
      const level = code === 'CAIRN_OFFER_RESCINDED' || code === 'CAIRN_UNKNOWN_OFFER' ? 'info' : 'warn';
      this.o.log[level]({ err: err.message, framework: this.o.name, tasks: tasks.map((t) => t.task_id.value) }, 'launch refused');
      failed(err.message);
    });
  }

  decline(key: K, offerIds: string[], refuseSeconds?: number): Promise<void> {
    return this.send(key, (id) => declineCall(id, offerIds, refuseSeconds)).catch((err: Error) => this.o.log.debug({ err: err.message, framework: this.o.name }, 'decline not sent'));
  }

  /** KILL now on an open subscription, or once `key` is subscribed again. */
  kill(key: K, taskId: string, agentId?: string): void {
    this.held.push({ key, taskId, ...(agentId ? { agentId } : {}) });
    this.sendHeldKills();
  }

  /** KILL on an open subscription; nothing (the caller sends it again) without one. */
  killNow(key: K, taskId: string, agentId?: string): Promise<void> {
    return this.send(key, (id) => killCall(id, taskId, agentId)).catch(() => {});
  }

  /** Sends the kills held for subscriptions that are up now. */
  sendHeldKills(): void {
    const waiting: HeldKill<K>[] = [];
    for (const k of this.held) {
      if (!this.connected(k.key)) {
        waiting.push(k);
        continue;
      }
      this.send(k.key, (id) => killCall(id, k.taskId, k.agentId)).catch((err: Error) => this.o.log.warn({ err: err.message, taskId: k.taskId }, 'kill not sent'));
    }
    this.held = waiting;
  }

  reconcile(key: K, tasks: { taskId: string; agentId?: string }[]): Promise<void> {
    return this.send(key, (id) => reconcileCall(id, tasks));
  }

  /**
   * Asks about launches not heard of for STARTING_TIMEOUT_MS (time-outs.ts), one RECONCILE per
   * subscription that is up (one that is not reconciles every task once it is).
   */
  reconcileStarting(tasks: readonly { key: K; taskId: string; agentId?: string }[]): void {
    const byKey = new Map<K, { taskId: string; agentId?: string }[]>();
    for (const { key, ...t } of tasks) byKey.set(key, [...(byKey.get(key) ?? []), t]);
    for (const [key, list] of byKey) {
      if (this.connected(key)) this.reconcile(key, list).catch((err: Error) => this.o.log.debug({ err: err.message, framework: this.o.name }, 'reconcile not sent'));
    }
  }

  /** Asks the master to make room (by preemption) for a gang it could not place. */
  requestRoom(key: K, members: Resources[], forWhat: string): Promise<void> {
    return this.send(key, (id) => requestRoomCall(id, members, forWhat));
  }

  /** Offers while `want`, none otherwise (offer-interest.ts); `offers`: how many arrived since the last look. */
  wantOffers(key: K, want: boolean, offers = 0): Promise<void> {
    if (!this.connected(key)) return Promise.resolve();
    const sw: OfferSwitch = {
      revive: () => this.send(key, (id) => reviveCall(id)),
      suppress: () => this.send(key, (id) => suppressCall(id)),
    };
    return this.interest.adjust(key, sw, want, this.clock.now(), offers);
  }

  /**
   * Ends `key`'s framework: its id record goes, and after `delayMs` (so acknowledgements in
   * flight go first) TEARDOWN has the master kill whatever of it still runs.
   */
  async teardown(key: K, delayMs: number): Promise<void> {
    const t = this.transports.get(key);
    this.transports.delete(key);
    this.interest.forget(key);
    this.held = this.held.filter((k) => k.key !== key);
    const idKey = this.o.handlers.idKey(key);
    if (this.o.store.get(idKey) !== undefined) await this.o.store.put(idKey, null);
    if (!t) return;
    this.clock.after(delayMs, () => {
      const id = t.frameworkId;
      const sent = t.connected && id !== undefined ? t.call(teardownCall({ value: id })) : Promise.reject(new Error('not subscribed'));
      sent.catch((err: Error) => this.o.log.debug({ err: err.message, framework: this.o.name, key }, 'teardown not sent')).finally(() => t.close());
    });
  }

  /** This master stops leading: subscriptions close, the frameworks stay for the next leader. */
  stop(): void {
    this.stopped = true;
    for (const cancel of this.retries) cancel();
    this.retries.clear();
    for (const t of this.transports.values()) t.close();
  }
}
