// A task's sandbox: `<workDir>/sandboxes/<task id, escaped>/` holding its `stdout` and
// `stderr` files. The path is a pure function of the task id, so logs stay readable after
// the task ends and after the agent restarts.

import { createHash } from 'node:crypto';
import { closeSync, mkdirSync, openSync } from 'node:fs';
import { open, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { CairnError } from '../../../shared/errors.ts';
import type { LogChunk } from '../../../shared/master-state.ts';

export type LogStream = 'stdout' | 'stderr';
export const LOG_STREAMS: readonly LogStream[] = ['stdout', 'stderr'];

/** Largest single log read; callers page with nextOffset. */
export const MAX_LOG_READ_BYTES = 1024 * 1024;

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

/**
 * Creates the sandbox and opens its log files for appending (a task id launched again
 * after it ended keeps its earlier output). Synchronous on purpose: it sits on the launch
 * fast path and costs a few microseconds. The caller closes the fds once the child has them.
 */
export function openSandbox(workDir: string, taskId: string): OpenedSandbox {
  const dir = sandboxDir(workDir, taskId);
  mkdirSync(dir, { recursive: true });
  return { dir, ...openSandboxLogs(dir) };
}

/** Opens an existing sandbox's log files for appending; the caller closes the fds. */
export function openSandboxLogs(dir: string): { stdoutFd: number; stderrFd: number } {
  const stdoutFd = openSync(logPath(dir, 'stdout'), 'a', 0o644);
  let stderrFd: number;
  try {
    stderrFd = openSync(logPath(dir, 'stderr'), 'a', 0o644);
  } catch (err) {
    closeQuietly(stdoutFd);
    throw err;
  }
  return { stdoutFd, stderrFd };
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

/**
 * Reads up to `maxBytes` of a sandbox log from `offset`. `terminal` says whether the task
 * has ended (its output is complete); eof is true only then, once the end is reached.
 * Throws CAIRN_UNKNOWN_TASK when the sandbox or log file does not exist.
 */
export async function readSandboxLog(
  dir: string,
  stream: LogStream,
  offset: number,
  maxBytes: number,
  terminal: boolean,
): Promise<LogChunk> {
  const path = logPath(dir, stream);
  let size: number;
  try {
    size = (await stat(path)).size;
  } catch {
    // A sandbox whose task has not opened its log yet (it is being started) has an empty one.
    const sandboxExists = await stat(dir).then((st) => st.isDirectory(), () => false);
    if (!sandboxExists) throw new CairnError('CAIRN_UNKNOWN_TASK', `no ${stream} log in sandbox ${dir}`, 'taskId');
    size = 0;
  }
  const want = Math.max(0, Math.min(maxBytes, MAX_LOG_READ_BYTES, size - offset));
  if (want === 0) {
    return { data: '', offset, nextOffset: offset, eof: terminal && offset >= size };
  }
  const fh = await open(path, 'r');
  try {
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
