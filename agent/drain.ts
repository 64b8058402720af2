// Draining an agent before maintenance, as the master orders it: from the drain on it
// accepts no new task (launches are answered TASK_DROPPED), lets running tasks finish, and
// kills those still running at the deadline. The drain is checkpointed
// (`<workDir>/meta/drain.json`), so an agent restarted while draining goes on draining
// with the same deadline until the master says otherwise.

import { open, readFile, rename, unlink } from 'node:fs/promises';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';

export interface DrainState {
  sinceMs: number;
  /** When tasks still running are killed; null: they may run until they finish. */
  deadlineAtMs: number | null;
}

export function drainPath(workDir: string): string {
  return join(workDir, 'meta', 'drain.json');
}

export async function readDrainState(workDir: string): Promise<DrainState | undefined> {
  try {
    const v = JSON.parse(await readFile(drainPath(workDir), 'utf8')) as DrainState;
    if (typeof v.sinceMs !== 'number' || (v.deadlineAtMs !== null && typeof v.deadlineAtMs !== 'number')) return undefined;
    return v;
  } catch {
    return undefined;
  }
}

/** Writes (or with undefined, removes) the drain durably: temporary file, fsync, rename, directory fsync. */
export async function writeDrainState(workDir: string, state: DrainState | undefined): Promise<void> {
  const path = drainPath(workDir);
  const dir = join(workDir, 'meta');
  await mkdir(dir, { recursive: true });
  if (state === undefined) {
    await unlink(path).catch((err: NodeJS.ErrnoException) => {
      if (err.code !== 'ENOENT') throw err;
    });
  } else {
    const tmp = `${path}.tmp`;
    const fh = await open(tmp, 'w', 0o644);
    try {
      await fh.writeFile(`${JSON.stringify(state)}\n`);
      await fh.sync();
    } finally {
      await fh.close();
    }
    await rename(tmp, path);
  }
  const d = await open(dir, 'r');
  try {
    await d.sync();
  } finally {
    await d.close();
  }
}
