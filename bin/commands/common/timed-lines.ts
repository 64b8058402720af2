// `cairn logs --timestamps` and `--since` (pure): a log's chunks cut into lines, each given
// the time the agent saw it written by (agent/log-times.ts: the first note at or past the
// line's end). A line no note covers yet was written within the agent's last interval: it
// gets the time it arrived here, which for a followed log is within a poll of its writing
// (and for a task that ended before its agent kept notes, is only when it was read). An
// agent that sends no times at all (an older one) gives lines "-", which --since keeps.

import type { LogChunk, LogTimeNote } from '../../../shared/master-state.ts';

export interface TimedLinesOptions {
  /** Prefix each line with its time (RFC 3339, UTC, milliseconds). */
  stamp: boolean;
  /** Leave out the lines written before this time. */
  notBeforeMs?: number;
  now(): number;
}

export class TimedLines {
  private notes: LogTimeNote[] = [];
  private pending = '';
  /** The byte offset where `pending` starts. */
  private pendingAt: number | undefined;
  private untimed = false;

  constructor(private readonly o: TimedLinesOptions) {}

  /** The text to print for a chunk (its complete lines; a partial one waits for the rest). */
  push(chunk: Pick<LogChunk, 'data' | 'offset' | 'times'>): string {
    // An agent that keeps no notes sends no times (an empty keepalive chunk says nothing).
    if (chunk.times === undefined && chunk.data !== '') this.untimed = true;
    for (const n of chunk.times ?? []) if (n[0] > (this.notes.at(-1)?.[0] ?? -1)) this.notes.push(n);
    this.pendingAt ??= chunk.offset;
    this.pending += chunk.data;
    const cut = this.pending.lastIndexOf('\n');
    if (cut < 0) return '';
    const whole = this.pending.slice(0, cut + 1);
    this.pending = this.pending.slice(cut + 1);
    const text = this.lines(whole, this.pendingAt);
    this.pendingAt += Buffer.byteLength(whole);
    return text;
  }

  /** What is left at the end: a last line without its newline. */
  flush(): string {
    if (this.pending === '') return '';
    const text = this.lines(this.pending, this.pendingAt ?? 0);
    this.pendingAt = (this.pendingAt ?? 0) + Buffer.byteLength(this.pending);
    this.pending = '';
    return text;
  }

  private lines(text: string, from: number): string {
    let at = from;
    let out = '';
    for (const line of text.split(/(?<=\n)/)) {
      at += Buffer.byteLength(line);
      const t = this.timeOf(at);
      if (t !== undefined && this.o.notBeforeMs !== undefined && t < this.o.notBeforeMs) continue;
      out += this.o.stamp ? `${t === undefined ? '-' : new Date(t).toISOString()} ${line}` : line;
    }
    return out;
  }

  /** When the byte before `end` was written by; undefined where the agent kept no notes. */
  private timeOf(end: number): number | undefined {
    if (this.untimed) return undefined;
    return this.notes.find((n) => n[0] >= end)?.[1] ?? this.o.now();
  }
}
