// Garbage collection of sandboxes. A finished task's sandbox (its logs, whatever it
// wrote) stays readable for `--sandbox-gc-age` (7 days by default) after it was last
// written to, then goes. When the work directory's filesystem is fuller than
// `--sandbox-gc-disk-percent` (90 % by default), finished sandboxes go sooner, oldest
// first, until it is below the threshold again. A sandbox of a task the agent still holds
// (running, or its end not yet acknowledged) is never touched.
//
// Deciding is pure (planByAge, planByPressure); the collector is the thin shell that
// lists, measures and removes.

import { readdir, rm, stat, statfs } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { sandboxesRoot } from './executors/process/sandbox.ts';

export const DEFAULT_SANDBOX_GC_AGE_MS = 7 * 24 * 3600 * 1000;
export const DEFAULT_SANDBOX_GC_DISK_PERCENT = 90;
export const DEFAULT_SANDBOX_GC_INTERVAL_MS = 60_000;

export interface SandboxEntry {
  /** Directory name under `<workDir>/sandboxes`. */
  name: string;
  path: string;
  /** Last time anything in it was written (the newest mtime of the directory and its files). */
  lastWriteMs: number;
}

/** Sandboxes old enough to go, oldest first (pure). */
export function planByAge(entries: readonly SandboxEntry[], nowMs: number, ageMs: number): SandboxEntry[] {
  return entries.filter((e) => nowMs - e.lastWriteMs >= ageMs).sort((a, b) => a.lastWriteMs - b.lastWriteMs);
}

/** The order in which sandboxes go under disk pressure: oldest first (pure). */
export function planByPressure(entries: readonly SandboxEntry[]): SandboxEntry[] {
  return [...entries].sort((a, b) => a.lastWriteMs - b.lastWriteMs);
}

/** Percentage of the filesystem in use, as df counts it (blocks not available to users count as used). */
export async function diskUsedPercent(path: string): Promise<number> {
  const st = await statfs(path);
  if (st.blocks === 0) return 0;
  return 100 * (1 - st.bavail / st.blocks);
}

export interface SandboxGcOptions {
  workDir: string;
  ageMs: number;
  diskPercent: number;
  intervalMs: number;
  /** Sandbox paths of the tasks the agent holds; these are never removed. */
  inUse: () => ReadonlySet<string>;
  /** Replaces diskUsedPercent (tests). */
  diskUsage?: (path: string) => Promise<number>;
  now?: () => number;
  logger?: Logger;
}

export interface GcRun {
  removed: string[];
  /** Of the removed, those that went because the disk was full, not because of their age. */
  forPressure: string[];
  diskPercentBefore: number;
  diskPercentAfter: number;
}

export class SandboxGc {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<GcRun> | undefined;

  constructor(private readonly opts: SandboxGcOptions) {}

  start(): void {
    this.timer = setInterval(() => void this.runOnce().catch((err: Error) => this.opts.logger?.warn({ err: err.message }, 'sandbox collection failed')), this.opts.intervalMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    await this.running?.catch(() => undefined);
  }

  /** One collection (a call while one runs waits for that one). */
  runOnce(): Promise<GcRun> {
    this.running ??= this.collect().finally(() => {
      this.running = undefined;
    });
    return this.running;
  }

  private async collect(): Promise<GcRun> {
    const now = (this.opts.now ?? Date.now)();
    const usage = this.opts.diskUsage ?? diskUsedPercent;
    const entries = await this.finishedSandboxes();
    const removed: string[] = [];
    const forPressure: string[] = [];
    const gone = new Set<string>();
    for (const e of planByAge(entries, now, this.opts.ageMs)) {
      if (await this.remove(e)) {
        removed.push(e.name);
        gone.add(e.name);
      }
    }
    const before = await usage(this.opts.workDir);
    let after = before;
    if (after > this.opts.diskPercent) {
      for (const e of planByPressure(entries.filter((x) => !gone.has(x.name)))) {
        if (after <= this.opts.diskPercent) break;
        if (await this.remove(e)) {
          removed.push(e.name);
          forPressure.push(e.name);
          after = await usage(this.opts.workDir);
        }
      }
      if (after > this.opts.diskPercent) {
        this.opts.logger?.warn({ diskPercent: Math.round(after), threshold: this.opts.diskPercent }, 'the work directory is still above the disk threshold; no finished sandbox is left to remove');
      }
    }
    if (removed.length > 0) this.opts.logger?.info({ removed: removed.length, forPressure: forPressure.length, diskPercent: Math.round(after) }, 'removed sandboxes of finished tasks');
    return { removed, forPressure, diskPercentBefore: before, diskPercentAfter: after };
  }

  private async finishedSandboxes(): Promise<SandboxEntry[]> {
    const root = sandboxesRoot(this.opts.workDir);
    let names: string[];
    try {
      names = await readdir(root);
    } catch {
      return [];
    }
    const inUse = this.opts.inUse();
    const out: SandboxEntry[] = [];
    for (const name of names) {
      const path = join(root, name);
      if (inUse.has(path)) continue;
      try {
        out.push({ name, path, lastWriteMs: await lastWrite(path) });
      } catch {
        // removed meanwhile, or not a directory we can read
      }
    }
    return out;
  }

  private async remove(e: SandboxEntry): Promise<boolean> {
    // A task with this id may have been launched again since the listing.
    if (this.opts.inUse().has(e.path)) return false;
    try {
      await rm(e.path, { recursive: true, force: true });
      return true;
    } catch (err) {
      this.opts.logger?.warn({ sandbox: e.path, err: (err as Error).message }, 'cannot remove a sandbox');
      return false;
    }
  }
}

async function lastWrite(dir: string): Promise<number> {
  const st = await stat(dir);
  if (!st.isDirectory()) throw new Error('not a directory');
  let latest = st.mtimeMs;
  for (const entry of await readdir(dir)) {
    try {
      latest = Math.max(latest, (await stat(join(dir, entry))).mtimeMs);
    } catch {
      // gone meanwhile
    }
  }
  return latest;
}
