// The id of the cluster `cairn up` runs from a data dir: random, made once, kept in
// DATA_DIR/cluster-id. The CLI credentials file saves it beside the admin token, so a token
// for a URL is replaced only by the same cluster's (shared/sdk/credentials.ts).

import { randomUUID } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export const CLUSTER_ID_FILE = 'cluster-id';

/** The id kept in `dataDir`; undefined where there is none (a data dir removed, or never used). */
export function readClusterId(dataDir: string): string | undefined {
  try {
    return readFileSync(join(dataDir, CLUSTER_ID_FILE), 'utf8').trim() || undefined;
  } catch {
    return undefined;
  }
}

/** The id kept in `dataDir`, made there first when it has none. */
export function clusterIdOf(dataDir: string): string {
  const known = readClusterId(dataDir);
  if (known !== undefined) return known;
  const id = randomUUID();
  try {
    writeFileSync(join(dataDir, CLUSTER_ID_FILE), `${id}\n`, { mode: 0o600, flag: 'wx' });
    return id;
  } catch (err) {
    // Made meanwhile by another process on this data dir: its id stands.
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return readClusterId(dataDir) ?? id;
    throw err;
  }
}
