// Where the agent keeps the health checks of running tasks, so that an agent restarted with
// its tasks recovered resumes their checks: `<workDir>/meta/health/<task>.json`, one file per
// task, written whole (temporary file, then rename) when the task starts running, removed
// when it ends. A file that cannot be read is reported and skipped, never fatal.

import { mkdir, readdir, readFile, rename, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { sanitizeTaskId } from '../executors/process/sandbox.ts';
import type { HealthTimings } from './health-state.ts';
import type { HealthTarget } from './target.ts';

export interface StoredHealthCheck {
  taskId: string;
  frameworkId: string;
  target: HealthTarget;
  timings: HealthTimings;
  /** When the task started running (the agent's clock): the grace period counts from it. */
  startedAtMs: number;
}

export function healthDir(workDir: string): string {
  return join(workDir, 'meta', 'health');
}

export class HealthStore {
  constructor(private readonly dir: string) {}

  private file(taskId: string): string {
    return join(this.dir, `${sanitizeTaskId(taskId)}.json`);
  }

  async write(entry: StoredHealthCheck): Promise<void> {
    await mkdir(this.dir, { recursive: true });
    const path = this.file(entry.taskId);
    await writeFile(`${path}.tmp`, `${JSON.stringify(entry)}\n`);
    await rename(`${path}.tmp`, path);
  }

  async remove(taskId: string): Promise<void> {
    try {
      await unlink(this.file(taskId));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
  }

  async loadAll(): Promise<{ entries: StoredHealthCheck[]; problems: string[] }> {
    let names: string[];
    try {
      names = (await readdir(this.dir)).filter((n) => n.endsWith('.json'));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { entries: [], problems: [] };
      return { entries: [], problems: [`cannot list ${this.dir}: ${(err as Error).message}`] };
    }
    const entries: StoredHealthCheck[] = [];
    const problems: string[] = [];
    for (const name of names) {
      try {
        const v = JSON.parse(await readFile(join(this.dir, name), 'utf8')) as StoredHealthCheck;
        if (typeof v?.taskId !== 'string' || typeof v.target?.kind !== 'string' || typeof v.timings?.intervalMs !== 'number' || typeof v.startedAtMs !== 'number') {
          throw new Error('not a health check record');
        }
        entries.push(v);
      } catch (err) {
        problems.push(`health check file ${name} skipped: ${(err as Error).message}`);
      }
    }
    return { entries, problems };
  }
}
