// The `cairn` command: parses the command line and runs one command (see commands/).

import { versionAnswer } from './commands/cli/version.ts';

const argv = process.argv.slice(2);
// Asking for the version loads neither the parser nor the commands (commander, the daemons).
const version = versionAnswer(argv);
if (version !== undefined) {
  await new Promise<void>((resolve) => process.stdout.write(version, () => resolve()));
  process.exit(0);
}
const { runCli } = await import('./commands/program.ts');
const { processIo } = await import('./commands/common/io.ts');
const code = await runCli(argv, processIo());
// Daemons and clients close what they opened; exiting here only makes sure a forgotten
// keep-alive socket cannot hold the shell, once what we wrote has reached the terminal.
await new Promise<void>((resolve) => process.stdout.write('', () => resolve()));
process.exit(code);
