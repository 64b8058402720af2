// `cairn tune submit|list|show|best|stop|resume|delete`: clients of the tuning API. Each
// exits 0, or prints why not (with a hint where one helps) and exits 1; `tune submit --wait`
// follows the experiment and exits 0 when it succeeded, 1 when it failed or was stopped.

import { readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import type { ExperimentSummary, ExperimentView, TrialView } from '../../../shared/tuning/views.ts';
import { MasterHttpError } from '../../../shared/sdk/http-error.ts';
import type { TlsFiles } from '../../../shared/tls.ts';
import { asciiChart, bestSoFar } from './ascii-chart.ts';
import type { CliIo } from '../common/io.ts';
import { apiClientOptions } from '../common/master-api-client.ts';
import { formatObjects, printList, type OutputFormat } from '../common/output.ts';
import { age, formatTable } from '../common/table.ts';
import { ExperimentsClient, type ResumeLimits } from './client.ts';
import { MasterClient, type LogStream } from '../../../shared/sdk/master-client.ts';
import { printTaskLog } from '../common/log-relay.ts';
import { exitCodeOf } from '../common/exit-codes.ts';
import { ExperimentProgress } from './wait-progress.ts';

export interface TuneCommandOptions {
  masterUrl: string;
  tls?: TlsFiles;
}

/** `--wait` asks the master this often. */
export const WAIT_POLL_MS = 1000;
/** After the experiment has ended, how long `--wait` waits for its last trials to be killed. */
const SETTLE_MS = 30_000;
const ENDED = new Set(['Succeeded', 'Failed', 'EarlyStopped', 'Killed']);
/** Polls in a row that reach no master before `--wait` gives up. */
const MAX_UNREACHABLE = 30;

function client(o: TuneCommandOptions, io: CliIo): ExperimentsClient {
  return new ExperimentsClient(o.masterUrl, apiClientOptions(o.masterUrl, o.tls, io));
}

async function withExperiments(name: string, o: TuneCommandOptions, io: CliIo, body: (c: ExperimentsClient) => Promise<number | void>): Promise<number> {
  try {
    return (await body(client(o, io))) ?? 0;
  } catch (err) {
    let message = err instanceof Error ? err.message : String(err);
    // The experiment's name is the command's argument: "name: " says nothing more.
    if (err instanceof MasterHttpError && err.field === 'name') message = message.replace(/^name: /, '');
    io.stderr.write(`cairn ${name}: ${message}${hintFor(err)}\n`);
    return exitCodeOf(err);
  }
}

function hintFor(err: unknown): string {
  if (!(err instanceof MasterHttpError)) return '';
  if (err.status === 404 && /no experiment/.test(err.message)) return ' — `cairn tune list` shows the experiments there are';
  if (err.status === 404) return ' — does this master run the tuning framework? (`cairn version` on both sides)';
  // The master says by how much; the flags carry other names than its fields.
  if (err.status === 409 && err.field === 'maxTrialCount') return ' (--max-trials sets maxTrialCount)';
  if (err.status === 409 && err.field === 'maxFailedTrialCount') return ' (--max-failed sets maxFailedTrialCount)';
  return '';
}

// ---- formatting -------------------------------------------------------------------------

/** A metric or parameter value, at most 6 significant digits. */
export function formatValue(v: number | string | boolean | undefined): string {
  if (v === undefined) return '-';
  if (typeof v !== 'number') return String(v);
  if (Number.isInteger(v)) return String(v);
  return String(Number(v.toPrecision(6)));
}

export function formatParams(params: TrialView['params']): string {
  return Object.entries(params).map(([k, v]) => `${k}=${formatValue(v)}`).join(' ');
}

/** A trial's run time: 1m05s, 42s, 2h03m; '' when it has not started. */
export function trialDuration(t: TrialView, nowMs: number): string {
  if (t.startedMs === undefined) return '';
  const s = Math.max(0, Math.round(((t.finishedMs ?? nowMs) - t.startedMs) / 1000));
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m${String(s % 60).padStart(2, '0')}s`;
  return `${Math.floor(m / 60)}h${String(m % 60).padStart(2, '0')}m`;
}

function done(e: ExperimentSummary): number {
  return e.counts.Succeeded + e.counts.Failed + e.counts.EarlyStopped + e.counts.Killed;
}

export function experimentsTable(list: readonly ExperimentSummary[], nowMs: number, wide: boolean): string {
  const headers = ['NAME', 'PHASE', 'REASON', 'TRIALS', 'BEST', 'AGE', ...(wide ? ['ALGORITHM', 'OBJECTIVE', 'MESSAGE'] : [])];
  const rows = list.map((e) => [
    e.name, e.phase, e.reason, `${done(e)}/${e.maxTrialCount}`, e.best?.value !== undefined ? formatValue(e.best.value) : '-', age(e.createdMs, nowMs),
    ...(wide ? [e.algorithm, `${e.objective.type} ${e.objective.metricName}`, e.message] : []),
  ]);
  return formatTable(headers, rows);
}

function objectiveLine(e: ExperimentSummary): string {
  return `${e.objective.type} ${e.objective.metricName}${e.objective.goal !== undefined ? ` (goal ${formatValue(e.objective.goal)})` : ''}`;
}

/** `cairn tune show`: header lines, the trials' table, and the chart of the objective. */
export function describeExperiment(e: ExperimentView, nowMs: number, opts: { colour: boolean; chartWidth?: number; chartHeight?: number } = { colour: false }): string {
  const c = e.counts;
  const lines = [
    `Name:        ${e.name}${e.displayName !== undefined ? ` (${e.displayName})` : ''}`,
    `Phase:       ${e.phase}`,
    `Reason:      ${e.reason}`,
    `Message:     ${e.message}`,
    `Objective:   ${objectiveLine(e)}`,
    `Algorithm:   ${e.algorithm}${e.earlyStopping ? `, early stopping ${e.earlyStopping}` : ''} (seed ${e.seed}, ${e.parallelTrialCount} at once, scheduling ${e.scheduling}${e.scheduling === 'dynamic' && e.spec?.dynamic?.rule === 'gap' ? ' by the gap rule' : ''})`,
    `Progress:    ${done(e)}/${e.maxTrialCount} done: ${c.Succeeded} succeeded, ${c.Failed} failed, ${c.EarlyStopped} early-stopped, ${c.Killed} killed; ${c.Running + c.Starting} running, ${c.Pending} pending`,
    `Best:        ${e.best ? `trial ${e.best.index}: ${e.objective.metricName}=${formatValue(e.best.value)}  ${formatParams(e.best.params)}` : 'none yet (no trial has succeeded)'}`,
    `Created:     ${age(e.createdMs, nowMs)} ago`,
  ];
  for (const i of e.ignored) lines.push(`Ignored:     ${i.field}: ${i.reason}`);
  lines.push('', 'Trials:');
  if (e.trials.length === 0) lines.push('  (none yet)');
  else {
    lines.push(formatTable(['INDEX', 'STATE', 'VALUE', 'PARAMS', 'DURATION', 'HOST'], e.trials.map((t) => [
      String(t.index), t.state, formatValue(t.value), formatParams(t.params), trialDuration(t, nowMs), t.hostname ?? '',
    ])).trimEnd());
  }
  const points = e.trials.filter((t) => t.state === 'Succeeded' && t.value !== undefined).map((t) => ({ x: t.index, y: t.value! }));
  if (points.length > 0) {
    const chart = asciiChart(points, bestSoFar(points, e.objective.type), {
      width: opts.chartWidth ?? 60, height: opts.chartHeight ?? 10, colour: opts.colour,
      yLabel: e.objective.metricName, xLabel: 'trial', pointLabel: 'trial value', lineLabel: 'best so far',
    });
    lines.push('', chart.trimEnd());
  }
  return `${lines.join('\n')}\n`;
}

/** `cairn tune best`: the best trial's parameters and metrics. */
export function describeBest(e: ExperimentView, t: TrialView): string {
  const lines = [`Trial:       ${t.index} (${t.name})`, `${e.objective.metricName}:${' '.repeat(Math.max(1, 12 - e.objective.metricName.length))}${formatValue(t.value)}`, 'Params:'];
  for (const [k, v] of Object.entries(t.params)) lines.push(`  ${k}=${formatValue(v)}`);
  lines.push('Metrics:');
  for (const [k, v] of Object.entries(t.metrics)) lines.push(`  ${k}=${formatValue(v)}`);
  return `${lines.join('\n')}\n`;
}

/** One line per ended trial, as `--wait` prints them. */
export function trialLine(e: ExperimentSummary, t: TrialView): string {
  const why = t.state !== 'Succeeded' && t.message ? ` (${t.message})` : '';
  return `trial ${t.index} ${t.state} ${e.objective.metricName}=${formatValue(t.value)} ${formatParams(t.params)}${why}`.trimEnd();
}

// ---- submit -----------------------------------------------------------------------------

/** JSON for a `.json` file or text that starts as JSON; YAML otherwise (as `cairn job submit`). */
export function contentTypeOf(file: string, text: string): string {
  return file.endsWith('.json') || /^\s*[{[]/.test(text) ? 'application/json' : 'application/yaml';
}

export interface TuneSubmitOptions extends TuneCommandOptions {
  /** An experiment file, `-` for stdin; absent when the experiment comes from flags. */
  file?: string;
  /** The document built from flags (flags.ts), when there is no file. */
  document?: unknown;
  dryRun?: boolean;
  wait?: boolean;
  /** How often --wait asks (tests shorten it). */
  pollMs?: number;
}

function readDocument(o: TuneSubmitOptions): { text: string; type: string } {
  if (o.file === undefined) return { text: JSON.stringify(o.document), type: 'application/json' };
  let text: string;
  try {
    text = readFileSync(o.file === '-' ? 0 : o.file, 'utf8');
  } catch (err) {
    throw new Error(`cannot read ${o.file === '-' ? 'stdin' : o.file}: ${(err as Error).message}`);
  }
  return { text, type: contentTypeOf(o.file, text) };
}

export function runTuneSubmit(o: TuneSubmitOptions, io: CliIo): Promise<number> {
  return withExperiments('tune submit', o, io, async (c) => {
    const { text, type } = readDocument(o);
    if (o.dryRun) {
      let doc: unknown;
      try {
        doc = type === 'application/json' ? JSON.parse(text) : parseYaml(text);
      } catch (err) {
        throw new Error(`${o.file}: not valid ${type === 'application/json' ? 'JSON' : 'YAML'}: ${(err as Error).message.split('\n')[0]}`);
      }
      io.stdout.write(`${JSON.stringify(doc, null, 2)}\n`);
      return 0;
    }
    const answer = await c.submit(text, type);
    for (const i of answer.ignored) io.stderr.write(`cairn tune submit: ignored ${i.field}: ${i.reason}\n`);
    io.stdout.write(`${answer.name}\n`);
    if (!o.wait) return 0;
    io.stderr.write(`cairn tune submit: following ${answer.name} (seed ${answer.seed}); Ctrl-C stops following, not the experiment\n`);
    return follow(c, answer.name, io, o.pollMs ?? WAIT_POLL_MS);
  });
}

/** Prints each trial as it ends, then the outcome and the best trial: 0 when it succeeded. */
export async function follow(c: ExperimentsClient, name: string, io: CliIo, pollMs: number): Promise<number> {
  const printed = new Set<number>();
  const progress = new ExperimentProgress();
  let interrupted = false;
  let wake: (() => void) | undefined;
  const dispose = io.onInterrupt(() => {
    interrupted = true;
    wake?.();
  });
  const pause = () => new Promise<void>((r) => {
    const timer = setTimeout(r, pollMs);
    wake = () => {
      clearTimeout(timer);
      r();
    };
  });
  try {
    let endedAt: number | undefined;
    let unreachable = 0;
    while (!interrupted) {
      let e: ExperimentView | undefined;
      try {
        e = await c.get(name);
        unreachable = 0;
      } catch (err) {
        // No master answering for a moment (a new leader being elected): ask again; an
        // answer that is an error (the experiment deleted) ends the wait.
        if (err instanceof MasterHttpError || ++unreachable > MAX_UNREACHABLE) throw err;
      }
      if (e) {
        // Trials starting and why the others wait, as it happens: not only each trial's end.
        for (const line of progress.lines(e)) io.stdout.write(`${line}\n`);
        const ended = e.trials.filter((t) => ENDED.has(t.state) && !printed.has(t.index)).sort((a, b) => (a.finishedMs ?? 0) - (b.finishedMs ?? 0) || a.index - b.index);
        for (const t of ended) {
          printed.add(t.index);
          io.stdout.write(`${trialLine(e, t)}\n`);
        }
        if (e.phase !== 'Running') {
          endedAt ??= Date.now();
          const running = e.trials.some((t) => t.state === 'Starting' || t.state === 'Running');
          if (!running || Date.now() - endedAt >= SETTLE_MS) {
            io.stdout.write(`experiment ${e.name} ${e.phase} (${e.reason})${e.message ? `: ${e.message}` : ''}\n`);
            io.stdout.write(e.best ? `best: ${trialLine(e, e.best)}\n` : 'best: none (no trial succeeded)\n');
            return e.phase === 'Succeeded' ? 0 : 1;
          }
        }
      }
      if (!interrupted) await pause();
    }
    io.stderr.write(`cairn tune submit: stopped following; experiment ${name} runs on (cairn tune show ${name}; cairn tune stop ${name} stops it)\n`);
    return 130;
  } finally {
    dispose();
  }
}

// ---- list, show, best -------------------------------------------------------------------

export function runTuneList(o: TuneCommandOptions & { output?: OutputFormat }, io: CliIo): Promise<number> {
  return withExperiments('tune list', o, io, async (c) => {
    const list = await c.list();
    printList(io, o.output, list, () => experimentsTable(list, Date.now(), o.output === 'wide'));
  });
}

export function runTuneShow(o: TuneCommandOptions & { name: string; output?: 'json' | 'yaml' }, io: CliIo): Promise<number> {
  return withExperiments('tune show', o, io, async (c) => {
    const e = await c.get(o.name);
    const colour = io.stdout.isTTY === true && !io.env.NO_COLOR;
    io.stdout.write(o.output ? formatObjects(o.output, e) : describeExperiment(e, Date.now(), { colour }));
  });
}

export function runTuneBest(o: TuneCommandOptions & { name: string; output?: 'json' | 'yaml' }, io: CliIo): Promise<number> {
  return withExperiments('tune best', o, io, async (c) => {
    const e = await c.get(o.name);
    if (!e.best) {
      const c2 = e.counts;
      io.stderr.write(`cairn tune best: no trial of ${e.name} has succeeded yet (${e.phase}; ${c2.Running + c2.Starting} running, ${c2.Failed} failed)\n`);
      return 1;
    }
    io.stdout.write(o.output ? formatObjects(o.output, e.best) : describeBest(e, e.best));
  });
}

// ---- stop, resume, delete ---------------------------------------------------------------

export function runTuneStop(o: TuneCommandOptions & { name: string }, io: CliIo): Promise<number> {
  return withExperiments('tune stop', o, io, async (c) => {
    await c.stop(o.name);
    io.stdout.write(`experiment ${o.name} stopped\n`);
  });
}

export function runTuneResume(o: TuneCommandOptions & { name: string } & ResumeLimits, io: CliIo): Promise<number> {
  return withExperiments('tune resume', o, io, async (c) => {
    await c.resume(o.name, { ...(o.maxTrialCount !== undefined ? { maxTrialCount: o.maxTrialCount } : {}), ...(o.maxFailedTrialCount !== undefined ? { maxFailedTrialCount: o.maxFailedTrialCount } : {}) });
    io.stdout.write(`experiment ${o.name} resumed\n`);
  });
}

export interface TuneLogsOptions extends TuneCommandOptions {
  name: string;
  index: number;
  follow: boolean;
  stream: LogStream;
}

/** A trial's log: its task's, or its job's first replica's for a distributed trial. */
export function runTuneLogs(o: TuneLogsOptions, io: CliIo): Promise<number> {
  const out = o.stream === 'stdout' ? io.stdout : io.stderr;
  return withExperiments('tune logs', o, io, async (c) => {
    const e = await c.get(o.name);
    const t = e.trials.find((x) => x.index === o.index);
    if (!t) throw new Error(`experiment ${e.name} has no trial ${o.index} (it has ${e.trials.length === 0 ? 'none yet' : `0 to ${e.trials.length - 1}`})`);
    if (!t.taskId) throw new Error(`trial ${t.index} of ${e.name} has not started yet (${t.state})`);
    const master = new MasterClient(o.masterUrl, apiClientOptions(o.masterUrl, o.tls, io));
    await printTaskLog(master, t.taskId, o.stream, o.follow, (text) => void out.write(text));
  });
}

export function runTuneDelete(o: TuneCommandOptions & { name: string }, io: CliIo): Promise<number> {
  return withExperiments('tune delete', o, io, async (c) => {
    await c.remove(o.name);
    io.stdout.write(`experiment ${o.name} deleted\n`);
  });
}
