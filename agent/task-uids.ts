// A uid of its own for each principal's tasks (issue 22: tenants never share a uid). A root
// agent runs the tasks of a framework that names no OS user under a uid taken from a range
// (`--task-uid-range`), one per principal: the principal of a third-party framework, or the
// owner of a built-in's app, job or experiment, as the master names it on the launch. Two
// principals' tasks then cannot read each other's sandboxes, logs, job dirs or
// /proc/PID/environ, nor signal each other's processes — the kernel refuses, whatever a task
// runs. The uids need no passwd entry (as systemd's DynamicUser and Kubernetes' runAsUser);
// a task's HOME is its sandbox.
//
// Which uid: a hash of the principal's name into the range, so that every agent with the same
// range gives a principal the same uid (job dirs on a shared mount stay the job's own); when
// that slot is taken (another principal's, or a uid the host's user database knows) the next
// free one. What was decided is kept in `<work dir>/meta/task-uids.json` (0600), so a
// principal keeps its uid across agent restarts even where a collision moved it; only a
// collision can make two agents disagree, and the job dir's ownership check then refuses
// rather than sharing (job-dirs.ts).
//
// The default range (agent/defaults.ts) lies above systemd's container ranges (524288-1879048191) and useradd's
// subordinate ids (100000-600100000) and below 2^31: no local account, subuid or container
// mapping is expected there, and 268 million slots make hash collisions rare.

import { createHash } from 'node:crypto';
import { closeSync, fsyncSync, openSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { CairnError } from '../shared/errors.ts';

export interface UidRange {
  first: number;
  last: number;
}

/** Below this a uid may be a local account or a system service's (useradd's UID_MAX is 60000). */
const LOWEST_RANGE_UID = 65536;
/** The highest uid a range may reach: 2^31 - 2, clear of signed overflow and (uid_t)-1. */
const HIGHEST_RANGE_UID = 2 ** 31 - 2;

/** Parses `FIRST-LAST`; `none` (or `off`) turns per-principal uids off. Names the flag when wrong. */
export function parseUidRange(text: string, field = 'taskUidRange'): UidRange | undefined {
  const t = text.trim();
  if (t === 'none' || t === 'off') return undefined;
  const m = /^(\d{1,10})-(\d{1,10})$/.exec(t);
  if (!m) throw new CairnError('CAIRN_BAD_FLAG', `must be FIRST-LAST (the first and last uid to give principals) or none, got '${text.slice(0, 64)}'`, field);
  const first = Number(m[1]);
  const last = Number(m[2]);
  if (first < LOWEST_RANGE_UID || last > HIGHEST_RANGE_UID || first > last) {
    throw new CairnError('CAIRN_BAD_FLAG', `must lie within ${LOWEST_RANGE_UID}-${HIGHEST_RANGE_UID} (clear of local accounts, system users and nobody), first no more than last, got '${t}'`, field);
  }
  return { first, last };
}

export function formatUidRange(r: UidRange): string {
  return `${r.first}-${r.last}`;
}

/** Where a principal's uid is looked for first: a hash of its name into the range (pure). */
export function homeUid(principal: string, range: UidRange): number {
  const size = range.last - range.first + 1;
  // 48 bits of SHA-256: uniform over any range a uid_t can hold.
  const h = createHash('sha256').update(principal, 'utf8').digest().readUIntBE(0, 6);
  return range.first + (h % size);
}

/**
 * The principal's uid: its home slot, else the next one up (wrapping) that `taken` does not
 * hold; undefined when the range is full (pure, given `taken`).
 */
export function allocateUid(principal: string, range: UidRange, taken: (uid: number) => boolean): number | undefined {
  const size = range.last - range.first + 1;
  const home = homeUid(principal, range);
  for (let i = 0; i < size; i++) {
    const uid = range.first + ((home - range.first + i) % size);
    if (!taken(uid)) return uid;
  }
  return undefined;
}

interface StoredTable {
  version: 1;
  range: string;
  /** principal → uid */
  uids: Record<string, number>;
}

export function taskUidsPath(workDir: string): string {
  return join(workDir, 'meta', 'task-uids.json');
}

export interface UidLog {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
}

/** The agent's principal → uid table: loaded at start, grown (and written durably) by each new principal. */
export class TaskUidTable {
  private readonly byPrincipal = new Map<string, number>();
  private readonly byUid = new Map<number, string>();

  constructor(
    private readonly file: string,
    readonly range: UidRange,
    /** Whether the host's user database has an account with this uid (such a uid is never handed out). */
    private readonly knownUid: (uid: number) => boolean,
    private readonly log?: UidLog,
  ) {
    this.load();
  }

  /** How many principals have a uid here. */
  get size(): number {
    return this.byPrincipal.size;
  }

  /** The principal's uid, allocated (and written down) on first use; throws CAIRN_BAD_FLAG when none can be. */
  uidOf(principal: string): number {
    const known = this.byPrincipal.get(principal);
    if (known !== undefined) return known;
    const uid = allocateUid(principal, this.range, (u) => this.byUid.has(u) || this.knownUid(u));
    if (uid === undefined) {
      throw new CairnError('CAIRN_BAD_FLAG', `no uid left in --task-uid-range ${formatUidRange(this.range)} for principal '${principal.slice(0, 64)}': widen the range`, 'taskUidRange');
    }
    this.byPrincipal.set(principal, uid);
    this.byUid.set(uid, principal);
    try {
      this.save();
    } catch (err) {
      this.byPrincipal.delete(principal);
      this.byUid.delete(uid);
      throw new CairnError('CAIRN_BAD_FLAG', `cannot record the uid of principal '${principal.slice(0, 64)}' in ${this.file}: ${(err as Error).message}`, 'workDir');
    }
    const moved = uid !== homeUid(principal, this.range);
    this.log?.info({ principal, uid, ...(moved ? { collision: true } : {}) }, moved
      ? "a principal's tasks get a uid of their own (its hashed slot was taken: agents that saw the principals in another order may give it another uid)"
      : "a principal's tasks get a uid of their own");
    return uid;
  }

  private load(): void {
    let text: string;
    try {
      text = readFileSync(this.file, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
      throw new CairnError('CAIRN_BAD_FLAG', `cannot read ${this.file}: ${(err as Error).message}`, 'workDir');
    }
    let doc: StoredTable;
    try {
      doc = JSON.parse(text) as StoredTable;
      if (doc.version !== 1 || typeof doc.uids !== 'object' || doc.uids === null) throw new Error('not a uid table of version 1');
    } catch (err) {
      // The table only records decisions that can be made again; a principal moved by a
      // collision may come back elsewhere, and its job dir's ownership check says so.
      this.log?.warn({ file: this.file, err: (err as Error).message }, 'the table of task uids cannot be read: principals are given uids afresh');
      return;
    }
    const dropped: string[] = [];
    for (const [principal, uid] of Object.entries(doc.uids)) {
      if (!Number.isInteger(uid) || uid < this.range.first || uid > this.range.last || this.byUid.has(uid)) {
        dropped.push(principal);
        continue;
      }
      this.byPrincipal.set(principal, uid);
      this.byUid.set(uid, principal);
    }
    if (dropped.length > 0) {
      this.log?.warn({ file: this.file, range: formatUidRange(this.range), principals: dropped.slice(0, 20) }, 'task uids outside --task-uid-range are forgotten: those principals get uids in the range (files they own keep the old uid)');
    }
  }

  /** Temporary file, fsync, rename, directory fsync: a crash leaves the old table or the new one. */
  private save(): void {
    const doc: StoredTable = { version: 1, range: formatUidRange(this.range), uids: Object.fromEntries(this.byPrincipal) };
    const tmp = `${this.file}.tmp-${process.pid}`;
    writeFileSync(tmp, `${JSON.stringify(doc, null, 1)}\n`, { mode: 0o600 });
    const fd = openSync(tmp, 'r');
    try {
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(tmp, this.file);
    const dir = openSync(dirname(this.file), 'r');
    try {
      fsyncSync(dir);
    } finally {
      closeSync(dir);
    }
  }
}
