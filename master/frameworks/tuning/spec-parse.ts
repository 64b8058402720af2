// An experiment document (JSON or YAML) to a checked ExperimentSpec and the fields Cairn read
// but cannot honour. The shape is Katib's Experiment — `metadata.name`, then under `spec`:
// objective, algorithm, earlyStopping, parallelTrialCount, maxTrialCount,
// maxFailedTrialCount, parameters, resumePolicy — with a trial template that is Katib's own
// (`trialSpec`, `trialParameters`, `primaryContainerName`: katib-trial.ts) or Cairn's, run
// without Kubernetes (`trialTemplate.command` and its resources), and a few fields of Cairn's own: `searchSpace`
// (NNI's format), `seed`, `role`, `scheduling`. `parameters` may also be the tuning paper's
// list (`{name, type: bound|number, value}`). Everything refused names its field; nothing
// is half-taken. Pure.

import { parse as parseYaml, YAMLParseError } from 'yaml';
import { badRequest, CairnError } from '../../../shared/errors.ts';
import { ALGORITHM_ALIASES, EARLY_STOPPING_ALIASES, makeAlgorithm, makeEarlyStopper } from './algorithm-catalog.ts';
import type { AlgorithmSettings } from './algorithms/types.ts';
import { GAP_DEFAULTS } from './dynamic-priority.ts';
import {
  ALGORITHM_NAMES, DYNAMIC_RULES, EARLY_STOPPING_NAMES, type AlgorithmName, type DynamicRule, type EarlyStoppingName, type ExperimentSpec,
  type IgnoredField, type PathMapping, type ResumePolicy, type SchedulingPolicy, type ShippedFile, type TrialTemplate, RESUME_POLICIES,
} from '../../../shared/tuning/model.ts';
import { isKatibTrialTemplate, katibTrialOf } from './katib-trial.ts';
import { parseKatibParameters } from '../../../shared/tuning/space/katib-format.ts';
import { parseNniSpace } from '../../../shared/tuning/space/nni-format.ts';
import { parsePaperSpace } from '../../../shared/tuning/space/paper-format.ts';
import { paramNames, sampleAssignment } from '../../../shared/tuning/space/sample.ts';
import { SeededRandom } from '../../../shared/random.ts';
import { jobPlaceholderNames, trialJobSpec } from './trial-job.ts';
import type { SearchSpace } from '../../../shared/tuning/space/types.ts';
import { placeholderNames } from '../../../shared/tuning/placeholders.ts';
import { parseCpus, parseSizeMiB } from '../../../shared/sizes.ts';
import { isRoleName } from '../../../shared/sharing/roles.ts';
import { isClassSpelling } from '../../../shared/sharing/priority-classes.ts';
import { experimentNameOf, NAME_RULE } from '../../../shared/tuning/experiment-name.ts';
import { hostPathProblem } from '../../../shared/host-paths.ts';

export const MAX_DOCUMENT_CHARS = 1024 * 1024;
/** Each trial is a replicated record kept with its experiment: 20 times the paper's longest search. */
export const MAX_TRIAL_COUNT = 100_000;
/** Each running trial is a task (a job's replicas, for a distributed one): a job's bound on replicas. */
export const MAX_PARALLEL_TRIALS = 10_000;
/** Shipped files travel inside every trial's command line: a Linux argument holds 128 KiB. */
export const MAX_SHIPPED_BYTES = 64 * 1024;

export interface ParsedExperiment {
  spec: ExperimentSpec;
  ignored: IgnoredField[];
}

type Obj = Record<string, unknown>;

function isObj(v: unknown): v is Obj {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** The body as a value: text (JSON or YAML) is parsed, an object is taken as it is. */
export function experimentBody(body: unknown, contentType?: string): unknown {
  if (typeof body !== 'string') return body;
  if (body.length > MAX_DOCUMENT_CHARS) throw badRequest('body', `is ${body.length} characters; an experiment has at most ${MAX_DOCUMENT_CHARS}`);
  if (body.trim() === '') throw badRequest('body', 'is empty: expected an experiment (JSON or YAML)');
  try {
    return contentType && /\bjson\b/i.test(contentType) ? (JSON.parse(body) as unknown) : (parseYaml(body) as unknown);
  } catch (err) {
    const where = err instanceof YAMLParseError && err.linePos ? ` (line ${err.linePos[0].line}, column ${err.linePos[0].col})` : '';
    throw badRequest('body', `is not valid JSON or YAML${where}: ${(err as Error).message.split('\n')[0]}`);
  }
}

export function parseExperimentDocument(body: unknown, contentType?: string, defaults: { seed: number } = { seed: 0 }): ParsedExperiment {
  const doc = experimentBody(body, contentType);
  if (!isObj(doc)) throw badRequest('body', 'must be an object: an experiment with metadata.name and spec');
  const ignored: IgnoredField[] = [];
  for (const k of Object.keys(doc)) {
    if (!['apiVersion', 'kind', 'metadata', 'spec'].includes(k)) ignored.push({ field: k, reason: 'not a field of an experiment' });
  }
  if (doc.kind !== undefined && doc.kind !== 'Experiment') throw badRequest('kind', `must be Experiment, got '${String(doc.kind)}'`);
  const meta = isObj(doc.metadata) ? doc.metadata : undefined;
  const given = meta?.name;
  const name = typeof given === 'string' ? experimentNameOf(given) : undefined;
  if (name === undefined) throw badRequest('metadata.name', `must be ${NAME_RULE}, got ${JSON.stringify(given ?? null)}`);
  if (!isObj(doc.spec)) throw badRequest('spec', 'is required: the objective, algorithm, parameters and trial template');
  const s = doc.spec;
  const known = new Set(['objective', 'algorithm', 'earlyStopping', 'parallelTrialCount', 'maxTrialCount', 'maxFailedTrialCount', 'parameters', 'searchSpace', 'trialTemplate', 'seed', 'role', 'priorityClassName', 'scheduling', 'appCore', 'resumePolicy']);
  for (const k of Object.keys(s)) {
    if (known.has(k)) continue;
    const reason = k === 'metricsCollectorSpec' ? 'trials report metrics on stdout (name=value), or with the report client' : 'not a field of a Cairn experiment';
    ignored.push({ field: `spec.${k}`, reason });
  }

  const objective = objectiveOf(s.objective);
  const space = spaceOf(s);
  const algorithm = algorithmOf(s.algorithm, 'spec.algorithm', ALGORITHM_NAMES, ALGORITHM_ALIASES, 'random');
  const early = s.earlyStopping === undefined || s.earlyStopping === null ? undefined : algorithmOf(s.earlyStopping, 'spec.earlyStopping', EARLY_STOPPING_NAMES, EARLY_STOPPING_ALIASES, undefined);
  const parallelTrialCount = count(s.parallelTrialCount, 'spec.parallelTrialCount', 3, 1, MAX_PARALLEL_TRIALS);
  const maxTrialCount = count(s.maxTrialCount, 'spec.maxTrialCount', 12, 1, MAX_TRIAL_COUNT);
  const maxFailedTrialCount = count(s.maxFailedTrialCount, 'spec.maxFailedTrialCount', 3, 0, MAX_TRIAL_COUNT);
  const seed = s.seed === undefined ? defaults.seed : count(s.seed, 'spec.seed', 0, 0);
  const role = s.role === undefined ? '*' : s.role;
  if (typeof role !== 'string' || !isRoleName(role)) throw badRequest('spec.role', `is not a role name: ${JSON.stringify(role)}`);
  // Which classes exist is the master's to say: only the shape is checked here.
  const priorityClass = s.priorityClassName;
  if (priorityClass !== undefined && (typeof priorityClass !== 'string' || !isClassSpelling(priorityClass))) {
    throw badRequest('spec.priorityClassName', `is not a priority class name: ${JSON.stringify(priorityClass)}`);
  }
  const { policy, dynamic } = schedulingOf(s.scheduling);
  const trial = trialOf(s.trialTemplate, space, ignored, typeof meta?.namespace === 'string' ? meta.namespace : undefined);
  const resumePolicy = s.resumePolicy;
  if (resumePolicy !== undefined && !(RESUME_POLICIES as readonly unknown[]).includes(resumePolicy)) {
    throw badRequest('spec.resumePolicy', `must be ${RESUME_POLICIES.join(', ')}, got ${JSON.stringify(resumePolicy)}`);
  }
  appCoreOf(s.appCore, ignored);

  const spec: ExperimentSpec = {
    name, ...(given !== name ? { displayName: given as string } : {}), role, objective,
    ...(priorityClass !== undefined ? { priorityClass } : {}),
    algorithm: { name: algorithm.name as AlgorithmName, settings: algorithm.settings },
    ...(early ? { earlyStopping: { name: early.name as EarlyStoppingName, settings: early.settings } } : {}),
    space, parallelTrialCount, maxTrialCount, maxFailedTrialCount, seed, scheduling: policy, dynamic, trial,
    ...(resumePolicy !== undefined ? { resumePolicy: resumePolicy as ResumePolicy } : {}),
  };
  // Building the search checks its settings against the space (a grid of normals, a bad n_startup_trials).
  makeAlgorithm(spec.algorithm.name, space, spec.algorithm.settings, seed);
  if (spec.earlyStopping) makeEarlyStopper(spec.earlyStopping.name, spec.earlyStopping.settings, seed);
  return { spec, ignored };
}

function objectiveOf(v: unknown): ExperimentSpec['objective'] {
  if (!isObj(v)) throw badRequest('spec.objective', 'is required: {type: maximize|minimize, objectiveMetricName, goal}');
  if (v.type !== 'maximize' && v.type !== 'minimize') throw badRequest('spec.objective.type', `must be maximize or minimize, got ${JSON.stringify(v.type ?? null)}`);
  const metric = v.objectiveMetricName ?? v.metricName;
  const field = v.objectiveMetricName !== undefined ? 'spec.objective.objectiveMetricName' : 'spec.objective.metricName';
  if (typeof metric !== 'string' || !/^[\w|-]+$/.test(metric)) throw badRequest(field, `must name the metric the trials print (letters, digits, _, | or -), got ${JSON.stringify(metric ?? null)}`);
  if (v.goal !== undefined && (typeof v.goal !== 'number' || !Number.isFinite(v.goal))) throw badRequest('spec.objective.goal', `must be a number, got ${JSON.stringify(v.goal)}`);
  const extra = v.additionalMetricNames ?? [];
  if (!Array.isArray(extra) || extra.some((m) => typeof m !== 'string')) throw badRequest('spec.objective.additionalMetricNames', 'must be a list of metric names');
  return { type: v.type, metricName: metric, ...(typeof v.goal === 'number' ? { goal: v.goal } : {}), additionalMetricNames: extra as string[] };
}

function spaceOf(s: Obj): SearchSpace {
  if (s.searchSpace !== undefined && s.parameters !== undefined) throw badRequest('spec.searchSpace', 'give parameters or searchSpace, not both');
  if (s.searchSpace !== undefined) return parseNniSpace(s.searchSpace, 'spec.searchSpace');
  const p = s.parameters;
  // The paper's parameter file as its text (trailing comma and all), as `cairn tune submit` sends it.
  if (typeof p === 'string') return prefixed('spec', () => parsePaperSpace(p));
  if (!Array.isArray(p)) throw badRequest('spec.parameters', 'is required: a list of parameters (Katib\'s, or the paper\'s {name, type, value}), or spec.searchSpace in NNI\'s format');
  if (p.length === 0) throw badRequest('spec.parameters', 'is empty: an experiment searches at least one parameter');
  const paper = p.every((x) => isObj(x) && 'type' in x && !('parameterType' in x));
  return paper ? prefixed('spec', () => parsePaperSpace(JSON.stringify({ parameters: p }))) : parseKatibParameters(p, 'spec.parameters');
}

/** A parser's error with its field put under `prefix`. */
function prefixed<T>(prefix: string, fn: () => T): T {
  try {
    return fn();
  } catch (err) {
    if (err instanceof CairnError && err.field !== undefined && !err.field.startsWith(prefix)) {
      throw new CairnError(err.code, err.message.replace(`${err.field}: `, ''), `${prefix}.${err.field}`);
    }
    throw err;
  }
}

function algorithmOf(v: unknown, field: string, names: readonly string[], aliases: Readonly<Record<string, string>>, fallback: string | undefined): { name: string; settings: AlgorithmSettings } {
  if (v === undefined && fallback !== undefined) return { name: fallback, settings: {} };
  if (!isObj(v)) throw badRequest(field, 'must be {algorithmName, algorithmSettings}');
  const raw = v.algorithmName ?? v.name;
  const name = typeof raw === 'string' ? (aliases[raw.toLowerCase()] ?? raw.toLowerCase()) : undefined;
  if (name === undefined || !names.includes(name)) {
    throw badRequest(`${field}.algorithmName`, `unknown algorithm ${JSON.stringify(raw ?? null)}: known are ${[...names, ...Object.keys(aliases)].join(', ')}`);
  }
  const settings: Record<string, string> = {};
  const list = v.algorithmSettings ?? v.settings ?? [];
  if (Array.isArray(list)) {
    list.forEach((x, i) => {
      if (!isObj(x) || typeof x.name !== 'string' || (typeof x.value !== 'string' && typeof x.value !== 'number' && typeof x.value !== 'boolean')) {
        throw badRequest(`${field}.algorithmSettings[${i}]`, 'must be {name, value}');
      }
      settings[x.name] = String(x.value);
    });
  } else if (isObj(list)) {
    for (const [k, x] of Object.entries(list)) settings[k] = String(x);
  } else {
    throw badRequest(`${field}.algorithmSettings`, 'must be a list of {name, value}');
  }
  return { name, settings };
}

function count(v: unknown, field: string, fallback: number, min: number, max = Number.MAX_SAFE_INTEGER): number {
  if (v === undefined || v === null) return fallback;
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < min) throw badRequest(field, `must be an integer >= ${min}, got ${JSON.stringify(v)}`);
  if (v > max) throw badRequest(field, `must be at most ${max}, got ${v}`);
  return v;
}

function schedulingOf(v: unknown): { policy: SchedulingPolicy; dynamic: ExperimentSpec['dynamic'] } {
  const fallback = { declinesPerLevel: 2, patience: 3, maxLevel: 4, rule: 'stagnation' as DynamicRule, ...GAP_DEFAULTS };
  if (v === undefined || v === null) return { policy: 'fifo', dynamic: fallback };
  if (!isObj(v)) throw badRequest('spec.scheduling', 'must be {policy: fifo|dynamic, rule: stagnation|gap, declinesPerLevel, patience, maxLevel, topResults, warmupMultiple, gapThreshold}');
  const policy = v.policy ?? 'fifo';
  if (policy !== 'fifo' && policy !== 'dynamic') throw badRequest('spec.scheduling.policy', `must be fifo or dynamic, got ${JSON.stringify(policy)}`);
  const rule = v.rule ?? fallback.rule;
  if (!(DYNAMIC_RULES as readonly unknown[]).includes(rule)) throw badRequest('spec.scheduling.rule', `must be ${DYNAMIC_RULES.join(' or ')}, got ${JSON.stringify(rule)}`);
  const gapThreshold = v.gapThreshold ?? fallback.gapThreshold;
  if (typeof gapThreshold !== 'number' || !Number.isFinite(gapThreshold) || gapThreshold <= 0) {
    throw badRequest('spec.scheduling.gapThreshold', `must be a number > 0 (in the objective's units), got ${JSON.stringify(gapThreshold)}`);
  }
  return {
    policy,
    dynamic: {
      declinesPerLevel: count(v.declinesPerLevel, 'spec.scheduling.declinesPerLevel', fallback.declinesPerLevel, 1),
      patience: count(v.patience, 'spec.scheduling.patience', fallback.patience, 1),
      maxLevel: count(v.maxLevel, 'spec.scheduling.maxLevel', fallback.maxLevel, 1),
      rule: rule as DynamicRule,
      topResults: count(v.topResults, 'spec.scheduling.topResults', fallback.topResults, 2),
      warmupMultiple: count(v.warmupMultiple, 'spec.scheduling.warmupMultiple', fallback.warmupMultiple, 1),
      gapThreshold,
    },
  };
}

/**
 * A distributed trial: a job document checked now by the job engine's parser, with the
 * parameters of a sample trial in place of its `${name}`s, so a bad document is refused at
 * submission, naming its field under `spec.trialTemplate.job`.
 */
function jobTrialOf(v: Obj, space: SearchSpace, names: ReadonlySet<string>): TrialTemplate {
  const f = 'spec.trialTemplate';
  for (const k of ['command', 'image', 'resources', 'inputs', 'outputs', 'files']) {
    if (v[k] !== undefined) throw badRequest(`${f}.${k}`, 'goes in the job document of a distributed trial (trialTemplate.job), not beside it');
  }
  if (!isObj(v.job)) throw badRequest(`${f}.job`, 'must be a job document (Cairn\'s, a TFJob, a PyTorchJob or a Volcano Job)');
  for (const ref of jobPlaceholderNames(v.job)) {
    if (!names.has(ref)) throw badRequest(`${f}.job`, `refers to \${${ref}}, which is no parameter of the search space (parameters: ${[...names].join(', ')})`);
  }
  const sample = sampleAssignment(space, new SeededRandom(1));
  try {
    trialJobSpec({ name: 'check', objective: { metricName: 'm' }, role: '*' } as ExperimentSpec, v.job, 'check', 0, sample);
  } catch (err) {
    if (err instanceof CairnError) throw new CairnError('CAIRN_BAD_REQUEST', err.message.replace(`${err.field}: `, ''), err.field && err.field !== 'body' ? `${f}.job.${err.field}` : `${f}.job`);
    throw err;
  }
  const timeoutSeconds = count(v.timeoutSeconds, `${f}.timeoutSeconds`, 0, 0);
  const env: Record<string, string> = {};
  if (v.env !== undefined) throw badRequest(`${f}.env`, 'goes in the job document of a distributed trial, in its replicas\' templates');
  return { command: '', cpus: 0, memMb: 0, diskMb: 0, gpus: 0, env, inputs: [], outputs: [], files: [], timeoutSeconds, job: v.job };
}

/**
 * The paper's App Core resources: checked (a bad size is refused like any other), then
 * reported as ignored, since the search runs inside the leading master, not as a task.
 */
function appCoreOf(v: unknown, ignored: IgnoredField[]): void {
  if (v === undefined) return;
  if (!isObj(v)) throw badRequest('spec.appCore', 'must be {cpus, memory}');
  if (v.cpus !== undefined) parseCpus(v.cpus, 'spec.appCore.cpus');
  if (v.memory !== undefined) parseSizeMiB(v.memory, 'spec.appCore.memory');
  ignored.push({ field: 'spec.appCore', reason: 'the search (the App Core) runs inside the leading master, replicated, and takes no task resources' });
}

/** `hostPath#name` (the paper's form) or {hostPath, name}. */
export function pathMapping(v: unknown, field: string): PathMapping {
  let hostPath: unknown;
  let name: unknown;
  if (typeof v === 'string') {
    const cut = v.lastIndexOf('#');
    hostPath = cut === -1 ? v : v.slice(0, cut);
    name = cut === -1 ? v.split('/').filter(Boolean).at(-1) : v.slice(cut + 1);
  } else if (isObj(v)) {
    hostPath = v.hostPath;
    name = v.name;
  }
  if (typeof hostPath !== 'string' || !hostPath.startsWith('/')) throw badRequest(field, `must be an absolute path on the agents, as /data/mnist#mnist, got ${JSON.stringify(v)}`);
  const hostPathWrong = hostPathProblem(hostPath);
  if (hostPathWrong) throw badRequest(field, `'${hostPath.slice(0, 200)}' ${hostPathWrong}`);
  if (typeof name !== 'string' || !/^[A-Za-z0-9_.-]+$/.test(name) || name === '.' || name === '..') throw badRequest(field, `needs a plain name for the sandbox after '#', got ${JSON.stringify(name ?? null)}`);
  return { hostPath, name };
}

function trialOf(v: unknown, space: SearchSpace, ignored: IgnoredField[], namespace: string | undefined): TrialTemplate {
  const f = 'spec.trialTemplate';
  if (!isObj(v)) throw badRequest(f, 'is required: {command, resources: {cpus, memory}}, or Katib\'s {trialSpec, trialParameters, primaryContainerName}');
  const names = new Set(paramNames(space));
  // Katib's own form: the trial's Job with ${trialParameters.<name>} in it.
  if (isKatibTrialTemplate(v)) return katibTrialOf(v, space, names, ignored, namespace, count(v.timeoutSeconds, `${f}.timeoutSeconds`, 0, 0));
  for (const k of Object.keys(v)) {
    if (!['command', 'image', 'resources', 'env', 'inputs', 'outputs', 'files', 'timeoutSeconds', 'job'].includes(k)) ignored.push({ field: `${f}.${k}`, reason: 'not a field of a trial template' });
  }
  if (v.job !== undefined) return jobTrialOf(v, space, names);
  if (typeof v.command !== 'string' || v.command.trim() === '') throw badRequest(`${f}.command`, 'is required: the shell command a trial runs, with ${name} for a parameter (or job: a job document, for a distributed trial; or Katib\'s trialSpec with trialParameters)');
  for (const ref of placeholderNames(v.command)) {
    if (!names.has(ref)) throw badRequest(`${f}.command`, `refers to \${${ref}}, which is no parameter of the search space (parameters: ${[...names].join(', ')})`);
  }
  const r = isObj(v.resources) ? v.resources : v.resources === undefined ? {} : undefined;
  if (!r) throw badRequest(`${f}.resources`, 'must be {cpus, memory, gpus, disk}');
  const cpus = r.cpus === undefined ? 1 : parseCpus(r.cpus, `${f}.resources.cpus`);
  const memMb = r.memory === undefined && r.mem === undefined ? 512 : parseSizeMiB(r.memory ?? r.mem, `${f}.resources.${r.memory !== undefined ? 'memory' : 'mem'}`);
  const diskMb = r.disk === undefined ? 0 : parseSizeMiB(r.disk, `${f}.resources.disk`);
  const gpus = r.gpus === undefined ? 0 : r.gpus;
  if (typeof gpus !== 'number' || !Number.isInteger(gpus) || gpus < 0) throw badRequest(`${f}.resources.gpus`, `must be a whole number of GPUs, got ${JSON.stringify(gpus)}`);
  const env: Record<string, string> = {};
  if (Array.isArray(v.env)) {
    v.env.forEach((e, i) => {
      if (!isObj(e) || typeof e.name !== 'string' || typeof e.value !== 'string') throw badRequest(`${f}.env[${i}]`, 'must be {name, value}');
      env[e.name] = e.value;
    });
  } else if (isObj(v.env)) {
    for (const [k, x] of Object.entries(v.env)) {
      if (typeof x !== 'string') throw badRequest(`${f}.env.${k}`, 'must be a string');
      env[k] = x;
    }
  } else if (v.env !== undefined) {
    throw badRequest(`${f}.env`, 'must be an object of names and values');
  }
  for (const k of Object.keys(env)) if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(k)) throw badRequest(`${f}.env.${k}`, 'is not a variable name');
  const list = (x: unknown, field: string): unknown[] => {
    if (x === undefined) return [];
    if (!Array.isArray(x)) throw badRequest(field, 'must be a list');
    return x;
  };
  const inputs = list(v.inputs, `${f}.inputs`).map((x, i) => pathMapping(x, `${f}.inputs[${i}]`));
  const outputs = list(v.outputs, `${f}.outputs`).map((x, i) => pathMapping(x, `${f}.outputs[${i}]`));
  let shipped = 0;
  const files: ShippedFile[] = list(v.files, `${f}.files`).map((x, i) => {
    const field = `${f}.files[${i}]`;
    if (!isObj(x) || typeof x.name !== 'string' || !/^[A-Za-z0-9_.-]+$/.test(x.name) || x.name === '.' || x.name === '..') throw badRequest(`${field}.name`, 'must be a plain file name');
    let base64: string;
    if (typeof x.base64 === 'string' && /^[A-Za-z0-9+/]*={0,2}$/.test(x.base64)) base64 = x.base64;
    else if (typeof x.content === 'string') base64 = Buffer.from(x.content, 'utf8').toString('base64');
    else throw badRequest(field, 'needs content (text) or base64');
    shipped += base64.length;
    return { name: x.name, base64 };
  });
  if (shipped > MAX_SHIPPED_BYTES) throw badRequest(`${f}.files`, `hold ${shipped} bytes encoded; shipped files hold at most ${MAX_SHIPPED_BYTES} (put larger data on a path every agent has, as an input)`);
  const timeoutSeconds = count(v.timeoutSeconds, `${f}.timeoutSeconds`, 0, 0);
  if (v.image !== undefined && (typeof v.image !== 'string' || v.image === '')) throw badRequest(`${f}.image`, 'must be an image name');
  return { command: v.command, cpus, memMb, diskMb, gpus, env, inputs, outputs, files, timeoutSeconds, ...(typeof v.image === 'string' ? { image: v.image } : {}) };
}
