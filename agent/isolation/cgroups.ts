// Control groups for process tasks: each task in its own cgroup with a hard memory limit
// (the task's `mem`) and a CPU weight (and optionally a quota) from its `cpus`; the kernel's
// OOM killer acting at the limit is read back so the end can be reported as a memory
// limitation. cgroup v2 is used where the host has it with the memory and cpu controllers
// (unified hierarchy); otherwise v1's memory and cpu (and cpuacct, for usage) hierarchies.
// Where the host has the pids controller, each task's process count (threads included) is
// capped too (`--task-pids-max`), so a fork bomb stops at its own limit; where it has none,
// tasks run without that cap and the agent says so once, at start, and in /health.
//
// Layout: `<mount>/<root>/<agent>/<task>`, where root is `--cgroups-root` (default
// `cairn`) and agent a short stable name derived from the agent's work directory, so two
// agents on one host never share a task's cgroup and a restarted agent finds its own.
//
// The supervisor writes its pid into the task's `cgroup.procs` before the task starts
// (supervisor.ts), so nothing of the task ever runs outside its limits. Creation is
// synchronous: it sits on the launch path and costs a handful of small writes.
//
// Everything that decides (mount parsing, the shares/weight arithmetic, reading the
// kernel's counters) is a pure function below; the class is the thin shell.

import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';

export type CgroupRef =
  | { version: 1; memory: string; cpu: string; cpuacct?: string; pids?: string }
  | { version: 2; dir: string };

export interface CgroupLimits {
  memMiB: number;
  cpus: number;
}

/** Whether tasks' process counts are capped here, and at what (or why not). */
export type PidsSupport = { limited: true; max: number } | { limited: false; reason: string };

export interface CgroupUsage {
  /** CPU time used by the task since it started, all its processes included (ended ones too). */
  cpuSeconds: number;
  /** What the kernel charges to the cgroup (anonymous memory plus page cache). */
  memoryBytes: number;
  /** Anonymous (resident, not file-backed) memory. */
  rssBytes: number;
  /** The hard limit; undefined when unlimited. */
  limitBytes: number | undefined;
}

export type CgroupSupport =
  | { enabled: true; version: 1 | 2; paths: string[]; pids: PidsSupport }
  | { enabled: false; reason: string };

export interface CgroupMounts {
  /** v1 hierarchies by controller name (a hierarchy may carry several, e.g. cpu,cpuacct). */
  v1: Map<string, string>;
  /** v2 mount points. */
  v2: string[];
}

/** Reads cgroup mounts out of /proc/self/mountinfo (pure). */
export function parseCgroupMounts(mountinfo: string): CgroupMounts {
  const v1 = new Map<string, string>();
  const v2: string[] = [];
  for (const line of mountinfo.split('\n')) {
    const dash = line.indexOf(' - ');
    if (dash < 0) continue;
    const before = line.slice(0, dash).split(' ');
    const after = line.slice(dash + 3).split(' ');
    const mountPoint = unescapeMountPath(before[4] ?? '');
    const fsType = after[0];
    if (fsType === 'cgroup2') v2.push(mountPoint);
    else if (fsType === 'cgroup') {
      for (const opt of (after[2] ?? '').split(',')) {
        if (['memory', 'cpu', 'cpuacct', 'pids', 'cpuset', 'devices', 'freezer', 'blkio'].includes(opt) && !v1.has(opt)) v1.set(opt, mountPoint);
      }
    }
  }
  return { v1, v2 };
}

function unescapeMountPath(p: string): string {
  return p.replace(/\\([0-7]{3})/g, (_, oct: string) => String.fromCharCode(parseInt(oct, 8)));
}

/** cpu.shares for a task's cpus, as Mesos computes them (1024 per CPU, at least 2). */
export function cpuShares(cpus: number): number {
  return Math.max(2, Math.round(cpus * 1024));
}

/** v2's cpu.weight for the same shares (the conversion runc and Kubernetes use). */
export function cpuWeight(shares: number): number {
  return Math.max(1, Math.min(10_000, 1 + Math.floor(((shares - 2) * 9999) / 262_142)));
}

export const CFS_PERIOD_US = 100_000;
/** A quota below 1 ms per period makes the kernel refuse the value. */
export function cfsQuotaUs(cpus: number): number {
  return Math.max(1000, Math.round(cpus * CFS_PERIOD_US));
}

/** `key value` lines (memory.stat, cpu.stat, memory.events, memory.oom_control) into numbers. */
export function parseKeyValues(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    const [k, v] = line.trim().split(/\s+/);
    if (k && v !== undefined && /^\d+$/.test(v)) out.set(k, Number(v));
  }
  return out;
}

/** The stable per-agent directory name under the cgroups root. */
export function agentCgroupName(workDir: string): string {
  return `agent-${createHash('sha256').update(workDir).digest('hex').slice(0, 12)}`;
}

export interface CgroupsOptions {
  /** Directory under each hierarchy holding Cairn's cgroups (`--cgroups-root`). */
  root: string;
  /** The agent's work directory; names the agent's own subtree. */
  workDir: string;
  /** Also cap CPU time at `cpus` (CFS quota); otherwise cpus is a weight only. */
  cpuQuota: boolean;
  /** Processes and threads one task may have (pids.max); 0 or left out: no cap. */
  pidsMax?: number;
  /** Replaces /proc/self/mountinfo (tests). */
  mountinfo?: string;
}

function errText(err: unknown): string {
  const e = err as NodeJS.ErrnoException;
  // Node's fs messages already begin with the code ("ENOENT: no such file ...").
  if (!e.code || e.message.startsWith(`${e.code}:`)) return e.message ?? String(err);
  return `${e.code}: ${e.message}`;
}

function readText(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
}

function readNumber(path: string): number | undefined {
  const t = readText(path)?.trim();
  return t !== undefined && /^\d+$/.test(t) ? Number(t) : undefined;
}

/** Writes a control file; `optional` ones that the kernel lacks are skipped. */
function writeControl(dir: string, file: string, value: string, optional = false): void {
  const path = join(dir, file);
  if (optional && !existsSync(path)) return;
  try {
    writeFileSync(path, value);
  } catch (err) {
    if (!optional) throw new Error(`cannot write ${value} to ${path}: ${errText(err)}`);
  }
}

export class Cgroups {
  private constructor(
    readonly version: 1 | 2,
    /** v1: the agent's directory in each hierarchy (memory, cpu, cpuacct, pids); v2: one directory. */
    private readonly base: { memory: string; cpu: string; cpuacct?: string; pids?: string } | { dir: string },
    private readonly cpuQuota: boolean,
    /** Each task's pids.max; 0 when tasks are not capped (no controller, or turned off). */
    readonly pidsMax: number,
  ) {}

  /**
   * Finds usable cgroups and creates the agent's directories. Never throws: without
   * cgroups (not root, controllers missing or read-only) the reason comes back instead.
   */
  static detect(opts: CgroupsOptions): { cgroups: Cgroups; support: CgroupSupport } | { cgroups: undefined; support: CgroupSupport } {
    let mountinfo = opts.mountinfo;
    if (mountinfo === undefined) {
      try {
        mountinfo = readFileSync('/proc/self/mountinfo', 'utf8');
      } catch (err) {
        return { cgroups: undefined, support: { enabled: false, reason: `cannot read /proc/self/mountinfo: ${errText(err)}` } };
      }
    }
    const mounts = parseCgroupMounts(mountinfo);
    const sub = join(opts.root, agentCgroupName(opts.workDir));
    const reasons: string[] = [];
    const pidsWanted = opts.pidsMax ?? 0;

    for (const mount of mounts.v2) {
      const controllers = (readText(join(mount, 'cgroup.controllers')) ?? '').trim().split(/\s+/);
      if (!controllers.includes('memory') || !controllers.includes('cpu')) {
        reasons.push(`cgroup2 at ${mount} lacks the memory and cpu controllers`);
        continue;
      }
      const hasPids = controllers.includes('pids');
      const wanted = hasPids && pidsWanted > 0 ? '+memory +cpu +pids' : '+memory +cpu';
      try {
        // Each level must hand the controllers down to its children.
        let dir = mount;
        for (const part of sub.split('/')) {
          writeControl(dir, 'cgroup.subtree_control', wanted);
          dir = join(dir, part);
          mkdirSync(dir, { recursive: true });
        }
        writeControl(dir, 'cgroup.subtree_control', wanted);
        const pids = pidsSupport(pidsWanted, hasPids ? undefined : `cgroup2 at ${mount} has no pids controller`);
        return { cgroups: new Cgroups(2, { dir }, opts.cpuQuota, pids.limited ? pids.max : 0), support: { enabled: true, version: 2, paths: [dir], pids } };
      } catch (err) {
        reasons.push(`cgroup2 at ${mount}: ${errText(err)}`);
      }
    }

    const memory = mounts.v1.get('memory');
    const cpu = mounts.v1.get('cpu');
    if (memory === undefined || cpu === undefined) {
      reasons.push(`no cgroup v1 ${memory === undefined ? 'memory' : 'cpu'} hierarchy is mounted`);
      return { cgroups: undefined, support: { enabled: false, reason: reasons.join('; ') } };
    }
    const cpuacct = mounts.v1.get('cpuacct');
    const pidsMount = pidsWanted > 0 ? mounts.v1.get('pids') : undefined;
    const base = {
      memory: join(memory, sub),
      cpu: join(cpu, sub),
      ...(cpuacct !== undefined && cpuacct !== cpu ? { cpuacct: join(cpuacct, sub) } : {}),
      ...(pidsMount !== undefined ? { pids: join(pidsMount, sub) } : {}),
    };
    try {
      for (const dir of Object.values(base)) {
        mkdirSync(dir, { recursive: true });
        // Creating a directory is not enough proof: a read-only control file would fail each launch.
        writeFileSync(join(dir, 'notify_on_release'), '0');
      }
    } catch (err) {
      reasons.push(`cgroup v1: ${errText(err)}`);
      return { cgroups: undefined, support: { enabled: false, reason: reasons.join('; ') } };
    }
    const pids = pidsSupport(pidsWanted, mounts.v1.has('pids') ? undefined : 'no cgroup v1 pids hierarchy is mounted');
    return { cgroups: new Cgroups(1, base, opts.cpuQuota, pids.limited ? pids.max : 0), support: { enabled: true, version: 1, paths: Object.values(base), pids } };
  }

  /**
   * Removes the agent's own (empty) directories when it stops with no task left, and the
   * root above them when no other agent uses it.
   */
  removeAgentDirs(): void {
    const dirs = 'dir' in this.base ? [this.base.dir] : Object.values(this.base);
    for (const dir of dirs) {
      try {
        rmdirSync(dir);
        rmdirSync(dirname(dir));
      } catch {
        // tasks left running, or another agent's directories: kept
      }
    }
  }

  /** Where a task's cgroup lives (the same for the same task id, across restarts). */
  refFor(name: string): CgroupRef {
    if ('dir' in this.base) return { version: 2, dir: join(this.base.dir, name) };
    const ref: CgroupRef = { version: 1, memory: join(this.base.memory, name), cpu: join(this.base.cpu, name) };
    if (this.base.cpuacct) ref.cpuacct = join(this.base.cpuacct, name);
    if (this.base.pids) ref.pids = join(this.base.pids, name);
    return ref;
  }

  /**
   * Creates a task's cgroup with its limits; throws an Error saying what failed. A
   * cgroup left by an earlier run of the same task id is replaced, so its counters (an
   * old OOM kill) cannot speak for this run.
   */
  create(name: string, limits: CgroupLimits): CgroupRef {
    const ref = this.refFor(name);
    for (const dir of dirsOf(ref)) {
      try {
        mkdirSync(dir);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
        // Left by an earlier run: replace it.
        try {
          rmdirSync(dir);
        } catch (e) {
          throw new Error(`a cgroup of an earlier run of this task is still in use (${dir}: ${(e as NodeJS.ErrnoException).code})`);
        }
        mkdirSync(dir);
      }
    }
    const memBytes = Math.floor(limits.memMiB * 1024 * 1024);
    const shares = cpuShares(limits.cpus);
    if (ref.version === 2) {
      if (memBytes > 0) {
        writeControl(ref.dir, 'memory.max', String(memBytes));
        // Swap would let a task run past its limit, slowly; the limit is meant to be hard.
        writeControl(ref.dir, 'memory.swap.max', '0', true);
      }
      if (limits.cpus > 0) {
        writeControl(ref.dir, 'cpu.weight', String(cpuWeight(shares)));
        if (this.cpuQuota) writeControl(ref.dir, 'cpu.max', `${cfsQuotaUs(limits.cpus)} ${CFS_PERIOD_US}`);
      }
      if (this.pidsMax > 0) writeControl(ref.dir, 'pids.max', String(this.pidsMax));
      return ref;
    }
    if (memBytes > 0) {
      writeControl(ref.memory, 'memory.limit_in_bytes', String(memBytes));
      writeControl(ref.memory, 'memory.memsw.limit_in_bytes', String(memBytes), true);
    }
    if (limits.cpus > 0) {
      writeControl(ref.cpu, 'cpu.shares', String(shares));
      if (this.cpuQuota) {
        writeControl(ref.cpu, 'cpu.cfs_period_us', String(CFS_PERIOD_US));
        writeControl(ref.cpu, 'cpu.cfs_quota_us', String(cfsQuotaUs(limits.cpus)));
      }
    }
    if (ref.pids !== undefined && this.pidsMax > 0) writeControl(ref.pids, 'pids.max', String(this.pidsMax));
    return ref;
  }
}

/** Whether tasks get a pids cap: `max` wanted (0: turned off), and why the host cannot give one (pure). */
export function pidsSupport(max: number, missing: string | undefined): PidsSupport {
  if (max <= 0) return { limited: false, reason: 'turned off (--task-pids-max 0)' };
  if (missing !== undefined) return { limited: false, reason: missing };
  return { limited: true, max };
}

/** The cgroup.procs files a task's supervisor joins. */
export function procsFiles(ref: CgroupRef): string[] {
  if (ref.version === 2) return [join(ref.dir, 'cgroup.procs')];
  return dirsOf(ref).map((d) => join(d, 'cgroup.procs'));
}

function dirsOf(ref: CgroupRef): string[] {
  return ref.version === 2 ? [ref.dir] : [ref.memory, ref.cpu, ...(ref.cpuacct ? [ref.cpuacct] : []), ...(ref.pids ? [ref.pids] : [])];
}

/**
 * How many times the kernel's OOM killer acted in the task's cgroup; undefined when the
 * kernel does not say (v1 before Linux 4.13 has no oom_kill counter).
 */
export function oomKills(ref: CgroupRef): number | undefined {
  if (ref.version === 2) return parseKeyValues(readText(join(ref.dir, 'memory.events')) ?? '').get('oom_kill');
  return parseKeyValues(readText(join(ref.memory, 'memory.oom_control')) ?? '').get('oom_kill');
}

/** How often the task's memory hit its limit (v1 failcnt; v2 the `max` event). */
export function memoryLimitHits(ref: CgroupRef): number {
  if (ref.version === 2) return parseKeyValues(readText(join(ref.dir, 'memory.events')) ?? '').get('max') ?? 0;
  return readNumber(join(ref.memory, 'memory.failcnt')) ?? 0;
}

/** Whether the memory limit ended the task, given how it ended. */
export function endedByMemoryLimit(ref: CgroupRef, killedBySigkill: boolean): boolean {
  const kills = oomKills(ref);
  if (kills !== undefined) return kills > 0;
  return killedBySigkill && memoryLimitHits(ref) > 0;
}

/** Pure reading of v1 counters. */
export function usageFromV1(cpuacctUsageNs: number | undefined, memUsage: number | undefined, memStat: string, limit: number | undefined): CgroupUsage {
  const stat = parseKeyValues(memStat);
  return {
    cpuSeconds: (cpuacctUsageNs ?? 0) / 1e9,
    memoryBytes: memUsage ?? 0,
    rssBytes: stat.get('total_rss') ?? stat.get('rss') ?? 0,
    // v1 writes "unlimited" as a huge page-aligned number.
    limitBytes: limit !== undefined && limit < 2 ** 62 ? limit : undefined,
  };
}

/** Pure reading of v2 counters. */
export function usageFromV2(cpuStat: string, memCurrent: number | undefined, memStat: string, memMax: string | undefined): CgroupUsage {
  const max = memMax?.trim();
  return {
    cpuSeconds: (parseKeyValues(cpuStat).get('usage_usec') ?? 0) / 1e6,
    memoryBytes: memCurrent ?? 0,
    rssBytes: parseKeyValues(memStat).get('anon') ?? 0,
    limitBytes: max !== undefined && /^\d+$/.test(max) ? Number(max) : undefined,
  };
}

export function readUsage(ref: CgroupRef): CgroupUsage {
  if (ref.version === 2) {
    return usageFromV2(readText(join(ref.dir, 'cpu.stat')) ?? '', readNumber(join(ref.dir, 'memory.current')), readText(join(ref.dir, 'memory.stat')) ?? '', readText(join(ref.dir, 'memory.max')));
  }
  // cpu and cpuacct share a hierarchy on most hosts; then cpuacct.* is in the cpu directory.
  const acct = ref.cpuacct ?? ref.cpu;
  return usageFromV1(
    readNumber(join(acct, 'cpuacct.usage')),
    readNumber(join(ref.memory, 'memory.usage_in_bytes')),
    readText(join(ref.memory, 'memory.stat')) ?? '',
    readNumber(join(ref.memory, 'memory.limit_in_bytes')),
  );
}

/** Pids in the task's cgroup (any of its hierarchies). */
export function cgroupPids(ref: CgroupRef): number[] {
  const pids = new Set<number>();
  for (const file of procsFiles(ref)) {
    for (const line of (readText(file) ?? '').split('\n')) if (/^\d+$/.test(line)) pids.add(Number(line));
  }
  return [...pids];
}

/** Signals every process in the task's cgroup (those that left its process group too). */
export function signalCgroup(ref: CgroupRef, signal: NodeJS.Signals): void {
  for (const pid of cgroupPids(ref)) {
    try {
      process.kill(pid, signal);
    } catch {
      // ended meanwhile
    }
  }
}

/**
 * Removes a task's cgroup. A cgroup can only go once it is empty: what is left in it is
 * killed and the removal retried for a short while. Resolves with the directories that
 * could not be removed (empty when all went).
 */
export async function destroyCgroup(ref: CgroupRef, attempts = 20, delayMs = 50): Promise<string[]> {
  let left = dirsOf(ref);
  for (let i = 0; i < attempts && left.length > 0; i++) {
    if (i > 0) {
      signalCgroup(ref, 'SIGKILL');
      await new Promise((r) => setTimeout(r, delayMs));
    }
    left = left.filter((dir) => {
      try {
        rmdirSync(dir);
        return false;
      } catch (err) {
        return (err as NodeJS.ErrnoException).code !== 'ENOENT';
      }
    });
  }
  return left;
}

/**
 * The cgroup of a process, from the text of its /proc/PID/cgroup and the host's mounts
 * (pure). Used for containers, whose cgroups the Docker daemon makes: their usage is read
 * from where the container's init process lives, whatever cgroup driver the daemon uses.
 */
export function cgroupFromProcFile(text: string, mounts: CgroupMounts): CgroupRef | undefined {
  const v1 = new Map<string, string>();
  let v2Path: string | undefined;
  for (const line of text.split('\n')) {
    const m = /^(\d+):([^:]*):(.*)$/.exec(line.trim());
    if (!m) continue;
    if (m[1] === '0' && m[2] === '') v2Path = m[3];
    else for (const c of m[2]!.split(',')) v1.set(c, m[3]!);
  }
  const memMount = mounts.v1.get('memory');
  const cpuMount = mounts.v1.get('cpu');
  const memPath = v1.get('memory');
  const cpuPath = v1.get('cpu');
  if (memMount !== undefined && cpuMount !== undefined && memPath !== undefined && cpuPath !== undefined) {
    const ref: CgroupRef = { version: 1, memory: join(memMount, memPath), cpu: join(cpuMount, cpuPath) };
    const acctMount = mounts.v1.get('cpuacct');
    const acctPath = v1.get('cpuacct');
    if (acctMount !== undefined && acctPath !== undefined && acctMount !== cpuMount) ref.cpuacct = join(acctMount, acctPath);
    return ref;
  }
  if (v2Path !== undefined && mounts.v2[0] !== undefined) return { version: 2, dir: join(mounts.v2[0], v2Path) };
  return undefined;
}

/** The cgroup process `pid` is in now; undefined when /proc cannot say. */
export function cgroupOfProcess(pid: number): CgroupRef | undefined {
  const text = readText(`/proc/${pid}/cgroup`);
  const mountinfo = readText('/proc/self/mountinfo');
  if (text === undefined || mountinfo === undefined) return undefined;
  return cgroupFromProcFile(text, parseCgroupMounts(mountinfo));
}
