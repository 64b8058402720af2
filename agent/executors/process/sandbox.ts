// A task's sandbox: `<workDir>/sandboxes/<task id, escaped>/` holding its `stdout` and
// `stderr` files. The path is a pure function of the task id, so logs stay readable after
// the task ends and after the agent restarts.
//
// The sandbox belongs to the task's user and is private to it (0700, its logs 0600): another
// principal's task, under another uid, can neither list nor read nor write it. The agent
// (root) still reads the logs to serve them. The task's user may put anything in it: the agent (root) never
// follows a symlink there, nor opens anything but a regular file. Log files are opened with
// O_NOFOLLOW (and O_NONBLOCK, so a FIFO cannot hang a read), and a log read checks that what
// it opened is a regular file with one name, in the sandbox; anything else is refused
// (CAIRN_LOG_REFUSED) and nothing of it is read.

import { createHash } from 'node:crypto';
import { chmodSync, closeSync, constants, fchmodSync, fchownSync, fstatSync, lchownSync, lstatSync, mkdirSync, openSync, unlinkSync } from 'node:fs';
import { lstat, open, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import { CairnError } from '../../../shared/errors.ts';
import type { LogChunk } from '../../../shared/master-state.ts';
import { readLogTimes } from '../../log-times.ts';

export type LogStream = 'stdout' | 'stderr';
export const LOG_STREAMS: readonly LogStream[] = ['stdout', 'stderr'];

/** Largest single log read; callers page with nextOffset. */
export const MAX_LOG_READ_BYTES = 1024 * 1024;

/** A sandbox's mode where the agent gives it to the task's user: no one else enters it. */
export const SANDBOX_MODE = 0o700;
/** Its log files' mode: the task's user writes them, the agent (root) reads them. */
export const LOG_MODE = 0o600;

/** Longest directory name we produce; most filesystems allow 255 bytes. */
const MAX_NAME = 200;

/**
 * Maps a task id to one directory name, injectively: bytes outside [A-Za-z0-9_-.] (and a
 * leading '.', so '.' and '..' cannot occur) become %XX. Names too long for a filesystem
 * are cut and given a hash of the whole id.
 */
export function sanitizeTaskId(taskId: string): string {
  if (taskId === '') throw new CairnError('CAIRN_BAD_REQUEST', 'task id is empty', 'taskId');
  let out = '';
  for (const byte of Buffer.from(taskId, 'utf8')) {
    const c = String.fromCharCode(byte);
    const plain = /[A-Za-z0-9_-]/.test(c) || (c === '.' && out !== '');
    out += plain ? c : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  if (out.length > MAX_NAME) {
    const hash = createHash('sha256').update(taskId).digest('hex').slice(0, 16);
    out = `${out.slice(0, MAX_NAME - 17)}~${hash}`;
  }
  return out;
}

export function sandboxesRoot(workDir: string): string {
  return join(workDir, 'sandboxes');
}

export function sandboxDir(workDir: string, taskId: string): string {
  return join(sandboxesRoot(workDir), sanitizeTaskId(taskId));
}

export function logPath(dir: string, stream: LogStream): string {
  return join(dir, stream);
}

export interface OpenedSandbox {
  dir: string;
  stdoutFd: number;
  stderrFd: number;
}

/** Who owns a sandbox and its logs: the task's user (and its primary group). */
export interface SandboxOwner {
  uid: number;
  gid: number;
}

/**
 * Creates the sandbox and opens its log files for appending (a task id launched again
 * after it ended keeps its earlier output), all owned by `owner` when given. Synchronous on
 * purpose: it sits on the launch fast path and costs a few microseconds. The caller closes
 * the fds once the child has them.
 */
export function openSandbox(workDir: string, taskId: string, owner?: SandboxOwner): OpenedSandbox {
  const dir = sandboxDir(workDir, taskId);
  // Without an owner (an agent that is not root) a container's image user must still reach it.
  mkdirSync(dir, { recursive: true, ...(owner ? { mode: SANDBOX_MODE } : {}) });
  if (owner) chownSandbox(dir, owner);
  return { dir, ...openSandboxLogs(dir, owner) };
}

const APPEND_FLAGS = constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT | constants.O_NOFOLLOW | constants.O_NONBLOCK;

/**
 * Opens one log for appending without following a symlink: whatever an earlier run of the
 * task left in its place that is not a regular file (a symlink, a FIFO) is removed first.
 */
export function openLogForAppend(path: string, owner?: SandboxOwner): number {
  for (let attempt = 0; ; attempt++) {
    let fd: number | undefined;
    try {
      fd = openSync(path, APPEND_FLAGS, LOG_MODE);
      const st = fstatSync(fd);
      if (st.isFile() && st.nlink <= 1) {
        if (owner && (st.uid !== owner.uid || st.gid !== owner.gid)) fchownSync(fd, owner.uid, owner.gid);
        // A log an earlier version left readable by everyone.
        if ((st.mode & 0o077) !== 0) fchmodSync(fd, LOG_MODE);
        return fd;
      }
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      // ELOOP: a symlink; ENXIO: a FIFO nobody reads; EISDIR and the like are not ours to fix.
      if (code !== 'ELOOP' && code !== 'ENXIO' || attempt > 0) {
        if (fd !== undefined) closeQuietly(fd);
        throw err;
      }
    }
    if (fd !== undefined) closeQuietly(fd);
    if (attempt > 0) throw new Error(`${path} is not a regular file of the sandbox`);
    unlinkSync(path);
  }
}

/** Opens an existing sandbox's log files for appending (owned by `owner` when given); the caller closes the fds. */
export function openSandboxLogs(dir: string, owner?: SandboxOwner): { stdoutFd: number; stderrFd: number } {
  const stdoutFd = openLogForAppend(logPath(dir, 'stdout'), owner);
  let stderrFd: number;
  try {
    stderrFd = openLogForAppend(logPath(dir, 'stderr'), owner);
  } catch (err) {
    closeQuietly(stdoutFd);
    throw err;
  }
  return { stdoutFd, stderrFd };
}

/** Gives an existing sandbox directory to the task's user, private to it (never following a symlink). */
export function chownSandbox(dir: string, owner: SandboxOwner): void {
  const st = lstatSync(dir);
  if (!st.isDirectory()) throw new Error(`${dir} is not a directory`);
  if (st.uid !== owner.uid || st.gid !== owner.gid) lchownSync(dir, owner.uid, owner.gid);
  // chmod follows symlinks, but lstat has just said this is a directory, which only root could swap.
  if ((st.mode & 0o777) !== SANDBOX_MODE) chmodSync(dir, SANDBOX_MODE);
}

/** Closes an fd, ignoring errors (used on paths that already report a failure). */
export function closeQuietly(fd: number): void {
  try {
    closeSync(fd);
  } catch {
    // already closed or never valid: nothing to release
  }
}

/**
 * How many bytes of `buf` end on a whole UTF-8 character, so a read never splits one
 * (the next read starts at the cut). Returns buf.length when the tail is complete.
 */
export function utf8BoundaryLength(buf: Uint8Array): number {
  const n = buf.length;
  // A character is at most 4 bytes: look back at most 3 for the lead byte of the last one.
  for (let back = 1; back <= Math.min(4, n); back++) {
    const b = buf[n - back];
    if ((b & 0xc0) === 0x80) continue; // continuation byte: keep looking for the lead
    const need = b >= 0xf0 ? 4 : b >= 0xe0 ? 3 : b >= 0xc0 ? 2 : 1;
    return need > back ? n - back : n;
  }
  return n;
}

function refused(stream: LogStream, why: string): CairnError {
  return new CairnError('CAIRN_LOG_REFUSED', `the task's ${stream} ${why}: it is not read (a log is only ever a regular file of the task's sandbox)`, 'stream');
}

/**
 * Opens a sandbox log for reading, never following a symlink and never reading anything
 * but a regular file with no other name that lies in the sandbox itself. Undefined when
 * there is no such file (yet); throws CAIRN_LOG_REFUSED for anything else in its place,
 * CAIRN_UNKNOWN_TASK when there is no sandbox.
 */
export async function openSandboxLog(dir: string, stream: LogStream): Promise<FileHandle | undefined> {
  // The sandbox itself: a real directory, not a symlink to one elsewhere.
  const dirStat = await lstat(dir).catch(() => undefined);
  if (!dirStat) throw new CairnError('CAIRN_UNKNOWN_TASK', `no ${stream} log in sandbox ${dir}`, 'taskId');
  if (!dirStat.isDirectory()) throw refused(stream, 'sandbox is not a directory');
  const path = logPath(dir, stream);
  let fh: FileHandle;
  try {
    fh = await open(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return undefined;
    if (code === 'ELOOP') throw refused(stream, 'is a symbolic link');
    throw refused(stream, `cannot be opened (${code ?? (err as Error).message})`);
  }
  try {
    const st = await fh.stat();
    if (!st.isFile()) throw refused(stream, 'is not a regular file');
    if (st.nlink > 1) throw refused(stream, 'has other names (a hard link)');
    // What was opened is what the sandbox holds under that name now: not swapped meanwhile.
    const named = await lstat(path).catch(() => undefined);
    if (!named || named.dev !== st.dev || named.ino !== st.ino || named.dev !== dirStat.dev) throw refused(stream, 'was replaced while it was opened');
    return fh;
  } catch (err) {
    await fh.close();
    throw err;
  }
}

/**
 * Reads up to `maxBytes` of a sandbox log from `offset`. `terminal` says whether the task
 * has ended (its output is complete); eof is true only then, once the end is reached.
 * Throws CAIRN_UNKNOWN_TASK when the sandbox or log file does not exist, CAIRN_LOG_REFUSED
 * when something other than a regular file of the sandbox is in the log's place.
 */
export async function readSandboxLog(
  dir: string,
  stream: LogStream,
  offset: number,
  maxBytes: number,
  terminal: boolean,
  withTimes = false,
): Promise<LogChunk> {
  const chunk = await readSandboxLogBytes(dir, stream, offset, maxBytes, terminal);
  return withTimes ? { ...chunk, times: await readLogTimes(dir, stream, chunk.offset, chunk.nextOffset) } : chunk;
}

async function readSandboxLogBytes(dir: string, stream: LogStream, offset: number, maxBytes: number, terminal: boolean): Promise<LogChunk> {
  // A sandbox whose task has not opened its log yet (it is being started) has an empty one.
  const fh = await openSandboxLog(dir, stream);
  if (!fh) return { data: '', offset, nextOffset: offset, eof: terminal };
  try {
    const size = (await fh.stat()).size;
    const want = Math.max(0, Math.min(maxBytes, MAX_LOG_READ_BYTES, size - offset));
    if (want === 0) {
      return { data: '', offset, nextOffset: offset, eof: terminal && offset >= size };
    }
    const buf = Buffer.alloc(want);
    const { bytesRead } = await fh.read(buf, 0, want, offset);
    let used = bytesRead;
    // Cut a split character off the end, unless that would return nothing at all.
    const whole = utf8BoundaryLength(buf.subarray(0, bytesRead));
    if (whole > 0) used = whole;
    const nextOffset = offset + used;
    return {
      data: buf.subarray(0, used).toString('utf8'),
      offset,
      nextOffset,
      eof: terminal && nextOffset >= size,
    };
  } finally {
    await fh.close();
  }
}
