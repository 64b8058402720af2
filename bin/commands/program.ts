// The `cairn` command line: the program-level flags, and each family of commands
// (bin/commands/FAMILY/program.ts) added in turn; no command is defined here. Each command
// hands its validated options to a handler; the real handlers are loaded only when their
// command runs, so `cairn tasks` never loads the master's code and tests can parse command
// lines with stub handlers.

import { Command, CommanderError } from 'commander';
import { CAIRN_VERSION } from '../../shared/version.ts';
import { addAppCommands } from './apps/program.ts';
import { addCliCommands, cliHandlers, type CliHandlers } from './cli/program.ts';
import { addKindCommands } from './cli/kinds.ts';
import { normalizeArgv, WATCHABLE_LISTS } from './common/argv.ts';
import { withClientSide } from './common/client-side.ts';
import { EXIT_CODES_HELP } from './common/exit-codes.ts';
import { masterUrlOf, USAGE_EXIT_CODE, type FamilyContext } from './common/context.ts';
import { addExamples } from './common/examples.ts';
import type { CliIo } from './common/io.ts';
import { addDaemonCommands, addMastersCommands, daemonHandlers, type DaemonHandlers } from './daemons/program.ts';
import { addJobCommands } from './jobs/program.ts';
import { addSecretCommands } from './secrets/program.ts';
import { addSharingCommands } from './sharing/program.ts';
import { addTaskCommands, taskHandlers, type TaskHandlers } from './tasks/program.ts';
import { addTuneCommands } from './tune/program.ts';
import { addUiCommands } from './ui/program.ts';
import { watchList } from './common/watch.ts';

export { USAGE_EXIT_CODE };

/** The handlers tests may stand in for: each runs one command and resolves with the exit code. */
export type CommandHandlers = DaemonHandlers & TaskHandlers & CliHandlers;

const realHandlers: CommandHandlers = { ...daemonHandlers, ...taskHandlers, ...cliHandlers };

/** The client commands among them: each gets the command line's TLS files and token. */
const CLIENT_COMMANDS = ['run', 'attach', 'agents', 'tasks', 'task', 'state', 'logs', 'kill', 'teardown', 'top', 'members', 'masters', 'drain'] as const;

/**
 * Builds the program. Nothing runs until it parses; each command stores its handler's exit
 * code in `result.exitCode`.
 */
export function buildProgram(io: CliIo, handlers: Partial<CommandHandlers> = {}): { program: Command; result: { exitCode: number } } {
  const result = { exitCode: 0 };
  const program = new Command('cairn');
  const h = withClientSide(program, { ...realHandlers, ...handlers }, CLIENT_COMMANDS);
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

  const ctx: FamilyContext = { io, result, masterUrl: (flag, cmd) => masterUrlOf(flag, io, cmd) };
  addDaemonCommands(program, { ...ctx, handlers: h });
  addTaskCommands(program, { ...ctx, handlers: h });
  addMastersCommands(program, { ...ctx, handlers: h });
  addCliCommands(program, { ...ctx, handlers: h });
  addAppCommands(program, ctx);
  addJobCommands(program, ctx);
  addTuneCommands(program, ctx);
  addSharingCommands(program, ctx);
  addSecretCommands(program, ctx);
  addUiCommands(program, ctx);
  addKindCommands(program, ctx);
  addWatchOption(program);
  inHelpOrder(program);
  addExamples(program);
  program.addHelpText('after', '\nExit codes (0 ok, 1 failed, 2 usage, 67 credential refused, 77 not permitted, 124 timed out): cairn help exit-codes');
  return { program, result };
}

/**
 * The order `cairn --help` lists the commands in, and completion offers them in: the daemons,
 * then what runs and inspects tasks, then each family. A command missing here is a mistake
 * that every test building the program reports.
 */
const HELP_ORDER = [
  'up', 'master', 'agent', 'run', 'attach', 'agents', 'tasks', 'task', 'state', 'top', 'members', 'masters',
  'logs', 'kill', 'teardown', 'version', 'completion', 'app', 'job', 'tune', 'roles', 'usage', 'quota',
  'preemptions', 'secret', 'ui', 'get', 'describe', '__complete',
];

/**
 * `-w, --watch` in the help of every list runCli watches: the flag itself never reaches the
 * parser (normalizeArgv takes it off the line), so it is added here for --help alone.
 */
function addWatchOption(program: Command): void {
  for (const path of WATCHABLE_LISTS) {
    let cmd: Command | undefined = program;
    for (const word of path.split(' ')) cmd = (cmd?.commands as Command[] | undefined)?.find((c) => c.name() === word);
    if (cmd === undefined) throw new Error(`watchable list '${path}' is not a command (argv.ts)`);
    // `quota` and `masters` list by default; their default subcommand carries the flag.
    if (cmd.commands.length === 0) cmd.option('-w, --watch', 'print the list again whenever it changes, until Ctrl-C (as kubectl get -w)');
  }
}

function inHelpOrder(program: Command): void {
  const rank = (c: Command): number => {
    const i = HELP_ORDER.indexOf(c.name());
    if (i < 0) throw new Error(`command '${c.name()}' has no place in HELP_ORDER (program.ts)`);
    return i;
  };
  (program.commands as Command[]).sort((a, b) => rank(a) - rank(b));
}

/** Parses `argv` (without node and script) and runs the command; resolves with the exit code. */
export async function runCli(argv: string[], io: CliIo, handlers: Partial<CommandHandlers> = {}): Promise<number> {
  // Global flags anywhere, get/describe, -w: the line as kubectl users type it (common/argv.ts).
  const line = normalizeArgv(argv);
  // A help topic, not a command: commander's `help` knows only commands.
  if (line.argv.length === 2 && line.argv[0] === 'help' && line.argv[1] === 'exit-codes') return void io.stdout.write(EXIT_CODES_HELP), 0;
  if (line.watch) return watchList((snapshotIo) => parseAndRun(line.argv, snapshotIo, handlers), io);
  return parseAndRun(line.argv, io, handlers);
}

async function parseAndRun(argv: string[], io: CliIo, handlers: Partial<CommandHandlers>): Promise<number> {
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
