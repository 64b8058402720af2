// What /proc says about a task's processes: whether a pid is still the process the agent
// started (pid and start time both match, and it is not a zombie), and how much CPU and
// memory a process group uses. Parsers are pure; the readers are thin and synchronous
// (a /proc read costs microseconds and never blocks on a disk).

import { readFileSync, readdirSync } from 'node:fs';

/** Linux reports times in /proc in clock ticks; USER_HZ is 100 on every mainstream architecture. */
export const CLOCK_TICKS_PER_SECOND = 100;

export interface ProcStat {
  pid: number;
  comm: string;
  /** R, S, D, Z, T, X, ... */
  state: string;
  ppid: number;
  pgrp: number;
  /** Clock ticks spent in user and kernel mode. */
  utimeTicks: number;
  stimeTicks: number;
  /** Field 22: when the process started, in clock ticks after boot. */
  startTimeTicks: number;
  /** Resident pages. */
  rssPages: number;
}

/**
 * Parses /proc/PID/stat. The command name (field 2) is in parentheses and may itself hold
 * spaces and parentheses, so the fields after it are counted from the last ')'.
 */
export function parseProcStat(text: string): ProcStat | undefined {
  const open = text.indexOf('(');
  const close = text.lastIndexOf(')');
  if (open < 0 || close < open) return undefined;
  const pid = Number(text.slice(0, open).trim());
  const rest = text.slice(close + 2).trim().split(/\s+/);
  // rest[0] is field 3 (state); field N is rest[N - 3].
  const field = (n: number) => Number(rest[n - 3]);
  if (!Number.isInteger(pid) || rest.length < 22) return undefined;
  const stat: ProcStat = {
    pid,
    comm: text.slice(open + 1, close),
    state: rest[0],
    ppid: field(4),
    pgrp: field(5),
    utimeTicks: field(14),
    stimeTicks: field(15),
    startTimeTicks: field(22),
    rssPages: field(24),
  };
  return Number.isFinite(stat.startTimeTicks) ? stat : undefined;
}

export function readProcStat(pid: number): ProcStat | undefined {
  try {
    return parseProcStat(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return undefined;
  }
}

/** The start time of a live process, or undefined when it is gone. */
export function processStartTime(pid: number): number | undefined {
  return readProcStat(pid)?.startTimeTicks;
}

/**
 * Whether `pid` is still the process that started at `startTimeTicks`: false when it is
 * gone, a zombie (it has ended; nobody reaped it yet), or a different process that was
 * given the same pid later. Without a recorded start time only existence is checked.
 */
export function isSameProcessAlive(pid: number, startTimeTicks: number | undefined, read: (pid: number) => ProcStat | undefined = readProcStat): boolean {
  const st = read(pid);
  if (!st) return false;
  if (st.state === 'Z' || st.state === 'X') return false;
  return startTimeTicks === undefined || st.startTimeTicks === startTimeTicks;
}

/** Every process on the host, by pid; unreadable entries (ended while listing) are left out. */
export function listProcesses(): ProcStat[] {
  const out: ProcStat[] = [];
  let names: string[];
  try {
    names = readdirSync('/proc');
  } catch {
    return out;
  }
  for (const name of names) {
    if (name.charCodeAt(0) < 48 || name.charCodeAt(0) > 57) continue;
    const st = readProcStat(Number(name));
    if (st) out.push(st);
  }
  return out;
}

export interface GroupUsage {
  /** User plus system CPU time of the group's live processes, in seconds. */
  cpuSeconds: number;
  rssBytes: number;
  processes: number;
}

/**
 * Sums CPU time and resident memory per process group (pure). CPU time of processes that
 * already ended is not included: without cgroups there is no record of it.
 */
export function usageByGroup(processes: readonly ProcStat[], pageSize = 4096): Map<number, GroupUsage> {
  const out = new Map<number, GroupUsage>();
  for (const p of processes) {
    if (p.state === 'Z' || p.state === 'X') continue;
    const u = out.get(p.pgrp) ?? { cpuSeconds: 0, rssBytes: 0, processes: 0 };
    u.cpuSeconds += (p.utimeTicks + p.stimeTicks) / CLOCK_TICKS_PER_SECOND;
    u.rssBytes += p.rssPages * pageSize;
    u.processes += 1;
    out.set(p.pgrp, u);
  }
  return out;
}
