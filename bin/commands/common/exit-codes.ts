// The exit codes of every cairn command, in one place so a script can rely on them and
// `cairn help exit-codes` (and the README) list them. Where a convention exists, it is kept:
// 124 for a time-out is GNU timeout's, 128+N a shell's for a signal, 64-78 sysexits.h's.

/** The command did what it was asked. */
export const EXIT_OK = 0;
/** It failed: the API refused the request, a job or task failed, no master answered. */
export const EXIT_FAILED = 1;
/** The command line could not be understood (a bad flag, a missing argument). */
export const EXIT_USAGE = 2;
/** job submit --allow-unschedulable: accepted, but no agent can hold a replica, so it waits for one. */
export const EXIT_ACCEPTED_UNSCHEDULABLE = 3;
/** The master refused the credential, or none was given where one is needed (HTTP 401; sysexits' EX_NOUSER: no such principal). */
export const EXIT_CREDENTIALS_REFUSED = 67;
/** The credential was accepted, but its principal may not do this (HTTP 403; sysexits' EX_NOPERM). */
export const EXIT_NOT_PERMITTED = 77;
/** A --timeout ran out before what was awaited happened (as GNU timeout exits). */
export const EXIT_TIMED_OUT = 124;
/** Ctrl-C ended the wait (128 + SIGINT), where the command waits on something that goes on. */
export const EXIT_INTERRUPTED = 130;

/** The exit code for an error a command ends with: 67 or 77 for a refused credential or permission, 1 otherwise. */
export function exitCodeOf(err: unknown): number {
  const status = (err as { status?: unknown } | null)?.status;
  if (status === 401) return EXIT_CREDENTIALS_REFUSED;
  if (status === 403) return EXIT_NOT_PERMITTED;
  return EXIT_FAILED;
}

/** `cairn help exit-codes`. */
export const EXIT_CODES_HELP = `Exit codes of cairn commands:
  0    success (cairn run, attach, job wait: every task or the job succeeded)
  1    failure: the master refused the request, a job failed, no master answered
  2    the command line could not be understood (a bad flag or argument)
  3    job submit --allow-unschedulable: submitted, but no agent can hold a replica yet
  67   the master refused the credential, or a needed one was missing (HTTP 401):
       check --token, $CAIRN_TOKEN or ~/.config/cairn/credentials
  77   the credential was accepted but may not do this (HTTP 403): see the ACLs
  124  a --timeout ran out (cairn run, job wait, and every other --timeout)
  128+N  cairn run/attach: the task was killed by signal N (143: SIGTERM, 137: SIGKILL)
  130  Ctrl-C ended cairn run or attach (the tasks go on where they were detached);
       a watched list (-w) or cairn top ends with 0
Otherwise cairn run and attach exit with the first unsuccessful task's own code.
`;
