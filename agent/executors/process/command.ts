// Turns a CommandInfo into what spawn needs, Mesos' way: shell=true runs `value` under
// /bin/sh -c; otherwise `value` is the program and `arguments` the whole argv, argv[0]
// included (an empty list means argv is just [value]).

import type { CommandInfo } from '../../../shared/agent-protocol.ts';

export interface SpawnSpec {
  file: string;
  /** argv after argv[0]. */
  args: string[];
  argv0: string;
}

export function spawnSpecFor(command: CommandInfo): SpawnSpec {
  if (command.shell) return { file: '/bin/sh', args: ['-c', command.value], argv0: 'sh' };
  const argv = command.arguments && command.arguments.length > 0 ? command.arguments : [command.value];
  return { file: command.value, args: argv.slice(1), argv0: argv[0] };
}
