// Pure translation of a task into the Docker Engine's container-create body: image,
// command, environment, limits from the task's resources, networking and port bindings from
// its assigned ports, volumes, DNS servers, GPU device requests and the labels that tie the
// container to its task. No I/O here, so every rule is unit-tested.
//
// Every container starts with `no-new-privileges` and with all capabilities dropped but those
// the operator adds back (`--container-cap-add`; none by default). A task runs as its
// decided non-root uid (agent/task-users.ts), which holds no capability anyway: what the
// bounding set and no-new-privileges take away is what a setuid or file-capability binary in
// the image would otherwise regain on exec (uid 0, and with Docker's default set
// DAC_OVERRIDE, CHOWN, SETUID, ... over whatever is mounted). Only a root task (the agent's
// --allow-root-tasks) could use an added capability, so the default adds none; an operator
// running images that start as root and bind low ports or change users adds those few.

import type { ContainerSpec, PortMapping, TaskInfo } from '../../../shared/agent-protocol.ts';
import { CairnError } from '../../../shared/errors.ts';
import { Resources } from '../../../shared/resources.ts';
import { buildTaskEnvironment } from '../process/environment.ts';

/** Where the sandbox appears inside a container (Mesos' path, which existing images expect). */
export const CONTAINER_SANDBOX = '/mnt/mesos/sandbox';

export const LABEL_TASK_ID = 'cairn.task-id';
export const LABEL_FRAMEWORK_ID = 'cairn.framework-id';
export const LABEL_AGENT_ID = 'cairn.agent-id';
/** The launching agent's work dir instance id (ownership.ts): only that agent adopts the container. */
export const LABEL_AGENT_INSTANCE = 'cairn.agent-instance';

/** CFS period used with a quota; 100 ms is the kernel's default. */
const CPU_PERIOD_US = 100_000;
/** Docker refuses memory limits under 6 MiB. */
const MIN_MEMORY_BYTES = 6 * 1024 * 1024;

/** What every container is started with: a setuid binary does not raise its privileges on exec. */
export const CONTAINER_SECURITY_OPTS: readonly string[] = ['no-new-privileges'];

/** How a container resolves names (Docker's HostConfig Dns, DnsSearch, DnsOptions). */
export interface ContainerDns {
  servers: readonly string[];
  search: readonly string[];
  options: readonly string[];
}

/** The daemon's own DNS settings. */
export const NO_CONTAINER_DNS: ContainerDns = { servers: [], search: [], options: [] };

export interface ContainerConfigInput {
  task: TaskInfo & { container: ContainerSpec };
  /** The launching agent's id; never empty (a container labelled with none was adopted by any agent). */
  agentId: string;
  /** The launching agent's work dir instance id. */
  agentInstance: string;
  hostname: string;
  sandbox: string;
  gpuIndices: readonly number[];
  /** Docker's Dns, DnsSearch and DnsOptions; empty lists leave the daemon's. */
  dns: ContainerDns;
  /**
   * Cap the container's CPU time at its cpus (CFS quota) besides weighting it, as
   * `--cgroups-cpu-quota` does for processes. Off by default: a small quota throttles the
   * container's start as well (0.01 cpus takes a second to exec `true`).
   */
  cpuQuota?: boolean;
  /** The OCI runtime the daemon starts the container with; left out, the daemon's default. */
  runtime?: string;
  /** The user the container runs as (numeric, so the image need not know the name); left out, the image's. */
  user?: { uid: number; gid: number };
  /** Processes and threads the container may have at once; left out, no limit. */
  pidsLimit?: number;
  /** Capabilities added back after all are dropped (shared/agent-defaults.ts' ADDABLE_CAPABILITIES); left out, none. */
  capAdd?: readonly string[];
}

/** The subset of the Engine API's create body Cairn sets (dockerode's ContainerCreateOptions). */
export interface ContainerCreateBody {
  name: string;
  Image: string;
  /** `uid:gid`. */
  User?: string;
  Cmd?: string[];
  Entrypoint?: string[];
  Env: string[];
  Labels: Record<string, string>;
  ExposedPorts?: Record<string, object>;
  HostConfig: {
    Memory?: number;
    MemorySwap?: number;
    CpuShares?: number;
    CpuQuota?: number;
    CpuPeriod?: number;
    NetworkMode: string;
    Runtime?: string;
    PidsLimit?: number;
    SecurityOpt: string[];
    CapDrop: string[];
    CapAdd?: string[];
    PortBindings?: Record<string, { HostPort: string }[]>;
    Binds: string[];
    Dns?: string[];
    DnsSearch?: string[];
    DnsOptions?: string[];
    DeviceRequests?: { Driver: string; DeviceIDs: string[]; Capabilities: string[][] }[];
  };
}

/** Container names allow [a-zA-Z0-9][a-zA-Z0-9_.-]; task ids are close to that already. */
export function containerName(taskId: string): string {
  return `cairn-${taskId.replace(/[^a-zA-Z0-9_.-]/g, '_')}`;
}

/** Fills mappings that name no host port with the task's ports not otherwise mapped. */
export function resolvePortMappings(mappings: readonly PortMapping[], taskPorts: readonly number[]): PortMapping[] {
  const explicit = new Set(mappings.filter((m) => m.hostPort !== 0).map((m) => m.hostPort));
  const free = taskPorts.filter((p) => !explicit.has(p));
  return mappings.map((m, i) => {
    if (m.hostPort !== 0) {
      if (!taskPorts.includes(m.hostPort)) {
        throw new CairnError('CAIRN_BAD_REQUEST', `host port ${m.hostPort} is not among the task's ports`, `container.docker.port_mappings[${i}].host_port`);
      }
      return m;
    }
    const p = free.shift();
    if (p === undefined) throw new CairnError('CAIRN_BAD_REQUEST', 'more port mappings than task ports', `container.docker.port_mappings[${i}]`);
    return { ...m, hostPort: p };
  });
}

export function containerConfig(input: ContainerConfigInput): ContainerCreateBody {
  const { task } = input;
  if (input.agentId === '' || input.agentInstance === '') throw new CairnError('CAIRN_INTERNAL', 'a container is launched only by an agent with an id and an instance', 'agentId');
  const docker = task.container.docker;
  const resources = Resources.parse(task.resources, 'resources');
  const ports = resources.portList();
  const env = buildTaskEnvironment({
    taskId: task.taskId,
    frameworkId: task.frameworkId,
    hostname: input.hostname,
    sandbox: CONTAINER_SANDBOX,
    ports,
    gpuIndices: input.gpuIndices,
    taskEnv: task.command.environment,
    agentEnv: {}, // the image brings its own PATH and HOME
  });
  delete env.PATH;

  const body: ContainerCreateBody = {
    name: containerName(task.taskId),
    Image: docker.image,
    Env: Object.entries(env).map(([k, v]) => `${k}=${v}`),
    Labels: {
      [LABEL_TASK_ID]: task.taskId,
      [LABEL_FRAMEWORK_ID]: task.frameworkId,
      [LABEL_AGENT_ID]: input.agentId,
      [LABEL_AGENT_INSTANCE]: input.agentInstance,
      ...Object.fromEntries(task.labels.map((l) => [`cairn.label.${l.name}`, l.value])),
    },
    HostConfig: {
      NetworkMode: docker.network,
      SecurityOpt: [...CONTAINER_SECURITY_OPTS],
      CapDrop: ['ALL'],
      Binds: [
        `${input.sandbox}:${CONTAINER_SANDBOX}:rw`,
        ...task.container.volumes.map((v) => `${v.hostPath}:${v.containerPath}:${v.readOnly ? 'ro' : 'rw'}`),
      ],
    },
  };
  // A shell command runs under the image's /bin/sh, as Mesos' Docker containerizer does;
  // otherwise the arguments follow the image's entrypoint (argv[0] included, Mesos-style).
  if (task.command.shell) {
    body.Entrypoint = ['/bin/sh', '-c'];
    body.Cmd = [task.command.value];
  } else if (task.command.arguments.length > 0) {
    body.Cmd = task.command.arguments.slice(task.command.value ? 1 : 0);
    if (task.command.value) body.Entrypoint = [task.command.value];
  } else if (task.command.value) {
    body.Entrypoint = [task.command.value];
  }

  const memBytes = Math.round(resources.mem * 1024 * 1024);
  if (memBytes > 0) {
    body.HostConfig.Memory = Math.max(memBytes, MIN_MEMORY_BYTES);
    body.HostConfig.MemorySwap = body.HostConfig.Memory; // no swap: the limit is the limit
  }
  if (resources.cpus > 0) {
    body.HostConfig.CpuShares = Math.max(2, Math.round(resources.cpus * 1024));
    if (input.cpuQuota) {
      body.HostConfig.CpuPeriod = CPU_PERIOD_US;
      body.HostConfig.CpuQuota = Math.max(1000, Math.round(resources.cpus * CPU_PERIOD_US));
    }
  }
  if (docker.network === 'bridge') {
    const mappings = resolvePortMappings(docker.portMappings, ports);
    body.ExposedPorts = {};
    body.HostConfig.PortBindings = {};
    for (const m of mappings) {
      const key = `${m.containerPort}/${m.protocol}`;
      body.ExposedPorts[key] = {};
      (body.HostConfig.PortBindings[key] ??= []).push({ HostPort: String(m.hostPort) });
    }
  }
  if (input.runtime !== undefined) body.HostConfig.Runtime = input.runtime;
  if (input.user) body.User = `${input.user.uid}:${input.user.gid}`;
  if (input.pidsLimit !== undefined && input.pidsLimit > 0) body.HostConfig.PidsLimit = input.pidsLimit;
  if (input.capAdd && input.capAdd.length > 0) body.HostConfig.CapAdd = [...input.capAdd];
  if (input.dns.servers.length > 0) body.HostConfig.Dns = [...input.dns.servers];
  if (input.dns.search.length > 0) body.HostConfig.DnsSearch = [...input.dns.search];
  if (input.dns.options.length > 0) body.HostConfig.DnsOptions = [...input.dns.options];
  if (input.gpuIndices.length > 0) {
    body.HostConfig.DeviceRequests = [{ Driver: 'nvidia', DeviceIDs: input.gpuIndices.map(String), Capabilities: [['gpu']] }];
  }
  return body;
}
