// A client of the master's REST API (the JSON of shared/master-state.ts): cluster state,
// one task, a task's logs (a chunk, or followed as a stream), killing a task, drains and
// the masters' membership. The command line and tests use it; it speaks plain fetch, and
// follows a follower master's redirect to the leader (follow-redirects.ts). Given several masters (`a,b,c`), a
// request that cannot reach one goes to the next, and the one that answered is asked first
// next time.

import { CairnError } from '../errors.ts';
import type { MembersJson } from '../gossip/cluster.ts';
import { LOG_FOLLOW_KEEPALIVE_MS } from '../log-query.ts';
import type { LogChunk, StateView, TaskView } from '../master-state.ts';
import type { MastersView } from '../masters-view.ts';
import { describeTlsError, type TlsClient } from '../tls.ts';
import { fetchFollowing } from './follow-redirects.ts';
import { errorFromResponse } from './http-error.ts';

export type LogStream = 'stdout' | 'stderr';

export interface FollowLogsOptions {
  /** Stops following: the connection is closed and the generator throws. */
  signal?: AbortSignal;
  /** Longest silence before the stream counts as broken (default three keepalive periods). */
  idleTimeoutMs?: number;
  /** Each chunk says when its bytes were written (LogChunk.times). */
  times?: boolean;
}

export interface MasterClientOptions {
  /** How long one request may take (default 30000). */
  timeoutMs?: number;
  /** HTTPS: the CA to verify masters with, the certificate to present (shared/tls.ts); default: Node's CAs, none presented. */
  tls?: TlsClient;
  /** Sent as `Authorization: Bearer TOKEN` with every request (see credentials.ts for where the CLI finds it). */
  token?: string;
}

/** A master's URL, checked: http or https; a bad one is named by the `masterUrl` field. */
export function parseMasterUrl(masterUrl: string): URL {
  let url: URL;
  try {
    url = new URL(masterUrl);
  } catch {
    throw new CairnError('CAIRN_BAD_REQUEST', `'${masterUrl}' is not a URL`, 'masterUrl');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new CairnError('CAIRN_BAD_REQUEST', `'${masterUrl}' must be an http:// or https:// URL`, 'masterUrl');
  }
  return url;
}

export class MasterClient {
  readonly masterUrls: readonly string[];
  private current = 0;
  private readonly dial: typeof fetch;
  private readonly timeoutMs: number;

  /** `masterUrl`: one master's URL, or several separated by commas. */
  constructor(masterUrl: string, options: MasterClientOptions = {}) {
    this.masterUrls = masterUrl.split(',').map((u) => parseMasterUrl(u.trim()).href.replace(/\/+$/, ''));
    this.timeoutMs = options.timeoutMs ?? 30_000;
    this.dial = options.tls?.fetch ?? fetch;
    this.token = options.token;
  }

  private readonly token: string | undefined;

  /** One request, following a follower's redirect to the leader with the credential kept (follow-redirects.ts). */
  private fetchFollowing(url: string, init: RequestInit): Promise<Response> {
    const request: RequestInit = { ...init, headers: { ...(init.headers as Record<string, string> | undefined), ...(this.token ? { authorization: `Bearer ${this.token}` } : {}) } };
    return fetchFollowing(this.dial, url, () => request);
  }

  /** The master asked first: the one that last answered. */
  get baseUrl(): string {
    return this.masterUrls[this.current]!;
  }

  /**
   * Fetches `path` from the first master that can be reached, starting with the one that
   * last answered. Only a failure to reach one moves on — for a change (not a GET) only one
   * where the request cannot have arrived (no connection), since a timed-out change may
   * still be applied. An HTTP answer, even an error, is the cluster's answer.
   */
  private async reach(path: string, init: () => RequestInit, what: string, stop?: AbortSignal): Promise<Response> {
    const failures: string[] = [];
    for (let i = 0; i < this.masterUrls.length; i++) {
      const at = (this.current + i) % this.masterUrls.length;
      const request = init();
      try {
        const res = await this.fetchFollowing(`${this.masterUrls[at]}${path}`, request);
        this.current = at;
        return res;
      } catch (err) {
        // Stopped by the caller: no other master is asked.
        if (stop?.aborted) throw err;
        failures.push(`${this.masterUrls[at]}: ${describeFetchError(err)}`);
        const mayHaveArrived = (request.method ?? 'GET') !== 'GET' && !NOT_CONNECTED.has(errorCode(err) ?? '');
        if (this.masterUrls.length === 1 || mayHaveArrived) {
          throw new Error(`${what}: cannot reach the master at ${this.masterUrls[at]}: ${describeFetchError(err)}`, { cause: err });
        }
      }
    }
    throw new Error(`${what}: cannot reach any master (${failures.join('; ')})`);
  }

  /** `GET /api/v1/state` */
  state(): Promise<StateView> {
    return this.json<StateView>('GET', '/api/v1/state', 'reading the cluster state');
  }

  /** `GET /api/v1/tasks/:id` */
  task(taskId: string): Promise<TaskView> {
    return this.json<TaskView>('GET', `/api/v1/tasks/${encodeURIComponent(taskId)}`, `reading task ${taskId}`);
  }

  /** `GET /api/v1/tasks/:id/usage`: the task's latest usage sample, read from its agent through the master (404 once it ended). */
  taskUsage(taskId: string): Promise<unknown> {
    return this.json<unknown>('GET', `/api/v1/tasks/${encodeURIComponent(taskId)}/usage`, `reading the usage of task ${taskId}`);
  }

  /** `GET /api/v1/tasks/:id/logs?stream=&offset=`; with `times`, the chunk says when its bytes were written. */
  logs(taskId: string, stream: LogStream, offset: number, times = false): Promise<LogChunk> {
    const query = new URLSearchParams({ stream, offset: String(offset), ...(times ? { times: 'true' } : {}) });
    return this.json<LogChunk>('GET', `/api/v1/tasks/${encodeURIComponent(taskId)}/logs?${query}`, `reading the ${stream} of task ${taskId}`);
  }

  /**
   * `GET /api/v1/tasks/:id/logs?follow=true`: the log from `offset` as the task writes it,
   * one chunk at a time, streamed through the master; ends after the chunk with eof.
   * Throws when the master refuses (a MasterHttpError with its status), cannot be reached,
   * or the stream breaks or stays silent for `idleTimeoutMs` before eof: the caller may
   * follow again from the last nextOffset. Stopping early (break, `signal`) closes the
   * connection.
   */
  async *followLogs(taskId: string, stream: LogStream, offset: number, options: FollowLogsOptions = {}): AsyncGenerator<LogChunk, void, undefined> {
    const what = `following the ${stream} of task ${taskId}`;
    const query = new URLSearchParams({ stream, offset: String(offset), follow: 'true', ...(options.times ? { times: 'true' } : {}) });
    const idleTimeoutMs = options.idleTimeoutMs ?? 3 * LOG_FOLLOW_KEEPALIVE_MS;
    const connection = new AbortController();
    const onAbort = () => connection.abort(options.signal?.reason);
    if (options.signal?.aborted) onAbort();
    options.signal?.addEventListener('abort', onAbort, { once: true });
    // Until the headers: the usual request timeout; then the longest silence allowed.
    let timer = setTimeout(() => connection.abort(new DOMException('no answer in time', 'TimeoutError')), this.timeoutMs);
    const rearm = () => {
      clearTimeout(timer);
      timer = setTimeout(() => connection.abort(new Error(`nothing received for ${idleTimeoutMs} ms`)), idleTimeoutMs);
    };
    try {
      const res = await this.reach(`/api/v1/tasks/${encodeURIComponent(taskId)}/logs?${query}`, () => ({
        headers: { accept: 'application/x-ndjson' },
        signal: connection.signal,
      }), what, options.signal);
      if (!res.ok || !res.body) {
        const text = await res.text().catch(() => '');
        throw errorFromResponse(res.status, text, what);
      }
      rearm();
      const reader = res.body.getReader();
      const decoder = new TextDecoder();
      let pending = '';
      for (;;) {
        let part: ReadableStreamReadResult<Uint8Array>;
        try {
          part = await reader.read();
        } catch (err) {
          throw new Error(`${what}: the stream from ${this.baseUrl} broke: ${describeFetchError(err)}`, { cause: err });
        }
        if (part.done) break;
        rearm();
        pending += decoder.decode(part.value, { stream: true });
        let newline: number;
        while ((newline = pending.indexOf('\n')) !== -1) {
          const line = pending.slice(0, newline);
          pending = pending.slice(newline + 1);
          if (line.trim() === '') continue;
          const chunk = parseLogChunk(line, what);
          yield chunk;
          if (chunk.eof) return;
        }
      }
      throw new Error(`${what}: the stream from ${this.baseUrl} ended before the end of the log`);
    } finally {
      clearTimeout(timer);
      options.signal?.removeEventListener('abort', onAbort);
      connection.abort(); // no-op once the stream is read; otherwise frees the connection
    }
  }

  /** `GET /api/v1/members`: the gossip view of this master (or agent: it answers the same path). */
  members(): Promise<MembersJson> {
    return this.json<MembersJson>('GET', '/api/v1/members', 'reading the gossip members');
  }

  /** `POST /api/v1/tasks/:id/kill`; resolves once the master accepted the kill (202). */
  async kill(taskId: string): Promise<void> {
    await this.send('POST', `/api/v1/tasks/${encodeURIComponent(taskId)}/kill`, `killing task ${taskId}`);
  }

  /** `POST /api/v1/frameworks/:id/teardown`: removes the framework, killing its tasks. */
  async teardown(frameworkId: string): Promise<void> {
    await this.send('POST', `/api/v1/frameworks/${encodeURIComponent(frameworkId)}/teardown`, `tearing down framework ${frameworkId}`);
  }

  /**
   * `POST /api/v1/agents/:id/drain`: no more offers of the agent; its tasks finish, or are
   * killed `deadlineMs` from now (none: they run until they end). Resolves with the drain.
   */
  drainAgent(agentId: string, deadlineMs?: number): Promise<{ agentId: string; draining: { sinceMs: number; deadlineAtMs: number | null } }> {
    return this.json('POST', `/api/v1/agents/${encodeURIComponent(agentId)}/drain`, `draining agent ${agentId}`, deadlineMs === undefined ? {} : { deadlineMs });
  }

  /** `DELETE /api/v1/agents/:id/drain`: the agent is offered again. */
  async undrainAgent(agentId: string): Promise<void> {
    await this.send('DELETE', `/api/v1/agents/${encodeURIComponent(agentId)}/drain`, `ending the drain of agent ${agentId}`);
  }

  /** `GET /api/v1/masters`: the replicated masters, each with its own word on its role. */
  masters(): Promise<MastersView> {
    return this.json<MastersView>('GET', '/api/v1/masters', 'reading the masters');
  }

  /**
   * `POST /api/v1/masters`: adds master `id` at `url` (in place of `replaces`, if given).
   * The leader first lets the new master catch up, so this may take a while: `timeoutMs`.
   */
  addMaster(id: number, url: string, replaces: number | undefined, timeoutMs: number): Promise<MastersView> {
    const what = replaces !== undefined ? `replacing master ${replaces} by ${id}` : `adding master ${id}`;
    return this.json<MastersView>('POST', '/api/v1/masters', what, { id, url, ...(replaces !== undefined ? { replaces } : {}) }, timeoutMs);
  }

  /** `DELETE /api/v1/masters/:id` */
  removeMaster(id: number, timeoutMs: number): Promise<MastersView> {
    return this.json<MastersView>('DELETE', `/api/v1/masters/${id}`, `removing master ${id}`, undefined, timeoutMs);
  }

  private async json<T>(method: string, path: string, what: string, body?: unknown, timeoutMs?: number): Promise<T> {
    const text = await this.send(method, path, what, body, timeoutMs);
    try {
      return JSON.parse(text) as T;
    } catch {
      throw new CairnError('CAIRN_BAD_REQUEST', `${what}: the master answered with something that is not JSON`);
    }
  }

  private async send(method: string, path: string, what: string, body?: unknown, timeoutMs = this.timeoutMs): Promise<string> {
    const headers: Record<string, string> = body === undefined ? { accept: 'application/json' } : { accept: 'application/json', 'content-type': 'application/json' };
    const res = await this.reach(path, () => ({
      method,
      headers,
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      signal: AbortSignal.timeout(timeoutMs),
    }), what);
    let text: string;
    try {
      text = await res.text();
    } catch (err) {
      throw new Error(`${what}: the answer from ${this.baseUrl} broke off: ${describeFetchError(err)}`, { cause: err });
    }
    if (!res.ok) throw errorFromResponse(res.status, text, what);
    return text;
  }
}

/** One NDJSON line of a followed log, checked to be a LogChunk. */
function parseLogChunk(line: string, what: string): LogChunk {
  let c: Partial<LogChunk> | undefined;
  try {
    c = JSON.parse(line) as Partial<LogChunk>;
  } catch {
    c = undefined;
  }
  if (typeof c?.data !== 'string' || !Number.isSafeInteger(c.offset) || !Number.isSafeInteger(c.nextOffset) || typeof c.eof !== 'boolean') {
    throw new CairnError('CAIRN_BAD_REQUEST', `${what}: the master sent a line that is not a log chunk: ${line.slice(0, 200)}`);
  }
  return c as LogChunk;
}

/** Socket errors that mean no connection was made, so no request was sent. */
const NOT_CONNECTED = new Set(['ECONNREFUSED', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN', 'EADDRNOTAVAIL']);

function errorCode(err: unknown): string | undefined {
  return (err as { cause?: { code?: string } }).cause?.code;
}

/** fetch hides the socket error in `cause`; people need that part. */
function describeFetchError(err: unknown): string {
  const e = err as { name?: string; message?: string; cause?: { code?: string; message?: string } };
  if (e.name === 'TimeoutError') return 'no answer in time';
  const tls = describeTlsError(err);
  if (tls !== undefined) return tls;
  return e.cause?.code ?? e.cause?.message ?? e.message ?? String(err);
}
