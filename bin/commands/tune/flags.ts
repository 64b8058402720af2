// An experiment from flags, without a file: the tuning paper's command line
// (`--app-name NAME --input PATH#NAME --output PATH#NAME --files F1,F2
// --app-runner-launch-cmd CMD --app-runner-memory 5G --app-runner-cpus 3 --app-core-memory 1G
// --app-core-cpus 2 --trail-steps 100 --tuning-type bayesian --tuning-parameters FILE`) and
// Cairn's further flags, as the Katib-shaped experiment document POST /api/v1/experiments takes.
// Each value is checked here, naming the flag, before anything is sent; the parameter file
// is read and parsed by the master's own space parsers, so a bad file is refused naming
// --tuning-parameters. The master checks the document again like any other.

import { readFileSync } from 'node:fs';
import { basename } from 'node:path';
import type { Command } from 'commander';
import { CairnError } from '../../../shared/errors.ts';
import { ALGORITHM_NAMES, DYNAMIC_RULES, EARLY_STOPPING_NAMES } from '../../../shared/tuning/model.ts';
import { parseKatibParameters } from '../../../shared/tuning/space/katib-format.ts';
import { parseNniSpace } from '../../../shared/tuning/space/nni-format.ts';
import { parseLaxJson, parsePaperSpace } from '../../../shared/tuning/space/paper-format.ts';
import { paramNames } from '../../../shared/tuning/space/sample.ts';
import type { SearchSpace } from '../../../shared/tuning/space/types.ts';
import { placeholderNames } from '../../../shared/tuning/placeholders.ts';
import { isRoleName } from '../../../shared/sharing/roles.ts';
import { isClassSpelling } from '../../../shared/sharing/priority-classes.ts';
import { experimentNameOf, NAME_RULE } from '../../../shared/tuning/experiment-name.ts';

/** The paper's `--tuning-type` values, and the master's own algorithm names (it maps the former). */
export const PAPER_TUNING_TYPES = ['random-search', 'grid-search', 'bayesian'] as const;
export const TUNING_TYPES: readonly string[] = [...PAPER_TUNING_TYPES, ...ALGORITHM_NAMES];
export const SCHEDULING_POLICIES = ['fifo', 'dynamic'] as const;

/** A size: a number with an optional unit; 5G is 5 GiB, as the paper's YARN-style sizes. */
const SIZE = /^(\d+(?:\.\d+)?)\s*(b|k|kb|m|mb|g|gb|t|tb|ki|mi|gi|ti)?$/i;

/** The flags `cairn tune submit` gives, as commander collects them (strings, lists of strings). */
export interface TuneFlags {
  appName?: string;
  input?: string[];
  output?: string[];
  /** `--files F1,F2`, possibly repeated: each entry may hold several, comma-separated. */
  files?: string[];
  appRunnerLaunchCmd?: string;
  appRunnerMemory?: string;
  appRunnerCpus?: string;
  appCoreMemory?: string;
  appCoreCpus?: string;
  trailSteps?: string;
  trialSteps?: string;
  tuningType?: string;
  tuningParameters?: string;
  metric?: string;
  goal?: string;
  maximize?: boolean;
  minimize?: boolean;
  parallelism?: string;
  seed?: string;
  maxFailed?: string;
  earlyStopping?: string;
  algorithmSetting?: string[];
  earlyStoppingSetting?: string[];
  scheduling?: string;
  dynamicRule?: string;
  image?: string;
  env?: string[];
  role?: string;
  priorityClass?: string;
  /** `--trial-timeout`, in ms (commander's durationFlag parsed it). */
  trialTimeout?: number;
  gpus?: string;
}

/** The flags that build a document: none of them goes with `-f FILE`. */
export const DOCUMENT_FLAGS: readonly [keyof TuneFlags, string][] = [
  ['appName', '--app-name'], ['input', '--input'], ['output', '--output'], ['files', '--files'],
  ['appRunnerLaunchCmd', '--app-runner-launch-cmd'], ['appRunnerMemory', '--app-runner-memory'], ['appRunnerCpus', '--app-runner-cpus'],
  ['appCoreMemory', '--app-core-memory'], ['appCoreCpus', '--app-core-cpus'], ['trailSteps', '--trail-steps'], ['trialSteps', '--trial-steps'],
  ['tuningType', '--tuning-type'], ['tuningParameters', '--tuning-parameters'], ['metric', '--metric'], ['goal', '--goal'],
  ['maximize', '--maximize'], ['minimize', '--minimize'], ['parallelism', '--parallelism'], ['seed', '--seed'], ['maxFailed', '--max-failed'],
  ['earlyStopping', '--early-stopping'], ['algorithmSetting', '--algorithm-setting'], ['earlyStoppingSetting', '--early-stopping-setting'],
  ['scheduling', '--scheduling'], ['dynamicRule', '--dynamic-rule'], ['image', '--image'], ['env', '--env'], ['role', '--role'], ['priorityClass', '--priority-class'], ['trialTimeout', '--trial-timeout'], ['gpus', '--gpus'],
];

/** The flags given that build a document (for refusing them next to `-f`). */
export function documentFlagsGiven(flags: TuneFlags): string[] {
  return DOCUMENT_FLAGS.filter(([key]) => flags[key] !== undefined).map(([, flag]) => flag);
}

/** Registers the document flags on `command` (values are checked by experimentFromFlags). */
export function addTuneSubmitFlags(command: Command, durationParser: (value: string) => number): Command {
  const collect = (v: string, prev: string[] = []) => [...prev, v];
  return command
    .option('--app-name <name>', "the experiment's name: 1-48 letters, digits and '-', in any case (its DNS name is in lower case, e.g. testAutoML is testautoml) (default: tune- and the time)")
    .option('--input <path#name>', 'a path every agent has, linked into each trial\'s sandbox as NAME (repeatable), e.g. /data/mnist#mnist', collect)
    .option('--output <path#name>', 'a path every agent has: each trial writes NAME in its sandbox to a directory of its own under PATH (repeatable)', collect)
    .option('--files <f1,f2>', 'local files shipped to every trial, written into its sandbox (comma-separated; repeatable)', collect)
    .option('--app-runner-launch-cmd <cmd>', 'the shell command each trial runs; ${name} stands for a parameter\'s value (required without -f)')
    .option('--app-runner-memory <size>', 'memory per trial, e.g. 512M, 5G, 5Gi (default 512M)')
    .option('--app-runner-cpus <n>', 'cpus per trial (default 1)')
    .option('--app-core-memory <size>', "the paper's App Core memory (checked, then reported ignored: the search runs in the leading master)")
    .option('--app-core-cpus <n>', "the paper's App Core cpus (checked, then reported ignored)")
    .option('--trail-steps <n>', 'trials to run in all, the paper\'s spelling (default 12)')
    .option('--trial-steps <n>', 'the same as --trail-steps')
    .option('--tuning-type <type>', `the search: ${TUNING_TYPES.join(', ')} (default random)`)
    .option('--tuning-parameters <file>', "the search space: the paper's parameter file ({\"parameters\": [...]}) or an NNI search space (JSON)")
    .option('--metric <name>', 'the metric trials print (name=value) that the search optimises (default accuracy)')
    .option('--goal <value>', 'stop with success once a trial reaches this value')
    .option('--maximize', 'a higher value is better (the default)')
    .option('--minimize', 'a lower value is better')
    .option('--parallelism <n>', 'trials run at once (default 1)')
    .option('--seed <n>', 'seed of the search: the same seed and results propose the same trials (default: a fresh one, which cairn tune show shows)')
    .option('--max-failed <n>', 'failed trials after which the experiment fails (default 3)')
    .option('--early-stopping <name>', `stop unpromising trials early: ${EARLY_STOPPING_NAMES.join(', ')}`)
    .option('--algorithm-setting <k=v>', 'a setting of the search algorithm (repeatable), e.g. n_startup_trials=5', collect)
    .option('--early-stopping-setting <k=v>', 'a setting of the early stopping (repeatable), e.g. min_trials_required=3', collect)
    .option('--scheduling <policy>', `how it shares the cluster: ${SCHEDULING_POLICIES.join(', ')} (default fifo)`)
    .option('--dynamic-rule <rule>', `with --scheduling dynamic, what lowers its priority: stagnation (no better best for a few trials; the default) or gap (the paper's Algorithm 1: the smallest gap among the best results against a threshold)`)
    .option('--image <image>', 'run each trial in a Docker container of this image')
    .option('--env <name=value>', 'an environment variable of every trial (repeatable)', collect)
    .option('--role <role>', 'the role trials run in (default *)')
    .option('--priority-class <name>', "the cluster's priority class of its trials, in any case, e.g. production or PTR (an alias of research) (default: the cluster's default class)")
    .option('--trial-timeout <duration>', 'kill a trial running longer, e.g. 30m (it counts as failed)', durationParser)
    .option('--gpus <n>', 'GPUs per trial (default 0)');
}

export function badFlag(flag: string, message: string): CairnError {
  return new CairnError('CAIRN_BAD_FLAG', message, flag);
}

function wholeNumber(value: string | undefined, flag: string, min: number): number | undefined {
  if (value === undefined) return undefined;
  const n = /^\s*\d+\s*$/.test(value) ? Number(value) : NaN;
  if (!Number.isSafeInteger(n) || n < min) throw badFlag(flag, `must be a whole number of ${min} or more, not '${value}'`);
  return n;
}

function cpus(value: string | undefined, flag: string): number | undefined {
  if (value === undefined) return undefined;
  const n = /^\s*(\d+(\.\d+)?|\.\d+)\s*$/.test(value) ? Number(value) : NaN;
  if (!Number.isFinite(n) || n <= 0) throw badFlag(flag, `must be a number of cpus greater than 0, not '${value}'`);
  return n;
}

/**
 * A size as the master reads it: a number and an optional unit, B, K(B), M(B), G(B), T(B)
 * (binary: 5G is 5 GiB) or Ki, Mi, Gi, Ti, in any case. Returned as it is sent: the number
 * and the unit, Kubernetes' units spelled as the master matches them (5gi → 5Gi).
 */
export function sizeFlag(value: string | undefined, flag: string): string | undefined {
  if (value === undefined) return undefined;
  const m = SIZE.exec(value.trim());
  if (!m || !(Number(m[1]) > 0)) {
    throw badFlag(flag, `'${value}' is not a size: a number greater than 0 with an optional unit (B, K, KB, M, MB, G, GB, T, TB, Ki, Mi, Gi, Ti), e.g. 512M or 5G`);
  }
  const unit = m[2] ?? '';
  const canonical = /i$/i.test(unit) ? `${unit[0].toUpperCase()}i` : unit.toUpperCase();
  return `${m[1]}${canonical}`;
}

function keyValue(value: string, flag: string, key: RegExp, what: string): [string, string] {
  const eq = value.indexOf('=');
  const k = eq > 0 ? value.slice(0, eq) : '';
  if (!key.test(k)) throw badFlag(flag, `'${value}' is not ${what}=VALUE`);
  return [k, value.slice(eq + 1)];
}

function settings(values: string[] | undefined, flag: string): { name: string; value: string }[] {
  return (values ?? []).map((v) => {
    const [name, value] = keyValue(v, flag, /^[A-Za-z_][\w.-]*$/, 'NAME');
    return { name, value };
  });
}

function pathMapping(value: string, flag: string): string {
  const cut = value.lastIndexOf('#');
  const path = cut === -1 ? value : value.slice(0, cut);
  const name = cut === -1 ? path.split('/').filter(Boolean).at(-1) : value.slice(cut + 1);
  if (!path.startsWith('/')) throw badFlag(flag, `'${value}' needs an absolute path on the agents, as /data/mnist#mnist`);
  if (name === undefined || !/^[A-Za-z0-9_.-]+$/.test(name) || name === '.' || name === '..') {
    throw badFlag(flag, `'${value}' needs a plain name for the sandbox after '#', as /data/mnist#mnist`);
  }
  return value;
}

function readLocal(path: string, flag: string): Buffer {
  try {
    return readFileSync(path);
  } catch (err) {
    const code = (err as { code?: string }).code;
    const why = code === 'ENOENT' ? 'no such file' : code === 'EISDIR' ? 'it is a directory' : code === 'EACCES' ? 'permission denied' : (err as Error).message;
    throw badFlag(flag, `cannot read ${path}: ${why}`);
  }
}

/** `--files`: every file read and shipped as base64 under its own name. */
function shippedFiles(values: string[] | undefined): { name: string; base64: string }[] {
  const paths = (values ?? []).flatMap((v) => v.split(',')).map((p) => p.trim()).filter((p) => p !== '');
  const seen = new Set<string>();
  return paths.map((path) => {
    const name = basename(path);
    if (!/^[A-Za-z0-9_.-]+$/.test(name) || name === '.' || name === '..') throw badFlag('--files', `${path}: '${name}' is not a plain file name (letters, digits, '_', '.' and '-')`);
    if (seen.has(name)) throw badFlag('--files', `two files are named ${name}: each is written into the sandbox under its own name`);
    seen.add(name);
    return { name, base64: readLocal(path, '--files').toString('base64') };
  });
}

/** The parameter file's part of the spec, and the space it describes (for checking the command). */
export interface ParameterFile {
  field: { parameters: string | unknown[] } | { searchSpace: Record<string, unknown> };
  space: SearchSpace;
}

function isObj(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** A space parser's refusal, as --tuning-parameters' (the file and the field in it). */
function inFile<T>(file: string, fn: () => T): T {
  try {
    return fn();
  } catch (err) {
    if (err instanceof CairnError) throw badFlag('--tuning-parameters', `${file}: ${err.message.replace(/^document: /, '')}`);
    throw err;
  }
}

/**
 * `--tuning-parameters FILE`: a top-level "parameters" key is the paper's file (sent as its
 * text, trailing commas and all: the master parses it), or Katib's parameter list (sent as
 * the list); anything else is an NNI search space, sent as spec.searchSpace.
 */
export function parameterFile(file: string): ParameterFile {
  const text = readLocal(file, '--tuning-parameters').toString('utf8');
  const doc = inFile(file, () => parseLaxJson(text));
  if (!isObj(doc)) throw badFlag('--tuning-parameters', `${file}: must be a JSON object, the paper's {"parameters": [...]} or an NNI search space`);
  const p = doc.parameters;
  const nniNamedParameters = isObj(p) && '_type' in p;
  if (p !== undefined && !nniNamedParameters) {
    const katib = Array.isArray(p) && p.length > 0 && p.every((x) => isObj(x) && 'parameterType' in x);
    if (katib) return { field: { parameters: p }, space: inFile(file, () => parseKatibParameters(p, 'parameters')) };
    return { field: { parameters: text }, space: inFile(file, () => parsePaperSpace(text)) };
  }
  return { field: { searchSpace: doc }, space: inFile(file, () => parseNniSpace(doc)) };
}

/**
 * The experiment document for `flags`. Throws CAIRN_BAD_FLAG naming the flag. `nowMs` makes
 * the default name (`tune-<time in base 36>`).
 */
export function experimentFromFlags(flags: TuneFlags, nowMs: number = Date.now()): Record<string, unknown> {
  // Sent as given: the master maps it to a DNS label (testAutoML is testautoml) and keeps it to show.
  const name = flags.appName ?? `tune-${Math.max(0, Math.floor(nowMs)).toString(36)}`;
  if (experimentNameOf(name) === undefined) throw badFlag('--app-name', `'${name}' is not an experiment name: ${NAME_RULE}`);
  const command = flags.appRunnerLaunchCmd;
  if (command === undefined || command.trim() === '') {
    throw badFlag('--app-runner-launch-cmd', "is required: the command each trial runs, with ${name} for a parameter's value (or give an experiment file with -f)");
  }
  if (flags.tuningParameters === undefined || flags.tuningParameters.trim() === '') {
    throw badFlag('--tuning-parameters', "is required: the paper's parameter file or an NNI search space (or give an experiment file with -f)");
  }

  // Numbers first, so a bad one is refused before any file is read.
  const trailSteps = wholeNumber(flags.trailSteps, '--trail-steps', 1);
  const trialSteps = wholeNumber(flags.trialSteps, '--trial-steps', 1);
  if (trailSteps !== undefined && trialSteps !== undefined && trailSteps !== trialSteps) {
    throw badFlag('--trial-steps', `is the same as --trail-steps: give one (${trialSteps} and ${trailSteps})`);
  }
  const maxTrialCount = trailSteps ?? trialSteps;
  const parallelTrialCount = wholeNumber(flags.parallelism ?? '1', '--parallelism', 1)!;
  const maxFailedTrialCount = wholeNumber(flags.maxFailed, '--max-failed', 0);
  const seed = wholeNumber(flags.seed, '--seed', 0);
  const gpus = wholeNumber(flags.gpus, '--gpus', 0);
  const runnerCpus = cpus(flags.appRunnerCpus, '--app-runner-cpus');
  const runnerMemory = sizeFlag(flags.appRunnerMemory, '--app-runner-memory');
  const coreCpus = cpus(flags.appCoreCpus, '--app-core-cpus');
  const coreMemory = sizeFlag(flags.appCoreMemory, '--app-core-memory');

  if (flags.maximize && flags.minimize) throw badFlag('--minimize', 'goes against --maximize: give one');
  const metric = flags.metric ?? 'accuracy';
  if (!/^[\w|-]+$/.test(metric)) throw badFlag('--metric', `'${metric}' is not a metric name (letters, digits, _, | or -), as the trials print it: accuracy=0.93`);
  let goal: number | undefined;
  if (flags.goal !== undefined) {
    goal = /^\s*[+-]?(\d+(\.\d+)?|\.\d+)([eE][+-]?\d+)?\s*$/.test(flags.goal) ? Number(flags.goal) : NaN;
    if (!Number.isFinite(goal)) throw badFlag('--goal', `must be a number, not '${flags.goal}'`);
  }

  const tuningType = flags.tuningType ?? 'random';
  if (!TUNING_TYPES.includes(tuningType.toLowerCase())) throw badFlag('--tuning-type', `must be one of ${TUNING_TYPES.join(', ')}, not '${tuningType}'`);
  const algorithmSettings = settings(flags.algorithmSetting, '--algorithm-setting');
  const earlySettings = settings(flags.earlyStoppingSetting, '--early-stopping-setting');
  if (flags.earlyStopping !== undefined && !(EARLY_STOPPING_NAMES as readonly string[]).includes(flags.earlyStopping.toLowerCase())) {
    throw badFlag('--early-stopping', `must be one of ${EARLY_STOPPING_NAMES.join(', ')}, not '${flags.earlyStopping}'`);
  }
  if (flags.earlyStopping === undefined && earlySettings.length > 0) throw badFlag('--early-stopping-setting', 'needs --early-stopping: the early stopping it sets');
  if (flags.scheduling !== undefined && !(SCHEDULING_POLICIES as readonly string[]).includes(flags.scheduling)) {
    throw badFlag('--scheduling', `must be one of ${SCHEDULING_POLICIES.join(', ')}, not '${flags.scheduling}'`);
  }
  if (flags.dynamicRule !== undefined && !(DYNAMIC_RULES as readonly string[]).includes(flags.dynamicRule)) {
    throw badFlag('--dynamic-rule', `must be one of ${DYNAMIC_RULES.join(', ')}, not '${flags.dynamicRule}'`);
  }
  if (flags.dynamicRule !== undefined && flags.scheduling !== 'dynamic') throw badFlag('--dynamic-rule', 'needs --scheduling dynamic: the strategy whose rule it picks');
  if (flags.role !== undefined && !isRoleName(flags.role)) {
    throw badFlag('--role', `'${flags.role}' is not a role: '*' or letters, digits, '_', '-', '.' and '/'`);
  }
  // Which classes exist is the master's to say; it refuses one it does not have.
  if (flags.priorityClass !== undefined && !isClassSpelling(flags.priorityClass)) {
    throw badFlag('--priority-class', `'${flags.priorityClass}' is not a class name, e.g. production or PTR`);
  }
  if (flags.image !== undefined && !/^[A-Za-z0-9][A-Za-z0-9._/:@-]*$/.test(flags.image)) {
    throw badFlag('--image', `'${flags.image}' is not an image reference, e.g. python:3.12-slim`);
  }
  const env: Record<string, string> = {};
  for (const v of flags.env ?? []) {
    const [k, x] = keyValue(v, '--env', /^[A-Za-z_][A-Za-z0-9_]*$/, 'NAME');
    env[k] = x;
  }
  const inputs = (flags.input ?? []).map((v) => pathMapping(v, '--input'));
  const outputs = (flags.output ?? []).map((v) => pathMapping(v, '--output'));
  let timeoutSeconds: number | undefined;
  if (flags.trialTimeout !== undefined) {
    if (!Number.isFinite(flags.trialTimeout) || flags.trialTimeout <= 0) throw badFlag('--trial-timeout', 'must be a duration greater than 0, e.g. 30m');
    timeoutSeconds = Math.ceil(flags.trialTimeout / 1000);
  }

  const files = shippedFiles(flags.files);
  const params = parameterFile(flags.tuningParameters);
  const names = paramNames(params.space);
  for (const ref of placeholderNames(command)) {
    if (!names.includes(ref)) throw badFlag('--app-runner-launch-cmd', `refers to \${${ref}}, which is no parameter of ${flags.tuningParameters} (parameters: ${names.join(', ')})`);
  }

  const resources: Record<string, unknown> = {
    ...(runnerCpus !== undefined ? { cpus: runnerCpus } : {}),
    ...(runnerMemory !== undefined ? { memory: runnerMemory } : {}),
    ...(gpus !== undefined ? { gpus } : {}),
  };
  const trialTemplate: Record<string, unknown> = {
    command,
    ...(flags.image !== undefined ? { image: flags.image } : {}),
    ...(Object.keys(resources).length > 0 ? { resources } : {}),
    ...(Object.keys(env).length > 0 ? { env } : {}),
    ...(inputs.length > 0 ? { inputs } : {}),
    ...(outputs.length > 0 ? { outputs } : {}),
    ...(files.length > 0 ? { files } : {}),
    ...(timeoutSeconds !== undefined ? { timeoutSeconds } : {}),
  };
  const spec: Record<string, unknown> = {
    objective: { type: flags.minimize ? 'minimize' : 'maximize', objectiveMetricName: metric, ...(goal !== undefined ? { goal } : {}) },
    algorithm: { algorithmName: tuningType, ...(algorithmSettings.length > 0 ? { algorithmSettings } : {}) },
    ...(flags.earlyStopping !== undefined ? { earlyStopping: { algorithmName: flags.earlyStopping, ...(earlySettings.length > 0 ? { algorithmSettings: earlySettings } : {}) } } : {}),
    parallelTrialCount,
    ...(maxTrialCount !== undefined ? { maxTrialCount } : {}),
    ...(maxFailedTrialCount !== undefined ? { maxFailedTrialCount } : {}),
    ...params.field,
    ...(seed !== undefined ? { seed } : {}),
    ...(flags.role !== undefined ? { role: flags.role } : {}),
    ...(flags.priorityClass !== undefined ? { priorityClassName: flags.priorityClass } : {}),
    ...(flags.scheduling !== undefined ? { scheduling: { policy: flags.scheduling, ...(flags.dynamicRule !== undefined ? { rule: flags.dynamicRule } : {}) } } : {}),
    ...(coreCpus !== undefined || coreMemory !== undefined ? { appCore: { ...(coreCpus !== undefined ? { cpus: coreCpus } : {}), ...(coreMemory !== undefined ? { memory: coreMemory } : {}) } } : {}),
    trialTemplate,
  };
  return { kind: 'Experiment', metadata: { name }, spec };
}
