// A task's exit code as restart and failure policies read it (the jobs' and the tuning
// trials'): the registry's code, or one read from the agent's message.

/** The exit code the policies see: a signal's end is 128 + its number, as shells report it. */
export function policyExitCode(exitCode: number | undefined, message: string): number | undefined {
  if (exitCode !== undefined) return exitCode < 0 ? 128 - exitCode : exitCode;
  const m = /exited with code (\d+)/.exec(message);
  return m ? Number(m[1]) : undefined;
}
