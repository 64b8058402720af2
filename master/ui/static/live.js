// Live updates: one reader of the master's `/api/v1/events` (fetch-based: EventSource cannot
// send the Authorization header). `change` events name topics; every `useLive` whose topics
// they name fetches its path again. `hello` names the masters and the leader (handed to
// api.js, which tries them when calls fail). When the stream breaks it reconnects, through
// api.js (this page's own master first, then the others of `hello`, the leader first, each
// with the token: the masters of one group answer each other's pages with CORS), to whichever
// master answers, and everything is read again (changes may have been
// missed meanwhile). A master without the endpoint is read again every 5 s instead.

import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { api, ApiError } from './api.js';

/** Silence longer than this (the master comments every 15 s) means the stream is dead. */
const SILENCE_MS = 40_000;
const FALLBACK_POLL_MS = 5000;

const subscribers = new Set();
const helloListeners = new Set();
const connListeners = new Set();
let hello = null;
let connected = false;
let started = false;

function setConnected(v) {
  if (connected === v) return;
  connected = v;
  for (const fn of connListeners) fn(v);
}

function publish(topics) {
  const set = new Set(topics);
  for (const s of subscribers) if (s.topics.length === 0 ? false : s.topics.some((t) => set.has(t))) s.fn();
}

function publishAll() {
  for (const s of subscribers) s.fn();
}

function onEvent(event, data) {
  if (event === 'change') {
    publish(data?.topics ?? []);
  } else if (event === 'hello') {
    hello = data;
    api.setMasters(data?.masters ?? [], data?.leader ?? null);
    for (const fn of helloListeners) fn(hello);
  }
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function readStream(res, abort) {
  const reader = res.body.getReader();
  const decoder = new TextDecoder();
  let buf = '';
  let watchdog = setTimeout(abort, SILENCE_MS);
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      clearTimeout(watchdog);
      watchdog = setTimeout(abort, SILENCE_MS);
      buf += decoder.decode(value, { stream: true });
      let end;
      while ((end = buf.search(/\r?\n\r?\n/)) >= 0) {
        const block = buf.slice(0, end);
        buf = buf.slice(end).replace(/^\r?\n\r?\n/, '');
        let event = 'message';
        const data = [];
        for (const line of block.split(/\r?\n/)) {
          if (line.startsWith(':')) continue;
          const i = line.indexOf(':');
          const field = i < 0 ? line : line.slice(0, i);
          const value = i < 0 ? '' : line.slice(i + 1).replace(/^ /, '');
          if (field === 'event') event = value;
          else if (field === 'data') data.push(value);
        }
        if (data.length === 0) continue;
        let parsed;
        try {
          parsed = JSON.parse(data.join('\n'));
        } catch {
          continue;
        }
        onEvent(event, parsed);
      }
    }
  } finally {
    clearTimeout(watchdog);
  }
}

async function run() {
  let backoff = 250;
  let first = true;
  for (;;) {
    if (!api.token()) {
      await sleep(500);
      continue;
    }
    const ctl = new AbortController();
    try {
      const res = await api.raw('/api/v1/events', { signal: ctl.signal, headers: { accept: 'text/event-stream' } });
      setConnected(true);
      backoff = 250;
      // Whatever changed while no stream was open is read again.
      if (!first) publishAll();
      first = false;
      await readStream(res, () => ctl.abort());
    } catch (err) {
      if (err instanceof ApiError && (err.status === 404 || err.status === 405)) {
        // A master without the event stream: read everything again now and then.
        setConnected(false);
        await sleep(FALLBACK_POLL_MS);
        publishAll();
        continue;
      }
    }
    ctl.abort();
    setConnected(false);
    await sleep(backoff);
    backoff = Math.min(backoff * 2, 2000);
    if (!first) publishAll();
  }
}

export function startLive() {
  if (started) return;
  started = true;
  void run();
}

/** Calls `fn` whenever a change names one of `topics` (and after a reconnect); returns the unsubscribe. */
export function onTopics(topics, fn) {
  const s = { topics, fn };
  subscribers.add(s);
  return () => subscribers.delete(s);
}

/**
 * `path`'s JSON, fetched now and again whenever a change names one of `topics`: `{ data, error,
 * loading, reload }`. The last data stays while a read again is in flight or fails.
 */
export function useLive(path, topics = [], deps = []) {
  const [state, setState] = useState({ data: undefined, error: undefined, loading: true, path });
  const runRef = useRef(() => {});
  useEffect(() => {
    if (!path) return undefined;
    let alive = true;
    let inFlight = false;
    let again = false;
    setState((s) => (s.path === path ? { ...s, loading: true } : { data: undefined, error: undefined, loading: true, path }));
    const go = async () => {
      if (inFlight) {
        again = true;
        return;
      }
      inFlight = true;
      try {
        const data = await api.get(path);
        if (alive) setState({ data, error: undefined, loading: false, path });
      } catch (error) {
        if (alive) setState((s) => ({ ...s, error, loading: false }));
      }
      inFlight = false;
      if (again && alive) {
        again = false;
        void go();
      }
    };
    runRef.current = go;
    void go();
    const off = onTopics(topics, go);
    return () => {
      alive = false;
      off();
    };
  }, [path, topics.join(','), ...deps]);
  const reload = useCallback(() => runRef.current(), []);
  return { data: state.path === path ? state.data : undefined, error: state.error, loading: state.loading, reload };
}

/** The latest `hello` (role, leader, masters), or null before the first. */
export function useLeader() {
  const [h, setH] = useState(hello);
  useEffect(() => {
    helloListeners.add(setH);
    setH(hello);
    return () => helloListeners.delete(setH);
  }, []);
  return h;
}

/** Whether the event stream is open right now. */
export function useConnected() {
  const [c, setC] = useState(connected);
  useEffect(() => {
    connListeners.add(setC);
    setC(connected);
    return () => connListeners.delete(setC);
  }, []);
  return c;
}
