// Helpers for tests of the services framework: Marathon REST calls with the test
// principal's credential, and waits on what /v2/apps and /v2/deployments say.

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
