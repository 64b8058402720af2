// `cairn ui`: opens the web dashboard logged in, with a one-time link from the master (the
// link's code is traded for the CLI's credential once, within 60 s). Added to the program by
// one call from program.ts; the handler (commands.ts) is loaded only when it runs.

import { Command } from 'commander';
import { clientSide, masterOption } from '../common/client-side.ts';
import { examplesFrom } from '../common/examples.ts';
import type { FamilyContext } from '../common/context.ts';

const UI_EXAMPLES: Record<string, readonly string[]> = {
  ui: ['cairn ui', 'cairn ui --print-url', 'cairn ui --master http://m1:5050 --print-url'],
};

const withExamples = examplesFrom(UI_EXAMPLES);

export function addUiCommands(program: Command, ctx: FamilyContext): void {
  withExamples(program.command('ui'), 'ui')
    .description('open the web dashboard in a browser, logged in with this command line\'s credential by a link that works once, for 60 s')
    .option('--print-url', 'print the link instead of opening a browser (open it on this machine or one that reaches the master)')
    .addOption(masterOption())
    .addHelpText('after', `
The dashboard is served by every master at /ui; without a link it asks for a token.`)
    .action(async (o: { printUrl?: boolean; master?: string }, cmd: Command) => {
      const masterUrl = ctx.masterUrl(o.master, cmd);
      const side = clientSide(program, ctx.io);
      ctx.result.exitCode = await (await import('./commands.ts')).runUi({ masterUrl, printUrl: o.printUrl === true, ...(side.tls ? { tls: side.tls } : {}) }, side.io);
    });
}
