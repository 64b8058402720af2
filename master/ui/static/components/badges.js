// Small display pieces the workload pages share: state badges coloured by what the state
// means, a loading/error line, and a compact list of facts (label: value).

import { html, Tag, toneOf } from '../html.js';

/** A tag of a tone (style.css); the shell's own, so every page colours a state alike. */
export { Tag as Badge, toneOf } from '../html.js';

/** A state (a task's TASK_RUNNING shown as RUNNING), coloured by its tone. */
export function StateBadge({ state, title }) {
  if (!state) return null;
  const label = String(state).replace(/^TASK_/, '');
  return html`<${Tag} tone=${toneOf(state)} title=${title ?? state}>${label}<//>`;
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
