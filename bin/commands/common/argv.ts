// The command line as kubectl and Nomad users type it, rewritten (pure) into the shape the
// parser takes before it parses:
// - the program's flags (--token, --tls-ca, --tls-cert, --tls-key) anywhere on the line:
//   commander reads them only before the command (positional options keep `cairn run`'s
//   command its own), so those after the command are moved in front of it;
// - `--master URL` and `-o FORMAT` before the command, moved behind it, where they belong;
// - `get KIND [NAME]` and `describe KIND NAME`, turned into the command that lists or
//   describes that kind (../cli/kinds.ts);
// - `-w`/`--watch` on a list, taken off the line and reported, for runCli to poll the list.
// Nothing from a `--` on is touched: it belongs to the command a task runs.

import { kindCommand } from '../cli/kinds.ts';

/** The program's own options, each with a value (program.ts). */
export const GLOBAL_VALUE_FLAGS = ['--token', '--tls-ca', '--tls-cert', '--tls-key'] as const;

/**
 * The daemons define --tls-cert, --tls-key and --tls-ca of their own (what they serve with,
 * daemons/daemon-flags.ts): after one of these commands those flags are the command's.
 */
const OWN_TLS_FLAGS = new Set(['master', 'agent', 'up']);

/** Per-command options a user may put before the command, each with a value. */
const COMMAND_VALUE_FLAGS = ['--master', '-o', '--output'] as const;

/**
 * The list commands `-w` watches: their paths (the command, and the subcommand of a family).
 * Each has -w in its --help (program.ts adds it).
 */
export const WATCHABLE_LISTS = [
  'agents', 'tasks', 'members', 'masters', 'roles', 'usage', 'preemptions',
  'job list', 'tune list', 'app list', 'app tasks', 'app deployments', 'app queue', 'secret list', 'quota', 'quota list',
  'masters list',
] as const;

/** Families whose command is two words (`job list`). */
const FAMILIES = new Set(['job', 'tune', 'app', 'secret', 'quota', 'masters']);

/** The flags with a value that a list may be given before its kind (`get -o json tasks`). */
const LIST_VALUE_FLAGS = ['--master', '-o', '--output', '--state', '--framework', '--agent', '--limit'] as const;

export interface NormalizedArgv {
  argv: string[];
  /** `-w`/`--watch` was given on a list: runCli polls it. */
  watch: boolean;
}

/** `--flag=value` or `--flag value` at `i`: how many tokens it takes, or 0 when `flags` has no such flag. */
function flagAt(argv: readonly string[], i: number, flags: readonly string[]): number {
  const t = argv[i]!;
  if (flags.includes(t)) return i + 1 < argv.length ? 2 : 1;
  return flags.some((f) => f.startsWith('--') && t.startsWith(`${f}=`)) ? 1 : 0;
}

export function normalizeArgv(input: readonly string[]): NormalizedArgv {
  const dashDash = input.indexOf('--');
  const head = dashDash < 0 ? [...input] : input.slice(0, dashDash);
  const tail = dashDash < 0 ? [] : input.slice(dashDash);

  // Split the head into the program's flags, the user's per-command flags typed before the
  // command, and the rest (the command, its arguments and flags).
  const globals: string[] = [];
  const early: string[] = [];
  const rest: string[] = [];
  let commandSeen = false;
  let command: string | undefined;
  for (let i = 0; i < head.length;) {
    const g = flagAt(head, i, GLOBAL_VALUE_FLAGS);
    // `cairn run` without `--`: everything from its command on is the command's own, and where
    // that starts is the parser's business; only flags before `run` are moved then.
    const runOwnsRest = command === 'run' && dashDash < 0;
    const commandsOwn = command !== undefined && OWN_TLS_FLAGS.has(command) && head[i]!.startsWith('--tls-');
    if (g > 0 && !runOwnsRest && !commandsOwn) {
      globals.push(...head.slice(i, i + g));
      i += g;
      continue;
    }
    const c = commandSeen ? 0 : flagAt(head, i, COMMAND_VALUE_FLAGS);
    if (c > 0) {
      early.push(...head.slice(i, i + c));
      i += c;
      continue;
    }
    if (!commandSeen && !head[i]!.startsWith('-')) {
      commandSeen = true;
      command = head[i];
    }
    rest.push(head[i]!);
    i++;
  }

  let words = rest;
  // get/describe KIND [NAME]: the command for that kind, with the rest of the line after it.
  const verb = words[0];
  if (verb === 'get' || verb === 'describe') {
    // KIND is the first word after the verb that is no flag's value; NAME, the word right after it.
    let k = 1;
    while (k < words.length && words[k]!.startsWith('-')) k += flagAt(words, k, LIST_VALUE_FLAGS) || 1;
    const kind = words[k];
    const name = words[k + 1] !== undefined && !words[k + 1]!.startsWith('-') ? words[k + 1] : undefined;
    const mapped = kind === undefined ? undefined : kindCommand(verb, kind, name);
    if (mapped !== undefined) words = [...mapped, ...words.slice(1, k), ...words.slice(k + (name === undefined ? 1 : 2))];
  }

  // -w/--watch on a list: taken off, for runCli to poll the list.
  let watch = false;
  const path = listPath(words);
  if (path !== undefined && (WATCHABLE_LISTS as readonly string[]).includes(path)) {
    const kept = words.filter((w) => w !== '-w' && w !== '--watch');
    watch = kept.length !== words.length;
    words = kept;
  }

  // Flags typed before the command go right after its path (`job list`), before any word of
  // `cairn run`'s own command.
  const at = pathEnd(words);
  return { argv: [...globals, ...words.slice(0, at), ...early, ...words.slice(at), ...tail], watch };
}

/** Where the command's path ends in `words`: after `tasks`, after `job list`; 0 before a command. */
function pathEnd(words: readonly string[]): number {
  const first = words.findIndex((w) => !w.startsWith('-'));
  if (first < 0) return words.length;
  const second = words[first + 1];
  return FAMILIES.has(words[first]!) && second !== undefined && !second.startsWith('-') ? first + 2 : first + 1;
}

/** The command's path as WATCHABLE_LISTS names it: `tasks`, `job list`; undefined before a command. */
function listPath(words: readonly string[]): string | undefined {
  const positional = words.filter((w) => !w.startsWith('-'));
  const first = positional[0];
  if (first === undefined) return undefined;
  if (!FAMILIES.has(first)) return first;
  // `masters` lists by itself and has subcommands too.
  return positional[1] === undefined ? first : `${first} ${positional[1]}`;
}
