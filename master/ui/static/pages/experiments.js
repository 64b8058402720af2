// Experiments (hyperparameter searches): each one's phase and why, trials done of its
// budget, what runs now, and the best value found so far.

import { useMemo, useState } from 'preact/hooks';
import { html } from '../html.js';
import { useLive } from '../live.js';
import { Table } from '../components/table.js';
import { Badge, Note, StateBadge } from '../components/badges.js';
import { doneCount, formatAge, formatDuration, formatNumber } from '../components/series.js';

export const route = { pattern: /^#\/experiments\/?$/, title: 'Experiments', nav: 'Experiments' };

export const TOPICS = ['builtin:tuning', 'tasks'];
export const experimentHref = (name) => `#/experiments/${encodeURIComponent(name)}`;

/** "0.9731 (trial 12)", or a dash before any trial reported. */
export function bestText(e) {
  if (!e.best || e.best.value === undefined) return '–';
  return `${formatNumber(e.best.value)} (trial ${e.best.index})`;
}

const objective = (e) => `${e.objective?.type === 'minimize' ? 'min' : 'max'} ${e.objective?.metricName ?? ''}`;
const active = (e) => (e.counts?.Pending ?? 0) + (e.counts?.Starting ?? 0) + (e.counts?.Running ?? 0);

const COLUMNS = [
  { key: 'name', title: 'Experiment', render: (e) => html`<a href=${experimentHref(e.name)}>${e.name}</a>` },
  { key: 'phase', title: 'Phase', width: '8em', render: (e) => html`<${StateBadge} state=${e.phase} title=${e.message} />` },
  { key: 'reason', title: 'Reason', render: (e) => html`<span title=${e.message}>${e.reason}</span>` },
  { key: 'done', title: 'Trials done', align: 'right', width: '7em', render: (e) => `${doneCount(e.counts)} / ${e.maxTrialCount}` },
  { key: 'running', title: 'Running', align: 'right', width: '5em', render: (e) => (active(e) ? html`<${Badge} tone="wait">${active(e)}<//>` : '0') },
  { key: 'failed', title: 'Failed', align: 'right', width: '5em', render: (e) => e.counts?.Failed ?? 0 },
  { key: 'objective', title: 'Objective', render: objective },
  { key: 'best', title: 'Best', render: bestText },
  { key: 'algorithm', title: 'Search', width: '9em', render: (e) => `${e.algorithm}${e.earlyStopping ? ` + ${e.earlyStopping}` : ''}` },
  { key: 'age', title: 'Ran', width: '7em', render: (e) => html`<span title=${`submitted ${formatAge(e.createdMs)}`}>${formatDuration((e.finishedMs ?? Date.now()) - e.createdMs)}</span>` },
];

export function Page() {
  const list = useLive('/api/v1/experiments', TOPICS);
  const [filter, setFilter] = useState('');
  const rows = useMemo(() => {
    const all = [...(list.data?.experiments ?? [])].sort((a, b) => b.createdMs - a.createdMs);
    const f = filter.trim().toLowerCase();
    return f ? all.filter((e) => `${e.name} ${e.phase} ${e.reason} ${e.algorithm} ${e.owner}`.toLowerCase().includes(f)) : all;
  }, [list.data, filter]);

  return html`<section class="page experiments">
    <header class="page-head">
      <h1>Experiments</h1>
      <input type="search" data-filter placeholder="Filter experiments (/)" value=${filter} onInput=${(e) => setFilter(e.currentTarget.value)} aria-label="Filter experiments" />
    </header>
    <${Note} ...${list} />
    <${Table} label="Experiments" columns=${COLUMNS} rows=${rows} rowKey=${(e) => e.name} onOpen=${(e) => (location.hash = experimentHref(e.name))}
      empty=${filter ? 'No experiment matches.' : 'No experiments. Submit one with `cairn tune submit FILE`.'} />
  </section>`;
}
