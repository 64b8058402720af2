// One instance of an app as a Mesos TaskInfo: Marathon's task id and environment, the task
// name DNS turns into `<app path reversed, joined by '-'>.marathon.<domain>`, the app's
// container through the scheduler API's container spec, and its first health check as
// Mesos' health_check (the agent runs it beside the task). Pure.

import type { HealthCheckJson, TaskInfoJson } from '../../../shared/mesos-v1.ts';
import type { AppDefinition, HealthCheckDefinition, StoredApp } from './app-model.ts';
import type { LaunchDecision } from './core.ts';

export type MarathonTaskInfo = TaskInfoJson;

/** Labels on every task this framework launches: which app and version it runs. */
export const APP_LABEL = 'cairn.marathon.app';
export const CONFIG_VERSION_LABEL = 'cairn.marathon.configVersion';

/** `/dev/web` → `web-dev`: mesos-dns' name for a Marathon app's tasks. */
export function appTaskName(appId: string): string {
  return appId.split('/').filter((p) => p !== '').reverse().join('-');
}

/** `/dev/web` → `dev_web.<uuid>`, Marathon's task id. */
export function marathonTaskId(appId: string, uuid: string): string {
  return `${appId.split('/').filter((p) => p !== '').join('_')}.${uuid}`;
}

/** The app a Marathon task id belongs to (`dev_web.<uuid>` → `/dev/web`). */
export function appIdOfTaskId(taskId: string): string | undefined {
  const dot = taskId.lastIndexOf('.');
  if (dot <= 0) return undefined;
  return `/${taskId.slice(0, dot).split('_').join('/')}`;
}

/** Scala's Double.toString, as Marathon writes resources into the environment ("1.0", "0.5"). */
function scalaDouble(n: number): string {
  return Number.isInteger(n) ? `${n}.0` : String(n);
}

function envName(s: string): string {
  return s.replace(/[^a-zA-Z0-9_]/g, '_').toUpperCase();
}

export function marathonEnv(s: StoredApp, launch: LaunchDecision, taskId: string): Record<string, string> {
  const app = s.app;
  const env: Record<string, string> = { ...app.env };
  const ports = launch.ports;
  ports.forEach((p, i) => (env[`PORT${i}`] = String(p)));
  if (ports.length > 0) {
    env.PORT = String(ports[0]);
    env.PORTS = ports.join(',');
  }
  const docker = app.container?.docker;
  // Each declared port by number and by name: a container port under BRIDGE, else the port a
  // definition names (Marathon's service port), a dynamic one (0) under its host port's number.
  const declared = docker?.network === 'BRIDGE'
    ? docker.portMappings.map((m) => ({ port: m.containerPort, name: m.name }))
    : app.portDefinitions.map((p) => ({ port: p.port, name: p.name }));
  declared.forEach((d, i) => {
    if (ports[i] !== undefined) env[`PORT_${d.port !== 0 ? d.port : ports[i]}`] = String(ports[i]);
  });
  declared.forEach((d, i) => {
    if (d.name !== undefined && ports[i] !== undefined) env[`PORT_${envName(d.name)}`] = String(ports[i]);
  });
  env.HOST = launch.hostname;
  env.MARATHON_APP_ID = app.id;
  env.MARATHON_APP_VERSION = s.version;
  env.MARATHON_APP_DOCKER_IMAGE = docker?.image ?? '';
  env.MARATHON_APP_RESOURCE_CPUS = scalaDouble(app.cpus);
  env.MARATHON_APP_RESOURCE_MEM = scalaDouble(app.mem);
  env.MARATHON_APP_RESOURCE_DISK = scalaDouble(app.disk);
  env.MARATHON_APP_RESOURCE_GPUS = String(app.gpus);
  const labelNames: string[] = [];
  for (const [k, v] of Object.entries(app.labels)) {
    const n = envName(k);
    labelNames.push(n);
    env[`MARATHON_APP_LABEL_${n}`] = v;
  }
  env.MARATHON_APP_LABELS = labelNames.join(' ');
  env.MESOS_TASK_ID = taskId;
  return env;
}

export function healthCheckJson(hc: HealthCheckDefinition, ports: readonly number[]): HealthCheckJson | undefined {
  const timing = {
    delay_seconds: hc.delaySeconds,
    interval_seconds: hc.intervalSeconds,
    timeout_seconds: hc.timeoutSeconds,
    consecutive_failures: hc.maxConsecutiveFailures,
    grace_period_seconds: hc.gracePeriodSeconds,
  };
  if (hc.protocol === 'COMMAND') return { type: 'COMMAND', command: { value: hc.command ?? '' }, ...timing };
  const port = hc.port ?? ports[hc.portIndex];
  if (port === undefined) return undefined;
  if (hc.protocol === 'TCP' || hc.protocol === 'MESOS_TCP') return { type: 'TCP', tcp: { port }, ...timing };
  const scheme: 'http' | 'https' = hc.protocol === 'HTTPS' || hc.protocol === 'MESOS_HTTPS' ? 'https' : 'http';
  return { type: 'HTTP', http: { port, path: hc.path, scheme }, ...timing };
}

function command(app: AppDefinition, env: Record<string, string>): TaskInfoJson['command'] {
  const variables = Object.entries(env).map(([name, value]) => ({ name, value }));
  if (app.cmd !== null) return { shell: true, value: app.cmd, environment: { variables } };
  const args = app.args ?? [];
  // A container's arguments follow its image's entrypoint; a process' first argument is its program.
  if (app.container?.docker) return { shell: false, value: '', arguments: args, environment: { variables } };
  return { shell: false, value: args[0] ?? '', arguments: args, environment: { variables } };
}

export function buildTaskInfo(s: StoredApp, launch: LaunchDecision, taskId: string): MarathonTaskInfo {
  const app = s.app;
  const env = marathonEnv(s, launch, taskId);
  const docker = app.container?.docker;
  const task: MarathonTaskInfo = {
    name: appTaskName(app.id),
    task_id: { value: taskId },
    agent_id: { value: launch.agentId },
    resources: launch.resources.toMesos(),
    command: command(app, env),
    labels: {
      labels: [
        ...Object.entries(app.labels).map(([key, value]) => ({ key, value })),
        { key: APP_LABEL, value: app.id },
        { key: CONFIG_VERSION_LABEL, value: s.configVersion },
      ],
    },
  };
  if (docker) {
    task.container = {
      type: 'DOCKER',
      docker: {
        image: docker.image,
        network: docker.network,
        force_pull_image: docker.forcePullImage,
        ...(docker.pullSecret ? { pull_secrets: [docker.pullSecret] } : {}),
        ...(docker.network === 'BRIDGE'
          ? { port_mappings: docker.portMappings.map((m, i) => ({ host_port: launch.ports[i]!, container_port: m.containerPort, protocol: m.protocol.split(',')[0] })) }
          : {}),
      },
      volumes: app.container!.volumes.map((v) => ({ host_path: v.hostPath, container_path: v.containerPath, mode: v.mode })),
    };
  }
  if (app.taskKillGracePeriodSeconds !== null) task.kill_policy = { grace_period: { nanoseconds: Math.round(app.taskKillGracePeriodSeconds * 1e9) } };
  const hc = app.healthChecks[0];
  if (hc) {
    const json = healthCheckJson(hc, launch.ports);
    if (json) task.health_check = json;
  }
  return task;
}
