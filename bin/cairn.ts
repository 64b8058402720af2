// The `cairn` command: parses the command line and runs one command (see commands/).

import { runCli } from './commands/program.ts';
import { processIo } from './commands/io.ts';

const code = await runCli(process.argv.slice(2), processIo());
// Daemons and clients close what they opened; exiting here only makes sure a forgotten
// keep-alive socket cannot hold the shell, once what we wrote has reached the terminal.
await new Promise<void>((resolve) => process.stdout.write('', () => resolve()));
process.exit(code);
