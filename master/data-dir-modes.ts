// The master's data dir is private: it holds the registry (every tenant's task environments,
// stored secrets), the Raft log and the credentials. A task on a master's host — any local
// user — must read none of it, so the dir and every dir under it are 0700 and every file
// 0600, owned by the master's user. Checked at every start: a data dir made by an older
// installer (0755) or files an older master left 0644 are tightened, and the log says which
// (an expected, documented action, so at info). The registry's SQLite files are created by
// SQLite under the process umask; the dir being 0700 first keeps them private meanwhile, and
// a second pass once the stores are open gives them 0600 too.

import { chmodSync, lstatSync, mkdirSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

export const PRIVATE_DIR_MODE = 0o700;
export const PRIVATE_FILE_MODE = 0o600;

/**
 * The dirs of the data dir that are the master's own, walked whole; anything else in the data
 * dir (an agent's work dir placed inside it, say) is left as it is, but for its files at the top.
 */
const OWN_DIRS = ['registry', 'raft'];
/** How deep the walk goes below them: SQLite's files sit right inside. */
const MAX_DEPTH = 3;

export interface ModeLog {
  info(obj: object, msg: string): void;
}

/**
 * Makes `dataDir` (created when missing) and what it holds private: directories 0700, regular
 * files 0600 (symlinks and other kinds left alone, never followed). Returns the paths whose
 * mode it changed; logs them unless `quiet`.
 */
export function privateDataDir(dataDir: string, log?: ModeLog, opts: { quiet?: boolean } = {}): string[] {
  mkdirSync(dataDir, { recursive: true, mode: PRIVATE_DIR_MODE });
  const changed: string[] = [];
  const visit = (path: string, depth: number): void => {
    const st = lstatSync(path);
    if (st.isDirectory()) {
      if ((st.mode & 0o777) !== PRIVATE_DIR_MODE) {
        chmodSync(path, PRIVATE_DIR_MODE);
        changed.push(`${path} (was ${(st.mode & 0o777).toString(8)})`);
      }
      if (depth >= MAX_DEPTH) return;
      for (const name of readdirSync(path)) {
        if (depth > 0 || OWN_DIRS.includes(name) || !lstatSync(join(path, name)).isDirectory()) visit(join(path, name), depth + 1);
      }
    } else if (st.isFile() && (st.mode & 0o077) !== 0) {
      chmodSync(path, PRIVATE_FILE_MODE);
      changed.push(`${path} (was ${(st.mode & 0o777).toString(8)})`);
    }
  };
  visit(dataDir, 0);
  if (changed.length > 0 && !opts.quiet) {
    log?.info({ dataDir, tightened: changed.slice(0, 50), count: changed.length }, "the master's data dir is private: others could read or enter what is listed, now 0700 (dirs) and 0600 (files)");
  }
  return changed;
}
