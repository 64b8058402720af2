// A daemon's JSON log line as a line for people: "time level component: message key=value".
// Written here rather than taken from pino-pretty: the lines have one fixed shape, so a few
// dozen lines do it synchronously on the daemon's own thread (a line is on the terminal
// before the next statement runs, and none is lost when the process exits), with no new
// dependencies (pino-pretty brings a dozen packages for options the daemons do not need).

/** pino's level numbers, by the names the lines carry. */
const LEVEL_RANKS: Record<string, number> = { trace: 10, debug: 20, info: 30, warn: 40, error: 50, fatal: 60 };
/** The names shown for the level numbers, and their colours. */
const LEVEL_NAMES: Record<number, string> = { 10: 'TRACE', 20: 'DEBUG', 30: 'INFO', 40: 'WARN', 50: 'ERROR', 60: 'FATAL' };
const LEVEL_COLORS: Record<number, string> = { 10: '90', 20: '36', 30: '32', 40: '33', 50: '31', 60: '35' };

/**
 * A line's level as pino's number (info 30, warn 40...), for comparing: the lines name it
 * ("warn"); a number (lines of pino's default format) is taken as it is; 30 when neither.
 */
export function levelRank(level: unknown): number {
  if (typeof level === 'number') return level;
  return typeof level === 'string' ? (LEVEL_RANKS[level] ?? 30) : 30;
}

/** A line's time as epoch milliseconds: the lines give ISO 8601, pino's default an epoch number. */
function timeMs(time: unknown): number | undefined {
  if (typeof time === 'number') return time;
  if (typeof time !== 'string') return undefined;
  const ms = Date.parse(time);
  return Number.isNaN(ms) ? undefined : ms;
}

/** Keys shown in the line's head, or not at all (pid, hostname and name are the same on every line). */
const HEAD_KEYS = new Set(['level', 'time', 'msg', 'component', 'pid', 'hostname', 'name']);

export interface TextOptions {
  /** ANSI colours for the level and the time. */
  color: boolean;
}

/** hh:mm:ss.mmm in local time: the date is the terminal's today (JSON lines carry the full time). */
function clock(ms: number): string {
  const d = new Date(ms);
  const p = (n: number, w = 2) => String(n).padStart(w, '0');
  return `${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}.${p(d.getMilliseconds(), 3)}`;
}

/** A value as it reads after `key=`: bare when it has nothing that would blur where it ends. */
function valueText(v: unknown): string {
  if (typeof v === 'string') return v !== '' && /^[^\s"=\\]+$/.test(v) ? v : JSON.stringify(v);
  if (typeof v === 'number' || typeof v === 'boolean' || v === null) return String(v);
  return JSON.stringify(v);
}

/** One JSON line (with or without its newline) as text, ending in a newline; a line that is not JSON is kept as it is. */
export function formatLogLine(line: string, o: TextOptions): string {
  let rec: Record<string, unknown>;
  try {
    const parsed: unknown = JSON.parse(line);
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return line.endsWith('\n') ? line : `${line}\n`;
    rec = parsed as Record<string, unknown>;
  } catch {
    return line.endsWith('\n') ? line : `${line}\n`;
  }
  const level = levelRank(rec.level);
  const name = (LEVEL_NAMES[level] ?? String(level)).padEnd(5);
  const ms = timeMs(rec.time);
  const time = ms === undefined ? '' : clock(ms);
  const paint = (code: string, s: string) => (o.color ? `\x1b[${code}m${s}\x1b[0m` : s);
  let head = `${paint('2', time)} ${paint(LEVEL_COLORS[level] ?? '0', name)} `;
  if (typeof rec.component === 'string') head += `${rec.component}: `;
  head += typeof rec.msg === 'string' ? rec.msg : '';
  const pairs: string[] = [];
  let stack = '';
  for (const [k, v] of Object.entries(rec)) {
    if (HEAD_KEYS.has(k) || v === undefined) continue;
    // pino's error serializer: the message in the line, the stack below it.
    if (typeof v === 'object' && v !== null && typeof (v as { message?: unknown }).message === 'string' && typeof (v as { stack?: unknown }).stack === 'string') {
      pairs.push(`${k}=${valueText((v as { message: string }).message)}`);
      stack += `\n    ${(v as { stack: string }).stack.split('\n').join('\n    ')}`;
      continue;
    }
    pairs.push(`${k}=${valueText(v)}`);
  }
  return `${head}${pairs.length > 0 ? ` ${pairs.join(' ')}` : ''}${stack}\n`;
}
