// One experiment: its phase and why, the best trial so far, the metric over trials and over
// time (points, and the best so far as a step line), a parallel-coordinates plot of the
// parameters against the metric, every trial as a table, and the conditions it went through.

import { useMemo } from 'preact/hooks';
import { html, When } from '../html.js';
import { useLive } from '../live.js';
import { Table } from '../components/table.js';
import { Chart } from '../components/chart.js';
import { ParallelCoords } from '../components/parallel-coords.js';
import { Badge, Facts, Note, StateBadge, TaskLink } from '../components/badges.js';
import { doneCount, flattenSpace, formatDuration, formatNumber, metricOverTime, metricOverTrials, runDuration } from '../components/series.js';
import { TOPICS } from './experiments.js';

export const route = { pattern: /^#\/experiments\/([^/]+)$/, title: 'Experiment' };

const POINTS = '#1a73e8';
const BEST = '#e8710a';
const STOPPED = '#b0b6c0';

const openTrial = (t) => {
  if (t.taskId) location.hash = `#/tasks/${encodeURIComponent(t.taskId)}`;
  else if (t.jobName) location.hash = `#/jobs/${encodeURIComponent(t.jobName)}`;
};

/** The parameter names to show as columns: the space's, then any others the trials carry. */
function paramNames(space, trials) {
  const names = flattenSpace(space).map((a) => a.name);
  for (const t of trials) for (const k of Object.keys(t.params ?? {})) if (!names.includes(k)) names.push(k);
  return names;
}

function trialColumns(names, metricName) {
  return [
    { key: 'index', title: '#', align: 'right', width: '3em', render: (t) => t.index },
    { key: 'state', title: 'State', width: '9em', render: (t) => (t.state === 'EarlyStopped'
      ? html`<span class="early-mark"><${Badge} tone="wait" title=${t.message ?? 'stopped by the early-stopping rule'}>stopped early<//></span>`
      : html`<${StateBadge} state=${t.state} title=${t.message} />`) },
    ...names.map((n) => ({ key: `p:${n}`, title: n, align: 'right', render: (t) => formatNumber(t.params?.[n]) })),
    { key: 'value', title: metricName, align: 'right', render: (t) => html`<strong>${formatNumber(t.value)}</strong>` },
    { key: 'duration', title: 'Duration', align: 'right', width: '6em', render: (t) => formatDuration(runDuration(t)) },
    { key: 'exit', title: 'Exit', align: 'right', width: '3em', render: (t) => t.exitCode ?? '' },
    { key: 'log', title: 'Log', width: '5em', render: (t) => (t.taskId ? html`<${TaskLink} id=${t.taskId} label="log" />`
      : t.jobName ? html`<a href=${`#/jobs/${encodeURIComponent(t.jobName)}`}>job</a>` : '') },
  ];
}

const CONDITION_COLUMNS = [
  { key: 'at', title: 'When', width: '10em', render: (c) => html`<${When} ms=${c.atMs} />` },
  { key: 'type', title: 'Phase', width: '8em', render: (c) => html`<${StateBadge} state=${c.type} />` },
  { key: 'reason', title: 'Reason', width: '14em', render: (c) => c.reason },
  { key: 'message', title: 'Message', render: (c) => c.message },
];

function Best({ e, names }) {
  const b = e.best;
  if (!b) return html`<p class="muted">No trial has reported ${e.objective.metricName} yet.</p>`;
  return html`<div class="best">
    <h2>Best so far: ${e.objective.metricName} ${formatNumber(b.value)} <span class="muted">(trial ${b.index})</span></h2>
    <${Facts} items=${[
      ...names.filter((n) => b.params?.[n] !== undefined).map((n) => [n, formatNumber(b.params[n])]),
      ...Object.entries(b.metrics ?? {}).filter(([k]) => k !== e.objective.metricName).map(([k, v]) => [k, formatNumber(v)]),
      ['Ran', formatDuration(runDuration(b))],
      ['Log', b.taskId ? html`<${TaskLink} id=${b.taskId} />` : b.jobName ? html`<a href=${`#/jobs/${encodeURIComponent(b.jobName)}`}>${b.jobName}</a>` : undefined],
    ]} />
  </div>`;
}

function Charts({ e }) {
  const type = e.objective.type;
  const metric = e.objective.metricName;
  const byTrial = useMemo(() => metricOverTrials(e.trials, type), [e.trials, type]);
  const byTime = useMemo(() => metricOverTime(e.trials, type), [e.trials, type]);
  const series = (s) => [
    { label: metric, values: s.ran, color: POINTS, style: 'points' },
    ...(s.stopped.some((v) => v !== null) ? [{ label: 'stopped early', values: s.stopped, color: STOPPED, style: 'points' }] : []),
    { label: 'best so far', values: s.best, color: BEST, style: 'step' },
  ];
  return html`<div class="charts" style=${{ display: 'grid', gridTemplateColumns: 'repeat(auto-fit, minmax(360px, 1fr))', gap: '16px' }}>
    <div class="metric-chart" data-kind="by-trial"><h3>${metric} by trial</h3>
      ${byTrial.x.length ? html`<${Chart} x=${byTrial.x} series=${series(byTrial)} xWhole=${true} xLabel="trial" yLabel=${metric} />` : html`<p class="muted">No trials yet.</p>`}</div>
    <div><h3>${metric} over time</h3>
      ${byTime.x.length ? html`<${Chart} x=${byTime.x} series=${series(byTime)} time=${true} xLabel="finished" yLabel=${metric} />` : html`<p class="muted">No trial has finished with a value yet.</p>`}</div>
  </div>`;
}

export function Page({ match }) {
  const name = decodeURIComponent(match[1]);
  const live = useLive(`/api/v1/experiments/${encodeURIComponent(name)}`, TOPICS, [name]);
  const e = live.data;
  const names = useMemo(() => (e ? paramNames(e.spec?.space, e.trials) : []), [e]);
  const columns = useMemo(() => trialColumns(names, e?.objective?.metricName ?? 'metric'), [names, e?.objective?.metricName]);

  return html`<section class="page experiment">
    <p class="crumbs"><a href="#/experiments">Experiments</a> /</p>
    <h1>${name} ${e ? html`<span style=${{ fontSize: '0.55em', verticalAlign: 'middle' }}><${StateBadge} state=${e.phase} /></span>` : null}</h1>
    <${Note} ...${live} />
    ${e ? html`
      <p class="message">${e.reason}${e.message ? `: ${e.message}` : ''}</p>
      <${Facts} items=${[
        ['Objective', `${e.objective.type} ${e.objective.metricName}${e.objective.goal !== undefined ? ` (goal ${formatNumber(e.objective.goal)})` : ''}`],
        ['Search', `${e.algorithm}${e.earlyStopping ? `, early stopping ${e.earlyStopping}` : ''} · seed ${e.seed} · ${e.scheduling} scheduling`],
        ['Trials', `${doneCount(e.counts)} done of ${e.maxTrialCount} · ${e.counts.Running + e.counts.Starting} running · ${e.counts.Pending} pending · ${e.counts.Failed} failed (at most ${e.maxFailedTrialCount}) · ${e.counts.EarlyStopped} stopped early`],
        ['In parallel', e.parallelTrialCount],
        ['Owner', e.owner],
        ['Submitted', html`<${When} ms=${e.createdMs} ago />`],
        ['Ran', formatDuration((e.finishedMs ?? Date.now()) - e.createdMs)],
        ['Ignored', (e.ignored ?? []).map((i) => `${i.field} (${i.reason})`).join('; ')],
      ]} />
      <${Best} e=${e} names=${names} />
      <${Charts} e=${e} />
      <h2>Parameters against ${e.objective.metricName}</h2>
      ${e.trials.length ? html`<${ParallelCoords} space=${e.spec?.space} trials=${e.trials} metricName=${e.objective.metricName} type=${e.objective.type}
        onOpen=${(i) => openTrial(e.trials.find((t) => t.index === i) ?? {})} />` : html`<p class="muted">No trials yet.</p>`}
      <h2>Trials</h2>
      <${Table} label="Trials" columns=${columns} rows=${e.trials} rowKey=${(t) => t.index} onOpen=${openTrial} rowClass=${(t) => (t.state === 'EarlyStopped' ? 'early-stopped' : '')} />
      <h2>Conditions</h2>
      <${Table} label="Conditions" columns=${CONDITION_COLUMNS} rows=${(e.conditions ?? []).map((c, i) => ({ ...c, i })).reverse()} rowKey=${(c) => c.i} />
    ` : null}
  </section>`;
}
