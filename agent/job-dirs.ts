// A training job's shared directory on this host: the place its replicas keep checkpoints,
// so a replica restarted after a failure finds what it wrote before. A task labelled with its
// job (`cairn.job`, set by the jobs framework) gets `<job dirs>/<job>`, created on first use,
// owned by the task's user, kept across restarts, and named in CAIRN_JOB_DIR. The job dirs
// default to `<work dir>/job-dirs`; `cairn agent --job-dirs PATH` points them at a shared
// filesystem mount (NFS, CephFS) so replicas on different hosts share one directory.

import { lchownSync, lstatSync, mkdirSync } from 'node:fs';
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

/**
 * Creates the directory (and the root) when missing and gives it to the task's user the
 * first time; a directory that exists keeps its owner, so the replicas of one job, which
 * run as one user, keep writing to it.
 */
export function ensureJobDir(dir: string, owner: { uid: number; gid: number } | undefined): void {
  const created = mkdirSync(dir, { recursive: true }) !== undefined;
  if (!lstatSync(dir).isDirectory()) throw new Error(`${dir} is not a directory`);
  if (created && owner) lchownSync(dir, owner.uid, owner.gid);
}
