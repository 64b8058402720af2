// A task's `disk` is enforced, against a real master and agent (separate processes, real
// tasks): a `disk:1` task writing 200 MB into its sandbox is killed and ends TASK_FAILED,
// REASON_CONTAINER_LIMITATION_DISK, naming its limit; a slower writer is stopped well short
// of its 200 MB; what either wrote is gone from the work dir once it has ended (its logs are
// kept); a task within its limit runs to its end, and the usage endpoint shows its disk.
// With Docker, the same for a container writing into its sandbox, and for one writing into
// its own filesystem layer.

import { afterEach, describe, expect, it } from 'vitest';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { sandboxDir } from '../../agent/executors/process/sandbox.ts';
import { measureTree } from '../../agent/isolation/disk-usage.ts';
import { agentAuthHeaders } from '../harness/credentials.ts';
import { dockerUnavailable, ensureTestImage, TEST_IMAGE } from '../harness/docker.ts';
import { frameworkCluster, statusesOf, taskEnd, type FrameworkCluster } from '../harness/framework-cluster.ts';
import { Cleanup, waitFor } from '../harness/processes.ts';
import { RawScheduler, taskInfo } from '../harness/raw-scheduler.ts';

const MIB = 1024 * 1024;
const INTERVAL = '200ms';

const noDocker = await dockerUnavailable();
if (noDocker && process.env.CI) throw new Error(`CI must run the container disk tests: ${noDocker}`);
if (noDocker) console.warn(`skipping the container disk tests: ${noDocker}`);

const cleanup = new Cleanup();
const schedulers: RawScheduler[] = [];
afterEach(async () => {
  for (const s of schedulers.splice(0)) s.close();
  await cleanup.run();
});

async function cluster(user: string, agentFlags: string[] = []): Promise<FrameworkCluster> {
  const c = await frameworkCluster(cleanup, { user, name: 'disk', agentResources: 'cpus:2;mem:1024;disk:4096', agentFlags: ['--disk-watch-interval', INTERVAL, ...agentFlags] });
  schedulers.push(c.s);
  return c;
}

/** A shell task of 0.1 cpus, 32 MiB and `diskMb` of disk. */
function diskTask(c: FrameworkCluster, id: string, diskMb: number, cmd: string, extra: Record<string, unknown> = {}) {
  const info = taskInfo(id, c.agentId, { cpus: 0.1, mem: 32 }, cmd, extra);
  info.resources.push({ name: 'disk', type: 'SCALAR', scalar: { value: diskMb }, role: '*' });
  return info;
}

async function launch(c: FrameworkCluster, infos: unknown[]): Promise<void> {
  const r = await c.s.call({ type: 'ACCEPT', accept: { offer_ids: [c.offer.id], operations: [{ type: 'LAUNCH', launch: { task_infos: infos } }] } });
  expect(r.status).toBe(202);
}

/** What a sandbox holds once the shrink after a disk kill has run (it follows the end). */
async function shrunk(workDir: string, taskId: string): Promise<number> {
  const dir = sandboxDir(workDir, taskId);
  await waitFor(`${taskId}'s sandbox shrunk`, () => !existsSync(join(dir, 'big')), 15_000);
  return (await measureTree(dir, { budgetMs: 10_000 })).bytes;
}

function expectDiskLimitation(end: any, limit: string): void {
  expect(end.state).toBe('TASK_FAILED');
  expect(end.reason).toBe('REASON_CONTAINER_LIMITATION_DISK');
  expect(end.message).toContain(`disk limit of ${limit} exceeded`);
}

describe('disk limits of process tasks (real processes)', () => {
  it('kills a disk:1 task writing 200 MB, stops a slower writer well short, leaves a task within its limit be', { timeout: 180_000 }, async () => {
    const c = await cluster('');
    await launch(c, [
      // All at once, as fast as the disk takes it; then the task waits on.
      diskTask(c, 'fast-hog', 1, 'dd if=/dev/zero of=big bs=1M count=200 2>/dev/null; echo wrote; sleep 600'),
      // A megabyte at a time, each counted on stdout: how far it got is on record.
      diskTask(c, 'slow-hog', 1, 'i=0; while [ $i -lt 200 ]; do head -c 1048576 /dev/zero >> big; i=$((i+1)); echo $i; sleep 0.02; done; echo done; sleep 600'),
      diskTask(c, 'modest', 16, 'head -c 4194304 /dev/zero > data && sleep 3 && test -s data'),
      diskTask(c, 'measured', 16, 'head -c 3145728 /dev/zero > data && sleep 600'),
    ]);

    const fast = await taskEnd(c.s, 'fast-hog');
    expectDiskLimitation(fast, '1 MiB');
    expect(fast.message).toMatch(/the task used (at least )?[\d.]+ [MG]iB in its sandbox/);
    const slow = await taskEnd(c.s, 'slow-hog');
    expectDiskLimitation(slow, '1 MiB');
    // Stopped well short of 200 MB: at 200 ms between measurements, a few tens at most.
    const counted = readFileSync(join(sandboxDir(c.workDir, 'slow-hog'), 'stdout'), 'utf8').trim().split('\n');
    expect(counted).not.toContain('done');
    // Its first megabyte alone passes the limit: a kill before its first echo leaves stdout empty.
    const written = counted.at(-1) === '' ? 0 : Number(counted.at(-1));
    expect(Number.isInteger(written), counted.join(',')).toBe(true);
    expect(written).toBeLessThan(100);

    // What they wrote is gone; their logs are kept.
    expect(await shrunk(c.workDir, 'fast-hog')).toBeLessThan(MIB);
    expect(await shrunk(c.workDir, 'slow-hog')).toBeLessThan(MIB);
    // dd may be caught before it is done (then nothing is on stdout): the log is there either way.
    expect(readFileSync(join(sandboxDir(c.workDir, 'fast-hog'), 'stdout'), 'utf8')).toMatch(/^(wrote\n)?$/);
    console.log(`fast writer: ${fast.message}; slow writer: ${written} MB written, ${slow.message}`);

    // Within its limit: left alone to its end, measured on the way.
    expect((await taskEnd(c.s, 'modest')).state).toBe('TASK_FINISHED');
    const usage = await waitFor('the disk of the measured task in the usage endpoint', async () => {
      const r = await fetch(`${c.agent.url}/api/v1/tasks/measured/usage`, { headers: agentAuthHeaders() });
      if (r.status !== 200) return undefined;
      const u = await r.json();
      return u.diskBytes >= 3 * MIB ? u : undefined;
    }, 20_000);
    expect(usage).toMatchObject({ diskLimitBytes: 16 * MIB, diskComplete: true });
    expect(statusesOf(c.s, 'measured').map((u) => u.state)).not.toContain('TASK_FAILED');
    const health = await (await fetch(`${c.agent.url}/health`)).json();
    expect(health.isolation.disk).toEqual({ enforced: true, intervalMs: 200, defaultTaskDiskMb: 0 });
  });

  it('with --no-enforce-disk, measures and leaves the task be', { timeout: 120_000 }, async () => {
    const c = await cluster('', ['--no-enforce-disk']);
    await launch(c, [diskTask(c, 'unlimited', 1, 'head -c 3145728 /dev/zero > big && sleep 2')]);
    expect((await taskEnd(c.s, 'unlimited')).state).toBe('TASK_FINISHED');
  });
});

describe.skipIf(noDocker !== undefined)('disk limits of container tasks (real Docker)', () => {
  it('kills a container writing past its disk into its sandbox, and one writing into its own layer', { timeout: 180_000 }, async () => {
    await ensureTestImage();
    // Root inside the container (no capabilities) may write the image's /tmp: its own layer.
    const c = await cluster('root', ['--allow-root-tasks']);
    const container = { type: 'DOCKER', docker: { image: TEST_IMAGE, network: 'HOST', pull_policy: 'never' } };
    await launch(c, [
      diskTask(c, 'c-sandbox', 1, 'dd if=/dev/zero of=$MESOS_SANDBOX/big bs=1M count=200; sleep 600', { container }),
      diskTask(c, 'c-layer', 4, 'dd if=/dev/zero of=/tmp/big bs=1M count=20; sleep 600', { container }),
    ]);
    const inSandbox = await taskEnd(c.s, 'c-sandbox');
    expectDiskLimitation(inSandbox, '1 MiB');
    expect(await shrunk(c.workDir, 'c-sandbox')).toBeLessThan(MIB);
    const inLayer = await taskEnd(c.s, 'c-layer');
    expectDiskLimitation(inLayer, '4 MiB');
    // Measured while dd may still be writing: anything past the 4 MiB limit, up to its 20 MiB.
    const layerMiB = Number(/container layer (\d+(?:\.\d+)?) MiB/.exec(inLayer.message)?.[1]);
    expect(layerMiB, inLayer.message).toBeGreaterThan(4);
    expect(layerMiB, inLayer.message).toBeLessThanOrEqual(21);
  });
});
