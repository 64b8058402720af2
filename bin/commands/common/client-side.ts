// What every command that talks to a master shares: the program-level TLS files and token
// as the handler gets them, and the `--master <url>` option.

import { Option, type Command } from 'commander';
import type { TlsFiles } from '../../../shared/tls.ts';
import { clientTlsFiles, type ClientTlsFlagValues } from './client-tls.ts';
import type { CliIo } from './io.ts';
import { DEFAULT_MASTER_URL } from './options.ts';

/** The command line's TLS files and token, as every client command gets them. */
export function clientSide(program: Command, io: CliIo): { tls?: TlsFiles; io: CliIo } {
  const flags = program.opts<ClientTlsFlagValues & { token?: string }>();
  const tls = clientTlsFiles(flags, io.env);
  const withToken = flags.token !== undefined ? { ...io, env: { ...io.env, CAIRN_TOKEN: flags.token } } : io;
  return { ...(tls ? { tls } : {}), io: withToken };
}

/** `--master <url>` of every command that talks to a master. */
export function masterOption(): Option {
  return new Option('--master <url>', `master URL (default: $CAIRN_MASTER or ${DEFAULT_MASTER_URL})`);
}

/**
 * The handlers, those named given the command line's TLS files in their options and its
 * --token (which wins over CAIRN_TOKEN and the credentials file: every client reads
 * CAIRN_TOKEN first), as the program's flags stand when the command runs.
 */
export function withClientSide<H extends object>(program: Command, handlers: H, names: readonly (keyof H)[]): H {
  const out: H = { ...handlers };
  for (const name of names) {
    const handler = handlers[name] as unknown as (o: { tls?: TlsFiles }, io: CliIo) => Promise<number>;
    const wrapped = (o: { tls?: TlsFiles }, io: CliIo): Promise<number> => {
      const side = clientSide(program, io);
      return handler(side.tls ? { ...o, tls: side.tls } : o, side.io);
    };
    (out as Record<keyof H, unknown>)[name] = wrapped;
  }
  return out;
}
