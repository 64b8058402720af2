// The dashboard's one door to the masters. Every call carries the Bearer token kept in
// sessionStorage (asked for by the login form when missing or refused; a `#login=CODE` link
// is redeemed at start). A call is sent to this page's own master first; one that meets a
// network error or a 502/503 is tried again on the other masters known from the event stream's
// `hello` (the leader first) — they answer this page's origin with CORS, being of the same
// replication group — and the master that answered becomes the one asked first next time (so
// a dead master is not waited on again and again). A follower's 307 to the leader is not
// left to fetch (a browser drops the Authorization header on a redirect to another origin):
// the call is sent to the leader itself, token and all.
const TOKEN_KEY = 'cairn.token';
/** How long one call may take before the next master is tried (streams: up to their headers). */
const CALL_TIMEOUT_MS = 8000;

export class ApiError extends Error {
  constructor(status, message, body) {
    super(message);
    this.status = status;
    this.body = body;
    this.code = body?.code;
  }
}

const own = location.origin;
let current = own;
let leader = null;
let masters = [];
let reachable = true;
let lastError = null;
const statusListeners = new Set();
const loginListeners = new Set();

function origin(url) {
  try {
    return new URL(url).origin;
  } catch {
    return null;
  }
}

function emitStatus() {
  const s = status();
  for (const fn of statusListeners) fn(s);
}

function status() {
  return { reachable, current, leader, masters: [...masters], error: lastError };
}

/** The masters to try, in order: the one that answered last (at first this page's own), this page's own, the leader, the rest. */
function candidates() {
  const list = [current, own, leader, ...masters].filter(Boolean);
  return [...new Set(list)];
}

/** Why a login is needed, said before anyone listened (a link redeemed before the page drew): told to the first listener. */
let unheardReason;

function needLogin(reason) {
  if (loginListeners.size === 0) unheardReason = reason;
  for (const fn of loginListeners) fn(reason);
}

async function errorOf(res) {
  let body;
  try {
    body = await res.json();
  } catch {
    body = undefined;
  }
  return new ApiError(res.status, body?.message ?? `${res.status} ${res.statusText}`, body);
}

/** A fetch through the first master that answers; resolves with the Response (2xx only). */
async function request(path, init = {}, { stream = false, auth = true } = {}) {
  const headers = { ...(init.headers ?? {}) };
  if (auth) {
    const t = token();
    if (!t) {
      needLogin('');
      throw new ApiError(401, 'not logged in');
    }
    headers.authorization = `Bearer ${t}`;
  }
  let last;
  const queue = candidates();
  const tried = new Set();
  while (queue.length > 0) {
    const o = queue.shift();
    if (tried.has(o)) continue;
    tried.add(o);
    const url = (o === own ? '' : o) + path;
    const timeout = new AbortController();
    const timer = setTimeout(() => timeout.abort(new DOMException('no answer in time', 'TimeoutError')), CALL_TIMEOUT_MS);
    const signal = init.signal ? AbortSignal.any([init.signal, timeout.signal]) : timeout.signal;
    let res;
    try {
      res = await fetch(url, { ...init, headers, signal, cache: 'no-store', redirect: 'manual' });
    } catch (err) {
      clearTimeout(timer);
      if (init.signal?.aborted) throw err;
      last = new ApiError(0, `${o} did not answer (${err.message ?? err})`);
      continue;
    } finally {
      if (!stream) clearTimeout(timer);
    }
    if (stream) clearTimeout(timer);
    if (res.type === 'opaqueredirect') {
      // A follower's 307 to the leader: ask the leader (from `hello`) next.
      last = new ApiError(503, `${o} is not the leader${leader ? '' : ' and no leader is known yet'}`);
      if (leader && !tried.has(leader)) queue.unshift(leader);
      continue;
    }
    if (res.status === 502 || res.status === 503) {
      last = await errorOf(res);
      continue;
    }
    if (current !== o || !reachable) {
      current = o;
      reachable = true;
      lastError = null;
      emitStatus();
    }
    if (res.status === 401) {
      const err = await errorOf(res);
      if (auth) {
        sessionStorage.removeItem(TOKEN_KEY);
        needLogin(err.message);
      }
      throw err;
    }
    if (!res.ok) throw await errorOf(res);
    return res;
  }
  reachable = false;
  lastError = last?.message ?? 'no master answered';
  emitStatus();
  throw last ?? new ApiError(0, 'no master answered');
}

export function token() {
  return sessionStorage.getItem(TOKEN_KEY);
}

/** An answer index.html asked for before the modules loaded, taken once; undefined when none (or it failed). */
async function prefetched(path) {
  const p = window.cairnPrefetch?.[path];
  if (!p) return undefined;
  delete window.cairnPrefetch[path];
  try {
    const res = await p;
    return res.ok ? res : undefined;
  } catch {
    return undefined;
  }
}

export const api = {
  async get(path, init = {}) {
    const early = await prefetched(path);
    if (early) return early.json();
    return (await request(path, init)).json();
  },
  async post(path, body, init = {}) {
    const res = await request(path, { ...init, method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body ?? {}) });
    const text = await res.text();
    return text ? JSON.parse(text) : undefined;
  },
  /** Reads an NDJSON answer line by line (a followed log) until it ends or `signal` aborts. */
  async stream(path, onLine, signal) {
    const res = await request(path, { signal }, { stream: true });
    const reader = res.body.getReader();
    const decoder = new TextDecoder();
    let buf = '';
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      buf += decoder.decode(value, { stream: true });
      let nl;
      while ((nl = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, nl).trim();
        buf = buf.slice(nl + 1);
        if (line) onLine(JSON.parse(line));
      }
    }
    if (buf.trim()) onLine(JSON.parse(buf));
  },
  /** The raw Response of a GET (the event stream reads its body itself). */
  raw(path, init = {}) {
    return request(path, init, { stream: true });
  },
  token,
  setToken(t) {
    sessionStorage.setItem(TOKEN_KEY, t.trim());
  },
  logout() {
    sessionStorage.removeItem(TOKEN_KEY);
    needLogin('');
  },
  /** Redeems a one-time login code (a `cairn ui` link) for a token. */
  async redeem(code) {
    const res = await request('/api/v1/ui/redeem', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ code }) }, { auth: false });
    const { token: t } = await res.json();
    sessionStorage.setItem(TOKEN_KEY, t);
    return t;
  },
  /** What `hello` said: every master's URL and the leader's. */
  setMasters(list, lead) {
    masters = (list ?? []).map(origin).filter(Boolean);
    leader = lead ? origin(lead) : null;
    emitStatus();
  },
  status,
  onStatus(fn) {
    statusListeners.add(fn);
    return () => statusListeners.delete(fn);
  },
  onLoginNeeded(fn) {
    loginListeners.add(fn);
    if (unheardReason !== undefined) {
      const reason = unheardReason;
      unheardReason = undefined;
      fn(reason);
    }
    return () => loginListeners.delete(fn);
  },
};

/** Redeems `#login=CODE` when the page was opened with one, and removes it from the URL. */
export async function redeemFromHash() {
  const m = /(?:^#|&)login=([^&]+)/.exec(location.hash);
  if (!m) return;
  history.replaceState(null, '', location.pathname + location.search + '#/cluster');
  try {
    await api.redeem(decodeURIComponent(m[1]));
  } catch (err) {
    // An expired link is the common case (they last a minute): say so plainly, and what to do.
    if (err.code === 'CAIRN_LINK_EXPIRED') needLogin('This login link has expired (links last 60 s). Run cairn ui again for a new link, or paste a token.');
    else if (err.code === 'CAIRN_UNKNOWN_LINK') needLogin('This login link was used already (each works once) or was made by another master. Run cairn ui again, or paste a token.');
    else needLogin(`that login link did not work (${err.message}); paste a token instead`);
  }
}
