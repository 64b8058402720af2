// Cairn's own job document (JSON or YAML, already parsed) in, a complete JobSpec out: every
// field checked, every default filled, unknown fields refused (it is our format, so a field
// we do not know is a typo). Errors are CAIRN_INVALID_JOB naming the field; the documents of
// other formats are translated to this one first and reach the user's own paths through a
// Locate. Pure: no I/O, no clock.
//
// Defaults, and why:
// - replicas 1, as Kubeflow's replica specs.
// - restartPolicy OnFailure for pslite, tensorflow and pytorch (a distributed training run
//   is long and its replicas resume from checkpoints); Never for batch (Volcano's habit: an
//   indexed item that failed is reported, not retried behind the user's back).
// - minAvailable: every replica (a gang; a half-started training job only waits).
// - backoffLimit 6: Kubernetes Job's default (`maxRetry` is accepted as its Volcano name).
// - restartBackoff: absent, the master's default applies (10 s doubling to 300 s, reset after
//   600 s: the kubelet's); given, each field left out takes that same built-in value.
// - cleanupPolicy Running for tensorflow (parameter servers never exit on their own; this was
//   the TFJob default before Kubeflow made it None), All for the others.
// - template: cpus 1, mem 512 (MiB), disk 0, gpus 0, ports 1 (the first is PORT), no env, no
//   volumes; role '*', priority 0, successPolicy Default (chief or worker 0 decides).

import {
  CLEANUP_POLICIES,
  JOB_KINDS,
  POLICY_ACTIONS,
  POLICY_EVENTS,
  RESTART_POLICIES,
  type CleanupPolicy,
  type FailurePolicy,
  type JobKind,
  type JobSpec,
  type ReplicaGroup,
  type RestartBackoffSpec,
  type RestartPolicy,
  type SuccessPolicy,
  type TaskTemplate,
  type VolumeSpec,
} from './model.ts';
import { invalidJob, prefixLocator, type Locate } from './field-paths.ts';
import { checkKindRules } from './kind-rules.ts';
import { readImagePullSecrets } from './pull-secrets.ts';
import { isRoleName } from '../sharing/roles.ts';
import { isClassSpelling } from '../sharing/priority-classes.ts';
import { hostPathProblem } from '../host-paths.ts';

export const CAIRN_JOB_API_VERSION = 'cairn/v1';
export const MAX_JOB_NAME = 40;
export const MAX_GROUP_NAME = 20;
/** A replica's task name `<job>-<group>-<index>` is one DNS label. */
export const MAX_LABEL = 63;
export const MAX_REPLICAS = 10_000;
export const MAX_PORTS_PER_REPLICA = 100;

export const DEFAULT_TEMPLATE = { cpus: 1, memMb: 512, diskMb: 0, gpus: 0, ports: 1 } as const;
export const DEFAULT_BACKOFF_LIMIT = 6;
export const DEFAULT_ROLE = '*';

export function defaultRestartPolicy(kind: JobKind): RestartPolicy {
  return kind === 'batch' ? 'Never' : 'OnFailure';
}

export function defaultCleanupPolicy(kind: JobKind): CleanupPolicy {
  return kind === 'tensorflow' ? 'Running' : 'All';
}

const JOB_FIELDS = [
  'apiVersion', 'name', 'kind', 'groups', 'minAvailable', 'successPolicy', 'failurePolicies', 'backoffLimit', 'maxRetry',
  'activeDeadlineSeconds', 'ttlSecondsAfterFinished', 'cleanupPolicy', 'role', 'priority', 'priorityClassName',
  'restartBackoff',
] as const;
const BACKOFF_FIELDS = ['initialSeconds', 'factor', 'maxSeconds', 'resetAfterSeconds'] as const;
const GROUP_FIELDS = ['name', 'replicas', 'restartPolicy', 'template'] as const;
const TEMPLATE_FIELDS = ['command', 'args', 'image', 'imagePullSecrets', 'cpus', 'mem', 'disk', 'gpus', 'ports', 'env', 'volumes'] as const;
const VOLUME_FIELDS = ['containerPath', 'hostPath', 'mode'] as const;
const POLICY_FIELDS = ['event', 'action', 'group'] as const;

/** DNS-1035 labels, as Kubeflow asks of job names: they become host names. */
const LABEL = /^[a-z]([-a-z0-9]*[a-z0-9])?$/;
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
/** What `docker pull` takes: name, registry with port, tag, digest. */
const IMAGE = /^[A-Za-z0-9][A-Za-z0-9._/:@-]*$/;

type Doc = Record<string, unknown>;

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'a list';
  if (typeof value === 'string') return `'${value.length > 40 ? `${value.slice(0, 40)}…` : value}'`;
  return typeof value === 'object' ? 'an object' : String(value);
}

/** Reads one document's fields, each error naming the field where the user wrote it. */
class Reader {
  constructor(readonly at: Locate) {}

  object(value: unknown, field: string, allowed: readonly string[]): Doc {
    if (typeof value !== 'object' || value === null || Array.isArray(value)) {
      throw invalidJob(this.at(field), `must be an object, not ${describe(value)}`);
    }
    for (const key of Object.keys(value)) {
      if (!allowed.includes(key)) {
        throw invalidJob(this.at(field === '' ? key : `${field}.${key}`), `unknown field '${key}' (known: ${allowed.join(', ')})`);
      }
    }
    return value as Doc;
  }

  list(value: unknown, field: string): unknown[] {
    if (!Array.isArray(value)) throw invalidJob(this.at(field), `must be a list, not ${describe(value)}`);
    // Array.from fills holes of a sparse list with undefined, which the checks then see.
    return Array.from(value);
  }

  string(value: unknown, field: string): string {
    if (typeof value !== 'string') throw invalidJob(this.at(field), `must be a string, not ${describe(value)}`);
    return value;
  }

  integer(value: unknown, field: string, min: number, max = Number.MAX_SAFE_INTEGER): number {
    if (typeof value !== 'number' || !Number.isInteger(value)) {
      throw invalidJob(this.at(field), `must be a whole number, not ${describe(value)}`);
    }
    if (value < min || value > max) {
      throw invalidJob(this.at(field), max === Number.MAX_SAFE_INTEGER ? `must be at least ${min}, not ${value}` : `must be from ${min} to ${max}, not ${value}`);
    }
    return value;
  }

  /** A resource amount: a number of 0 or more (three decimals kept, as Mesos does). */
  amount(value: unknown, field: string): number {
    if (typeof value !== 'number' || !Number.isFinite(value)) throw invalidJob(this.at(field), `must be a number, not ${describe(value)}`);
    if (value < 0) throw invalidJob(this.at(field), `must be 0 or more, not ${value}`);
    return Math.round(value * 1000) / 1000;
  }

  oneOf<T extends string>(value: unknown, field: string, choices: readonly T[], what: string): T {
    if (typeof value !== 'string' || !(choices as readonly string[]).includes(value)) {
      throw invalidJob(this.at(field), `unknown ${what} ${describe(value)} (expected one of: ${choices.join(', ')})`);
    }
    return value as T;
  }

  label(value: unknown, field: string, max: number, what: string): string {
    const s = this.string(value, field);
    if (s.length > max || !LABEL.test(s)) {
      throw invalidJob(this.at(field), `${describe(s)} is not a valid ${what}: at most ${max} lower-case letters, digits and '-', starting with a letter and ending with a letter or digit (it becomes a DNS name)`);
    }
    return s;
  }

  absolutePath(value: unknown, field: string): string {
    const s = this.string(value, field);
    if (!s.startsWith('/') || s.includes('\0') || s.split('/').some((part) => part === '..' || part === '.')) {
      throw invalidJob(this.at(field), `${describe(s)} must be an absolute path without '.' or '..' parts`);
    }
    return s;
  }

  /** A volume's host path: absolute, normalised, and none that no agent ever mounts (shared/host-paths.ts). */
  hostPath(value: unknown, field: string): string {
    const s = this.absolutePath(value, field);
    const wrong = hostPathProblem(s);
    if (wrong) throw invalidJob(this.at(field), `${describe(s)} ${wrong}`);
    return s;
  }
}

function has(doc: Doc, key: string): boolean {
  return doc[key] !== undefined && doc[key] !== null;
}

function readTemplate(r: Reader, value: unknown, field: string): TaskTemplate {
  const t = r.object(value ?? {}, field, TEMPLATE_FIELDS);
  let image: string | undefined;
  if (has(t, 'image')) {
    image = r.string(t.image, `${field}.image`);
    if (!IMAGE.test(image) || image.length > 1024) {
      throw invalidJob(r.at(`${field}.image`), `${describe(image)} is not an image reference (e.g. python:3.12-slim or registry:5000/team/trainer:1.2)`);
    }
  }
  // A list command is a program and its arguments (as a Kubernetes container's); a string
  // runs through `sh -c` unless `args` are given. With an image and no command, the image's
  // own entrypoint runs (with `args`).
  let args: string[] | undefined;
  if (has(t, 'args')) args = r.list(t.args, `${field}.args`).map((a, i) => r.string(a, `${field}.args[${i}]`));
  let command = '';
  if (has(t, 'command')) {
    if (Array.isArray(t.command)) {
      const parts = Array.from(t.command as unknown[]).map((a, i) => r.string(a, `${field}.command[${i}]`));
      if (parts.length === 0 || parts[0] === '') throw invalidJob(r.at(`${field}.command`), 'must name a program');
      command = parts[0];
      args = [...parts.slice(1), ...(args ?? [])];
    } else {
      command = r.string(t.command, `${field}.command`);
    }
  }
  if (command.trim() === '') {
    if (image === undefined) throw invalidJob(r.at(`${field}.command`), 'is required: what each replica runs (or give an image, whose entrypoint runs)');
    command = '';
    args ??= [];
  }
  const env: Record<string, string> = {};
  if (has(t, 'env')) {
    const e = r.object(t.env, `${field}.env`, Object.keys(t.env as object));
    for (const [name, v] of Object.entries(e)) {
      const at = `${field}.env.${name}`;
      if (!ENV_NAME.test(name)) throw invalidJob(r.at(at), `'${name}' is not a variable name (letters, digits and '_', not starting with a digit)`);
      if (typeof v === 'string') env[name] = v;
      else if (typeof v === 'number' || typeof v === 'boolean') env[name] = String(v);
      else throw invalidJob(r.at(at), `must be a string, not ${describe(v)}`);
    }
  }
  const volumes: VolumeSpec[] = has(t, 'volumes')
    ? r.list(t.volumes, `${field}.volumes`).map((v, i) => {
        const at = `${field}.volumes[${i}]`;
        const o = r.object(v, at, VOLUME_FIELDS);
        return {
          containerPath: r.absolutePath(o.containerPath, `${at}.containerPath`),
          hostPath: r.hostPath(o.hostPath, `${at}.hostPath`),
          mode: has(o, 'mode') ? r.oneOf(o.mode, `${at}.mode`, ['RO', 'RW'] as const, 'volume mode') : 'RW',
        };
      })
    : [];
  const out: TaskTemplate = {
    command,
    cpus: has(t, 'cpus') ? r.amount(t.cpus, `${field}.cpus`) : DEFAULT_TEMPLATE.cpus,
    memMb: has(t, 'mem') ? r.amount(t.mem, `${field}.mem`) : DEFAULT_TEMPLATE.memMb,
    diskMb: has(t, 'disk') ? r.amount(t.disk, `${field}.disk`) : DEFAULT_TEMPLATE.diskMb,
    gpus: has(t, 'gpus') ? r.integer(t.gpus, `${field}.gpus`, 0, 1024) : DEFAULT_TEMPLATE.gpus,
    ports: has(t, 'ports') ? r.integer(t.ports, `${field}.ports`, 1, MAX_PORTS_PER_REPLICA) : DEFAULT_TEMPLATE.ports,
    env,
    volumes,
  };
  if (args !== undefined) out.args = args;
  if (image !== undefined) out.image = image;
  if (has(t, 'imagePullSecrets')) out.imagePullSecrets = readImagePullSecrets(t.imagePullSecrets, `${field}.imagePullSecrets`, r.at, image);
  return out;
}

function readGroups(r: Reader, value: unknown, kind: JobKind, jobName: string): ReplicaGroup[] {
  if (value === undefined || value === null) throw invalidJob(r.at('groups'), 'is required: the job\'s groups of replicas');
  const list = r.list(value, 'groups');
  if (list.length === 0) throw invalidJob(r.at('groups'), 'must hold at least one group of replicas');
  const seen = new Set<string>();
  let total = 0;
  return list.map((g, i) => {
    const field = `groups[${i}]`;
    const o = r.object(g, field, GROUP_FIELDS);
    if (!has(o, 'name')) throw invalidJob(r.at(`${field}.name`), 'is required');
    const name = r.label(o.name, `${field}.name`, MAX_GROUP_NAME, 'group name');
    if (seen.has(name)) throw invalidJob(r.at(`${field}.name`), `'${name}' names two groups`);
    seen.add(name);
    const replicas = has(o, 'replicas') ? r.integer(o.replicas, `${field}.replicas`, 1, MAX_REPLICAS) : 1;
    total += replicas;
    if (total > MAX_REPLICAS) throw invalidJob(r.at(`${field}.replicas`), `makes ${total} replicas in all; a job has at most ${MAX_REPLICAS}`);
    const taskName = `${jobName}-${name}-${replicas - 1}`;
    if (taskName.length > MAX_LABEL) {
      throw invalidJob(r.at(`${field}.name`), `the replicas' DNS labels (${taskName}) would be longer than ${MAX_LABEL} characters: shorten the job or group name`);
    }
    return {
      name,
      replicas,
      restartPolicy: has(o, 'restartPolicy') ? r.oneOf(o.restartPolicy, `${field}.restartPolicy`, RESTART_POLICIES, 'restart policy') : defaultRestartPolicy(kind),
      template: readTemplate(r, o.template, `${field}.template`),
    };
  });
}

function readFailurePolicies(r: Reader, value: unknown, groups: readonly ReplicaGroup[]): FailurePolicy[] {
  return r.list(value, 'failurePolicies').map((p, i) => {
    const field = `failurePolicies[${i}]`;
    const o = r.object(p, field, POLICY_FIELDS);
    if (!has(o, 'event')) throw invalidJob(r.at(`${field}.event`), `is required (one of: ${POLICY_EVENTS.join(', ')})`);
    if (!has(o, 'action')) throw invalidJob(r.at(`${field}.action`), `is required (one of: ${POLICY_ACTIONS.join(', ')})`);
    const policy: FailurePolicy = {
      event: r.oneOf(o.event, `${field}.event`, POLICY_EVENTS, 'event'),
      action: r.oneOf(o.action, `${field}.action`, POLICY_ACTIONS, 'action'),
    };
    if (has(o, 'group')) {
      const group = r.string(o.group, `${field}.group`);
      if (!groups.some((g) => g.name === group)) {
        throw invalidJob(r.at(`${field}.group`), `'${group}' is not a group of this job (its groups: ${groups.map((g) => g.name).join(', ')})`);
      }
      policy.group = group;
    }
    return policy;
  });
}

/**
 * Checks Cairn's own job document and fills its defaults. `path` prefixes the fields named in
 * errors (the document's place in a larger one); `locate`, when given, maps them instead (a
 * translated document of another format). Throws CAIRN_INVALID_JOB naming the field.
 */
export function validateJobSpec(raw: unknown, path = '', locate?: Locate): JobSpec {
  const r = new Reader(locate ?? prefixLocator(path));
  const doc = r.object(raw, '', JOB_FIELDS);
  if (has(doc, 'apiVersion') && doc.apiVersion !== CAIRN_JOB_API_VERSION) {
    throw invalidJob(r.at('apiVersion'), `${describe(doc.apiVersion)} is not Cairn's job format (${CAIRN_JOB_API_VERSION})`);
  }
  if (!has(doc, 'name')) throw invalidJob(r.at('name'), 'is required: the job\'s name (its replicas are <name>-<group>-<index>)');
  const name = r.label(doc.name, 'name', MAX_JOB_NAME, 'job name');
  // No kind is a batch job: groups of any names, each replica told its index.
  const kind = has(doc, 'kind') ? r.oneOf(doc.kind, 'kind', JOB_KINDS, 'job kind') : 'batch';
  const groups = readGroups(r, doc.groups, kind, name);
  checkKindRules(kind, groups, r.at);
  const total = groups.reduce((n, g) => n + g.replicas, 0);

  if (has(doc, 'backoffLimit') && has(doc, 'maxRetry')) {
    throw invalidJob(r.at('maxRetry'), 'is backoffLimit under its Volcano name: give one of them');
  }
  const backoffField = has(doc, 'maxRetry') ? 'maxRetry' : 'backoffLimit';
  const spec: JobSpec = {
    name,
    kind,
    groups,
    minAvailable: has(doc, 'minAvailable') ? r.integer(doc.minAvailable, 'minAvailable', 1, total) : total,
    successPolicy: has(doc, 'successPolicy') ? readSuccessPolicy(r, doc.successPolicy) : 'Default',
    failurePolicies: has(doc, 'failurePolicies') ? readFailurePolicies(r, doc.failurePolicies, groups) : [],
    backoffLimit: has(doc, backoffField) ? r.integer(doc[backoffField], backoffField, 0, 1_000_000) : DEFAULT_BACKOFF_LIMIT,
    cleanupPolicy: has(doc, 'cleanupPolicy') ? r.oneOf(doc.cleanupPolicy, 'cleanupPolicy', CLEANUP_POLICIES, 'cleanup policy') : defaultCleanupPolicy(kind),
    role: has(doc, 'role') ? readRole(r, doc.role) : DEFAULT_ROLE,
    priority: has(doc, 'priority') ? r.integer(doc.priority, 'priority', -1_000_000_000, 1_000_000_000) : 0,
  };
  // Which classes exist is the master's to say (sharing/priority-classes.ts): only the shape is checked here.
  if (has(doc, 'priorityClassName')) {
    const c = r.string(doc.priorityClassName, 'priorityClassName');
    if (!isClassSpelling(c)) throw invalidJob(r.at('priorityClassName'), `${describe(c)} is not a priority class name (letters, digits and '-', e.g. production or PTR)`);
    spec.priorityClass = c;
  }
  if (has(doc, 'restartBackoff')) spec.restartBackoff = readRestartBackoff(r, doc.restartBackoff);
  if (has(doc, 'activeDeadlineSeconds')) spec.activeDeadlineSeconds = r.integer(doc.activeDeadlineSeconds, 'activeDeadlineSeconds', 1);
  if (has(doc, 'ttlSecondsAfterFinished')) spec.ttlSecondsAfterFinished = r.integer(doc.ttlSecondsAfterFinished, 'ttlSecondsAfterFinished', 0);
  return spec;
}

/** Kubernetes' CrashLoopBackOff, in seconds (fractions allowed: tests and quick retries). */
export const DEFAULT_RESTART_BACKOFF_SPEC: Readonly<RestartBackoffSpec> = Object.freeze({ initialSeconds: 10, factor: 2, maxSeconds: 300, resetAfterSeconds: 600 });

function readRestartBackoff(r: Reader, value: unknown): RestartBackoffSpec {
  const doc = r.object(value, 'restartBackoff', BACKOFF_FIELDS);
  const seconds = (k: 'initialSeconds' | 'maxSeconds' | 'resetAfterSeconds'): number => {
    if (!has(doc, k)) return DEFAULT_RESTART_BACKOFF_SPEC[k];
    const v = doc[k];
    if (typeof v !== 'number' || !Number.isFinite(v) || v < 0 || v > 86_400) throw invalidJob(r.at(`restartBackoff.${k}`), `must be a number of seconds from 0 to 86400, not ${describe(v)}`);
    return v;
  };
  const out: RestartBackoffSpec = {
    initialSeconds: seconds('initialSeconds'),
    factor: DEFAULT_RESTART_BACKOFF_SPEC.factor,
    maxSeconds: seconds('maxSeconds'),
    resetAfterSeconds: seconds('resetAfterSeconds'),
  };
  if (has(doc, 'factor')) {
    const f = doc.factor;
    if (typeof f !== 'number' || !Number.isFinite(f) || f < 1 || f > 100) throw invalidJob(r.at('restartBackoff.factor'), `must be a number from 1 to 100, not ${describe(f)}`);
    out.factor = f;
  }
  if (out.maxSeconds < out.initialSeconds) throw invalidJob(r.at('restartBackoff.maxSeconds'), `must be at least initialSeconds (${out.initialSeconds}), not ${out.maxSeconds}`);
  return out;
}

function readSuccessPolicy(r: Reader, value: unknown): SuccessPolicy {
  // '' is TFJob's spelling of the default.
  if (value === '') return 'Default';
  return r.oneOf(value, 'successPolicy', ['Default', 'AllWorkers'] as const, 'success policy');
}

function readRole(r: Reader, value: unknown): string {
  const role = r.string(value, 'role');
  if (!isRoleName(role)) throw invalidJob(r.at('role'), `${describe(role)} is not a role name ('*', or '/'-separated parts of letters, digits, '_', '.' and '-', e.g. team/alice)`);
  return role;
}
