// A framework API as the command line reads it (jobs/client.ts, tune/client.ts, sharing/client.ts): requests to
// the masters given, following a follower's redirect to the leader with the credential kept
// (fetch would drop it on the way to another origin), trying the next master when one cannot
// be reached.

import { findToken } from '../../../shared/sdk/credentials.ts';
import { fetchFollowing } from '../../../shared/sdk/follow-redirects.ts';
import { errorFromResponse } from '../../../shared/sdk/http-error.ts';
import type { TlsClient, TlsFiles } from '../../../shared/tls.ts';
import { clientTls } from './client-tls.ts';
import type { CliIo } from './io.ts';

const TIMEOUT_MS = 30_000;

/** What a command's client of these APIs needs: the credential the CLI finds for the master, and its TLS client. */
export function apiClientOptions(masterUrl: string, tlsFiles: TlsFiles | undefined, io: CliIo): { token?: string; tls?: TlsClient } {
  const tls = clientTls(tlsFiles);
  const token = findToken(masterUrl, io.env);
  return { ...(token ? { token } : {}), ...(tls ? { tls } : {}) };
}

export abstract class MasterApiClient {
  private readonly urls: string[];
  private readonly dial: typeof fetch;

  constructor(masterUrl: string, private readonly opts: { token?: string; tls?: TlsClient } = {}) {
    this.urls = masterUrl.split(',').map((u) => u.trim().replace(/\/+$/, '')).filter((u) => u !== '');
    this.dial = opts.tls?.fetch ?? fetch;
  }

  /** The body of the first master's answer (an error answer thrown, as errorFromResponse makes it). */
  protected async request(method: string, path: string, what: string, send?: { body: string; contentType: string }): Promise<string> {
    const headers: Record<string, string> = { accept: 'application/json', ...(send ? { 'content-type': send.contentType } : {}), ...(this.opts.token ? { authorization: `Bearer ${this.opts.token}` } : {}) };
    const failures: string[] = [];
    for (const base of this.urls) {
      let res: Response;
      try {
        res = await fetchFollowing(this.dial, `${base}${path}`, () => ({ method, headers, ...(send ? { body: send.body } : {}), signal: AbortSignal.timeout(TIMEOUT_MS) }));
      } catch (err) {
        const e = err as { cause?: { code?: string }; message?: string };
        failures.push(`${base}: ${e.cause?.code ?? e.message ?? String(err)}`);
        continue;
      }
      const text = await res.text();
      if (!res.ok) throw errorFromResponse(res.status, text, what);
      return text;
    }
    throw new Error(`${what}: cannot reach the master (${failures.join('; ')})`);
  }
}
