// The per-task supervisor: a few lines of /bin/sh that the agent starts instead of the
// task itself. It joins the task's cgroups, runs the task as its child in the same
// process group, and records how the task ended in `<sandbox>/exit_status` (written to a
// temporary file and renamed, so a reader sees the whole number or nothing) before it
// exits with the same status.
//
// Why: after an agent restart the agent is no longer the parent of its tasks and cannot
// wait() for them. The supervisor makes a task's exit status observable without the
// agent, and costs one small shell (no interpreter to load), so launches stay fast.
//
// What must hold:
// - The supervisor ignores nothing: it traps HUP/INT/QUIT/TERM with a no-op, so a kill of
//   the group reaches the task with default dispositions (a trap is reset in children;
//   an ignored signal would be inherited) while the supervisor lives on to record the end.
//   SIGKILL ends both; the agent then knows the end from the kill it sent.
// - The task runs through `exec` in a subshell, so a program named like a shell builtin
//   (`echo`, `test`) is the program, as it would be without the supervisor.
// - `mv` is passed as an absolute path: the task's environment (its PATH) is the task's
//   own business and must not break the supervisor.
// - A shell reports a child killed by signal N as status 128+N; the agent reads it back
//   that way (see exitFromStatus), as Mesos' shell tasks do.

import { accessSync, closeSync, constants as fsConstants, existsSync, fstatSync, openSync, readSync } from 'node:fs';
import { constants } from 'node:os';
import { delimiter, join } from 'node:path';
import type { SpawnSpec } from './command.ts';

export const EXIT_STATUS_FILE = 'exit_status';

/** Exit status of a supervisor that could not put itself into the task's cgroups. */
export const CGROUP_JOIN_FAILED = 125;

/**
 * `held`: the supervisor first waits for one line on its stdin, which the agent writes once
 * it has put the supervisor into the task's cgroups itself (a supervisor that already runs
 * as the task's user cannot); end-of-file without it means the agent could not, and the
 * supervisor exits without starting the task. The task then gets /dev/null as its stdin.
 */
function script(runLine: string, held = false): string {
  return [
    ...(held ? [`IFS= read -r go || { echo "cairn: the agent could not place the task in its cgroups" >&2; exit ${CGROUP_JOIN_FAILED}; }`, 'exec </dev/null'] : []),
    'mv=$1; n=$2; shift 2',
    'while [ "$n" -gt 0 ]; do',
    `  echo $$ > "$1" || { echo "cairn: cannot join cgroup $1" >&2; exit ${CGROUP_JOIN_FAILED}; }`,
    '  shift; n=$((n - 1))',
    'done',
    'trap : HUP INT QUIT TERM',
    runLine,
    's=$?',
    `echo "$s" > ${EXIT_STATUS_FILE}.tmp && "$mv" -f ${EXIT_STATUS_FILE}.tmp ${EXIT_STATUS_FILE}`,
    'exit "$s"',
  ].join('\n');
}

/** The POSIX shell version: the task's argv[0] is its program path. */
export const SUPERVISOR_SCRIPT = script('( exec "$@" )');
/** The bash version, used only when the task names an argv[0] of its own (`exec -a`). */
export const SUPERVISOR_SCRIPT_ARGV0 = script('a0=$1; shift; ( exec -a "$a0" "$@" )');
/** Both again, held until the agent has placed them in their cgroups (see script()). */
const HELD_SCRIPT = script('( exec "$@" )', true);
const HELD_SCRIPT_ARGV0 = script('a0=$1; shift; ( exec -a "$a0" "$@" )', true);

export interface SupervisorTools {
  /** /bin/sh. */
  sh: string;
  /** bash, when installed; needed only for tasks with their own argv[0]. */
  bash: string | undefined;
  /** An absolute path to mv. */
  mv: string;
  /** perl, for the launcher (launcher.ts); without it tasks are spawned from Node. */
  perl: string | undefined;
}

/** Finds an executable by name on a PATH (or checks an absolute path). */
export function findExecutable(name: string, pathVar: string | undefined): string | undefined {
  const candidates = name.includes('/') ? [name] : (pathVar ?? '').split(delimiter).filter(Boolean).map((d) => join(d, name));
  for (const c of candidates) {
    try {
      accessSync(c, fsConstants.X_OK);
      return c;
    } catch {
      // next
    }
  }
  return undefined;
}

export function findSupervisorTools(pathVar = process.env.PATH ?? '/usr/bin:/bin'): SupervisorTools {
  const search = `${pathVar}${delimiter}/usr/bin${delimiter}/bin`;
  return {
    sh: '/bin/sh',
    bash: existsSync('/bin/bash') ? '/bin/bash' : findExecutable('bash', search),
    mv: findExecutable('mv', search) ?? '/bin/mv',
    perl: findExecutable('perl', search),
  };
}

export interface SupervisedSpawn {
  file: string;
  args: string[];
  /** Shown by ps as the supervisor's name. */
  argv0: string;
  /** Set when the task's own argv[0] could not be honoured (no bash on the host). */
  argv0Dropped: boolean;
}

/**
 * How to start a task under the supervisor. `cgroupProcsFiles` are the `cgroup.procs`
 * files the supervisor writes its pid into before the task starts, so everything the task
 * ever runs is accounted and limited from its first instruction.
 */
export function supervisedSpawn(spec: SpawnSpec, shell: boolean, cgroupProcsFiles: readonly string[], tools: SupervisorTools, held = false): SupervisedSpawn {
  const ownArgv0 = !shell && spec.argv0 !== spec.file;
  const prefix = [tools.mv, String(cgroupProcsFiles.length), ...cgroupProcsFiles];
  if (ownArgv0 && tools.bash !== undefined) {
    return { file: tools.bash, args: ['-c', held ? HELD_SCRIPT_ARGV0 : SUPERVISOR_SCRIPT_ARGV0, 'cairn-supervisor', ...prefix, spec.argv0, spec.file, ...spec.args], argv0: 'cairn-supervisor', argv0Dropped: false };
  }
  return { file: tools.sh, args: ['-c', held ? HELD_SCRIPT : SUPERVISOR_SCRIPT, 'cairn-supervisor', ...prefix, spec.file, ...spec.args], argv0: 'cairn-supervisor', argv0Dropped: ownArgv0 };
}

export interface ProcessEnd {
  code: number | null;
  signal: NodeJS.Signals | null;
}

function signalName(n: number): NodeJS.Signals | undefined {
  for (const [name, num] of Object.entries(constants.signals)) if (num === n) return name as NodeJS.Signals;
  return undefined;
}

/**
 * Reads a shell status back: 128+N for a known signal N means "killed by N"; anything else
 * is an exit code. (An explicit `exit 137` reads as SIGKILL, as it does in any shell.)
 */
export function exitFromStatus(status: number): ProcessEnd {
  if (status > 128 && status < 128 + 65) {
    const sig = signalName(status - 128);
    if (sig) return { code: null, signal: sig };
  }
  return { code: status, signal: null };
}

/** The supervisor's own end as its parent saw it, read as the task's end. */
export function taskEndFromSupervisor(code: number | null, signal: NodeJS.Signals | null): ProcessEnd {
  if (signal !== null) return { code: null, signal };
  return code === null ? { code: null, signal: null } : exitFromStatus(code);
}

/** Parses the exit_status file: one decimal status. Undefined for anything else. */
export function parseExitStatusFile(text: string): ProcessEnd | undefined {
  const t = text.trim();
  if (!/^\d{1,3}$/.test(t) || Number(t) > 255) return undefined;
  return exitFromStatus(Number(t));
}

/**
 * The recorded end of a task whose supervisor has exited; undefined when none was recorded.
 * The sandbox is the task's to change: a symlink, a FIFO (which would block the read) or
 * anything but a small regular file there records nothing.
 */
export function readExitStatus(sandbox: string): ProcessEnd | undefined {
  let fd: number | undefined;
  try {
    fd = openSync(join(sandbox, EXIT_STATUS_FILE), fsConstants.O_RDONLY | fsConstants.O_NOFOLLOW | fsConstants.O_NONBLOCK);
    const st = fstatSync(fd);
    if (!st.isFile() || st.size > 64) return undefined;
    const buf = Buffer.alloc(64);
    const n = readSync(fd, buf, 0, buf.length, 0);
    return parseExitStatusFile(buf.subarray(0, n).toString('utf8'));
  } catch {
    return undefined;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}
