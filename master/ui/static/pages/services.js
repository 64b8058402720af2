// Services (Marathon apps): every app with its instances, healthy and staged counts, the
// deployments in flight, and the launch queue with why each waiting instance waits.

import { useMemo, useState } from 'preact/hooks';
import { html, Ago, When } from '../html.js';
import { useLive } from '../live.js';
import { Table } from '../components/table.js';
import { Badge, Note } from '../components/badges.js';
import { formatNumber, parseIso } from '../components/series.js';

export const route = { pattern: /^#\/services\/?$/, title: 'Services', nav: 'Services' };

// ?cairn=true: with Cairn's tasksWaiting and the queue's waitingOn beside Marathon's fields.
const APPS = '/v2/apps?embed=apps.tasks,apps.deployments,apps.counts&cairn=true';
const TOPICS = ['builtin:marathon', 'tasks'];

export const appHref = (id) => `#/services/${encodeURIComponent(id)}`;

/** "InsufficientMemory: 12 offers · UnfulfilledConstraint: 3 offers", or the delay. */
export function waitReason(item) {
  const parts = (item.waitingOn ?? []).filter((w) => w.offers > 0).map((w) => `${w.reason}: ${w.offers} offer${w.offers === 1 ? '' : 's'}`);
  if (item.delay?.timeLeftSeconds > 0) parts.unshift(`backing off ${item.delay.timeLeftSeconds}s after failures`);
  if (parts.length > 0) return parts.join(' · ');
  return item.processedOffersSummary?.processedOffersCount > 0 ? 'offers seen, none declined yet' : 'no offers yet';
}

function health(a) {
  if (a.tasksUnhealthy > 0) return html`<${Badge} tone="bad">${a.tasksUnhealthy} unhealthy<//>`;
  if ((a.healthChecks ?? []).length === 0) return html`<span class="muted">no checks</span>`;
  return html`<${Badge} tone=${a.tasksHealthy >= a.instances ? 'good' : 'wait'}>${a.tasksHealthy} healthy<//>`;
}

function instances(a) {
  const tone = a.instances === 0 ? 'none' : a.tasksRunning >= a.instances ? 'good' : 'wait';
  return html`<${Badge} tone=${tone} title="running / wanted">${a.tasksRunning} / ${a.instances}<//>`;
}

const APP_COLUMNS = [
  { key: 'id', title: 'App', render: (a) => html`<a href=${appHref(a.id)}>${a.id}</a>` },
  { key: 'instances', title: 'Running', width: '7em', render: instances },
  { key: 'healthy', title: 'Health', width: '9em', render: health },
  { key: 'staged', title: 'Staged', align: 'right', width: '5em', render: (a) => a.tasksStaged },
  { key: 'waiting', title: 'Waiting', align: 'right', width: '5em', render: (a) => a.tasksWaiting ?? 0 },
  { key: 'res', title: 'Each', width: '11em', render: (a) => `${formatNumber(a.cpus)} cpu · ${formatNumber(a.mem)} MB${a.gpus ? ` · ${a.gpus} gpu` : ''}` },
  { key: 'deploy', title: 'Deploying', width: '7em', render: (a) => ((a.deployments ?? []).length > 0 ? html`<${Badge} tone="info">yes<//>` : '') },
  { key: 'version', title: 'Version', width: '10em', render: (a) => html`<${Ago} ms=${parseIso(a.version)} />` },
];

export const DEPLOYMENT_COLUMNS = [
  { key: 'id', title: 'Deployment', render: (d) => html`<code>${d.id}</code>` },
  { key: 'apps', title: 'Apps', render: (d) => (d.affectedApps ?? []).map((id) => html`<a href=${appHref(id)}>${id}</a> `) },
  { key: 'action', title: 'Action', render: (d) => (d.currentActions ?? []).map((a) => a.action).join(', ') },
  { key: 'step', title: 'Step', width: '5em', render: (d) => `${d.currentStep} / ${d.totalSteps}` },
  { key: 'version', title: 'Started', width: '10em', render: (d) => html`<${Ago} ms=${parseIso(d.version)} />` },
];

export const QUEUE_COLUMNS = [
  { key: 'app', title: 'App', render: (q) => html`<a href=${appHref(q.app.id)}>${q.app.id}</a>` },
  { key: 'count', title: 'Waiting', align: 'right', width: '5em', render: (q) => q.count },
  { key: 'why', title: 'Why it waits', render: (q) => waitReason(q) },
  { key: 'offers', title: 'Offers seen', align: 'right', width: '7em', render: (q) => q.processedOffersSummary?.processedOffersCount ?? 0 },
  { key: 'since', title: 'Since', width: '8em', render: (q) => html`<${When} ms=${parseIso(q.since)} />` },
];

export function Page() {
  const apps = useLive(APPS, TOPICS);
  const deployments = useLive('/v2/deployments', ['builtin:marathon']);
  // The reasons change as offers are declined, not only when the apps do.
  const queue = useLive('/v2/queue?cairn=true', ['builtin:marathon', 'tasks', 'offers']);
  const [filter, setFilter] = useState('');
  const rows = useMemo(() => {
    const list = apps.data?.apps ?? [];
    const f = filter.trim().toLowerCase();
    return f ? list.filter((a) => a.id.toLowerCase().includes(f)) : list;
  }, [apps.data, filter]);
  const open = (a) => (location.hash = appHref(a.id));
  const deps = Array.isArray(deployments.data) ? deployments.data : [];
  const waiting = queue.data?.queue ?? [];

  return html`<section class="page services">
    <header class="page-head">
      <h1>Services</h1>
      <input type="search" data-filter placeholder="Filter apps (/)" value=${filter} onInput=${(e) => setFilter(e.currentTarget.value)} aria-label="Filter apps" />
    </header>
    <${Note} ...${apps} />
    <${Table} label="Apps" columns=${APP_COLUMNS} rows=${rows} rowKey=${(a) => a.id} onOpen=${open}
      empty=${filter ? 'No app matches.' : 'No apps. Create one with POST /v2/apps (Marathon\'s API).'} />
    <h2>Deployments in flight</h2>
    <${Note} ...${deployments} />
    <${Table} label="Deployments" columns=${DEPLOYMENT_COLUMNS} rows=${deps} rowKey=${(d) => d.id}
      onOpen=${(d) => d.affectedApps?.[0] && open({ id: d.affectedApps[0] })} empty="No deployment in flight." />
    <h2>Launch queue</h2>
    <${Note} ...${queue} />
    <${Table} label="Launch queue" columns=${QUEUE_COLUMNS} rows=${waiting} rowKey=${(q) => q.app.id}
      onOpen=${(q) => open(q.app)} empty="No instance waits to launch." />
  </section>`;
}
