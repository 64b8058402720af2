// cgroup isolation of process tasks: the pure pieces (mount parsing, shares and weights,
// counters) on recorded text, detection and limits on a fake hierarchy, and — where this
// host lets the agent use cgroups (root, writable controllers; always so in CI) — real
// tasks: one that allocates past its memory limit ends TASK_FAILED with the memory
// reason, one within its limit finishes, and their cgroups are gone afterwards.

import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TaskInfo } from '../../shared/agent-protocol.ts';
import { ProcessExecutor, type TaskStatusChange } from '../../agent/executors/process/executor.ts';
import {
  Cgroups,
  agentCgroupName,
  cfsQuotaUs,
  cpuShares,
  cpuWeight,
  parseCgroupMounts,
  parseKeyValues,
  procsFiles,
  readUsage,
  usageFromV1,
  usageFromV2,
} from '../../agent/isolation/cgroups.ts';

// This development host: cgroup v1 controllers each on their own mount, an empty unified hierarchy.
const HYBRID = `31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
33 31 0:30 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids
40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw`;
// A Debian 11 host with systemd: cpu and cpuacct share a hierarchy.
const V1_COMOUNTED = `25 24 0:22 / /sys/fs/cgroup/cpu,cpuacct rw,nosuid,nodev,noexec,relatime shared:9 - cgroup cgroup rw,cpu,cpuacct
26 24 0:23 / /sys/fs/cgroup/memory rw,nosuid,nodev,noexec,relatime shared:10 - cgroup cgroup rw,memory`;
// A current distribution: the unified hierarchy only.
const V2 = `30 23 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw,nsdelegate,memory_recursiveprot`;

describe('cgroup pieces', () => {
  it('finds the hierarchies in mountinfo', () => {
    const h = parseCgroupMounts(HYBRID);
    expect(h.v1.get('memory')).toBe('/sys/fs/cgroup/memory');
    expect(h.v1.get('cpu')).toBe('/sys/fs/cgroup/cpu');
    expect(h.v1.get('cpuacct')).toBe('/sys/fs/cgroup/cpuacct');
    expect(h.v2).toEqual(['/sys/fs/cgroup/unified']);
    const c = parseCgroupMounts(V1_COMOUNTED);
    expect(c.v1.get('cpu')).toBe('/sys/fs/cgroup/cpu,cpuacct');
    expect(c.v1.get('cpuacct')).toBe('/sys/fs/cgroup/cpu,cpuacct');
    expect(parseCgroupMounts(V2)).toEqual({ v1: new Map(), v2: ['/sys/fs/cgroup'] });
  });

  it('turns cpus into shares, weights and quotas', () => {
    expect(cpuShares(1)).toBe(1024);
    expect(cpuShares(0.5)).toBe(512);
    expect(cpuShares(0.001)).toBe(2);
    expect(cpuWeight(2)).toBe(1);
    expect(cpuWeight(1024)).toBe(39);
    expect(cpuWeight(262_144)).toBe(10_000);
    expect(cfsQuotaUs(1.5)).toBe(150_000);
    expect(cfsQuotaUs(0.001)).toBe(1000);
  });

  it('reads the kernel counters', () => {
    expect(parseKeyValues('oom_kill_disable 0\nunder_oom 0\noom_kill 2\n').get('oom_kill')).toBe(2);
    expect(usageFromV1(2_500_000_000, 70_000_000, 'cache 100\nrss 5\ntotal_cache 100\ntotal_rss 67108864\n', 67_108_864)).toEqual({ cpuSeconds: 2.5, memoryBytes: 70_000_000, rssBytes: 67_108_864, limitBytes: 67_108_864 });
    expect(usageFromV1(undefined, undefined, '', 9_223_372_036_854_771_712).limitBytes).toBeUndefined();
    expect(usageFromV2('usage_usec 1500000\nuser_usec 1000000\n', 4096, 'anon 2048\nfile 2048\n', 'max\n')).toEqual({ cpuSeconds: 1.5, memoryBytes: 4096, rssBytes: 2048, limitBytes: undefined });
  });

  it('detects v1 on a fake hierarchy and writes the limits there', () => {
    const root = mkdtempSync(join(tmpdir(), 'cairn-cg-'));
    try {
      for (const c of ['memory', 'cpu', 'cpuacct']) mkdirSync(join(root, c));
      const mountinfo = HYBRID.replaceAll('/sys/fs/cgroup', root);
      const found = Cgroups.detect({ root: 'cairn', workDir: '/var/lib/cairn', cpuQuota: true, mountinfo });
      expect(found.support).toEqual({ enabled: true, version: 1, paths: ['memory', 'cpu', 'cpuacct'].map((c) => join(root, c, 'cairn', agentCgroupName('/var/lib/cairn'))), pids: { limited: false, reason: 'turned off (--task-pids-max 0)' } });
      const ref = found.cgroups!.create('t1', { memMiB: 64, cpus: 0.5 });
      expect(ref).toEqual({ version: 1, memory: join(found.support.enabled ? found.support.paths[0] : '', 't1'), cpu: expect.stringContaining('/cpu/'), cpuacct: expect.stringContaining('/cpuacct/') });
      if (ref.version !== 1) throw new Error('v1 expected');
      expect(readFileSync(join(ref.memory, 'memory.limit_in_bytes'), 'utf8')).toBe(String(64 * 1024 * 1024));
      expect(readFileSync(join(ref.cpu, 'cpu.shares'), 'utf8')).toBe('512');
      expect(readFileSync(join(ref.cpu, 'cpu.cfs_quota_us'), 'utf8')).toBe('50000');
      expect(procsFiles(ref)).toEqual([ref.memory, ref.cpu, ref.cpuacct!].map((d) => join(d, 'cgroup.procs')));
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });

  it('caps a task\'s processes in the v1 pids hierarchy, and says so where there is none', () => {
    const root = mkdtempSync(join(tmpdir(), 'cairn-cg-'));
    try {
      for (const c of ['memory', 'cpu', 'cpuacct', 'pids']) mkdirSync(join(root, c));
      const mountinfo = HYBRID.replaceAll('/sys/fs/cgroup', root);
      const found = Cgroups.detect({ root: 'cairn', workDir: '/w', cpuQuota: false, pidsMax: 64, mountinfo });
      if (!found.support.enabled) throw new Error('v1 expected');
      expect(found.support.pids).toEqual({ limited: true, max: 64 });
      const ref = found.cgroups!.create('t', { memMiB: 1, cpus: 1 });
      if (ref.version !== 1) throw new Error('v1 expected');
      expect(ref.pids).toBe(join(root, 'pids', 'cairn', agentCgroupName('/w'), 't'));
      expect(readFileSync(join(ref.pids!, 'pids.max'), 'utf8')).toBe('64');
      // The supervisor joins the pids cgroup too, so everything the task starts is counted.
      expect(procsFiles(ref)).toContain(join(ref.pids!, 'cgroup.procs'));

      const noPids = Cgroups.detect({ root: 'cairn', workDir: '/w2', cpuQuota: false, pidsMax: 64, mountinfo: mountinfo.split('\n').filter((l) => !l.includes(' rw,pids')).join('\n') });
      expect(noPids.cgroups).toBeDefined();
      expect(noPids.support).toMatchObject({ enabled: true, pids: { limited: false, reason: 'no cgroup v1 pids hierarchy is mounted' } });
      expect(noPids.cgroups!.create('t', { memMiB: 1, cpus: 1 })).not.toHaveProperty('pids');
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });

  it('writes pids.max on v2 where the controller is there', () => {
    const root = mkdtempSync(join(tmpdir(), 'cairn-cg2-'));
    try {
      writeFileSync(join(root, 'cgroup.controllers'), 'cpuset cpu io memory pids\n');
      const found = Cgroups.detect({ root: 'cairn', workDir: '/w', cpuQuota: false, pidsMax: 100, mountinfo: V2.replace('/sys/fs/cgroup', root) });
      expect(found.support).toMatchObject({ enabled: true, version: 2, pids: { limited: true, max: 100 } });
      expect(readFileSync(join(root, 'cgroup.subtree_control'), 'utf8')).toBe('+memory +cpu +pids');
      const ref = found.cgroups!.create('t', { memMiB: 1, cpus: 1 });
      if (ref.version !== 2) throw new Error('v2 expected');
      expect(readFileSync(join(ref.dir, 'pids.max'), 'utf8')).toBe('100');
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });

  it('detects v2 where the unified hierarchy has memory and cpu, and says why not otherwise', () => {
    const root = mkdtempSync(join(tmpdir(), 'cairn-cg2-'));
    try {
      writeFileSync(join(root, 'cgroup.controllers'), 'cpuset cpu io memory pids\n');
      const found = Cgroups.detect({ root: 'cairn', workDir: '/w', cpuQuota: false, mountinfo: V2.replace('/sys/fs/cgroup', root) });
      expect(found.support.enabled).toBe(true);
      const dir = join(root, 'cairn', agentCgroupName('/w'));
      expect(readFileSync(join(root, 'cgroup.subtree_control'), 'utf8')).toBe('+memory +cpu');
      expect(readFileSync(join(dir, 'cgroup.subtree_control'), 'utf8')).toBe('+memory +cpu');
      const ref = found.cgroups!.create('t', { memMiB: 1, cpus: 1 });
      expect(ref).toEqual({ version: 2, dir: join(dir, 't') });
      expect(readFileSync(join(dir, 't', 'memory.max'), 'utf8')).toBe('1048576');
      expect(readFileSync(join(dir, 't', 'cpu.weight'), 'utf8')).toBe('39');

      writeFileSync(join(root, 'cgroup.controllers'), 'pids\n');
      const none = Cgroups.detect({ root: 'cairn', workDir: '/w', cpuQuota: false, mountinfo: V2.replace('/sys/fs/cgroup', root) });
      expect(none.cgroups).toBeUndefined();
      expect(none.support).toEqual({ enabled: false, reason: expect.stringMatching(/lacks the memory and cpu controllers.*no cgroup v1 memory hierarchy/) });
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});

// ---------------------------------------------------------------- real cgroups

function realCgroupsOrWhyNot(workDir: string): { cgroups?: Cgroups; why?: string } {
  if (process.getuid?.() !== 0) return { why: 'not running as root' };
  const found = Cgroups.detect({ root: 'cairn-test', workDir, cpuQuota: false });
  return found.cgroups ? { cgroups: found.cgroups } : { why: found.support.enabled ? 'unknown' : found.support.reason };
}

const probeDir = mkdtempSync(join(tmpdir(), 'cairn-cg-probe-'));
const probe = realCgroupsOrWhyNot(probeDir);
probe.cgroups?.removeAgentDirs();
rmSync(probeDir, { recursive: true, force: true });
if (!probe.cgroups) {
  if (process.env.CI) throw new Error(`cgroups are required in CI but cannot be used here: ${probe.why}`);
  console.log(`skipping real cgroup tests: ${probe.why}`);
}

describe.skipIf(!probe.cgroups)('process tasks in real cgroups', () => {
  let workDir: string;
  let cgroups: Cgroups;
  let updates: TaskStatusChange[];
  let executor: ProcessExecutor;

  const task = (id: string, script: string, resources: string): TaskInfo => ({
    taskId: id, frameworkId: 'fw', name: id, resources, command: { shell: true, value: script, arguments: [], environment: [] }, killGraceMs: 0, labels: [],
  });
  const last = (id: string) => updates.filter((u) => u.taskId === id).at(-1)!;

  beforeEach(() => {
    workDir = mkdtempSync(join(tmpdir(), 'cairn-cg-real-'));
    cgroups = realCgroupsOrWhyNot(workDir).cgroups!;
    updates = [];
    executor = new ProcessExecutor({ workDir, hostname: 'h', cgroups, onStatus: (u) => updates.push(u) });
  });

  afterEach(async () => {
    await executor.shutdown({ killTasks: true, timeoutMs: 2000 });
    cgroups.removeAgentDirs();
    rmSync(workDir, { recursive: true, force: true });
  });

  it('ends a task that allocates past its memory limit TASK_FAILED with the memory reason', async () => {
    // tail keeps a line-less input whole in memory: 300 MiB against a 64 MiB limit.
    executor.launch(task('hog', 'head -c 300M /dev/zero | tail', 'cpus:0.5;mem:64'));
    await executor.whenEnded('hog');
    const end = last('hog');
    expect(end).toMatchObject({ state: 'TASK_FAILED', reason: 'REASON_CONTAINER_LIMITATION_MEMORY' });
    expect(end.message).toMatch(/memory limit of 64 MiB/);
  });

  it('lets a task within its limit finish, accounts it, and removes its cgroup afterwards', async () => {
    executor.launch(task('fits', 'head -c 20M /dev/zero | tail > /dev/null; cat /proc/self/cgroup', 'cpus:0.5;mem:64'));
    await executor.whenEnded('fits');
    expect(last('fits')).toMatchObject({ state: 'TASK_FINISHED', exitCode: 0 });
    const sandbox = executor.snapshot('fits')!.sandbox;
    const ref = cgroups.refFor('fits');
    // The task ran inside its own cgroup.
    const inside = readFileSync(join(sandbox, 'stdout'), 'utf8');
    expect(inside).toMatch(new RegExp(`memory:.*/cairn-test/${agentCgroupName(workDir)}/fits`));
    await executor.shutdown({ killTasks: false });
    const dirs = ref.version === 1 ? [ref.memory, ref.cpu] : [ref.dir];
    for (const d of dirs) expect(existsSync(d)).toBe(false);
  });

  it('reads a running task\'s usage from its cgroup', async () => {
    executor.launch(task('busy', 'head -c 30M /dev/zero | tail & while :; do :; done', 'cpus:0.5;mem:128'));
    await new Promise((r) => setTimeout(r, 700));
    const ref = cgroups.refFor('busy');
    const u = readUsage(ref);
    expect(u.cpuSeconds).toBeGreaterThan(0.1);
    expect(u.memoryBytes).toBeGreaterThan(20 * 1024 * 1024);
    expect(u.limitBytes).toBe(128 * 1024 * 1024);
  });
});
