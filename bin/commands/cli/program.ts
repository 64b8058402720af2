// `cairn version` and `cairn completion`: the command line about itself. The completion
// script is made from the program as built, so it offers every family's commands and flags.

import { Argument, Command } from 'commander';
import type { FamilyContext } from '../common/context.ts';
import type { CliIo } from '../common/io.ts';
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
    .addArgument(new Argument('<shell>', 'the shell').choices(['bash', 'zsh']))
    .action(async (shell: 'bash' | 'zsh') => {
      result.exitCode = await h.completion({ shell, program }, io);
    });
}
