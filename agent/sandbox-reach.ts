// Tasks reach their sandboxes by path: a process task is started in its sandbox, but a
// program that opens `$CAIRN_SANDBOX/...` or `$CAIRN_JOB_DIR/...` (python3 opens its script
// by its absolute path) needs search (x) permission on every directory above it. A root
// agent runs tasks as other users (`nobody` by default), so a work dir under a directory
// they cannot enter — `mktemp -d` (mode 0700), /root, a home directory made 0700 — would
// break every such task with "Permission denied".
//
// So the agent makes the path traversable for each task user before the user's first task
// runs (the default task user at start, any other user at its first launch), and:
// - grants exactly search, to exactly that uid, on exactly the directories in the way,
//   with a POSIX ACL entry (`setfacl -m u:UID:x`): the user can pass through, not list, and
//   nobody else gains anything (chmod o+x on /root would open it to every local user). The
//   ACL mask is the directory's group-class bits plus x, so no entry gains more than x.
// - makes its own directories on the way traversable and no more: the sandboxes root and
//   the job dirs' root are 0711 (every task user passes through; none lists the others'),
//   and its own state beside them (meta/) is 0700.
// - refuses (the agent does not start; a later user's task fails) when a directory cannot
//   be opened that way — no setfacl, a filesystem without ACLs, an NFS mount with root
//   squashing — naming the directory and the fixes.
// Grants stay after the agent stops: tasks may outlive it, and the next agent needs them.
//
// Deciding what to grant and the refusal's text are pure; ReachOps is the thin shell that
// asks as the user (a shell that `cd`s, so the kernel itself answers, ACLs included) and
// runs setfacl.

import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, lstatSync, mkdirSync, realpathSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { CairnError } from '../shared/errors.ts';
import { sandboxesRoot } from './executors/process/sandbox.ts';
import type { RunAs, TaskUserDecider, TaskUserDecision } from './task-users.ts';

/** Mode of the directories every task user passes through and none may list. */
export const PASS_THROUGH_MODE = 0o711;
/** Mode of the agent's own state, which no task reads. */
export const PRIVATE_MODE = 0o700;

/** The directories a process searches to reach `dir`, from / down to `dir` itself (pure; `dir` absolute). */
export function pathToSearch(dir: string): string[] {
  const out: string[] = [];
  for (let d = dir; ; d = dirname(d)) {
    out.unshift(d);
    if (dirname(d) === d) return out;
  }
}

/** Every directory to search to reach each of `dirs`, in order, each once (pure). */
export function pathsToSearch(dirs: readonly string[]): string[] {
  return [...new Set(dirs.flatMap(pathToSearch))];
}

/** The ACL mask after one more x entry: the group-class bits of `mode` (the old mask), plus x (pure). */
export function maskWithSearch(mode: number): string {
  const g = (mode >> 3) & 7;
  return `${g & 4 ? 'r' : '-'}${g & 2 ? 'w' : '-'}x`;
}

/** The setfacl arguments that grant `uid` search on `dir`, given the directory's mode (pure). */
export function grantArgs(dir: string, uid: number, mode: number): string[] {
  return ['-m', `u:${uid}:x,m::${maskWithSearch(mode)}`, '--', dir];
}

export interface Blocked {
  /** The directory the user cannot search. */
  dir: string;
  user: { user: string; uid: number };
  /** What the task needs to reach beyond it, e.g. its sandboxes. */
  target: string;
  /** Why the agent could not open it itself. */
  why: string;
}

/** What a person reads when a task user cannot reach its sandboxes: the directory and the fixes (pure). */
export function blockedMessage(b: Blocked): string {
  const who = `${b.user.user} (uid ${b.user.uid})`;
  return `tasks running as ${who} cannot reach ${b.target}: ${who} may not search ${b.dir}, and the agent could not grant it (${b.why}). ` +
    `Fix one of: grant search to that user alone, \`setfacl -m u:${b.user.uid}:x ${b.dir}\` (the acl package, on a filesystem with ACLs); ` +
    `or \`chmod o+x ${b.dir}\` (every local user may then pass through it); ` +
    `or start the agent with a --work-dir (cairn up: --data-dir) and --job-dirs whose every directory others may search, such as /var/lib/cairn`;
}

/** The shell around the decisions: asking as a user, granting. */
export interface ReachOps {
  /** The first of `dirs` (absolute, in order) that `user` cannot search, or undefined when it can search them all. */
  firstUnsearchable(user: { uid: number; gid: number }, dirs: readonly string[]): string | undefined;
  /** Grants `uid` search on `dir`; throws saying why it could not. */
  grantSearch(dir: string, uid: number): void;
}

/** `cd` into each directory as the user: the kernel answers, whatever the ACLs and modes. */
const SEARCH_SCRIPT = 'for d do cd -- "$d" 2>/dev/null || { printf %s "$d"; exit 1; }; done';

export const systemReachOps: ReachOps = {
  firstUnsearchable(user, dirs) {
    const r = spawnSync('/bin/sh', ['-c', SEARCH_SCRIPT, 'sh', ...dirs], { uid: user.uid, gid: user.gid, cwd: '/', encoding: 'utf8', timeout: 10_000 });
    if (r.error) throw r.error;
    if (r.status === 0) return undefined;
    return r.stdout !== '' ? r.stdout : dirs[0];
  },
  grantSearch(dir, uid) {
    const mode = lstatSync(dir).mode;
    try {
      execFileSync('setfacl', grantArgs(dir, uid, mode), { stdio: ['ignore', 'ignore', 'pipe'], timeout: 10_000 });
    } catch (err) {
      const e = err as NodeJS.ErrnoException & { stderr?: Buffer };
      if (e.code === 'ENOENT') throw new Error('setfacl is not installed: apt-get install acl', { cause: err });
      const said = e.stderr?.toString().trim();
      throw new Error(said !== undefined && said !== '' ? said : e.message, { cause: err });
    }
  },
};

/**
 * Where grants are told: each changes a directory the agent may not own, so each is logged
 * with the command that undoes it. At info, not warn: a grant is the documented, expected way
 * a private data dir is made usable (nothing is wrong), and it happens once per user.
 */
export interface GrantLog {
  info(obj: object, msg: string): void;
}

/**
 * Keeps the sandboxes and the job dirs reachable for every user tasks run as: checked (and
 * opened where needed) once per uid, before that user's first task.
 */
export class SandboxReach {
  /** Uids known to reach every target. */
  private readonly reached = new Set<number>();
  private readonly realTargets: string[];
  private readonly paths: string[];

  constructor(
    /** The directories tasks must reach (they exist): the sandboxes root, the job dirs' root. */
    targets: readonly string[],
    private readonly log: GrantLog,
    private readonly ops: ReachOps = systemReachOps,
  ) {
    this.realTargets = targets.map((t) => realpathSync(t));
    // The real directories first (grants land on them), then the path as tasks are given it,
    // whose symlinks' own parents must be searchable too.
    this.paths = pathsToSearch([...this.realTargets, ...targets]);
  }

  /** Makes the targets reachable for `user`; returns why not when it cannot. */
  ensure(user: Pick<RunAs, 'user' | 'uid' | 'gid'>): { ok: true } | { ok: false; message: string; dir: string } {
    if (user.uid === 0 || this.reached.has(user.uid)) return { ok: true };
    let granted: string | undefined;
    for (;;) {
      let dir: string | undefined;
      try {
        dir = this.ops.firstUnsearchable(user, this.paths);
      } catch (err) {
        return this.blocked(user, this.paths[0]!, `cannot check as that user: ${(err as Error).message}`);
      }
      if (dir === undefined) break;
      // Granted and still blocked: something besides permission (a mount, a security module).
      if (dir === granted) return this.blocked(user, dir, 'the ACL entry was set, and the directory still cannot be searched');
      try {
        this.ops.grantSearch(dir, user.uid);
      } catch (err) {
        return this.blocked(user, dir, (err as Error).message);
      }
      this.log.info({ dir, user: user.user, uid: user.uid, acl: `u:${user.uid}:x`, undo: `setfacl -x u:${user.uid} ${dir}` }, 'granted the task user search permission on a directory above its sandboxes (a POSIX ACL entry)');
      granted = dir;
    }
    this.reached.add(user.uid);
    return { ok: true };
  }

  /** A task-user decider whose users reach their sandboxes: one that cannot is refused, saying why. */
  decider(users: TaskUserDecider): TaskUserDecider {
    return {
      decide: (requested, principal) => {
        const decided = users.decide(requested, principal);
        if (!decided.ok || !decided.switchUser) return decided;
        const reach = this.ensure(decided.runAs);
        return reach.ok ? decided : { ok: false, message: reach.message };
      },
    };
  }

  private blocked(user: Pick<RunAs, 'user' | 'uid'>, dir: string, why: string): { ok: false; message: string; dir: string } {
    const behind = this.realTargets.filter((t) => pathToSearch(t).includes(dir));
    return { ok: false, dir, message: blockedMessage({ dir, user, target: (behind.length > 0 ? behind : this.realTargets).join(' and '), why }) };
  }
}

/**
 * Makes the work dir's own directories as open as tasks need and no more: the sandboxes
 * root, and the job dirs' root when it is the default one in the work dir, 0711 (every task
 * user passes through, none lists the others'); the agent's state (`meta/`: checkpoints
 * with tasks' environments, health checks, drains) 0700. A job dirs' root elsewhere (a
 * shared mount) is made 0711 when the agent creates it, and otherwise keeps its mode.
 * Returns the directories tasks must reach.
 */
export function prepareWorkDir(workDir: string, jobDirs: string): string[] {
  // The sandboxes first: a work dir made on the way gets their mode, not meta's.
  const sandboxes = sandboxesRoot(workDir);
  mkdirSync(sandboxes, { recursive: true, mode: PASS_THROUGH_MODE });
  chmodSync(sandboxes, PASS_THROUGH_MODE);
  const meta = join(workDir, 'meta');
  mkdirSync(meta, { recursive: true, mode: PRIVATE_MODE });
  chmodSync(meta, PRIVATE_MODE);
  const created = mkdirSync(jobDirs, { recursive: true, mode: PASS_THROUGH_MODE }) !== undefined;
  if (created || jobDirs === join(workDir, 'job-dirs')) chmodSync(jobDirs, PASS_THROUGH_MODE);
  return [sandboxes, jobDirs];
}

/**
 * At start: the default task user reaches its sandboxes and job dirs, or the agent does
 * not start, naming the directory and the fixes (CAIRN_BAD_FLAG on workDir).
 */
export function reachForDefaultUser(reach: SandboxReach, decision: TaskUserDecision): void {
  if (!decision.ok || !decision.switchUser) return;
  const r = reach.ensure(decision.runAs);
  if (!r.ok) throw new CairnError('CAIRN_BAD_FLAG', r.message, 'workDir');
}
