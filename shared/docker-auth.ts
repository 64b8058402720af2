// Docker registry credentials: a Docker config.json (`{"auths": {"REGISTRY": {"auth":
// base64("user:password")}}}`, as `docker login` writes it and Mesos' --docker_config and
// Kubernetes' dockerconfigjson secrets take it) checked at the edge, and the one entry that
// serves an image's registry picked for a pull. Pure: no file, no clock.

import { CairnError } from './errors.ts';
import type { RegistryAuth } from './agent-messages.ts';

/** A config's credentials by registry host (`registry.example.com:5000`, `docker.io`). */
export interface DockerConfig {
  readonly auths: ReadonlyMap<string, RegistryAuth>;
}

/** The JSON a config is kept and sent as: `{auths: {HOST: {username, password} | {identitytoken}}}`. */
export interface DockerConfigJson {
  auths: Record<string, { username?: string; password?: string; identitytoken?: string }>;
}

/** Registries one config may hold, and the longest value of one field: bounds on what is kept. */
export const MAX_REGISTRIES = 64;
const MAX_FIELD = 8192;

/** Docker Hub's names, as `docker login` and image references spell it. */
const DOCKER_HUB = 'docker.io';
const HUB_ALIASES = new Set(['docker.io', 'index.docker.io', 'registry-1.docker.io', 'registry.hub.docker.com']);

function bad(field: string, message: string): CairnError {
  return new CairnError('CAIRN_BAD_DOCKER_CONFIG', message, field);
}

/**
 * A registry key as `docker login` writes it (`https://index.docker.io/v1/`,
 * `registry:5000`, `http://127.0.0.1:5000`) to the host it names, Docker Hub's aliases as one.
 */
export function registryHost(key: string): string {
  const host = key.trim().replace(/^[a-z]+:\/\//i, '').split('/')[0]!.toLowerCase();
  return HUB_ALIASES.has(host) ? DOCKER_HUB : host;
}

/**
 * The registry an image reference is pulled from, as Docker reads it: the part before the
 * first '/' when it has a '.' or a ':' or is `localhost`; otherwise Docker Hub.
 */
export function imageRegistry(image: string): string {
  const slash = image.indexOf('/');
  if (slash < 0) return DOCKER_HUB;
  const first = image.slice(0, slash);
  if (first.includes('.') || first.includes(':') || first === 'localhost') return registryHost(first);
  return DOCKER_HUB;
}

function text(v: unknown, field: string): string | undefined {
  if (v === undefined || v === null || v === '') return undefined;
  if (typeof v !== 'string') throw bad(field, 'must be a string');
  if (v.length > MAX_FIELD) throw bad(field, `is ${v.length} characters; at most ${MAX_FIELD}`);
  return v;
}

/**
 * Checks a parsed config.json. `at` prefixes the fields an error names (a flag and its file,
 * a request body's field). Credential helpers (`credsStore`, `credHelpers`) keep nothing in
 * the file, so a config with nothing but them is refused: its credentials cannot be sent.
 */
export function parseDockerConfig(value: unknown, at: string): DockerConfig {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw bad(at, 'must be a Docker config.json: an object with "auths"');
  const o = value as Record<string, unknown>;
  const auths = o.auths;
  if (auths === undefined || auths === null) {
    const helper = o.credsStore !== undefined || o.credHelpers !== undefined;
    throw bad(`${at}.auths`, helper
      ? 'is missing: this config keeps its credentials in a credential helper (credsStore/credHelpers), which Cairn cannot ask; write them into "auths" (docker login with no helper configured does)'
      : 'is required: {"auths": {"REGISTRY": {"auth": "base64 of user:password"}}}');
  }
  if (typeof auths !== 'object' || Array.isArray(auths)) throw bad(`${at}.auths`, 'must be an object keyed by registry');
  const entries = Object.entries(auths as Record<string, unknown>);
  if (entries.length === 0) throw bad(`${at}.auths`, 'names no registry');
  if (entries.length > MAX_REGISTRIES) throw bad(`${at}.auths`, `names ${entries.length} registries; at most ${MAX_REGISTRIES}`);
  const out = new Map<string, RegistryAuth>();
  for (const [key, raw] of entries) {
    const field = `${at}.auths[${JSON.stringify(key)}]`;
    const host = registryHost(key);
    if (host === '' || !/^[a-z0-9.[\]:-]+$/.test(host)) throw bad(field, `'${key}' is not a registry (host, host:port or URL)`);
    if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw bad(field, 'must be an object with "auth" (or "username" and "password", or "identitytoken")');
    const e = raw as Record<string, unknown>;
    let username = text(e.username, `${field}.username`);
    let password = text(e.password, `${field}.password`);
    const identityToken = text(e.identitytoken, `${field}.identitytoken`);
    const auth = text(e.auth, `${field}.auth`);
    if (auth !== undefined) {
      if (!/^[A-Za-z0-9+/]+={0,2}$/.test(auth)) throw bad(`${field}.auth`, 'is not base64 (of user:password)');
      const decoded = Buffer.from(auth, 'base64').toString('utf8');
      const colon = decoded.indexOf(':');
      if (colon <= 0) throw bad(`${field}.auth`, 'is not base64 of user:password (no user before a colon)');
      username ??= decoded.slice(0, colon);
      password ??= decoded.slice(colon + 1);
    }
    if (identityToken === undefined && (username === undefined || password === undefined)) {
      throw bad(field, 'holds no credential: give "auth" (base64 of user:password), "username" and "password", or "identitytoken"');
    }
    if (out.has(host)) throw bad(field, `names registry ${host} a second time`);
    out.set(host, { serverAddress: host, username: username ?? '', password: password ?? '', identityToken: identityToken ?? '' });
  }
  return { auths: out };
}

/** The config as JSON to keep or send: one entry per registry, the credential spelled out. */
export function dockerConfigJson(config: DockerConfig): DockerConfigJson {
  const auths: DockerConfigJson['auths'] = {};
  for (const [host, a] of config.auths) {
    auths[host] = a.identityToken !== '' ? { identitytoken: a.identityToken, ...(a.username !== '' ? { username: a.username } : {}) } : { username: a.username, password: a.password };
  }
  return { auths };
}

/** The config's credential for the registry `image` is pulled from, if it holds one. */
export function authForImage(config: DockerConfig, image: string): RegistryAuth | undefined {
  return config.auths.get(imageRegistry(image));
}

/** The registries a config holds credentials for (what a person may be shown of it). */
export function configRegistries(config: DockerConfig): string[] {
  return [...config.auths.keys()];
}
