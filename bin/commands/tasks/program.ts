// The tasks' family: `cairn run` and `cairn attach`, the listings (`agents`, `tasks`,
// `task`, `state`, `top`, `members`) and what is done to one task (`logs`, `kill`) or one
// framework (`teardown`). Flags, help and validation only; the handlers load when their
// command runs.

import { Command, Option } from 'commander';
import { masterOption } from '../common/client-side.ts';
import { masterUrlOf, type FamilyContext } from '../common/context.ts';
import { durationFlag, envFlag, imageFlag, integerFlag, nameFlag, numberFlag, roleFlag, userFlag } from '../common/flags.ts';
import type { CliIo } from '../common/io.ts';
import { memFlag, OBJECT_OUTPUT_HELP, outputOption, stateFlag } from '../common/list-flags.ts';
import { DEFAULT_MASTER_URL, type ListOptions, type MasterClientCommandOptions } from '../common/options.ts';
import { OBJECT_FORMATS, type OutputFormat } from '../common/output.ts';
import { isReplicaRef, replicaLogs } from '../jobs/program.ts';
import { DEFAULT_TASK_LIMIT, type AttachOptions, type KillOptions, type LogsOptions, type RunOptions, type TaskOptions, type TasksOptions, type TeardownOptions, type TopOptions } from './options.ts';
import { DETACH_FAILOVER_TIMEOUT_S, EXIT_TIMED_OUT } from './run-tasks.ts';
import { fileFlag, readRunFiles, type FileFlag } from './run-files.ts';

/** Each handler runs one command and resolves with the process exit code. */
export interface TaskHandlers {
  run(options: RunOptions, io: CliIo): Promise<number>;
  attach(options: AttachOptions, io: CliIo): Promise<number>;
  agents(options: ListOptions & { agent?: string }, io: CliIo): Promise<number>;
  tasks(options: TasksOptions, io: CliIo): Promise<number>;
  task(options: TaskOptions, io: CliIo): Promise<number>;
  state(options: MasterClientCommandOptions, io: CliIo): Promise<number>;
  logs(options: LogsOptions, io: CliIo): Promise<number>;
  kill(options: KillOptions, io: CliIo): Promise<number>;
  teardown(options: TeardownOptions, io: CliIo): Promise<number>;
  top(options: TopOptions, io: CliIo): Promise<number>;
  members(options: ListOptions, io: CliIo): Promise<number>;
}

export const taskHandlers: TaskHandlers = {
  run: async (o, io) => (await import('./run.ts')).runRun(o, io),
  attach: async (o, io) => (await import('./attach.ts')).runAttach(o, io),
  agents: async (o, io) => (await import('./inspect.ts')).runAgents(o, io),
  tasks: async (o, io) => (await import('./inspect.ts')).runTasks(o, io),
  task: async (o, io) => (await import('./inspect.ts')).runTask(o, io),
  state: async (o, io) => (await import('./inspect.ts')).runState(o, io),
  logs: async (o, io) => (await import('./inspect.ts')).runLogs(o, io),
  kill: async (o, io) => (await import('./inspect.ts')).runKill(o, io),
  teardown: async (o, io) => (await import('./inspect.ts')).runTeardown(o, io),
  top: async (o, io) => (await import('./top.ts')).runTop(o, io),
  members: async (o, io) => (await import('./inspect.ts')).runMembers(o, io),
};

/** Adds the task commands to the program. */
export function addTaskCommands(program: Command, ctx: FamilyContext & { handlers: TaskHandlers }): void {
  const { io, result, handlers: h } = ctx;
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
    .addOption(new Option('--file <local[:name]>', "ship a local file (64 KiB in all) into each task's sandbox as NAME (default: its base name), executable if it is here; the command runs in the sandbox (repeatable)").argParser(fileFlag))
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
  cairn run --file train.sh -- ./train.sh --epochs 2
  cairn attach $(cairn run --detach --instances 2 --file long-job.sh -- ./long-job.sh)`,
    )
    .action(async (command: string[], o: { master?: string; name: string; instances: number; cpus: number; mem: number; gpus: number; ports: number; role: string; user?: string; env?: [string, string][]; image?: string; file?: FileFlag[]; timeout?: number; detach?: boolean }, cmd: Command) => {
      let files;
      try {
        files = o.file ? readRunFiles(o.file) : undefined;
      } catch (err) {
        io.stderr.write(`cairn run: ${(err as Error).message}\n`);
        result.exitCode = 2;
        return;
      }
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
          ...(files !== undefined ? { files } : {}),
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
    .description('list the agents; STATUS is reachable, draining or unreachable; with an id or host name, describe that one')
    .argument('[agent]', 'an agent id or host name: that agent, described (as cairn describe agent ID)')
    .addOption(masterOption())
    .addOption(outputOption())
    .action(async (agent: string | undefined, o: { master?: string; output?: OutputFormat }, cmd: Command) => {
      if (agent !== undefined && o.output === 'wide') cmd.error('error: -o wide is for the list; an agent described takes -o json or yaml', { exitCode: 2, code: 'cairn.badFlag' });
      result.exitCode = await h.agents({ masterUrl: masterUrlOf(o.master, io, cmd), ...(o.output ? { output: o.output } : {}), ...(agent !== undefined ? { agent } : {}) }, io);
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

  program
    .command('logs')
    .description("print a task's stdout (or stderr)")
    .argument('<task>', 'task id, or JOB/GROUP-INDEX for a job\'s replica (its latest task)')
    .addOption(masterOption())
    .option('--stderr', 'print stderr instead of stdout', false)
    .option('-f, --follow', 'keep printing until the task has ended and everything is read', false)
    .addOption(new Option('--tail <lines>', 'only the last this many lines of what is there (with -f, then what comes), as kubectl logs --tail').argParser(integerFlag(0, 100_000_000)))
    .option('--timestamps', "prefix each line with when it was written (RFC 3339, UTC), as the task's agent saw it: within a second", false)
    .addOption(new Option('--since <duration>', 'only the lines written in the last DURATION, e.g. 10m, 1h (as --timestamps times them)').argParser(durationFlag()))
    .action(async (taskId: string, o: { master?: string; stderr: boolean; follow: boolean; tail?: number; timestamps: boolean; since?: number }, cmd: Command) => {
      if (isReplicaRef(taskId)) {
        if (o.tail !== undefined || o.timestamps || o.since !== undefined) cmd.error('error: --tail, --timestamps and --since take a task id; for a replica, give its task id (cairn job show JOB lists them)', { exitCode: 2, code: 'cairn.badFlag' });
        return void (result.exitCode = await replicaLogs(program, io, masterUrlOf(o.master, io, cmd), taskId, o));
      }
      result.exitCode = await h.logs({ masterUrl: masterUrlOf(o.master, io, cmd), taskId, stream: o.stderr ? 'stderr' : 'stdout', follow: o.follow, ...(o.tail !== undefined ? { tail: o.tail } : {}), ...(o.timestamps ? { timestamps: true } : {}), ...(o.since !== undefined ? { sinceMs: o.since } : {}) }, io);
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
}
