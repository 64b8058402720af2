// The agent's usage history (agent/usage/history.ts): a bounded ring, oldest first, and a
// task's own points drawn from the agent's samples.

import { describe, expect, it } from 'vitest';
import { UsageRing } from '../../agent/usage/history.ts';
import type { AgentUsage, TaskUsage } from '../../shared/agent-usage.ts';

function task(taskId: string, cpusUsed: number, gpuIndex?: number): TaskUsage {
  return {
    taskId, frameworkId: 'fw', timestampMs: 0, source: 'proc', cpuSeconds: 0, cpusUsed, cpusLimit: 1,
    memoryBytes: 1000 * cpusUsed, rssBytes: 0, memoryLimitBytes: 4000,
    gpus: gpuIndex === undefined ? [] : [{ index: gpuIndex, uuid: 'GPU-x', memoryUsedMiB: 10, memoryTotalMiB: 100, utilizationPercent: 50 }],
  };
}

function sample(timestampMs: number, tasks: TaskUsage[]): AgentUsage {
  return {
    agentId: 'a', timestampMs, intervalMs: 5000, tasks,
    total: { tasks: tasks.length, cpusUsed: tasks.reduce((s, t) => s + (t.cpusUsed ?? 0), 0), cpusLimit: tasks.length, memoryBytes: 0, rssBytes: 0, memoryLimitBytes: 0, gpus: 0, gpuMemoryUsedMiB: 0 },
    gpus: [{ index: 0, uuid: 'GPU-x', memoryUsedMiB: 10, memoryTotalMiB: 100, utilizationPercent: 50 }], unhealthyGpus: [],
  };
}

describe('the usage history', () => {
  it('keeps the last `capacity` samples, oldest first', () => {
    const ring = new UsageRing(3);
    expect(ring.points()).toEqual([]);
    for (let i = 1; i <= 5; i++) ring.add(sample(i * 1000, [task('t1', i)]));
    expect(ring.points().map((p) => p.timestampMs)).toEqual([3000, 4000, 5000]);
    expect(ring.agent(5000).points.map((p) => p.cpusUsed)).toEqual([3, 4, 5]);
    expect(() => new UsageRing(0)).toThrow(/capacity/);
  });

  it("gives a task's points, its GPUs' figures with them, and nothing for a task not in the window", () => {
    const ring = new UsageRing(10);
    ring.add(sample(1000, [task('t1', 0.5)]));
    ring.add(sample(2000, [task('t1', 0.7), task('t2', 0.2, 0)]));
    ring.add(sample(3000, [task('t2', 0.3, 0)]));
    expect(ring.task('t1', 5000)?.points.map((p) => [p.timestampMs, p.cpusUsed])).toEqual([[1000, 0.5], [2000, 0.7]]);
    const t2 = ring.task('t2', 5000)!;
    expect(t2.points.map((p) => p.timestampMs)).toEqual([2000, 3000]);
    expect(t2.points[0]!.gpus).toEqual([{ index: 0, utilizationPercent: 50, memoryUsedMiB: 10 }]);
    expect(ring.task('t3', 5000)).toBeUndefined();
  });
});
