// Helpers for tests of the services framework: Marathon REST calls with the test
// principal's credential, and waits on what /v2/apps and /v2/deployments say.

import { expect } from 'vitest';
import { authHeaders } from './credentials.ts';
import { waitFor } from './processes.ts';

export interface MarathonAnswer {
  status: number;
  body: any;
  headers: Headers;
}

/**
 * One Marathon REST call; `body` is sent as JSON unless it is already a string. `auth`: the
 * Authorization headers to send (default: the test principal's).
 */
export async function marathon(base: string, method: string, path: string, body?: unknown, auth: Record<string, string> = authHeaders()): Promise<MarathonAnswer> {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: { ...auth, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
    ...(body !== undefined ? { body: typeof body === 'string' ? body : JSON.stringify(body) } : {}),
    redirect: 'follow',
    signal: AbortSignal.timeout(10_000),
  });
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = text === '' ? undefined : JSON.parse(text);
  } catch {
    // not JSON (ping)
  }
  return { status: res.status, body: parsed, headers: res.headers };
}

/** The app's tasks in TASK_RUNNING (and healthy, with health checks, when `healthy`). */
export async function runningTasks(base: string, appId: string, healthy = false): Promise<any[]> {
  const r = await marathon(base, 'GET', `/v2/apps${appId}`);
  if (r.status !== 200) return [];
  return (r.body.app.tasks as any[]).filter((t) => t.state === 'TASK_RUNNING' && (!healthy || t.healthCheckResults?.[0]?.alive === true));
}

export function waitForRunning(base: string, appId: string, n: number, timeoutMs = 30_000, healthy = false): Promise<any[]> {
  return waitFor(`${n} running task(s) of ${appId}`, async () => {
    const t = await runningTasks(base, appId, healthy);
    return t.length === n ? t : undefined;
  }, timeoutMs, 100);
}

export function waitForNoDeployments(base: string, timeoutMs = 30_000): Promise<boolean> {
  return waitFor('no deployment in flight', async () => {
    const r = await marathon(base, 'GET', '/v2/deployments');
    return r.status === 200 && (r.body as unknown[]).length === 0 ? true : undefined;
  }, timeoutMs, 100);
}

/**
 * An open /v2/events stream (`query`: e.g. `?event_type=...`): the events read so far, each
 * frame's `event:` name and its parsed `data:`. `auth`: as for `marathon`.
 */
export async function openEvents(base: string, query = '', auth: Record<string, string> = authHeaders()): Promise<{ frames(): any[]; names(): string[]; close(): void }> {
  const ac = new AbortController();
  const res = await fetch(`${base}/v2/events${query}`, { headers: { ...auth, accept: 'text/event-stream' }, signal: ac.signal });
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toContain('text/event-stream');
  let text = '';
  const reader = res.body!.getReader();
  void (async () => {
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return;
        text += Buffer.from(value).toString('utf8');
      }
    } catch {
      // closed
    }
  })();
  const raw = () => text.split('\n\n').filter((f) => f.startsWith('event: '));
  return {
    frames: () => raw().map((f) => JSON.parse(f.split('\ndata: ')[1]!)),
    names: () => raw().map((f) => f.split('\n')[0]!.slice('event: '.length)),
    close: () => ac.abort(),
  };
}
