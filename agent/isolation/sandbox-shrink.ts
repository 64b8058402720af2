// Gives back the disk a task took beyond its limit, once it has ended: a task killed over its
// disk limit leaves its sandbox as it was, and the sandbox is kept for days for its logs
// (sandbox-gc.ts), so without this what it wrote would keep the space it was killed for
// taking. Everything in the sandbox goes but its logs and its exit status; a log longer
// than the limit keeps its first `logCapBytes` (the start of the output, and the reason of
// the end in the task's status, are what one reads after such a kill).
//
// The sandbox is the task user's: nothing in it is followed (rm removes a symlink, not what
// it names; a log is opened with O_NOFOLLOW and must be a regular file with one name to be cut).

import { constants } from 'node:fs';
import { open, readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';

export interface ShrinkResult {
  /** Names removed from the sandbox's top level. */
  removed: string[];
  /** Logs cut to the cap. */
  truncated: string[];
}

/**
 * Removes every top-level entry of `dir` not named in `keep` (nor starting with one of
 * `keepPrefixes`), and cuts each of `logs` to `logCapBytes`.
 */
export async function shrinkSandbox(dir: string, opts: { logs: readonly string[]; keepPrefixes: readonly string[]; logCapBytes: number }): Promise<ShrinkResult> {
  const result: ShrinkResult = { removed: [], truncated: [] };
  let names: string[];
  try {
    names = await readdir(dir);
  } catch {
    return result;
  }
  for (const name of names) {
    if (opts.logs.includes(name) || opts.keepPrefixes.some((p) => name.startsWith(p))) continue;
    await rm(join(dir, name), { recursive: true, force: true }).catch(() => undefined);
    result.removed.push(name);
  }
  for (const name of opts.logs) {
    if (await truncateRegularFile(join(dir, name), opts.logCapBytes)) result.truncated.push(name);
  }
  return result;
}

async function truncateRegularFile(path: string, capBytes: number): Promise<boolean> {
  let fh;
  try {
    fh = await open(path, constants.O_WRONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch {
    return false; // absent, a symlink, a FIFO: nothing of ours to cut
  }
  try {
    const st = await fh.stat();
    // A second name may be a file outside the sandbox: never cut what is not only the task's.
    if (!st.isFile() || st.nlink > 1 || st.size <= capBytes) return false;
    await fh.truncate(capBytes);
    return true;
  } catch {
    return false;
  } finally {
    await fh.close().catch(() => undefined);
  }
}
