// `cairn job submit|list|show|wait|delete|logs` and `cairn logs JOB/GROUP-INDEX`: clients of
// the jobs API. Each exits 0, or prints why not (with a hint where one helps) and exits 1;
// `job wait` exits 0 when the job succeeded and 1 with its reason when it failed.

import { readFileSync } from 'node:fs';
import type { JobView } from '../../../shared/jobs/model.ts';
import type { ReplicaStatus } from '../../../shared/jobs/model.ts';
import { MasterClient, type LogStream } from '../../../shared/sdk/master-client.ts';
import { MasterHttpError } from '../../../shared/sdk/http-error.ts';
import { secondsUntil } from '../../../shared/sdk/restart-backoff.ts';
import type { TlsFiles } from '../../../shared/tls.ts';
import type { CliIo } from '../common/io.ts';
import { apiClientOptions } from '../common/master-api-client.ts';
import { JobsClient } from './client.ts';
import { jobProgress } from './wait-progress.ts';
import { LinePrefixer, printTaskLog } from '../common/log-relay.ts';
import { formatObjects, printList, type OutputFormat } from '../common/output.ts';
import { age, formatTable } from '../common/table.ts';
import { EXIT_ACCEPTED_UNSCHEDULABLE, EXIT_TIMED_OUT, exitCodeOf } from '../common/exit-codes.ts';

export interface JobCommandOptions {
  masterUrl: string;
  tls?: TlsFiles;
}

const WAIT_POLL_MS = 500;

function clients(o: JobCommandOptions, io: CliIo): { jobs: JobsClient; master: MasterClient } {
  const options = apiClientOptions(o.masterUrl, o.tls, io);
  return { jobs: new JobsClient(o.masterUrl, options), master: new MasterClient(o.masterUrl, options) };
}

async function withJobs(name: string, o: JobCommandOptions, io: CliIo, body: (c: ReturnType<typeof clients>) => Promise<number | void>): Promise<number> {
  try {
    return (await body(clients(o, io))) ?? 0;
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    io.stderr.write(`cairn ${name}: ${message}${hintFor(err)}\n`);
    return exitCodeOf(err);
  }
}

function hintFor(err: unknown): string {
  if (!(err instanceof MasterHttpError)) return '';
  if (err.code === 'CAIRN_INVALID_JOB') return ' — check that field of the document (cairn job submit takes Cairn\'s own job, a TFJob, a PyTorchJob or a Volcano Job)';
  if (err.status === 404 && /no job/.test(err.message)) return ' — `cairn job list` shows the jobs there are';
  if (err.status === 409) return ' — `cairn job delete NAME` first, or choose another name';
  if (err.code === 'CAIRN_UNSCHEDULABLE') return ' — ask for less, add a bigger agent, or submit with --allow-unschedulable to let it wait for one';
  return '';
}

// ---- submit -----------------------------------------------------------------------------

export interface JobSubmitOptions extends JobCommandOptions {
  /** A file, `-` for stdin; absent when the job comes from flags. */
  file?: string;
  /** The job document built from flags (flags.ts), when there is no file. */
  document?: unknown;
  /** Submit it even when a replica is bigger than every agent (it then waits for one). */
  allowUnschedulable?: boolean;
}

/** JSON for a `.json` file or text that starts as JSON; YAML otherwise. */
export function contentTypeOf(file: string, text: string): string {
  return file.endsWith('.json') || /^\s*[{[]/.test(text) ? 'application/json' : 'application/yaml';
}

export function runJobSubmit(o: JobSubmitOptions, io: CliIo): Promise<number> {
  return withJobs('job submit', o, io, async ({ jobs }) => {
    let text: string;
    let type: string;
    if (o.file !== undefined) {
      try {
        text = readFileSync(o.file === '-' ? 0 : o.file, 'utf8');
      } catch (err) {
        throw new Error(`cannot read ${o.file === '-' ? 'stdin' : o.file}: ${(err as Error).message}`);
      }
      type = contentTypeOf(o.file, text);
    } else {
      text = JSON.stringify(o.document);
      type = 'application/json';
    }
    const answer = await jobs.submit(text, type, o.allowUnschedulable === true);
    for (const i of answer.ignored) io.stderr.write(`cairn job submit: ignored ${i.path}: ${i.why}\n`);
    io.stdout.write(`${answer.name}\n`);
    const warnings = answer.warnings ?? [];
    for (const w of warnings) io.stderr.write(`cairn job submit: warning: ${w}; job ${answer.name} waits until an agent that can hold it joins\n`);
    // Accepted, and told apart from a plain success: it will not start until a bigger agent joins.
    if (warnings.length > 0) return EXIT_ACCEPTED_UNSCHEDULABLE;
  });
}

// ---- list, show -------------------------------------------------------------------------

function counts(replicas: readonly ReplicaStatus[]): string {
  const running = replicas.filter((r) => r.state === 'Running').length;
  const done = replicas.filter((r) => r.state === 'Succeeded').length;
  return `${running}/${done}/${replicas.length}`;
}

export function jobsTable(jobs: readonly JobView[], nowMs: number, wide: boolean): string {
  const headers = ['NAME', 'KIND', 'PHASE', 'RUN/DONE/ALL', 'RESTARTS', 'AGE', ...(wide ? ['MESSAGE'] : [])];
  const rows = jobs.map((j) => [j.name, j.kind, j.phase, counts(j.replicas), String(j.restarts), age(j.createdAtMs, nowMs), ...(wide ? [j.message] : [])]);
  return formatTable(headers, rows);
}

export function runJobList(o: JobCommandOptions & { output?: OutputFormat }, io: CliIo): Promise<number> {
  return withJobs('job list', o, io, async ({ jobs }) => {
    const list = await jobs.list();
    printList(io, o.output, list, () => jobsTable(list, Date.now(), o.output === 'wide'));
  });
}

/** A replica's state, and when it restarts while it waits out its back-off: `Pending (restarting in 40 s)`. */
export function replicaState(r: ReplicaStatus, nowMs: number): string {
  const inS = r.state === 'Pending' ? secondsUntil(r.restartAtMs, nowMs) : 0;
  return inS > 0 ? `${r.state} (restarting in ${inS} s)` : r.state;
}

export function describeJob(j: JobView, nowMs: number): string {
  const lines = [`Name:      ${j.name}`, `Kind:      ${j.kind}`, `Phase:     ${j.phase}`, `Message:   ${j.message}`, `Restarts:  ${j.restarts}`, `Created:   ${age(j.createdAtMs, nowMs)} ago`];
  const gangIn = secondsUntil(j.restartAtMs, nowMs);
  if (j.phase === 'Queued' && gangIn > 0) lines.push(`Restart:   the gang is restarting in ${gangIn} s (back-off)`);
  for (const i of j.ignored) lines.push(`Ignored:   ${i.path}: ${i.why}`);
  lines.push('', 'Conditions:');
  lines.push(formatTable(['TYPE', 'REASON', 'AGE', 'MESSAGE'], j.conditions.map((c) => [c.type, c.reason, age(c.atMs, nowMs), c.message])).trimEnd());
  lines.push('', 'Replicas:');
  lines.push(formatTable(['REPLICA', 'STATE', 'HOST', 'PORT', 'RESTARTS', 'EXIT', 'TASK'], j.replicas.map((r) => [`${r.group}-${r.index}`, replicaState(r, nowMs), r.host ?? '', r.ports[0] !== undefined ? String(r.ports[0]) : '', String(r.restarts), r.exitCode !== undefined ? String(r.exitCode) : '', r.taskId ?? ''])).trimEnd());
  return `${lines.join('\n')}\n`;
}

export function runJobShow(o: JobCommandOptions & { name: string; output?: 'json' | 'yaml' }, io: CliIo): Promise<number> {
  return withJobs('job show', o, io, async ({ jobs }) => {
    const j = await jobs.get(o.name);
    io.stdout.write(o.output ? formatObjects(o.output, j) : describeJob(j, Date.now()));
  });
}

// ---- wait, delete -----------------------------------------------------------------------

export function runJobWait(o: JobCommandOptions & { name: string; timeoutMs?: number }, io: CliIo): Promise<number> {
  return withJobs('job wait', o, io, async ({ jobs }) => {
    const deadline = o.timeoutMs !== undefined ? Date.now() + o.timeoutMs : Infinity;
    let prev: JobView | undefined;
    for (;;) {
      const j = await jobs.get(o.name);
      const last = j.conditions.at(-1);
      // Each change as it happens: a wait that says nothing for minutes looks hung.
      if (j.phase !== 'Succeeded' && j.phase !== 'Failed') for (const line of jobProgress(prev, j)) io.stdout.write(`${line}\n`);
      prev = j;
      if (j.phase === 'Succeeded') {
        io.stdout.write(`job ${j.name} succeeded: ${j.message}\n`);
        return 0;
      }
      if (j.phase === 'Failed') {
        io.stderr.write(`cairn job wait: job ${j.name} failed (${last?.reason ?? 'Failed'}): ${j.message}\n`);
        return 1;
      }
      if (Date.now() >= deadline) {
        io.stderr.write(`cairn job wait: job ${j.name} is still ${j.phase} after ${o.timeoutMs} ms: ${j.message}\n`);
        return EXIT_TIMED_OUT;
      }
      await new Promise((r) => setTimeout(r, WAIT_POLL_MS));
    }
  });
}

export function runJobDelete(o: JobCommandOptions & { name: string }, io: CliIo): Promise<number> {
  return withJobs('job delete', o, io, async ({ jobs }) => {
    await jobs.remove(o.name);
    io.stdout.write(`job ${o.name} deleted\n`);
  });
}

// ---- logs -------------------------------------------------------------------------------

/** `JOB/GROUP-INDEX`, e.g. `mnist/worker-3`. */
export function parseReplicaRef(ref: string): { job: string; group: string; index: number } | undefined {
  const m = /^([a-z0-9-]+)\/([a-z0-9-]+)-(\d+)$/.exec(ref);
  return m ? { job: m[1]!, group: m[2]!, index: Number(m[3]) } : undefined;
}

export interface JobLogsOptions extends JobCommandOptions {
  job: string;
  /** A replica (`worker-3`); absent: the first replica, or every one with `all`. */
  replica?: { group: string; index: number };
  all: boolean;
  follow: boolean;
  stream: LogStream;
}

/** The log of one replica's latest task, or of every replica's, each line prefixed with its replica. */
export function runJobLogs(o: JobLogsOptions, io: CliIo): Promise<number> {
  const out = o.stream === 'stdout' ? io.stdout : io.stderr;
  return withJobs(o.replica ? 'logs' : 'job logs', o, io, async ({ jobs, master }) => {
    const j = await jobs.get(o.job);
    const started = j.replicas.filter((r) => r.taskId !== undefined);
    if (o.replica) {
      const r = j.replicas.find((x) => x.group === o.replica!.group && x.index === o.replica!.index);
      if (!r) throw new Error(`job ${j.name} has no replica ${o.replica.group}-${o.replica.index} (it has ${j.replicas.map((x) => `${x.group}-${x.index}`).join(', ')})`);
      if (!r.taskId) throw new Error(`replica ${r.group}-${r.index} of job ${j.name} has not started yet (${r.state})`);
      await printTaskLog(master, r.taskId, o.stream, o.follow, (t) => void out.write(t));
      return;
    }
    const chosen = o.all ? started : started.slice(0, 1);
    if (chosen.length === 0) throw new Error(`no replica of job ${j.name} has started yet (${j.phase}: ${j.message})`);
    const width = Math.max(...chosen.map((r) => `${r.group}-${r.index}`.length));
    await Promise.all(chosen.map(async (r) => {
      const p = new LinePrefixer(o.all ? `[${`${r.group}-${r.index}`.padEnd(width)}] ` : '', (t) => void out.write(t));
      await printTaskLog(master, r.taskId!, o.stream, o.follow, (t) => p.push(t));
      p.flush();
    }));
  });
}
