// Training jobs: each job's kind, phase (and why), its replicas by state, restarts and age.

import { useMemo, useState } from 'preact/hooks';
import { html, Ago } from '../html.js';
import { useLive } from '../live.js';
import { Table } from '../components/table.js';
import { Note, StateBadge } from '../components/badges.js';
import { formatDuration, stateSummary } from '../components/series.js';

export const route = { pattern: /^#\/jobs\/?$/, title: 'Training jobs', nav: 'Jobs' };

export const TOPICS = ['builtin:jobs', 'tasks'];
export const jobHref = (name) => `#/jobs/${encodeURIComponent(name)}`;

/** How long the job has run (or ran), from its first placement. */
export const jobRuntime = (j, nowMs = Date.now()) => (j.startedAtMs === undefined ? '' : formatDuration((j.finishedAtMs ?? nowMs) - j.startedAtMs));

const lastReason = (j) => j.conditions?.[j.conditions.length - 1]?.reason ?? '';

const COLUMNS = [
  { key: 'name', title: 'Job', render: (j) => html`<a href=${jobHref(j.name)}>${j.name}</a>` },
  { key: 'kind', title: 'Kind', width: '8em', render: (j) => j.kind },
  { key: 'phase', title: 'Phase', width: '8em', render: (j) => html`<${StateBadge} state=${j.phase} title=${j.message} />` },
  { key: 'reason', title: 'Reason', render: (j) => html`<span title=${j.message}>${lastReason(j)}</span>` },
  { key: 'replicas', title: 'Replicas', render: (j) => stateSummary(j.replicas ?? []) },
  { key: 'restarts', title: 'Restarts', align: 'right', width: '5em', render: (j) => j.restarts },
  { key: 'runtime', title: 'Ran', width: '7em', render: (j) => jobRuntime(j) },
  { key: 'created', title: 'Age', width: '7em', render: (j) => html`<${Ago} ms=${j.createdAtMs} />` },
];

export function Page() {
  const jobs = useLive('/api/v1/jobs', TOPICS);
  const [filter, setFilter] = useState('');
  const rows = useMemo(() => {
    const list = [...(jobs.data?.jobs ?? [])].sort((a, b) => b.createdAtMs - a.createdAtMs);
    const f = filter.trim().toLowerCase();
    return f ? list.filter((j) => `${j.name} ${j.kind} ${j.phase} ${j.owner ?? ''}`.toLowerCase().includes(f)) : list;
  }, [jobs.data, filter]);

  return html`<section class="page jobs">
    <header class="page-head">
      <h1>Training jobs</h1>
      <input type="search" data-filter placeholder="Filter jobs (/)" value=${filter} onInput=${(e) => setFilter(e.currentTarget.value)} aria-label="Filter jobs" />
    </header>
    <${Note} ...${jobs} />
    <${Table} label="Jobs" columns=${COLUMNS} rows=${rows} rowKey=${(j) => j.name} onOpen=${(j) => (location.hash = jobHref(j.name))}
      empty=${filter ? 'No job matches.' : 'No jobs. Submit one with `cairn job submit FILE`.'} />
  </section>`;
}
