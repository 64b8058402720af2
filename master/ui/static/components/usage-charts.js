// CPU, memory and GPU use over time, of an agent or of a task, from the samples its agent
// keeps (GET /api/v1/agents/:id/usage/history, /api/v1/tasks/:id/usage/history: the last
// 15 minutes at the default 5 s). Samples are no registry change, so no event names them:
// the history is read again once per sample interval while the charts are on screen.
// Props: { path, title? }

import { useEffect, useState } from 'preact/hooks';
import { html } from '../html.js';
import { api } from '../api.js';
import { Chart } from './chart.js';
import { usageSeries } from './series.js';

const USED = '#1a73e8';
const LIMIT = '#9aa0a6';
const GPU_COLORS = ['#8e24aa', '#e8710a', '#0f9d58', '#d93025', '#12b5cb', '#f9ab00', '#5f6368', '#1a73e8'];

function useHistory(path) {
  const [state, setState] = useState({ data: undefined, error: undefined });
  useEffect(() => {
    let stop = false;
    let timer;
    const read = async () => {
      let wait = 5000;
      try {
        const data = await api.get(path);
        wait = Math.max(1000, data.intervalMs ?? wait);
        if (!stop) setState({ data, error: undefined });
      } catch (error) {
        if (!stop) setState((s) => ({ data: s.data, error }));
      }
      if (!stop) timer = setTimeout(read, wait);
    };
    void read();
    return () => {
      stop = true;
      clearTimeout(timer);
    };
  }, [path]);
  return state;
}

export function UsageCharts({ path, what = 'this' }) {
  const { data, error } = useHistory(path);
  if (!data) {
    if (error?.status === 404) return html`<p class="muted usage-none">No usage samples of ${what} yet (its agent samples every few seconds).</p>`;
    return error ? html`<p class="muted">Usage: ${error.message}</p>` : html`<p class="muted">Loading usage…</p>`;
  }
  const s = usageSeries(data.points ?? []);
  if (s.x.length === 0) return html`<p class="muted usage-none">No usage samples of ${what} yet.</p>`;
  return html`<div class="usage-charts" data-points=${s.x.length}>
    <div class="usage-chart" data-kind="cpu"><h3>CPU</h3>
      <${Chart} x=${s.x} time=${true} yFromZero=${true} xLabel="time" yLabel="CPU" yUnit="cpus" height=${180}
        series=${[{ label: 'used', values: s.cpus, color: USED, style: 'line' }, { label: 'limit', values: s.cpusLimit, color: LIMIT, style: 'step' }]} /></div>
    <div class="usage-chart" data-kind="memory"><h3>Memory</h3>
      <${Chart} x=${s.x} time=${true} yFromZero=${true} xLabel="time" yLabel="memory" yUnit="MiB" height=${180}
        series=${[{ label: 'used', values: s.memMiB, color: USED, style: 'line' }, { label: 'limit', values: s.memLimitMiB, color: LIMIT, style: 'step' }]} /></div>
    ${s.gpus.length > 0 ? html`<div class="usage-chart" data-kind="gpu"><h3>GPU</h3>
      <${Chart} x=${s.x} time=${true} yFromZero=${true} xLabel="time" yLabel="GPU busy" yUnit="%" height=${180}
        series=${s.gpus.map((g, k) => ({ label: `GPU ${g.index}`, values: g.util, color: GPU_COLORS[k % GPU_COLORS.length], style: 'line' }))} /></div>`
      : html`<div class="usage-chart muted" data-kind="gpu"><h3>GPU</h3><p>No GPUs${what === 'this task' ? ' held by this task' : ' on this agent'}.</p></div>`}
  </div>`;
}
