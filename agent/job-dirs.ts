// A training job's shared directory on this host: the place its replicas keep checkpoints,
// so a replica restarted after a failure finds what it wrote before. A task labelled with its
// job (`cairn.job`, set by the jobs framework) gets `<job dirs>/<job>`, created on first use,
// owned by the task's user and private to it (0700), kept across restarts, and named in
// CAIRN_JOB_DIR. The job dirs default to `<work dir>/job-dirs`; `cairn agent --job-dirs PATH`
// points them at a shared filesystem mount (NFS, CephFS) so replicas on different hosts share
// one directory (each principal's uid is the same on every agent: task-uids.ts).
//
// The label is honoured only from the jobs framework: the masters refuse it on any other
// framework's task (master/auth/reserved-labels.ts). Here, the directory's owner is the second
// line: a task whose uid is not the job's is refused the directory.

import { chmodSync, lchownSync, lstatSync, mkdirSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

/** The label the jobs framework puts on every replica's task: the job's name. */
export const JOB_LABEL = 'cairn.job';

/** A job name is a DNS label: safe as one path part (no '/', no '..'). */
const JOB_NAME = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;

/** The task's job directory, or undefined when it is no job's replica (or names no usable job). Pure. */
export function jobDirFor(labels: readonly { name: string; value: string }[], root: string): string | undefined {
  const job = labels.find((l) => l.name === JOB_LABEL)?.value;
  return job !== undefined && JOB_NAME.test(job) ? join(root, job) : undefined;
}

/** A job dir's mode: its job's uid alone enters it (another principal's tasks run under another uid). */
export const JOB_DIR_MODE = 0o700;

/**
 * Creates the directory when missing (the root exists: the agent made it at start), private
 * to the task's user, and gives it to that user the first time. One that exists must be that
 * user's already: the replicas of one job run as one uid and keep writing to it, and a task
 * of any other uid is refused it (a later job of the same name by another principal, or a
 * directory from before tasks had a uid per principal), naming the owner and the fix.
 */
export function ensureJobDir(dir: string, owner: { uid: number; gid: number } | undefined): void {
  const created = mkdirSync(dir, { recursive: true, mode: JOB_DIR_MODE }) !== undefined;
  const st = lstatSync(dir);
  if (!st.isDirectory()) throw new Error(`${dir} is not a directory`);
  if (!owner) return;
  if (created) {
    lchownSync(dir, owner.uid, owner.gid);
    return;
  }
  if (st.uid !== owner.uid && st.uid === process.geteuid?.() && readdirSync(dir).length === 0) {
    // The agent's own and empty: another agent of this host (or of a shared mount) made it a
    // moment ago and is about to give it to the job's uid, or it holds nothing of anyone.
    // Either way it is this job's to take: its replicas on two agents start at once.
    lchownSync(dir, owner.uid, owner.gid);
  } else if (st.uid !== owner.uid) {
    throw new Error(`it belongs to uid ${st.uid}, and this job's tasks run as uid ${owner.uid}: a job's directory is only ever its own job's (a job of the same name by another principal, or from before each principal's tasks had a uid, left it). Remove it, or give it to this job: chown -R ${owner.uid}:${owner.gid} ${dir}`);
  }
  if ((st.mode & 0o077) !== 0) chmodSync(dir, JOB_DIR_MODE);
}
