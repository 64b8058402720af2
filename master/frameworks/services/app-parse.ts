// Marathon app JSON in, AppDefinition out: Marathon's defaults filled, `null` read as
// absent, every error collected with its JSON path (Marathon answers all of them at once),
// and every field Cairn does not honour listed as ignored rather than silently dropped.
// Pure: no I/O.

import {
  APP_DEFAULTS,
  CONSTRAINT_OPERATORS,
  HEALTH_PROTOCOLS,
  portCount,
  type AppDefinition,
  type Constraint,
  type ConstraintOperator,
  type ContainerDefinition,
  type HealthCheckDefinition,
  type HealthProtocol,
  type PortDefinition,
  type PortMapping,
  type VolumeDefinition,
} from './app-model.ts';
import { invalid, type ValidationDetail } from './app-errors.ts';
import { readPullConfig } from './pull-config.ts';
import { hostPathProblem } from '../../../shared/host-paths.ts';
import { DEFAULT_OBJECT_LIMITS, type ObjectLimits } from '../../../shared/sharing/object-limits.ts';
import { checkAppId, checkAppLimits, MAX_APP_INSTANCES } from './app-limits.ts';

export interface ParsedApp {
  app: AppDefinition;
  /** Paths of fields given but not honoured (unknown, or known to Marathon and not to Cairn). */
  ignored: string[];
}

type Json = Record<string, unknown>;

/** Marathon fields Cairn reads. */
const KNOWN = new Set([
  'id', 'cmd', 'args', 'user', 'cpus', 'mem', 'disk', 'gpus', 'instances', 'env', 'labels', 'container',
  'portDefinitions', 'ports', 'requirePorts', 'constraints', 'healthChecks', 'upgradeStrategy', 'backoffSeconds',
  'backoffFactor', 'maxLaunchDelaySeconds', 'killSelection', 'taskKillGracePeriodSeconds', 'unreachableStrategy',
  'networks', 'role', 'executor',
]);
/** Fields Marathon answers with, read-only: accepted on input (a GET sent back as a PUT) and dropped. */
const READ_ONLY = new Set(['version', 'versionInfo', 'tasksStaged', 'tasksRunning', 'tasksHealthy', 'tasksUnhealthy', 'deployments', 'tasks', 'lastTaskFailure', 'ignoredFields']);

const APP_ID_SEGMENT = /^(([a-z0-9]|[a-z0-9][a-z0-9-]*[a-z0-9])\.)*([a-z0-9]|[a-z0-9][a-z0-9-]*[a-z0-9])$/;

/** `team/app`, `/team/app/` → `/team/app`; undefined when a segment is not Marathon's. */
export function normaliseAppId(raw: string, base = '/'): string | undefined {
  const abs = raw.startsWith('/') ? raw : `${base.replace(/\/+$/, '')}/${raw}`;
  const parts: string[] = [];
  for (const p of abs.split('/')) {
    if (p === '' || p === '.') continue;
    if (p === '..') {
      if (parts.length === 0) return undefined;
      parts.pop();
      continue;
    }
    if (!APP_ID_SEGMENT.test(p)) return undefined;
    parts.push(p);
  }
  if (parts.length === 0) return undefined;
  return `/${parts.join('/')}`;
}

class Reader {
  readonly details: ValidationDetail[] = [];
  readonly ignored: string[] = [];

  error(path: string, message: string): void {
    const d = this.details.find((x) => x.path === path);
    if (d) d.errors.push(message);
    else this.details.push({ path, errors: [message] });
  }

  obj(v: unknown, path: string): Json | undefined {
    if (v === undefined || v === null) return undefined;
    if (typeof v !== 'object' || Array.isArray(v)) {
      this.error(path, 'must be an object');
      return undefined;
    }
    return v as Json;
  }

  arr(v: unknown, path: string): unknown[] | undefined {
    if (v === undefined || v === null) return undefined;
    if (!Array.isArray(v)) {
      this.error(path, 'must be an array');
      return undefined;
    }
    return v;
  }

  str(v: unknown, path: string): string | undefined {
    if (v === undefined || v === null) return undefined;
    if (typeof v !== 'string') {
      this.error(path, 'must be a string');
      return undefined;
    }
    return v;
  }

  bool(v: unknown, path: string, dflt: boolean): boolean {
    if (v === undefined || v === null) return dflt;
    if (typeof v !== 'boolean') {
      this.error(path, 'must be a boolean');
      return dflt;
    }
    return v;
  }

  num(v: unknown, path: string, dflt: number, opts: { min?: number; max?: number; integer?: boolean } = {}): number {
    if (v === undefined || v === null) return dflt;
    if (typeof v !== 'number' || !Number.isFinite(v)) {
      this.error(path, 'must be a number');
      return dflt;
    }
    if (opts.integer && !Number.isInteger(v)) this.error(path, 'must be an integer');
    if (opts.min !== undefined && v < opts.min) this.error(path, `got ${v}, expected ${opts.min} or more`);
    if (opts.max !== undefined && v > opts.max) this.error(path, `got ${v}, expected ${opts.max} or less`);
    return v;
  }

  /** A string map; values must be strings (Marathon refuses numbers in env). */
  strMap(v: unknown, path: string): Record<string, string> {
    const o = this.obj(v, path);
    const out: Record<string, string> = {};
    if (!o) return out;
    for (const [k, val] of Object.entries(o)) {
      if (val === null || val === undefined) continue;
      if (typeof val === 'string') out[k] = val;
      else if (typeof val === 'object' && val !== null && 'secret' in val) this.ignored.push(`${path}/${k}`);
      else this.error(`${path}/${k}`, 'must be a string');
    }
    return out;
  }

  /** Lists the keys of `o` outside `known` as ignored. */
  unknownKeys(o: Json, known: readonly string[], path: string): void {
    for (const [k, v] of Object.entries(o)) if (!known.includes(k) && v !== null && v !== undefined) this.ignored.push(`${path}/${k}`);
  }
}

/**
 * Parses one app. `raw` is the decoded JSON body; `idFromPath` is the id in the URL of a
 * PUT (used when the body has none; a different one in the body is an error); `limits`: the
 * master's cap on a task's environment. Throws a 422 MarathonError listing every problem.
 */
export function parseApp(raw: unknown, idFromPath?: string, limits: ObjectLimits = DEFAULT_OBJECT_LIMITS): ParsedApp {
  const r = new Reader();
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    throw invalid([{ path: '/', errors: ['an app must be a JSON object'] }]);
  }
  const o = raw as Json;

  let id = '';
  const givenId = r.str(o.id, '/id');
  if (givenId === undefined && idFromPath === undefined) r.error('/id', 'is required');
  else {
    const normalised = normaliseAppId(givenId ?? idFromPath!);
    if (normalised === undefined) {
      r.error('/id', `'${givenId ?? idFromPath}' is not a valid app id: path segments of lower-case letters, digits, '-' and '.', not starting or ending with '-'`);
    } else {
      id = normalised;
      checkAppId(id, (path, message) => r.error(path, message));
    }
    if (normalised !== undefined && idFromPath !== undefined && givenId !== undefined && normaliseAppId(idFromPath) !== normalised) {
      r.error('/id', `'${givenId}' differs from the app id in the path '${idFromPath}'`);
    }
  }

  const cmd = r.str(o.cmd, '/cmd') ?? null;
  const argsRaw = r.arr(o.args, '/args');
  const args = argsRaw ? argsRaw.map((a, i) => r.str(a, `/args(${i})`) ?? '') : null;
  if (cmd !== null && args !== null) r.error('/', 'an app takes cmd or args, not both');

  const cpus = r.num(o.cpus, '/cpus', APP_DEFAULTS.cpus, { min: 0 });
  const mem = r.num(o.mem, '/mem', APP_DEFAULTS.mem, { min: 0 });
  const disk = r.num(o.disk, '/disk', APP_DEFAULTS.disk, { min: 0 });
  const gpus = r.num(o.gpus, '/gpus', APP_DEFAULTS.gpus, { min: 0, integer: true });
  if (cpus === 0 && mem === 0 && r.details.every((d) => d.path !== '/cpus' && d.path !== '/mem')) r.error('/cpus', 'an app needs some cpus or mem');
  const instances = r.num(o.instances, '/instances', APP_DEFAULTS.instances, { min: 0, max: MAX_APP_INSTANCES, integer: true });
  const env = r.strMap(o.env, '/env');
  for (const k of Object.keys(env)) if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(k)) r.error(`/env/${k}`, 'is not a valid variable name');
  const labels = r.strMap(o.labels, '/labels');

  const container = parseContainer(r, o.container, parseNetworks(r, o.networks));
  readPullConfig(r, o.container, o.secrets, container);
  // What Marathon answers with, read back: the one role Cairn's services run in, the command executor.
  const role = r.str(o.role, '/role');
  if (role !== undefined && role !== '*') r.error('/role', `'${role.slice(0, 64)}' is not a role apps run in here (services run in role '*')`);
  const executor = r.str(o.executor, '/executor');
  if (executor !== undefined && executor !== '' && executor !== '//cmd') r.ignored.push('/executor');
  // A Docker app without either runs its image's own entrypoint and command, as in Marathon.
  if (cmd === null && args === null && !container?.docker) r.error('/cmd', 'an app needs cmd or args (or a Docker image, whose own command then runs)');

  let portDefinitions: PortDefinition[] = [];
  const bridge = container?.docker?.network === 'BRIDGE';
  const pdRaw = r.arr(o.portDefinitions, '/portDefinitions');
  const legacyPorts = r.arr(o.ports, '/ports');
  if (pdRaw) {
    portDefinitions = pdRaw.map((p, i) => parsePortDefinition(r, p, `/portDefinitions(${i})`));
  } else if (legacyPorts) {
    portDefinitions = legacyPorts.map((p, i) => ({ port: r.num(p, `/ports(${i})`, 0, { min: 0, max: 65535, integer: true }), protocol: 'tcp' }));
  } else if (!bridge) {
    portDefinitions = [{ port: 0, protocol: 'tcp' }];
  }
  if (bridge && pdRaw && pdRaw.length > 0) r.error('/portDefinitions', 'BRIDGE networking takes container.docker.portMappings, not portDefinitions');
  const requirePorts = r.bool(o.requirePorts, '/requirePorts', APP_DEFAULTS.requirePorts);
  if (requirePorts) {
    portDefinitions.forEach((p, i) => {
      if (p.port === 0) r.error(`/portDefinitions(${i})/port`, 'requirePorts needs a port number, not 0');
    });
  }
  const names = new Set<string>();
  for (const [i, p] of portDefinitions.entries()) {
    if (p.name === undefined) continue;
    if (names.has(p.name)) r.error(`/portDefinitions(${i})/name`, `port name '${p.name}' is used twice`);
    names.add(p.name);
  }

  const constraints = (r.arr(o.constraints, '/constraints') ?? []).map((c, i) => parseConstraint(r, c, `/constraints(${i})`)).filter((c): c is Constraint => c !== undefined);

  const draft = { container, portDefinitions } as AppDefinition;
  const ports = portCount(draft);
  const healthChecks = (r.arr(o.healthChecks, '/healthChecks') ?? []).map((h, i) => parseHealthCheck(r, h, `/healthChecks(${i})`, ports));
  if (healthChecks.length > 1) r.ignored.push(...healthChecks.slice(1).map((_, i) => `/healthChecks(${i + 1})`));

  const us = r.obj(o.upgradeStrategy, '/upgradeStrategy');
  const upgradeStrategy = {
    minimumHealthCapacity: r.num(us?.minimumHealthCapacity, '/upgradeStrategy/minimumHealthCapacity', APP_DEFAULTS.upgradeStrategy.minimumHealthCapacity, { min: 0, max: 1 }),
    maximumOverCapacity: r.num(us?.maximumOverCapacity, '/upgradeStrategy/maximumOverCapacity', APP_DEFAULTS.upgradeStrategy.maximumOverCapacity, { min: 0, max: 1 }),
  };
  if (us) r.unknownKeys(us, ['minimumHealthCapacity', 'maximumOverCapacity'], '/upgradeStrategy');
  if (upgradeStrategy.minimumHealthCapacity === 1 && upgradeStrategy.maximumOverCapacity === 0) {
    // Nothing may stop before a new one is healthy and nothing may start beside it: no upgrade could move.
    r.error('/upgradeStrategy', 'minimumHealthCapacity 1 with maximumOverCapacity 0 leaves a rolling upgrade no room to move');
  }

  const backoffSeconds = r.num(o.backoffSeconds, '/backoffSeconds', APP_DEFAULTS.backoffSeconds, { min: 0 });
  const backoffFactor = r.num(o.backoffFactor, '/backoffFactor', APP_DEFAULTS.backoffFactor, { min: 1 });
  const maxLaunchDelaySeconds = r.num(o.maxLaunchDelaySeconds, '/maxLaunchDelaySeconds', APP_DEFAULTS.maxLaunchDelaySeconds, { min: 0 });
  const ks = r.str(o.killSelection, '/killSelection') ?? APP_DEFAULTS.killSelection;
  if (ks !== 'YOUNGEST_FIRST' && ks !== 'OLDEST_FIRST') r.error('/killSelection', `'${ks}' is not one of YOUNGEST_FIRST, OLDEST_FIRST`);
  const tkg = o.taskKillGracePeriodSeconds === undefined || o.taskKillGracePeriodSeconds === null ? null : r.num(o.taskKillGracePeriodSeconds, '/taskKillGracePeriodSeconds', 0, { min: 0 });

  const un = r.obj(o.unreachableStrategy, '/unreachableStrategy');
  const unreachableStrategy = {
    inactiveAfterSeconds: r.num(un?.inactiveAfterSeconds, '/unreachableStrategy/inactiveAfterSeconds', APP_DEFAULTS.unreachableStrategy.inactiveAfterSeconds, { min: 0 }),
    expungeAfterSeconds: r.num(un?.expungeAfterSeconds, '/unreachableStrategy/expungeAfterSeconds', APP_DEFAULTS.unreachableStrategy.expungeAfterSeconds, { min: 0 }),
  };
  if (unreachableStrategy.expungeAfterSeconds < unreachableStrategy.inactiveAfterSeconds) {
    r.error('/unreachableStrategy/expungeAfterSeconds', 'must be at least inactiveAfterSeconds');
  }

  const unknown: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(o)) {
    if (KNOWN.has(k) || READ_ONLY.has(k) || v === null || v === undefined) continue;
    unknown[k] = v;
    r.ignored.push(`/${k}`);
  }
  if (legacyPorts && pdRaw) r.ignored.push('/ports');
  // Tasks run as the agent's task user: the scheduler API's command carries no user of its own.
  if (typeof o.user === 'string') r.ignored.push('/user');

  if (r.details.length > 0) throw invalid(r.details);
  const app: AppDefinition = {
    id, cmd, args, user: r.str(o.user, '/user') ?? null, cpus, mem, disk, gpus, instances, env, labels, container,
    portDefinitions, requirePorts, constraints, healthChecks, upgradeStrategy, backoffSeconds, backoffFactor,
    maxLaunchDelaySeconds, killSelection: ks as AppDefinition['killSelection'], taskKillGracePeriodSeconds: tkg,
    unreachableStrategy, unknown,
  };
  // What its tasks would carry, checked on the whole app: its environment is built from several fields.
  checkAppLimits(app, limits, (path, message) => r.error(path, message));
  if (r.details.length > 0) throw invalid(r.details);
  return { app, ignored: r.ignored };
}

function parsePortDefinition(r: Reader, v: unknown, path: string): PortDefinition {
  const o = r.obj(v, path) ?? {};
  r.unknownKeys(o, ['port', 'protocol', 'name', 'labels'], path);
  const name = r.str(o.name, `${path}/name`);
  if (name !== undefined && !/^[a-z0-9-]+$/.test(name)) r.error(`${path}/name`, `'${name}' is not a port name (lower-case letters, digits, '-')`);
  const labels = o.labels === undefined || o.labels === null ? undefined : r.strMap(o.labels, `${path}/labels`);
  return {
    port: r.num(o.port, `${path}/port`, 0, { min: 0, max: 65535, integer: true }),
    protocol: parseProtocol(r, o.protocol, `${path}/protocol`),
    ...(name !== undefined ? { name } : {}),
    ...(labels ? { labels } : {}),
  };
}

function parseProtocol(r: Reader, v: unknown, path: string): string {
  const p = r.str(v, path) ?? 'tcp';
  if (!['tcp', 'udp', 'udp,tcp', 'tcp,udp'].includes(p)) r.error(path, `'${p}' is not one of tcp, udp, udp,tcp`);
  return p;
}

function parseConstraint(r: Reader, v: unknown, path: string): Constraint | undefined {
  const a = r.arr(v, path);
  if (!a) return undefined;
  if (a.length < 2 || a.length > 3 || a.some((x) => typeof x !== 'string')) {
    r.error(path, 'a constraint is [field, operator] or [field, operator, value], all strings');
    return undefined;
  }
  const [field, op, value] = a as string[];
  if (!(CONSTRAINT_OPERATORS as readonly string[]).includes(op!)) {
    r.error(path, `Constraint operator must be one of the following: ${CONSTRAINT_OPERATORS.join(', ')}; got '${op}'`);
    return undefined;
  }
  const operator = op as ConstraintOperator;
  const needsValue = operator === 'CLUSTER' || operator === 'LIKE' || operator === 'UNLIKE' || operator === 'MAX_PER' || operator === 'IS';
  if (needsValue && value === undefined && operator !== 'CLUSTER') {
    r.error(path, `${operator} needs a value`);
    return undefined;
  }
  if (operator === 'UNIQUE' && value !== undefined) r.error(path, 'UNIQUE takes no value');
  if ((operator === 'LIKE' || operator === 'UNLIKE') && value !== undefined) {
    try {
      new RegExp(`^(?:${value})$`);
    } catch {
      r.error(path, `'${value}' is not a regular expression`);
    }
  }
  if ((operator === 'MAX_PER' || operator === 'GROUP_BY') && value !== undefined && !/^[1-9][0-9]*$/.test(value)) {
    r.error(path, `${operator} takes a positive integer, got '${value}'`);
  }
  return { field: field!, operator, ...(value !== undefined ? { value } : {}) };
}

function parseHealthCheck(r: Reader, v: unknown, path: string, ports: number): HealthCheckDefinition {
  const o = r.obj(v, path) ?? {};
  r.unknownKeys(o, ['protocol', 'path', 'portIndex', 'port', 'command', 'gracePeriodSeconds', 'intervalSeconds', 'timeoutSeconds', 'maxConsecutiveFailures', 'delaySeconds', 'ignoreHttp1xx', 'ipProtocol'], path);
  const protocol = (r.str(o.protocol, `${path}/protocol`) ?? 'HTTP') as HealthProtocol;
  if (!(HEALTH_PROTOCOLS as readonly string[]).includes(protocol)) r.error(`${path}/protocol`, `'${protocol}' is not one of ${HEALTH_PROTOCOLS.join(', ')}`);
  const d = APP_DEFAULTS.health;
  const port = o.port === undefined || o.port === null ? undefined : r.num(o.port, `${path}/port`, 0, { min: 1, max: 65535, integer: true });
  const portIndex = r.num(o.portIndex, `${path}/portIndex`, d.portIndex, { min: 0, integer: true });
  let command: string | undefined;
  if (protocol === 'COMMAND') {
    const c = r.obj(o.command, `${path}/command`);
    command = r.str(c?.value, `${path}/command/value`);
    if (command === undefined) r.error(`${path}/command`, 'a COMMAND health check needs command.value');
  } else if (port === undefined && portIndex >= ports) {
    r.error(`${path}/portIndex`, `portIndex ${portIndex} is past the app's ${ports} port${ports === 1 ? '' : 's'}`);
  }
  return {
    protocol,
    path: r.str(o.path, `${path}/path`) ?? d.path,
    portIndex,
    ...(port !== undefined ? { port } : {}),
    ...(command !== undefined ? { command } : {}),
    gracePeriodSeconds: r.num(o.gracePeriodSeconds, `${path}/gracePeriodSeconds`, d.gracePeriodSeconds, { min: 0 }),
    intervalSeconds: r.num(o.intervalSeconds, `${path}/intervalSeconds`, d.intervalSeconds, { min: 0 }),
    timeoutSeconds: r.num(o.timeoutSeconds, `${path}/timeoutSeconds`, d.timeoutSeconds, { min: 0 }),
    maxConsecutiveFailures: r.num(o.maxConsecutiveFailures, `${path}/maxConsecutiveFailures`, d.maxConsecutiveFailures, { min: 0, integer: true }),
    delaySeconds: r.num(o.delaySeconds, `${path}/delaySeconds`, d.delaySeconds, { min: 0 }),
  };
}

/**
 * Marathon 1.5+'s `networks`: `host` or `container/bridge` (a Docker app's network where
 * `docker.network` is not given); undefined when absent. Named container networks are refused.
 */
function parseNetworks(r: Reader, v: unknown): 'HOST' | 'BRIDGE' | undefined {
  const list = r.arr(v, '/networks');
  if (!list || list.length === 0) return undefined;
  if (list.length > 1) r.error('/networks', 'one network only (host or container/bridge)');
  const n = r.obj(list[0], '/networks(0)') ?? {};
  r.unknownKeys(n, ['mode', 'name', 'labels'], '/networks(0)');
  const mode = r.str(n.mode, '/networks(0)/mode') ?? 'container';
  if (mode === 'host') return 'HOST';
  if (mode === 'container/bridge') return 'BRIDGE';
  r.error('/networks(0)/mode', `'${mode.slice(0, 64)}' is not supported (supported: host, container/bridge)`);
  return undefined;
}

function parseContainer(r: Reader, v: unknown, networks?: 'HOST' | 'BRIDGE'): ContainerDefinition | null {
  const c = r.obj(v, '/container');
  if (!c) return null;
  r.unknownKeys(c, ['type', 'docker', 'volumes', 'portMappings'], '/container');
  const type = r.str(c.type, '/container/type') ?? 'DOCKER';
  if (type !== 'DOCKER' && type !== 'MESOS') r.error('/container/type', `'${type}' is not one of DOCKER, MESOS`);
  const volumes: VolumeDefinition[] = (r.arr(c.volumes, '/container/volumes') ?? []).map((x, i) => {
    const p = `/container/volumes(${i})`;
    const o = r.obj(x, p) ?? {};
    r.unknownKeys(o, ['containerPath', 'hostPath', 'mode'], p);
    const containerPath = r.str(o.containerPath, `${p}/containerPath`) ?? '';
    const hostPath = r.str(o.hostPath, `${p}/hostPath`) ?? '';
    if (!containerPath.startsWith('/')) r.error(`${p}/containerPath`, 'must be an absolute path');
    if (!hostPath.startsWith('/')) r.error(`${p}/hostPath`, 'must be an absolute path (persistent and external volumes are not supported)');
    else if (hostPathProblem(hostPath)) r.error(`${p}/hostPath`, `'${hostPath.slice(0, 200)}' ${hostPathProblem(hostPath)!}`);
    const mode = r.str(o.mode, `${p}/mode`) ?? 'RW';
    if (mode !== 'RO' && mode !== 'RW') r.error(`${p}/mode`, `'${mode}' is not one of RO, RW`);
    return { containerPath, hostPath, mode: mode as 'RO' | 'RW' };
  });
  const d = r.obj(c.docker, '/container/docker');
  if (!d) {
    if (type === 'DOCKER') r.error('/container/docker', 'a DOCKER container needs docker.image');
    return { type: type as 'DOCKER' | 'MESOS', volumes };
  }
  r.unknownKeys(d, ['image', 'network', 'portMappings', 'forcePullImage', 'privileged', 'parameters', 'pullConfig'], '/container/docker');
  const image = r.str(d.image, '/container/docker/image');
  if (image === undefined) r.error('/container/docker/image', 'is required');
  else if (!/^[A-Za-z0-9][A-Za-z0-9._/:@-]*$/.test(image)) r.error('/container/docker/image', `'${image}' is not an image reference`);
  const network = r.str(d.network, '/container/docker/network') ?? networks ?? 'HOST';
  if (network !== 'HOST' && network !== 'BRIDGE') r.error('/container/docker/network', `'${network}' is not supported (supported: HOST, BRIDGE)`);
  const mappingsRaw = r.arr(d.portMappings ?? c.portMappings, '/container/docker/portMappings') ?? [];
  if (network === 'HOST' && mappingsRaw.length > 0) {
    r.error('/container/docker/portMappings', 'port mappings are only allowed with BRIDGE networking');
  }
  const portMappings: PortMapping[] = mappingsRaw.map((x, i) => {
    const p = `/container/docker/portMappings(${i})`;
    const o = r.obj(x, p) ?? {};
    r.unknownKeys(o, ['containerPort', 'hostPort', 'servicePort', 'protocol', 'name', 'labels'], p);
    const name = r.str(o.name, `${p}/name`);
    return {
      containerPort: r.num(o.containerPort, `${p}/containerPort`, 0, { min: 1, max: 65535, integer: true }),
      hostPort: r.num(o.hostPort, `${p}/hostPort`, 0, { min: 0, max: 65535, integer: true }),
      servicePort: r.num(o.servicePort, `${p}/servicePort`, 0, { min: 0, max: 65535, integer: true }),
      protocol: parseProtocol(r, o.protocol, `${p}/protocol`),
      ...(name !== undefined ? { name } : {}),
    };
  });
  const privileged = r.bool(d.privileged, '/container/docker/privileged', false);
  // Not passed on: the agent's container spec has no privileged mode nor free-form docker run flags.
  if (privileged) r.ignored.push('/container/docker/privileged');
  const parameters = (r.arr(d.parameters, '/container/docker/parameters') ?? []).map((x, i) => {
    const o = r.obj(x, `/container/docker/parameters(${i})`) ?? {};
    return { key: r.str(o.key, `/container/docker/parameters(${i})/key`) ?? '', value: r.str(o.value, `/container/docker/parameters(${i})/value`) ?? '' };
  });
  if (parameters.length > 0) r.ignored.push('/container/docker/parameters');
  return {
    type: type as 'DOCKER' | 'MESOS',
    docker: {
      image: image ?? '',
      network: network as 'HOST' | 'BRIDGE',
      portMappings,
      forcePullImage: r.bool(d.forcePullImage, '/container/docker/forcePullImage', false),
      privileged,
      parameters,
    },
    volumes,
  };
}
