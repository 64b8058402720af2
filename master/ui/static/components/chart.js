// A uPlot chart as a preact component. Props:
//   x: number[] (ascending; seconds since the epoch when `time`)
//   series: [{ label, values: (number|null)[], color, style: 'points' | 'line' | 'step' }]
//   time?: boolean, xLabel?, yLabel?, title?, height? (px; the width follows the container)
// The plot is made once per shape of series and given new data in place after that.

import { useEffect, useRef } from 'preact/hooks';
import uPlot from 'uplot';
import { html } from '../html.js';
import { formatNumber } from './series.js';

function seriesOptions(s) {
  const base = { label: s.label, stroke: s.color, width: 2, value: (_u, v) => (v === null || v === undefined ? '–' : formatNumber(v)) };
  if (s.style === 'points') {
    return { ...base, width: 0, paths: () => null, points: { show: true, size: 7, stroke: s.color, fill: s.color } };
  }
  if (s.style === 'step') {
    return { ...base, spanGaps: true, paths: uPlot.paths.stepped({ align: 1 }), points: { show: false } };
  }
  return { ...base, spanGaps: true, points: { show: false } };
}

/** [lo, hi] widened: by 3% of the span (at least a second) on a time axis, else by half a unit. */
function padRange(lo, hi, time) {
  if (lo === null || hi === null) return [0, 1];
  const d = time ? Math.max((hi - lo) * 0.03, 1) : 0.5;
  return [lo - d, hi + d];
}

function options({ series, time, xLabel, yLabel, title, height }, width) {
  return {
    width, height, title,
    // A little room either side, so the first and last points are not cut in half.
    scales: { x: { time: !!time, range: (_u, lo, hi) => padRange(lo, hi, !!time) } },
    axes: [
      { label: xLabel, ...(time ? {} : { values: (_u, ticks) => ticks.map((v) => formatNumber(v, 3)) }) },
      { label: yLabel, size: 60, values: (_u, ticks) => ticks.map((v) => formatNumber(v, 3)) },
    ],
    series: [{ label: xLabel ?? 'x', ...(time ? {} : { value: (_u, v) => (v === null || v === undefined ? '–' : formatNumber(v)) }) }, ...series.map(seriesOptions)],
    legend: { show: true },
    cursor: { drag: { x: true, y: false } },
  };
}

export function Chart(props) {
  const { x, series, height = 220 } = props;
  const box = useRef(null);
  const plot = useRef(null);
  const shape = useRef('');
  const data = [x, ...series.map((s) => s.values)];
  const key = JSON.stringify([series.map((s) => [s.label, s.style, s.color]), !!props.time, props.xLabel, props.yLabel, props.title, height]);

  useEffect(() => {
    const el = box.current;
    if (!el) return;
    if (plot.current && shape.current === key) {
      plot.current.setData(data);
      return;
    }
    plot.current?.destroy();
    shape.current = key;
    plot.current = new uPlot(options({ ...props, height }, Math.max(200, el.clientWidth)), data, el);
  });

  useEffect(() => {
    const el = box.current;
    const resize = new ResizeObserver(() => {
      if (plot.current && el.clientWidth > 0) plot.current.setSize({ width: el.clientWidth, height });
    });
    resize.observe(el);
    return () => {
      resize.disconnect();
      plot.current?.destroy();
      plot.current = null;
    };
  }, []);

  return html`<div class="chart" ref=${box} style=${{ width: '100%', minHeight: `${height}px` }}></div>`;
}
