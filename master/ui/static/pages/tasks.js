// Every task, newest first, read a page at a time (`/api/v1/tasks?offset&limit`) as the
// virtualised list scrolls to it: 10,000 tasks open as fast as 100. A change to the tasks
// reads the pages in view again. Filter by text and by state; `#/tasks?q=TEXT` deep-links a
// filter (the cluster page opens an agent's tasks that way).
import { useCallback, useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { api } from '../api.js';
import { html, Ago, fmtResources, StateTag, ErrorNote } from '../html.js';
import { onTopics, useLive } from '../live.js';
import { VirtualList } from '../components/virtual-list.js';

export const route = { pattern: /^#\/tasks(?:\?(.*))?$/, title: 'Tasks', nav: 'Tasks' };

const PAGE = 200;
const ROW = 30;
const STATES = ['', 'STAGING', 'STARTING', 'RUNNING', 'FINISHED', 'FAILED', 'KILLED', 'LOST'];

/**
 * The tasks matching `query`, as pages read on demand. `ensure(first, last)` reads the pages
 * that hold those rows; a change to the tasks drops the pages read and reads those in view again.
 */
function useTaskPages(query) {
  const [, setVersion] = useState(0);
  const store = useRef(null);
  const [error, setError] = useState(null);
  if (!store.current || store.current.query !== query) {
    store.current = { query, pages: new Map(), loading: new Set(), total: undefined, view: [0, 50], generation: 0, all: undefined };
  }
  const s = store.current;

  const load = useCallback(async (page, generation) => {
    const cur = store.current;
    const key = `${generation}:${page}`;
    if (cur.loading.has(key)) return;
    cur.loading.add(key);
    try {
      let body;
      if (cur.all) {
        body = await cur.all();
        body = { total: body.length, tasks: body.slice(page * PAGE, (page + 1) * PAGE) };
      } else {
        try {
          body = await api.get(`/api/v1/tasks?offset=${page * PAGE}&limit=${PAGE}${cur.query}`);
        } catch (err) {
          if (err.status !== 404) throw err;
          // A master without the paginated read: the state's task list, sorted and filtered here.
          cur.all = fallbackReader(cur.query);
          body = await cur.all();
          body = { total: body.length, tasks: body.slice(page * PAGE, (page + 1) * PAGE) };
        }
      }
      if (store.current !== cur || cur.generation !== generation) return;
      cur.pages.set(page, body.tasks);
      cur.total = body.total;
      setError(null);
    } catch (err) {
      if (store.current === cur) setError(err);
    } finally {
      cur.loading.delete(key);
      setVersion((v) => v + 1);
    }
  }, []);

  const ensure = useCallback((first, last) => {
    const cur = store.current;
    cur.view = [first, last];
    for (let p = Math.floor(first / PAGE); p <= Math.floor(Math.max(first, last) / PAGE); p++) {
      if (!cur.pages.has(p)) void load(p, cur.generation);
    }
  }, [load]);

  useEffect(() => {
    ensure(0, 50);
    return onTopics(['tasks', 'frameworks'], () => {
      const cur = store.current;
      // Pages out of view are dropped; those in view are read again (kept on screen meanwhile).
      cur.generation++;
      const [first, last] = cur.view;
      const keep = new Set();
      for (let p = Math.floor(first / PAGE); p <= Math.floor(Math.max(first, last) / PAGE); p++) keep.add(p);
      for (const p of [...cur.pages.keys()]) if (!keep.has(p)) cur.pages.delete(p);
      if (cur.all) cur.all.stale = true;
      for (const p of keep) void load(p, cur.generation);
    });
  }, [query]);

  return { total: s.total, row: (i) => s.pages.get(Math.floor(i / PAGE))?.[i % PAGE], ensure, error };
}

function fallbackReader(query) {
  const params = new URLSearchParams(query.replace(/^&/, ''));
  let cached;
  const read = async () => {
    if (cached && !read.stale) return cached;
    read.stale = false;
    const state = await api.get('/api/v1/state');
    const q = params.get('q') ?? '';
    const st = params.get('state');
    cached = state.tasks
      .filter((t) => (!st || t.state === `TASK_${st}`) && (!q || `${t.id} ${t.name} ${t.agentId} ${t.frameworkId}`.includes(q)))
      .sort((a, b) => b.launchedAtMs - a.launchedAtMs);
    return cached;
  };
  return read;
}

function useNow(everyMs) {
  const [now, setNow] = useState(Date.now());
  useEffect(() => {
    const t = setInterval(() => setNow(Date.now()), everyMs);
    return () => clearInterval(t);
  }, [everyMs]);
  return now;
}

export function Page({ match }) {
  const initial = new URLSearchParams(match?.[1] ?? '');
  const [q, setQ] = useState(initial.get('q') ?? '');
  const [qDebounced, setQDebounced] = useState(q);
  const [state, setState] = useState(initial.get('state') ?? '');
  useEffect(() => {
    const t = setTimeout(() => setQDebounced(q), 200);
    return () => clearTimeout(t);
  }, [q]);
  const query = `${state ? `&state=${state}` : ''}${qDebounced ? `&q=${encodeURIComponent(qDebounced)}` : ''}`;
  const pages = useTaskPages(query);
  const now = useNow(5000);

  // Agent host names, read after the first rows are on screen.
  const [wantNames, setWantNames] = useState(false);
  useEffect(() => {
    const t = setTimeout(() => setWantNames(true), 300);
    return () => clearTimeout(t);
  }, []);
  const agents = useLive(wantNames ? '/api/v1/agents?limit=1000' : null, ['agents']);
  const hostOf = useMemo(() => new Map((agents.data?.agents ?? []).map((a) => [a.id, a.hostname])), [agents.data]);

  const open = (i) => {
    const t = pages.row(i);
    if (t) location.hash = `#/tasks/${encodeURIComponent(t.id)}`;
  };

  const renderRow = (i) => {
    const t = pages.row(i);
    if (!t) return html`<span class="c-state muted">…</span><span class="c-name muted">loading</span>`;
    return html`<span class="c-state"><${StateTag} state=${t.state} /></span>
      <span class="c-name"><a href=${`#/tasks/${encodeURIComponent(t.id)}`} title=${t.id}>${t.name || t.id}</a>${t.name && t.name !== t.id ? html` <span class="mono muted">${t.id}</span>` : null}</span>
      <span class="c-agent" title=${t.agentId}>${hostOf.get(t.agentId) ?? t.agentId.slice(-10)}</span>
      <span class="c-fw" title=${t.frameworkId}>${t.frameworkName || html`<span class="mono">${t.frameworkId.slice(-10)}</span>`}</span>
      <span class="c-res">${fmtResources(t.resources)}</span>
      <span class="c-age num"><${Ago} ms=${t.launchedAtMs} now=${now} /></span>`;
  };

  const total = pages.total;
  return html`<div class="page tasks">
    <header class="pagehead">
      <h1>Tasks <span class="muted count">${total === undefined ? '' : total}</span></h1>
      <input data-filter type="search" placeholder="filter tasks (/)" value=${q} onInput=${(e) => setQ(e.target.value)} aria-label="filter tasks" />
      <select value=${state} onChange=${(e) => setState(e.target.value)} aria-label="state">
        ${STATES.map((s) => html`<option value=${s}>${s ? s.toLowerCase() : 'any state'}</option>`)}
      </select>
    </header>
    <${ErrorNote} error=${pages.error} />
    <${VirtualList} className="tasklist" label="tasks" count=${total ?? 0} rowHeight=${ROW} renderRow=${renderRow} onRange=${pages.ensure} onOpen=${open}
      header=${html`<span class="c-state">State</span><span class="c-name">Task</span><span class="c-agent">Agent</span><span class="c-fw">Framework</span><span class="c-res">Resources</span><span class="c-age num">Age</span>`} />
    ${total === 0 ? html`<p class="muted">No tasks${query ? ' match' : ' yet'}.</p>` : null}
  </div>`;
}
