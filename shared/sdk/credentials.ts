// Where clients find their credential, as kubeconfig does: `CAIRN_TOKEN` when set, else the
// user's credentials file (`$CAIRN_CONFIG_DIR/credentials`, by default
// `~/.config/cairn/credentials`), which maps master URLs to tokens. `cairn up` writes its
// bootstrap token there for every master it starts, so `cairn run` needs no flag.

import { chmodSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { CairnError } from '../errors.ts';

export interface SavedCredential {
  principal: string;
  token: string;
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

/** Saves a token for each of these masters (mode 0600; other masters' entries kept). */
export function saveToken(masterUrls: readonly string[], credential: SavedCredential, env: Env): string {
  const path = clientCredentialsPath(env);
  const doc = read(path);
  for (const u of masterUrls) doc.masters[key(u)] = credential;
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  const tmp = `${path}.${process.pid}.tmp`;
  writeFileSync(tmp, `${JSON.stringify(doc, null, 2)}\n`, { mode: 0o600 });
  chmodSync(tmp, 0o600);
  renameSync(tmp, path);
  return path;
}
