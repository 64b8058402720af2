// Draining an agent before maintenance: from the drain on it accepts no new task
// (launches are answered TASK_DROPPED), lets running tasks finish, and kills those still
// running at the deadline. The drain is checkpointed (`<workDir>/meta/drain.json`), so an
// agent restarted while draining goes on draining with the same deadline.

import { open, readFile, rename, unlink } from 'node:fs/promises';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { CairnError } from '../shared/errors.ts';

export interface DrainState {
  sinceMs: number;
  /** When tasks still running are killed; null: they may run until they finish. */
  deadlineAtMs: number | null;
}

/** The longest deadline accepted: a drain is for maintenance, not a way of life. */
export const MAX_DRAIN_DEADLINE_MS = 7 * 24 * 3600 * 1000;

/**
 * Checks a drain request body `{ deadlineMs? }` (milliseconds from now; absent: no
 * deadline) and returns the absolute deadline. Throws CAIRN_BAD_REQUEST naming the field.
 */
export function parseDrainRequest(body: unknown, nowMs: number): { deadlineAtMs: number | null } {
  if (body === undefined || body === null || body === '') return { deadlineAtMs: null };
  if (typeof body !== 'object' || Array.isArray(body)) throw new CairnError('CAIRN_BAD_REQUEST', 'the body must be a JSON object like {"deadlineMs": 60000}', 'body');
  const extra = Object.keys(body).filter((k) => k !== 'deadlineMs');
  if (extra.length > 0) throw new CairnError('CAIRN_BAD_REQUEST', `unknown field '${extra[0]}'`, extra[0]);
  const d = (body as { deadlineMs?: unknown }).deadlineMs;
  if (d === undefined || d === null) return { deadlineAtMs: null };
  if (typeof d !== 'number' || !Number.isInteger(d) || d < 0 || d > MAX_DRAIN_DEADLINE_MS) {
    throw new CairnError('CAIRN_BAD_REQUEST', `must be a whole number of milliseconds from 0 to ${MAX_DRAIN_DEADLINE_MS}, got ${JSON.stringify(d)}`, 'deadlineMs');
  }
  return { deadlineAtMs: nowMs + d };
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
