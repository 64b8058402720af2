// The `cairn` command line: flags, help and validation, and nothing else. Each command
// hands its validated options to a handler; the real handlers are loaded only when their
// command runs, so `cairn tasks` never loads the master's code and tests can parse
// command lines with stub handlers.

import { resolve } from 'node:path';
import { Argument, Command, CommanderError, InvalidArgumentError, Option } from 'commander';
import { formatDurationMs } from '../../shared/duration.ts';
import { ADDABLE_CAPABILITIES, AGENT_DEFAULTS, MAX_GPU_SHARING, MAX_TASK_DISK_MB, MAX_TASK_PIDS, RECOVER_MODES } from '../../shared/agent-defaults.ts';
import { CAIRN_VERSION } from '../../shared/version.ts';
import { versionReport } from './version.ts';
import { MAX_DRAIN_DEADLINE_MS } from '../../shared/drain-request.ts';
import type { TlsFiles } from '../../shared/tls.ts';
import { clientTlsFiles, type ClientTlsFlagValues } from './client-tls.ts';
import { masterOption } from './client-side.ts';
import type { CliIo } from './io.ts';
import { addLogOptions, logFlags, type LogFlagValues } from './log-flags.ts';
import { OPENABLE, type Openable } from '../../shared/openable.ts';
import { DEFAULT_CLASS_NAMES, parseClassList, PriorityClasses } from '../../shared/sharing/priority-classes.ts';
import {
  DEFAULT_AGENT_GOSSIP_PORT,
  DEFAULT_MASTER_GOSSIP_PORT,
  DEFAULT_MASTER_URL,
  type AgentFlagOptions,
  type AgentOptions,
  type AttachOptions,
  type DrainOptions,
  type GossipFlags,
  type DnsFlags,
  type KillOptions,
  type TeardownOptions,
  type LogsOptions,
  type MasterClientCommandOptions,
  type MasterOptions,
  type MastersOptions,
  type RunOptions,
  type TopOptions,
  type UpOptions,
} from './options.ts';
import { imageFlag } from './flags.ts';
import { DETACH_FAILOVER_TIMEOUT_S, EXIT_TIMED_OUT } from './run-tasks.ts';
import type { CompletionOptions, ListOptions, OutputOption, TaskOptions, TasksOptions } from './list-options.ts';
import { DEFAULT_TASK_LIMIT } from './list-options.ts';
import { memFlag, OBJECT_OUTPUT_HELP, OUTPUT_HELP, stateFlag } from './list-flags.ts';
import { OBJECT_FORMATS, OUTPUT_FORMATS, type OutputFormat } from './output.ts';
import { addExamples } from './examples.ts';
import { addJobCommands, isReplicaRef, replicaLogs } from './job-program.ts';
import { addAppCommands } from './app-program.ts';
import { addTuneCommands } from './tune-program.ts';
import { addSharingCommands } from './sharing-program.ts';
import { addSecretCommands } from './secret-program.ts';
import { addUiCommands } from './ui-program.ts';
import { attributesFlag, bytesFlag, checkMasterUrl, domainFlag, durationFlag, envFlag, gossipAddrFlag, integerFlag, ipv4Flag, joinFlag, listFlag, mastersFlag, nameFlag, numberFlag, peersFlag, resolversFlag, resourcesFlag, roleFlag, userFlag } from './flags.ts';
import { DEFAULT_OBJECT_LIMITS, type ObjectLimits } from '../../shared/sharing/object-limits.ts';

/** Each handler runs one command and resolves with the process exit code. */
export interface CommandHandlers {
  up(options: UpOptions, io: CliIo): Promise<number>;
  master(options: MasterOptions, io: CliIo): Promise<number>;
  agent(options: AgentOptions, io: CliIo): Promise<number>;
  run(options: RunOptions, io: CliIo): Promise<number>;
  attach(options: AttachOptions, io: CliIo): Promise<number>;
  agents(options: ListOptions, io: CliIo): Promise<number>;
  tasks(options: TasksOptions, io: CliIo): Promise<number>;
  task(options: TaskOptions, io: CliIo): Promise<number>;
  completion(options: CompletionOptions, io: CliIo): Promise<number>;
  state(options: MasterClientCommandOptions, io: CliIo): Promise<number>;
  logs(options: LogsOptions, io: CliIo): Promise<number>;
  kill(options: KillOptions, io: CliIo): Promise<number>;
  teardown(options: TeardownOptions, io: CliIo): Promise<number>;
  top(options: TopOptions, io: CliIo): Promise<number>;
  members(options: ListOptions, io: CliIo): Promise<number>;
  masters(options: MastersOptions & OutputOption, io: CliIo): Promise<number>;
  drain(options: DrainOptions, io: CliIo): Promise<number>;
}

const realHandlers: CommandHandlers = {
  up: async (o, io) => (await import('./daemons.ts')).runUp(o, io),
  master: async (o, io) => (await import('./daemons.ts')).runMaster(o, io),
  agent: async (o, io) => (await import('./daemons.ts')).runAgent(o, io),
  run: async (o, io) => (await import('./run.ts')).runRun(o, io),
  attach: async (o, io) => (await import('./attach.ts')).runAttach(o, io),
  agents: async (o, io) => (await import('./inspect.ts')).runAgents(o, io),
  tasks: async (o, io) => (await import('./inspect.ts')).runTasks(o, io),
  task: async (o, io) => (await import('./inspect.ts')).runTask(o, io),
  completion: async (o, io) => (await import('./completion.ts')).runCompletion(o, io),
  state: async (o, io) => (await import('./inspect.ts')).runState(o, io),
  logs: async (o, io) => (await import('./inspect.ts')).runLogs(o, io),
  kill: async (o, io) => (await import('./inspect.ts')).runKill(o, io),
  teardown: async (o, io) => (await import('./inspect.ts')).runTeardown(o, io),
  top: async (o, io) => (await import('./top.ts')).runTop(o, io),
  members: async (o, io) => (await import('./inspect.ts')).runMembers(o, io),
  masters: async (o, io) => (await import('./masters.ts')).runMasters(o, io),
  drain: async (o, io) => (await import('./drain.ts')).runDrain(o, io),
};

/** Exit code of a command line that could not be understood. */
export const USAGE_EXIT_CODE = 2;

const PORT = integerFlag(0, 65535);

/** `-o json|yaml|wide` of the listing commands. */
function outputOption(): Option {
  return new Option('-o, --output <format>', OUTPUT_HELP).choices(OUTPUT_FORMATS);
}

/** The master's object quotas and task environment cap, those given. */
function objectLimitFlags(o: { maxObjectsPerPrincipal?: number; maxObjectBytesPerPrincipal?: number; maxTaskEnv?: number }): { objectLimits?: Partial<ObjectLimits> } {
  const limits: Partial<ObjectLimits> = {
    ...(o.maxObjectsPerPrincipal !== undefined ? { maxObjectsPerPrincipal: o.maxObjectsPerPrincipal } : {}),
    ...(o.maxObjectBytesPerPrincipal !== undefined ? { maxObjectBytesPerPrincipal: o.maxObjectBytesPerPrincipal } : {}),
    ...(o.maxTaskEnv !== undefined ? { maxTaskEnvBytes: o.maxTaskEnv } : {}),
  };
  return Object.keys(limits).length > 0 ? { objectLimits: limits } : {};
}

/** `--priority-classes a,b,c`: names checked here, the default with --default-priority-class. */
function classListFlag(value: string): string[] {
  const names = parseClassList(value);
  try {
    new PriorityClasses(names);
  } catch (err) {
    throw new InvalidArgumentError((err as Error).message);
  }
  return names;
}

/** `--open metrics,dns-api,scheduler`: what is answered without a credential. */
function openFlag(value: string): Openable[] {
  const items = value.split(',').map((v) => v.trim()).filter((v) => v !== '');
  for (const v of items) {
    if (!(OPENABLE as readonly string[]).includes(v)) throw new InvalidArgumentError(`'${v}' cannot be opened (known: ${OPENABLE.join(', ')})`);
  }
  return items as Openable[];
}

/** The `--open` of `cairn master` and `cairn up`. */
function openOption(): Option {
  return new Option('--open <list>', "what is answered without a credential, comma-separated: metrics, dns-api, scheduler (the Mesos scheduler API; its callers without a credential act as the principal 'anonymous', which --acls governs)").argParser(openFlag);
}

/** The master URL from --master, else CAIRN_MASTER, else the default; a bad one is a usage error. */
function masterUrlOf(flag: string | undefined, io: CliIo, cmd: Command): string {
  const fromEnv = io.env.CAIRN_MASTER;
  const raw = flag ?? (fromEnv !== undefined && fromEnv !== '' ? fromEnv : DEFAULT_MASTER_URL);
  try {
    // A list of masters (`a,b,c`) is accepted everywhere: an agent keeps them all; a client
    // asks them in turn until one answers (a follower redirects it to the leader).
    return raw.split(',').map((u) => checkMasterUrl(u.trim())).join(',');
  } catch (err) {
    const source = flag !== undefined ? "option '--master <url>'" : 'environment variable CAIRN_MASTER';
    return cmd.error(`error: ${source}: ${(err as Error).message}`, { exitCode: USAGE_EXIT_CODE, code: 'cairn.badFlag' });
  }
}

/** The DNS flags, shared by `up` and `master`. */
function addDnsOptions(cmd: Command): Command {
  return cmd
    .addOption(new Option('--dns-port <port>', 'DNS port, UDP and TCP (default: 53 as root, else 8053; 0: any free port)').argParser(PORT))
    .addOption(new Option('--dns-domain <domain>', 'the DNS zone tasks are named in, e.g. mesos for the names mesos-dns gives (default: cairn)').argParser(domainFlag))
    .addOption(new Option('--domain <domain>', 'the same as --dns-domain (its earlier name)').argParser(domainFlag).conflicts('dnsDomain'))
    .addOption(new Option('--dns-resolvers <list>', "comma-separated resolvers for names outside the zone, IP[:PORT] (default: /etc/resolv.conf's; '' for none)").argParser(resolversFlag));
}

/** `--dns-domain`, or `--domain` (its earlier name, kept so existing command lines still work). */
type DnsFlagValues = DnsFlags & { dnsDomain?: string };

/** The DNS flags that were given, as options. */
function dnsFlags(o: DnsFlagValues): DnsFlags {
  const domain = o.dnsDomain ?? o.domain;
  return {
    ...(o.dnsPort !== undefined ? { dnsPort: o.dnsPort } : {}),
    ...(domain !== undefined ? { domain } : {}),
    ...(o.dnsResolvers !== undefined ? { dnsResolvers: o.dnsResolvers } : {}),
  };
}

/** The gossip flags, shared by `master` and `agent`. */
function addGossipOptions(cmd: Command, defaultPort: number): Command {
  return cmd
    .addOption(new Option('--gossip-port <port>', `gossip port, UDP and TCP (default: ${defaultPort}; 0: any free port)`).argParser(PORT))
    .addOption(new Option('--gossip-addr <host[:port]>', 'the address other members reach this one at (default: the advertised address)').argParser(gossipAddrFlag))
    .addOption(new Option('--join <host:port>', 'a gossip member (master or agent) to join through; repeatable, one live one is enough').argParser(joinFlag))
    .addOption(new Option('--gossip-interval <duration>', 'gossip probe period, e.g. 200ms; the other gossip periods scale with it (default: 1s)').argParser(durationFlag(10, 60_000)))
    .option('--gossip-encrypt', 'encrypt every gossip packet (AES-256-GCM, a key derived from the cluster secret); every member must have it on, or all off');
}

interface TlsFlagValues {
  tlsCert?: string;
  tlsKey?: string;
  tlsCa?: string;
  tlsClientAuth?: boolean;
}

/** The TLS flags of the daemons (`up`, `master`, `agent`). */
function addTlsOptions(cmd: Command): Command {
  return cmd
    .option('--tls-cert <file>', 'serve HTTPS/WSS with this certificate (PEM; with --tls-key); also presented when dialling masters and agents')
    .option('--tls-key <file>', 'the private key of --tls-cert (PEM)')
    .option('--tls-ca <file>', "the CA (PEM) that masters' and agents' certificates are verified against (default: Node's trusted CAs)")
    .option('--tls-client-auth', 'mutual TLS: refuse clients without a certificate signed by --tls-ca');
}

/** The TLS flags that were given, as options (paths made absolute). */
function tlsFlags(o: TlsFlagValues): { tls?: TlsFiles } {
  const tls: TlsFiles = {
    ...(o.tlsCert !== undefined ? { cert: resolve(o.tlsCert) } : {}),
    ...(o.tlsKey !== undefined ? { key: resolve(o.tlsKey) } : {}),
    ...(o.tlsCa !== undefined ? { ca: resolve(o.tlsCa) } : {}),
    ...(o.tlsClientAuth ? { clientAuth: true } : {}),
  };
  return Object.keys(tls).length > 0 ? { tls } : {};
}

/** The client commands: each gets the command line's TLS files (client-tls.ts) in its options. */
const CLIENT_COMMANDS = ['run', 'attach', 'agents', 'tasks', 'task', 'state', 'logs', 'kill', 'teardown', 'top', 'members', 'masters', 'drain'] as const;

/** What commander parses `cairn agent`'s flags into: the agent's options, `--port` and `--sandbox-gc-age` by their flag's name. */
type AgentFlagValues = Omit<AgentFlagOptions, 'httpPort' | 'sandboxGcAgeMs' | 'usageIntervalMs' | 'diskWatchIntervalMs' | 'defaultTaskDiskMb'> & { master?: string; port: number; sandboxGcAge: number; usageInterval: number; diskWatchInterval: number; defaultTaskDisk: number; credential?: string };

interface GossipFlagValues {
  secretFile?: string;
  gossipPort?: number;
  gossipAddr?: string;
  join?: string[];
  gossipInterval?: number;
  gossipEncrypt?: boolean;
}

/** Gossip runs with a cluster secret only; other gossip flags without one are a usage error. */
function gossipFlags(o: GossipFlagValues, cmd: Command): GossipFlags | undefined {
  if (!o.secretFile) {
    const given = [o.join && '--join', o.gossipPort !== undefined && '--gossip-port', o.gossipAddr && '--gossip-addr', o.gossipInterval !== undefined && '--gossip-interval', o.gossipEncrypt && '--gossip-encrypt'].filter(Boolean);
    if (given.length > 0) {
      return cmd.error(`error: option '--secret-file' is required for gossip (${given.join(', ')}): gossip packets are authenticated with the cluster secret`, { exitCode: USAGE_EXIT_CODE, code: 'cairn.badFlag' });
    }
    return undefined;
  }
  return {
    secretFile: resolve(o.secretFile),
    join: o.join ?? [],
    ...(o.gossipPort !== undefined ? { port: o.gossipPort } : {}),
    ...(o.gossipAddr !== undefined ? { advertise: o.gossipAddr } : {}),
    ...(o.gossipInterval !== undefined ? { probeIntervalMs: o.gossipInterval } : {}),
    ...(o.gossipEncrypt ? { encrypt: true } : {}),
  };
}

/**
 * Builds the program. Nothing runs until it parses; each command stores its handler's exit
 * code in `result.exitCode`.
 */
export function buildProgram(io: CliIo, handlers: Partial<CommandHandlers> = {}): { program: Command; result: { exitCode: number } } {
  const h: CommandHandlers = { ...realHandlers, ...handlers };
  const result = { exitCode: 0 };
  const program = new Command('cairn');
  for (const name of CLIENT_COMMANDS) {
    const handler = h[name] as (o: { tls?: TlsFiles }, io: CliIo) => Promise<number>;
    (h as unknown as Record<string, typeof handler>)[name] = (o, cio) => {
      const flags = program.opts<ClientTlsFlagValues & { token?: string }>();
      const tls = clientTlsFiles(flags, io.env);
      // --token wins over CAIRN_TOKEN and the credentials file: every client reads CAIRN_TOKEN first.
      const withToken = flags.token !== undefined ? { ...cio, env: { ...cio.env, CAIRN_TOKEN: flags.token } } : cio;
      return handler(tls ? { ...o, tls } : o, withToken);
    };
  }
  program
    .description('Cairn: a Mesos-like cluster manager for machine-learning work')
    .version(CAIRN_VERSION, '-V, --version')
    .enablePositionalOptions()
    .showHelpAfterError('(add --help for usage)')
    .configureOutput({
      writeOut: (s) => void io.stdout.write(s),
      writeErr: (s) => void io.stderr.write(s),
    })
    .exitOverride()
    // Before the command: the command line's TLS as a client of masters and agents.
    .option('--tls-ca <file>', "verify masters' certificates against this CA (PEM; default: $CAIRN_TLS_CA, else Node's trusted CAs)")
    .option('--tls-cert <file>', 'present this client certificate (PEM) to masters that require one (default: $CAIRN_TLS_CERT)')
    .option('--tls-key <file>', 'the private key of --tls-cert (default: $CAIRN_TLS_KEY)')
    .option('--token <secret>', "the credential sent to masters (default: $CAIRN_TOKEN, else the one saved for the master in ~/.config/cairn/credentials; the variable keeps it out of the process list)");

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
    .addOption(openOption());
  addLogOptions(addTlsOptions(addDnsOptions(up)))
    .action(async (o: { dataDir: string; port: number; agentPort: number; resources?: string; masters: number; credentials?: string; acls?: string; open?: Openable[]; gossipEncrypt?: boolean; gossipPort?: number } & DnsFlagValues & TlsFlagValues & LogFlagValues, cmd: Command) => {
      // A group's members know each other's URLs before they start: the ports are fixed.
      if (o.masters > 1 && (o.port === 0 || o.port + o.masters - 1 > 65535)) {
        return cmd.error(`error: option '--port <port>' must be the first of ${o.masters} consecutive free ports with --masters ${o.masters} (not 0, and at most ${65536 - o.masters})`, { exitCode: USAGE_EXIT_CODE, code: 'cairn.badFlag' });
      }
      result.exitCode = await h.up({ dataDir: resolve(o.dataDir), port: o.port, agentPort: o.agentPort, masters: o.masters, ...(o.credentials ?? io.env.CAIRN_CREDENTIALS ? { credentials: resolve((o.credentials ?? io.env.CAIRN_CREDENTIALS)!) } : {}), ...(o.acls ?? io.env.CAIRN_ACLS ? { acls: resolve((o.acls ?? io.env.CAIRN_ACLS)!) } : {}), ...(o.open ? { open: o.open } : {}), ...(o.resources !== undefined ? { resources: o.resources } : {}), ...(o.gossipEncrypt ? { gossipEncrypt: true } : {}), ...(o.gossipPort ? { gossipPort: o.gossipPort } : {}), ...dnsFlags(o), ...tlsFlags(o), ...logFlags(o) }, io);
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

  program
    .command('run')
    .description('run a command as tasks on the cluster and stream their output (like mesos-execute)')
    .usage('[options] [--] <command> [args...]')
    .argument('<command...>', 'the command; one argument runs through /bin/sh -c, several run directly')
    .addOption(masterOption())
    .addOption(new Option('--name <name>', 'task name; task ids are <name>-<index>-<random>').argParser(nameFlag).default('cairn-run'))
    .addOption(new Option('--instances <k>', 'how many copies to run').argParser(integerFlag(1, 100_000)).default(1))
    .addOption(new Option('--cpus <cpus>', 'cpus per task').argParser(numberFlag({ positive: true })).default(0.1))
    .addOption(new Option('--mem <mib>', 'memory per task, MiB').argParser(memFlag).default(32))
    .addOption(new Option('--gpus <gpus>', 'GPUs per task').argParser(integerFlag(0, 1024)).default(0))
    .addOption(new Option('--ports <n>', 'ports per task (given as PORT, PORT0..)').argParser(integerFlag(0, 1000)).default(0))
    .addOption(new Option('--role <role>', 'role to run as').argParser(roleFlag).default('*'))
    .addOption(new Option('--user <name>', "the OS user the tasks run as (default: the agent's default task user, or the agent's own user where it is not root)").argParser(userFlag))
    .addOption(new Option('--env <name=value>', 'environment variable for the tasks (repeatable)').argParser(envFlag))
    .addOption(new Option('--image <image>', 'run the command in a Docker container of this image (host networking; pulled if the agent lacks it)').argParser(imageFlag))
    .addOption(new Option('--timeout <duration>', `give up when the tasks are not all launched after this long, e.g. 30s, 5m: what was launched is killed, exit ${EXIT_TIMED_OUT}`).argParser(durationFlag()))
    .option('--detach', `print the task ids (one a line) once they are launched, and return; they run on (for ${DETACH_FAILOVER_TIMEOUT_S / 86_400} days at most) — follow them with cairn attach`)
    .passThroughOptions()
    .addHelpText(
      'after',
      `
Options go before the command; everything from the command on is the command's own.
Each task gets CAIRN_TASK_INDEX (0..K-1), CAIRN_TASK_COUNT (K) and, with --ports,
PORT and PORT0..PORTn. With K > 1 every output line starts with "[index] ".
Exit code: 0 when every task finished; otherwise that of the first task that did not
(128+N for a task killed by signal N; 1 when unknown); 130 after Ctrl-C;
${EXIT_TIMED_OUT} when --timeout ended the wait.
The ids of the tasks launched go to stderr ("launched ID on HOST"), as does why they wait:
"cannot launch ID: no agent has 64 cpus; the largest has 2" (at once), "... the 1 agent
that could fit it is draining", or "waiting: every offer so far had too little mem: ...".
With --detach the tasks' output is not copied: \`cairn attach ID...\` follows it later and
exits as cairn run would. A detached task still running ${DETACH_FAILOVER_TIMEOUT_S / 86_400} days after cairn run returned
is killed (the framework's failover timeout); cairn attach tidies the framework away once
its tasks have ended.

Examples:
  cairn run 'echo hello from $(hostname)'
  cairn run --instances 4 --cpus 1 --mem 2048 -- python train.py --shard-count 4
  cairn run --image python:3.12 --timeout 5m -- python -c 'print(42)'
  cairn attach $(cairn run --detach --instances 2 -- ./long-job.sh)`,
    )
    .action(async (command: string[], o: { master?: string; name: string; instances: number; cpus: number; mem: number; gpus: number; ports: number; role: string; user?: string; env?: [string, string][]; image?: string; timeout?: number; detach?: boolean }, cmd: Command) => {
      result.exitCode = await h.run(
        {
          masterUrl: masterUrlOf(o.master, io, cmd),
          name: o.name,
          instances: o.instances,
          cpus: o.cpus,
          mem: o.mem,
          gpus: o.gpus,
          ports: o.ports,
          role: o.role,
          ...(o.user !== undefined ? { user: o.user } : {}),
          env: o.env ?? [],
          command,
          ...(o.image !== undefined ? { image: o.image } : {}),
          ...(o.timeout !== undefined ? { timeoutMs: o.timeout } : {}),
          ...(o.detach ? { detach: true } : {}),
        },
        io,
      );
    });

  program
    .command('attach')
    .description('follow tasks launched by cairn run --detach: copy their output until they end, and exit as cairn run would')
    .argument('<task...>', 'task ids, as cairn run --detach printed them')
    .addOption(masterOption())
    .addHelpText(
      'after',
      `
With several tasks every output line starts with "[index] " (their place in the list).
Exit code: 0 when every task finished; otherwise that of the first that did not (128+N
for a task killed by signal N; 1 when unknown or a log could not be read); 130 after
Ctrl-C, which stops following and leaves the tasks running.

Examples:
  cairn attach job-0-3f2a1c
  cairn attach $(cairn run --detach --instances 3 -- ./shard.sh)`,
    )
    .action(async (taskIds: string[], o: { master?: string }, cmd: Command) => {
      result.exitCode = await h.attach({ masterUrl: masterUrlOf(o.master, io, cmd), taskIds }, io);
    });

  program
    .command('agents')
    .description('list the agents; STATUS is reachable, draining or unreachable')
    .addOption(masterOption())
    .addOption(outputOption())
    .action(async (o: { master?: string; output?: OutputFormat }, cmd: Command) => {
      result.exitCode = await h.agents({ masterUrl: masterUrlOf(o.master, io, cmd), ...(o.output ? { output: o.output } : {}) }, io);
    });

  program
    .command('tasks')
    .description('list the tasks, newest first; EXIT is the code a shell would show (128+N for signal N), with why it ended')
    .addOption(masterOption())
    .addOption(outputOption())
    .addOption(new Option('--state <states>', 'only tasks in these states, comma-separated (e.g. running,failed)').argParser(stateFlag))
    .option('--framework <framework>', 'only tasks of this framework (id or name)')
    .option('--agent <agent>', 'only tasks on this agent (id or host name)')
    .addOption(new Option('--limit <n>', 'show at most this many, newest first (0: all)').argParser(integerFlag(0, 1_000_000)).default(DEFAULT_TASK_LIMIT))
    .action(async (o: { master?: string; output?: OutputFormat; state?: TasksOptions['states']; framework?: string; agent?: string; limit: number }, cmd: Command) => {
      result.exitCode = await h.tasks({
        masterUrl: masterUrlOf(o.master, io, cmd),
        limit: o.limit,
        ...(o.output ? { output: o.output } : {}),
        ...(o.state ? { states: o.state } : {}),
        ...(o.framework !== undefined ? { framework: o.framework } : {}),
        ...(o.agent !== undefined ? { agent: o.agent } : {}),
      }, io);
    });

  program
    .command('task')
    .description('describe a task: its state history with reasons and messages, agent, resources, exit code, usage, sandbox')
    .argument('<task>', 'task id')
    .addOption(masterOption())
    .addOption(new Option('-o, --output <format>', OBJECT_OUTPUT_HELP).choices(OBJECT_FORMATS))
    .action(async (taskId: string, o: { master?: string; output?: 'json' | 'yaml' }, cmd: Command) => {
      result.exitCode = await h.task({ masterUrl: masterUrlOf(o.master, io, cmd), taskId, ...(o.output ? { output: o.output } : {}) }, io);
    });

  program
    .command('state')
    .description("print the master's state (GET /api/v1/state) as JSON")
    .addOption(masterOption())
    .action(async (o: { master?: string }, cmd: Command) => {
      result.exitCode = await h.state({ masterUrl: masterUrlOf(o.master, io, cmd) }, io);
    });

  program
    .command('top')
    .description('a live table of what running tasks use (CPU, memory, GPUs), refreshed every 2 s')
    .addOption(masterOption())
    .addOption(new Option('--interval <duration>', 'time between refreshes, e.g. 2s, 500ms').argParser(durationFlag(100, 3_600_000)).default(2000, '2s'))
    .option('--once', 'print one table and exit', false)
    .action(async (o: { master?: string; interval: number; once: boolean }, cmd: Command) => {
      const tty = (io.stdout as { isTTY?: boolean }).isTTY === true;
      result.exitCode = await h.top({ masterUrl: masterUrlOf(o.master, io, cmd), intervalMs: o.interval, once: o.once, clear: tty && !o.once }, io);
    });

  program
    .command('members')
    .description("list the gossip members as one master or agent sees them (GET /api/v1/members)")
    .addOption(new Option('--master <url>', `a master's or an agent's URL (default: $CAIRN_MASTER or ${DEFAULT_MASTER_URL})`))
    .addOption(outputOption())
    .action(async (o: { master?: string; output?: OutputFormat }, cmd: Command) => {
      result.exitCode = await h.members({ masterUrl: masterUrlOf(o.master, io, cmd), ...(o.output ? { output: o.output } : {}) }, io);
    });

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

  program
    .command('logs')
    .description("print a task's stdout (or stderr)")
    .argument('<task>', 'task id, or JOB/GROUP-INDEX for a job\'s replica (its latest task)')
    .addOption(masterOption())
    .option('--stderr', 'print stderr instead of stdout', false)
    .option('-f, --follow', 'keep printing until the task has ended and everything is read', false)
    .action(async (taskId: string, o: { master?: string; stderr: boolean; follow: boolean }, cmd: Command) => {
      if (isReplicaRef(taskId)) return void (result.exitCode = await replicaLogs(program, io, masterUrlOf(o.master, io, cmd), taskId, o));
      result.exitCode = await h.logs({ masterUrl: masterUrlOf(o.master, io, cmd), taskId, stream: o.stderr ? 'stderr' : 'stdout', follow: o.follow }, io);
    });

  program
    .command('kill')
    .description('kill a task')
    .argument('<task>', 'task id')
    .addOption(masterOption())
    .action(async (taskId: string, o: { master?: string }, cmd: Command) => {
      result.exitCode = await h.kill({ masterUrl: masterUrlOf(o.master, io, cmd), taskId }, io);
    });

  program
    .command('teardown')
    .description("remove a framework as an operator: its tasks are killed and its id never subscribes again (Mesos' TEARDOWN)")
    .argument('<framework>', 'framework id (as `cairn state` lists them)')
    .addOption(masterOption())
    .action(async (frameworkId: string, o: { master?: string }, cmd: Command) => {
      result.exitCode = await h.teardown({ masterUrl: masterUrlOf(o.master, io, cmd), frameworkId }, io);
    });

  program
    .command('version')
    .description('print the version, the commit it was built from and the Node version')
    .action(() => void io.stdout.write(versionReport()));

  program
    .command('completion')
    .description('print a shell completion script for cairn (its commands and flags)')
    .addArgument(new Argument('<shell>', 'the shell').choices(['bash', 'zsh']))
    .action(async (shell: 'bash' | 'zsh') => {
      result.exitCode = await h.completion({ shell, program }, io);
    });

  addAppCommands(program, io, result);
  addJobCommands(program, { io, result, masterUrl: (flag, cmd) => masterUrlOf(flag, io, cmd) });
  addTuneCommands(program, { io, result, masterUrl: (flag, cmd) => masterUrlOf(flag, io, cmd) });
  addSharingCommands(program, { io, result, masterUrl: (flag, cmd) => masterUrlOf(flag, io, cmd) });
  addSecretCommands(program, { io, result, masterUrl: (flag, cmd) => masterUrlOf(flag, io, cmd) });
  addUiCommands(program, { io, result, masterUrl: (flag, cmd) => masterUrlOf(flag, io, cmd) });
  addExamples(program);
  return { program, result };
}

/** Parses `argv` (without node and script) and runs the command; resolves with the exit code. */
export async function runCli(argv: string[], io: CliIo, handlers: Partial<CommandHandlers> = {}): Promise<number> {
  const { program, result } = buildProgram(io, handlers);
  try {
    await program.parseAsync(argv, { from: 'user' });
    return result.exitCode;
  } catch (err) {
    if (err instanceof CommanderError) {
      return err.code === 'commander.helpDisplayed' || err.code === 'commander.version' ? 0 : USAGE_EXIT_CODE;
    }
    io.stderr.write(`cairn: ${err instanceof Error ? err.message : String(err)}\n`);
    return 1;
  }
}
