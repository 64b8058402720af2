// The one way a client of the masters follows a follower's redirect to the leader: a
// follower answers 307 (or 308) with the leader's URL in Location, and the request is sent
// again there, by hand — fetch would drop the Authorization header on the way to another
// origin, and the leader would answer 401. A leader never redirects, so a few hops at most
// mean a confused group, and the last answer is given back as it is.
//
// followRedirects() is the loop over any way of sending (fetch for the REST clients, a
// keep-alive node:http pool and the event stream for the scheduler client); fetchFollowing()
// is that loop over fetch.

/** A follower names the leader; the leader never redirects. More hops mean a confused group. */
export const MAX_REDIRECTS = 3;

export function isRedirect(status: number): boolean {
  return status === 307 || status === 308;
}

/** What the loop needs to know of an answer. */
export interface Answer {
  status: number;
  /** The Location header, if any. */
  location: string | undefined;
  /** Drops the body of an answer that is followed (frees its connection). */
  discard(): void | Promise<void>;
}

export interface FollowOptions {
  /** Hops at most (default MAX_REDIRECTS). */
  maxRedirects?: number;
  /** Where a Location sends the request (default: the Location resolved against the URL redirected from). */
  target?: (location: string, from: URL) => URL;
  /** A redirect that names no Location: an error to throw (default: the answer is given back as it is). */
  noLocation?: (from: URL, status: number) => Error;
  /** Told of each hop (a log line; the scheduler client keeps the new endpoint). */
  onRedirect?: (from: URL, to: URL) => void;
}

/** Sends to `url`, and again wherever a redirect points, up to the hop limit; gives back the last answer. */
export async function followRedirects<R>(url: URL, send: (url: URL) => Promise<R>, view: (answer: R) => Answer, o: FollowOptions = {}): Promise<R> {
  const maxRedirects = o.maxRedirects ?? MAX_REDIRECTS;
  let res = await send(url);
  for (let hop = 0; hop < maxRedirects; hop++) {
    const a = view(res);
    if (!isRedirect(a.status)) break;
    if (!a.location) {
      if (o.noLocation) {
        await a.discard();
        throw o.noLocation(url, a.status);
      }
      break;
    }
    await a.discard();
    const next = o.target ? o.target(a.location, url) : new URL(a.location, url);
    o.onRedirect?.(url, next);
    url = next;
    res = await send(url);
  }
  return res;
}

/**
 * One fetch, following a follower's redirects to the leader with the same headers (the
 * credential kept). `init` is asked for each hop (a fresh time-out signal each, if it makes
 * one); its `redirect` is always 'manual'.
 */
export function fetchFollowing(dial: typeof fetch, url: string, init: () => RequestInit, o: FollowOptions = {}): Promise<Response> {
  return followRedirects(new URL(url), (u) => dial(u.href, { ...init(), redirect: 'manual' }), (res) => ({
    status: res.status,
    location: res.headers.get('location') ?? undefined,
    discard: () => res.body?.cancel().catch(() => undefined),
  }), o);
}
