// Which OS user a task runs as (Mesos' --switch_user). A root agent runs each task as its
// framework's `user` (FrameworkInfo.user). When the framework names none (or names the
// default task user), tasks of different principals never share a uid: the principal's user
// from the operator's map (`--task-user-map PRINCIPAL=USER`), else a uid of the principal's
// own from `--task-uid-range` (task-uids.ts); only a task with no principal (a master that
// authenticates no one) runs as the agent's default task user (`--default-task-user`,
// `nobody` unless told). A user that is root (uid 0) is refused unless the operator allows
// root tasks (`--allow-root-tasks`).
// An agent that is not root cannot switch users: its tasks run as the agent's own user, and
// a task that asks for another is refused. Refusals fail the task at once, saying why.
//
// The decision (decideTaskUser) and the passwd parsing are pure; UserDb is the thin shell
// that reads /etc/passwd (and asks `getent` for users it does not list: LDAP, sssd),
// cached until the file changes.

import { execFileSync } from 'node:child_process';
import { readFileSync, statSync } from 'node:fs';
import { userInfo } from 'node:os';
import { CairnError } from '../shared/errors.ts';
import { formatUidRange, type TaskUidTable } from './task-uids.ts';

/** What a task runs as: the user's name, ids and home (given to the task as HOME). */
export interface RunAs {
  user: string;
  uid: number;
  gid: number;
  home: string;
}

export interface PasswdEntry {
  name: string;
  uid: number;
  gid: number;
  home: string;
}

/** Parses passwd(5) text (pure); malformed lines are skipped, the first entry of a name wins. */
export function parsePasswd(text: string): Map<string, PasswdEntry> {
  const out = new Map<string, PasswdEntry>();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const f = line.split(':');
    if (f.length < 7) continue;
    const [name, , uidText, gidText, , home] = f;
    if (!/^\d+$/.test(uidText!) || !/^\d+$/.test(gidText!) || name === '' || out.has(name!)) continue;
    out.set(name!, { name: name!, uid: Number(uidText), gid: Number(gidText), home: home || '/' });
  }
  return out;
}

/** User names as useradd and POSIX allow them (and nothing a command line could take for a flag). */
const USER_NAME = /^[A-Za-z0-9_.][A-Za-z0-9_.-]{0,63}\$?$/;

export function isValidUserName(name: string): boolean {
  return USER_NAME.test(name);
}

/** Principal names as credentials allow them (master/auth/credentials.ts). */
const PRINCIPAL_NAME = /^[A-Za-z0-9._@:\/-]{1,256}$/;

/**
 * `PRINCIPAL=USER` entries (`--task-user-map`, comma-separated or repeated) as a map; names the
 * flag and the entry when one is wrong, or when two principals are given one user (their
 * tasks would share a uid).
 */
export function parseTaskUserMap(entries: readonly string[], field = 'taskUserMap'): Map<string, string> {
  const out = new Map<string, string>();
  for (const raw of entries.flatMap((e) => e.split(','))) {
    const entry = raw.trim();
    if (entry === '') continue;
    const eq = entry.lastIndexOf('=');
    const principal = entry.slice(0, eq);
    const user = entry.slice(eq + 1);
    if (eq <= 0 || !PRINCIPAL_NAME.test(principal) || !isValidUserName(user)) {
      throw new CairnError('CAIRN_BAD_FLAG', `'${entry.slice(0, 80)}' is not PRINCIPAL=USER (a principal's name, then a user name)`, field);
    }
    const twice = out.get(principal);
    if (twice !== undefined && twice !== user) throw new CairnError('CAIRN_BAD_FLAG', `principal '${principal}' is given two users, '${twice}' and '${user}'`, field);
    const other = [...out].find(([p, u]) => u === user && p !== principal);
    if (other) throw new CairnError('CAIRN_BAD_FLAG', `principals '${other[0]}' and '${principal}' are both given user '${user}': different principals' tasks never share a user`, field);
    out.set(principal, user);
  }
  return out;
}

export interface TaskUserPolicy {
  /** The agent's own uid and user; only root (uid 0) can run tasks as other users. */
  agent: { uid: number; gid: number; user: string; home: string };
  /** The user tasks run as when their framework names none (root agents only). */
  defaultUser: string;
  /** Whether a task may run as root (uid 0). */
  allowRoot: boolean;
}

/**
 * Whose a task is, and how a principal becomes a user: the principal the master names on the
 * launch ('' for none), the operator's map, and the per-principal uids (absent: off).
 */
export interface Tenancy {
  principal: string;
  userMap?: ReadonlyMap<string, string>;
  /** The principal's uid from the range; throws (a CairnError saying why) when none can be given. */
  uidOf?: (principal: string) => number;
}

/** The name a task with a range uid goes by (USER, LOGNAME, the agent's state): no account has it. */
export function rangeUserName(uid: number): string {
  return `cairn-${uid}`;
}

export type TaskUserDecision =
  | { ok: true; runAs: RunAs; switchUser: boolean }
  | { ok: false; message: string };

/**
 * The user a task asking for `requested` ('' for none) runs as, or why it cannot run (pure).
 * `switchUser` says whether the process must change its ids (root agents always do, so
 * that a root task too starts without the agent's supplementary groups).
 */
export function decideTaskUser(requested: string, policy: TaskUserPolicy, lookup: (name: string) => PasswdEntry | undefined, tenancy?: Tenancy): TaskUserDecision {
  const { agent } = policy;
  if (requested !== '' && !isValidUserName(requested)) {
    return { ok: false, message: `the task asks to run as '${requested.slice(0, 80)}', which is not a valid user name` };
  }
  if (agent.uid !== 0) {
    const self: RunAs = { user: agent.user, uid: agent.uid, gid: agent.gid, home: agent.home };
    if (requested === '' || requested === agent.user) return { ok: true, runAs: self, switchUser: false };
    const entry = lookup(requested);
    if (entry && entry.uid === agent.uid) return { ok: true, runAs: { ...self, user: entry.name, home: entry.home }, switchUser: false };
    return {
      ok: false,
      message: `the task asks to run as user '${requested}', but this agent runs as '${agent.user}' (uid ${agent.uid}), not as root, and cannot switch users`,
    };
  }
  const principal = tenancy?.principal ?? '';
  // The framework names a user of its own: Mesos' --switch_user, as the master's run_tasks ACL allowed.
  const own = requested !== '' && requested !== policy.defaultUser;
  if (!own && principal !== '') {
    const mapped = tenancy?.userMap?.get(principal);
    if (mapped !== undefined) return switchTo(mapped, lookup(mapped), policy, `the user '${mapped}' that --task-user-map gives principal '${principal.slice(0, 64)}'`);
    if (tenancy?.uidOf) {
      let uid: number;
      try {
        uid = tenancy.uidOf(principal);
      } catch (err) {
        return { ok: false, message: (err as Error).message };
      }
      // No account: HOME is the task's sandbox (the executor fills it in).
      return { ok: true, runAs: { user: rangeUserName(uid), uid, gid: uid, home: '' }, switchUser: true };
    }
  }
  const name = requested !== '' ? requested : policy.defaultUser;
  const which = requested !== '' ? `the task's user '${name}'` : `the agent's default task user '${name}' (--default-task-user)`;
  return switchTo(name, lookup(name), policy, which);
}

/** Runs as `entry` (named `name`), or why not: unknown, or root where root is not allowed (pure). */
function switchTo(name: string, entry: PasswdEntry | undefined, policy: TaskUserPolicy, which: string): TaskUserDecision {
  if (!entry) {
    return { ok: false, message: `${which} does not exist on this agent` };
  }
  if (entry.uid === 0 && !policy.allowRoot) {
    return {
      ok: false,
      message: `the task would run as '${name}' (uid 0, root), and this agent does not run tasks as root: start the agent with --allow-root-tasks to allow it, or give the framework another user`,
    };
  }
  return { ok: true, runAs: { user: entry.name, uid: entry.uid, gid: entry.gid, home: entry.home }, switchUser: true };
}

/** What the executors ask: the user a task runs as, from its framework's user and its principal. */
export interface TaskUserDecider {
  decide(requested: string | undefined, principal?: string): TaskUserDecision;
}

/** How long a user that neither /etc/passwd nor getent knows stays unknown before it is asked again. */
const MISS_TTL_MS = 10_000;

/** Users by name, from /etc/passwd (re-read when it changes) and getent for the rest; cached. */
export class UserDb {
  private entries = new Map<string, PasswdEntry>();
  private fileStamp = '';
  private readonly others = new Map<string, { entry: PasswdEntry | undefined; atMs: number }>();

  constructor(
    private readonly passwdPath = '/etc/passwd',
    /** Asks the name service (LDAP, sssd) for a user /etc/passwd lacks; undefined turns it off. */
    private readonly getent: ((name: string) => string | undefined) | undefined = getentPasswd,
  ) {}

  /** Whether /etc/passwd or the name service knows an account with this uid. */
  hasUid(uid: number): boolean {
    this.refresh();
    for (const e of this.entries.values()) if (e.uid === uid) return true;
    return this.getent !== undefined && this.getent(String(uid)) !== undefined;
  }

  lookup(name: string): PasswdEntry | undefined {
    if (!isValidUserName(name)) return undefined;
    this.refresh();
    const local = this.entries.get(name);
    if (local) return local;
    if (!this.getent) return undefined;
    const cached = this.others.get(name);
    const now = Date.now();
    if (cached && (cached.entry !== undefined || now - cached.atMs < MISS_TTL_MS)) return cached.entry;
    const line = this.getent(name);
    const entry = line === undefined ? undefined : parsePasswd(line).get(name);
    this.others.set(name, { entry, atMs: now });
    return entry;
  }

  private refresh(): void {
    let stamp: string;
    try {
      const st = statSync(this.passwdPath);
      stamp = `${st.ino}:${st.size}:${st.mtimeMs}`;
    } catch {
      stamp = 'missing';
    }
    if (stamp === this.fileStamp) return;
    this.fileStamp = stamp;
    try {
      this.entries = parsePasswd(readFileSync(this.passwdPath, 'utf8'));
    } catch {
      this.entries = new Map();
    }
  }
}

/** `getent passwd NAME` (or UID): the user's passwd line through the name service; undefined when unknown. */
function getentPasswd(name: string): string | undefined {
  try {
    return execFileSync('getent', ['passwd', name], { encoding: 'utf8', timeout: 5000, stdio: ['ignore', 'pipe', 'ignore'] });
  } catch {
    return undefined;
  }
}

/** The agent process's own user, as the policy needs it. */
export function agentIdentity(): TaskUserPolicy['agent'] {
  try {
    const u = userInfo();
    return { uid: u.uid, gid: u.gid, user: u.username, home: u.homedir };
  } catch {
    // A uid without a passwd entry (some containers): known by its number only.
    const uid = process.getuid?.() ?? 0;
    return { uid, gid: process.getgid?.() ?? 0, user: String(uid), home: process.env.HOME ?? '/' };
  }
}

/** Decides tasks' users for one agent: its policy, and its user database. */
export class TaskUsers {
  constructor(
    readonly policy: TaskUserPolicy,
    private readonly db: Pick<UserDb, 'lookup'> = new UserDb(),
    /** Principals' users: the operator's map and the per-principal uids (absent: every task without a user runs as the default). */
    private readonly principals: { userMap?: ReadonlyMap<string, string>; uids?: TaskUidTable } = {},
  ) {}

  /** The user a task asking for `requested`, acting for `principal`, runs as. */
  decide(requested: string | undefined, principal?: string): TaskUserDecision {
    const { userMap, uids } = this.principals;
    return decideTaskUser(requested ?? '', this.policy, (n) => this.db.lookup(n), {
      principal: principal ?? '',
      ...(userMap ? { userMap } : {}),
      ...(uids ? { uidOf: (p: string) => uids.uidOf(p) } : {}),
    });
  }

  /** What /health says of it. */
  report(): Record<string, unknown> {
    const { agent, defaultUser, allowRoot } = this.policy;
    const { userMap, uids } = this.principals;
    return agent.uid === 0
      ? {
          switchUsers: true, defaultTaskUser: defaultUser, allowRootTasks: allowRoot,
          taskUidRange: uids ? formatUidRange(uids.range) : 'none',
          ...(uids ? { principalsWithUids: uids.size } : {}),
          ...(userMap && userMap.size > 0 ? { taskUserMap: Object.fromEntries(userMap) } : {}),
        }
      : { switchUsers: false, runsAs: agent.user, reason: 'the agent is not root: every task runs as its user' };
  }
}
