// Sandbox garbage collection: finished tasks' sandboxes go after the configured age, and
// sooner (oldest first) while the disk is above the threshold; the sandboxes of tasks the
// agent still holds are never touched.

import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { existsSync, mkdtempSync, rmSync, utimesSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TaskInfo } from '../../shared/agent-protocol.ts';
import { ProcessExecutor } from '../../agent/executors/process/executor.ts';
import { sandboxDir } from '../../agent/executors/process/sandbox.ts';
import { parseDurationMs } from '../../shared/duration.ts';
import { SandboxGc, diskUsedPercent, planByAge, planByPressure, type SandboxEntry } from '../../agent/sandbox-gc.ts';

let workDir: string;
let executor: ProcessExecutor;

const task = (id: string, script: string): TaskInfo => ({
  taskId: id, frameworkId: 'fw', name: id, resources: 'cpus:0.1;mem:16', command: { shell: true, value: script, arguments: [], environment: [] }, killGraceMs: 0, labels: [],
});

/** Runs a task to its end and releases it (its end acknowledged), leaving its sandbox. */
async function finished(id: string, ageMs: number): Promise<string> {
  executor.launch(task(id, `echo ${id}`));
  await executor.whenEnded(id);
  executor.release(id);
  const dir = sandboxDir(workDir, id);
  const t = (Date.now() - ageMs) / 1000;
  for (const p of [dir, join(dir, 'stdout'), join(dir, 'stderr'), join(dir, 'exit_status')]) if (existsSync(p)) utimesSync(p, t, t);
  return dir;
}

beforeEach(() => {
  workDir = mkdtempSync(join(tmpdir(), 'cairn-gc-'));
  executor = new ProcessExecutor({ workDir, hostname: 'h', onStatus: () => {} });
});

afterEach(async () => {
  await executor.shutdown({ killTasks: true, timeoutMs: 1000 });
  rmSync(workDir, { recursive: true, force: true });
});

const inUse = () => new Set(executor.snapshots().map((s) => s.sandbox));

describe('sandbox gc', () => {
  it('plans by age and by pressure, oldest first', () => {
    const e = (name: string, lastWriteMs: number): SandboxEntry => ({ name, path: `/s/${name}`, lastWriteMs });
    const entries = [e('new', 900), e('old', 100), e('older', 50)];
    expect(planByAge(entries, 1000, 500).map((x) => x.name)).toEqual(['older', 'old']);
    expect(planByPressure(entries).map((x) => x.name)).toEqual(['older', 'old', 'new']);
  });

  it('removes finished sandboxes older than the age, keeps younger ones and running tasks', async () => {
    const old = await finished('old', 5000);
    const young = await finished('young', 0);
    executor.launch(task('running', 'sleep 30'));
    const running = sandboxDir(workDir, 'running');
    // A running task's sandbox is in use whatever its age.
    const t = (Date.now() - 60_000) / 1000;
    utimesSync(running, t, t);
    const gc = new SandboxGc({ workDir, ageMs: 1000, diskPercent: 100, intervalMs: 60_000, inUse, diskUsage: async () => 10 });
    const run = await gc.runOnce();
    expect(run.removed).toEqual(['old']);
    expect(existsSync(old)).toBe(false);
    expect(existsSync(young)).toBe(true);
    expect(existsSync(running)).toBe(true);
  });

  it('removes finished sandboxes sooner, oldest first, while the disk is above the threshold', async () => {
    const a = await finished('a', 3000);
    const b = await finished('b', 2000);
    const c = await finished('c', 1000);
    // 95 % full; each removal frees 4 %.
    let used = 95;
    const gc = new SandboxGc({
      workDir, ageMs: 7 * 24 * 3600 * 1000, diskPercent: 90, intervalMs: 60_000, inUse,
      diskUsage: async () => used,
    });
    const realRemove = (gc as unknown as { remove: (e: SandboxEntry) => Promise<boolean> }).remove.bind(gc);
    (gc as unknown as { remove: (e: SandboxEntry) => Promise<boolean> }).remove = async (e) => {
      const ok = await realRemove(e);
      if (ok) used -= 4;
      return ok;
    };
    const run = await gc.runOnce();
    expect(run).toMatchObject({ removed: ['a', 'b'], forPressure: ['a', 'b'], diskPercentBefore: 95, diskPercentAfter: 87 });
    expect([existsSync(a), existsSync(b), existsSync(c)]).toEqual([false, false, true]);
  });

  it('reads --sandbox-gc-age durations', () => {
    expect(parseDurationMs('7d')).toBe(7 * 86_400_000);
    expect(parseDurationMs('1.5h')).toBe(5_400_000);
    expect(parseDurationMs('500ms')).toBe(500);
    expect(parseDurationMs('2w')).toBe(14 * 86_400_000);
    // A bare number has no unit: not a duration.
    for (const bad of ['', '0', '250', '7 days', '-1s', 'd']) expect(parseDurationMs(bad)).toBeUndefined();
  });

  it('measures the disk as df does', async () => {
    const p = await diskUsedPercent(workDir);
    expect(p).toBeGreaterThan(0);
    expect(p).toBeLessThanOrEqual(100);
  });
});
