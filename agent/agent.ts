// The agent daemon: measures the host, serves its HTTP endpoint, keeps a WebSocket to the
// master, runs the tasks the master launches and delivers their status updates reliably.
//
// Protocol duties, in the order a connection lives them:
//   open        -> send `register` (stored id or '', resources, attributes, running tasks)
//   registered  -> persist the id, then re-send every pending status update, in order
//   ping        -> pong with the same sentMs; silence for missedPingsAllowed × interval drops the socket
//   launch/kill -> executor; a kill for an unknown task answers TASK_LOST 'unknown task'
//   ack         -> forget that update; a terminal one also releases its task
// Status updates are made with a fresh 16-byte uuid, sent at once when registered, kept
// until acknowledged and re-sent every statusResendMs.

import { randomBytes } from 'node:crypto';
import { mkdir } from 'node:fs/promises';
import pino, { type Logger } from 'pino';
import { componentLogger } from '../shared/logger.ts';
import { taskEndLine } from './task-end-log.ts';
import { isTerminal, NOT_DRAINING, type DrainOrder, type MasterToAgent, type RunningTask, type StatusUpdate } from '../shared/agent-protocol.ts';
import type { Resources } from '../shared/resources.ts';
import { CairnError } from '../shared/errors.ts';
import { withDirLock } from '../shared/dir-lock.ts';
import { readAgentId, writeAgentId } from './agent-id.ts';
import { Disposer } from './disposer.ts';
import { ProcessExecutor, type TaskStatusChange } from './executors/process/executor.ts';
import { DockerExecutor } from './executors/docker/docker-executor.ts';
import { TaskExecutors, type ContainerSupport } from './executors/executors.ts';
import { GpuPool } from './resources/gpu-pool.ts';
import Docker from 'dockerode';
import { daemonTlsClient, schemeOf, servesTls, type TlsClient } from '../shared/tls.ts';
import { agentMetricsText } from './metrics.ts';
import { startAgentHttp } from './http.ts';
import { MasterLink } from './master-link.ts';
import { authorizationHeader } from './credential.ts';
import { AgentMembership } from './membership.ts';
import { compileAgentOptions, type AgentConfig, type AgentOptions } from './options.ts';
import { discoverResources } from './resources/discover.ts';
import { PendingUpdates } from './status-updates.ts';
import { CheckpointStore, checkpointsDir } from './recovery/checkpoint.ts';
import { Cgroups, type CgroupSupport } from './isolation/cgroups.ts';
import type { NvidiaGpu } from './resources/nvidia-smi.ts';
import { UsageSampler } from './usage/sampler.ts';
import { LOG_TIMES_INTERVAL_MS, LogTimesRecorder } from './log-times.ts';
import { sandboxesRoot } from './executors/process/sandbox.ts';
import { DiskWatcher, dockerLayerBytes } from './isolation/disk-watcher.ts';
import { usageReport } from './usage/usage.ts';
import { SandboxGc } from './sandbox-gc.ts';
import { agentIdentity, TaskUsers, UserDb } from './task-users.ts';
import { formatUidRange, TaskUidTable, taskUidsPath } from './task-uids.ts';
import { prepareWorkDir, reachForDefaultUser, SandboxReach } from './sandbox-reach.ts';
import { readDrainState, writeDrainState, type DrainState } from './drain.ts';
import { HealthChecks } from './health/health-checks.ts';
import { HealthStore, healthDir } from './health/store.ts';
import { TaskDns } from './task-dns/task-dns.ts';
import { monotonicMs } from '../shared/steady-clock.ts';

/** The `draining` part of /health and the answer to a drain request. */
export interface DrainReport extends DrainState {
  runningTasks: number;
  /** No task runs any more: the agent can be stopped. */
  drained: boolean;
}

export type { AgentOptions } from './options.ts';

export interface AgentHandle {
  /** The id the master gave this agent (or the stored one before registration); undefined before either. */
  agentId(): string | undefined;
  /** The agent's HTTP endpoint as advertised, e.g. http://10.0.0.5:5051. */
  httpUrl: string;
  /** What this agent offers. */
  resources: Resources;
  stop(opts?: { killTasks?: boolean }): Promise<void>;
}

/** How tasks are isolated on this host, decided once at start. */
interface Isolation {
  cgroups: Cgroups | undefined;
  support: CgroupSupport;
  containers: ContainerSupport;
}

function detectIsolation(cfg: AgentConfig, log: Logger): Omit<Isolation, 'containers'> {
  if (!cfg.cgroups) {
    const support: CgroupSupport = { enabled: false, reason: 'turned off (--no-cgroups)' };
    log.warn('cgroup isolation is off (--no-cgroups): tasks are not limited to their memory and cpus');
    return { cgroups: undefined, support };
  }
  const found = Cgroups.detect({ root: cfg.cgroupsRoot, workDir: cfg.workDir, cpuQuota: cfg.cgroupsCpuQuota, pidsMax: cfg.taskPidsMax });
  if (found.cgroups) log.info({ support: found.support }, 'tasks run in their own cgroups');
  if (found.support.enabled && !found.support.pids.limited) log.warn({ reason: found.support.pids.reason }, "tasks' process counts are not limited");
  else if (!found.support.enabled) log.warn({ reason: found.support.reason }, 'cgroup isolation is unavailable: tasks are not limited to their memory and cpus');
  return found;
}

/** The `isolation` part of /health. */
export function isolationReport(support: CgroupSupport): Record<string, unknown> {
  return support.enabled ? { cgroups: true, version: support.version, paths: support.paths, pids: support.pids } : { cgroups: false, reason: support.reason };
}

/** Whether the Docker daemon answers on its socket; said once at start, not at each launch. */
async function detectContainers(cfg: AgentConfig, log: Logger): Promise<ContainerSupport> {
  if (!cfg.docker) {
    log.warn('container tasks are off (--no-docker): they fail at launch');
    return { enabled: false, reason: 'turned off (--no-docker)' };
  }
  let info: { ServerVersion?: string; DefaultRuntime?: string; Runtimes?: Record<string, unknown> };
  try {
    info = (await new Docker({ socketPath: cfg.dockerSocket, timeout: 5000 }).info()) as typeof info;
  } catch (err) {
    const reason = `no Docker daemon answers at ${cfg.dockerSocket}: ${(err as Error).message}`;
    log.warn({ reason }, 'container tasks are unavailable: they fail at launch');
    return { enabled: false, reason };
  }
  const runtimes = Object.keys(info.Runtimes ?? {});
  // A runtime the daemon lacks would fail every container launch; say so now, by the flag's name.
  if (cfg.dockerRuntime !== undefined && !runtimes.includes(cfg.dockerRuntime)) {
    throw new CairnError('CAIRN_BAD_FLAG', `the Docker daemon at ${cfg.dockerSocket} has no runtime '${cfg.dockerRuntime}' (it has: ${runtimes.join(', ') || 'none'}); register it under "runtimes" in daemon.json`, 'dockerRuntime');
  }
  const version = info.ServerVersion ?? 'unknown';
  const runtime = cfg.dockerRuntime ?? info.DefaultRuntime ?? 'runc';
  log.info({ docker: version, runtime, socket: cfg.dockerSocket, hostPathAllow: cfg.hostPathAllow.dirs, capAdd: cfg.containerCapAdd }, 'container tasks run through the Docker daemon');
  return { enabled: true, version, runtime };
}

/**
 * Whom tasks run as here. A root agent's default task user must exist, and be root only
 * with --allow-root-tasks: otherwise every task without a user would fail, so the agent
 * refuses to start instead, naming the flag.
 */
function taskUsersFor(cfg: AgentConfig, log: Logger): TaskUsers {
  const agent = agentIdentity();
  const policy = { agent, defaultUser: cfg.defaultTaskUser, allowRoot: cfg.allowRootTasks };
  if (agent.uid !== 0) {
    log.warn({ user: agent.user, uid: agent.uid }, 'the agent is not root: every task runs as its user, and tasks asking for another user fail');
    return new TaskUsers(policy);
  }
  const db = new UserDb();
  const principals = principalUsersFor(cfg, db, log);
  const users = new TaskUsers(policy, db, principals);
  const probe = users.decide('');
  if (!probe.ok) throw new CairnError('CAIRN_BAD_FLAG', probe.message, 'defaultTaskUser');
  // A mapped user that cannot run tasks would fail every task of its principal: refused now.
  for (const [principal, user] of principals.userMap) {
    const mapped = users.decide('', principal);
    if (!mapped.ok) throw new CairnError('CAIRN_BAD_FLAG', mapped.message, 'taskUserMap');
    if (probe.runAs.uid === mapped.runAs.uid) throw new CairnError('CAIRN_BAD_FLAG', `--task-user-map gives principal '${principal}' the user '${user}', whose uid is the default task user's: tasks without a principal would share it`, 'taskUserMap');
  }
  log.info({ defaultTaskUser: cfg.defaultTaskUser, uid: probe.runAs.uid, allowRootTasks: cfg.allowRootTasks, taskUidRange: cfg.taskUids ? formatUidRange(cfg.taskUids) : 'none', taskUserMap: Object.fromEntries(principals.userMap) },
    cfg.taskUids
      ? "tasks run as their framework's user, else each principal's as a uid of its own (or its mapped user), else as the default task user"
      : "tasks run as their framework's user, else each mapped principal's as its user, else as the default task user (--task-uid-range none: principals share it)");
  return users;
}

/** The principals' users on a root agent: the operator's map, and the uid table when a range is set. */
function principalUsersFor(cfg: AgentConfig, db: UserDb, log: Logger): { userMap: Map<string, string>; uids?: TaskUidTable } {
  if (!cfg.taskUids) return { userMap: cfg.taskUserMap };
  return { userMap: cfg.taskUserMap, uids: new TaskUidTable(taskUidsPath(cfg.workDir), cfg.taskUids, (uid) => db.hasUid(uid), componentLogger(log, 'task-uids')) };
}

/** The one-line account of how tasks are isolated here, sent to the master and shown in its state. */
export function isolationSummary(cgroups: CgroupSupport, containers: ContainerSupport): string {
  const c = cgroups.enabled ? `processes in cgroups v${cgroups.version}` : `processes not isolated (${cgroups.reason})`;
  const d = containers.enabled ? `containers through Docker ${containers.version} (runtime ${containers.runtime})` : `no containers (${containers.reason})`;
  return `${c}; ${d}`;
}

/** Starts an agent with its work dir locked (a second process on it is refused, naming the holder). */
export async function startAgent(opts: AgentOptions): Promise<AgentHandle> {
  return withDirLock(compileAgentOptions(opts).workDir, 'agent', 'workDir', () => startLockedAgent(opts));
}

async function startLockedAgent(opts: AgentOptions): Promise<AgentHandle> {
  // Flags are checked before anything is measured, bound or connected.
  const cfg = compileAgentOptions(opts);
  const log = componentLogger(opts.logger ?? pino({ name: 'cairn-agent' }), 'agent');
  await mkdir(cfg.workDir, { recursive: true });

  const discovered = await discoverResources(cfg.workDir, cfg.resourcesText, { gpuSharing: cfg.gpuSharing });
  for (const note of discovered.notes) log.warn(note);
  const storedId = await readAgentId(cfg.workDir);
  const checkpoints = new CheckpointStore(checkpointsDir(cfg.workDir));
  const isolation = detectIsolation(cfg, log);
  const containers = await detectContainers(cfg, log);
  const users = taskUsersFor(cfg, log);
  // Tasks open their sandboxes and job dirs by path: every task user must reach them.
  const reach = new SandboxReach(prepareWorkDir(cfg.workDir, cfg.jobDirs), log);
  reachForDefaultUser(reach, users.decide(''));
  const agent = new Agent(cfg, log, discovered.resources, discovered.gpuIndices, storedId, checkpoints, { ...isolation, containers }, discovered.facts.gpus, users, reach);
  try {
    await agent.recover();
    await agent.start();
  } catch (err) {
    await agent.stop({ killTasks: true });
    throw err;
  }
  log.info({ resources: discovered.resources.toString(), httpUrl: agent.httpUrl, master: cfg.masterWsUrl }, 'agent started');
  return {
    agentId: () => agent.agentId,
    httpUrl: agent.httpUrl,
    resources: discovered.resources,
    stop: (o) => agent.stop({ killTasks: o?.killTasks ?? false }),
  };
}

class Agent {
  agentId: string | undefined;
  httpUrl = '';
  private readonly owner = new Disposer();
  private readonly pending = new PendingUpdates();
  private readonly executor: TaskExecutors;
  /** Health checks of running tasks; they see every status change before it goes out. */
  private readonly health: HealthChecks;
  /** Measures tasks' disk use and kills those over their limit; sees every status change first. */
  private readonly disk: DiskWatcher;
  private readonly link: MasterLink;
  private drainState: DrainState | undefined;
  private drainTimer: NodeJS.Timeout | undefined;
  /** The connection generation on which `registered` was received; undefined when not registered. */
  private registeredOn: number | undefined;
  private stopping: Promise<void> | undefined;
  /** The gossip member, when the agent runs one; it also says where the leader is. */
  private membership: AgentMembership | undefined;
  private leaveOnStop = false;
  /** How the agent dials the masters (TLS: their certificates verified, its own presented). */
  private readonly tlsClient: TlsClient;
  /** The task resolver, where it runs (root); tasks then resolve the zone through getaddrinfo. */
  private taskDns: TaskDns | undefined;
  /** Whether process tasks get the task resolver as their /etc/resolv.conf (a mount namespace each). */
  private resolvMount = false;

  constructor(
    private readonly cfg: AgentConfig,
    private readonly log: Logger,
    private readonly resources: Resources,
    gpuIndices: number[],
    storedId: string,
    private readonly checkpoints: CheckpointStore,
    private readonly isolation: Isolation,
    private readonly knownGpus: readonly NvidiaGpu[],
    private readonly users: TaskUsers,
    reach: SandboxReach,
  ) {
    this.agentId = storedId !== '' ? storedId : undefined;
    const gpuPool = new GpuPool(gpuIndices, cfg.gpuSharing);
    this.health = new HealthChecks({
      store: new HealthStore(healthDir(cfg.workDir)),
      snapshot: (taskId) => this.executor.snapshot(taskId),
      docker: () => this.executor.containers?.docker,
      report: (change) => this.statusUpdate(change),
      kill: (taskId, message) => void this.executor.kill(taskId, 0, message),
      agentEnv: cfg.taskBaseEnv,
      logger: componentLogger(log, 'health'),
    });
    const onStatus = (change: TaskStatusChange) => this.statusUpdate(this.health.observe(this.disk.observe(change)));
    const processes = new ProcessExecutor({
      workDir: cfg.workDir,
      jobDirs: cfg.jobDirs,
      gpuPool,
      checkpoints,
      ...(isolation.cgroups ? { cgroups: isolation.cgroups } : {}),
      recoveredPollMs: cfg.recoveredPollMs,
      hostname: cfg.hostname,
      agentEnv: cfg.taskBaseEnv,
      dns: () => this.membership?.dns(),
      resolvConf: (dnsName) => (this.resolvMount ? this.taskDns?.resolvFileFor(dnsName) : undefined),
      defaultKillGraceMs: cfg.defaultKillGraceMs,
      onStatus,
      users: reach.decider(users),
      logger: componentLogger(log, 'executor'),
    });
    const containers = isolation.containers.enabled
      ? new DockerExecutor({
          workDir: cfg.workDir,
          hostname: cfg.hostname,
          agentId: () => this.agentId ?? '',
          socketPath: cfg.dockerSocket,
          cpuQuota: cfg.cgroupsCpuQuota,
          ...(cfg.dockerRuntime !== undefined ? { runtime: cfg.dockerRuntime } : {}),
          dns: (dnsName) => this.taskDns?.containerDns(dnsName) ?? { servers: dockerDnsServers(this.membership?.dns()?.servers ?? []), search: [], options: [] },
          gpuPool,
          ...(cfg.dockerConfig ? { dockerConfig: cfg.dockerConfig } : {}),
          defaultKillGraceMs: cfg.defaultKillGraceMs,
          onStatus,
          users,
          pidsMax: cfg.taskPidsMax,
          hostPaths: cfg.hostPathAllow,
          capAdd: cfg.containerCapAdd,
          logger: componentLogger(log, 'docker'),
        })
      : undefined;
    this.executor = new TaskExecutors(processes, containers, isolation.containers, onStatus);
    this.disk = new DiskWatcher({
      executor: this.executor,
      intervalMs: cfg.diskWatchIntervalMs,
      enforce: cfg.enforceDisk,
      defaultLimitMiB: cfg.defaultTaskDiskMb,
      containerLayer: async (taskId) => (containers?.has(taskId) ? dockerLayerBytes(containers.docker, taskId) : undefined),
      logger: componentLogger(log, 'disk'),
    });
    this.tlsClient = daemonTlsClient(cfg.tls);
    this.link = new MasterLink({
      url: cfg.masterWsUrl,
      dial: this.tlsClient.connectOptions(),
      ...(cfg.credential ? { headers: { authorization: authorizationHeader(cfg.credential) } } : {}),
      alternates: cfg.masterWsUrls,
      leaderHint: () => this.membership?.leader(),
      logger: componentLogger(log, 'master-link'),
      reconnectMinMs: cfg.reconnectMinMs,
      reconnectMaxMs: cfg.reconnectMaxMs,
      initialLivenessMs: cfg.registrationTimeoutMs,
      onOpen: (gen) => this.register(gen),
      onMessage: (msg, gen) => this.onMessage(msg, gen),
      onClose: (gen, reason) => {
        if (this.registeredOn === gen) {
          this.registeredOn = undefined;
          if (this.stopping === undefined) this.log.warn({ reason }, 'lost connection to master; reconnecting');
        }
      },
    });
  }

  private get registered(): boolean {
    return this.registeredOn !== undefined && this.registeredOn === this.link.currentGeneration && this.link.isOpen;
  }

  /**
   * Takes over what an earlier agent process left (its checkpoints), before the first
   * registration so that registration lists the recovered tasks.
   */
  async recover(): Promise<void> {
    this.drainState = await readDrainState(this.cfg.workDir);
    if (this.drainState) this.log.warn({ drain: this.drainState }, 'the agent is draining (since before it restarted)');
    const { checkpoints, problems } = await this.checkpoints.loadAll();
    for (const p of problems) this.log.error(p);
    const found = await this.executor.recoverContainers(this.cfg.recover);
    if (found.length > 0) this.log.info({ mode: this.cfg.recover, containers: found.map((t) => t.taskId) }, 'found the containers of the previous agent process');
    if (checkpoints.length === 0) return;
    const summary = this.executor.processes.recover(checkpoints, this.cfg.recover);
    this.log.info({ mode: this.cfg.recover, ...summary }, 'recovered the tasks of the previous agent process');
  }

  /** Resumes the health checks of recovered tasks that still run (after `recover`). */
  private async recoverHealthChecks(): Promise<void> {
    const resumed = await this.health.recover(this.executor.snapshots());
    if (resumed.length > 0) this.log.info({ tasks: resumed }, 'resumed the health checks of recovered tasks');
  }

  async start(): Promise<void> {
    await this.startTaskDns();
    await this.recoverHealthChecks();
    this.owner.add('health checks', () => this.health.stop());
    const usage = new UsageSampler({
      executor: this.executor,
      intervalMs: this.cfg.usageIntervalMs,
      agentId: () => this.agentId,
      knownGpus: this.knownGpus,
      disk: (taskId) => this.disk.usage(taskId),
      onSample: (u) => {
        if (this.registered) this.link.send({ usage: usageReport(u) });
      },
      logger: componentLogger(this.log, 'usage'),
    });
    usage.start();
    this.owner.add('usage sampler', () => usage.stop());
    // When log lines were written, for `cairn logs --timestamps/--since` (log-times.ts).
    const logTimes = new LogTimesRecorder({
      sandboxes: () => this.executor.snapshots().map((t) => t.sandbox),
      sandboxesRoot: sandboxesRoot(this.cfg.workDir),
      now: Date.now,
      intervalMs: LOG_TIMES_INTERVAL_MS,
      onError: (err) => this.log.warn({ err: err.message }, 'cannot note the times of task logs'),
    });
    logTimes.start();
    this.owner.add('log times', () => logTimes.stop());
    if (!this.cfg.enforceDisk) this.log.warn("disk limits are off (--no-enforce-disk): a task may fill the work dir's disk");
    this.disk.start();
    this.owner.add('disk watcher', () => this.disk.stop());

    const gc = new SandboxGc({
      workDir: this.cfg.workDir,
      ageMs: this.cfg.sandboxGcAgeMs,
      diskPercent: this.cfg.sandboxGcDiskPercent,
      intervalMs: this.cfg.sandboxGcIntervalMs,
      inUse: () => new Set(this.executor.snapshots().map((s) => s.sandbox)),
      logger: componentLogger(this.log, 'sandbox-gc'),
    });
    gc.start();
    this.owner.add('sandbox collector', () => gc.stop());

    const http = await startAgentHttp({
      usage,
      ...(servesTls(this.cfg.tls) ? { tls: this.cfg.tls } : {}),
      host: this.cfg.httpHost,
      port: this.cfg.httpPort,
      executor: this.executor,
      agentId: () => this.agentId,
      ...(this.cfg.credential ? { credential: this.cfg.credential } : {}),
      members: () => this.membership?.view(),
      health: () => ({ isolation: { ...isolationReport(this.isolation.support), containers: this.isolation.containers, disk: this.disk.report() }, taskUsers: this.users.report(), draining: this.drainReport() }),
      metrics: () => agentMetricsText({
        executors: () => ({ process: this.executor.processes.snapshots(), docker: this.executor.containers?.snapshots() ?? [] }),
        usage: () => usage.current(),
        registered: () => this.registered,
      }),
      openMetrics: this.cfg.openMetrics,
    });
    this.owner.add('http server', () => http.close());
    this.owner.add('tls client', () => this.tlsClient.close());
    this.httpUrl = `${schemeOf(this.cfg.tls)}://${this.cfg.ip.includes(':') ? `[${this.cfg.ip}]` : this.cfg.ip}:${http.port}`;

    if (this.cfg.gossip) await this.startGossip(this.cfg.gossip);

    const resend = setInterval(() => this.resendPending(), this.cfg.statusResendMs);
    this.owner.add('status resend timer', () => clearInterval(resend));

    this.link.start();
    this.owner.add('master connection', () => this.link.stop());
    this.armDrainDeadline();
    this.owner.add('drain deadline', () => clearTimeout(this.drainTimer));
  }

  /** The task resolver, or a warning saying why tasks keep the host's resolver. */
  private async startTaskDns(): Promise<void> {
    if (!this.cfg.taskDns) {
      this.log.warn('the task resolver is off (--no-task-dns): tasks resolve cluster names only where the host resolver knows the zone');
      return;
    }
    const log = componentLogger(this.log, 'task-dns');
    try {
      const dns = await TaskDns.start({
        workDir: this.cfg.workDir,
        ...(this.cfg.taskDnsAddress !== undefined ? { address: this.cfg.taskDnsAddress } : {}),
        ...(this.cfg.dnsResolvers !== undefined ? { upstreams: this.cfg.dnsResolvers } : {}),
        cluster: () => this.membership?.dns(),
        log,
      });
      this.taskDns = dns;
      this.owner.add('task resolver', () => dns.stop());
    } catch (err) {
      log.warn({ reason: (err as Error).message }, "no task resolver: tasks keep the host's resolver, and cluster names resolve in them only through CAIRN_DNS");
      return;
    }
    const problem = this.executor.processes.resolvMountProblem(this.taskDns.resolvFileFor(''));
    this.resolvMount = problem === undefined;
    if (problem) log.warn({ reason: problem }, "process tasks keep the host's /etc/resolv.conf (containers still get the task resolver)");
  }

  private async startGossip(g: NonNullable<AgentConfig['gossip']>): Promise<void> {
    const port = new URL(this.httpUrl).port;
    const membership = await AgentMembership.start(g, {
      name: `agent@${this.cfg.ip.includes(':') ? `[${this.cfg.ip}]` : this.cfg.ip}:${port}`,
      bindHost: this.cfg.httpHost,
      advertiseHost: this.cfg.ip,
      api: this.httpUrl,
      hostname: this.cfg.hostname,
      agentId: this.agentId,
    }, componentLogger(this.log, 'gossip'));
    this.membership = membership;
    // Going away for good (tasks killed): say goodbye; a plain restart comes back in time.
    this.owner.add('gossip member', () => membership.stop(this.leaveOnStop));
    membership.onLeaderChange(() => this.link.leaderMoved());
    membership.onMasterDown((ws) => {
      if (this.link.connectedUrl === ws) this.link.drop('gossip declared this master dead');
    });
    if ((g.join ?? []).length === 0) membership.seedFromMasters(this.cfg.masterUrl.split(',').map((u) => u.trim()).filter((u) => u !== ''), this.tlsClient.fetch, this.cfg.credential ? { authorization: authorizationHeader(this.cfg.credential) } : {});
  }

  /**
   * Drains the agent: no new task from now on, running ones killed at the deadline (none:
   * they run until they finish). Draining again moves the deadline. Durable before it
   * takes effect, so a restart keeps draining.
   */
  async drain(deadlineAtMs: number | null): Promise<DrainReport> {
    const state: DrainState = { sinceMs: this.drainState?.sinceMs ?? Date.now(), deadlineAtMs };
    await writeDrainState(this.cfg.workDir, state);
    this.drainState = state;
    this.log.warn({ deadlineAtMs, running: this.executor.runningCount() }, 'draining: no new tasks; running ones finish or are killed at the deadline');
    this.armDrainDeadline();
    return this.drainReport() as DrainReport;
  }

  /** Ends a drain: tasks are accepted again. */
  async undrain(): Promise<void> {
    await writeDrainState(this.cfg.workDir, undefined);
    this.drainState = undefined;
    clearTimeout(this.drainTimer);
    this.log.info('drain ended: accepting tasks again');
  }

  private drainReport(): DrainReport | false {
    if (!this.drainState) return false;
    const running = this.executor.runningCount();
    return { ...this.drainState, runningTasks: running, drained: running === 0 };
  }

  private armDrainDeadline(): void {
    clearTimeout(this.drainTimer);
    const deadline = this.drainState?.deadlineAtMs;
    if (deadline === null || deadline === undefined || this.stopping) return;
    this.drainTimer = setTimeout(() => this.killAtDeadline(), Math.max(0, deadline - Date.now()));
  }

  private killAtDeadline(): void {
    for (const s of this.executor.snapshots()) {
      if (isTerminal(s.state)) continue;
      const outcome = this.executor.kill(s.taskId, 0, 'killed: the agent was drained and its deadline passed');
      this.log.info({ taskId: s.taskId, outcome }, 'drain deadline: killing task');
    }
  }

  stop(opts: { killTasks: boolean }): Promise<void> {
    this.stopping ??= this.doStop(opts);
    return this.stopping;
  }

  private async doStop(opts: { killTasks: boolean }): Promise<void> {
    this.log.info({ killTasks: opts.killTasks }, 'agent stopping');
    this.leaveOnStop = opts.killTasks;
    // No check may kill a task while the agent goes away.
    this.health.stop();
    void this.disk.stop();
    // Tasks first, while the connection can still carry their terminal updates.
    await this.executor.shutdown({ killTasks: opts.killTasks });
    if (opts.killTasks && this.executor.runningCount() === 0) this.isolation.cgroups?.removeAgentDirs();
    if (opts.killTasks) await this.waitForAcks(this.cfg.stopAckWaitMs);
    const failures = await this.owner.disposeAll();
    for (const f of failures) this.log.warn({ what: f.what, err: f.error.message }, 'release failed during stop');
    this.log.info('agent stopped');
  }

  /** Waits (bounded) until the master has acknowledged every pending update. */
  private async waitForAcks(maxMs: number): Promise<void> {
    const deadline = monotonicMs() + maxMs;
    while (this.pending.size > 0 && this.registered && monotonicMs() < deadline) {
      await new Promise((r) => setTimeout(r, 10));
    }
  }

  private register(generation: number): void {
    const sent = this.link.send({
      register: {
        agentId: this.agentId ?? '',
        hostname: this.cfg.hostname,
        ip: this.cfg.ip,
        httpPort: Number(new URL(this.httpUrl).port),
        resources: this.resources.toString(),
        attributes: this.cfg.attributes,
        tasks: this.reportedTasks(),
        version: this.cfg.version,
        isolation: isolationSummary(this.isolation.support, this.isolation.containers),
        https: servesTls(this.cfg.tls),
      },
    });
    this.log.debug({ generation, sent }, 'register sent');
  }

  /**
   * The tasks a registration names: those running, and those whose end the master has not
   * acknowledged yet, in their ended state. Without the latter, a task that ended while the
   * agent was away (found ended on recovery) would be marked lost by the master moments
   * before its end, with the exit code, arrived.
   */
  private reportedTasks(): RunningTask[] {
    const tasks = this.executor.activeTasks();
    const named = new Set(tasks.map((t) => t.taskId));
    for (const u of this.pending.list()) {
      if (!isTerminal(u.state) || named.has(u.taskId)) continue;
      named.add(u.taskId);
      tasks.push({ taskId: u.taskId, frameworkId: u.frameworkId, state: u.state, resources: this.executor.snapshot(u.taskId)?.resources ?? '' });
    }
    return tasks;
  }

  private onMessage(msg: MasterToAgent, generation: number): void {
    if ('registered' in msg) {
      void this.onRegistered(msg.registered, generation);
    } else if ('ping' in msg) {
      this.link.send({ pong: { sentMs: msg.ping.sentMs } });
    } else if ('launch' in msg) {
      for (const task of msg.launch.tasks ?? []) {
        if (this.stopping !== undefined && !this.executor.has(task.taskId)) {
          // Nothing new starts on an agent that is going away; the master reschedules it.
          this.statusUpdate({ taskId: task.taskId, frameworkId: task.frameworkId, state: 'TASK_LOST', message: 'the agent is shutting down', hasExitCode: false, exitCode: 0, reason: 'REASON_AGENT_RESTARTED' });
          continue;
        }
        if (this.drainState && !this.executor.has(task.taskId)) {
          this.statusUpdate({ taskId: task.taskId, frameworkId: task.frameworkId, state: 'TASK_DROPPED', message: 'the agent is draining: it accepts no new tasks', hasExitCode: false, exitCode: 0, reason: 'REASON_AGENT_DRAINING' });
          continue;
        }
        if (!this.executor.has(task.taskId)) this.health.noteLaunch(task);
        const outcome = this.executor.launch(task);
        if (outcome === 'duplicate') this.log.debug({ taskId: task.taskId }, 'launch of a known task ignored');
        else this.log.info({ taskId: task.taskId, frameworkId: task.frameworkId, outcome }, 'task launch');
      }
    } else if ('kill' in msg) {
      const { taskId, frameworkId, graceMs, reason, message } = msg.kill;
      const outcome = this.executor.kill(taskId, graceMs, message || undefined, reason || undefined);
      this.log.info({ taskId, outcome }, 'task kill');
      if (outcome === 'unknown') {
        // Tells the master to forget a task it believes runs here.
        this.statusUpdate({ taskId, frameworkId, state: 'TASK_LOST', message: 'unknown task', hasExitCode: false, exitCode: 0, reason: 'REASON_TASK_UNKNOWN' });
      }
    } else if ('ack' in msg) {
      const acked = this.pending.ack(msg.ack.uuid);
      if (acked && isTerminal(acked.state)) this.executor.release(acked.taskId);
    } else if ('drain' in msg) {
      void this.applyDrain(msg.drain);
    } else if ('error' in msg) {
      // A follower's answer while masters elect or after a failover: the connection closes
      // and the link goes to the leader it names, or to the next master (master-link.ts).
      if (msg.error.code === 'CAIRN_NOT_LEADER') this.log.debug({ leader: msg.error.message }, 'this master does not lead');
      else this.log.error({ code: msg.error.code, message: msg.error.message }, 'master reported an error');
    }
  }

  private async applyDrain(order: DrainOrder): Promise<void> {
    try {
      if (order.draining) {
        const deadlineAtMs = order.hasDeadline ? order.deadlineAtMs : null;
        if (this.drainState?.deadlineAtMs !== deadlineAtMs) await this.drain(deadlineAtMs);
      } else if (this.drainState) {
        await this.undrain();
      }
    } catch (err) {
      this.log.error({ err: (err as Error).message }, 'cannot record the drain');
    }
  }

  private async onRegistered(reg: { agentId: string; lostTaskIds: string[]; pingIntervalMs: number; drain?: DrainOrder | null }, generation: number): Promise<void> {
    if (reg.agentId === '') {
      this.log.error('master registered this agent without an id; reconnecting');
      this.link.drop('registered without an agent id');
      return;
    }
    if (reg.agentId !== this.agentId) {
      if (this.agentId !== undefined) this.log.warn({ old: this.agentId, new: reg.agentId }, 'master gave this agent a new id');
      // Taken at once: a launch may arrive while the id is written, and its container is
      // labelled with the id.
      this.agentId = reg.agentId;
      try {
        await writeAgentId(this.cfg.workDir, reg.agentId);
      } catch (err) {
        this.log.error({ err: (err as Error).message }, 'cannot store the agent id; a restart will register as a new agent');
      }
    }
    // The connection may have gone while the id was written.
    if (generation !== this.link.currentGeneration || !this.link.isOpen) return;
    this.registeredOn = generation;
    this.link.markHealthy();
    if (reg.pingIntervalMs > 0) this.link.setLivenessMs(reg.pingIntervalMs * this.cfg.missedPingsAllowed);
    if ((reg.lostTaskIds ?? []).length > 0) {
      this.log.warn({ lostTaskIds: reg.lostTaskIds }, 'master marked tasks of this agent lost');
    }
    this.log.info({ agentId: this.agentId, pending: this.pending.size }, 'registered with master');
    // The registry's word on draining wins over what this agent remembers (it may have
    // been drained or undrained while the agent was away).
    await this.applyDrain(reg.drain ?? NOT_DRAINING);
    this.membership?.announce({ api: this.httpUrl, hostname: this.cfg.hostname, agentId: this.agentId });
    this.resendPending();
  }

  private statusUpdate(change: TaskStatusChange): void {
    if (isTerminal(change.state)) {
      const end = taskEndLine(change);
      this.log[end.level](end.fields, end.msg);
    }
    const update: StatusUpdate = { ...change, uuid: new Uint8Array(randomBytes(16)), timestampMs: Date.now() };
    this.pending.add(update);
    if (this.registered) this.link.send({ statusUpdate: update });
  }

  private resendPending(): void {
    if (!this.registered) return;
    for (const update of this.pending.list()) this.link.send({ statusUpdate: update });
  }
}

/**
 * The masters' DNS servers as Docker takes them: bare addresses, which it asks on port 53.
 * A master serving DNS on another port (not root) cannot be given to containers this way.
 */
export function dockerDnsServers(servers: readonly string[]): string[] {
  const out: string[] = [];
  for (const s of servers) {
    const m = /^\[?([^\]]+?)\]?:(\d+)$/.exec(s);
    if (m && m[2] === '53') out.push(m[1]!);
  }
  return out;
}
