// Validation of Mesos v1 scheduler calls at the edge: JSON in, a typed call out, or a
// CairnError naming the field that is wrong. Nothing past this file sees raw JSON.

import { PRIORITY_CLASS_LABEL } from '../shared/sharing/priority-classes.ts';
import { isRoleName } from '../shared/sharing/roles.ts';
import { Resources } from '../shared/resources.ts';
import { badRequest, CairnError } from '../shared/errors.ts';
import type { CommandSpec } from './registry/commands.ts';
import { checkSecretName, MAX_PULL_SECRETS } from '../shared/secret-names.ts';
import { hostPathProblem } from '../shared/host-paths.ts';
import type { ContainerSpec, HealthCheckSpec, PortMapping } from '../shared/agent-messages.ts';
import { DEFAULT_OBJECT_LIMITS, envBytes, envTooLarge, type ObjectLimits } from '../shared/sharing/object-limits.ts';
import { MAX_ID_LENGTH, MAX_ITEMS, MAX_LENGTH } from '../shared/field-limits.ts';

export interface FrameworkSpec {
  id?: string;
  name: string;
  user: string;
  role: string;
  principal: string;
  failoverTimeoutS: number;
  /** Mesos FrameworkInfo.Capability types, e.g. GPU_RESOURCES, MULTI_ROLE. */
  capabilities: string[];
  /** The class its label `cairn.priority-class` names; absent: the default (the leader checks it is known). */
  priorityClass?: string;
}

export interface TaskSpec {
  taskId: string;
  name: string;
  agentId: string;
  resources: Resources;
  command: CommandSpec;
  labels: { name: string; value: string }[];
  killGraceMs: number;
  container?: ContainerSpec;
  healthCheck?: HealthCheckSpec;
}

/**
 * A task of an ACCEPT refused on its own, as Mesos answers an invalid task: TASK_ERROR with
 * REASON_TASK_INVALID naming what is wrong, while the ACCEPT's other tasks launch. One
 * framework's tasks for many owners share an ACCEPT (the services framework's do): one bad
 * task must not stall the rest.
 */
export interface RefusedTask {
  taskId: string;
  agentId?: string;
  /** The field at fault, e.g. `accept.operations[0].launch.task_infos[1].labels.labels[0].value`. */
  field: string;
  message: string;
  /** Mesos' reason: REASON_TASK_INVALID (the default) or REASON_TASK_UNAUTHORIZED. */
  reason?: 'REASON_TASK_INVALID' | 'REASON_TASK_UNAUTHORIZED';
}

export type SchedulerCallParsed =
  | { type: 'SUBSCRIBE'; framework: FrameworkSpec }
  | { type: 'ACCEPT'; frameworkId: string; offerIds: string[]; tasks: TaskSpec[]; refused?: RefusedTask[]; refuseMs: number | undefined }
  | { type: 'DECLINE'; frameworkId: string; offerIds: string[]; refuseMs: number | undefined }
  | { type: 'REVIVE'; frameworkId: string }
  | { type: 'SUPPRESS'; frameworkId: string }
  | { type: 'KILL'; frameworkId: string; taskId: string }
  | { type: 'ACKNOWLEDGE'; frameworkId: string; taskId: string; agentId: string; uuid: string }
  | { type: 'RECONCILE'; frameworkId: string; taskIds: string[] }
  | { type: 'TEARDOWN'; frameworkId: string }
  /**
   * Mesos' REQUEST, given a meaning: a gang of tasks (one request each) that the framework
   * cannot place. A framework of a higher class than what runs gets room made by preemption;
   * `for` names what it is for (a job), for the preemption's record.
   */
  | { type: 'REQUEST'; frameworkId: string; members: Resources[]; for: string };

/** The most tasks one REQUEST may ask room for. */
export const MAX_REQUEST_MEMBERS = 10_000;

export { MAX_ID_LENGTH, MAX_LENGTH, MAX_ITEMS };
const ID_PATTERN = new RegExp(`^[A-Za-z0-9._:@-]{1,${MAX_ID_LENGTH}}$`);

/** Mesos v1 clients often send explicit nulls for unset fields; treat them as absent. */
export function stripNulls(value: unknown): unknown {
  if (Array.isArray(value)) return value.filter((v) => v !== null).map(stripNulls);
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) if (v !== null && v !== undefined) out[k] = stripNulls(v);
    return out;
  }
  return value;
}

type Json = Record<string, unknown>;

function obj(value: unknown, field: string, required = true): Json | undefined {
  if (value === undefined) {
    if (required) throw badRequest(field, 'is required');
    return undefined;
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw badRequest(field, 'must be an object');
  return value as Json;
}

function str(value: unknown, field: string, fallback?: string, maxLength: number = MAX_LENGTH.name): string {
  if (value === undefined) {
    if (fallback !== undefined) return fallback;
    throw badRequest(field, 'is required');
  }
  if (typeof value !== 'string') throw badRequest(field, 'must be a string');
  if (value.length > maxLength) throw badRequest(field, `is too long: ${value.length} characters, at most ${maxLength}`);
  return value;
}

function arrAtMost(value: unknown, field: string, maxItems: number): unknown[] {
  const a = arr(value, field);
  if (a.length > maxItems) throw badRequest(field, `has ${a.length} entries, at most ${maxItems}`);
  return a;
}

function num(value: unknown, field: string): number | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) throw badRequest(field, 'must be a non-negative number');
  return value;
}

function arr(value: unknown, field: string): unknown[] {
  if (value === undefined) return [];
  if (!Array.isArray(value)) throw badRequest(field, 'must be an array');
  return value;
}

/** An `{"value": "..."}` id. */
export function idValue(value: unknown, field: string): string {
  const o = obj(value, field)!;
  const v = str(o.value, `${field}.value`);
  if (!ID_PATTERN.test(v)) throw badRequest(`${field}.value`, `'${v}' is not a valid id (letters, digits, . _ : @ -; at most 255)`);
  return v;
}

function refuseMs(filters: unknown, field: string): number | undefined {
  const f = obj(filters, field, false);
  const s = num(f?.refuse_seconds, `${field}.refuse_seconds`);
  return s === undefined ? undefined : Math.round(s * 1000);
}

function parseFramework(info: Json, field: string): FrameworkSpec {
  let role = '*';
  const roles = arr(info.roles, `${field}.roles`);
  if (roles.length > 1) throw badRequest(`${field}.roles`, 'at most one role per framework is supported');
  if (roles.length === 1) role = str(roles[0], `${field}.roles[0]`);
  else if (info.role !== undefined) role = str(info.role, `${field}.role`);
  if (!isRoleName(role)) throw badRequest(`${field}.role`, `'${role}' is not a valid role name`);
  const id = info.id === undefined ? undefined : idValue(info.id, `${field}.id`);
  const capabilities = arr(info.capabilities, `${field}.capabilities`).map((c, i) => str(obj(c, `${field}.capabilities[${i}]`)!.type, `${field}.capabilities[${i}].type`));
  let priorityClass: string | undefined;
  arrAtMost(obj(info.labels, `${field}.labels`, false)?.labels, `${field}.labels.labels`, MAX_ITEMS.labels).forEach((l, i) => {
    const o = obj(l, `${field}.labels.labels[${i}]`)!;
    if (str(o.key, `${field}.labels.labels[${i}].key`) === PRIORITY_CLASS_LABEL) priorityClass = str(o.value, `${field}.labels.labels[${i}].value`, '', MAX_LENGTH.word);
  });
  return {
    capabilities,
    ...(priorityClass !== undefined && priorityClass !== '' ? { priorityClass } : {}),
    id,
    name: str(info.name, `${field}.name`, ''),
    user: str(info.user, `${field}.user`, '', MAX_LENGTH.user),
    role,
    principal: str(info.principal, `${field}.principal`, '', MAX_LENGTH.user),
    failoverTimeoutS: num(info.failover_timeout, `${field}.failover_timeout`) ?? 0,
  };
}

/** `inContainer`: a container's command may name no program at all, leaving it to its image (Mesos' Docker containerizer does). */
function parseCommand(value: unknown, field: string, inContainer: boolean, limits: ObjectLimits): CommandSpec {
  const c = obj(value, field)!;
  const shell = c.shell === undefined ? true : c.shell;
  if (typeof shell !== 'boolean') throw badRequest(`${field}.shell`, 'must be a boolean');
  const value_ = str(c.value, `${field}.value`, '', MAX_LENGTH.command);
  const args = arr(c.arguments, `${field}.arguments`).map((a, i) => str(a, `${field}.arguments[${i}]`, undefined, MAX_LENGTH.command));
  const commandLength = args.reduce((n, a) => n + a.length, value_.length);
  if (commandLength > MAX_LENGTH.command) throw badRequest(`${field}.arguments`, `the command is too long: ${commandLength} characters with its value, at most ${MAX_LENGTH.command}`);
  if (shell && value_ === '') throw badRequest(`${field}.value`, 'is required for a shell command');
  if (!shell && value_ === '' && args.length === 0 && !inContainer) throw badRequest(`${field}.value`, 'a command needs a program (only a container may leave it to its image)');
  const env = obj(c.environment, `${field}.environment`, false);
  const environment = arrAtMost(env?.variables, `${field}.environment.variables`, MAX_ITEMS.environment).map((v, i) => {
    const e = obj(v, `${field}.environment.variables[${i}]`)!;
    const name = str(e.name, `${field}.environment.variables[${i}].name`, undefined, MAX_LENGTH.envName);
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) throw badRequest(`${field}.environment.variables[${i}].name`, `'${name}' is not a valid variable name`);
    return { name, value: str(e.value, `${field}.environment.variables[${i}].value`, '', MAX_LENGTH.command) };
  });
  const tooLarge = envTooLarge(envBytes(environment.map((v) => [v.name, v.value] as const)), limits);
  if (tooLarge) throw badRequest(`${field}.environment.variables`, tooLarge);
  return { shell, value: value_, arguments: args, environment };
}

function parseTask(value: unknown, field: string, limits: ObjectLimits): TaskSpec {
  const t = obj(value, field)!;
  if (t.executor !== undefined) throw badRequest(`${field}.executor`, 'custom executors are not supported; give a command');
  const resources = Resources.fromMesos(t.resources, `${field}.resources`);
  const container = t.container === undefined ? undefined : parseContainer(t.container, resources, `${field}.container`);
  if (resources.getMilli('cpus') === 0 && resources.getMilli('mem') === 0) {
    throw badRequest(`${field}.resources`, 'a task needs some cpus or mem');
  }
  const labelsObj = obj(t.labels, `${field}.labels`, false);
  const labels = arrAtMost(labelsObj?.labels, `${field}.labels.labels`, MAX_ITEMS.labels).map((l, i) => {
    const o = obj(l, `${field}.labels.labels[${i}]`)!;
    return { name: str(o.key, `${field}.labels.labels[${i}].key`), value: str(o.value, `${field}.labels.labels[${i}].value`, '', MAX_LENGTH.labelValue) };
  });
  const kp = obj(t.kill_policy, `${field}.kill_policy`, false);
  const gp = obj(kp?.grace_period, `${field}.kill_policy.grace_period`, false);
  const graceNs = num(gp?.nanoseconds, `${field}.kill_policy.grace_period.nanoseconds`);
  const healthCheck = t.health_check === undefined ? undefined : parseHealthCheck(t.health_check, resources.portList(), container, `${field}.health_check`);
  return {
    taskId: idValue(t.task_id, `${field}.task_id`),
    name: str(t.name, `${field}.name`),
    agentId: idValue(t.agent_id, `${field}.agent_id`),
    resources,
    command: parseCommand(t.command, `${field}.command`, container !== undefined, limits),
    labels,
    killGraceMs: graceNs === undefined ? 0 : Math.round(graceNs / 1e6),
    ...(container ? { container } : {}),
    ...(healthCheck ? { healthCheck } : {}),
  };
}

/**
 * A container in Mesos' ContainerInfo JSON (`type: DOCKER`, `docker.image`, `network`,
 * `port_mappings`, `force_pull_image`, `volumes` with `mode`), or Cairn's lower-case form
 * with `pull_policy`. Host ports must come from the task's own ports; a mapping without one
 * gets the task's next unmapped port on the agent.
 */
function parseContainer(value: unknown, resources: Resources, field: string): ContainerSpec {
  const c = obj(value, field)!;
  const type = str(c.type, `${field}.type`, undefined, MAX_LENGTH.word).toLowerCase();
  if (type !== 'docker') throw badRequest(`${field}.type`, `container type '${type}' is not supported (supported: DOCKER)`);
  const d = obj(c.docker, `${field}.docker`)!;
  const image = str(d.image, `${field}.docker.image`);
  if (!/^[A-Za-z0-9][A-Za-z0-9._\/:@-]*$/.test(image)) throw badRequest(`${field}.docker.image`, `'${image}' is not an image reference`);
  const network = str(d.network, `${field}.docker.network`, 'HOST', MAX_LENGTH.word).toLowerCase();
  if (network !== 'host' && network !== 'bridge') throw badRequest(`${field}.docker.network`, `network '${network}' is not supported (supported: HOST, BRIDGE)`);
  const forcePull = d.force_pull_image === undefined ? false : d.force_pull_image;
  if (typeof forcePull !== 'boolean') throw badRequest(`${field}.docker.force_pull_image`, 'must be a boolean');
  const pullPolicy = str(d.pull_policy, `${field}.docker.pull_policy`, forcePull ? 'always' : 'if-not-present', MAX_LENGTH.word);
  if (pullPolicy !== 'always' && pullPolicy !== 'if-not-present' && pullPolicy !== 'never') {
    throw badRequest(`${field}.docker.pull_policy`, `must be always, if-not-present or never, got '${pullPolicy}'`);
  }
  const taskPorts = new Set(resources.portList());
  const portMappings: PortMapping[] = arr(d.port_mappings, `${field}.docker.port_mappings`).map((m, i) => {
    const f = `${field}.docker.port_mappings[${i}]`;
    const o = obj(m, f)!;
    const containerPort = num(o.container_port, `${f}.container_port`);
    if (containerPort === undefined || !Number.isInteger(containerPort) || containerPort < 1 || containerPort > 65535) {
      throw badRequest(`${f}.container_port`, 'must be a port number');
    }
    const hostPort = num(o.host_port, `${f}.host_port`) ?? 0;
    if (hostPort !== 0 && !taskPorts.has(hostPort)) throw badRequest(`${f}.host_port`, `port ${hostPort} is not among the task's ports`);
    const protocol = str(o.protocol, `${f}.protocol`, 'tcp', MAX_LENGTH.word).toLowerCase();
    if (protocol !== 'tcp' && protocol !== 'udp') throw badRequest(`${f}.protocol`, `must be tcp or udp, got '${protocol}'`);
    return { hostPort, containerPort, protocol };
  });
  if (network === 'host' && portMappings.length > 0) throw badRequest(`${field}.docker.port_mappings`, 'port mappings need BRIDGE networking');
  const explicit = new Set(portMappings.filter((m) => m.hostPort !== 0).map((m) => m.hostPort));
  const unmappedNeeded = portMappings.filter((m) => m.hostPort === 0).length;
  if (unmappedNeeded > taskPorts.size - explicit.size) {
    throw badRequest(`${field}.docker.port_mappings`, `${unmappedNeeded} mappings need a host port but the task has only ${taskPorts.size - explicit.size} free ports`);
  }
  const volumes = arr(c.volumes, `${field}.volumes`).map((v, i) => {
    const f = `${field}.volumes[${i}]`;
    const o = obj(v, f)!;
    const hostPath = str(o.host_path, `${f}.host_path`, undefined, MAX_LENGTH.path);
    const containerPath = str(o.container_path, `${f}.container_path`, undefined, MAX_LENGTH.path);
    const hostPathWrong = hostPathProblem(hostPath);
    if (hostPathWrong) throw badRequest(`${f}.host_path`, `'${hostPath.slice(0, 200)}' ${hostPathWrong}`);
    if (!containerPath.startsWith('/')) throw badRequest(`${f}.container_path`, 'must be an absolute path');
    const mode = str(o.mode, `${f}.mode`, 'RW', MAX_LENGTH.word).toUpperCase();
    if (mode !== 'RW' && mode !== 'RO') throw badRequest(`${f}.mode`, `must be RW or RO, got '${mode}'`);
    return { hostPath, containerPath, readOnly: mode === 'RO' };
  });
  const pullSecrets = arrAtMost(d.pull_secrets, `${field}.docker.pull_secrets`, MAX_PULL_SECRETS).map((n, i) => checkSecretName(n, `${field}.docker.pull_secrets[${i}]`));
  return { type: 'docker', docker: { image, network, portMappings, pullPolicy, ...(pullSecrets.length > 0 ? { pullSecrets } : {}) }, volumes };
}

const CALL_TYPES = ['SUBSCRIBE', 'ACCEPT', 'DECLINE', 'REVIVE', 'SUPPRESS', 'KILL', 'ACKNOWLEDGE', 'RECONCILE', 'TEARDOWN', 'REQUEST'];

/**
 * The id a refused task is answered under: its `task_id.value` when that is a string at all
 * (an over-long or ill-formed one is echoed back, as Mesos does); undefined when nothing
 * names the task, and the whole ACCEPT is refused.
 */
function refusedTaskOf(t: unknown, err: unknown, field: string): RefusedTask | undefined {
  if (!(err instanceof CairnError)) return undefined;
  const o = t as { task_id?: { value?: unknown }; agent_id?: { value?: unknown } } | null;
  const taskId = typeof o === 'object' && o !== null ? o.task_id?.value : undefined;
  if (typeof taskId !== 'string' || taskId === '') return undefined;
  const agentId = o!.agent_id?.value;
  return {
    taskId,
    ...(typeof agentId === 'string' && ID_PATTERN.test(agentId) ? { agentId } : {}),
    field: err.field ?? field,
    message: err.message,
  };
}

/** `limits`: the master's cap on a task's environment (sharing/object-limits.ts). */
export function parseSchedulerCall(raw: unknown, limits: ObjectLimits = DEFAULT_OBJECT_LIMITS): SchedulerCallParsed {
  const body = obj(stripNulls(raw), 'body')!;
  const type = str(body.type, 'type', undefined, MAX_LENGTH.word);
  if (!CALL_TYPES.includes(type)) {
    throw new CairnError('CAIRN_UNKNOWN_CALL', `unknown call type '${type}' (supported: ${CALL_TYPES.join(', ')})`, 'type');
  }
  if (type === 'SUBSCRIBE') {
    const sub = obj(body.subscribe, 'subscribe')!;
    const framework = parseFramework(obj(sub.framework_info, 'subscribe.framework_info')!, 'subscribe.framework_info');
    if (body.framework_id !== undefined) {
      const id = idValue(body.framework_id, 'framework_id');
      if (framework.id !== undefined && framework.id !== id) {
        throw badRequest('framework_id', 'does not match subscribe.framework_info.id');
      }
      framework.id = id;
    }
    return { type, framework };
  }
  const frameworkId = idValue(body.framework_id, 'framework_id');
  switch (type) {
    case 'ACCEPT': {
      const a = obj(body.accept, 'accept')!;
      const offerIds = arr(a.offer_ids, 'accept.offer_ids').map((o, i) => idValue(o, `accept.offer_ids[${i}]`));
      if (offerIds.length === 0) throw badRequest('accept.offer_ids', 'needs at least one offer id');
      const tasks: TaskSpec[] = [];
      const refused: RefusedTask[] = [];
      arr(a.operations, 'accept.operations').forEach((op, i) => {
        const o = obj(op, `accept.operations[${i}]`)!;
        const opType = str(o.type, `accept.operations[${i}].type`, undefined, MAX_LENGTH.word);
        if (opType !== 'LAUNCH') throw badRequest(`accept.operations[${i}].type`, `operation '${opType}' is not supported (supported: LAUNCH)`);
        const launch = obj(o.launch, `accept.operations[${i}].launch`)!;
        arr(launch.task_infos, `accept.operations[${i}].launch.task_infos`).forEach((t, j) => {
          const field = `accept.operations[${i}].launch.task_infos[${j}]`;
          try {
            tasks.push(parseTask(t, field, limits));
          } catch (err) {
            const r = refusedTaskOf(t, err, field);
            if (!r) throw err;
            refused.push(r);
          }
        });
      });
      return { type, frameworkId, offerIds, tasks, ...(refused.length > 0 ? { refused } : {}), refuseMs: refuseMs(a.filters, 'accept.filters') };
    }
    case 'DECLINE': {
      const d = obj(body.decline, 'decline')!;
      const offerIds = arr(d.offer_ids, 'decline.offer_ids').map((o, i) => idValue(o, `decline.offer_ids[${i}]`));
      return { type, frameworkId, offerIds, refuseMs: refuseMs(d.filters, 'decline.filters') };
    }
    case 'REVIVE':
    case 'SUPPRESS':
    case 'TEARDOWN':
      return { type, frameworkId };
    case 'REQUEST': {
      const r = obj(body.request, 'request')!;
      const members = arrAtMost(r.requests, 'request.requests', MAX_REQUEST_MEMBERS).map((q, i) => {
        const f = `request.requests[${i}]`;
        const res = Resources.fromMesos(obj(q, f)!.resources, `${f}.resources`);
        if (res.isEmpty()) throw badRequest(`${f}.resources`, 'must ask for something');
        return Resources.of({ cpus: res.cpus, mem: res.mem, disk: res.disk, gpus: res.gpus });
      });
      if (members.length === 0) throw badRequest('request.requests', 'needs at least one request');
      return { type, frameworkId, members, for: str(r.for, 'request.for', '', MAX_LENGTH.name) };
    }
    case 'KILL': {
      const k = obj(body.kill, 'kill')!;
      return { type, frameworkId, taskId: idValue(k.task_id, 'kill.task_id') };
    }
    case 'ACKNOWLEDGE': {
      const a = obj(body.acknowledge, 'acknowledge')!;
      const uuid = str(a.uuid, 'acknowledge.uuid', undefined, MAX_LENGTH.word);
      if (!/^[A-Za-z0-9+/]+={0,2}$/.test(uuid) || Buffer.from(uuid, 'base64').length !== 16) {
        throw badRequest('acknowledge.uuid', 'must be the base64 of a 16-byte uuid');
      }
      return { type, frameworkId, taskId: idValue(a.task_id, 'acknowledge.task_id'), agentId: idValue(a.agent_id, 'acknowledge.agent_id'), uuid };
    }
    default: {
      // RECONCILE
      const r = obj(body.reconcile, 'reconcile', false);
      const taskIds = arr(r?.tasks, 'reconcile.tasks').map((t, i) => idValue(obj(t, `reconcile.tasks[${i}]`)!.task_id, `reconcile.tasks[${i}].task_id`));
      return { type: 'RECONCILE', frameworkId, taskIds };
    }
  }
}

// ------------------------------------------------------------------ health checks
// A task's `health_check` (Mesos v1 HealthCheck JSON) compiled to what the agent runs: every
// default filled, durations in milliseconds.

/** Mesos' defaults (mesos.proto HealthCheck), in seconds. */
export const HEALTH_CHECK_DEFAULTS = {
  delaySeconds: 15,
  intervalSeconds: 10,
  timeoutSeconds: 20,
  consecutiveFailures: 3,
  gracePeriodSeconds: 10,
} as const;

/** The longest duration a check takes: a day, far below what a timer holds (24.8 days). */
const MAX_SECONDS = 86_400;
const MAX_FAILURES = 1_000_000;
const MAX_STATUSES = 100;

function healthSeconds(value: unknown, field: string, fallback: number, positive: boolean): number {
  if (value === undefined) return fallback * 1000;
  if (typeof value !== 'number' || !Number.isFinite(value)) throw badRequest(field, 'must be a number of seconds');
  if (value < 0) throw badRequest(field, `must not be negative, got ${value}`);
  if (positive && value === 0) throw badRequest(field, 'must be more than 0');
  if (value > MAX_SECONDS) throw badRequest(field, `must be at most ${MAX_SECONDS} seconds, got ${value}`);
  return Math.round(value * 1000);
}

function portOf(value: unknown, field: string): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > 65535) throw badRequest(field, 'must be a port number (1-65535)');
  return value;
}

/**
 * Whether the check's port is one the task can be reached on: a process task listens on its
 * own ports; a BRIDGE container on a mapped container port (or its host port); a HOST
 * container on whatever its image says, so any port goes.
 */
function checkPort(port: number, taskPorts: readonly number[], container: ContainerSpec | undefined, field: string): void {
  if (container?.docker.network === 'host') return;
  if (taskPorts.includes(port)) return;
  if (container) {
    const mapped = container.docker.portMappings.map((m) => m.containerPort);
    if (mapped.includes(port)) return;
    throw badRequest(field, `port ${port} is neither among the task's ports (${taskPorts.join(', ') || 'none'}) nor a mapped container port (${mapped.join(', ') || 'none'})`);
  }
  throw badRequest(field, `port ${port} is not among the task's ports (${taskPorts.join(', ') || 'none'})`);
}

const HEALTH_TYPES = { HTTP: 'http', TCP: 'tcp', COMMAND: 'command' } as const;

function parseHealthCheck(value: unknown, taskPorts: readonly number[], container: ContainerSpec | undefined, field: string): HealthCheckSpec {
  const h = obj(value, field)!;
  if (typeof h.type !== 'string') throw badRequest(`${field}.type`, 'is required: HTTP, TCP or COMMAND');
  const type = HEALTH_TYPES[h.type.toUpperCase() as keyof typeof HEALTH_TYPES];
  if (type === undefined) throw badRequest(`${field}.type`, `'${h.type.slice(0, 64)}' is not a health check type (HTTP, TCP or COMMAND)`);
  // The type and its sub-object must agree: a check of one kind with another's settings is a mistake.
  for (const other of Object.values(HEALTH_TYPES)) {
    if (other !== type && h[other] !== undefined) throw badRequest(`${field}.${other}`, `is set but the check's type is ${h.type.toUpperCase()}`);
  }
  if (h[type] === undefined) throw badRequest(`${field}.${type}`, `is required for a ${h.type.toUpperCase()} check`);
  const sub = obj(h[type], `${field}.${type}`)!;
  const spec: HealthCheckSpec = {
    type,
    port: 0,
    path: '/',
    scheme: 'http',
    statuses: [],
    command: '',
    delayMs: healthSeconds(h.delay_seconds, `${field}.delay_seconds`, HEALTH_CHECK_DEFAULTS.delaySeconds, false),
    intervalMs: healthSeconds(h.interval_seconds, `${field}.interval_seconds`, HEALTH_CHECK_DEFAULTS.intervalSeconds, true),
    timeoutMs: healthSeconds(h.timeout_seconds, `${field}.timeout_seconds`, HEALTH_CHECK_DEFAULTS.timeoutSeconds, true),
    gracePeriodMs: healthSeconds(h.grace_period_seconds, `${field}.grace_period_seconds`, HEALTH_CHECK_DEFAULTS.gracePeriodSeconds, false),
    consecutiveFailures: HEALTH_CHECK_DEFAULTS.consecutiveFailures,
  };
  if (h.consecutive_failures !== undefined) {
    const n = h.consecutive_failures;
    if (typeof n !== 'number' || !Number.isInteger(n) || n < 0 || n > MAX_FAILURES) throw badRequest(`${field}.consecutive_failures`, `must be a whole number from 0 to ${MAX_FAILURES}`);
    spec.consecutiveFailures = n;
  }
  if (type === 'command') {
    const v = sub.value;
    if (typeof v !== 'string' || v.trim() === '') throw badRequest(`${field}.command.value`, 'is required: the shell command to run');
    if (v.length > MAX_LENGTH.command) throw badRequest(`${field}.command.value`, `is too long: ${v.length} characters, at most ${MAX_LENGTH.command}`);
    spec.command = v;
    return spec;
  }
  spec.port = portOf(sub.port, `${field}.${type}.port`);
  checkPort(spec.port, taskPorts, container, `${field}.${type}.port`);
  if (type === 'tcp') return spec;
  if (sub.path !== undefined) {
    if (typeof sub.path !== 'string' || !sub.path.startsWith('/')) throw badRequest(`${field}.http.path`, 'must be a path starting with /');
    if (sub.path.length > MAX_LENGTH.path || /[\s\x00-\x1f\x7f]/.test(sub.path)) throw badRequest(`${field}.http.path`, `must be at most ${MAX_LENGTH.path} characters without spaces or control characters`);
    spec.path = sub.path;
  }
  if (sub.scheme !== undefined) {
    const scheme = typeof sub.scheme === 'string' ? sub.scheme.toLowerCase() : '';
    if (scheme !== 'http' && scheme !== 'https') throw badRequest(`${field}.http.scheme`, 'must be http or https');
    spec.scheme = scheme;
  }
  if (sub.statuses !== undefined) {
    if (!Array.isArray(sub.statuses)) throw badRequest(`${field}.http.statuses`, 'must be an array of HTTP statuses');
    if (sub.statuses.length > MAX_STATUSES) throw badRequest(`${field}.http.statuses`, `has ${sub.statuses.length} entries, at most ${MAX_STATUSES}`);
    spec.statuses = sub.statuses.map((s, i) => {
      if (typeof s !== 'number' || !Number.isInteger(s) || s < 100 || s > 599) throw badRequest(`${field}.http.statuses[${i}]`, 'must be an HTTP status (100-599)');
      return s;
    });
  }
  return spec;
}
