// The one redirect loop every client of the masters uses (shared/sdk/follow-redirects.ts),
// driven by a fake fetch: a follower's 307 is followed with the same headers, to the hop limit.

import { describe, expect, it } from 'vitest';
import { fetchFollowing, followRedirects, MAX_REDIRECTS } from '../../shared/sdk/follow-redirects.ts';

/** A fake fetch: each URL answers as `routes` says; every request is recorded. */
function fakeDial(routes: Record<string, { status: number; location?: string; body?: string }>) {
  const seen: { url: string; auth: string | undefined; redirect: string | undefined }[] = [];
  const dial = (async (input: string | URL | Request, init?: RequestInit) => {
    const url = String(input);
    const headers = new Headers(init?.headers);
    seen.push({ url, auth: headers.get('authorization') ?? undefined, redirect: init?.redirect });
    const r = routes[url];
    if (!r) throw new TypeError(`fetch failed: ${url}`);
    return new Response(r.body ?? '', { status: r.status, headers: r.location ? { location: r.location } : {} });
  }) as typeof fetch;
  return { dial, seen };
}

describe('following a follower\'s redirect to the leader', () => {
  it('sends the request again to the leader with the same credential, and gives back its answer', async () => {
    const { dial, seen } = fakeDial({
      'http://follower:5050/api/v1/jobs': { status: 307, location: 'http://leader:5050/api/v1/jobs' },
      'http://leader:5050/api/v1/jobs': { status: 201, body: 'made' },
    });
    const res = await fetchFollowing(dial, 'http://follower:5050/api/v1/jobs', () => ({ method: 'POST', headers: { authorization: 'Bearer t' }, body: 'x' }));
    expect(res.status).toBe(201);
    expect(await res.text()).toBe('made');
    expect(seen).toEqual([
      { url: 'http://follower:5050/api/v1/jobs', auth: 'Bearer t', redirect: 'manual' },
      { url: 'http://leader:5050/api/v1/jobs', auth: 'Bearer t', redirect: 'manual' },
    ]);
  });

  it('resolves a relative Location against the URL redirected from', async () => {
    const { dial, seen } = fakeDial({
      'http://a:1/x': { status: 308, location: '/y' },
      'http://a:1/y': { status: 200 },
    });
    expect((await fetchFollowing(dial, 'http://a:1/x', () => ({}))).status).toBe(200);
    expect(seen.map((s) => s.url)).toEqual(['http://a:1/x', 'http://a:1/y']);
  });

  it('stops at the hop limit (a confused group) and gives back the last redirect', async () => {
    const { dial, seen } = fakeDial({
      'http://a:1/p': { status: 307, location: 'http://b:1/p' },
      'http://b:1/p': { status: 307, location: 'http://a:1/p' },
    });
    expect((await fetchFollowing(dial, 'http://a:1/p', () => ({}))).status).toBe(307);
    expect(seen).toHaveLength(MAX_REDIRECTS + 1);
    seen.length = 0;
    await fetchFollowing(dial, 'http://a:1/p', () => ({}), { maxRedirects: 5 });
    expect(seen).toHaveLength(6);
  });

  it('gives back a redirect without a Location as it is, or the error the caller asks for', async () => {
    const { dial } = fakeDial({ 'http://a:1/p': { status: 307 } });
    expect((await fetchFollowing(dial, 'http://a:1/p', () => ({}))).status).toBe(307);
    await expect(fetchFollowing(dial, 'http://a:1/p', () => ({}), { noLocation: (from) => new Error(`${from.origin} redirected without a Location`) }))
      .rejects.toThrow('http://a:1 redirected without a Location');
  });

  it('asks for the request anew at each hop, and tells of each hop where the caller maps it', async () => {
    let made = 0;
    const hops: string[] = [];
    const answers = [{ status: 307, location: 'http://l/api/v1/scheduler/x' }, { status: 202, location: undefined }];
    const res = await followRedirects(new URL('http://f/api/v1/scheduler'), async (u) => ({ u, a: answers[made++]! }), (r) => ({ ...r.a, discard: () => {} }), {
      target: (loc, from) => new URL(new URL(loc, from).pathname.replace(/\/x$/, ''), loc),
      onRedirect: (from, to) => hops.push(`${from.href} → ${to.href}`),
    });
    expect(res.u.href).toBe('http://l/api/v1/scheduler');
    expect(hops).toEqual(['http://f/api/v1/scheduler → http://l/api/v1/scheduler']);
  });

  it('passes on a failure to reach a master as it is', async () => {
    const { dial } = fakeDial({});
    await expect(fetchFollowing(dial, 'http://gone:1/', () => ({}))).rejects.toThrow('fetch failed');
  });
});
