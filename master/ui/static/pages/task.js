// One task: what it is and where it runs, its status history (the latest 20 changes, why,
// who said so) and its log, streamed live.
import { html, fmtResources, When, StateTag, ErrorNote, stateName } from '../html.js';
import { useLive } from '../live.js';
import { Table } from '../components/table.js';
import { LogView } from '../components/log-view.js';
import { UsageCharts } from '../components/usage-charts.js';

export const route = { pattern: /^#\/tasks\/([^/?]+)$/, title: 'Task' };

export function Page({ match }) {
  const id = decodeURIComponent(match[1]);
  const { data: t, error } = useLive(`/api/v1/tasks/${encodeURIComponent(id)}`, ['tasks']);
  const agents = useLive('/api/v1/agents?limit=1000', ['agents']);
  const agent = (agents.data?.agents ?? []).find((a) => a.id === t?.agentId);
  return html`<div class="page task">
    <header class="pagehead">
      <h1><a href="#/tasks" class="muted">Tasks</a> / <span class="mono">${t?.name || id}</span></h1>
      ${t ? html`<${StateTag} state=${t.state} />` : null}
    </header>
    <${ErrorNote} error=${error} />
    ${t ? html`<dl class="facts">
      <dt>Id</dt><dd class="mono">${t.id}</dd>
      <dt>Agent</dt><dd>${agent ? html`${agent.hostname} ` : null}<span class="mono muted">${t.agentId}</span></dd>
      <dt>Framework</dt><dd>${t.frameworkName ? html`<span class="fwname" title=${t.frameworkId}>${t.frameworkName}</span>` : html`<span class="mono">${t.frameworkId}</span>`}</dd>
      <dt>Resources</dt><dd>${fmtResources(t.resources)} <span class="muted mono">${t.resources}</span></dd>
      <dt>Launched</dt><dd><${When} ms=${t.launchedAtMs} ago /></dd>
      <dt>Updated</dt><dd><${When} ms=${t.updatedAtMs} /></dd>
      ${t.exitCode !== undefined ? html`<dt>Exit code</dt><dd>${t.exitCode}</dd>` : null}
      ${t.healthCheck ? html`<dt>Health</dt><dd>${t.healthCheck}: ${t.healthy === undefined ? 'not checked yet' : t.healthy ? 'healthy' : 'unhealthy'}</dd>` : null}
      ${t.reason ? html`<dt>Reason</dt><dd class="mono">${t.reason}</dd>` : null}
      ${t.message ? html`<dt>Message</dt><dd>${t.message}</dd>` : null}
    </dl>` : null}
    <${LogView} taskId=${id} />
    <h2>Resource use <span class="muted">sampled by its agent</span></h2>
    <${UsageCharts} path=${`/api/v1/tasks/${encodeURIComponent(id)}/usage/history`} what="this task" />
    ${t?.history ? html`<section>
      <h2>Status history</h2>
      <${Table} label="status history" rows=${[...t.history].reverse()} rowKey=${(c) => `${c.atMs}-${c.state}`} columns=${[
        { key: 'atMs', title: 'When', width: '13em', render: (c) => html`<${When} ms=${c.atMs} />` },
        { key: 'state', title: 'State', width: '8em', render: (c) => html`<${StateTag} state=${c.state} />` },
        { key: 'reason', title: 'Reason', render: (c) => html`<span class="mono">${c.reason || '—'}</span>` },
        { key: 'message', title: 'Message', render: (c) => c.message || '' },
        { key: 'source', title: 'Source', width: '8em', render: (c) => stateName(c.source.replace(/^SOURCE_/, '')) },
      ]} />
    </section>` : null}
  </div>`;
}
