// A client of the master's REST API (the JSON of shared/master-state.ts): cluster state,
// one task, a task's logs, and killing a task. The command line and tests use it; it
// speaks plain fetch, which follows a follower master's redirect to the leader.

import { CairnError } from '../errors.ts';
import type { MembersJson } from '../gossip/cluster.ts';
import type { LogChunk, StateView, TaskView } from '../master-state.ts';
import { errorFromResponse } from './http-error.ts';

export type LogStream = 'stdout' | 'stderr';

export interface MasterClientOptions {
  /** How long one request may take (default 30000). */
  timeoutMs?: number;
}

export class MasterClient {
  readonly baseUrl: string;
  private readonly timeoutMs: number;

  constructor(masterUrl: string, options: MasterClientOptions = {}) {
    let url: URL;
    try {
      url = new URL(masterUrl);
    } catch {
      throw new CairnError('CAIRN_BAD_REQUEST', `'${masterUrl}' is not a URL`, 'masterUrl');
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') {
      throw new CairnError('CAIRN_BAD_REQUEST', `'${masterUrl}' must be an http:// or https:// URL`, 'masterUrl');
    }
    this.baseUrl = url.href.replace(/\/+$/, '');
    this.timeoutMs = options.timeoutMs ?? 30_000;
  }

  /** `GET /api/v1/state` */
  state(): Promise<StateView> {
    return this.json<StateView>('GET', '/api/v1/state', 'reading the cluster state');
  }

  /** `GET /api/v1/tasks/:id` */
  task(taskId: string): Promise<TaskView> {
    return this.json<TaskView>('GET', `/api/v1/tasks/${encodeURIComponent(taskId)}`, `reading task ${taskId}`);
  }

  /** `GET /api/v1/tasks/:id/logs?stream=&offset=` */
  logs(taskId: string, stream: LogStream, offset: number): Promise<LogChunk> {
    const query = new URLSearchParams({ stream, offset: String(offset) });
    return this.json<LogChunk>('GET', `/api/v1/tasks/${encodeURIComponent(taskId)}/logs?${query}`, `reading the ${stream} of task ${taskId}`);
  }

  /** `GET /api/v1/members`: the gossip view of this master (or agent: it answers the same path). */
  members(): Promise<MembersJson> {
    return this.json<MembersJson>('GET', '/api/v1/members', 'reading the gossip members');
  }

  /** `POST /api/v1/tasks/:id/kill`; resolves once the master accepted the kill (202). */
  async kill(taskId: string): Promise<void> {
    await this.send('POST', `/api/v1/tasks/${encodeURIComponent(taskId)}/kill`, `killing task ${taskId}`);
  }

  private async json<T>(method: string, path: string, what: string): Promise<T> {
    const text = await this.send(method, path, what);
    try {
      return JSON.parse(text) as T;
    } catch {
      throw new CairnError('CAIRN_BAD_REQUEST', `${what}: the master answered with something that is not JSON`);
    }
  }

  private async send(method: string, path: string, what: string): Promise<string> {
    let res: Response;
    let text: string;
    try {
      res = await fetch(`${this.baseUrl}${path}`, {
        method,
        headers: { accept: 'application/json' },
        signal: AbortSignal.timeout(this.timeoutMs),
      });
      text = await res.text();
    } catch (err) {
      throw new Error(`${what}: cannot reach the master at ${this.baseUrl}: ${describeFetchError(err)}`, { cause: err });
    }
    if (!res.ok) throw errorFromResponse(res.status, text, what);
    return text;
  }
}

/** fetch hides the socket error in `cause`; people need that part. */
function describeFetchError(err: unknown): string {
  const e = err as { name?: string; message?: string; cause?: { code?: string; message?: string } };
  if (e.name === 'TimeoutError') return 'no answer in time';
  return e.cause?.code ?? e.cause?.message ?? e.message ?? String(err);
}
