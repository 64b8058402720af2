// The daemons' family: `cairn up`, `cairn master`, `cairn agent` (with `agent drain` and
// `agent undrain`, maintenance of one host through the master) and `cairn masters`, the
// replicated masters' membership. Flags, help and validation only; the handlers (start.ts,
// drain.ts, masters.ts) load when their command runs, so no other command loads a daemon.

import { resolve } from 'node:path';
import { Command, InvalidArgumentError, Option } from 'commander';
import { ADDABLE_CAPABILITIES, AGENT_DEFAULTS, MAX_GPU_SHARING, MAX_TASK_DISK_MB, MAX_TASK_PIDS, RECOVER_MODES } from '../../../shared/agent-defaults.ts';
import { formatDurationMs } from '../../../shared/duration.ts';
import { MAX_DRAIN_DEADLINE_MS } from '../../../shared/drain-request.ts';
import { DEFAULT_CLASS_NAMES, PriorityClasses } from '../../../shared/sharing/priority-classes.ts';
import { DEFAULT_OBJECT_LIMITS } from '../../../shared/sharing/object-limits.ts';
import type { Openable } from '../../../shared/openable.ts';
import { masterOption } from '../common/client-side.ts';
import { masterUrlOf, USAGE_EXIT_CODE, type FamilyContext } from '../common/context.ts';
import { attributesFlag, bytesFlag, durationFlag, integerFlag, ipv4Flag, listFlag, mastersFlag, peersFlag, resolversFlag, resourcesFlag, userFlag } from '../common/flags.ts';
import type { CliIo } from '../common/io.ts';
import { outputOption } from '../common/list-flags.ts';
import { DEFAULT_MASTER_URL, type OutputOption } from '../common/options.ts';
import type { OutputFormat } from '../common/output.ts';
import { addDnsOptions, addGossipOptions, addTlsOptions, classListFlag, dnsFlags, gossipFlags, objectLimitFlags, openOption, PORT, tlsFlags, type AgentFlagValues, type DnsFlagValues, type GossipFlagValues, type TlsFlagValues } from './daemon-flags.ts';
import { addLogOptions, logFlags, type LogFlagValues } from './log-flags.ts';
import { DEFAULT_AGENT_GOSSIP_PORT, DEFAULT_MASTER_GOSSIP_PORT, type AgentOptions, type DrainOptions, type MasterOptions, type MastersOptions, type UpOptions } from './options.ts';

/** Each handler runs one command and resolves with the process exit code. */
export interface DaemonHandlers {
  up(options: UpOptions, io: CliIo): Promise<number>;
  master(options: MasterOptions, io: CliIo): Promise<number>;
  agent(options: AgentOptions, io: CliIo): Promise<number>;
  masters(options: MastersOptions & OutputOption, io: CliIo): Promise<number>;
  drain(options: DrainOptions, io: CliIo): Promise<number>;
}

export const daemonHandlers: DaemonHandlers = {
  up: async (o, io) => (await import('./start.ts')).runUp(o, io),
  master: async (o, io) => (await import('./start.ts')).runMaster(o, io),
  agent: async (o, io) => (await import('./start.ts')).runAgent(o, io),
  masters: async (o, io) => (await import('./masters.ts')).runMasters(o, io),
  drain: async (o, io) => (await import('./drain.ts')).runDrain(o, io),
};

/** Adds `up`, `master` and `agent` (with drain and undrain) to the program. */
export function addDaemonCommands(program: Command, ctx: FamilyContext & { handlers: DaemonHandlers }): void {
  const { io, result, handlers: h } = ctx;
  const up = program
    .command('up')
    .description('run one master and one agent in this process, in the foreground (Ctrl-C stops both)')
    .option('--data-dir <dir>', 'where the master (dir/master) and the agent (dir/agent) keep their data', './.cairn')
    .addOption(new Option('--port <port>', 'master port (0: any free port)').argParser(PORT).default(5050))
    .addOption(new Option('--agent-port <port>', "agent's HTTP port (0: any free port)").argParser(PORT).default(AGENT_DEFAULTS.httpPort))
    .addOption(new Option('--resources <resources>', 'agent resources instead of measuring the host, e.g. "cpus:4;mem:8192;ports:[31000-32000]"').argParser(resourcesFlag))
    .addOption(new Option('--masters <n>', 'run a replicated group of 1, 3 or 5 masters on consecutive ports').argParser(mastersFlag).default(1))
    .option('--gossip-encrypt', 'encrypt the gossip between the daemons (AES-256-GCM, a key derived from the cluster secret)')
    .addOption(new Option('--gossip-port <port>', "the first master's gossip port, UDP and TCP, for agents of this host to --join with --secret-file DATA_DIR/secret (default: any free port)").argParser(PORT))
    .option('--credentials <file>', 'principals to use instead of DATA_DIR/credentials.json (made once); its first user entry is saved for the CLI (default: $CAIRN_CREDENTIALS)')
    .option('--acls <file>', 'who may do what, JSON in the shape of Mesos ACLs (default: $CAIRN_ACLS, else every user principal may do everything)')
    .addOption(new Option('--host-path-allow <dirs>', "host directories the agent's containers may mount, comma-separated or repeated (default: none), as cairn agent's").argParser(listFlag))
    .addOption(openOption());
  addLogOptions(addTlsOptions(addDnsOptions(up)))
    .action(async (o: { dataDir: string; port: number; agentPort: number; resources?: string; masters: number; credentials?: string; acls?: string; open?: Openable[]; gossipEncrypt?: boolean; gossipPort?: number; hostPathAllow?: string[] } & DnsFlagValues & TlsFlagValues & LogFlagValues, cmd: Command) => {
      // A group's members know each other's URLs before they start: the ports are fixed.
      if (o.masters > 1 && (o.port === 0 || o.port + o.masters - 1 > 65535)) {
        return cmd.error(`error: option '--port <port>' must be the first of ${o.masters} consecutive free ports with --masters ${o.masters} (not 0, and at most ${65536 - o.masters})`, { exitCode: USAGE_EXIT_CODE, code: 'cairn.badFlag' });
      }
      result.exitCode = await h.up({ dataDir: resolve(o.dataDir), port: o.port, agentPort: o.agentPort, masters: o.masters, ...(o.credentials ?? io.env.CAIRN_CREDENTIALS ? { credentials: resolve((o.credentials ?? io.env.CAIRN_CREDENTIALS)!) } : {}), ...(o.acls ?? io.env.CAIRN_ACLS ? { acls: resolve((o.acls ?? io.env.CAIRN_ACLS)!) } : {}), ...(o.open ? { open: o.open } : {}), ...(o.resources !== undefined ? { resources: o.resources } : {}), ...(o.gossipEncrypt ? { gossipEncrypt: true } : {}), ...(o.gossipPort ? { gossipPort: o.gossipPort } : {}), ...(o.hostPathAllow ? { hostPathAllow: o.hostPathAllow } : {}), ...dnsFlags(o), ...tlsFlags(o), ...logFlags(o) }, io);
    });

  const master = program
    .command('master')
    .description('run a master until SIGINT/SIGTERM')
    .addOption(new Option('--port <port>', 'port to listen on (0: any free port)').argParser(PORT).default(5050))
    .option('--host <host>', 'address to listen on (0.0.0.0: every interface)', '127.0.0.1')
    .option('--data-dir <dir>', "the master's data directory", './.cairn/master')
    .option('--credentials <file>', 'principals and their secrets, JSON {"credentials":[{"principal","secret","agent"?}]} (default: $CAIRN_CREDENTIALS, else DATA_DIR/credentials.json, made once with an admin and an agent principal)')
    .option('--acls <file>', 'who may do what, JSON in the shape of Mesos ACLs (default: $CAIRN_ACLS, else every user principal may do everything)')
    .addOption(openOption())
    .addOption(new Option('--ping-interval <duration>', 'how often agents are pinged, e.g. 15s').argParser(durationFlag(1, 3_600_000)))
    .addOption(new Option('--max-missed-pings <n>', 'missed pings before an agent is unreachable').argParser(integerFlag(1, 1000)))
    .addOption(new Option('--offer-timeout <duration>', 'how long an offer stays outstanding before it is rescinded, e.g. 5m').argParser(durationFlag(1, 86_400_000)))
    .addOption(new Option('--id <n>', "this master's id in a replicated group (with --peers)").argParser(integerFlag(1, 1_000_000)))
    .addOption(new Option('--peers <list>', 'every master of the group, this one included: "1=http://h1:5050,2=http://h2:5050,3=http://h3:5050"').argParser(peersFlag))
    .option('--new-member', 'join a running group (added with `cairn masters add`) instead of founding one; only for a first start with an empty data dir')
    .option('--accept-empty-registry', 'a single master: start from an empty registry although registry.sqlite is empty (0 bytes) or unreadable (an unreadable file is moved aside)')
    .option('--secret-file <path>', 'file holding the cluster secret that masters and gossip members authenticate each other with (at least 16 bytes); with it, the master runs a gossip member')
    .addOption(new Option('--priority-classes <list>', `the priority classes, highest first, comma-separated; the same on every master (default: ${DEFAULT_CLASS_NAMES.join(',')})`).argParser(classListFlag))
    .option('--default-priority-class <name>', 'the class of work that names none (default: the lowest)')
    .addOption(new Option('--preemption-grace <duration>', 'how long a preempted task has between SIGTERM and SIGKILL, e.g. 30s (default: 10s)').argParser(durationFlag(0, 3_600_000)))
    .addOption(new Option('--max-objects-per-principal <n>', `apps, jobs, experiments and secrets one principal may own at once (default: ${DEFAULT_OBJECT_LIMITS.maxObjectsPerPrincipal})`).argParser(integerFlag(1, 10_000_000)))
    .addOption(new Option('--max-object-bytes-per-principal <size>', `bytes of JSON one principal's objects may hold, an app's kept versions included, e.g. 64MiB (default: ${DEFAULT_OBJECT_LIMITS.maxObjectBytesPerPrincipal / 1024 ** 2}MiB)`).argParser(bytesFlag(1024, 2 ** 40)))
    .addOption(new Option('--max-task-env <size>', `the largest environment one task may carry, NAME=value pairs together, e.g. 256KiB (default: ${DEFAULT_OBJECT_LIMITS.maxTaskEnvBytes / 1024}KiB)`).argParser(bytesFlag(1024, 1024 ** 2)));
  addLogOptions(addTlsOptions(addGossipOptions(addDnsOptions(master), DEFAULT_MASTER_GOSSIP_PORT)))
    .action(async (o: { port: number; host: string; dataDir: string; credentials?: string; acls?: string; open?: Openable[]; pingInterval?: number; maxMissedPings?: number; offerTimeout?: number; id?: number; peers?: Map<number, string>; newMember?: boolean; acceptEmptyRegistry?: boolean; priorityClasses?: string[]; defaultPriorityClass?: string; preemptionGrace?: number; maxObjectsPerPrincipal?: number; maxObjectBytesPerPrincipal?: number; maxTaskEnv?: number } & GossipFlagValues & DnsFlagValues & TlsFlagValues & LogFlagValues, cmd: Command) => {
      if ((o.id === undefined) !== (o.peers === undefined)) {
        return cmd.error("error: options '--id' and '--peers' go together", { exitCode: USAGE_EXIT_CODE, code: 'cairn.badFlag' });
      }
      if (o.peers && o.id !== undefined && !o.peers.has(o.id)) {
        return cmd.error(`error: option '--peers': does not name this master's id ${o.id}`, { exitCode: USAGE_EXIT_CODE, code: 'cairn.badFlag' });
      }
      if (o.peers && o.peers.size > 1 && !o.secretFile) {
        return cmd.error("error: option '--secret-file' is required for a group of masters", { exitCode: USAGE_EXIT_CODE, code: 'cairn.badFlag' });
      }
      const gossip = gossipFlags(o, cmd);
      let classes: PriorityClasses | undefined;
      if (o.priorityClasses !== undefined || o.defaultPriorityClass !== undefined) {
        try {
          classes = new PriorityClasses(o.priorityClasses ?? DEFAULT_CLASS_NAMES, o.defaultPriorityClass);
        } catch (err) {
          return cmd.error(`error: option '--default-priority-class': ${(err as Error).message}`, { exitCode: USAGE_EXIT_CODE, code: 'cairn.badFlag' });
        }
      }
      result.exitCode = await h.master(
        {
          port: o.port,
          host: o.host,
          dataDir: resolve(o.dataDir),
          ...(o.credentials ?? io.env.CAIRN_CREDENTIALS ? { credentials: resolve((o.credentials ?? io.env.CAIRN_CREDENTIALS)!) } : {}),
          ...(o.acls ?? io.env.CAIRN_ACLS ? { acls: resolve((o.acls ?? io.env.CAIRN_ACLS)!) } : {}),
          ...(o.open ? { open: o.open } : {}),
          ...(o.id !== undefined && o.peers ? { raft: { id: o.id, peers: o.peers, secretFile: o.secretFile ? resolve(o.secretFile) : undefined, ...(o.newMember ? { join: true } : {}) } } : {}),
          ...(o.acceptEmptyRegistry ? { acceptEmptyRegistry: true } : {}),
          ...(o.pingInterval !== undefined ? { pingIntervalMs: o.pingInterval } : {}),
          ...(o.maxMissedPings !== undefined ? { maxMissedPings: o.maxMissedPings } : {}),
          ...(o.offerTimeout !== undefined ? { offerTimeoutMs: o.offerTimeout } : {}),
          ...(classes ? { priorityClasses: classes } : {}),
          ...(o.preemptionGrace !== undefined ? { preemptionGraceMs: o.preemptionGrace } : {}),
          ...objectLimitFlags(o),
          ...(gossip ? { gossip } : {}),
          ...dnsFlags(o),
          ...tlsFlags(o),
          ...logFlags(o),
        },
        io,
      );
    });

  const agent = program
    .command('agent')
    .description('run an agent until SIGINT/SIGTERM (its tasks keep running when it stops)')
    .addOption(new Option('--master <url>', `masters' URLs, comma-separated (default: $CAIRN_MASTER or ${DEFAULT_MASTER_URL}; none needed with --join: the leader is learnt from gossip)`))
    .option('--work-dir <dir>', "the agent's work directory (sandboxes, state)", './.cairn/agent')
    .option('--credential <file>', 'the agent\'s credential, JSON {"principal","secret"} or a credentials file with one "agent": true entry (default: $CAIRN_AGENT_CREDENTIAL)')
    .addOption(new Option('--resources <resources>', 'resources to offer instead of measuring the host, e.g. "cpus:4;mem:8192;gpus:1;ports:[31000-32000]"').argParser(resourcesFlag))
    .addOption(new Option('--attributes <attributes>', 'agent attributes, e.g. "rack:r1;zone:a"').argParser(attributesFlag))
    .addOption(new Option('--port <port>', "the agent's HTTP port (0: any free port)").argParser(PORT).default(AGENT_DEFAULTS.httpPort))
    .option('--hostname <hostname>', 'the name this agent advertises (default: the host name)')
    .addOption(new Option('--recover <mode>', 'tasks a previous agent process left running: reconnect (re-attach) or cleanup (kill them)').choices(RECOVER_MODES).default(AGENT_DEFAULTS.recover))
    .option('--no-cgroups', 'do not put tasks in cgroups (no memory or CPU limits)')
    .addOption(new Option('--cgroups-root <name>', 'directory under each cgroup hierarchy for Cairn\'s cgroups').default(AGENT_DEFAULTS.cgroupsRoot))
    .option('--cgroups-cpu-quota', "cap each task's CPU time at its cpus (CFS quota), not only weight it", AGENT_DEFAULTS.cgroupsCpuQuota)
    .addOption(new Option('--usage-interval <duration>', "how often tasks' CPU, memory and GPU use is sampled, e.g. 5s").argParser(durationFlag(100, 3_600_000)).default(AGENT_DEFAULTS.usageIntervalMs, formatDurationMs(AGENT_DEFAULTS.usageIntervalMs)))
    .addOption(new Option('--gpu-sharing <n>', 'how many tasks may hold one GPU at once (each device is offered n times)').argParser(integerFlag(1, MAX_GPU_SHARING)).default(AGENT_DEFAULTS.gpuSharing))
    .option('--no-docker', 'run no container tasks (they fail at launch)')
    .addOption(new Option('--docker-socket <path>', "the Docker daemon's socket").default(AGENT_DEFAULTS.dockerSocket))
    .option('--docker-runtime <name>', "the OCI runtime containers start with, one the Docker daemon has registered (e.g. crun); default: the daemon's")
    .option('--docker-config <file>', "a Docker config.json whose \"auths\" pull images from private registries (as `docker login` writes it; Mesos' --docker_config); a task's own pull secret goes first")
    .addOption(new Option('--host-path-allow <dirs>', "host directories containers may mount, comma-separated or repeated (default: none; never /, the Docker socket or the agent's own directories)").argParser(listFlag))
    .addOption(new Option('--container-cap-add <caps>', `capabilities every container gets back after all are dropped, comma-separated or repeated (default: none; from ${ADDABLE_CAPABILITIES.join(', ')})`).argParser(listFlag))
    .addOption(new Option('--sandbox-gc-age <duration>', "how long a finished task's sandbox is kept, e.g. 7d, 12h, 30m").argParser(durationFlag()).default(AGENT_DEFAULTS.sandboxGcAgeMs, formatDurationMs(AGENT_DEFAULTS.sandboxGcAgeMs)))
    .option('--job-dirs <path>', "where training jobs' shared directories (CAIRN_JOB_DIR) are made; a shared filesystem mount shares them across hosts (default: <work-dir>/job-dirs)")
    .addOption(new Option('--sandbox-gc-disk-percent <percent>', 'above this much of the work dir\'s disk in use, finished sandboxes go sooner, oldest first').argParser(integerFlag(1, 100)).default(AGENT_DEFAULTS.sandboxGcDiskPercent))
    .addOption(new Option('--default-task-user <name>', "the user tasks with no principal run as when their framework names none (a root agent only)").argParser(userFlag).default(AGENT_DEFAULTS.defaultTaskUser))
    .addOption(new Option('--task-uid-range <first-last>', "the uids a root agent gives principals, one each, for tasks whose framework names no user, so different principals' tasks never share a uid; none: they run as the default task user").default(AGENT_DEFAULTS.taskUidRange))
    .addOption(new Option('--task-user-map <entries>', "PRINCIPAL=USER, comma-separated or repeated: that principal's tasks run as that user instead of a uid from the range (one user per principal)").argParser(listFlag))
    .option('--allow-root-tasks', 'let tasks run as root (uid 0); without it a task whose user is root fails', AGENT_DEFAULTS.allowRootTasks)
    .addOption(new Option('--task-pids-max <n>', "processes and threads one task may have at once (its cgroup's pids limit; 0: no limit)").argParser(integerFlag(0, MAX_TASK_PIDS)).default(AGENT_DEFAULTS.taskPidsMax))
    .option('--no-enforce-disk', "do not kill tasks whose sandbox grows past their disk (disk use is still measured and reported)")
    .addOption(new Option('--disk-watch-interval <duration>', "how often tasks' sandboxes are measured against their disk, e.g. 5s (a task can go past its disk by its write rate times this)").argParser(durationFlag(100, 3_600_000)).default(AGENT_DEFAULTS.diskWatchIntervalMs, formatDurationMs(AGENT_DEFAULTS.diskWatchIntervalMs)))
    .addOption(new Option('--default-task-disk <MB>', 'the disk limit of a task that asks for no disk (0: such tasks are measured, not limited)').argParser(integerFlag(0, MAX_TASK_DISK_MB)).default(AGENT_DEFAULTS.defaultTaskDiskMb))
    .option('--open-metrics', "answer GET /metrics without the agent's credential (for a Prometheus that holds none), as the master's --open metrics")
    .option('--no-task-dns', "give tasks the host's resolver instead of the task resolver (cluster names then resolve in tasks only where the host's resolver knows the zone)")
    .addOption(new Option('--task-dns-address <ip>', 'the IPv4 address the task resolver answers on, port 53 (default: one of 169.254.53.0/24 on the loopback interface)').argParser(ipv4Flag))
    .addOption(new Option('--dns-resolvers <list>', "comma-separated resolvers the task resolver forwards names outside the zone to, IP[:PORT] (default: /etc/resolv.conf's)").argParser(resolversFlag))
    .option('--secret-file <path>', 'file holding the cluster secret (at least 16 bytes); with it, the agent runs a gossip member');
  addLogOptions(addTlsOptions(addGossipOptions(agent, DEFAULT_AGENT_GOSSIP_PORT)))
    .action(async (o: AgentFlagValues & GossipFlagValues & TlsFlagValues & LogFlagValues, cmd: Command) => {
      const gossip = gossipFlags(o, cmd);
      // With members to join through and no master named anywhere, gossip says where the leader is.
      const gossipOnly = gossip !== undefined && gossip.join.length > 0 && o.master === undefined && !io.env.CAIRN_MASTER;
      // The flags are the agent's options by name, but for the two whose flag says it shorter.
      const { master, port, sandboxGcAge, usageInterval, diskWatchInterval, defaultTaskDisk, secretFile, credential, gossipPort, gossipAddr, join, gossipInterval, gossipEncrypt, tlsCert, tlsKey, tlsCa, tlsClientAuth, logFormat, logLevel, ...agentOptions } = o;
      result.exitCode = await h.agent(
        {
          ...agentOptions,
          masterUrl: gossipOnly ? '' : masterUrlOf(master, io, cmd),
          workDir: resolve(o.workDir),
          httpPort: port,
          sandboxGcAgeMs: sandboxGcAge,
          usageIntervalMs: usageInterval,
          diskWatchIntervalMs: diskWatchInterval,
          defaultTaskDiskMb: defaultTaskDisk,
          ...(credential !== undefined ? { credentialFile: resolve(credential) } : {}),
          ...(gossip ? { gossip } : {}),
          ...tlsFlags(o),
          ...logFlags({ logFormat, logLevel }),
        },
        io,
      );
    });

  // Maintenance of one host, through the master (Mesos' DRAIN_AGENT, Nomad's node drain).
  for (const undrain of [false, true]) {
    const c = agent
      .command(undrain ? 'undrain' : 'drain')
      .description(undrain ? 'end a drain: the agent is offered again' : 'drain an agent: no new offers of it; its tasks finish, or are killed at the deadline')
      .argument('<host>', 'agent id, host name or address (as `cairn agents` lists them)')
      .addOption(masterOption());
    if (!undrain) c.addOption(new Option('--deadline <duration>', 'kill tasks still running after this long, e.g. 90s, 10m, 1h (default: let them finish)').argParser(durationFlag(1, MAX_DRAIN_DEADLINE_MS)));
    c.action(async (host: string, o: { master?: string; deadline?: number }, cmd: Command) => {
      // `cairn agent --master URL drain HOST` leaves --master with the parent command.
      const flag = o.master ?? (cmd.parent?.opts() as { master?: string } | undefined)?.master;
      result.exitCode = await h.drain({ masterUrl: masterUrlOf(flag, io, cmd), host, undrain, ...(o.deadline !== undefined ? { deadlineMs: o.deadline } : {}) }, io);
    });
  }
}

/** Adds `masters` (list, add, replace, remove) to the program. */
export function addMastersCommands(program: Command, ctx: FamilyContext & { handlers: DaemonHandlers }): void {
  const { io, result, handlers: h } = ctx;
  // The replicated masters' membership: list it, or change it one master at a time.
  const masters = program
    .command('masters')
    .description('list the replicated masters (GET /api/v1/masters; * marks the leader), or change the group');
  const oneMember = (value: string): [number, string] => {
    const m = peersFlag(value);
    if (m.size !== 1) throw new InvalidArgumentError('must name one master, ID=URL.');
    return [...m][0];
  };
  masters
    .command('list', { isDefault: true })
    .description("list the members: id, URL, voter or learner, and each one's role, term and applied index")
    .addOption(masterOption())
    .addOption(outputOption())
    .action(async (o: { master?: string; output?: OutputFormat }, cmd: Command) => {
      result.exitCode = await h.masters({ action: 'list', masterUrl: masterUrlOf(o.master, io, cmd), ...(o.output ? { output: o.output } : {}) }, io);
    });
  masters
    .command('add')
    .description('add a master (started with --new-member): a learner until it has caught up, then a voter')
    .argument('<ID=URL>', "the new master's id and base URL, e.g. 4=http://m4:5050", oneMember)
    .addOption(masterOption())
    .action(async (member: [number, string], o: { master?: string }, cmd: Command) => {
      result.exitCode = await h.masters({ action: 'add', id: member[0], url: member[1], masterUrl: masterUrlOf(o.master, io, cmd) }, io);
    });
  masters
    .command('replace')
    .description('replace voter OLD by a new master: add it, let it catch up, promote it, then remove OLD')
    .argument('<OLD>', 'the id of the master to replace', integerFlag(1, Number.MAX_SAFE_INTEGER))
    .argument('<ID=URL>', "the new master's id and base URL", oneMember)
    .addOption(masterOption())
    .action(async (old: number, member: [number, string], o: { master?: string }, cmd: Command) => {
      result.exitCode = await h.masters({ action: 'add', id: member[0], url: member[1], replaces: old, masterUrl: masterUrlOf(o.master, io, cmd) }, io);
    });
  masters
    .command('remove')
    .description('remove a master from the group (refused when the voters left could not form a quorum)')
    .argument('<ID>', 'its id', integerFlag(1, Number.MAX_SAFE_INTEGER))
    .addOption(masterOption())
    .action(async (id: number, o: { master?: string }, cmd: Command) => {
      result.exitCode = await h.masters({ action: 'remove', id, masterUrl: masterUrlOf(o.master, io, cmd) }, io);
    });
}
