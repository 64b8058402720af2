// A job from flags, without a file: Cairn's own job document built from
// `cairn job submit --kind pslite --num-servers 2 --num-workers 4 [--server-cmd CMD] -- CMD ARGS`
// (dmlc-submit's shape: every role runs the same program unless the servers' differs) or
// `--kind pytorch|tensorflow|batch --replicas N [--ps N] [--cpus C --mem M --gpus G] [--name NAME] -- CMD ARGS`.
// Each flag's value is checked here, naming the flag, so the document is one the master
// accepts; the master checks it again like any other job document.

import type { Command } from 'commander';
import { CairnError } from '../../../shared/errors.ts';
import { JOB_KINDS, type JobKind } from '../../../shared/jobs/model.ts';
import { MAX_JOB_NAME, MAX_REPLICAS, validateJobSpec } from '../../../shared/jobs/spec-validate.ts';
import { isRoleName } from '../../../shared/sharing/roles.ts';
import { isClassSpelling } from '../../../shared/sharing/priority-classes.ts';
import { durationProblem, parseDurationMs } from '../../../shared/duration.ts';

/** The flags `cairn job submit` gives; values as commander parsed them (numbers) or as typed (strings). */
export interface JobFlags {
  kind?: string;
  numServers?: number | string;
  numWorkers?: number | string;
  serverCmd?: string;
  replicas?: number | string;
  ps?: number | string;
  cpus?: number | string;
  mem?: number | string;
  gpus?: number | string;
  name?: string;
  image?: string;
  /** `--env NAME=VALUE`, repeated: pairs in order (as ../common/flags.ts envFlag collects them), or an object. */
  env?: [string, string][] | Record<string, string>;
  role?: string;
  priorityClass?: string;
  /** `--restart-backoff INITIAL[,FACTOR[,MAX[,RESET-AFTER]]]`, e.g. `10s,2,5m,10m`. */
  restartBackoff?: string;
}

/** The options to register on `cairn job submit`, with their help. */
export const JOB_SUBMIT_FLAGS: readonly { flags: string; description: string }[] = [
  { flags: '--kind <kind>', description: `build the job from flags: its kind (${JOB_KINDS.join(', ')})` },
  { flags: '--num-servers <n>', description: 'pslite: servers (default 1)' },
  { flags: '--num-workers <n>', description: 'pslite: workers (default 1)' },
  { flags: '--server-cmd <cmd>', description: 'pslite: what the scheduler and the servers run (default: the command after --)' },
  { flags: '--replicas <n>', description: 'pytorch: ranks in all, the first is the master; tensorflow: workers; batch: indexed workers (default 1)' },
  { flags: '--ps <n>', description: 'tensorflow: parameter servers (default 0)' },
  { flags: '--cpus <n>', description: 'cpus per replica (default 1)' },
  { flags: '--mem <mib>', description: 'memory per replica, MiB (default 512)' },
  { flags: '--gpus <n>', description: 'GPUs per replica (default 0)' },
  { flags: '--name <name>', description: `the job's name, a DNS label of at most ${MAX_JOB_NAME} (default: the kind and the time)` },
  { flags: '--image <image>', description: 'run each replica in a Docker container of this image' },
  { flags: '--env <name=value>', description: 'an environment variable of every replica (repeatable)' },
  { flags: '--role <role>', description: "the role its tasks run in, e.g. team/alice (default: '*')" },
  { flags: '--priority-class <name>', description: "the cluster's priority class, in any case, e.g. production or PTR (an alias of research) (default: the cluster's default class)" },
  { flags: '--restart-backoff <spec>', description: "the wait before a replica restarts: INITIAL[,FACTOR[,MAX[,RESET-AFTER]]], e.g. 10s,2,5m,10m (default: the master's, 10s,2,5m,10m)" },
];

/**
 * `--restart-backoff`'s value as the document's `restartBackoff` (seconds): the first wait, how
 * much longer each next one is, the longest, and how long a stable run lasts. Parts left out
 * take Kubernetes' values (the master's check fills them the same way).
 */
export function restartBackoffFromFlag(value: string): Record<string, number> {
  const parts = value.split(',').map((p) => p.trim());
  const usage = `'${value}' is not INITIAL[,FACTOR[,MAX[,RESET-AFTER]]], e.g. 10s,2,5m,10m`;
  if (parts.length > 4 || parts.some((p) => p === '')) throw badFlag('--restart-backoff', usage);
  const seconds = (p: string, what: string): number => {
    const ms = parseDurationMs(p);
    if (ms === undefined && p !== '0') throw badFlag('--restart-backoff', `${what} '${p}': ${durationProblem(p)} (${usage})`);
    return (ms ?? 0) / 1000;
  };
  const out: Record<string, number> = { initialSeconds: seconds(parts[0]!, 'the first wait') };
  if (parts[1] !== undefined) {
    const f = Number(parts[1]);
    if (!/^\d+(\.\d+)?$/.test(parts[1]) || f < 1) throw badFlag('--restart-backoff', `the factor '${parts[1]}' must be a number of 1 or more (${usage})`);
    out.factor = f;
  }
  if (parts[2] !== undefined) out.maxSeconds = seconds(parts[2], 'the longest wait');
  if (parts[3] !== undefined) out.resetAfterSeconds = seconds(parts[3], 'the stable run');
  return out;
}

/** Registers JOB_SUBMIT_FLAGS on `command` (values are checked by jobDocumentFromFlags). */
export function addJobSubmitFlags(command: Command): Command {
  for (const { flags, description } of JOB_SUBMIT_FLAGS) {
    if (flags.startsWith('--env')) command.option(flags, description, (v: string, prev: [string, string][] = []) => [...prev, splitEnv(v)]);
    else command.option(flags, description);
  }
  return command;
}

function badFlag(flag: string, message: string): CairnError {
  return new CairnError('CAIRN_BAD_FLAG', message, flag);
}

function splitEnv(value: string): [string, string] {
  const eq = value.indexOf('=');
  if (eq <= 0) throw badFlag('--env', `'${value}' is not NAME=VALUE`);
  return [value.slice(0, eq), value.slice(eq + 1)];
}

function count(value: number | string | undefined, flag: string, min: number, fallback: number): number {
  if (value === undefined) return fallback;
  const n = typeof value === 'number' ? value : /^\s*\d+\s*$/.test(value) ? Number(value) : NaN;
  if (!Number.isInteger(n) || n < min || n > MAX_REPLICAS) throw badFlag(flag, `must be a whole number from ${min} to ${MAX_REPLICAS}, not ${String(value)}`);
  return n;
}

function amount(value: number | string | undefined, flag: string, opts: { positive: boolean; integer?: boolean }): number | undefined {
  if (value === undefined) return undefined;
  const n = typeof value === 'number' ? value : /^\s*(\d+(\.\d+)?|\.\d+)\s*$/.test(value) ? Number(value) : NaN;
  const ok = Number.isFinite(n) && (opts.positive ? n > 0 : n >= 0) && (!opts.integer || Number.isInteger(n));
  if (!ok) throw badFlag(flag, `must be ${opts.integer ? 'a whole number' : 'a number'} ${opts.positive ? 'greater than 0' : 'of 0 or more'}, not ${String(value)}`);
  return n;
}

/** One argument runs through `sh -c` (as cairn run); several are the program and its arguments. */
function commandOf(argv: readonly string[]): string | string[] {
  return argv.length === 1 ? argv[0] : [...argv];
}

/** Flags that only some kinds take: the flag, and the kinds. */
const KIND_ONLY: [keyof JobFlags, string, readonly JobKind[]][] = [
  ['numServers', '--num-servers', ['pslite']],
  ['numWorkers', '--num-workers', ['pslite']],
  ['serverCmd', '--server-cmd', ['pslite']],
  ['replicas', '--replicas', ['pytorch', 'tensorflow', 'batch']],
  ['ps', '--ps', ['tensorflow']],
];

/**
 * Cairn's JSON job document for `flags` and the command after `--`. Throws CAIRN_BAD_FLAG
 * naming the flag. `nowMs` makes the default name (`<kind>-<time in base 36>`).
 */
export function jobDocumentFromFlags(flags: JobFlags, command: readonly string[], nowMs: number = Date.now()): Record<string, unknown> {
  const kind = flags.kind;
  if (kind === undefined || !(JOB_KINDS as readonly string[]).includes(kind)) {
    throw badFlag('--kind', `must be one of ${JOB_KINDS.join(', ')}${kind === undefined ? '' : `, not '${kind}'`}`);
  }
  const jobKind = kind as JobKind;
  for (const [key, flag, kinds] of KIND_ONLY) {
    if (flags[key] !== undefined && !kinds.includes(jobKind)) {
      throw badFlag(flag, `is for ${kinds.join(' and ')} jobs, not ${kind}${jobKind === 'pslite' && key === 'replicas' ? ' (use --num-servers and --num-workers)' : ''}`);
    }
  }
  if (command.length === 0 || command[0].trim() === '') throw badFlag('command', 'is required after --: what every replica runs, e.g. -- python3 train.py');

  const name = flags.name ?? `${kind}-${Math.max(0, Math.floor(nowMs)).toString(36)}`;
  if (name.length > MAX_JOB_NAME || !/^[a-z]([-a-z0-9]*[a-z0-9])?$/.test(name)) {
    throw badFlag('--name', `'${name}' is not a job name: at most ${MAX_JOB_NAME} lower-case letters, digits and '-', starting with a letter`);
  }

  const template: Record<string, unknown> = { command: commandOf(command) };
  const cpus = amount(flags.cpus, '--cpus', { positive: true });
  const mem = amount(flags.mem, '--mem', { positive: true });
  const gpus = amount(flags.gpus, '--gpus', { positive: false, integer: true });
  if (cpus !== undefined) template.cpus = cpus;
  if (mem !== undefined) template.mem = mem;
  if (gpus !== undefined) template.gpus = gpus;
  if (flags.image !== undefined) {
    if (!/^[A-Za-z0-9][A-Za-z0-9._/:@-]*$/.test(flags.image)) throw badFlag('--image', `'${flags.image}' is not an image reference, e.g. python:3.12-slim`);
    template.image = flags.image;
  }
  if (flags.env !== undefined) {
    const pairs = Array.isArray(flags.env) ? flags.env : Object.entries(flags.env);
    const env: Record<string, string> = {};
    for (const [k, v] of pairs) {
      if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(k)) throw badFlag('--env', `'${k}' is not a variable name`);
      env[k] = v;
    }
    template.env = env;
  }
  const group = (groupName: string, replicas: number, tpl = template) => ({ name: groupName, replicas, template: tpl });

  let groups: Record<string, unknown>[];
  switch (jobKind) {
    case 'pslite': {
      const servers = count(flags.numServers, '--num-servers', 1, 1);
      const workers = count(flags.numWorkers, '--num-workers', 1, 1);
      let serverTemplate = template;
      if (flags.serverCmd !== undefined) {
        if (flags.serverCmd.trim() === '') throw badFlag('--server-cmd', 'must not be empty');
        serverTemplate = { ...template, command: flags.serverCmd };
      }
      groups = [group('scheduler', 1, serverTemplate), group('server', servers, serverTemplate), group('worker', workers)];
      break;
    }
    case 'pytorch': {
      const ranks = count(flags.replicas, '--replicas', 1, 1);
      groups = [group('master', 1), ...(ranks > 1 ? [group('worker', ranks - 1)] : [])];
      break;
    }
    case 'tensorflow': {
      const ps = count(flags.ps, '--ps', 0, 0);
      groups = [...(ps > 0 ? [group('ps', ps)] : []), group('worker', count(flags.replicas, '--replicas', 1, 1))];
      break;
    }
    case 'batch':
      groups = [group('worker', count(flags.replicas, '--replicas', 1, 1))];
      break;
  }
  const doc: Record<string, unknown> = { name, kind, groups };
  if (flags.role !== undefined) {
    if (!isRoleName(flags.role)) throw badFlag('--role', `'${flags.role}' is not a role name, e.g. team/alice`);
    doc.role = flags.role;
  }
  if (flags.priorityClass !== undefined) {
    // Which classes exist is the master's to say; it refuses one it does not have.
    if (!isClassSpelling(flags.priorityClass)) throw badFlag('--priority-class', `'${flags.priorityClass}' is not a class name, e.g. production or PTR`);
    doc.priorityClassName = flags.priorityClass;
  }
  if (flags.restartBackoff !== undefined) doc.restartBackoff = restartBackoffFromFlag(flags.restartBackoff);
  // The flags' checks above leave nothing for this to refuse; it is here so that a rule added
  // to the job format later is met at the command line, not only by the master.
  try {
    validateJobSpec(doc);
  } catch (err) {
    if (err instanceof CairnError) throw badFlag(err.field?.startsWith('restartBackoff') ? '--restart-backoff' : '--kind', err.message);
    throw err;
  }
  return doc;
}
