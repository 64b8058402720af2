// A uPlot chart as a preact component. Props:
//   x: number[] (ascending; seconds since the epoch when `time`)
//   series: [{ label, values: (number|null)[], color, style: 'points' | 'line' | 'step' }]
//   time?: boolean, xWhole? (x counts things, trials say: ticks on whole numbers only),
//   yFromZero? (amounts, CPUs say: the value axis starts at 0 and ends a tenth above the most),
//   xLabel?, yLabel?, yUnit? (on every value tick and legend value: "cpus",
//   "MiB", "%"), title?, height? (px; the width follows the container)
// The plot is made once per shape of series and given new data in place after that. Ticks:
// a time axis at least 100 px apart, labelled by the time of day (series.js timeTicks), value
// axes 30 px apart with their unit, the axis as wide as its longest label. The labels last
// drawn are kept on the chart's element (data-x-ticks, data-y-ticks: JSON) for the browser
// tests, which cannot read the canvas.

import { useEffect, useRef } from 'preact/hooks';
import uPlot from 'uplot';
import { html } from '../html.js';
import { formatNumber, formatTime, timeTicks, valueTick } from './series.js';

function seriesOptions(s, unit) {
  const base = { label: s.label, stroke: s.color, width: 2, value: (_u, v) => (v === null || v === undefined ? '–' : unit ? `${formatNumber(v)} ${unit}` : formatNumber(v)) };
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

/** An axis wide enough for its longest label (about 7 px a character at 11 px), at least 50 px. */
const axisSize = (_u, values) => Math.max(50, Math.max(0, ...(values ?? []).map((v) => String(v).length)) * 7 + 18);

/** Tick steps for an axis of whole numbers (no trial 0.5). */
const WHOLE_STEPS = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000];

function options({ series, time, xWhole, yFromZero, xLabel, yLabel, yUnit, title, height }, width, el) {
  const drawn = { x: [], y: [] };
  return {
    width, height, title,
    // A little room either side, so the first and last points are not cut in half.
    scales: {
      x: { time: !!time, range: (_u, lo, hi) => padRange(lo, hi, !!time) },
      ...(yFromZero ? { y: { range: (_u, _lo, hi) => [0, hi !== null && hi > 0 ? hi * 1.1 : 1] } } : {}),
    },
    axes: [
      { label: xLabel, space: time ? 100 : 50, ...(xWhole ? { incrs: WHOLE_STEPS } : {}), values: (_u, ticks) => (drawn.x = time ? timeTicks(ticks) : ticks.map((v) => formatNumber(v, 3))) },
      { label: yLabel, space: 30, size: axisSize, values: (_u, ticks) => (drawn.y = ticks.map((v) => valueTick(v, yUnit))) },
    ],
    series: [{
      label: xLabel ?? 'x',
      value: (_u, v) => (v === null || v === undefined ? '–' : time ? formatTime(v * 1000) : formatNumber(v)),
    }, ...series.map((s) => seriesOptions(s, yUnit))],
    hooks: { draw: [() => {
      el.dataset.xTicks = JSON.stringify(drawn.x);
      el.dataset.yTicks = JSON.stringify(drawn.y);
    }] },
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
  const key = JSON.stringify([series.map((s) => [s.label, s.style, s.color]), !!props.time, props.xWhole, props.yFromZero, props.xLabel, props.yLabel, props.yUnit, props.title, height]);

  useEffect(() => {
    const el = box.current;
    if (!el) return;
    if (plot.current && shape.current === key) {
      plot.current.setData(data);
      return;
    }
    plot.current?.destroy();
    shape.current = key;
    plot.current = new uPlot(options({ ...props, height }, Math.max(200, el.clientWidth), el), data, el);
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
