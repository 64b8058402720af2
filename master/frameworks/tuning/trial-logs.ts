// Reading a trial's stdout from its agent, where the metrics are: from the byte the record
// has read through, up to the last complete line (a line is judged once it has ended; the
// rest is read again next time). At a trial's end the last line counts without its newline.

import type { FrameworkEnv } from '../../../shared/framework-host/contract.ts';
import type { LogChunk } from '../../../shared/master-state.ts';

const READ_TIMEOUT_MS = 10_000;
/** At most this much is read in one poll (a chatty trial is caught up over several). */
const MAX_READ_BYTES = 4 * 1024 * 1024;

export interface StdoutRead {
  lines: string[];
  /** The byte after the last line returned. */
  nextOffset: number;
  /** The task has ended and everything was read. */
  eof: boolean;
}

/** Reads a trial's stdout from `offset` (readTrialStdout's contract); undefined: nothing could be read. */
export type TrialStdoutReader = (taskId: string, agentId: string, offset: number, final: boolean) => Promise<StdoutRead | undefined>;

/** `agentId` is the trial's own record's: an ended task may be gone from the registry's list. */
export async function readTrialStdout(env: Pick<FrameworkEnv, 'agentFetch'>, taskId: string, agentId: string, offset: number, final: boolean): Promise<StdoutRead | undefined> {
  let text = '';
  let at = offset;
  let eof = false;
  while (at - offset < MAX_READ_BYTES) {
    const path = `/api/v1/tasks/${encodeURIComponent(taskId)}/logs?stream=stdout&offset=${at}`;
    const res = await env.agentFetch(agentId, path, { signal: AbortSignal.timeout(READ_TIMEOUT_MS) });
    // The agent is gone from the registry: nothing to read.
    if (!res) return undefined;
    if (!res.ok) {
      await res.body?.cancel();
      return undefined;
    }
    const chunk = (await res.json()) as LogChunk;
    text += chunk.data;
    eof = chunk.eof;
    if (chunk.nextOffset <= at || chunk.data === '' || eof) {
      at = Math.max(at, chunk.nextOffset);
      break;
    }
    at = chunk.nextOffset;
  }
  return stdoutLines(text, offset, at, final, eof);
}

/**
 * The lines of `text`, the stdout read from `offset` up to `endOffset`: up to its last
 * complete line, or all of it (the last line without its newline) on a final read that
 * reached the task's end. Pure.
 */
export function stdoutLines(text: string, offset: number, endOffset: number, final: boolean, eof: boolean): StdoutRead {
  const cut = text.lastIndexOf('\n');
  if (final && eof) {
    const lines = text.split('\n');
    if (lines.at(-1) === '') lines.pop();
    return { lines, nextOffset: endOffset, eof };
  }
  if (cut === -1) return { lines: [], nextOffset: offset, eof };
  const whole = text.slice(0, cut + 1);
  return { lines: whole.slice(0, -1).split('\n'), nextOffset: offset + Buffer.byteLength(whole), eof };
}
