// One service (a Marathon app): what it runs and asks for, its tasks (each linking to the
// task's page and log), its deployment and queue entry while it has them, and its versions.

import { html, Ago, When } from '../html.js';
import { useLive } from '../live.js';
import { Table } from '../components/table.js';
import { Badge, Facts, Note, StateBadge, TaskLink } from '../components/badges.js';
import { formatNumber, parseIso } from '../components/series.js';
import { DEPLOYMENT_COLUMNS, QUEUE_COLUMNS } from './services.js';

export const route = { pattern: /^#\/services\/(.+)$/, title: 'Service' };

const TOPICS = ['builtin:marathon', 'tasks'];

/** The app's API path: its id's segments, each encoded (ids nest: /team/web). */
export const appPath = (id) => `/v2/apps/${id.split('/').filter(Boolean).map(encodeURIComponent).join('/')}`;

function health(t) {
  const r = t.healthCheckResults?.[0];
  if (!r) return '';
  return html`<${Badge} tone=${r.alive ? 'good' : 'bad'}>${r.alive ? 'healthy' : 'unhealthy'}<//>`;
}

const TASK_COLUMNS = [
  { key: 'id', title: 'Task', render: (t) => html`<${TaskLink} id=${t.id} />` },
  { key: 'state', title: 'State', width: '8em', render: (t) => html`<${StateBadge} state=${t.state} />` },
  { key: 'health', title: 'Health', width: '7em', render: health },
  { key: 'host', title: 'Host', render: (t) => t.host },
  { key: 'ports', title: 'Ports', render: (t) => (t.ports ?? []).join(', ') },
  { key: 'started', title: 'Started', width: '9em', render: (t) => html`<${Ago} ms=${parseIso(t.startedAt ?? t.stagedAt)} />` },
  { key: 'version', title: 'Version', width: '11em', render: (t) => html`<${When} ms=${parseIso(t.version)} />` },
];

const VERSION_COLUMNS = [
  { key: 'v', title: 'Version', render: (v) => html`<${When} ms=${parseIso(v)} ago />` },
];

function summary(a) {
  const docker = a.container?.docker;
  return [
    ['Command', a.cmd ? html`<code>${a.cmd}</code>` : (a.args ?? []).length ? html`<code>${a.args.join(' ')}</code>` : undefined],
    ['Image', docker?.image],
    ['Instances', `${a.tasksRunning} running of ${a.instances} · ${a.tasksStaged} staged${a.tasksWaiting ? ` · ${a.tasksWaiting} waiting` : ''}`],
    ['Health', (a.healthChecks ?? []).length ? `${a.tasksHealthy} healthy · ${a.tasksUnhealthy} unhealthy (${a.healthChecks.map((h) => h.protocol).join(', ')})` : 'no health checks'],
    ['Each instance', `${formatNumber(a.cpus)} cpu · ${formatNumber(a.mem)} MB memory · ${formatNumber(a.disk)} MB disk${a.gpus ? ` · ${a.gpus} gpu` : ''}`],
    ['Constraints', (a.constraints ?? []).map((c) => c.join(' ')).join('; ')],
    ['Labels', Object.entries(a.labels ?? {}).map(([k, v]) => `${k}=${v}`).join(', ')],
    ['Role', a.role],
    ['Version', a.version ? html`<${When} ms=${parseIso(a.version)} ago />` : undefined],
  ];
}

export function Page({ match }) {
  const id = decodeURIComponent(match[1]);
  const path = appPath(id);
  const one = useLive(`${path}?cairn=true`, TOPICS, [id]);
  const versions = useLive(`${path}/versions`, ['builtin:marathon'], [id]);
  const deployments = useLive('/v2/deployments', ['builtin:marathon']);
  const queue = useLive('/v2/queue?cairn=true', ['builtin:marathon', 'tasks', 'offers']);
  const app = one.data?.app;
  const mine = (Array.isArray(deployments.data) ? deployments.data : []).filter((d) => (d.affectedApps ?? []).includes(app?.id ?? id));
  const waiting = (queue.data?.queue ?? []).filter((q) => q.app?.id === (app?.id ?? id));

  return html`<section class="page app">
    <p class="crumbs"><a href="#/services">Services</a> /</p>
    <h1>${app?.id ?? id}</h1>
    <${Note} ...${one} />
    ${app ? html`
      <${Facts} items=${summary(app)} />
      <h2>Tasks</h2>
      <${Table} label="Tasks" columns=${TASK_COLUMNS} rows=${app.tasks ?? []} rowKey=${(t) => t.id}
        onOpen=${(t) => (location.hash = `#/tasks/${encodeURIComponent(t.id)}`)} empty="No task running." />
      ${mine.length > 0 ? html`<h2>Deployment in flight</h2>
        <${Table} label="Deployments" columns=${DEPLOYMENT_COLUMNS} rows=${mine} rowKey=${(d) => d.id} />` : null}
      ${waiting.length > 0 ? html`<h2>Waiting to launch</h2>
        <${Table} label="Launch queue" columns=${QUEUE_COLUMNS} rows=${waiting} rowKey=${(q) => q.app.id} />` : null}
      <h2>Versions</h2>
      <${Table} label="Versions" columns=${VERSION_COLUMNS} rows=${versions.data?.versions ?? []} rowKey=${(v) => v} />
    ` : null}
  </section>`;
}
