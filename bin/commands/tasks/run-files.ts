// `cairn run --file LOCAL[:NAME]`: local files shipped with the tasks. Each file's content
// travels base64-encoded inside the task's command line, and a short POSIX sh preamble
// (base64 is in coreutils and busybox alike, so it runs as a process and in a container)
// writes it into the task's sandbox before the command runs there — the way tuning ships
// `--files` to its trials. The command line is one argument to the shell, so what is shipped
// is bounded well below Linux's 128 KiB for one argument.

import { readFileSync, statSync } from 'node:fs';
import { basename } from 'node:path';
import { InvalidArgumentError } from 'commander';

/** What a command line may carry in all (encoded), as tuning's `--files`. */
export const MAX_RUN_FILES_BYTES = 64 * 1024;

/** A `--file` as given: where it is here, and the name it gets in the sandbox. */
export interface FileFlag {
  local: string;
  name: string;
}

/** A file read and ready to ship. */
export interface ShippedRunFile {
  name: string;
  base64: string;
  /** Executable here (any x bit): made executable there, so `./job.sh` runs. */
  executable: boolean;
}

const PLAIN_NAME = /^[A-Za-z0-9_.-]+$/;

/** `--file LOCAL[:NAME]`: NAME defaults to LOCAL's base name; it must be a plain file name. */
export function fileFlag(value: string, previous: FileFlag[] = []): FileFlag[] {
  const colon = value.lastIndexOf(':');
  const local = colon > 0 ? value.slice(0, colon) : value;
  const name = colon > 0 ? value.slice(colon + 1) : basename(value);
  if (local === '') throw new InvalidArgumentError('must be LOCAL[:NAME], a file to ship and the name it gets in the sandbox.');
  if (!PLAIN_NAME.test(name) || name === '.' || name === '..') throw new InvalidArgumentError(`the name in the sandbox, '${name}', must be a plain file name (letters, digits, '.', '_', '-').`);
  return [...previous.filter((f) => f.name !== name), { local, name }];
}

/** Reads each file; an unreadable one, or too much in all, is an error naming the flag's file. */
export function readRunFiles(flags: readonly FileFlag[]): ShippedRunFile[] {
  let total = 0;
  const files = flags.map((f) => {
    let content: Buffer;
    let mode: number;
    try {
      mode = statSync(f.local).mode;
      content = readFileSync(f.local);
    } catch (err) {
      throw new Error(`--file ${f.local}: cannot read it (${(err as NodeJS.ErrnoException).code ?? String(err)})`);
    }
    const base64 = content.toString('base64');
    total += base64.length;
    return { name: f.name, base64, executable: (mode & 0o111) !== 0 };
  });
  if (total > MAX_RUN_FILES_BYTES) throw new Error(`--file: the files hold ${total} bytes encoded; at most ${MAX_RUN_FILES_BYTES} travel with a command (put larger data on a path every agent has)`);
  return files;
}

export function shellQuote(s: string): string {
  return `'${s.replaceAll("'", `'\\''`)}'`;
}

/**
 * The shell line that writes the files into the sandbox, enters it and then runs `command`
 * (a shell command line). A file that cannot be written ends the task with exit code 1
 * before the command runs.
 */
export function withShippedFiles(files: readonly ShippedRunFile[], command: string): string {
  // A process starts in its sandbox already; a container in its image's directory.
  const lines = ['cd "${MESOS_SANDBOX:-.}" || exit 1'];
  for (const f of files) {
    const name = shellQuote(f.name);
    const write = `printf '%s' ${shellQuote(f.base64)} | base64 -d > ${name}${f.executable ? ` && chmod +x ${name}` : ''}`;
    lines.push(`${write} || { echo ${shellQuote(`cairn run: cannot write ${f.name} into the sandbox`)} >&2; exit 1; }`);
  }
  lines.push(command);
  return lines.join('\n');
}
