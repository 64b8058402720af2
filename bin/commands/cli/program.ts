// `cairn version` and `cairn completion`: the command line about itself. The completion
// script is made from the program as built, so it offers every family's commands and flags;
// the hidden `cairn __complete` is what the scripts call at Tab time for ids and names.

import { Argument, Command } from 'commander';
import { clientSide, masterOption } from '../common/client-side.ts';
import type { FamilyContext } from '../common/context.ts';
import { withExampleLines } from '../common/examples.ts';
import type { CliIo } from '../common/io.ts';
import { DEFAULT_MASTER_URL } from '../common/options.ts';
import type { CompletionOptions } from './completion.ts';
import { versionReport } from './version.ts';

export interface CliHandlers {
  completion(options: CompletionOptions, io: CliIo): Promise<number>;
}

export const cliHandlers: CliHandlers = {
  completion: async (o, io) => (await import('./completion.ts')).runCompletion(o, io),
};

/** Adds `version` and `completion` to the program. */
export function addCliCommands(program: Command, ctx: FamilyContext & { handlers: CliHandlers }): void {
  const { io, result, handlers: h } = ctx;
  program
    .command('version')
    .description('print the version, the commit it was built from and the Node version')
    .action(() => void io.stdout.write(versionReport()));

  program
    .command('completion')
    .description('print a shell completion script for cairn (its commands and flags)')
    .addArgument(new Argument('<shell>', 'the shell').choices(['bash', 'zsh', 'fish']))
    .action(async (shell: 'bash' | 'zsh' | 'fish') => {
      result.exitCode = await h.completion({ shell, program }, io);
    });

  // What the completion scripts call at Tab time; never fails, never writes to stderr.
  const complete = program
    .command('__complete', { hidden: true })
    .description('print the ids or names of a kind (tasks, agents, jobs, apps, experiments, kinds), or with --line the candidates for the last of WORDS, for the completion scripts')
    .argument('[kind-or-words...]', 'a kind; with --line, the words typed so far, the last one being completed')
    .option('--line', 'complete a command line (fish)')
    .addOption(masterOption())
    .action(async (args: string[], o: { line?: boolean; master?: string }) => {
      const side = clientSide(program, io);
      const { idsOf } = await import('./complete-ids.ts');
      const ids = (kind: string, master: string | undefined) => idsOf({ kind, masterUrl: master ?? o.master ?? (io.env.CAIRN_MASTER || DEFAULT_MASTER_URL), ...(side.tls ? { tls: side.tls } : {}) }, side.io);
      const found = o.line ? await (await import('./completion.ts')).lineCandidates(program, args.length > 0 ? args : [''], ids) : args[0] !== undefined ? await ids(args[0], undefined) : [];
      for (const c of found) io.stdout.write(`${c}\n`);
      result.exitCode = 0;
    });
  withExampleLines(complete, ['cairn __complete tasks', 'cairn __complete --line -- job wait ""']);
}
