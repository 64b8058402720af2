// Katib's own trial template — `trialSpec` with `trialParameters` and `primaryContainerName` —
// as a checked TrialTemplate. A batch/v1 Job's primary container (the one named
// primaryContainerName, or the only one) becomes a task trial: its image, its command and
// args as words, its env and its resources. A Kubeflow PyTorchJob or TFJob (or a Volcano Job)
// becomes a distributed trial run by the job engine, as `trialTemplate.job` does. Every
// `${trialParameters.<name>}` must name a declared trial parameter, and each parameter's
// reference a parameter of the search space or the trial's metadata. Refusals name the field
// as the file has it (`spec.trialTemplate.trialSpec.spec.template.spec.containers[0].command`);
// what is read but not honoured is reported as ignored. Pure.

import { badRequest, CairnError } from '../../../shared/errors.ts';
import type { ExperimentSpec, IgnoredField, TrialParameter, TrialTemplate } from '../../../shared/tuning/model.ts';
import type { SearchSpace } from '../../../shared/tuning/space/types.ts';
import { sampleAssignment } from '../../../shared/tuning/space/sample.ts';
import { SeededRandom } from '../../../shared/random.ts';
import { fillTrialParameters, stringsOf, trialParameterRefs, TRIAL_NAME_REFERENCE } from '../../../shared/tuning/trial-parameters.ts';
import { translatePodTemplate } from '../../../shared/jobs/pod-template.ts';
import { isKubeflowKind } from '../../../shared/jobs/kubeflow-format.ts';
import type { IgnoredField as JobIgnoredField } from '../../../shared/jobs/model.ts';
import { shellWords } from './trial-command.ts';
import { trialJobSpec } from './trial-job.ts';

type Obj = Record<string, unknown>;

const F = 'spec.trialTemplate';

function isObj(v: unknown): v is Obj {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Katib's trialTemplate fields Cairn reads but does not honour, with why. */
const KATIB_IGNORED: Record<string, string> = {
  primaryPodLabels: 'a distributed trial\'s metrics are read from its first replica of its first group (the PyTorch master, the TF chief)',
  successCondition: 'a trial succeeds when its command exits 0 having printed the objective',
  failureCondition: 'a trial fails when its command exits non-zero or prints no objective',
  retain: 'an ended trial\'s task keeps its sandbox and logs as every task does (a distributed trial\'s job for an hour)',
};

/** Cairn's own fields, which the trialSpec form carries inside its container instead. */
const CAIRN_FIELDS = ['command', 'image', 'resources', 'env', 'inputs', 'outputs', 'files', 'job'];

/** Whether `v` (a trialTemplate) is Katib's form. */
export function isKatibTrialTemplate(v: Obj): boolean {
  return v.trialSpec !== undefined || v.trialParameters !== undefined || v.configMap !== undefined;
}

/**
 * The trial template of Katib's form. `namespace` is the experiment's metadata.namespace, what
 * `${trialSpec.Namespace}` names (Cairn has none of its own).
 */
export function katibTrialOf(v: Obj, space: SearchSpace, names: ReadonlySet<string>, ignored: IgnoredField[], namespace: string | undefined, timeoutSeconds: number): TrialTemplate {
  for (const k of CAIRN_FIELDS) {
    if (v[k] !== undefined) throw badRequest(`${F}.${k}`, `goes in trialSpec (its primary container), not beside it: give trialSpec or ${k}, not both`);
  }
  if (v.configMap !== undefined) throw badRequest(`${F}.configMap`, 'ConfigMaps do not exist in Cairn: put the trial\'s Job in trialTemplate.trialSpec');
  for (const k of Object.keys(v)) {
    if (['trialSpec', 'trialParameters', 'primaryContainerName', 'timeoutSeconds'].includes(k)) continue;
    ignored.push({ field: `${F}.${k}`, reason: KATIB_IGNORED[k] ?? 'not a field of a trial template' });
  }
  const trialSpec = v.trialSpec;
  if (!isObj(trialSpec)) throw badRequest(`${F}.trialSpec`, 'is required: the trial\'s Job (batch/v1 Job, or a Kubeflow PyTorchJob or TFJob)');
  const declared = trialParametersOf(v.trialParameters, trialSpec, names, namespace);
  for (const s of stringsOf(trialSpec)) {
    for (const ref of trialParameterRefs(s)) {
      if (!declared.some((p) => p.name === ref)) {
        throw badRequest(`${F}.trialSpec`, `refers to \${trialParameters.${ref}}, which trialTemplate.trialParameters does not declare (declared: ${declared.map((p) => p.name).join(', ') || 'none'})`);
      }
    }
  }
  if (v.primaryContainerName !== undefined && (typeof v.primaryContainerName !== 'string' || v.primaryContainerName === '')) {
    throw badRequest(`${F}.primaryContainerName`, `must be a container's name, got ${JSON.stringify(v.primaryContainerName)}`);
  }
  const primary = v.primaryContainerName as string | undefined;
  const base = { cpus: 0, memMb: 0, diskMb: 0, gpus: 0, env: {}, inputs: [], outputs: [], files: [], timeoutSeconds, trialParameters: declared };
  if (trialSpec.kind === 'Job' && trialSpec.apiVersion === 'batch/v1') return batchTrialOf(trialSpec, primary, declared, space, ignored, base);
  if (isKubeflowKind(trialSpec.kind) || trialSpec.kind === 'Job') return jobTrialOf(trialSpec, declared, space, ignored, base);
  throw badRequest(`${F}.trialSpec.kind`, `Cairn runs a trialSpec of kind Job (batch/v1), PyTorchJob or TFJob (kubeflow.org/v1), or a Volcano Job; got ${JSON.stringify(trialSpec.kind ?? null)}${trialSpec.apiVersion !== undefined ? ` (${String(trialSpec.apiVersion)})` : ''}`);
}

/** Katib's trialParameters, each reference resolved: a search parameter, or metadata of the trial. */
function trialParametersOf(v: unknown, trialSpec: Obj, names: ReadonlySet<string>, namespace: string | undefined): TrialParameter[] {
  if (v === undefined || v === null) return [];
  const f = `${F}.trialParameters`;
  if (!Array.isArray(v)) throw badRequest(f, 'must be a list of {name, description, reference}');
  const seen = new Set<string>();
  return v.map((x, i) => {
    const at = `${f}[${i}]`;
    if (!isObj(x)) throw badRequest(at, 'must be {name, description, reference}');
    if (typeof x.name !== 'string' || !/^[^}\s]+$/.test(x.name)) throw badRequest(`${at}.name`, `must be a name without spaces or '}', got ${JSON.stringify(x.name ?? null)}`);
    if (seen.has(x.name)) throw badRequest(`${at}.name`, `'${x.name}' is declared twice`);
    seen.add(x.name);
    if (x.description !== undefined && typeof x.description !== 'string') throw badRequest(`${at}.description`, 'must be text');
    if (typeof x.reference !== 'string' || x.reference === '') throw badRequest(`${at}.reference`, 'is required: a parameter of the search space, or ${trialSpec.Name} and the trial\'s other metadata');
    const p: TrialParameter = { name: x.name, reference: x.reference, ...(typeof x.description === 'string' ? { description: x.description } : {}) };
    if (names.has(x.reference) || x.reference === TRIAL_NAME_REFERENCE) return p;
    const value = metadataValue(x.reference, trialSpec, namespace);
    if (value === undefined) {
      throw badRequest(`${at}.reference`, `'${x.reference}' is no parameter of the search space (parameters: ${[...names].join(', ')}) and no metadata of the trial (\${trialSpec.Name}, .Namespace, .Kind, .APIVersion, .Labels[key], .Annotations[key])`);
    }
    return { ...p, value };
  });
}

/** What Katib's metadata references fixed at submission stand for; undefined for none (or a missing label). */
function metadataValue(reference: string, trialSpec: Obj, namespace: string | undefined): string | undefined {
  const m = /^\$\{trialSpec\.(Namespace|Kind|APIVersion|Labels|Annotations)(?:\[([^\]]+)\])?\}$/.exec(reference);
  if (!m) return undefined;
  const meta = isObj(trialSpec.metadata) ? trialSpec.metadata : {};
  switch (m[1]) {
    case 'Namespace':
      return m[2] === undefined ? (typeof meta.namespace === 'string' ? meta.namespace : (namespace ?? 'default')) : undefined;
    case 'Kind':
      return m[2] === undefined && typeof trialSpec.kind === 'string' ? trialSpec.kind : undefined;
    case 'APIVersion':
      return m[2] === undefined && typeof trialSpec.apiVersion === 'string' ? trialSpec.apiVersion : undefined;
    default: {
      const table = m[1] === 'Labels' ? meta.labels : meta.annotations;
      const value = m[2] !== undefined && isObj(table) ? table[m[2]] : undefined;
      return typeof value === 'string' ? value : undefined;
    }
  }
}

/** Errors of the job parsers (CAIRN_INVALID_JOB, paths from `at`) as the experiment's (CAIRN_BAD_REQUEST). */
function asExperimentError<T>(fn: () => T, prefix: string): T {
  try {
    return fn();
  } catch (err) {
    if (!(err instanceof CairnError)) throw err;
    const field = err.field === undefined || err.field === 'body' ? prefix : err.field.startsWith('spec.trialTemplate') ? err.field : `${prefix}.${err.field}`;
    throw new CairnError('CAIRN_BAD_REQUEST', err.field !== undefined ? err.message.replace(`${err.field}: `, '') : err.message, field);
  }
}

function jobIgnored(list: readonly JobIgnoredField[], prefix: string): IgnoredField[] {
  return list.map((i) => ({ field: i.path.startsWith('spec.trialTemplate') ? i.path : `${prefix}.${i.path}`, reason: i.why }));
}

type Base = Omit<TrialTemplate, 'command'>;

/** A batch/v1 Job: its primary container is the trial's task. */
function batchTrialOf(trialSpec: Obj, primary: string | undefined, declared: readonly TrialParameter[], space: SearchSpace, ignored: IgnoredField[], base: Base): TrialTemplate {
  const specAt = `${F}.trialSpec.spec`;
  if (!isObj(trialSpec.spec)) throw badRequest(specAt, 'is required: the Job\'s spec, with its pod template');
  for (const k of Object.keys(trialSpec.spec)) {
    if (k !== 'template') ignored.push({ field: `${specAt}.${k}`, reason: 'a trial is one task: a failed trial is not retried (a lost one runs again, 3 attempts in all)' });
  }
  if (trialSpec.metadata !== undefined) ignored.push({ field: `${F}.trialSpec.metadata`, reason: 'the Job\'s labels and annotations have no meaning for a Cairn task (trialParameters may still refer to them)' });
  const tplAt = `${specAt}.template`;
  const pod = isObj(trialSpec.spec.template) && isObj(trialSpec.spec.template.spec) ? trialSpec.spec.template.spec : undefined;
  const containers = pod && Array.isArray(pod.containers) ? (pod.containers as unknown[]) : undefined;
  if (!containers || containers.length === 0) throw badRequest(`${tplAt}.spec.containers`, 'must hold the trial\'s container');
  const containerNames = containers.map((c) => (isObj(c) && typeof c.name === 'string' ? c.name : ''));
  let index: number;
  if (primary !== undefined) {
    index = containerNames.indexOf(primary);
    if (index < 0) throw badRequest(`${F}.primaryContainerName`, `names no container of the trial's pod: '${primary}' (its containers: ${containerNames.join(', ')})`);
  } else {
    if (containers.length > 1) throw badRequest(`${F}.primaryContainerName`, `is required when the trial's pod has ${containers.length} containers (${containerNames.join(', ')}): the one that trains`);
    index = 0;
  }
  const jobIgnoredList: JobIgnoredField[] = [];
  const t = asExperimentError(() => translatePodTemplate((trialSpec.spec as Obj).template, tplAt, containerNames[index], jobIgnoredList), tplAt);
  // The pod's restartPolicy: Never is what a trial does; OnFailure cannot be honoured.
  if (t.podRestartPolicy && t.podRestartPolicy.value !== 'Never') ignored.push({ field: t.podRestartPolicy.path, reason: 'a trial runs once: a failed trial is not restarted (a lost one runs again)' });
  ignored.push(...jobIgnored(jobIgnoredList, tplAt));
  const cat = `${tplAt}.spec.containers[${index}]`;
  const tpl = t.template;
  if (tpl.volumes !== undefined) ignored.push({ field: `${cat}.volumeMounts`, reason: 'a task trial mounts no volumes: give host paths as trialTemplate inputs and outputs in Cairn\'s form' });
  if (tpl.ports !== undefined) ignored.push({ field: `${cat}.ports`, reason: 'a task trial takes no ports' });
  if (tpl.imagePullSecrets !== undefined) ignored.push({ field: `${tplAt}.spec.imagePullSecrets`, reason: 'a task trial pulls its image with the agent\'s own credentials' });
  const words = (x: unknown, field: string): string[] => {
    if (x === undefined) return [];
    if (!Array.isArray(x) || x.some((w) => typeof w !== 'string')) throw badRequest(field, 'must be a list of strings (the program and its arguments)');
    return x as string[];
  };
  const argv = [...words(tpl.command, `${cat}.command`), ...words(tpl.args, `${cat}.args`)];
  if (tpl.command === undefined || argv.length === 0 || argv[0] === '') {
    throw badRequest(`${cat}.command`, 'is required: Cairn runs the primary container\'s command (with its args); an image\'s own entrypoint is not read');
  }
  let image: string | undefined;
  if (tpl.image !== undefined) {
    if (typeof tpl.image !== 'string' || tpl.image === '') throw badRequest(`${cat}.image`, 'must be an image name');
    image = tpl.image;
    // Checked with a sample trial's values: a reference that leaves no image is refused now.
    const sample = fillTrialParameters(image, declared, sampleAssignment(space, new SeededRandom(1)), 'check-0');
    if (sample.trim() === '' || /\s/.test(sample)) throw badRequest(`${cat}.image`, `becomes ${JSON.stringify(sample)} for a trial: not an image name`);
  }
  const env: Record<string, string> = {};
  for (const [k, x] of Object.entries((tpl.env as Obj | undefined) ?? {})) {
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(k)) throw badRequest(`${cat}.env`, `'${k}' is not a variable name`);
    env[k] = typeof x === 'string' ? x : String(x);
  }
  const num = (x: unknown, fallback: number) => (typeof x === 'number' ? x : fallback);
  return {
    ...base, command: shellWords(argv), argv,
    cpus: num(tpl.cpus, 1), memMb: num(tpl.mem, 512), diskMb: num(tpl.disk, 0), gpus: num(tpl.gpus, 0), env,
    ...(image !== undefined ? { image } : {}),
  };
}

/** A Kubeflow PyTorchJob or TFJob (or a Volcano Job): a distributed trial, checked now with a sample trial. */
function jobTrialOf(trialSpec: Obj, declared: readonly TrialParameter[], space: SearchSpace, ignored: IgnoredField[], base: Base): TrialTemplate {
  const at = `${F}.trialSpec`;
  const sample = sampleAssignment(space, new SeededRandom(1));
  const check = { name: 'check', objective: { metricName: 'm' }, role: '*', trial: { trialParameters: declared } } as unknown as ExperimentSpec;
  const parsed = asExperimentError(() => trialJobSpec(check, trialSpec, 'check', 0, sample), at);
  ignored.push(...jobIgnored(parsed.ignored, at));
  return { ...base, command: '', job: trialSpec };
}
