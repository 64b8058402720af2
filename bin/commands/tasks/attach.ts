// `cairn attach TASK_ID...`: follows tasks that `cairn run --detach` launched, as `cairn run`
// would have: their stdout and stderr copied through the master's logs API (streamed, as
// `cairn logs --follow` reads them, followed again where a stream broke), each line labelled
// "[index] " when there are several, and the exit code of the first that did not finish
// well. Ctrl-C stops following; the tasks run on. Once every task of a detached `cairn run`
// has ended, its framework (kept by its long failover timeout) is torn down.

import { isTerminal } from '../../../shared/agent-messages.ts';
import type { TaskView } from '../../../shared/master-state.ts';
import { findToken } from '../../../shared/sdk/credentials.ts';
import { MasterHttpError } from '../../../shared/sdk/http-error.ts';
import { MasterClient } from '../../../shared/sdk/master-client.ts';
import { clientTls } from '../common/client-tls.ts';
import type { CliIo } from '../common/io.ts';
import { followLogStream, LinePrefixer } from '../common/log-relay.ts';
import type { AttachOptions } from './options.ts';
import { describeEnding, exitCodeFor, isDetachedRun } from './run-tasks.ts';

export interface AttachTuning {
  /** Pause before following a broken log stream again (default 500). */
  retryDelayMs?: number;
  /** How long to keep following a broken stream again without data (default 60000). */
  giveUpMs?: number;
}

const EXIT_INTERRUPTED = 130;

function message(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

export async function runAttach(o: AttachOptions, io: CliIo, tuning: AttachTuning = {}): Promise<number> {
  const note = (text: string) => void io.stderr.write(`cairn attach: ${text}\n`);
  const rest = new MasterClient(o.masterUrl, { token: findToken(o.masterUrl, io.env), tls: clientTls(o.tls) });

  // Every task must be known before anything is followed: a typo fails at once.
  const known: TaskView[] = [];
  for (const id of o.taskIds) {
    try {
      known.push(await rest.task(id));
    } catch (err) {
      note(err instanceof MasterHttpError && err.status === 404 ? `no task ${id} is known to the master` : message(err));
      return 1;
    }
  }

  const stop = new AbortController();
  let interrupted = false;
  const disposeInterrupt = io.onInterrupt(() => {
    if (interrupted) return;
    interrupted = true;
    note('stopped following; the tasks run on');
    stop.abort();
  });
  let firstFailure: number | undefined;
  let trouble = false;
  const several = o.taskIds.length > 1;

  const follow = async (task: TaskView, index: number): Promise<void> => {
    const prefix = several ? `[${index}] ` : '';
    const relay = (stream: 'stdout' | 'stderr') => {
      const out = stream === 'stdout' ? io.stdout : io.stderr;
      const lines = new LinePrefixer(prefix, (text) => void out.write(text));
      return followLogStream({
        source: { followLogs: (id, s, offset) => rest.followLogs(id, s, offset, { signal: stop.signal }) },
        taskId: task.id,
        stream,
        write: (text) => lines.push(text),
        retryDelayMs: tuning.retryDelayMs ?? 500,
        giveUpMs: tuning.giveUpMs ?? 60_000,
        now: Date.now,
        sleep: (ms) => new Promise((r) => setTimeout(r, ms)),
      }).finally(() => lines.flush());
    };
    try {
      await Promise.all([relay('stdout'), relay('stderr')]);
    } catch (err) {
      if (stop.signal.aborted) return;
      trouble = true;
      note(`${prefix}following task ${task.id}: ${message(err)}`);
      return;
    }
    // Both logs are read to their end: the task is terminal.
    let ended: TaskView;
    try {
      ended = await rest.task(task.id);
    } catch (err) {
      trouble = true;
      note(`${prefix}${message(err)}`);
      return;
    }
    if (ended.state === 'TASK_FINISHED') return;
    io.stderr.write(`${prefix}cairn attach: ${describeEnding(ended.id, ended.state, ended.exitCode, ended.message)}\n`);
    firstFailure ??= exitCodeFor(ended.state, ended.exitCode);
  };

  await Promise.all(known.map((task, index) => follow(task, index)));
  disposeInterrupt();
  if (interrupted) return EXIT_INTERRUPTED;
  await tidyDetachedFrameworks(rest, known.map((t) => t.frameworkId));
  if (firstFailure !== undefined) return firstFailure;
  return trouble ? 1 : 0;
}

/**
 * A detached `cairn run` leaves its framework registered for its failover timeout, so its
 * tasks run on. Once none of its tasks is running any more, it has no use: tear it down.
 * Best effort; the master removes it at the timeout anyway.
 */
async function tidyDetachedFrameworks(rest: MasterClient, frameworkIds: readonly string[]): Promise<void> {
  try {
    const state = await rest.state();
    for (const id of new Set(frameworkIds)) {
      const fw = state.frameworks.find((f) => f.id === id);
      if (!fw || fw.connected || !isDetachedRun(fw)) continue;
      if (state.tasks.some((t) => t.frameworkId === id && !isTerminal(t.state))) continue;
      await rest.teardown(id);
    }
  } catch {
    // Left to the failover timeout.
  }
}
