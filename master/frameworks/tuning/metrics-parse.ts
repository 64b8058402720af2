// A trial's metrics, read from the lines it prints on stdout as Katib's collector reads them:
// `name=value` pairs anywhere on a line (`accuracy=0.93`, `loss = 0.2`), several on one line.
// A line that also carries `step=N` (or `epoch=N`) reports the other metrics at that step:
// an intermediate result, which early stopping judges. In a trial that gives no steps, lines
// are numbered by their order among a metric's reports, so a plain `accuracy=…` per epoch
// still forms a curve; in one that does, a line without a step is its result, not a step
// (the tuning core numbers them). Pure.

/** Katib's default metric filter: a name of word characters, `|` or `-`; a number. */
const PAIR = /([\w|-]+)\s*=\s*([+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)/g;
const STEP_NAMES = new Set(['step', 'epoch']);

export interface MetricReport {
  /** Given on the line, or undefined: the caller numbers it. */
  readonly step: number | undefined;
  readonly values: ReadonlyMap<string, number>;
}

/** The metrics on one line; undefined when it carries none (a step alone is no report). */
export function parseMetricLine(line: string): MetricReport | undefined {
  const values = new Map<string, number>();
  let step: number | undefined;
  for (const m of line.matchAll(PAIR)) {
    const value = Number(m[2]);
    if (!Number.isFinite(value)) continue;
    if (STEP_NAMES.has(m[1].toLowerCase())) {
      if (Number.isInteger(value) && value >= 0) step = value;
      continue;
    }
    values.set(m[1], value);
  }
  return values.size > 0 ? { step, values } : undefined;
}

/**
 * Splits newly read log text into complete lines, and the unfinished rest to keep for the
 * next read (a line is judged only once it has ended).
 */
export function completeLines(pending: string, text: string): { lines: string[]; rest: string } {
  const all = pending + text;
  const cut = all.lastIndexOf('\n');
  if (cut === -1) return { lines: [], rest: all };
  return { lines: all.slice(0, cut).split('\n'), rest: all.slice(cut + 1) };
}
