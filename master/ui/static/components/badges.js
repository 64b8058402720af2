// Small display pieces the workload pages share: state badges coloured by what the state
// means, a loading/error line, and a compact list of facts (label: value).

import { html } from '../html.js';

const GOOD = new Set(['Running', 'Succeeded', 'TASK_RUNNING', 'TASK_FINISHED', 'healthy', 'GoalReached']);
const WAIT = new Set(['Pending', 'Starting', 'Created', 'Queued', 'Restarting', 'TASK_STAGING', 'TASK_STARTING', 'TASK_KILLING', 'waiting', 'delayed', 'Stopped', 'EarlyStopped']);
const BAD = new Set(['Failed', 'Killed', 'TASK_FAILED', 'TASK_KILLED', 'TASK_LOST', 'TASK_ERROR', 'TASK_GONE', 'TASK_DROPPED', 'TASK_UNREACHABLE', 'unhealthy']);

const TONES = {
  good: { color: '#0b5d1e', background: '#d7f5df', borderColor: '#9fdcb0' },
  wait: { color: '#6b4a00', background: '#fff1c7', borderColor: '#f0d27a' },
  bad: { color: '#8a1020', background: '#fde0e3', borderColor: '#f3a5ae' },
  info: { color: '#0a3d7a', background: '#dce9fb', borderColor: '#a9c6f0' },
  none: { color: '#3c4043', background: '#eceff1', borderColor: '#cfd8dc' },
};

/** What a state means, as a tone: good, wait, bad or none. */
export function toneOf(state) {
  if (GOOD.has(state)) return 'good';
  if (WAIT.has(state)) return 'wait';
  if (BAD.has(state)) return 'bad';
  return 'none';
}

export function Badge({ tone = 'none', title, children }) {
  const t = TONES[tone] ?? TONES.none;
  const style = {
    display: 'inline-block', padding: '0 6px', borderRadius: '8px', border: '1px solid', fontSize: '0.85em',
    lineHeight: '1.5', whiteSpace: 'nowrap', ...t,
  };
  return html`<span class=${`badge badge-${tone}`} style=${style} title=${title}>${children}</span>`;
}

/** A state (a task's TASK_RUNNING shown as RUNNING), coloured by its tone. */
export function StateBadge({ state, title }) {
  if (!state) return null;
  const label = String(state).replace(/^TASK_/, '');
  return html`<${Badge} tone=${toneOf(state)} title=${title ?? state}>${label}<//>`;
}

/** "loading…" before the first answer; the error when the last read failed. */
export function Note({ loading, error, data }) {
  if (error) return html`<p class="error" role="alert" style=${{ color: '#8a1020' }}>${error.message ?? String(error)}</p>`;
  if (loading && data === undefined) return html`<p class="muted">Loading…</p>`;
  return null;
}

/** A compact grid of label → value pairs; pairs whose value is empty are left out. */
export function Facts({ items }) {
  const shown = items.filter(([, v]) => v !== undefined && v !== null && v !== '');
  const style = { display: 'grid', gridTemplateColumns: 'max-content 1fr', gap: '2px 16px', margin: '8px 0 16px' };
  return html`<dl class="facts" style=${style}>
    ${shown.map(([k, v]) => html`<dt key=${`t-${k}`} class="muted">${k}</dt><dd key=${`d-${k}`} style=${{ margin: 0 }}>${v}</dd>`)}
  </dl>`;
}

/** A link to a task's page (its status and log). */
export function TaskLink({ id, label }) {
  if (!id) return null;
  return html`<a href=${`#/tasks/${encodeURIComponent(id)}`} onClick=${(e) => e.stopPropagation()}>${label ?? id}</a>`;
}
