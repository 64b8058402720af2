// The one way the dashboard renders: htm's tagged templates over preact's h.
import { h } from 'preact';
import htm from 'htm';
import { formatAge, formatDuration, formatTime } from './components/series.js';

export const html = htm.bind(h);

// Small formatting helpers every page uses.

/** Mesos' text form (`cpus:4;mem:8192;gpus:1;ports:[31000-32000]`) as numbers (ports: a count). */
export function parseResources(text) {
  const out = { cpus: 0, mem: 0, disk: 0, gpus: 0, ports: 0 };
  for (const part of String(text ?? '').split(';')) {
    const i = part.indexOf(':');
    if (i < 0) continue;
    const name = part.slice(0, i).trim();
    const value = part.slice(i + 1).trim();
    if (name === 'ports') {
      for (const r of value.replace(/[[\]]/g, '').split(',')) {
        const [a, b] = r.split('-').map(Number);
        if (Number.isFinite(a)) out.ports += (Number.isFinite(b) ? b : a) - a + 1;
      }
    } else {
      const n = Number(value);
      if (Number.isFinite(n)) out[name] = (out[name] ?? 0) + n;
    }
  }
  return out;
}

/** MiB as a short size: 512 MiB, 1.5 GiB. */
export function fmtMiB(mib) {
  if (!Number.isFinite(mib)) return '—';
  if (mib >= 1024 * 1024) return `${trim(mib / 1024 / 1024)} TiB`;
  if (mib >= 1024) return `${trim(mib / 1024)} GiB`;
  return `${trim(mib)} MiB`;
}

export function trim(n, digits = 1) {
  return Number.isInteger(n) ? String(n) : n.toFixed(digits).replace(/\.0+$/, '');
}

/** A task's resources in a few characters: 0.5 cpu · 64 MiB · 1 gpu. */
export function fmtResources(text) {
  const r = parseResources(text);
  const parts = [`${trim(r.cpus, 2)} cpu`, fmtMiB(r.mem)];
  if (r.gpus) parts.push(`${trim(r.gpus)} gpu`);
  return parts.join(' · ');
}

/**
 * A point in time, the one way every page shows one (series.js formatTime: "2026-11-27
 * 22:10:05", local), with how long ago it was when `ago` is set; UTC in its title.
 */
export function When({ ms, ago = false, now }) {
  if (ms === undefined || ms === null || !Number.isFinite(ms) || ms <= 0) return html`<span class="muted">—</span>`;
  const iso = new Date(ms).toISOString();
  return html`<time class="when" datetime=${iso} title=${iso}>${formatTime(ms)}</time>${ago ? html` <span class="muted">(${formatAge(ms, now)})</span>` : null}`;
}

/** How long ago `ms` was, compact ("4m 05s") for a column headed Age, Up or Since; the time itself in its title. */
export function Ago({ ms, now = Date.now() }) {
  if (ms === undefined || ms === null || !Number.isFinite(ms) || ms <= 0) return html`<span class="muted">—</span>`;
  return html`<time class="age" datetime=${new Date(ms).toISOString()} title=${formatTime(ms)}>${formatDuration(now - ms)}</time>`;
}

/** A task state without Mesos' prefix: TASK_RUNNING → running. */
export function stateName(state) {
  return String(state ?? '').replace(/^TASK_/, '').toLowerCase();
}

const GOOD = new Set(['Running', 'Succeeded', 'TASK_RUNNING', 'healthy', 'GoalReached', 'reachable', 'leader']);
const WAIT = new Set(['Pending', 'Starting', 'Created', 'Queued', 'Restarting', 'TASK_STAGING', 'TASK_STARTING', 'TASK_KILLING', 'waiting', 'delayed', 'Stopped', 'EarlyStopped', 'draining']);
const INFO = new Set(['TASK_FINISHED']);
const BAD = new Set(['Failed', 'Killed', 'TASK_FAILED', 'TASK_ERROR', 'TASK_LOST', 'TASK_GONE', 'TASK_DROPPED', 'TASK_UNREACHABLE', 'unhealthy', 'unreachable']);

/** What a state means, as a tone (a class of style.css: tone-good, -wait, -info, -bad; none: plain). */
export function toneOf(state) {
  if (GOOD.has(state)) return 'good';
  if (WAIT.has(state)) return 'wait';
  if (INFO.has(state)) return 'info';
  if (BAD.has(state)) return 'bad';
  return 'none';
}

/** A tag coloured by its tone: every state, role and condition on every page. */
export function Tag({ tone = 'none', title, children }) {
  return html`<span class=${`tag tone-${tone}`} title=${title}>${children}</span>`;
}

/** A task's state as the task pages write it (running, killed), coloured by its tone. */
export function StateTag({ state }) {
  return html`<${Tag} tone=${toneOf(state)}>${stateName(state)}<//>`;
}

/** A horizontal bar: `used` of `total`, with its label. */
export function Bar({ used, total, label }) {
  const pct = total > 0 ? Math.min(100, (used / total) * 100) : 0;
  const cls = pct > 90 ? 'hot' : pct > 70 ? 'warm' : '';
  return html`<div class="bar" title=${`${label ?? ''} ${pct.toFixed(0)}%`}><div class=${`fill ${cls}`} style=${`width:${pct}%`}></div><span>${label}</span></div>`;
}

/** A short id: its last 8 characters, the whole in the title. */
export function ShortId({ id }) {
  const s = String(id ?? '');
  return html`<span class="mono" title=${s}>${s.length > 14 ? `…${s.slice(-10)}` : s}</span>`;
}

export function ErrorNote({ error }) {
  if (!error) return null;
  return html`<p class="error" role="alert">${error.message ?? String(error)}</p>`;
}
