// Where clients find their credential, as kubeconfig does: `CAIRN_TOKEN` when set, else the
// user's credentials file (`$CAIRN_CONFIG_DIR/credentials`, by default
// `~/.config/cairn/credentials`), which maps master URLs to tokens. `cairn up` writes its
// bootstrap token there for every master it starts, so `cairn run` needs no flag.
// Each entry names the cluster it is for: a token saved for a URL is replaced only by the
// same cluster's, so a second `cairn up` on that URL never takes the first one's away.

import { chmodSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { CairnError } from '../errors.ts';

export interface SavedCredential {
  principal: string;
  token: string;
  /** The id of the cluster the token is for (`cairn up` keeps it in its data dir); absent in older entries. */
  cluster?: string;
  /** That cluster's data dir, where its id is kept: a dir that no longer holds it means the cluster is gone. */
  dataDir?: string;
}

interface CredentialsFile {
  masters: Record<string, SavedCredential>;
}

type Env = Readonly<Record<string, string | undefined>>;

export function clientConfigDir(env: Env): string {
  if (env.CAIRN_CONFIG_DIR) return env.CAIRN_CONFIG_DIR;
  return join(env.XDG_CONFIG_HOME || join(env.HOME || homedir(), '.config'), 'cairn');
}

export function clientCredentialsPath(env: Env): string {
  return join(clientConfigDir(env), 'credentials');
}

/** A master URL as the file keys it: its origin (scheme, host, port). */
function key(url: string): string {
  try {
    return new URL(url.trim()).origin;
  } catch {
    return url.trim();
  }
}

function read(path: string): CredentialsFile {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch {
    return { masters: {} };
  }
  try {
    const doc = JSON.parse(text) as Partial<CredentialsFile>;
    return { masters: typeof doc.masters === 'object' && doc.masters !== null ? doc.masters : {} };
  } catch (err) {
    throw new CairnError('CAIRN_BAD_CREDENTIALS', `${path} is not JSON: ${(err as Error).message}`, path);
  }
}

/** The token for these masters (comma-separated): CAIRN_TOKEN, else the first one saved for any of them. */
export function findToken(masterUrls: string, env: Env): string | undefined {
  if (env.CAIRN_TOKEN) return env.CAIRN_TOKEN.trim();
  const saved = read(clientCredentialsPath(env)).masters;
  for (const u of masterUrls.split(',')) {
    const c = saved[key(u)];
    if (c && typeof c.token === 'string' && c.token !== '') return c.token;
  }
  return undefined;
}

/**
 * Whether `next` may take the place of the entry `saved` for one URL: an empty place, the
 * very same token (an entry written before clusters were named), the same cluster, or a
 * cluster that is gone (its data dir no longer holds its id, as `clusterAt` reads it).
 * Another cluster's token, or one whose cluster is unknown, is kept.
 */
export function mayReplace(saved: SavedCredential | undefined, next: SavedCredential, clusterAt: (dataDir: string) => string | undefined): boolean {
  if (saved === undefined || typeof saved.token !== 'string' || saved.token === '') return true;
  if (saved.token === next.token) return true;
  if (typeof saved.cluster !== 'string' || saved.cluster === '') return false;
  if (saved.cluster === next.cluster) return true;
  return typeof saved.dataDir === 'string' && saved.dataDir !== '' && clusterAt(saved.dataDir) !== saved.cluster;
}

export interface SavedTokens {
  /** The credentials file. */
  path: string;
  /** The URLs (origins) the token was saved for. */
  saved: string[];
  /** The URLs whose entry another cluster's token holds, kept as it was. */
  kept: { url: string; held: SavedCredential }[];
}

/**
 * Saves a token for each of these masters where `mayReplace` allows (mode 0600; other
 * masters' entries kept); the file is not written when no entry changes.
 */
export function saveToken(masterUrls: readonly string[], credential: SavedCredential, env: Env, clusterAt: (dataDir: string) => string | undefined = () => undefined): SavedTokens {
  const path = clientCredentialsPath(env);
  const doc = read(path);
  const saved: string[] = [];
  const kept: SavedTokens['kept'] = [];
  for (const u of masterUrls) {
    const k = key(u);
    const held = doc.masters[k];
    if (mayReplace(held, credential, clusterAt)) {
      doc.masters[k] = credential;
      saved.push(k);
    } else {
      kept.push({ url: k, held: held! });
    }
  }
  if (saved.length === 0) return { path, saved, kept };
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  const tmp = `${path}.${process.pid}.tmp`;
  writeFileSync(tmp, `${JSON.stringify(doc, null, 2)}\n`, { mode: 0o600 });
  chmodSync(tmp, 0o600);
  renameSync(tmp, path);
  return { path, saved, kept };
}
