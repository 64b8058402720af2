// The environment a task's process starts with. The agent's own environment is not passed
// on wholesale (it may hold the operator's secrets and settings that make tasks behave
// differently per host); only a few basics are, then Cairn's variables, then the task's own.

import type { EnvVar } from '../../../shared/agent-protocol.ts';

/** Variables taken from the agent's environment when set there. */
export const INHERITED_ENV = ['PATH', 'HOME', 'LANG', 'LANGUAGE', 'LC_ALL', 'LC_CTYPE', 'TZ', 'TMPDIR', 'USER', 'LOGNAME', 'SHELL'] as const;

/** Used when the agent itself runs without PATH (some init systems). */
export const DEFAULT_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

/** Where a task finds the cluster's DNS (from gossip) and its own name there (from its launch). */
export interface TaskDnsInfo {
  /** The masters' DNS servers, `host:port`. */
  servers: readonly string[];
  /** The zone, e.g. `cairn`. */
  domain?: string;
  /** The task's own name, `task.framework.domain`; '' when it has none. */
  name?: string;
}

export interface TaskEnvironmentInput {
  taskId: string;
  frameworkId: string;
  /** The agent's hostname, given to the task as HOST. */
  hostname: string;
  sandbox: string;
  /** The task's ports in order; PORT is the first. */
  ports: readonly number[];
  /** Device indices assigned to the task; empty for a task without GPUs. */
  gpuIndices: readonly number[];
  /** The task's own variables (command.environment); they win over everything else. */
  taskEnv: readonly EnvVar[];
  /** The agent's environment (process.env in production). */
  agentEnv: Readonly<Record<string, string | undefined>>;
  dns?: TaskDnsInfo;
  /** The user the task runs as: its HOME, USER and LOGNAME (instead of the agent's). */
  user?: { name: string; home: string };
}

export function buildTaskEnvironment(input: TaskEnvironmentInput): Record<string, string> {
  const env: Record<string, string> = {};
  for (const name of INHERITED_ENV) {
    const v = input.agentEnv[name];
    if (v !== undefined) env[name] = v;
  }
  if (env.PATH === undefined) env.PATH = DEFAULT_PATH;
  if (input.user) {
    env.HOME = input.user.home;
    env.USER = input.user.name;
    env.LOGNAME = input.user.name;
  }

  env.HOST = input.hostname;
  if (input.ports.length > 0) {
    env.PORT = String(input.ports[0]);
    input.ports.forEach((p, i) => {
      env[`PORT${i}`] = String(p);
    });
    env.PORTS = input.ports.join(',');
  }
  env.CAIRN_TASK_ID = input.taskId;
  env.CAIRN_FRAMEWORK_ID = input.frameworkId;
  env.CAIRN_SANDBOX = input.sandbox;
  env.MESOS_SANDBOX = input.sandbox;
  // CAIRN_DNS: the masters' DNS servers. CAIRN_DNS_NAME: this task's name; its framework's
  // other tasks are NAME.$CAIRN_DNS_FRAMEWORK (as RUNNING tasks, on the masters' DNS).
  const dns = input.dns;
  if (dns && dns.servers.length > 0) env.CAIRN_DNS = dns.servers.join(',');
  if (dns?.domain) env.CAIRN_DNS_DOMAIN = dns.domain;
  if (dns?.name) {
    env.CAIRN_DNS_NAME = dns.name;
    env.CAIRN_DNS_FRAMEWORK = dns.name.slice(dns.name.indexOf('.') + 1);
  }
  if (input.gpuIndices.length > 0) {
    const devices = input.gpuIndices.join(',');
    env.CUDA_VISIBLE_DEVICES = devices;
    env.NVIDIA_VISIBLE_DEVICES = devices;
  }
  for (const { name, value } of input.taskEnv) {
    if (name !== '') env[name] = value ?? '';
  }
  return env;
}
