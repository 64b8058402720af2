// Telling a write the disk refused (full, over a quota, failing) from a bug, and the error a
// client gets for it. SQLite reports a full disk as SQLITE_FULL, and a file it could not
// grow or sync as SQLITE_IOERR_*; Node's own file calls say ENOSPC, EDQUOT or EIO. Such a
// write changed nothing (SQLite rolls the transaction back), so the caller refuses what
// depended on it and tries again later: the daemon keeps serving reads instead of exiting,
// and takes writes again by itself once space is back.

import { CairnError } from './errors.ts';

const NODE_CODES = new Set(['ENOSPC', 'EDQUOT', 'EIO', 'EROFS']);

/** Whether `err` is a write the storage refused (as opposed to a bug or bad input). */
export function isStorageRefusal(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code !== 'string') return false;
  return code === 'SQLITE_FULL' || code.startsWith('SQLITE_IOERR') || code === 'SQLITE_READONLY' || NODE_CODES.has(code);
}

/** What a client is told when `dir` refused a write (507 over HTTP). */
export function storageFull(dir: string, err: unknown, outcome = 'the change was not recorded'): CairnError {
  const why = (err as Error)?.message ?? String(err);
  return new CairnError(
    'CAIRN_STORAGE_FULL',
    `the master's data dir ${dir} cannot take writes (${why}; is its disk full?): ${outcome}. ` +
      'Reads are still served; writes are taken again as soon as the disk has room',
    'dataDir',
  );
}
