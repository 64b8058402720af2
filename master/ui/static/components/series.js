// Pure helpers for the workload pages: number and time formatting, scales and ticks, the
// series the experiment charts draw, and the parallel-coordinates layout. No DOM, no imports:
// unit-tested in Node (test/unit/ui-series.test.ts).

const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

const pad2 = (n) => String(n).padStart(2, '0');

/** A span of time for people: 850ms, 4.2s, 37s, 4m 05s, 2h 03m, 3d 4h. */
export function formatDuration(ms) {
  if (ms === undefined || ms === null || !Number.isFinite(ms)) return '';
  if (ms < 0) ms = 0;
  if (ms < SECOND) return `${Math.round(ms)}ms`;
  if (ms < 10 * SECOND) return `${(Math.floor(ms / 100) / 10).toFixed(1)}s`;
  if (ms < MINUTE) return `${Math.floor(ms / SECOND)}s`;
  if (ms < HOUR) return `${Math.floor(ms / MINUTE)}m ${pad2(Math.floor((ms % MINUTE) / SECOND))}s`;
  if (ms < DAY) return `${Math.floor(ms / HOUR)}h ${pad2(Math.floor((ms % HOUR) / MINUTE))}m`;
  return `${Math.floor(ms / DAY)}d ${Math.floor((ms % DAY) / HOUR)}h`;
}

/** How long ago `atMs` was, at `nowMs`: "4m 05s ago". */
export function formatAge(atMs, nowMs = Date.now()) {
  if (atMs === undefined || atMs === null) return '';
  return `${formatDuration(nowMs - atMs)} ago`;
}

/** Milliseconds from an ISO date (Marathon's fields), or undefined. */
export function parseIso(text) {
  if (!text) return undefined;
  const ms = Date.parse(text);
  return Number.isNaN(ms) ? undefined : ms;
}

/**
 * The dashboard's one format for a point in time: local, ISO-like, to the second
 * ("2026-11-27 22:10:05"), the same on every page (a time of day alone is ambiguous after
 * midnight, and the browser's locale format differs between people reading one screen).
 */
export function formatTime(ms) {
  if (ms === undefined || ms === null || !Number.isFinite(ms)) return '';
  const d = new Date(ms);
  return `${d.getFullYear()}-${pad2(d.getMonth() + 1)}-${pad2(d.getDate())} ${pad2(d.getHours())}:${pad2(d.getMinutes())}:${pad2(d.getSeconds())}`;
}

/** The pattern formatTime's answers match (the browser tests check every time on a page against it). */
export const TIME_PATTERN = /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/;

/**
 * Labels for time-axis ticks (seconds since the epoch, as uPlot gives them): the time of day
 * to the minute when every tick is on a whole minute, else to the second; a tick whose day
 * differs from the one before it (and the first, when the ticks span days) carries its date
 * (MM-DD). The legend and tooltips use formatTime; the ticks only need to be short.
 */
export function timeTicks(seconds) {
  const ds = seconds.map((s) => new Date(s * 1000));
  const whole = ds.every((d) => d.getSeconds() === 0);
  const days = new Set(ds.map((d) => d.toDateString()));
  let prevDay;
  return ds.map((d) => {
    const hm = `${pad2(d.getHours())}:${pad2(d.getMinutes())}${whole ? '' : `:${pad2(d.getSeconds())}`}`;
    const day = d.toDateString();
    const dated = days.size > 1 && day !== prevDay;
    prevDay = day;
    return dated ? `${pad2(d.getMonth() + 1)}-${pad2(d.getDate())} ${hm}` : hm;
  });
}

/** A value-axis tick with its unit: "0.5 cpus", "512 MiB", "40 %"; no unit: the number alone. */
export function valueTick(v, unit) {
  const n = formatNumber(v, 3);
  return unit ? `${n} ${unit}` : n;
}

/** A number in at most `digits` significant digits, exponent form when very small or large. */
export function formatNumber(v, digits = 4) {
  if (v === undefined || v === null) return '';
  if (typeof v !== 'number') return String(v);
  if (!Number.isFinite(v)) return String(v);
  if (Number.isInteger(v) && Math.abs(v) < 1e9) return String(v);
  const a = Math.abs(v);
  if (a !== 0 && (a < 1e-3 || a >= 1e7)) return v.toExponential(Math.max(0, digits - 1)).replace(/\.?0+e/, 'e');
  return String(Number(v.toPrecision(digits)));
}

/** How long a trial (or anything with startedMs/finishedMs) ran, or runs so far. */
export function runDuration(item, nowMs = Date.now()) {
  if (!item || item.startedMs === undefined) return undefined;
  return (item.finishedMs ?? nowMs) - item.startedMs;
}

/**
 * Usage samples (an agent's or a task's history, oldest first) as chart series: x in seconds,
 * CPUs used and the limit, memory and its limit in MiB, and each GPU's utilisation (null
 * where a sample lacks the device or the figure).
 */
export function usageSeries(points) {
  const mib = (b) => (present(b) ? Math.round((b / 1048576) * 10) / 10 : null);
  const indices = [...new Set(points.flatMap((p) => (p.gpus ?? []).map((g) => g.index)))].sort((a, b) => a - b);
  return {
    x: points.map((p) => p.timestampMs / 1000),
    cpus: points.map((p) => (present(p.cpusUsed) ? p.cpusUsed : null)),
    cpusLimit: points.map((p) => (present(p.cpusLimit) ? p.cpusLimit : null)),
    memMiB: points.map((p) => mib(p.memoryBytes)),
    memLimitMiB: points.map((p) => mib(p.memoryLimitBytes)),
    gpus: indices.map((index) => ({
      index,
      util: points.map((p) => {
        const g = (p.gpus ?? []).find((d) => d.index === index);
        return g && present(g.utilizationPercent) ? g.utilizationPercent : null;
      }),
    })),
  };
}

/** Is `a` better than `b` for this objective type ('maximize' | 'minimize')? */
export function isBetter(type, a, b) {
  return type === 'minimize' ? a < b : a > b;
}

const present = (v) => typeof v === 'number' && Number.isFinite(v);

/** The best value so far at each position (null before the first value). */
export function bestSoFar(values, type) {
  let best = null;
  return values.map((v) => {
    if (present(v) && (best === null || isBetter(type, v, best))) best = v;
    return best;
  });
}

/**
 * The metric by trial index: { x: indices, y: values (null: none yet), best: best so far,
 * ran: the values of trials that ran to their end, stopped: those of trials stopped early
 * (each null elsewhere), so a chart can draw the two kinds apart }.
 */
export function metricOverTrials(trials, type) {
  const sorted = [...trials].sort((a, b) => a.index - b.index);
  const y = sorted.map((t) => (present(t.value) ? t.value : null));
  const early = sorted.map((t) => t.state === 'EarlyStopped');
  return {
    x: sorted.map((t) => t.index), y, best: bestSoFar(y, type),
    ran: y.map((v, i) => (early[i] ? null : v)), stopped: y.map((v, i) => (early[i] ? v : null)),
  };
}

/** The metric by finish time (x in seconds, as uPlot's time scale wants), for finished trials with a value. */
export function metricOverTime(trials, type) {
  const done = trials.filter((t) => present(t.finishedMs) && present(t.value)).sort((a, b) => a.finishedMs - b.finishedMs || a.index - b.index);
  const y = done.map((t) => t.value);
  const early = done.map((t) => t.state === 'EarlyStopped');
  return {
    x: done.map((t) => t.finishedMs / 1000), y, best: bestSoFar(y, type),
    ran: y.map((v, i) => (early[i] ? null : v)), stopped: y.map((v, i) => (early[i] ? v : null)),
  };
}

/** Trials that have ended (anything but Pending, Starting, Running). */
export function doneCount(counts) {
  if (!counts) return 0;
  return (counts.Succeeded ?? 0) + (counts.Failed ?? 0) + (counts.EarlyStopped ?? 0) + (counts.Killed ?? 0);
}

/** "2 Running · 1 Pending": how many of `items` are in each state, in first-seen order. */
export function stateSummary(items, stateOf = (x) => x.state) {
  const counts = new Map();
  for (const it of items) {
    const s = stateOf(it);
    counts.set(s, (counts.get(s) ?? 0) + 1);
  }
  return [...counts].map(([s, n]) => `${n} ${s}`).join(' · ');
}

// ---- scales and ticks ----

/** A linear map from [d0, d1] to [r0, r1]; a point domain maps to the middle of the range. */
export function linearScale([d0, d1], [r0, r1]) {
  if (d1 === d0) return () => (r0 + r1) / 2;
  const k = (r1 - r0) / (d1 - d0);
  return (v) => r0 + (v - d0) * k;
}

/** A log10 map (domain > 0), falling back to linear when the domain is not positive. */
export function logScale([d0, d1], range) {
  if (!(d0 > 0 && d1 > 0)) return linearScale([d0, d1], range);
  const lin = linearScale([Math.log10(d0), Math.log10(d1)], range);
  return (v) => lin(Math.log10(Math.max(v, Number.MIN_VALUE)));
}

/** About `count` round tick values covering [lo, hi] (steps of 1, 2 or 5 times a power of ten). */
export function niceTicks(lo, hi, count = 5) {
  if (!Number.isFinite(lo) || !Number.isFinite(hi)) return [];
  if (lo > hi) [lo, hi] = [hi, lo];
  if (lo === hi) return [lo];
  const raw = (hi - lo) / Math.max(1, count);
  const power = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map((m) => m * power).find((s) => s >= raw) ?? 10 * power;
  const ticks = [];
  const eps = step * 1e-9;
  for (let v = Math.ceil((lo - eps) / step) * step; v <= hi + eps; v += step) ticks.push(Number(v.toPrecision(12)));
  return ticks;
}

/** Ticks for a log axis: the powers of ten inside [lo, hi], or its ends when it spans less than a decade. */
export function logTicks(lo, hi) {
  if (!(lo > 0 && hi > 0)) return niceTicks(lo, hi);
  const ticks = [];
  for (let e = Math.ceil(Math.log10(lo) - 1e-9); e <= Math.floor(Math.log10(hi) + 1e-9); e++) ticks.push(Number((10 ** e).toPrecision(12)));
  return ticks.length >= 2 ? ticks : [lo, hi];
}

/** A colour for t in [0, 1] (0 worst, 1 best) on a viridis-like ramp. */
export function rampColor(t) {
  const stops = [[68, 1, 84], [59, 82, 139], [33, 145, 140], [94, 201, 98], [253, 231, 37]];
  const x = Math.min(1, Math.max(0, present(t) ? t : 0)) * (stops.length - 1);
  const i = Math.min(stops.length - 2, Math.floor(x));
  const f = x - i;
  const c = stops[i].map((a, k) => Math.round(a + (stops[i + 1][k] - a) * f));
  return `rgb(${c[0]}, ${c[1]}, ${c[2]})`;
}

// ---- parallel coordinates ----

/** The parameters of a search space, nested ones by full name (`optimizer.lr`). */
export function flattenSpace(space, prefix = '') {
  const out = [];
  for (const p of space?.params ?? []) {
    const name = prefix + p.name;
    if (p.kind === 'categorical') {
      out.push({ name, kind: 'categorical', categories: p.choices.map((c) => String(c.value)) });
      for (const c of p.choices) if (c.sub) out.push(...flattenSpace(c.sub, `${name}.`));
    } else if (p.kind === 'double' || p.kind === 'int') {
      out.push({ name, kind: 'numeric', domain: [p.low, p.high], log: !!p.log && p.low > 0 });
    } else {
      out.push({ name, kind: 'numeric', log: false });
    }
  }
  // A nested parameter may appear under several choices: keep one axis per name.
  const seen = new Map();
  for (const a of out) {
    const had = seen.get(a.name);
    if (!had) seen.set(a.name, a);
    else if (had.kind === 'categorical' && a.kind === 'categorical') had.categories = [...new Set([...had.categories, ...a.categories])];
  }
  return [...seen.values()];
}

function extent(values) {
  let lo = Infinity;
  let hi = -Infinity;
  for (const v of values) {
    if (!present(v)) continue;
    if (v < lo) lo = v;
    if (v > hi) hi = v;
  }
  return lo <= hi ? [lo, hi] : undefined;
}

/**
 * The axes to draw: the space's parameters (plus any a trial has that the space does not
 * name), domains widened to the values seen, then the metric. Numeric axes get ticks;
 * categorical ones one tick per category.
 */
export function parallelAxes(space, trials, metricName = 'metric') {
  const axes = flattenSpace(space).map((a) => ({ ...a }));
  const byName = new Map(axes.map((a) => [a.name, a]));
  for (const t of trials) {
    for (const [name, v] of Object.entries(t.params ?? {})) {
      if (byName.has(name)) continue;
      const a = { name, kind: typeof v === 'number' ? 'numeric' : 'categorical', log: false, categories: [] };
      byName.set(name, a);
      axes.push(a);
    }
  }
  for (const a of axes) {
    const values = trials.map((t) => t.params?.[a.name]).filter((v) => v !== undefined);
    if (a.kind === 'numeric' && values.some((v) => typeof v !== 'number')) {
      a.kind = 'categorical';
      a.categories = [];
    }
    if (a.kind === 'categorical') {
      a.categories = [...new Set([...(a.categories ?? []), ...values.map(String)])];
    } else {
      const seen = extent(values);
      const [lo, hi] = a.domain ?? seen ?? [0, 1];
      a.domain = seen ? [Math.min(lo, seen[0]), Math.max(hi, seen[1])] : [lo, hi];
      if (a.log && !(a.domain[0] > 0)) a.log = false;
    }
  }
  const metric = { name: metricName, kind: 'numeric', log: false, metric: true, domain: extent(trials.map((t) => t.value)) ?? [0, 1] };
  return [...axes, metric];
}

/**
 * Positions for a parallel-coordinates plot of `trials` over `axes` in a width × height box:
 * each axis its x and ticks (y and label), each trial a polyline (gaps where a parameter is
 * absent) coloured by its metric (best brightest) or grey when it has none.
 */
export function parallelLayout({ axes, trials, type = 'maximize', width, height, margin = { top: 24, right: 48, bottom: 20, left: 48 } }) {
  const top = margin.top;
  const bottom = height - margin.bottom;
  const xOf = linearScale([0, Math.max(1, axes.length - 1)], [margin.left, width - margin.right]);
  const placed = axes.map((a, i) => {
    const x = axes.length === 1 ? (margin.left + width - margin.right) / 2 : xOf(i);
    if (a.kind === 'categorical') {
      const n = Math.max(1, a.categories.length);
      const yOfCat = (k) => bottom - ((k + 0.5) / n) * (bottom - top);
      const index = new Map(a.categories.map((c, k) => [c, k]));
      return {
        ...a, x,
        y: (v) => (index.has(String(v)) ? yOfCat(index.get(String(v))) : undefined),
        ticks: a.categories.map((c, k) => ({ y: yOfCat(k), label: c })),
      };
    }
    const scale = (a.log ? logScale : linearScale)(a.domain, [bottom, top]);
    const values = a.log ? logTicks(a.domain[0], a.domain[1]) : niceTicks(a.domain[0], a.domain[1], 4);
    return {
      ...a, x,
      y: (v) => (present(v) ? scale(v) : undefined),
      ticks: values.map((v) => ({ y: scale(v), label: formatNumber(v, 3) })),
    };
  });
  const metricAxis = placed.find((a) => a.metric);
  const [m0, m1] = metricAxis?.domain ?? [0, 1];
  const quality = (v) => {
    if (!present(v)) return undefined;
    if (m0 === m1) return 1;
    const t = (v - m0) / (m1 - m0);
    return type === 'minimize' ? 1 - t : t;
  };
  const lines = trials.map((t) => {
    let d = '';
    let pen = false;
    for (const a of placed) {
      const y = a.metric ? a.y(t.value) : a.y(t.params?.[a.name]);
      if (y === undefined) {
        pen = false;
        continue;
      }
      d += `${pen ? 'L' : 'M'}${a.x.toFixed(1)},${y.toFixed(1)}`;
      pen = true;
    }
    const q = quality(t.value);
    return { index: t.index, d, value: t.value, quality: q, color: q === undefined ? '#9aa0a6' : rampColor(q), earlyStopped: t.state === 'EarlyStopped' };
  });
  // The best on top: drawn last.
  lines.sort((a, b) => (a.quality ?? -1) - (b.quality ?? -1));
  return { axes: placed.map(({ y, ...rest }) => rest), lines, top, bottom, legend: colorLegend(type, trials.some((t) => present(t.value)) ? metricAxis?.domain : undefined) };
}

/**
 * The colour scale of a parallel-coordinates plot: the ramp from worst to best as CSS
 * gradient stops, and the metric values at either end (for 'minimize' the worst is the
 * highest); undefined ends when no trial has a value.
 */
export function colorLegend(type, domain) {
  const stops = [0, 0.25, 0.5, 0.75, 1].map((t) => rampColor(t));
  if (!domain) return { stops, worst: undefined, best: undefined };
  const [lo, hi] = domain;
  return type === 'minimize' ? { stops, worst: hi, best: lo } : { stops, worst: lo, best: hi };
}
