// Usage: the nvidia-smi usage parser on recorded outputs (none, one, eight GPUs, MIG, a
// GPU fallen off the bus, one needing a reset), GPUs taken out of service, the CPU rate
// and sums, and the sampler and HTTP routes against real tasks.

import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TaskInfo } from '../../shared/agent-protocol.ts';
import { ProcessExecutor } from '../../agent/executors/process/executor.ts';
import { parseGpuUsage, unhealthyGpus, type GpuUsageResult } from '../../agent/resources/gpu-usage.ts';
import { GpuPool } from '../../agent/resources/gpu-pool.ts';
import { UsageSampler } from '../../agent/usage/sampler.ts';
import { cpuRate, sumUsage } from '../../agent/usage/usage.ts';
import type { TaskUsage } from '../../shared/agent-usage.ts';
import { buildAgentHttp } from '../../agent/http.ts';

const uuid = (i: number) => `GPU-a${i}e4c1f2-33d5-4c6b-9e87-1f2a3b4c5d6${i}`;

const NONE = 'No devices were found\n';
const ONE = '0, GPU-5d1f8a43-9c1e-7b2a-3f44-0e6c2d9b8a11, 1843, 24576, 37\n';
const EIGHT = Array.from({ length: 8 }, (_, i) => `${i}, ${uuid(i)}, ${i === 3 ? 40211 : 4}, 81559, ${i === 3 ? 98 : 0}`).join('\n') + '\n';
// GPU 5 fell off the bus: nvidia-smi prints this line where its row would be, and exits 15.
const LOST = EIGHT.replace(`5, ${uuid(5)}, 4, 81559, 0`, 'Unable to determine the device handle for GPU0000:9A:00.0: GPU is lost.  Reboot the system to recover this GPU');
// The older wording, with a space and an 8-digit domain.
const LOST_OLD = ONE + 'Unable to determine the device handle for GPU 00000000:3B:00.0: Unknown Error\n';
// MIG mode on: the device has no utilisation figure.
const MIG = `0, GPU-0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0, 13, 40960, [N/A]\n1, GPU-1b1c2d3e-4f50-6172-8394-a5b6c7d8e9f1, 13, 40960, [N/A]\n`;
const RESET = `0, ${uuid(0)}, 4, 81559, 0\n1, ${uuid(1)}, [GPU requires reset], [GPU requires reset], [GPU requires reset]\n`;

describe('nvidia-smi usage', () => {
  it('reads none, one and eight GPUs', () => {
    expect(parseGpuUsage(NONE)).toEqual({ gpus: [], failed: [], lost: [], errors: [] });
    expect(parseGpuUsage(ONE).gpus).toEqual([{ index: 0, uuid: 'GPU-5d1f8a43-9c1e-7b2a-3f44-0e6c2d9b8a11', memoryUsedMiB: 1843, memoryTotalMiB: 24576, utilizationPercent: 37 }]);
    const eight = parseGpuUsage(EIGHT);
    expect(eight.gpus).toHaveLength(8);
    expect(eight.gpus[3]).toMatchObject({ memoryUsedMiB: 40211, utilizationPercent: 98 });
    expect(eight.errors).toEqual([]);
  });

  it('reads MIG devices with utilisation unknown', () => {
    const mig = parseGpuUsage(MIG);
    expect(mig.gpus.map((g) => g.utilizationPercent)).toEqual([null, null]);
    expect(mig.errors).toEqual([]);
  });

  it('takes a GPU that fell off the bus out of service, and one that needs a reset', () => {
    const known = Array.from({ length: 8 }, (_, i) => ({ index: i, uuid: uuid(i) }));
    const lost = parseGpuUsage(LOST);
    expect(lost.gpus.map((g) => g.index)).toEqual([0, 1, 2, 3, 4, 6, 7]);
    expect(lost.lost).toEqual([{ busId: '0000:9A:00.0', message: expect.stringContaining('GPU is lost') }]);
    const out = unhealthyGpus(known, lost);
    expect([...out.keys()]).toEqual([5]);
    expect(out.get(5)).toMatch(/GPU is lost/);
    expect(unhealthyGpus(known, parseGpuUsage(EIGHT)).size).toBe(0);

    expect(parseGpuUsage(LOST_OLD).lost).toEqual([{ busId: '00000000:3B:00.0', message: expect.stringContaining('Unknown Error') }]);

    const reset = parseGpuUsage(RESET);
    expect(reset.failed).toEqual([{ index: 1, uuid: uuid(1), message: 'GPU requires reset' }]);
    expect([...unhealthyGpus(known.slice(0, 2), reset)]).toEqual([[1, 'nvidia-smi: GPU requires reset']]);
    expect(parseGpuUsage('0, GPU-x, lots, 1, 2\n').errors).toHaveLength(1);
  });

  it('never hands out a GPU out of service again', () => {
    const pool = new GpuPool([0, 1, 2]);
    expect(pool.assign('a', 1)).toEqual([0]);
    expect(pool.markUnhealthy(0, 'lost')).toBe(true);
    expect(pool.markUnhealthy(2, 'lost')).toBe(true);
    expect(pool.markUnhealthy(2, 'lost')).toBe(false);
    expect(pool.freeCount()).toBe(1);
    pool.release('a'); // device 0 does not come back
    expect(pool.assign('b', 2)).toBeUndefined();
    expect(pool.assign('b', 1)).toEqual([1]);
    expect(pool.unhealthy()).toEqual([{ index: 0, reason: 'lost' }, { index: 2, reason: 'lost' }]);
  });
});

describe('usage arithmetic', () => {
  it('computes the CPU rate between samples', () => {
    expect(cpuRate(undefined, 5, 1000)).toBeNull();
    expect(cpuRate({ cpuSeconds: 1, timestampMs: 0 }, 2, 2000)).toBe(0.5);
    expect(cpuRate({ cpuSeconds: 3, timestampMs: 0 }, 2, 1000)).toBe(0); // /proc lost an ended child's time
  });

  it('sums tasks', () => {
    const u = (cpusUsed: number | null, gpuMem: number[]): TaskUsage => ({
      taskId: 't', frameworkId: 'f', timestampMs: 0, source: 'cgroup', cpuSeconds: 1, cpusUsed, cpusLimit: 0.5, memoryBytes: 100, rssBytes: 50, memoryLimitBytes: 1000,
      gpus: gpuMem.map((m, i) => ({ index: i, uuid: '', memoryUsedMiB: m, memoryTotalMiB: 80, utilizationPercent: 1 })),
    });
    expect(sumUsage([u(0.25, [10, 20]), u(null, [])])).toEqual({ tasks: 2, cpusUsed: 0.25, cpusLimit: 1, memoryBytes: 200, rssBytes: 100, memoryLimitBytes: 2000, gpus: 2, gpuMemoryUsedMiB: 30 });
  });
});

describe('usage sampler and routes', () => {
  let workDir: string;
  let executor: ProcessExecutor;
  let sampler: UsageSampler;
  let gpuOutput: string;

  const task = (id: string, script: string, resources: string): TaskInfo => ({
    taskId: id, frameworkId: 'fw', name: id, resources, command: { shell: true, value: script, arguments: [], environment: [] }, killGraceMs: 0, labels: [],
  });

  beforeEach(() => {
    workDir = mkdtempSync(join(tmpdir(), 'cairn-usage-'));
    executor = new ProcessExecutor({ workDir, hostname: 'h', gpuIndices: [0, 1, 2, 3, 4, 5, 6, 7], onStatus: () => {} });
    gpuOutput = EIGHT;
    sampler = new UsageSampler({
      executor,
      intervalMs: 60_000,
      agentId: () => 'agent-1',
      knownGpus: Array.from({ length: 8 }, (_, i) => ({ index: i, uuid: uuid(i) })),
      queryGpus: async (): Promise<GpuUsageResult> => parseGpuUsage(gpuOutput),
    });
  });

  afterEach(async () => {
    await sampler.stop();
    await executor.shutdown({ killTasks: true, timeoutMs: 2000 });
    rmSync(workDir, { recursive: true, force: true });
  });

  it('samples a busy task from /proc, with its GPUs, and serves it over HTTP', async () => {
    executor.launch(task('spin', 'while :; do :; done', 'cpus:1;mem:64;gpus:4'));
    executor.launch(task('idle', 'sleep 30', 'cpus:0.5;mem:32'));
    await new Promise((r) => setTimeout(r, 300));
    await sampler.sample();
    await new Promise((r) => setTimeout(r, 500));
    await sampler.sample();
    const spin = sampler.forTask('spin')!;
    expect(spin).toMatchObject({ source: 'proc', cpusLimit: 1, memoryLimitBytes: 64 * 1024 * 1024 });
    expect(spin.cpusUsed).toBeGreaterThan(0.2); // a shared machine may give it less than a core
    expect(spin.rssBytes).toBeGreaterThan(0);
    expect(spin.gpus.map((g) => g.index)).toEqual([0, 1, 2, 3]);
    expect(spin.gpus[3]).toMatchObject({ memoryUsedMiB: 40211, utilizationPercent: 98 });
    const all = sampler.current();
    expect(all.tasks.map((t) => t.taskId).sort()).toEqual(['idle', 'spin']);
    expect(all.total).toMatchObject({ tasks: 2, cpusLimit: 1.5, gpus: 4, gpuMemoryUsedMiB: 40211 + 12 });
    expect(all.gpus).toHaveLength(8);

    const app = buildAgentHttp({ executor, agentId: () => 'agent-1', usage: sampler });
    const one = await app.inject({ method: 'GET', url: '/api/v1/tasks/spin/usage' });
    expect(one.statusCode).toBe(200);
    expect(one.json()).toMatchObject({ taskId: 'spin', source: 'proc' });
    const every = await app.inject({ method: 'GET', url: '/api/v1/usage' });
    expect(every.json()).toMatchObject({ agentId: 'agent-1', total: { tasks: 2 } });
    const missing = await app.inject({ method: 'GET', url: '/api/v1/tasks/nope/usage' });
    expect(missing.statusCode).toBe(404);
    expect(missing.json()).toMatchObject({ code: 'CAIRN_UNKNOWN_TASK' });
    // A task launched since the last sample is sampled on demand.
    executor.launch(task('fresh', 'sleep 30', 'cpus:0.1;mem:16'));
    await new Promise((r) => setTimeout(r, 50));
    expect((await app.inject({ method: 'GET', url: '/api/v1/tasks/fresh/usage' })).json()).toMatchObject({ taskId: 'fresh', cpusUsed: null });
    await app.close();
  });

  it('takes a lost GPU out of service at the next sample and says so', async () => {
    gpuOutput = LOST;
    await sampler.sample();
    expect(sampler.current().unhealthyGpus).toEqual([{ index: 5, reason: expect.stringMatching(/GPU is lost/) }]);
    expect(executor.gpus.freeCount()).toBe(7);
    executor.launch(task('big', 'sleep 5', 'gpus:7'));
    expect(executor.snapshot('big')!.gpuIndices).toEqual([0, 1, 2, 3, 4, 6, 7]);
  });
});
