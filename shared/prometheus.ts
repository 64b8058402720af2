// The Prometheus text format (version 0.0.4) as the master's and the agent's `/metrics` write
// it, and the histogram both observe into (pure: no clock, no I/O; callers pass durations in).
// Names follow Prometheus' conventions: base units in the name (`_seconds`, `_bytes`),
// `_total` on counters only, histograms as `_bucket{le}`, `_sum` and `_count`.

export type Labels = Record<string, string>;
export type Sample = { labels?: Labels; value: number };

function escapeLabel(v: string): string {
  return v.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
}

function labelText(labels: Labels | undefined): string {
  if (!labels) return '';
  const entries = Object.entries(labels);
  return entries.length === 0 ? '' : `{${entries.map(([k, v]) => `${k}="${escapeLabel(v)}"`).join(',')}}`;
}

function numberText(v: number): string {
  if (Number.isNaN(v)) return 'NaN';
  if (v === Infinity) return '+Inf';
  if (v === -Infinity) return '-Inf';
  return String(v);
}

function header(name: string, type: string, help: string): string[] {
  return [`# HELP ${name} ${help.replace(/\\/g, '\\\\').replace(/\n/g, '\\n')}`, `# TYPE ${name} ${type}`];
}

/** One counter or gauge family. A family with no samples is still declared (HELP and TYPE). */
export function promFamily(name: string, type: 'counter' | 'gauge', help: string, samples: Sample[]): string {
  const lines = header(name, type, help);
  for (const s of samples) lines.push(`${name}${labelText(s.labels)} ${Number.isFinite(s.value) ? numberText(s.value) : 0}`);
  return lines.join('\n');
}

/** What a histogram holds at one moment: cumulative counts per upper bound, sum and count. */
export interface HistogramSnapshot {
  /** Upper bounds, ascending, without +Inf. */
  bounds: readonly number[];
  /** Observations at or below each bound (cumulative), same length as `bounds`. */
  cumulative: number[];
  sum: number;
  count: number;
}

/** A Prometheus histogram: fixed bucket bounds, observations counted into them. */
export class Histogram {
  private readonly counts: number[];
  private sum = 0;
  private count = 0;

  constructor(readonly bounds: readonly number[]) {
    for (let i = 1; i < bounds.length; i++) {
      if (!(bounds[i]! > bounds[i - 1]!)) throw new Error('histogram bounds must ascend');
    }
    this.counts = bounds.map(() => 0);
  }

  observe(value: number): void {
    if (!Number.isFinite(value)) return;
    this.sum += value;
    this.count++;
    const i = this.bounds.findIndex((b) => value <= b);
    if (i >= 0) this.counts[i]!++;
  }

  snapshot(): HistogramSnapshot {
    let acc = 0;
    return { bounds: this.bounds, cumulative: this.counts.map((c) => (acc += c)), sum: this.sum, count: this.count };
  }
}

/** Buckets for durations from a millisecond to a minute. */
export const DURATION_BUCKETS_S: readonly number[] = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

/** Buckets for time spent queued: placed at once (a tenth of a second) to waiting hours. */
export const QUEUE_WAIT_BUCKETS_S: readonly number[] = [0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600, 7200, 21600];

/** One histogram family (one series; `labels` are added to every sample). */
export function histogramFamily(name: string, help: string, h: HistogramSnapshot, labels: Labels = {}): string {
  const lines = header(name, 'histogram', help);
  h.bounds.forEach((b, i) => lines.push(`${name}_bucket${labelText({ ...labels, le: numberText(b) })} ${h.cumulative[i]}`));
  lines.push(`${name}_bucket${labelText({ ...labels, le: '+Inf' })} ${h.count}`);
  lines.push(`${name}_sum${labelText(labels)} ${numberText(h.sum)}`);
  lines.push(`${name}_count${labelText(labels)} ${h.count}`);
  return lines.join('\n');
}

/** `NAME_info{...} 1`: facts as labels, as Prometheus' build_info series do. */
export function infoFamily(name: string, help: string, labels: Labels): string {
  return promFamily(name, 'gauge', help, [{ labels, value: 1 }]);
}

/** The families joined into one exposition, ending in a newline as the format requires. */
export function exposition(families: readonly string[]): string {
  return families.filter((f) => f !== '').join('\n') + '\n';
}

export const PROMETHEUS_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';
