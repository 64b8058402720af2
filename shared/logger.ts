// Process-wide structured logging (pino). Level from CAIRN_LOG_LEVEL (default info);
// tests pass a silent logger instead. The daemons' loggers (daemonLogger) write JSON lines,
// or lines for people (log-text.ts), to stderr. A JSON line names its level ("level":"warn")
// and gives its time in ISO 8601, UTC ("time":"2026-11-27T22:00:00.000Z"): what log
// shippers and people read without pino's table of level numbers or an epoch converter.
//
// Every line carries each key once. Two things would repeat one: a child of a child that
// binds `component` again (pino appends bindings, it does not replace them), and a field
// of a log call that is also a key of every line (`name`, `hostname`...). The first is
// avoided by naming parts with componentLogger, which makes one component path
// ("agent/master-link") on a logger without the parent's; the second by the daemons'
// log formatter, which moves such a field under "fields".

import pino, { type ChildLoggerOptions, type DestinationStream, type Logger } from 'pino';
import { formatLogLine } from './log-text.ts';

export type { Logger };

export type LogFormat = 'text' | 'json';
export const LOG_FORMATS: readonly LogFormat[] = ['text', 'json'];
export type LogLevelName = 'trace' | 'debug' | 'info' | 'warn' | 'error' | 'fatal' | 'silent';
export const LOG_LEVELS: readonly LogLevelName[] = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'];

/** pino's options for the line's level (its name, not pino's number) and time (ISO 8601). */
export const LINE_FORMAT = {
  formatters: { level: (label: string) => ({ level: label }) },
  timestamp: pino.stdTimeFunctions.isoTime,
} as const;

export function createLogger(name: string): Logger {
  return pino({ name, level: process.env.CAIRN_LOG_LEVEL ?? 'info', ...LINE_FORMAT });
}

export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}

/** Keys every daemon line has (pino's own, its base bindings, and the component path). */
const LINE_KEYS = new Set(['level', 'time', 'msg', 'pid', 'hostname', 'name', 'component']);

/**
 * A log call's fields, with those that are keys of every line moved under "fields": written
 * beside the line's own, they would repeat a key (and JSON.parse keeps the last silently).
 */
export function withoutLineKeys(obj: Record<string, unknown>): Record<string, unknown> {
  let clash = false;
  for (const k in obj) {
    if (LINE_KEYS.has(k)) {
      clash = true;
      break;
    }
  }
  if (!clash) return obj;
  const out: Record<string, unknown> = {};
  const fields: Record<string, unknown> = typeof obj.fields === 'object' && obj.fields !== null ? { ...(obj.fields as Record<string, unknown>) } : {};
  for (const [k, v] of Object.entries(obj)) {
    if (LINE_KEYS.has(k)) fields[k] = v;
    else if (k !== 'fields') out[k] = v;
  }
  out.fields = fields;
  return out;
}

export interface DaemonLoggerOptions {
  /** The daemon's name, on every line ("cairn", "cairn-master", "cairn-agent"). */
  name: string;
  level: LogLevelName;
  format: LogFormat;
  /** Text only: colour the level (stderr is a terminal and NO_COLOR is not set). */
  color?: boolean;
  /** Where lines go; default: stderr (fd 2), written synchronously so none is lost at exit. */
  destination?: DestinationStream;
}

/**
 * A daemon's logger. JSON: pino's lines as they are. Text: each JSON line re-read and
 * written as "time level component: message key=value" — pino's own line is the one
 * source of truth for what a line holds, so both formats say the same.
 */
export function daemonLogger(o: DaemonLoggerOptions): Logger {
  const out = o.destination ?? pino.destination({ dest: 2, sync: true });
  const dest: DestinationStream = o.format === 'json'
    ? out
    : { write: (line: string) => void out.write(formatLogLine(line, { color: o.color ?? false })) };
  return pino({ name: o.name, level: o.level, timestamp: LINE_FORMAT.timestamp, formatters: { ...LINE_FORMAT.formatters, log: withoutLineKeys } }, dest);
}

/** What componentLogger remembers of the loggers it made: the logger below the path, and the path. */
const parts = new WeakMap<Logger, { base: Logger; path: string }>();

/**
 * The logger of a part of a daemon: its lines say `"component":"<path>"` once, the path of
 * the parts it is in ("agent/master-link", "master-2/raft/raft-transport"). Parts are named
 * through this function only; a plain `child({ component })` under another would repeat the key.
 */
export function componentLogger(parent: Logger, name: string, options?: ChildLoggerOptions): Logger {
  const part = parts.get(parent);
  const path = part ? `${part.path}/${name}` : name;
  const base = part?.base ?? parent;
  // The parent's level, not the base's: a part made quieter or louder keeps that below it.
  const child = base.child({ component: path }, { level: parent.level, ...options });
  parts.set(child, { base, path });
  return child;
}
