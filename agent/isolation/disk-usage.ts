// Measures what a directory tree takes on disk, as `du -s` counts it (allocated blocks, so a
// sparse file counts what it holds, not its length; a file with several names once), and
// cheaply enough to run over every task's sandbox every few seconds:
// - nothing is followed: every entry is lstat'ed, a symlink counts as itself, and a
//   directory on another filesystem (a mount point) is neither counted nor entered;
// - the walk stops as soon as the count passes `stopAboveBytes` (the task is over its limit
//   whatever else there is), and when its time budget is spent; the figure is then a lower
//   bound (`complete: false`);
// - directories are read a batch at a time (opendir), so a directory of a million names
//   costs no more memory than one of a hundred.
// The sandbox belongs to the task's user, who may rename and delete under the walk: an entry
// that vanished is skipped, never an error.

import { lstat, opendir } from 'node:fs/promises';
import { join } from 'node:path';

export interface TreeUsage {
  bytes: number;
  /** False when the walk stopped early (over `stopAboveBytes`, or out of time). */
  complete: boolean;
  /** Entries looked at. */
  entries: number;
  /** Why the walk stopped early, when it did. */
  stopped?: 'limit' | 'budget';
}

export interface MeasureOptions {
  /** Stop once the count is above this (a limit that is already passed). */
  stopAboveBytes?: number;
  /** The longest the walk may take, in milliseconds. */
  budgetMs: number;
  /** A monotonic clock in milliseconds (tests). */
  now?: () => number;
}

const BLOCK = 512;

export async function measureTree(root: string, opts: MeasureOptions): Promise<TreeUsage> {
  const now = opts.now ?? (() => performance.now());
  const deadline = now() + opts.budgetMs;
  const top = await lstat(root).catch(() => undefined);
  if (!top) return { bytes: 0, complete: true, entries: 0 };
  const usage: TreeUsage = { bytes: top.blocks * BLOCK, complete: true, entries: 1 };
  if (!top.isDirectory()) return usage;
  const seen = new Set<string>();
  const stack = [root];
  const over = (): boolean => opts.stopAboveBytes !== undefined && usage.bytes > opts.stopAboveBytes;
  while (stack.length > 0) {
    if (over()) return stop(usage, 'limit');
    if (now() > deadline) return stop(usage, 'budget');
    const dir = stack.pop()!;
    let handle;
    try {
      handle = await opendir(dir, { bufferSize: 128 });
    } catch {
      continue; // gone, or replaced by something that is not a directory
    }
    // Leaving the loop early closes the handle.
    for await (const entry of handle) {
      const path = join(dir, entry.name);
      const st = await lstat(path).catch(() => undefined);
      usage.entries++;
      if (st && st.dev === top.dev) {
        if (st.isDirectory()) {
          usage.bytes += st.blocks * BLOCK;
          stack.push(path);
        } else if (st.nlink <= 1 || !seen.has(`${st.ino}`)) {
          if (st.nlink > 1) seen.add(`${st.ino}`);
          usage.bytes += st.blocks * BLOCK;
        }
      }
      if (over()) return stop(usage, 'limit');
      if (now() > deadline) return stop(usage, 'budget');
    }
  }
  return usage;
}

function stop(usage: TreeUsage, why: 'limit' | 'budget'): TreeUsage {
  return { ...usage, complete: false, stopped: why };
}
