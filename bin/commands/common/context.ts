// What each family of commands is handed when it adds its commands to the program
// (program.ts composes the families): the process's I/O, where an action leaves its exit
// code, and the master URL every client command resolves the same way.

import type { Command } from 'commander';
import { checkMasterUrl } from './flags.ts';
import type { CliIo } from './io.ts';
import { DEFAULT_MASTER_URL } from './options.ts';

/** Exit code of a command line that could not be understood. */
export const USAGE_EXIT_CODE = 2;

export interface FamilyContext {
  io: CliIo;
  /** Each command's action stores its handler's exit code here. */
  result: { exitCode: number };
  /** The master URL from --master, CAIRN_MASTER or the default (a bad one is a usage error). */
  masterUrl(flag: string | undefined, cmd: Command): string;
}

/** The master URL from --master, else CAIRN_MASTER, else the default; a bad one is a usage error. */
export function masterUrlOf(flag: string | undefined, io: CliIo, cmd: Command): string {
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
