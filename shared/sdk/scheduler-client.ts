// A client of the Mesos v1 scheduler HTTP API as the Cairn master serves it.
//
// SUBSCRIBE opens one long POST whose answer is a RecordIO stream of JSON events and
// carries a `Mesos-Stream-Id` header. Every other call is its own short POST that repeats
// that stream id and the framework id, and is answered 202. Calls go over a keep-alive
// connection pool so that thousands of them per second cost no TCP handshakes; the event
// stream has a connection of its own so it never holds a pool slot.
//
// What the client does on its own, because every framework needs it:
// - follows 307 answers (a non-leading master points at the leader), for SUBSCRIBE too
//   (follow-redirects.ts, as every client of the masters does);
// - acknowledges each status update that carries a uuid once the update handlers ran;
// - watches heartbeats and, when the stream ends or goes quiet, subscribes again with
//   its framework id (backoff up to 2 s) until close() — except after an ERROR event or a
//   4xx answer to SUBSCRIBE, which mean the master will not take this framework back.

import http from 'node:http';
import https from 'node:https';
import type { Logger } from 'pino';
import { CairnError } from '../errors.ts';
import type { Resources } from '../resources.ts';
import { RecordIODecoder } from '../recordio.ts';
import { describeTlsError, type TlsClient } from '../tls.ts';
import {
  STREAM_ID_HEADER,
  type Filters,
  type FrameworkInfo,
  type Id,
  type OfferJson,
  type OfferOperationJson,
  type SchedulerCall,
  type SchedulerEvent,
  type TaskInfoJson,
  type TaskStatusJson,
} from '../mesos-v1.ts';
import { followRedirects, type Answer, type FollowOptions } from './follow-redirects.ts';
import { errorFromResponse, MasterHttpError } from './http-error.ts';
import { parseMasterUrl } from './master-client.ts';
import { acceptCall, acceptOperationsCall, acknowledgeCall, declineCall, killCall, reconcileCall, requestRoomCall, reviveCall, suppressCall, teardownCall } from './scheduler-calls.ts';
import { TypedEmitter } from './typed-emitter.ts';

export const SCHEDULER_API_PATH = 'api/v1/scheduler';

export interface SchedulerClientOptions {
  /**
   * The masters, e.g. `http://127.0.0.1:5050`, or several comma-separated (any master: a
   * follower redirects to the leader). With several, a subscription that cannot get through
   * where it is tries the next one, so a framework finds a new leader after the old one died.
   */
  masterUrl: string;
  frameworkInfo: FrameworkInfo;
  /** Acknowledge every UPDATE that has a uuid after its handlers ran (default true). */
  autoAcknowledge?: boolean;
  /** Subscribe again when the event stream ends or fails, until close() (default true). */
  resubscribe?: boolean;
  /** Longest wait between two subscription attempts (default 2000). */
  maxBackoffMs?: number;
  /** How long a call may wait for an answer; also the wait for SUBSCRIBED (default 30000). */
  callTimeoutMs?: number;
  /** Concurrent call connections to one master (default 64). */
  maxSockets?: number;
  /** HTTPS: the CA to verify masters with, the certificate to present (shared/tls.ts); default: Node's CAs, none presented. */
  tls?: TlsClient;
  /** Sent as `Authorization: Bearer TOKEN` with the subscription and every call. */
  token?: string;
  logger?: Logger;
}

export interface FailureInfo {
  agentId?: string;
  /** Exit status of an executor, when the failure is one. */
  status?: number;
}

export interface SubscribedInfo {
  streamId: string;
  heartbeatIntervalSeconds: number;
  /** True when this is a subscription again after a lost stream. */
  resubscribed: boolean;
}

/**
 * Event listeners. An `update` listener may return a promise; the automatic
 * acknowledgement then waits for it, and is skipped when it rejects (the agent will send
 * the update again).
 */
export type SchedulerClientEvents = {
  subscribed: (frameworkId: string, info: SubscribedInfo) => void;
  offers: (offers: OfferJson[]) => void;
  rescind: (offerId: string) => void;
  update: (status: TaskStatusJson) => void | Promise<void>;
  failure: (failure: FailureInfo) => void;
  /** The master's ERROR event, or why it refused a resubscription: the framework is done. */
  error: (message: string) => void;
  heartbeat: () => void;
  /** A subscribed stream was lost; `reason` says how. A resubscription follows if enabled. */
  disconnected: (reason: string) => void;
  /** Every event as received, before the typed listeners run. */
  event: (event: SchedulerEvent) => void;
};

/** Mesos asks schedulers to give up on a stream after this many missed heartbeats. */
const MISSED_HEARTBEATS = 5;
const MAX_REDIRECTS = 5;
const FIRST_BACKOFF_MS = 100;

interface StreamOutcome {
  /** Whether SUBSCRIBED arrived on this stream. */
  subscribed: boolean;
  reason: string;
  /** The error to give subscribe() when the stream failed before SUBSCRIBED. */
  error: Error;
  /** Set when the master refused this framework for good. */
  fatal?: string;
}

interface Waiter {
  resolve(frameworkId: string): void;
  reject(error: Error): void;
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return typeof value === 'object' && value !== null && typeof (value as { then?: unknown }).then === 'function';
}

/** The scheduler endpoint for a master URL; a URL that already names it is kept. */
export function schedulerEndpoint(masterUrl: string): URL {
  const url = parseMasterUrl(masterUrl);
  if (url.pathname.replace(/\/+$/, '').endsWith(`/${SCHEDULER_API_PATH}`)) return url;
  const base = new URL(url.href);
  if (!base.pathname.endsWith('/')) base.pathname += '/';
  base.search = '';
  base.hash = '';
  return new URL(SCHEDULER_API_PATH, base);
}

/** A node:http answer as the redirect loop sees it. */
function answerOf(res: http.IncomingMessage): Answer {
  const location = res.headers.location;
  return { status: res.statusCode ?? 0, location: location || undefined, discard: () => void res.resume() };
}

function readText(res: http.IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    res.on('data', (c: Buffer) => chunks.push(c));
    res.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    res.on('error', reject);
  });
}

export class SchedulerClient extends TypedEmitter<SchedulerClientEvents> {
  private readonly frameworkInfo: FrameworkInfo;
  private readonly autoAcknowledge: boolean;
  private readonly resubscribe: boolean;
  private readonly maxBackoffMs: number;
  private readonly callTimeoutMs: number;
  private readonly logger: Logger | undefined;
  private readonly httpAgent: http.Agent;
  private readonly httpsAgent: https.Agent;
  private readonly tlsOptions: ReturnType<TlsClient['connectOptions']>;

  /** Where calls and subscriptions go; moves when a master redirects us. */
  private endpoint: URL;
  /** The masters given, tried in turn when a subscription cannot get through. */
  private readonly seeds: URL[];
  private seedIndex = 0;
  private currentFrameworkId: string | undefined;
  private currentStreamId: string | undefined;
  private closed = false;
  /** True while the subscribe/resubscribe loop runs. */
  private looping = false;
  private everSubscribed = false;
  private waiters: Waiter[] = [];
  /** Aborts the open stream (or the attempt to open one). */
  private abortStream: ((reason: string) => void) | undefined;
  private watchdog: NodeJS.Timeout | undefined;
  private backoffTimer: NodeJS.Timeout | undefined;
  private wakeFromBackoff: (() => void) | undefined;

  private readonly token: string | undefined;

  constructor(options: SchedulerClientOptions) {
    super();
    this.seeds = options.masterUrl.split(',').map((u) => u.trim()).filter((u) => u !== '').map((u) => schedulerEndpoint(u));
    if (this.seeds.length === 0) throw new CairnError('CAIRN_BAD_REQUEST', 'at least one master URL is needed', 'masterUrl');
    this.endpoint = this.seeds[0]!;
    this.frameworkInfo = options.frameworkInfo;
    this.token = options.token;
    this.currentFrameworkId = options.frameworkInfo.id?.value || undefined;
    this.autoAcknowledge = options.autoAcknowledge ?? true;
    this.resubscribe = options.resubscribe ?? true;
    this.maxBackoffMs = options.maxBackoffMs ?? 2000;
    this.callTimeoutMs = options.callTimeoutMs ?? 30_000;
    this.logger = options.logger;
    const maxSockets = options.maxSockets ?? 64;
    this.httpAgent = new http.Agent({ keepAlive: true, maxSockets });
    this.tlsOptions = options.tls?.connectOptions() ?? {};
    this.httpsAgent = new https.Agent({ keepAlive: true, maxSockets, ...this.tlsOptions });
  }

  /** The framework id, once the master assigned one (or the one we resubscribe with). */
  get frameworkId(): string | undefined {
    return this.currentFrameworkId;
  }

  /** The id of the open event stream; undefined while not subscribed. */
  get streamId(): string | undefined {
    return this.currentStreamId;
  }

  /** True while subscribed on an open stream. */
  get connected(): boolean {
    return this.currentStreamId !== undefined;
  }

  /** The scheduler endpoint now in use (after any redirects). */
  get endpointUrl(): string {
    return this.endpoint.href;
  }

  /**
   * Subscribes and resolves with the framework id on SUBSCRIBED. A first subscription
   * that fails (unreachable master, 4xx, stream ended early) rejects; once subscribed,
   * lost streams are resubscribed in the background (see `resubscribe`).
   */
  subscribe(): Promise<string> {
    if (this.closed) return Promise.reject(new CairnError('CAIRN_BAD_REQUEST', 'the scheduler client is closed'));
    if (this.currentStreamId !== undefined && this.currentFrameworkId !== undefined) {
      return Promise.resolve(this.currentFrameworkId);
    }
    const subscribed = new Promise<string>((resolve, reject) => this.waiters.push({ resolve, reject }));
    if (!this.looping) {
      void this.subscriptionLoop();
    }
    return subscribed;
  }

  /** Sends one call on the current subscription. Resolves on 202; throws CairnError on 4xx. */
  async call(call: SchedulerCall): Promise<void> {
    const streamId = this.currentStreamId;
    if (this.closed || streamId === undefined) {
      throw new CairnError('CAIRN_STREAM_MISMATCH', `cannot send ${call.type}: ${this.closed ? 'the client is closed' : 'not subscribed'}`);
    }
    const body = JSON.stringify(call);
    const res = await followRedirects(this.endpoint, (url) => this.post(url, body, { [STREAM_ID_HEADER]: streamId }, this.callTimeoutMs), answerOf, this.follow);
    const status = res.statusCode ?? 0;
    const text = await readText(res);
    if (status >= 200 && status < 300) return;
    throw errorFromResponse(status, text, `${call.type} call`);
  }

  /** Launches `tasks` on the offers (all on one agent); unused resources return to the master. */
  async accept(offerIds: string[], tasks: TaskInfoJson[], filters?: Filters): Promise<void> {
    return this.call(acceptCall(this.frameworkIdRef(), offerIds, tasks, filters));
  }

  /** ACCEPT with arbitrary offer operations. */
  async acceptOperations(offerIds: string[], operations: OfferOperationJson[], filters?: Filters): Promise<void> {
    return this.call(acceptOperationsCall(this.frameworkIdRef(), offerIds, operations, filters));
  }

  /** Declines offers; with `refuseSeconds` the master keeps those resources away that long. */
  async decline(offerIds: string[], refuseSeconds?: number): Promise<void> {
    return this.call(declineCall(this.frameworkIdRef(), offerIds, refuseSeconds));
  }

  /** Clears filters and asks for offers again (after suppress, or a decline with a long filter). */
  async revive(roles?: string[]): Promise<void> {
    return this.call(reviveCall(this.frameworkIdRef(), roles));
  }

  /** Asks the master to stop sending offers until revive(). */
  async suppress(roles?: string[]): Promise<void> {
    return this.call(suppressCall(this.frameworkIdRef(), roles));
  }

  /**
   * Asks the master to make room for a gang it could not place (Mesos' REQUEST): a framework
   * of a higher priority class than what runs gets it by preemption; `forWhat` names the work.
   */
  async requestRoom(members: Resources[], forWhat: string): Promise<void> {
    return this.call(requestRoomCall(this.frameworkIdRef(), members, forWhat));
  }

  async kill(taskId: string, agentId?: string): Promise<void> {
    return this.call(killCall(this.frameworkIdRef(), taskId, agentId));
  }

  /** Acknowledges one status update; one without a uuid needs none and is skipped. */
  async acknowledge(status: TaskStatusJson): Promise<void> {
    const uuid = status.uuid;
    if (!uuid) return;
    const agentId = status.agent_id;
    if (!agentId?.value) {
      throw new CairnError('CAIRN_BAD_REQUEST', 'a status update with a uuid must name its agent', 'status.agent_id');
    }
    await this.call(acknowledgeCall(this.frameworkIdRef(), { ...status, uuid, agent_id: agentId }));
  }

  /** Asks for the latest state of the given tasks; none at all means every task (implicit). */
  async reconcile(tasks: { taskId: string; agentId?: string }[] = []): Promise<void> {
    return this.call(reconcileCall(this.frameworkIdRef(), tasks));
  }

  /** Ends the framework (the master kills its tasks), then closes this client. */
  async teardown(): Promise<void> {
    try {
      await this.call(teardownCall(this.frameworkIdRef()));
    } finally {
      this.close();
    }
  }

  /**
   * Closes the event stream and the call connections and cancels every timer. Calls still
   * in flight fail; a pending subscribe() rejects. The framework itself stays registered
   * (until its failover timeout) unless teardown() was called.
   */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.currentStreamId = undefined;
    this.abortStream?.('client closed');
    this.clearWatchdog();
    if (this.backoffTimer) clearTimeout(this.backoffTimer);
    this.backoffTimer = undefined;
    this.wakeFromBackoff?.();
    this.rejectWaiters(new CairnError('CAIRN_BAD_REQUEST', 'the scheduler client was closed before it subscribed'));
    this.httpAgent.destroy();
    this.httpsAgent.destroy();
  }

  // ---- subscription -------------------------------------------------------------------

  private async subscriptionLoop(): Promise<void> {
    this.looping = true;
    let backoffMs = FIRST_BACKOFF_MS;
    /** Why each master failed a first subscription, until one of them gets through. */
    const firstFailures: string[] = [];
    try {
      while (!this.closed) {
        const outcome = await this.runStream();
        this.currentStreamId = undefined;
        if (this.closed) return;
        if (outcome.subscribed) {
          backoffMs = FIRST_BACKOFF_MS;
          this.logger?.warn({ reason: outcome.reason }, 'scheduler event stream lost');
          this.safeEmit('disconnected', outcome.reason);
        }
        if (outcome.fatal !== undefined) {
          // An ERROR event was emitted as it arrived; a refused resubscription is told here.
          if (!outcome.subscribed && this.everSubscribed) this.safeEmit('error', outcome.fatal);
          this.rejectWaiters(outcome.error);
          return;
        }
        // A first subscription goes to each master given, once; if none gets through, that
        // is the caller's to handle.
        if (!this.everSubscribed) {
          const seed = this.seeds[this.seedIndex]!;
          // A master that redirected to a leader this client cannot reach: say both.
          const via = this.endpoint.origin === seed.origin ? seed.origin : `${seed.origin} → ${this.endpoint.origin}`;
          firstFailures.push(`${via}: ${outcome.reason}`);
          if (firstFailures.length < this.seeds.length) {
            this.seedIndex = (this.seedIndex + 1) % this.seeds.length;
            this.endpoint = this.seeds[this.seedIndex]!;
            continue;
          }
          this.rejectWaiters(this.seeds.length > 1 ? new CairnError('CAIRN_BAD_REQUEST', `no master took the subscription (${firstFailures.join('; ')})`) : outcome.error);
          return;
        }
        if (!this.resubscribe) {
          this.rejectWaiters(outcome.error);
          return;
        }
        if (!outcome.subscribed) this.nextMaster();
        const delay = Math.round(backoffMs * (0.5 + Math.random() * 0.5));
        this.logger?.debug({ delayMs: delay, reason: outcome.reason }, 'subscribing again');
        await this.sleep(delay);
        backoffMs = Math.min(backoffMs * 2, this.maxBackoffMs);
      }
    } finally {
      this.looping = false;
      this.abortStream = undefined;
    }
  }

  /**
   * After a subscription attempt failed: the next master given, or back to the one in turn
   * when the endpoint was a leader reached by redirect (it may be the one that died).
   */
  private nextMaster(): void {
    const at = this.seeds.findIndex((u) => u.href === this.endpoint.href);
    this.seedIndex = at === -1 ? this.seedIndex : (at + 1) % this.seeds.length;
    const next = this.seeds[this.seedIndex]!;
    if (next.href !== this.endpoint.href) this.logger?.info({ from: this.endpoint.origin, to: next.origin }, 'trying another master');
    this.endpoint = next;
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      this.wakeFromBackoff = () => {
        this.wakeFromBackoff = undefined;
        resolve();
      };
      this.backoffTimer = setTimeout(() => {
        this.backoffTimer = undefined;
        this.wakeFromBackoff?.();
      }, ms);
    });
  }

  private subscribeCall(): SchedulerCall {
    const frameworkId = this.currentFrameworkId;
    const frameworkInfo: FrameworkInfo = frameworkId ? { ...this.frameworkInfo, id: { value: frameworkId } } : this.frameworkInfo;
    return {
      type: 'SUBSCRIBE',
      ...(frameworkId ? { framework_id: { value: frameworkId } } : {}),
      subscribe: { framework_info: frameworkInfo },
    };
  }

  /** Opens one event stream (following redirects) and resolves when it is over. */
  private runStream(): Promise<StreamOutcome> {
    return new Promise<StreamOutcome>((resolve) => {
      const body = JSON.stringify(this.subscribeCall());
      let subscribed = false;
      let settled = false;
      let current: http.ClientRequest | undefined;

      const finish = (reason: string, error?: Error, fatal?: string) => {
        if (settled) return;
        settled = true;
        this.clearWatchdog();
        this.abortStream = undefined;
        current?.destroy();
        current = undefined;
        resolve({ subscribed, reason, error: error ?? new CairnError('CAIRN_BAD_REQUEST', `subscription failed: ${reason}`), fatal });
      };
      this.abortStream = (reason) => finish(reason);
      this.armWatchdog(this.callTimeoutMs, () => finish(`no answer from the master within ${this.callTimeoutMs} ms`));

      const failed = (err: Error) => {
        const tls = describeTlsError(err);
        finish(tls ?? err.message, tls !== undefined ? new Error(tls, { cause: err }) : err);
      };
      const send = (url: URL) => new Promise<http.IncomingMessage>((resolve, reject) => {
        const req = this.request(url, body, {}, false);
        current = req;
        let answered = false;
        req.on('error', (err) => {
          if (req !== current) return;
          if (answered) failed(err);
          else reject(err);
        });
        req.on('response', (res) => {
          if (req !== current) {
            res.resume();
            return;
          }
          answered = true;
          resolve(res);
        });
        req.end(body);
      });
      const stream = (res: http.IncomingMessage) => {
        if (settled) {
          res.resume();
          return;
        }
        const status = res.statusCode ?? 0;
        if (status !== 200) {
          readText(res).then(
            (text) => {
              const error = errorFromResponse(status, text, 'SUBSCRIBE');
              const refused = status >= 400 && status < 500 && status !== 408 && status !== 429;
              finish(error.message, error, refused ? error.message : undefined);
            },
            (err: Error) => finish(err.message, err),
          );
          return;
        }
        const streamId = res.headers[STREAM_ID_HEADER];
        if (typeof streamId !== 'string' || streamId === '') {
          res.resume();
          finish(`the SUBSCRIBE answer carries no ${STREAM_ID_HEADER} header`);
          return;
        }
        const decoder = new RecordIODecoder();
        res.on('data', (chunk: Buffer) => {
          if (settled) return;
          this.watchdog?.refresh();
          let events: SchedulerEvent[];
          try {
            events = decoder.decodeJson<SchedulerEvent>(chunk);
          } catch (err) {
            finish(`bad event stream: ${(err as Error).message}`, err as Error);
            return;
          }
          for (const event of events) {
            if (settled) return;
            if (event.type === 'SUBSCRIBED') {
              subscribed = true;
              this.currentStreamId = streamId;
            }
            const fatal = this.dispatch(event);
            if (fatal !== undefined) {
              finish(`ERROR event: ${fatal}`, new CairnError('CAIRN_BAD_REQUEST', fatal), fatal);
              return;
            }
          }
        });
        res.on('end', () => finish('the master ended the event stream'));
        res.on('error', (err) => finish(err.message, err));
        res.on('close', () => finish('the event stream closed'));
      };
      followRedirects(this.endpoint, send, answerOf, this.follow).then(stream, failed).catch((err: unknown) => failed(err as Error));
    });
  }

  /** Handles one event; returns the message of an ERROR event (which ends the framework). */
  private dispatch(event: SchedulerEvent): string | undefined {
    this.safeEmit('event', event);
    switch (event.type) {
      case 'SUBSCRIBED': {
        const frameworkId = event.subscribed.framework_id.value;
        const intervalS = event.subscribed.heartbeat_interval_seconds;
        const resubscribed = this.everSubscribed;
        this.currentFrameworkId = frameworkId;
        this.everSubscribed = true;
        if (intervalS > 0) {
          const quietMs = Math.max(100, Math.round(intervalS * 1000 * MISSED_HEARTBEATS));
          this.armWatchdog(quietMs, () => this.abortStream?.(`no heartbeat for ${quietMs} ms`));
        } else {
          this.clearWatchdog();
        }
        const waiters = this.waiters;
        this.waiters = [];
        waiters.forEach((w) => w.resolve(frameworkId));
        this.safeEmit('subscribed', frameworkId, { streamId: this.currentStreamId ?? '', heartbeatIntervalSeconds: intervalS, resubscribed });
        return undefined;
      }
      case 'OFFERS':
        this.safeEmit('offers', event.offers?.offers ?? []);
        return undefined;
      case 'RESCIND':
        this.safeEmit('rescind', event.rescind.offer_id.value);
        return undefined;
      case 'UPDATE':
        this.onUpdate(event.update.status);
        return undefined;
      case 'FAILURE':
        this.safeEmit('failure', {
          ...(event.failure.agent_id ? { agentId: event.failure.agent_id.value } : {}),
          ...(event.failure.status !== undefined ? { status: event.failure.status } : {}),
        });
        return undefined;
      case 'ERROR': {
        const message = event.error?.message ?? 'the master sent an ERROR event';
        this.safeEmit('error', message);
        return message;
      }
      case 'HEARTBEAT':
        this.safeEmit('heartbeat');
        return undefined;
      default:
        this.logger?.debug({ type: (event as { type?: unknown }).type }, 'ignoring unknown scheduler event');
        return undefined;
    }
  }

  private onUpdate(status: TaskStatusJson): void {
    const results = this.safeEmit('update', status);
    if (results === undefined || !this.autoAcknowledge || !status.uuid || !status.agent_id) return;
    const pending = results.filter(isThenable);
    if (pending.length === 0) {
      this.acknowledgeQuietly(status);
      return;
    }
    Promise.all(pending).then(
      () => this.acknowledgeQuietly(status),
      (err: unknown) => {
        // Not acknowledged: the agent resends the update, so the handler gets another go.
        this.rethrowLater(err);
      },
    );
  }

  private acknowledgeQuietly(status: TaskStatusJson): void {
    if (this.closed) return;
    this.acknowledge(status).catch((err: Error) => {
      // A lost acknowledgement is repaired by the agent resending the update.
      this.logger?.warn({ err, taskId: status.task_id.value }, 'acknowledgement failed');
    });
  }

  /**
   * Emits to listeners. A listener that throws is a bug in the caller: like node:events,
   * its error surfaces as an uncaught exception rather than being swallowed here, but only
   * after the stream has been read on. Returns undefined when a listener threw.
   */
  private safeEmit<E extends keyof SchedulerClientEvents>(event: E, ...args: Parameters<SchedulerClientEvents[E]>): unknown[] | undefined {
    try {
      return this.emit(event, ...args);
    } catch (err) {
      this.rethrowLater(err);
      return undefined;
    }
  }

  private rethrowLater(err: unknown): void {
    process.nextTick(() => {
      throw err;
    });
  }

  private rejectWaiters(error: Error): void {
    const waiters = this.waiters;
    this.waiters = [];
    waiters.forEach((w) => w.reject(error));
  }

  private armWatchdog(ms: number, onQuiet: () => void): void {
    this.clearWatchdog();
    this.watchdog = setTimeout(onQuiet, ms);
  }

  private clearWatchdog(): void {
    if (this.watchdog) clearTimeout(this.watchdog);
    this.watchdog = undefined;
  }

  // ---- HTTP ---------------------------------------------------------------------------

  private frameworkIdRef(): Id {
    const value = this.currentFrameworkId;
    if (value === undefined) throw new CairnError('CAIRN_STREAM_MISMATCH', 'not subscribed: no framework id yet');
    return { value };
  }

  /** How calls and the subscription follow a follower's redirect: to the leader's scheduler endpoint, which calls use from then on. */
  private readonly follow: FollowOptions = {
    maxRedirects: MAX_REDIRECTS,
    target: (location, from) => schedulerEndpoint(new URL(location, from).href),
    noLocation: (from, status) => new MasterHttpError(status, 'CAIRN_BAD_REQUEST', `the master at ${from.origin} redirected without a Location`),
    onRedirect: (from, to) => {
      this.logger?.info({ from: from.origin, to: to.origin }, 'following the master redirect');
      this.endpoint = to;
    },
  };

  private request(url: URL, body: string, headers: Record<string, string>, agent: http.Agent | false, timeoutMs?: number): http.ClientRequest {
    const secure = url.protocol === 'https:';
    const options: http.RequestOptions = {
      method: 'POST',
      ...(timeoutMs !== undefined ? { timeout: timeoutMs } : {}),
      agent: agent === false ? false : secure ? this.httpsAgent : this.httpAgent,
      headers: {
        'content-type': 'application/json',
        accept: 'application/json',
        'content-length': String(Buffer.byteLength(body)),
        ...(this.token ? { authorization: `Bearer ${this.token}` } : {}),
        ...headers,
      },
    };
    return secure ? https.request(url, { ...options, ...this.tlsOptions }) : http.request(url, options);
  }

  private post(url: URL, body: string, headers: Record<string, string>, timeoutMs: number): Promise<http.IncomingMessage> {
    return new Promise((resolve, reject) => {
      const req = this.request(url, body, headers, this.httpAgent, timeoutMs);
      req.on('timeout', () => req.destroy(new Error(`no answer from ${url.origin} within ${timeoutMs} ms`)));
      req.once('response', resolve);
      req.once('error', reject);
      req.end(body);
    });
  }
}
