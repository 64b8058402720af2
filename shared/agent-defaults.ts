// The agent's defaults, each with its reason: compileAgentOptions (agent/options.ts) fills
// them in for whatever a caller leaves out, and `cairn agent` (bin/commands/daemons/) shows
// them in its help and passes them on. Data only, so the command line can read it without
// loading the agent (agent/options.ts pulls in systeminformation).

/** What a starting agent may do with the tasks an earlier agent process left running. */
export type RecoverMode = 'reconnect' | 'cleanup';
export const RECOVER_MODES: readonly RecoverMode[] = ['reconnect', 'cleanup'];

/**
 * Capabilities `--container-cap-add` may add back: Docker's default set less those that reach
 * past the container (MKNOD, AUDIT_WRITE, SETFCAP, SETPCAP, NET_RAW are left out), by their
 * names without `CAP_`.
 */
export const ADDABLE_CAPABILITIES: readonly string[] = ['CHOWN', 'DAC_OVERRIDE', 'FOWNER', 'FSETID', 'KILL', 'SETGID', 'SETUID', 'NET_BIND_SERVICE', 'SYS_CHROOT'];

/** Beyond this, a shared device's memory is sliced too thin to be of use to anyone. */
export const MAX_GPU_SHARING = 64;

export const AGENT_DEFAULTS = Object.freeze({
  /** Mesos' agent port, so Mesos users find the agent where they expect it. */
  httpPort: 5051,
  /** The longest wait between reconnect attempts: a master that comes back is found within 2 s. */
  reconnectMaxMs: 2_000,
  /** How often status updates the master has not acknowledged are sent again. */
  statusResendMs: 2_000,
  /** The grace period of a kill when neither the kill nor the task names one. */
  defaultKillGraceMs: 3_000,
  /** An agent restarted (upgraded, crashed) re-attaches to its tasks, as Mesos' does. */
  recover: 'reconnect' as RecoverMode,
  /** Re-attached tasks are not this process's children: their exit is noticed by polling. */
  recoveredPollMs: 250,
  /** Tasks get their own cgroups (memory and CPU limits) wherever the host allows. */
  cgroups: true,
  /** Cairn's cgroups live under one directory of each hierarchy, apart from everyone else's. */
  cgroupsRoot: 'cairn',
  /** CPU is weighted, not capped: a task may use CPU that nobody else wants. */
  cgroupsCpuQuota: false,
  /** How often tasks' CPU, memory and GPU use is sampled. */
  usageIntervalMs: 5_000,
  /** A GPU is one task's at a time: time-sharing devices is the operator's choice. */
  gpuSharing: 1,
  /** Container tasks run through the Docker daemon wherever one answers. */
  docker: true,
  /** Where the Docker daemon listens unless told otherwise. */
  dockerSocket: '/var/run/docker.sock',
  /** A finished task's sandbox (its logs) is kept a week for whoever comes to read it. */
  sandboxGcAgeMs: 7 * 24 * 3_600_000,
  /** Above 90% of the work dir's disk in use, finished sandboxes go sooner, oldest first. */
  sandboxGcDiskPercent: 90,
  /** How often sandboxes are checked for age and disk use. */
  sandboxGcIntervalMs: 60_000,
  /**
   * A root agent runs the tasks of frameworks that name no user as `nobody`: an account that
   * owns no files, so a task reads and writes only what everyone may (and its own sandbox).
   */
  defaultTaskUser: 'nobody',
  /**
   * Where a root agent takes a uid of its own for each principal whose tasks name no user
   * (agent/task-uids.ts): above systemd's container ranges and useradd's subordinate ids,
   * below 2^31, where no account, subuid or container mapping is expected; its 268 million
   * slots make two principals' hashes meet rarely.
   */
  taskUidRange: '1879048192-2147483646',
  /** A root task can do anything the agent can (read its credentials, kill its tasks): the operator opts in. */
  allowRootTasks: false,
  /**
   * Tasks resolve the cluster's names through the system resolver (getaddrinfo), as every ML
   * framework's transport does: without it a program that was not written for Cairn cannot
   * find its peers. On wherever the agent can (root).
   */
  taskDns: true,
  /**
   * Processes and threads one task may have at once (its cgroup's pids.max): far more than a
   * build (make -j) or a data loader's workers and a JVM's threads need, and a thousandth of
   * a 64-bit host's pid space (pid_max 4,194,304; 32,768 on older hosts), so a fork bomb
   * stops at its own limit instead of leaving the host unable to start anything.
   */
  taskPidsMax: 4096,
  /** A task's `disk` is a limit, as Mesos' --enforce_container_disk_quota makes it: one task must not fill the host's disk. */
  enforceDisk: true,
  /**
   * How often tasks' sandboxes are measured against their disk limits: with the usage
   * sampling, a third of Mesos' 15 s, since a task writing 500 MB/s goes that far past its
   * limit each second before it is seen (agent/isolation/disk-watcher.ts).
   */
  diskWatchIntervalMs: 5_000,
  /** A task that asks for no disk is measured, not limited, as in Mesos: the operator may give such tasks a limit. */
  defaultTaskDiskMb: 0,
});

/** The largest --default-task-disk: 1 PiB in MiB. */
export const MAX_TASK_DISK_MB = 1024 ** 3;

/** The largest pid limit a task can be given: the kernel's own ceiling (PID_MAX_LIMIT on 64-bit). */
export const MAX_TASK_PIDS = 4_194_304;
