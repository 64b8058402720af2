// The tuning API as the command line reads it: `/api/v1/experiments` on the masters given,
// following a follower's redirect to the leader with the credential kept (fetch would drop it
// on the way to another origin), trying the next master when one cannot be reached — as the
// jobs client does (job-client.ts).

import type { ExperimentSummary, ExperimentView } from '../../master/frameworks/tuning/views.ts';
import type { IgnoredField } from '../../master/frameworks/tuning/model.ts';
import { errorFromResponse } from '../../shared/sdk/http-error.ts';
import type { TlsClient } from '../../shared/tls.ts';

const MAX_REDIRECTS = 3;
const TIMEOUT_MS = 30_000;

export interface ExperimentSubmitAnswer {
  name: string;
  seed: number;
  ignored: IgnoredField[];
}

export interface ResumeLimits {
  maxTrialCount?: number;
  maxFailedTrialCount?: number;
}

export class ExperimentsClient {
  private readonly urls: string[];
  private readonly dial: typeof fetch;

  constructor(masterUrl: string, private readonly opts: { token?: string; tls?: TlsClient } = {}) {
    this.urls = masterUrl.split(',').map((u) => u.trim().replace(/\/+$/, '')).filter((u) => u !== '');
    this.dial = opts.tls?.fetch ?? fetch;
  }

  submit(document: string, contentType: string): Promise<ExperimentSubmitAnswer> {
    return this.json('POST', '/api/v1/experiments', 'submitting the experiment', { body: document, contentType });
  }

  async list(): Promise<ExperimentSummary[]> {
    return (await this.json<{ experiments: ExperimentSummary[] }>('GET', '/api/v1/experiments', 'listing experiments')).experiments;
  }

  get(name: string): Promise<ExperimentView> {
    return this.json('GET', `/api/v1/experiments/${encodeURIComponent(name)}`, `reading experiment ${name}`);
  }

  async stop(name: string): Promise<void> {
    await this.json('POST', `/api/v1/experiments/${encodeURIComponent(name)}/stop`, `stopping experiment ${name}`, { body: '{}', contentType: 'application/json' });
  }

  async resume(name: string, limits: ResumeLimits): Promise<void> {
    await this.json('POST', `/api/v1/experiments/${encodeURIComponent(name)}/resume`, `resuming experiment ${name}`, { body: JSON.stringify(limits), contentType: 'application/json' });
  }

  async remove(name: string): Promise<void> {
    await this.json('DELETE', `/api/v1/experiments/${encodeURIComponent(name)}`, `deleting experiment ${name}`);
  }

  private async json<T>(method: string, path: string, what: string, send?: { body: string; contentType: string }): Promise<T> {
    const headers: Record<string, string> = { accept: 'application/json', ...(send ? { 'content-type': send.contentType } : {}), ...(this.opts.token ? { authorization: `Bearer ${this.opts.token}` } : {}) };
    const failures: string[] = [];
    for (const base of this.urls) {
      let url = `${base}${path}`;
      let res: Response;
      try {
        res = await this.dial(url, { method, headers, redirect: 'manual', ...(send ? { body: send.body } : {}), signal: AbortSignal.timeout(TIMEOUT_MS) });
        for (let hop = 0; hop < MAX_REDIRECTS && (res.status === 307 || res.status === 308); hop++) {
          const location = res.headers.get('location');
          if (!location) break;
          await res.body?.cancel().catch(() => undefined);
          url = new URL(location, url).href;
          res = await this.dial(url, { method, headers, redirect: 'manual', ...(send ? { body: send.body } : {}), signal: AbortSignal.timeout(TIMEOUT_MS) });
        }
      } catch (err) {
        const e = err as { cause?: { code?: string }; message?: string };
        failures.push(`${base}: ${e.cause?.code ?? e.message ?? String(err)}`);
        continue;
      }
      const text = await res.text();
      if (!res.ok) throw errorFromResponse(res.status, text, what);
      return (text === '' ? undefined : JSON.parse(text)) as T;
    }
    throw new Error(`${what}: cannot reach the master (${failures.join('; ')})`);
  }
}
