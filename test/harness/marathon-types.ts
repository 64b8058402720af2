// Marathon 1.9's response types, field by field, as a strict client maps them: every field
// it knows and no other, required ones present, each of its type. Written from Marathon's
// RAML (mesosphere/marathon v1.9.109, docs/docs/rest-api/public/api/v2/types/*.raml; each
// type names its file) and, for the event stream, which the RAML does not type, from
// core/event/Events.scala with api/v2/json/Formats.scala (EventFormats). A key ending in `?`
// is optional, as in RAML; `nullable` marks where Marathon's writer sends null.
// `decode(type, value)` returns every mismatch with its JSON path; none means a strict
// client would read the value.

export type Type =
  | { k: 'string' | 'number' | 'integer' | 'boolean' | 'datetime' | 'any' }
  | { k: 'enum'; values: readonly string[] }
  | { k: 'array'; items: Type }
  | { k: 'map'; values: Type }
  | { k: 'object'; name: string; props: Record<string, Type> }
  | { k: 'union'; of: Type[] }
  | { k: 'nullable'; t: Type }
  | { k: 'lazy'; get: () => Type };

const str: Type = { k: 'string' };
const num: Type = { k: 'number' };
const int: Type = { k: 'integer' };
const bool: Type = { k: 'boolean' };
const datetime: Type = { k: 'datetime' };
const any: Type = { k: 'any' };
const arr = (items: Type): Type => ({ k: 'array', items });
const map = (values: Type): Type => ({ k: 'map', values });
const oneOf = (...values: string[]): Type => ({ k: 'enum', values });
const union = (...of: Type[]): Type => ({ k: 'union', of });
const nullable = (t: Type): Type => ({ k: 'nullable', t });
const lazy = (get: () => Type): Type => ({ k: 'lazy', get });
const obj = (name: string, props: Record<string, Type>): Type => ({ k: 'object', name, props });
/** A RAML type extending another (`type: Base` with more properties). */
const extend = (name: string, base: Type, props: Record<string, Type>): Type => {
  if (base.k !== 'object') throw new Error(`${name} extends a non-object`);
  return obj(name, { ...base.props, ...props });
};

// stringTypes.raml
const PathId = str;
const MesosTaskState = oneOf('TASK_ERROR', 'TASK_FAILED', 'TASK_FINISHED', 'TASK_KILLED', 'TASK_KILLING', 'TASK_RUNNING', 'TASK_STAGING', 'TASK_STARTING', 'TASK_LOST', 'TASK_DROPPED', 'TASK_UNREACHABLE', 'TASK_GONE', 'TASK_GONE_BY_OPERATOR', 'TASK_UNKNOWN');
const IpProtocol = oneOf('IPv4', 'IPv6');
const NetworkProtocol = oneOf('tcp', 'udp', 'udp,tcp', 'tcp,udp');
export const Identifiable = obj('Identifiable', { id: str });
export const Message = obj('Message', { message: str });

// label.raml (KVLabels), environmentVariable.raml (LegacyEnvVars: a string or a secret reference)
const KVLabels = map(str);
const LegacyEnvVars = map(union(str, obj('EnvVarSecret', { secret: str })));

// network.raml
const PortDefinition = obj('PortDefinition', { 'port?': int, 'labels?': KVLabels, 'name?': str, 'protocol?': NetworkProtocol });
const Network = obj('Network', { 'name?': str, 'mode?': oneOf('container', 'container/bridge', 'host'), 'labels?': KVLabels });

// appContainer.raml, docker.raml, volumes.raml (AppHostVolume, the one kind Cairn takes)
const ContainerPortMapping = obj('ContainerPortMapping', {
  'containerPort?': int, 'hostPort?': int, 'labels?': KVLabels, 'name?': str, 'protocol?': NetworkProtocol, 'servicePort?': int, 'networkNames?': arr(str),
});
const DockerContainer = obj('DockerContainer', {
  'credential?': obj('DockerCredentials', { principal: str, 'secret?': str }),
  'pullConfig?': obj('DockerPullConfig', { secret: str }),
  'forcePullImage?': bool, image: str, 'network?': oneOf('BRIDGE', 'HOST', 'NONE', 'USER'),
  'parameters?': arr(obj('DockerParameter', { key: str, value: str })), 'portMappings?': arr(ContainerPortMapping), 'privileged?': bool,
});
const AppHostVolume = obj('AppHostVolume', { containerPath: str, hostPath: str, mode: oneOf('RO', 'RW') });
const Container = obj('Container', {
  type: oneOf('MESOS', 'DOCKER'), 'docker?': DockerContainer, 'linuxInfo?': any, 'volumes?': arr(AppHostVolume), 'portMappings?': arr(ContainerPortMapping),
});

// healthCheck.raml
const AppHealthCheck = obj('AppHealthCheck', {
  'command?': obj('AppCommandCheck', { value: str }), 'gracePeriodSeconds?': int, 'ignoreHttp1xx?': bool, 'intervalSeconds?': int,
  'maxConsecutiveFailures?': int, 'path?': str, 'port?': int, 'portIndex?': int,
  'protocol?': oneOf('HTTP', 'HTTPS', 'TCP', 'COMMAND', 'MESOS_HTTP', 'MESOS_HTTPS', 'MESOS_TCP'), 'ipProtocol?': IpProtocol,
  'timeoutSeconds?': int, 'delaySeconds?': int,
});
const Health = obj('Health', {
  alive: bool, consecutiveFailures: int, 'firstSuccess?': str, instanceId: str, 'lastSuccess?': str, 'lastFailure?': str, 'lastFailureCause?': str,
});

// versionInfo.raml, unreachableStrategy.raml, killSelection.raml
const VersionInfo = obj('VersionInfo', { lastScalingAt: datetime, lastConfigChangeAt: datetime });
const UnreachableStrategy = union(oneOf('disabled'), obj('UnreachableEnabled', { 'inactiveAfterSeconds?': int, 'expungeAfterSeconds?': int }));
const KillSelection = oneOf('YOUNGEST_FIRST', 'OLDEST_FIRST');

// app.raml: App (the fields appWriter in raml/AppConversion.scala may write; the deprecated
// `ports`, `uris` and `ipAddress` are in the RAML too, and never written)
export const App = obj('App', {
  id: PathId, 'acceptedResourceRoles?': arr(str), 'args?': arr(str), 'backoffFactor?': num, 'backoffSeconds?': int, 'cmd?': str,
  'constraints?': arr(arr(str)), 'container?': Container, 'cpus?': num, 'dependencies?': arr(PathId), 'disk?': num, 'env?': LegacyEnvVars,
  'executor?': str, 'executorResources?': any, 'fetch?': arr(any), 'healthChecks?': arr(AppHealthCheck), 'check?': any, 'instances?': int,
  'labels?': KVLabels, 'maxLaunchDelaySeconds?': int, 'mem?': num, 'gpus?': int, 'ipAddress?': any, 'networks?': arr(Network),
  'ports?': arr(int), 'portDefinitions?': arr(PortDefinition), 'readinessChecks?': arr(any), 'residency?': any, 'requirePorts?': bool,
  'secrets?': map(any), 'taskKillGracePeriodSeconds?': int,
  'upgradeStrategy?': obj('UpgradeStrategy', { 'maximumOverCapacity?': num, 'minimumHealthCapacity?': num }),
  'uris?': arr(str), 'user?': str, 'version?': datetime, 'versionInfo?': VersionInfo, 'killSelection?': KillSelection,
  'unreachableStrategy?': UnreachableStrategy, 'tty?': bool, 'role?': str,
});

// task.raml
export const Task = obj('Task', {
  appId: PathId, 'healthCheckResults?': arr(Health), 'checkResult?': any, host: str, id: str,
  'ipAddresses?': arr(obj('IpAddr', { ipAddress: str, protocol: IpProtocol })), 'ports?': arr(int), 'servicePorts?': arr(int),
  'slaveId?': str, state: MesosTaskState, 'stagedAt?': str, 'startedAt?': str, 'version?': str, 'localVolumes?': arr(any),
  'region?': str, 'zone?': str, role: str,
});
export const TaskFailure = obj('TaskFailure', {
  appId: PathId, host: str, message: str, state: str, taskId: str, timestamp: datetime, version: datetime, 'slaveId?': str,
});
export const TaskList = obj('TaskList', { tasks: arr(Task) });
export const TaskSingle = obj('TaskSingle', { task: Task });

// app.raml: AppInfo (App with what `embed` adds), AppList, VersionList; apps.raml: the single app's `{app}`
export const AppInfo = extend('AppInfo', App, {
  'tasksStaged?': int, 'tasksRunning?': int, 'tasksHealthy?': int, 'tasksUnhealthy?': int, 'deployments?': arr(Identifiable),
  'readinessCheckResults?': arr(any), 'tasks?': arr(Task), 'lastTaskFailure?': TaskFailure, 'tasksStats?': any,
});
export const AppList = obj('AppList', { apps: arr(AppInfo) });
export const AppSingle = obj('AppSingle', { app: AppInfo });
export const VersionList = obj('VersionList', { versions: arr(datetime) });

// deploymentResult.raml
export const DeploymentResult = obj('DeploymentResult', { deploymentId: str, version: datetime });

// deploymentAction.raml, deploymentSteps.raml, deploymentPlan.raml, deploymentEventsInfo.raml
const DeploymentActionName = oneOf('StartApplication', 'StopApplication', 'ScaleApplication', 'RestartApplication', 'StartPod', 'StopPod', 'ScalePod', 'RestartPod', 'ResolveArtifacts');
export const DeploymentAction = obj('DeploymentAction', { action: DeploymentActionName, 'app?': PathId, 'pod?': PathId });
export const DeploymentStep = obj('DeploymentStep', { actions: arr(DeploymentAction) });
export const DeploymentPlan = obj('DeploymentPlan', { id: str, steps: arr(DeploymentStep), version: datetime });
const DeploymentActionInfo = extend('DeploymentActionInfo', DeploymentAction, { readinessCheckResults: arr(any) });
export const DeploymentStepInfo = extend('DeploymentStepInfo', DeploymentPlan, {
  affectedApps: arr(PathId), affectedPods: arr(PathId), currentActions: arr(DeploymentActionInfo), currentStep: int, totalSteps: int,
});
export const DeploymentList = arr(DeploymentStepInfo);

// queue.raml
const DeclinedOfferStep = obj('DeclinedOfferStep', { reason: str, declined: int, processed: int });
const ProcessedOffersSummary = obj('ProcessedOffersSummary', {
  processedOffersCount: int, unusedOffersCount: int, 'lastUnusedOfferAt?': datetime, 'lastUsedOfferAt?': datetime,
  'rejectSummaryLastOffers?': arr(DeclinedOfferStep), 'rejectSummaryLaunchAttempt?': arr(DeclinedOfferStep),
});
export const QueueApp = obj('QueueApp', {
  count: int, role: str, delay: obj('QueueDelay', { timeLeftSeconds: int, overdue: bool }), since: datetime,
  processedOffersSummary: ProcessedOffersSummary, 'lastUnusedOffers?': arr(any), app: App,
});
export const Queue = obj('Queue', { 'queue?': arr(QueueApp) });

// info.raml (InfoResource.scala writes its optional values with Json.obj: null when unset)
const MarathonConfig = obj('MarathonConfig', {
  'access_control_allow_origin?': nullable(arr(str)), 'checkpoint?': nullable(bool), 'decline_offer_duration?': nullable(int),
  'default_network_name?': nullable(str), 'env_vars_prefix?': nullable(str), 'executor?': nullable(str), 'failover_timeout?': nullable(int),
  features: arr(str), 'framework_name?': nullable(str), 'ha?': nullable(bool), 'hostname?': nullable(str), 'launch_token?': nullable(int),
  'launch_token_refresh_interval?': nullable(int), 'leader_proxy_connection_timeout_ms?': nullable(int), 'leader_proxy_read_timeout_ms?': nullable(int),
  'local_port_max?': nullable(int), 'local_port_min?': nullable(int), 'master?': nullable(str), 'max_instances_per_offer?': nullable(int),
  'mesos_bridge_name?': nullable(str), 'mesos_heartbeat_failure_threshold?': nullable(int), 'mesos_heartbeat_interval?': nullable(int),
  'mesos_leader_ui_url?': nullable(str), 'mesos_role?': nullable(str), 'mesos_user?': nullable(str), 'min_revive_offers_interval?': nullable(int),
  'offer_matching_timeout?': nullable(int), 'on_elected_prepare_timeout?': nullable(int), 'reconciliation_initial_delay?': nullable(int),
  'reconciliation_interval?': nullable(int), 'scale_apps_initial_delay?': nullable(int), 'scale_apps_interval?': nullable(int),
  'store_cache?': nullable(bool), 'task_launch_confirm_timeout?': nullable(int), 'task_launch_timeout?': nullable(int),
  task_lost_expunge_initial_delay: int, task_lost_expunge_interval: int, 'task_reservation_timeout?': nullable(int), 'webui_url?': nullable(str),
});
const ZooKeeperConfig = obj('ZooKeeperConfig', {
  zk: str, 'zk_compression?': nullable(bool), 'zk_compression_threshold?': nullable(int), zk_connection_timeout: int,
  'zk_max_node_size?': nullable(int), zk_max_versions: int, zk_session_timeout: int, zk_timeout: int,
});
export const MarathonInfo = obj('MarathonInfo', {
  name: str, version: str, buildref: str, elected: bool, 'leader?': nullable(str), 'frameworkId?': nullable(str),
  marathon_config: MarathonConfig, zookeeper_config: ZooKeeperConfig, http_config: obj('HttpConfig', { http_port: int, https_port: int }),
});
export const LeaderInfo = obj('LeaderInfo', { leader: str });

// group.raml (pods are PodStatus, which Cairn never lists)
export const GroupInfo: Type = obj('GroupInfo', {
  id: PathId, 'apps?': arr(AppInfo), 'pods?': arr(any), 'groups?': arr(lazy(() => GroupInfo)), 'dependencies?': arr(PathId),
  'version?': datetime, 'enforceRole?': bool,
});

// error.raml; `details[].path` as api/v2/Validation.scala (failureWrites) writes it, which the RAML leaves out
export const ErrorBody = obj('Error', { message: str, 'details?': arr(obj('ErrorDetail', { 'path?': str, 'message?': str, 'errors?': arr(str) })) });
/** 409 of a locked app (AppLockedException): the deployments holding it. */
export const LockedError = obj('AppLocked', { message: str, deployments: arr(Identifiable) });

// The event stream: core/event/Events.scala, written by EventFormats (Formats.scala); every
// event carries eventType and timestamp. Options are left out when None (Json.writes).
const ev = (name: string, props: Record<string, Type>): Type => obj(name, { ...props, eventType: oneOf(name), timestamp: datetime });
export const EVENTS: Record<string, Type> = {
  api_post_event: ev('api_post_event', { clientIp: str, uri: str, appDefinition: App }),
  event_stream_attached: ev('event_stream_attached', { remoteAddress: str }),
  event_stream_detached: ev('event_stream_detached', { remoteAddress: str }),
  status_update_event: ev('status_update_event', {
    slaveId: str, taskId: str, taskStatus: MesosTaskState, message: str, appId: PathId, host: str,
    ipAddresses: arr(obj('IPAddress', { ipAddress: str, protocol: IpProtocol })), ports: arr(int), version: str,
  }),
  health_status_changed_event: ev('health_status_changed_event', { appId: PathId, instanceId: str, version: datetime, alive: bool }),
  deployment_info: ev('deployment_info', { plan: DeploymentPlan, currentStep: DeploymentStep }),
  deployment_success: ev('deployment_success', { id: str, plan: DeploymentPlan }),
  deployment_failed: ev('deployment_failed', { id: str, plan: DeploymentPlan, 'reason?': str }),
  deployment_step_success: ev('deployment_step_success', { plan: DeploymentPlan, currentStep: DeploymentStep }),
  deployment_step_failure: ev('deployment_step_failure', { plan: DeploymentPlan, currentStep: DeploymentStep }),
  app_terminated_event: ev('app_terminated_event', { appId: PathId }),
  group_change_success: ev('group_change_success', { groupId: PathId, version: str }),
};

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:?\d{2})$/;

/** Every way `v` differs from `t`, each as `path: what`; empty when a strict client reads it. */
export function decode(t: Type, v: unknown, path = ''): string[] {
  const at = path === '' ? '/' : path;
  switch (t.k) {
    case 'any': return v === undefined ? [`${at}: missing`] : [];
    case 'string': return typeof v === 'string' ? [] : [`${at}: expected a string, got ${JSON.stringify(v)}`];
    case 'number': return typeof v === 'number' && Number.isFinite(v) ? [] : [`${at}: expected a number, got ${JSON.stringify(v)}`];
    case 'integer': return Number.isInteger(v) ? [] : [`${at}: expected an integer, got ${JSON.stringify(v)}`];
    case 'boolean': return typeof v === 'boolean' ? [] : [`${at}: expected a boolean, got ${JSON.stringify(v)}`];
    case 'datetime': return typeof v === 'string' && ISO.test(v) ? [] : [`${at}: expected an ISO-8601 date-time, got ${JSON.stringify(v)}`];
    case 'enum': return typeof v === 'string' && t.values.includes(v) ? [] : [`${at}: expected one of ${t.values.join(', ')}, got ${JSON.stringify(v)}`];
    case 'nullable': return v === null ? [] : decode(t.t, v, path);
    case 'lazy': return decode(t.get(), v, path);
    case 'union': {
      const tries = t.of.map((x) => decode(x, v, path));
      return tries.some((e) => e.length === 0) ? [] : [`${at}: matches none of its types (${tries.map((e) => e[0]).join('; ')})`];
    }
    case 'array':
      if (!Array.isArray(v)) return [`${at}: expected an array, got ${JSON.stringify(v)}`];
      return v.flatMap((x, i) => decode(t.items, x, `${path}/${i}`));
    case 'map':
      if (typeof v !== 'object' || v === null || Array.isArray(v)) return [`${at}: expected an object, got ${JSON.stringify(v)}`];
      return Object.entries(v).flatMap(([k, x]) => decode(t.values, x, `${path}/${k}`));
    case 'object': {
      if (typeof v !== 'object' || v === null || Array.isArray(v)) return [`${at}: expected ${t.name}, got ${JSON.stringify(v)}`];
      const o = v as Record<string, unknown>;
      const errors: string[] = [];
      const known = new Set<string>();
      for (const [key, ft] of Object.entries(t.props)) {
        const optional = key.endsWith('?');
        const name = optional ? key.slice(0, -1) : key;
        known.add(name);
        if (!(name in o)) {
          if (!optional) errors.push(`${path}/${name}: missing (required in ${t.name})`);
          continue;
        }
        errors.push(...decode(ft, o[name], `${path}/${name}`));
      }
      for (const k of Object.keys(o)) if (!known.has(k)) errors.push(`${path}/${k}: unknown field of ${t.name}`);
      return errors;
    }
  }
}
