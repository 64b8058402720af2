// The Docker executor: runs a task in a container through the Docker Engine API
// (dockerode over the daemon's socket). Its output is copied from the container's log
// stream into the task's sandbox files, so logs read the same for processes and
// containers. Containers carry labels naming their task and the agent that launched them,
// which is how a restarted agent finds them again (`recover`); a container another agent
// launched is never adopted nor removed (ownership.ts). An error in one container's I/O (its
// log stream, its sandbox files, the container vanishing) ends that task, never the agent.

import Docker from 'dockerode';
import { createWriteStream, mkdirSync, lstatSync, type WriteStream } from 'node:fs';
import type { Logger } from 'pino';
import { isTerminal, type ContainerSpec, type PullPolicy, type RegistryAuth, type RunningTask, type TaskInfo, type TaskState } from '../../../shared/agent-protocol.ts';
import type { LogChunk } from '../../../shared/master-state.ts';
import { Resources } from '../../../shared/resources.ts';
import { GpuPool } from '../../resources/gpu-pool.ts';
import { cgroupOfProcess, type CgroupRef } from '../../isolation/cgroups.ts';
import { closeQuietly, logPath, openLogForAppend, openSandbox, readSandboxLog, sandboxDir, type LogStream } from '../process/sandbox.ts';
import type { TaskUserDecider } from '../../task-users.ts';
import type { KillOutcome, LaunchOutcome, TaskSnapshot, TaskStatusChange } from '../process/executor.ts';
import type { RecoverMode } from '../../../shared/agent-defaults.ts';
import { containerConfig, containerName, type ContainerCreateBody, type ContainerDns, LABEL_FRAMEWORK_ID, LABEL_TASK_ID, NO_CONTAINER_DNS } from './container-config.ts';
import { containerOwnership, workDirInstance, type ListedContainer, type Ownership } from './ownership.ts';
import { engineAuthConfig, registryAnswer, takePullAuth } from './registry-auth.ts';
import { HostPathAllowList } from './host-path-allow.ts';
import type { DockerConfig } from '../../../shared/docker-auth.ts';

export const LABEL_RESOURCES = 'cairn.resources';
/** The GPU devices the container holds, comma-separated, so a restarted agent holds them again. */
export const LABEL_GPUS = 'cairn.gpus';
const DEFAULT_KILL_GRACE_MS = 3000;

export type DockerTaskInfo = TaskInfo & { container: ContainerSpec };

export function isContainerTask(t: TaskInfo): t is DockerTaskInfo {
  return !!t.container && t.container.type === 'docker';
}

export interface DockerExecutorOptions {
  workDir: string;
  hostname: string;
  agentId: () => string;
  socketPath?: string;
  /**
   * What a container task named `dnsName` resolves with (the agent's task resolver; else the
   * masters' DNS where it serves on port 53), asked at each launch.
   */
  dns?: (dnsName: string) => ContainerDns;
  /** Cap containers' CPU time at their cpus (CFS quota), not only weight it. */
  cpuQuota?: boolean;
  /** The OCI runtime containers are started with (the daemon's registered name); left out, the daemon's default. */
  runtime?: string;
  /** Shared with the process executor so that no device is handed out twice. */
  gpuPool: GpuPool;
  /** The agent's registry credentials (--docker-config), for images whose launch brings none. */
  dockerConfig?: DockerConfig;
  /** Decides which user each container runs as (its numeric uid:gid); without, the image's user. */
  users?: TaskUserDecider;
  /** Processes and threads one container may have (its pids limit); 0 or left out: none. */
  pidsMax?: number;
  /** The host paths containers may mount (--host-path-allow); left out, none. */
  hostPaths?: HostPathAllowList;
  /** Capabilities added back to every container after all are dropped (--container-cap-add). */
  capAdd?: readonly string[];
  defaultKillGraceMs?: number;
  /**
   * How long an ended container's log stream may take to end before its status goes out
   * anyway (default 2 s); the stream normally ends at once.
   */
  logDrainMs?: number;
  onStatus: (change: TaskStatusChange) => void;
  logger?: Logger;
}

interface ContainerTask {
  taskId: string;
  frameworkId: string;
  resources: string;
  state: TaskState;
  sandbox: string;
  containerId: string | undefined;
  gpus: number[];
  /** The container's init process on the host, and its cgroup (for usage); once started. */
  pid: number | undefined;
  cgroup: CgroupRef | undefined;
  launchedAtMs: number;
  /** Started by an earlier agent process and found again by its labels. */
  recovered: boolean;
  killRequested: boolean;
  killMessage: string | undefined;
  /** The reason the kill gave (a preemption's); undefined for a plain kill. */
  killReason?: string;
  logs: NodeJS.ReadableStream | undefined;
  /** Settles once the log stream has ended (or failed): all the container wrote is copied. */
  logsDone: Promise<void> | undefined;
  files: WriteStream[];
  /** The sources of I/O errors already logged for this task. */
  ioErrors?: Set<string>;
  ended: Promise<void>;
  markEnded: () => void;
}

export class DockerExecutor {
  readonly docker: Docker;
  private readonly tasks = new Map<string, ContainerTask>();
  private readonly gpuPool: GpuPool;
  private closed = false;
  /** Shut down leaving containers running: their ends are the next agent process's to report. */
  private detached = false;
  /** This work dir's instance id, which every container launched from it carries. */
  private instance: string | undefined;
  /** Containers with Cairn's labels that are not this agent's, each logged once and left alone. */
  private readonly foreign = new Set<string>();

  constructor(private readonly opts: DockerExecutorOptions) {
    this.docker = new Docker({ socketPath: opts.socketPath ?? '/var/run/docker.sock' });
    this.gpuPool = opts.gpuPool;
  }

  /** Whether the daemon answers; the agent says so at start instead of failing each launch. */
  async available(): Promise<{ ok: true; version: string } | { ok: false; reason: string }> {
    try {
      const v = await this.docker.version();
      return { ok: true, version: v.Version };
    } catch (err) {
      return { ok: false, reason: (err as Error).message };
    }
  }

  launch(info: DockerTaskInfo): LaunchOutcome {
    if (this.closed) return 'failed';
    if (this.tasks.has(info.taskId)) return 'duplicate';
    const t = this.track(info.taskId, info.frameworkId, info.resources, sandboxDir(this.opts.workDir, info.taskId));
    void this.run(t, info).catch((err) => this.finish(t, 'TASK_FAILED', `container failed: ${(err as Error).message}`, 'REASON_CONTAINER_LAUNCH_FAILED'));
    return 'launched';
  }

  private track(taskId: string, frameworkId: string, resources: string, sandbox: string): ContainerTask {
    let markEnded!: () => void;
    const ended = new Promise<void>((r) => (markEnded = r));
    const t: ContainerTask = {
      taskId, frameworkId, resources, sandbox, state: 'TASK_STAGING', containerId: undefined, gpus: [],
      pid: undefined, cgroup: undefined, launchedAtMs: Date.now(), recovered: false,
      killRequested: false, killMessage: undefined, logs: undefined, logsDone: undefined, files: [], ended, markEnded,
    };
    this.tasks.set(taskId, t);
    return t;
  }

  private ownInstance(): string {
    return (this.instance ??= workDirInstance(this.opts.workDir));
  }

  /** Whether a container (as listed or inspected) is this agent's; see ownership.ts. */
  private ownership(c: ListedContainer): Ownership {
    const agentId = this.opts.agentId();
    return containerOwnership(c, { instance: this.ownInstance(), agentId: agentId === '' ? undefined : agentId, sandboxOf: (taskId) => sandboxDir(this.opts.workDir, taskId) });
  }

  private noteForeign(c: ListedContainer, why: string): void {
    if (this.foreign.has(c.Id)) return;
    this.foreign.add(c.Id);
    // Info, not a warning: another agent or another cluster on this host is an ordinary setup,
    // and leaving its containers alone is all there is to do (once per container).
    this.opts.logger?.info({ container: c.Id.slice(0, 12), containerName: c.Names?.[0], taskId: c.Labels[LABEL_TASK_ID], why }, "a container with Cairn's labels is not this agent's: left alone");
  }

  private async run(t: ContainerTask, info: DockerTaskInfo): Promise<void> {
    // A container is labelled with its agent's id; one launched with none would be any agent's.
    const agentId = this.opts.agentId();
    if (agentId === '') return this.finish(t, 'TASK_FAILED', 'the agent has no id yet: containers are launched once it has registered', 'REASON_CONTAINER_LAUNCH_FAILED');
    const decided = this.opts.users?.decide(info.user, info.principal);
    if (decided && !decided.ok) return this.finish(t, 'TASK_FAILED', decided.message, 'REASON_TASK_INVALID');
    // Host paths only from the operator's allow-list; checked before anything is made for the task.
    const hostPaths = this.opts.hostPaths ?? HostPathAllowList.none();
    for (const [i, v] of info.container.volumes.entries()) {
      const refused = hostPaths.refusal(v.hostPath);
      if (refused) return this.finish(t, 'TASK_FAILED', `container.volumes[${i}].host_path: ${refused}`, 'REASON_TASK_INVALID');
    }
    const runAs = decided?.runAs;
    // A root agent hands the sandbox to the task's user; one that is not root cannot.
    const owner = decided?.switchUser && runAs ? { uid: runAs.uid, gid: runAs.gid } : undefined;
    const opened = openSandbox(this.opts.workDir, info.taskId, owner);
    closeQuietly(opened.stdoutFd);
    closeQuietly(opened.stderrFd);
    const image = info.container.docker.image;
    const policy = info.container.docker.pullPolicy;
    const auth = takePullAuth(info.container.docker, this.opts.dockerConfig);
    // Only `always` pulls up front; otherwise the create below says whether the image is here,
    // which spares the daemon a call per launch.
    if (policy === 'always') {
      const imageError = await this.pull(image, auth);
      if (imageError) return this.finish(t, 'TASK_FAILED', imageError, 'REASON_CONTAINER_LAUNCH_FAILED');
    }
    if (t.killRequested) return this.finish(t, 'TASK_KILLED', 'killed before the container started', 'REASON_TASK_KILLED_DURING_LAUNCH');

    const gpusWanted = Resources.parse(info.resources).gpus;
    if (gpusWanted > 0) {
      const got = this.gpuPool.assign(info.taskId, gpusWanted);
      if (!got) return this.finish(t, 'TASK_FAILED', `asked for ${gpusWanted} GPUs, ${this.gpuPool.freeCount()} free`, 'REASON_CONTAINER_LAUNCH_FAILED');
      t.gpus = [...got];
    }
    const body = containerConfig({
      task: info, agentId, agentInstance: this.ownInstance(), hostname: this.opts.hostname, sandbox: t.sandbox,
      gpuIndices: t.gpus, dns: this.opts.dns?.(info.dnsName ?? '') ?? NO_CONTAINER_DNS, cpuQuota: this.opts.cpuQuota ?? false,
      ...(this.opts.runtime !== undefined ? { runtime: this.opts.runtime } : {}),
      ...(runAs ? { user: { uid: runAs.uid, gid: runAs.gid } } : {}),
      ...(this.opts.pidsMax ? { pidsLimit: this.opts.pidsMax } : {}),
      ...(this.opts.capAdd ? { capAdd: this.opts.capAdd } : {}),
    });
    body.Labels[LABEL_RESOURCES] = info.resources;
    if (t.gpus.length > 0) body.Labels[LABEL_GPUS] = t.gpus.join(',');
    const created = await this.create(body, policy, auth);
    if (typeof created === 'string') return this.finish(t, 'TASK_FAILED', created, 'REASON_CONTAINER_LAUNCH_FAILED');
    const container = created;
    t.containerId = container.id;
    if (t.killRequested) {
      await container.remove({ force: true }).catch(() => undefined);
      return this.finish(t, 'TASK_KILLED', 'killed before the container started', 'REASON_TASK_KILLED_DURING_LAUNCH');
    }
    await container.start();
    this.setState(t, 'TASK_RUNNING', `container ${container.id.slice(0, 12)} started`, '');
    // Only usage sampling needs the pid, so RUNNING does not wait for it.
    await this.noteProcess(t, container);
    await this.follow(t, container, 0);
    await this.watch(t, container);
  }

  /** Where the container's init runs on the host, for usage sampling (best effort). */
  private async noteProcess(t: ContainerTask, container: Docker.Container): Promise<void> {
    const info = await container.inspect().catch(() => undefined);
    const pid = info?.State?.Pid;
    if (!pid) return;
    t.pid = pid;
    t.cgroup = cgroupOfProcess(pid);
  }

  /** Copies the container's output into the sandbox files from `sinceSec` on. */
  private async follow(t: ContainerTask, container: Docker.Container, sinceSec: number): Promise<void> {
    // A recovered container's sandbox may be gone (removed by hand): it is made again.
    try {
      mkdirSync(t.sandbox, { recursive: true });
    } catch (err) {
      this.ioError(t, 'sandbox', err);
    }
    // The sandbox is the container's to change: never append through a symlink planted there.
    const logFile = (stream: LogStream): WriteStream => {
      try {
        return createWriteStream('', { fd: openLogForAppend(logPath(t.sandbox, stream)) });
      } catch (e) {
        this.ioError(t, `${stream} file`, e);
        return createWriteStream('/dev/null');
      }
    };
    const out = logFile('stdout');
    const err = logFile('stderr');
    // A file that cannot be written loses that output, not the agent.
    out.on('error', (e) => this.ioError(t, 'stdout file', e));
    err.on('error', (e) => this.ioError(t, 'stderr file', e));
    t.files = [out, err];
    const stream = (await container.logs({ follow: true, stdout: true, stderr: true, since: sinceSec })) as unknown as NodeJS.ReadableStream;
    t.logs = stream;
    // The stream may end before the wait for the container returns, so its end is kept, not listened for later.
    t.logsDone = new Promise<void>((resolve) => {
      stream.once('end', resolve);
      stream.once('close', resolve);
      stream.on('error', (e) => {
        this.ioError(t, 'log stream', e);
        resolve();
      });
    });
    this.docker.modem.demuxStream(stream, out, err);
  }

  private async watch(t: ContainerTask, container: Docker.Container): Promise<void> {
    const result = (await container.wait()) as { StatusCode: number };
    if (this.detached) return;
    const inspect = await container.inspect().catch(() => undefined);
    // Let the log stream drain what the container wrote last before the files close.
    if (t.logsDone) {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([t.logsDone, new Promise<void>((r) => (timer = setTimeout(r, this.opts.logDrainMs ?? 2000)))]);
      clearTimeout(timer);
    }
    // The ended container stays until the master acknowledges the task's end (release): it
    // is the only record of the exit code, and an agent killed between removing it and that
    // acknowledgement came back knowing nothing of the task.
    const code = inspect?.State?.ExitCode ?? result.StatusCode;
    if (inspect?.State?.OOMKilled || (code === 137 && !t.killRequested && (await this.oomKilledLate(container)))) {
      return this.finish(t, 'TASK_FAILED', 'container exceeded its memory limit and was killed', 'REASON_CONTAINER_LIMITATION_MEMORY', code);
    }
    if (t.killRequested) return this.finish(t, 'TASK_KILLED', t.killMessage ?? `killed on request (exit code ${code})`, t.killReason ?? 'REASON_TASK_KILLED', code);
    if (code === 0) return this.finish(t, 'TASK_FINISHED', 'exited with code 0', '', 0);
    return this.finish(t, 'TASK_FAILED', `exited with code ${code}`, 'REASON_COMMAND_EXECUTOR_FAILED', code);
  }

  /**
   * Whether the daemon marks a SIGKILLed container OOM-killed a moment after its exit: the
   * kernel's OOM event reaches the daemon on its own path (containerd's event stream), which
   * under crun and cgroup v1 can arrive after the exit it caused. Asked again for up to a
   * second, only for an exit by SIGKILL that nobody requested.
   */
  private async oomKilledLate(container: Docker.Container): Promise<boolean> {
    for (let i = 0; i < 10; i++) {
      await new Promise((r) => setTimeout(r, 100));
      const again = await container.inspect().catch(() => undefined);
      if (again === undefined) return false;
      if (again.State?.OOMKilled) return true;
    }
    return false;
  }

  /** Logs an I/O error of one task's (once per source); the task goes on as far as it can. */
  private ioError(t: ContainerTask, source: string, err: unknown): void {
    const seen = (t.ioErrors ??= new Set<string>());
    if (seen.has(source)) return;
    seen.add(source);
    this.opts.logger?.warn({ taskId: t.taskId, source, err: (err as Error)?.message ?? String(err) }, "error in a container's I/O: its output may be incomplete");
  }

  /**
   * Creates the container; a string says why it could not be. An image that is not here is
   * pulled once with `if-not-present`, and is the failure with `never`. A container left with
   * this task's name by an earlier attempt of this agent is in the way: it goes, and the
   * create is tried again. One that is not this agent's is left alone, and the launch fails.
   */
  private async create(body: ContainerCreateBody, policy: PullPolicy, auth: RegistryAuth | undefined): Promise<Docker.Container | string> {
    let pulled = policy === 'always';
    let removed = false;
    for (;;) {
      try {
        return await this.docker.createContainer(body);
      } catch (err) {
        const status = (err as { statusCode?: number }).statusCode;
        if (status === 404 && /no such image/i.test((err as Error).message)) {
          if (policy === 'never') return `image ${body.Image} is not present and the pull policy is never`;
          if (pulled) return `image ${body.Image} is not present after pulling it`;
          pulled = true;
          const pullError = await this.pull(body.Image, auth);
          if (pullError) return pullError;
        } else if (status === 409 && !removed) {
          removed = true;
          const inTheWay = this.docker.getContainer(body.name);
          const info = await inTheWay.inspect().catch(() => undefined);
          if (info) {
            const listed: ListedContainer = { Id: info.Id, Names: [info.Name], Labels: info.Config?.Labels ?? {}, Mounts: info.Mounts };
            const owned = this.ownership(listed);
            if (!owned.ours) {
              this.noteForeign(listed, owned.why);
              return `a container named ${body.name} that is not this agent's is in the way (${owned.why}); it is left alone`;
            }
          }
          await inTheWay.remove({ force: true }).catch(() => undefined);
        } else {
          throw err;
        }
      }
    }
  }

  /** Pulls the image (with the registry credential, if any); undefined when it is here to use, else why not (the registry's words). */
  private async pull(image: string, auth: RegistryAuth | undefined): Promise<string | undefined> {
    try {
      const stream = await this.docker.pull(image, auth ? { authconfig: engineAuthConfig(auth) } : {});
      await new Promise<void>((resolve, reject) => this.docker.modem.followProgress(stream, (err: Error | null) => (err ? reject(err) : resolve())));
      return undefined;
    } catch (err) {
      const said = (err as Error).message;
      const registry = await registryAnswer(image, said, auth);
      return `cannot pull image ${image}: ${registry ? `${registry} (the Docker daemon, having tried plain HTTP after it: ${said})` : said}`;
    }
  }

  kill(taskId: string, graceMs = 0, message?: string, reason?: string): KillOutcome {
    const t = this.tasks.get(taskId);
    if (!t) return 'unknown';
    if (isTerminal(t.state)) return 'terminal';
    if (t.killRequested) return 'already-killing';
    t.killRequested = true;
    t.killMessage = message;
    t.killReason = reason;
    if (t.containerId) {
      const grace = graceMs > 0 ? graceMs : this.opts.defaultKillGraceMs ?? DEFAULT_KILL_GRACE_MS;
      void this.docker.getContainer(t.containerId).stop({ t: Math.max(1, Math.ceil(grace / 1000)) }).catch(() => undefined);
    }
    return 'killing';
  }

  /**
   * Finds this agent's containers after a restart: running ones are followed again (their
   * output since the sandbox was last written is appended), ended ones are reported with
   * their exit code. Returns the tasks that are still running. With `cleanup`, running
   * containers are stopped instead (reported TASK_KILLED). Containers with Cairn's labels
   * that this agent did not launch are logged once and left alone.
   */
  async recover(mode: RecoverMode = 'reconnect'): Promise<RunningTask[]> {
    const list = await this.docker.listContainers({ all: true, filters: { label: [LABEL_TASK_ID] } });
    const running: RunningTask[] = [];
    for (const c of list) {
      const taskId = c.Labels[LABEL_TASK_ID];
      if (!taskId || this.tasks.has(taskId)) continue;
      const owned = this.ownership(c);
      if (!owned.ours) {
        this.noteForeign(c, owned.why);
        continue;
      }
      const t = this.track(taskId, c.Labels[LABEL_FRAMEWORK_ID] ?? '', c.Labels[LABEL_RESOURCES] ?? '', sandboxDir(this.opts.workDir, taskId));
      t.containerId = c.Id;
      t.state = 'TASK_RUNNING';
      t.recovered = true;
      const container = this.docker.getContainer(c.Id);
      if (c.State === 'running') {
        await this.noteProcess(t, container);
        const gpus = (c.Labels[LABEL_GPUS] ?? '').split(',').filter((g) => /^\d+$/.test(g)).map(Number);
        if (this.gpuPool.claim(taskId, gpus)) t.gpus = gpus;
        else this.opts.logger?.warn({ taskId, gpus }, 'a recovered container holds GPUs this agent no longer has free');
      }
      let since = 0;
      try {
        since = Math.floor(lstatSync(logPath(t.sandbox, 'stdout')).mtimeMs / 1000);
      } catch {
        // no sandbox left: copy everything the container still has
      }
      if (c.State === 'running') running.push({ taskId, frameworkId: t.frameworkId, state: 'TASK_RUNNING', resources: t.resources });
      void this.follow(t, container, since)
        .then(() => this.watch(t, container))
        .catch((err) => this.finish(t, 'TASK_FAILED', `lost track of container: ${(err as Error).message}`, 'REASON_CONTAINER_LAUNCH_FAILED'));
      if (mode === 'cleanup' && c.State === 'running') this.kill(taskId, 0, 'killed: found running when the agent started with --recover=cleanup');
    }
    return mode === 'cleanup' ? [] : running;
  }

  readLog(taskId: string, stream: LogStream, offset: number, maxBytes: number, withTimes = false): Promise<LogChunk> {
    const t = this.tasks.get(taskId);
    return readSandboxLog(t?.sandbox ?? sandboxDir(this.opts.workDir, taskId), stream, offset, maxBytes, !t || isTerminal(t.state), withTimes);
  }

  has(taskId: string): boolean {
    return this.tasks.has(taskId);
  }

  snapshot(taskId: string): TaskSnapshot | undefined {
    const t = this.tasks.get(taskId);
    return t && {
      taskId: t.taskId, frameworkId: t.frameworkId, state: t.state, resources: t.resources, sandbox: t.sandbox,
      pid: t.pid, startTimeTicks: undefined, gpuIndices: t.gpus, recovered: t.recovered, launchedAtMs: t.launchedAtMs, cgroup: t.cgroup,
    };
  }

  snapshots(): TaskSnapshot[] {
    return [...this.tasks.keys()].map((id) => this.snapshot(id)!);
  }

  runningCount(): number {
    return [...this.tasks.values()].filter((t) => !isTerminal(t.state)).length;
  }

  activeTasks(): RunningTask[] {
    return [...this.tasks.values()]
      .filter((t) => !isTerminal(t.state))
      .map((t) => ({ taskId: t.taskId, frameworkId: t.frameworkId, state: t.state, resources: t.resources }));
  }

  /** Forgets an ended task whose end the master acknowledged, and removes its container. */
  release(taskId: string): void {
    const t = this.tasks.get(taskId);
    if (!t || !isTerminal(t.state)) return;
    this.tasks.delete(taskId);
    if (t.containerId) void this.docker.getContainer(t.containerId).remove({ force: true }).catch(() => undefined);
  }

  /** Stops following containers; with killTasks, stops them first and waits (bounded). */
  async shutdown(opts: { killTasks: boolean; timeoutMs?: number }): Promise<void> {
    this.closed = true;
    this.detached = !opts.killTasks;
    const active = [...this.tasks.values()].filter((t) => !isTerminal(t.state));
    if (opts.killTasks) {
      for (const t of active) this.kill(t.taskId);
      await Promise.race([Promise.all(active.map((t) => t.ended)), new Promise((r) => setTimeout(r, opts.timeoutMs ?? 15_000))]);
    }
    for (const t of this.tasks.values()) {
      (t.logs as unknown as { destroy?: () => void } | undefined)?.destroy?.();
      for (const f of t.files) f.end();
    }
  }

  private setState(t: ContainerTask, state: TaskState, message: string, reason: string, exitCode?: number): void {
    t.state = state;
    this.opts.onStatus({
      taskId: t.taskId, frameworkId: t.frameworkId, state, message, reason,
      hasExitCode: exitCode !== undefined, exitCode: exitCode ?? 0,
    });
  }

  private finish(t: ContainerTask, state: TaskState, message: string, reason: string, exitCode?: number): void {
    if (isTerminal(t.state) || this.detached) return;
    this.gpuPool.release(t.taskId);
    for (const f of t.files) f.end();
    this.setState(t, state, message, reason, exitCode);
    t.markEnded();
  }

  /** The container name a task runs under (for operators and tests). */
  static containerName = containerName;
}
