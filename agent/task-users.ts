// Which OS user a task runs as (Mesos' --switch_user). A root agent runs each task as its
// framework's `user` (FrameworkInfo.user), or as the agent's default task user
// (`--default-task-user`, `nobody` unless told) when the framework names none; a user that
// is root (uid 0) is refused unless the operator allows root tasks (`--allow-root-tasks`).
// An agent that is not root cannot switch users: its tasks run as the agent's own user, and
// a task that asks for another is refused. Refusals fail the task at once, saying why.
//
// The decision (decideTaskUser) and the passwd parsing are pure; UserDb is the thin shell
// that reads /etc/passwd (and asks `getent` for users it does not list: LDAP, sssd),
// cached until the file changes.

import { execFileSync } from 'node:child_process';
import { readFileSync, statSync } from 'node:fs';
import { userInfo } from 'node:os';

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

export interface TaskUserPolicy {
  /** The agent's own uid and user; only root (uid 0) can run tasks as other users. */
  agent: { uid: number; gid: number; user: string; home: string };
  /** The user tasks run as when their framework names none (root agents only). */
  defaultUser: string;
  /** Whether a task may run as root (uid 0). */
  allowRoot: boolean;
}

export type TaskUserDecision =
  | { ok: true; runAs: RunAs; switchUser: boolean }
  | { ok: false; message: string };

/**
 * The user a task asking for `requested` ('' for none) runs as, or why it cannot run (pure).
 * `switchUser` says whether the process must change its ids (root agents always do, so
 * that a root task too starts without the agent's supplementary groups).
 */
export function decideTaskUser(requested: string, policy: TaskUserPolicy, lookup: (name: string) => PasswdEntry | undefined): TaskUserDecision {
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
  const name = requested !== '' ? requested : policy.defaultUser;
  const entry = lookup(name);
  if (!entry) {
    const which = requested !== '' ? `the task's user '${name}'` : `the agent's default task user '${name}' (--default-task-user)`;
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

/** `getent passwd NAME`: the user's passwd line through the name service; undefined when unknown. */
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
  ) {}

  decide(requested: string | undefined): TaskUserDecision {
    return decideTaskUser(requested ?? '', this.policy, (n) => this.db.lookup(n));
  }

  /** What /health says of it. */
  report(): Record<string, unknown> {
    const { agent, defaultUser, allowRoot } = this.policy;
    return agent.uid === 0
      ? { switchUsers: true, defaultTaskUser: defaultUser, allowRootTasks: allowRoot }
      : { switchUsers: false, runsAs: agent.user, reason: 'the agent is not root: every task runs as its user' };
  }
}
