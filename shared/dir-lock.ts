// One daemon per directory: a master's data dir and an agent's work dir are locked while a
// process uses them. Two masters writing one registry break it (a second one's commands
// collide with the first's sequence numbers); two agents on one work dir adopt each other's
// tasks. The lock is a file, `<dir>/cairn.lock`, holding who took it (pid, host, process
// start, command line); it appears whole or not at all (written aside, then hard-linked
// into place, which fails when a lock is there). A lock whose holder is gone — same host,
// and no live process with that pid and start time — is stale and taken over; any other
// holder makes the second process stop with CAIRN_DIR_LOCKED naming it.
// On a full disk the holder cannot be written (a file's first byte needs a block, a name
// does not): the lock is then the empty file, and the name it was written aside under
// (`cairn.lock.<pid>.<token>`, the same inode) stays beside it to say who holds it. So a
// daemon starts on a full disk, to serve what it can, and the lock still means what it says.

import { randomBytes } from 'node:crypto';
import { closeSync, fsyncSync, linkSync, mkdirSync, openSync, readdirSync, readFileSync, statSync, unlinkSync, writeSync } from 'node:fs';
import { hostname } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { CairnError } from './errors.ts';

export const LOCK_FILE = 'cairn.lock';

/** What the lock file says of its holder. */
export interface DirLockHolder {
  /** What holds it: `master`, `agent`. */
  role: string;
  pid: number;
  host: string;
  /** When the holder took the lock. */
  sinceMs: number;
  /** The holder's start time in clock ticks since boot (Linux), so a reused pid is not taken for it. */
  processStart?: number;
  /** The holder's command line, for the operator. */
  command: string;
  /** Unique to this taking of the lock: release removes only its own file. */
  token: string;
}

export interface DirLock {
  readonly dir: string;
  readonly holder: DirLockHolder;
  /** Removes the lock file if it is still this one's; idempotent. */
  release(): void;
}

/** The start time of a process in clock ticks since boot (field 22 of /proc/PID/stat), where there is /proc. */
export function processStartTicks(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) is in parentheses and may hold spaces and parentheses itself.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const ticks = Number(fields[19]);
    return Number.isSafeInteger(ticks) ? ticks : undefined;
  } catch {
    return undefined;
  }
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: it exists, under another user.
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Whether the holder is certainly gone: on this host, and no such process (or the pid now names another one). */
export function holderGone(holder: DirLockHolder, host = hostname()): boolean {
  if (holder.host !== host) return false;
  if (!Number.isSafeInteger(holder.pid) || holder.pid <= 0) return true;
  if (!processAlive(holder.pid)) return true;
  if (holder.processStart === undefined) return false;
  const now = processStartTicks(holder.pid);
  return now !== undefined && now !== holder.processStart;
}

function commandLine(): string {
  const [, script, ...args] = process.argv;
  const name = script === undefined ? 'node' : /^cairn\.[jt]s$/.test(basename(script)) ? 'cairn' : basename(script);
  const line = [name, ...args].join(' ');
  return line.length > 300 ? `${line.slice(0, 297)}...` : line;
}

/** The name a lock was written aside under, kept when the disk had no room for its holder: the holder of an empty lock. */
function asideHolder(path: string): DirLockHolder | undefined {
  let ino: number;
  try {
    ino = statSync(path).ino;
  } catch {
    return undefined;
  }
  const prefix = `${basename(path)}.`;
  for (const name of readdirSync(dirname(path))) {
    const m = name.startsWith(prefix) ? /^(\d+)\.([0-9a-f]+)$/.exec(name.slice(prefix.length)) : null;
    if (m === null) continue;
    try {
      if (statSync(join(dirname(path), name)).ino !== ino) continue;
    } catch {
      continue;
    }
    return { role: 'unknown', pid: Number(m[1]), host: hostname(), sinceMs: 0, command: '(written on a full disk)', token: m[2] };
  }
  return undefined;
}

function readHolder(path: string): DirLockHolder | undefined {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
  if (text === '') {
    const aside = asideHolder(path);
    if (aside !== undefined) return aside;
  }
  try {
    const h = JSON.parse(text) as Partial<DirLockHolder>;
    if (typeof h.pid === 'number' && typeof h.host === 'string' && typeof h.token === 'string') {
      return { role: String(h.role ?? 'unknown'), pid: h.pid, host: h.host, sinceMs: Number(h.sinceMs ?? 0), command: String(h.command ?? ''), token: h.token, ...(typeof h.processStart === 'number' ? { processStart: h.processStart } : {}) };
    }
  } catch {
    // not a lock this code wrote whole: see below
  }
  // Lock files appear whole (they are linked into place), so a garbled one was not written
  // by a live holder of this kind; it names nobody, and is stale.
  return { role: 'unknown', pid: 0, host: hostname(), sinceMs: 0, command: '', token: `garbled:${text}` };
}

function describeHolder(h: DirLockHolder): string {
  const since = h.sinceMs > 0 ? ` since ${new Date(h.sinceMs).toISOString()}` : '';
  return `${h.role} pid ${h.pid} on ${h.host}${since}${h.command ? ` (${h.command})` : ''}`;
}

/**
 * Locks `dir` (made if missing) for this process as `role`. Throws CAIRN_DIR_LOCKED naming
 * the holder when another live process has it; takes a stale lock over.
 */
export function lockDir(dir: string, role: string, field = 'dataDir'): DirLock {
  mkdirSync(dir, { recursive: true });
  const path = join(dir, LOCK_FILE);
  const processStart = processStartTicks(process.pid);
  const holder: DirLockHolder = {
    role, pid: process.pid, host: hostname(), sinceMs: Date.now(), command: commandLine(),
    token: randomBytes(12).toString('hex'), ...(processStart !== undefined ? { processStart } : {}),
  };
  const aside = join(dir, `${LOCK_FILE}.${process.pid}.${holder.token}`);
  const fd = openSync(aside, 'wx', 0o644);
  // Set when the disk had no room for the holder: the aside name then stays, naming it.
  let nameOnly = false;
  try {
    writeSync(fd, `${JSON.stringify(holder)}\n`);
    fsyncSync(fd);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code !== 'ENOSPC' && code !== 'EDQUOT') throw err;
    nameOnly = true;
  } finally {
    closeSync(fd);
  }
  try {
    // A few rounds: a stale lock removed here may be taken by another process first.
    for (let attempt = 0; ; attempt++) {
      try {
        linkSync(aside, path);
        break;
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      }
      const current = readHolder(path);
      if (current === undefined) continue; // released meanwhile
      if (!holderGone(current) || attempt >= 5) {
        throw new CairnError('CAIRN_DIR_LOCKED', `${dir} is in use by ${describeHolder(current)}; stop that process first (if it is gone, remove ${path})`, field);
      }
      // Remove it only if it is still the stale one just read, not one taken since.
      if (readHolder(path)?.token === current.token) {
        try {
          unlinkSync(path);
        } catch (err) {
          if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
        }
        removeQuietly(join(dir, `${LOCK_FILE}.${current.pid}.${current.token}`));
      }
    }
  } catch (err) {
    removeQuietly(aside);
    throw err;
  }
  if (!nameOnly) removeQuietly(aside);
  let released = false;
  return {
    dir,
    holder,
    release() {
      if (released) return;
      released = true;
      try {
        if (readHolder(path)?.token === holder.token) unlinkSync(path);
      } catch {
        // the directory went away with the lock
      }
      if (nameOnly) removeQuietly(aside);
    },
  };
}

function removeQuietly(path: string): void {
  try {
    unlinkSync(path);
  } catch {
    // already gone
  }
}

/** The holder of `dir`'s lock, if any (live or stale). */
export function dirLockHolder(dir: string): DirLockHolder | undefined {
  return readHolder(join(dir, LOCK_FILE));
}

/**
 * Runs `start` with `dir` locked: the lock is released when start fails, or when the
 * handle it returns is stopped.
 */
export async function withDirLock<H extends { stop: (...args: never[]) => Promise<void> }>(dir: string, role: string, field: string, start: () => Promise<H>): Promise<H> {
  const lock = lockDir(dir, role, field);
  let handle: H;
  try {
    handle = await start();
  } catch (err) {
    lock.release();
    throw err;
  }
  const stop = handle.stop;
  handle.stop = ((...args: never[]) => stop.apply(handle, args).finally(() => lock.release())) as H['stop'];
  return handle;
}
