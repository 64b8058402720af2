// When the lines of a task's log were written, for `cairn logs --timestamps` and `--since`.
// A task writes its log files itself (they outlive the agent), so nothing sees a line as it
// is written. Instead the agent notes, every LOG_TIMES_INTERVAL_MS, each running task's log
// sizes that grew, with the time: "MS SIZE" lines in a file of its own work dir (not in the
// sandbox, which the task may write to). A line's time is that of the first note at or past
// its end: when the agent saw it, at most one interval after it was written.

import { appendFile, mkdir, readdir, readFile, rm, stat } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import type { LogTimeNote } from '../shared/master-state.ts';

export const LOG_TIMES_INTERVAL_MS = 1000;

/** Notes of ended tasks whose sandbox is gone are removed every this many rounds. */
const TIDY_EVERY_ROUNDS = 60;

const STREAMS = ['stdout', 'stderr'] as const;

/** Where the notes of a sandbox's log go: `WORK_DIR/log-times/SANDBOX.STREAM`, beside `WORK_DIR/sandboxes/`. */
export function logTimesPath(sandbox: string, stream: 'stdout' | 'stderr'): string {
  return join(dirname(dirname(sandbox)), 'log-times', `${basename(sandbox)}.${stream}`);
}

/** Parses a notes file; a torn last line (the agent stopped mid-write) is left out. */
export function parseNotes(text: string): LogTimeNote[] {
  const out: LogTimeNote[] = [];
  for (const line of text.split('\n')) {
    const m = /^(\d+) (\d+)$/.exec(line);
    if (m) out.push([Number(m[2]), Number(m[1])]);
  }
  return out;
}

/**
 * The notes a read of bytes [from, to) needs to time its lines: those past `from`, up to and
 * including the first at or past `to`. [] when there are none (a log from before notes were
 * kept, or bytes written since the last round).
 */
export async function readLogTimes(sandbox: string, stream: 'stdout' | 'stderr', from: number, to: number): Promise<LogTimeNote[]> {
  let text: string;
  try {
    text = await readFile(logTimesPath(sandbox, stream), 'utf8');
  } catch {
    return [];
  }
  const notes = parseNotes(text);
  const out: LogTimeNote[] = [];
  for (const n of notes) {
    if (n[0] <= from) continue;
    out.push(n);
    if (n[0] >= to) break;
  }
  return out;
}

export interface LogTimesOptions {
  /** The sandboxes of the tasks running now. */
  sandboxes(): readonly string[];
  /** The sandboxes root, whose gone entries' notes are removed. */
  sandboxesRoot: string;
  now(): number;
  intervalMs: number;
  onError?(err: Error): void;
}

/** Takes the notes: one round every interval while started. */
export class LogTimesRecorder {
  private readonly last = new Map<string, number>();
  private timer: NodeJS.Timeout | undefined;
  private rounds = 0;
  private running: Promise<void> = Promise.resolve();

  constructor(private readonly opts: LogTimesOptions) {}

  start(): void {
    const tick = () => {
      this.running = this.round().catch((err: Error) => this.opts.onError?.(err)).finally(() => {
        if (this.timer !== undefined) this.timer = setTimeout(tick, this.opts.intervalMs);
      });
    };
    this.timer = setTimeout(tick, 0);
  }

  async stop(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    await this.running;
  }

  /** One round: a note for each running task's log that grew since the last one. */
  async round(): Promise<void> {
    const now = this.opts.now();
    for (const sandbox of this.opts.sandboxes()) {
      for (const stream of STREAMS) {
        const size = await stat(join(sandbox, stream)).then((s) => s.size, () => undefined);
        if (size === undefined) continue;
        const path = logTimesPath(sandbox, stream);
        // After a restart, the last note on disk says how far notes went.
        const last = this.last.get(path) ?? (await readFile(path, 'utf8').then((t) => parseNotes(t).at(-1)?.[0] ?? 0, () => 0));
        if (size > last) {
          await mkdir(dirname(path), { recursive: true });
          await appendFile(path, `${now} ${size}\n`);
        }
        this.last.set(path, Math.max(size, last));
      }
    }
    if (++this.rounds % TIDY_EVERY_ROUNDS === 0) await this.tidy();
  }

  /** Removes the notes of sandboxes that are gone (sandbox-gc.ts removed them). */
  private async tidy(): Promise<void> {
    const root = join(dirname(this.opts.sandboxesRoot), 'log-times');
    for (const name of await readdir(root).catch(() => [] as string[])) {
      const sandbox = join(this.opts.sandboxesRoot, name.replace(/\.(stdout|stderr)$/, ''));
      if (await stat(sandbox).then(() => false, () => true)) {
        await rm(join(root, name), { force: true });
        this.last.delete(join(root, name));
      }
    }
  }
}
