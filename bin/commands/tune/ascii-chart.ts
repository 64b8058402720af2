// A small chart for the terminal: points (one `*` each) and a step line (`-` and `|`) on a
// grid of characters, with the y axis labelled by its max and min and the x axis by its min
// and max. `cairn tune show` draws each succeeded trial's value and the best so far with it.
// Plain ASCII; colour (ANSI) only when asked, i.e. when stdout is a terminal. Pure.

export interface ChartPoint {
  x: number;
  y: number;
}

export interface ChartOptions {
  /** Columns of the plot area (at least 2). */
  width: number;
  /** Rows of the plot area (at least 2). */
  height: number;
  /** ANSI colours: the points cyan, the line yellow. */
  colour?: boolean;
  /** A line above the chart, naming the y axis. */
  yLabel?: string;
  /** Centred under the x axis, between its min and max, where it fits. */
  xLabel?: string;
  /** A legend line under the chart: `* pointLabel  - lineLabel`. */
  pointLabel?: string;
  lineLabel?: string;
}

const POINT = '*';
const CYAN = '\x1b[36m';
const YELLOW = '\x1b[33m';
const RESET = '\x1b[0m';

/** A number for an axis label: at most 4 significant digits, no trailing zeros. */
export function axisNumber(v: number): string {
  if (v === 0) return '0';
  return String(Number(v.toPrecision(4)));
}

/** The best value so far at each point, in x order: the running max (maximize) or min (minimize). */
export function bestSoFar(points: readonly ChartPoint[], direction: 'maximize' | 'minimize'): ChartPoint[] {
  const out: ChartPoint[] = [];
  let best: number | undefined;
  for (const p of [...points].sort((a, b) => a.x - b.x)) {
    if (best === undefined || (direction === 'maximize' ? p.y > best : p.y < best)) best = p.y;
    out.push({ x: p.x, y: best });
  }
  return out;
}

/**
 * The chart as lines of text ending in a newline; '' when there is nothing to draw.
 * `line` is drawn as steps: level from one point to the next, then up or down.
 */
export function asciiChart(points: readonly ChartPoint[], line: readonly ChartPoint[], opts: ChartOptions): string {
  const width = Math.floor(opts.width);
  const height = Math.floor(opts.height);
  if (!(width >= 2) || !(height >= 2)) throw new RangeError(`a chart needs a width and a height of at least 2, got ${opts.width}x${opts.height}`);
  const finite = (p: ChartPoint) => Number.isFinite(p.x) && Number.isFinite(p.y);
  const marks = points.filter(finite);
  const steps = line.filter(finite).sort((a, b) => a.x - b.x);
  const all = [...marks, ...steps];
  if (all.length === 0) return '';

  const xs = all.map((p) => p.x);
  const ys = all.map((p) => p.y);
  const xMin = Math.min(...xs);
  const xMax = Math.max(...xs);
  const yMin = Math.min(...ys);
  const yMax = Math.max(...ys);
  const col = (x: number) => (xMax === xMin ? 0 : Math.round(((x - xMin) / (xMax - xMin)) * (width - 1)));
  const row = (y: number) => (yMax === yMin ? Math.floor((height - 1) / 2) : Math.round(((yMax - y) / (yMax - yMin)) * (height - 1)));

  const grid: string[][] = Array.from({ length: height }, () => Array.from({ length: width }, () => ' '));
  const kind: ('p' | 'l' | '')[][] = Array.from({ length: height }, () => Array.from({ length: width }, () => '' as const));
  const put = (r: number, c: number, ch: string, k: 'p' | 'l') => {
    grid[r][c] = ch;
    kind[r][c] = k;
  };
  for (let i = 0; i < steps.length; i++) {
    const a = steps[i];
    const ra = row(a.y);
    const next = steps[i + 1];
    if (!next) {
      put(ra, col(a.x), '-', 'l');
      break;
    }
    for (let c = col(a.x); c < col(next.x); c++) put(ra, c, '-', 'l');
    const rb = row(next.y);
    for (let r = Math.min(ra, rb) + 1; r < Math.max(ra, rb); r++) put(r, col(next.x), '|', 'l');
  }
  for (const p of marks) put(row(p.y), col(p.x), POINT, 'p');

  const top = axisNumber(yMax);
  const bottom = axisNumber(yMin);
  const labelWidth = Math.max(top.length, bottom.length);
  const paint = (r: number) =>
    grid[r]
      .map((ch, c) => (!opts.colour || kind[r][c] === '' ? ch : `${kind[r][c] === 'p' ? CYAN : YELLOW}${ch}${RESET}`))
      .join('');
  const out: string[] = [];
  if (opts.yLabel) out.push(opts.yLabel);
  for (let r = 0; r < height; r++) {
    const label = r === 0 ? top : r === height - 1 ? bottom : '';
    out.push(`${label.padStart(labelWidth)} |${paint(r)}`.trimEnd());
  }
  out.push(`${' '.repeat(labelWidth)} +${'-'.repeat(width)}`);

  const left = axisNumber(xMin);
  const right = xMax === xMin ? '' : axisNumber(xMax);
  const axis = Array.from({ length: Math.max(width, left.length + 1 + right.length) }, () => ' ');
  const write = (at: number, text: string) => text.split('').forEach((ch, i) => (axis[at + i] = ch));
  write(0, left);
  if (right !== '') write(Math.max(left.length + 1, width - right.length), right);
  if (opts.xLabel) {
    const free = width - right.length - left.length - 2;
    if (opts.xLabel.length <= free) write(left.length + 1 + Math.floor((free - opts.xLabel.length) / 2), opts.xLabel);
  }
  out.push(`${' '.repeat(labelWidth + 2)}${axis.join('')}`.trimEnd());
  if (opts.pointLabel || opts.lineLabel) {
    const legend = [opts.pointLabel ? `${opts.colour ? `${CYAN}${POINT}${RESET}` : POINT} ${opts.pointLabel}` : '', opts.lineLabel ? `${opts.colour ? `${YELLOW}-${RESET}` : '-'} ${opts.lineLabel}` : ''].filter(Boolean);
    out.push(`${' '.repeat(labelWidth + 2)}${legend.join('   ')}`);
  }
  return `${out.join('\n')}\n`;
}
