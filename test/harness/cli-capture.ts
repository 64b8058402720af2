// The CLI run in this process with its output captured: what a command prints on stdout and
// stderr, and its exit code, without a child process.

import { runCli } from '../../bin/commands/program.ts';
import type { CliIo } from '../../bin/commands/common/io.ts';

export interface Captured {
  io: CliIo;
  out: () => string;
  err: () => string;
}

export function capture(env: Record<string, string> = {}): Captured {
  let out = '';
  let err = '';
  return {
    io: { stdout: { write: (s: string) => (out += s) }, stderr: { write: (s: string) => (err += s) }, env, onInterrupt: () => () => undefined },
    out: () => out,
    err: () => err,
  };
}

/** Runs `cairn ARGV` in this process. */
export async function cli(argv: string[], env: Record<string, string> = {}): Promise<{ code: number; out: string; err: string }> {
  const c = capture(env);
  const code = await runCli(argv, c.io);
  return { code, out: c.out(), err: c.err() };
}
