// One agent: what it offers and holds, its state, and its CPU, memory and GPU use over the
// last minutes (the samples it keeps; components/usage-charts.js); its tasks are a link to
// the task list filtered to it.
import { html, parseResources, fmtMiB, trim, When, ErrorNote, Tag, toneOf } from '../html.js';
import { useLive } from '../live.js';
import { UsageCharts } from '../components/usage-charts.js';

export const route = { pattern: /^#\/agents\/([^/?]+)$/, title: 'Agent' };

export function Page({ match }) {
  const id = decodeURIComponent(match[1]);
  const { data, error } = useLive('/api/v1/agents?limit=1000', ['agents', 'tasks']);
  const a = (data?.agents ?? []).find((x) => x.id === id);
  const state = a ? (!a.reachable ? 'unreachable' : a.draining ? 'draining' : 'reachable') : undefined;
  const r = parseResources(a?.resources);
  const u = parseResources(a?.used);
  return html`<div class="page agent">
    <header class="pagehead">
      <h1><a href="#/cluster" class="muted">Cluster</a> / ${a ? a.hostname : html`<span class="mono">${id}</span>`}</h1>
      ${state ? html`<${Tag} tone=${toneOf(state)}>${state}<//>` : null}
    </header>
    <${ErrorNote} error=${error} />
    ${data && !a ? html`<p class="error" role="alert">No agent ${id} is registered.</p>` : null}
    ${a ? html`<dl class="facts">
      <dt>Id</dt><dd class="mono">${a.id}</dd>
      <dt>Holds</dt><dd>${trim(u.cpus, 2)} of ${trim(r.cpus)} cpus · ${fmtMiB(u.mem)} of ${fmtMiB(r.mem)} · ${trim(u.gpus)} of ${trim(r.gpus)} gpus</dd>
      <dt>Registered</dt><dd><${When} ms=${a.registeredAtMs} ago /></dd>
      <dt>Tasks</dt><dd><a href=${`#/tasks?agent=${encodeURIComponent(a.id)}`}>its tasks</a></dd>
    </dl>
    <h2>Resource use <span class="muted">what its tasks use, sampled by the agent</span></h2>
    <${UsageCharts} path=${`/api/v1/agents/${encodeURIComponent(a.id)}/usage/history`} what="this agent" />` : null}
  </div>`;
}
