// One training job: its phase and why, its replica groups (what each replica asks for and
// how it restarts) with every replica's state, host, restarts, exit code and a link to its
// task's log, and the conditions it went through with their reasons and times.

import { html, When } from '../html.js';
import { useLive } from '../live.js';
import { Table } from '../components/table.js';
import { Facts, Note, StateBadge, TaskLink } from '../components/badges.js';
import { formatNumber, formatTime } from '../components/series.js';
import { jobRuntime, TOPICS } from './jobs.js';

export const route = { pattern: /^#\/jobs\/([^/]+)$/, title: 'Training job' };

const taskHref = (id) => `#/tasks/${encodeURIComponent(id)}`;

/** A replica (or a gang) waiting out its restart back-off: "restarting in 40 s", the time in its title. */
function restartNote(atMs) {
  const s = atMs === undefined ? 0 : Math.ceil((atMs - Date.now()) / 1000);
  return s > 0 ? html` <span class="muted" title=${formatTime(atMs)}>restarting in ${s} s</span>` : '';
}

const REPLICA_COLUMNS = [
  { key: 'name', title: 'Replica', width: '9em', render: (r) => `${r.group}-${r.index}` },
  { key: 'state', title: 'State', width: '8em', render: (r) => html`<${StateBadge} state=${r.state} />${restartNote(r.state === 'Pending' ? r.restartAtMs : undefined)}` },
  { key: 'host', title: 'Host', render: (r) => r.host ?? '' },
  { key: 'ports', title: 'Ports', render: (r) => (r.ports ?? []).join(', ') },
  { key: 'restarts', title: 'Restarts', align: 'right', width: '5em', render: (r) => r.restarts },
  { key: 'exit', title: 'Exit', align: 'right', width: '4em', render: (r) => r.exitCode ?? '' },
  { key: 'message', title: 'Message', render: (r) => r.message ?? '' },
  { key: 'log', title: 'Log', width: '5em', render: (r) => html`<${TaskLink} id=${r.taskId} label="log" />` },
];

const CONDITION_COLUMNS = [
  { key: 'at', title: 'When', width: '10em', render: (c) => html`<${When} ms=${c.atMs} />` },
  { key: 'type', title: 'Phase', width: '8em', render: (c) => html`<${StateBadge} state=${c.type} />` },
  { key: 'reason', title: 'Reason', width: '14em', render: (c) => c.reason },
  { key: 'message', title: 'Message', render: (c) => c.message },
];

function resources(t) {
  const parts = [`${formatNumber(t.cpus)} cpu`, `${formatNumber(t.memMb)} MB`];
  if (t.gpus) parts.push(`${t.gpus} gpu`);
  if (t.diskMb) parts.push(`${formatNumber(t.diskMb)} MB disk`);
  return parts.join(' · ');
}

function Group({ group, replicas }) {
  const t = group.template;
  const cmd = [t.command, ...(t.args ?? [])].filter(Boolean).join(' ');
  return html`<div class="job-group">
    <h3>${group.name} <span class="muted">× ${group.replicas} · ${resources(t)} each · restart ${group.restartPolicy}${t.image ? ` · ${t.image}` : ''}</span></h3>
    ${cmd ? html`<p class="muted"><code>${cmd}</code></p>` : null}
    <${Table} label=${`Replicas of ${group.name}`} columns=${REPLICA_COLUMNS} rows=${replicas} rowKey=${(r) => `${r.group}-${r.index}`}
      onOpen=${(r) => r.taskId && (location.hash = taskHref(r.taskId))} />
  </div>`;
}

export function Page({ match }) {
  const name = decodeURIComponent(match[1]);
  const job = useLive(`/api/v1/jobs/${encodeURIComponent(name)}`, TOPICS, [name]);
  const j = job.data;
  const spec = j?.spec;
  const groups = spec?.groups ?? [];
  const extra = (j?.replicas ?? []).filter((r) => !groups.some((g) => g.name === r.group));

  return html`<section class="page job">
    <p class="crumbs"><a href="#/jobs">Training jobs</a> /</p>
    <h1>${name} ${j ? html`<span style=${{ fontSize: '0.55em', verticalAlign: 'middle' }}><${StateBadge} state=${j.phase} /></span>` : null}</h1>
    <${Note} ...${job} />
    ${j ? html`
      ${j.message ? html`<p class="message">${j.message}</p>` : null}
      <${Facts} items=${[
        ['Kind', j.kind],
        ['Owner', j.owner],
        ['Role', spec?.role],
        ['Gang', `${spec?.minAvailable} of ${j.replicas.length} replicas start together`],
        ['Restarts', html`${j.restarts} of ${spec?.backoffLimit} allowed${restartNote(j.restartAtMs)}`],
        ['Back-off', spec?.restartBackoff ? `${spec.restartBackoff.initialSeconds} s × ${spec.restartBackoff.factor} up to ${spec.restartBackoff.maxSeconds} s, reset after a ${spec.restartBackoff.resetAfterSeconds} s run` : "the master's (10 s × 2 up to 300 s)"],
        ['Submitted', html`<${When} ms=${j.createdAtMs} ago />`],
        ['Started', j.startedAtMs === undefined ? undefined : html`<${When} ms=${j.startedAtMs} />`],
        ['Finished', j.finishedAtMs === undefined ? undefined : html`<${When} ms=${j.finishedAtMs} />`],
        ['Ran', jobRuntime(j)],
        ['Deadline', spec?.activeDeadlineSeconds ? `${spec.activeDeadlineSeconds}s` : undefined],
        ['Ignored', (j.ignored ?? []).map((i) => `${i.field} (${i.reason})`).join('; ')],
      ]} />
      <h2>Replicas</h2>
      ${groups.map((g) => html`<${Group} key=${g.name} group=${g} replicas=${j.replicas.filter((r) => r.group === g.name)} />`)}
      ${extra.length > 0 ? html`<${Group} group=${{ name: 'other', replicas: extra.length, restartPolicy: '', template: {} }} replicas=${extra} />` : null}
      <h2>Conditions</h2>
      <${Table} label="Conditions" columns=${CONDITION_COLUMNS} rows=${(j.conditions ?? []).map((c, i) => ({ ...c, i })).reverse()} rowKey=${(c) => c.i} />
    ` : null}
  </section>`;
}
