// Registry credentials on the agent: the agent-wide Docker config (`--docker-config FILE`, as
// Mesos' --docker_config), read and checked once at start, and the credential one pull uses —
// the launch's own (from a secret the task names, resolved by the leader) before the agent's.
// The credential goes to the Docker daemon with the pull and is kept nowhere else.

import { readFileSync } from 'node:fs';
import { request as httpsRequest } from 'node:https';
import { CairnError } from '../../../shared/errors.ts';
import { authForImage, imageRegistry, parseDockerConfig, type DockerConfig } from '../../../shared/docker-auth.ts';
import type { DockerSpec, RegistryAuth } from '../../../shared/agent-messages.ts';

/** Reads and checks a Docker config.json; an error names the flag, the file and what is wrong. */
export function loadDockerConfig(path: string, flag = '--docker-config'): DockerConfig {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new CairnError('CAIRN_BAD_FLAG', `cannot read ${path}: ${(err as Error).message}`, flag);
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new CairnError('CAIRN_BAD_FLAG', `${path} is not JSON: ${(err as Error).message}`, flag);
  }
  try {
    return parseDockerConfig(value, path);
  } catch (err) {
    throw new CairnError('CAIRN_BAD_FLAG', (err as Error).message, flag);
  }
}

/**
 * The credential a pull of this container's image uses, taken off the spec (so that nothing
 * holding the launch keeps it): the launch's, else the agent's for that registry, else none.
 */
export function takePullAuth(docker: DockerSpec, agentConfig: DockerConfig | undefined): RegistryAuth | undefined {
  const own = docker.pullAuth ?? undefined;
  docker.pullAuth = null;
  if (own && (own.username !== '' || own.identityToken !== '')) return own;
  return agentConfig ? authForImage(agentConfig, docker.image) : undefined;
}

/** The Docker Engine API's AuthConfig (sent base64-encoded in X-Registry-Auth by dockerode). */
export function engineAuthConfig(auth: RegistryAuth): Record<string, string> {
  return auth.identityToken !== ''
    ? { identitytoken: auth.identityToken, serveraddress: auth.serverAddress }
    : { username: auth.username, password: auth.password, serveraddress: auth.serverAddress };
}

/**
 * What dockerd says when, for an insecure registry (every loopback one is), it fell back from
 * HTTPS to plain HTTP after the HTTPS answer: the registry's own answer (a 401, say) is lost.
 */
const HTTP_FALLBACK = /Client sent an HTTP request to an HTTPS server|server gave HTTP response to HTTPS client/;
const PROBE_TIMEOUT_MS = 5_000;
const MANIFEST_TYPES = [
  'application/vnd.docker.distribution.manifest.v2+json', 'application/vnd.docker.distribution.manifest.list.v2+json',
  'application/vnd.oci.image.manifest.v1+json', 'application/vnd.oci.image.index.v1+json',
].join(', ');

/** `host:port/team/app:tag` → the manifest's path on the registry (`/v2/team/app/manifests/tag`). */
export function manifestPath(image: string): string {
  const slash = image.indexOf('/');
  let rest = image.slice(slash + 1);
  let ref = 'latest';
  const at = rest.indexOf('@');
  if (at >= 0) {
    ref = rest.slice(at + 1);
    rest = rest.slice(0, at);
  } else {
    const colon = rest.lastIndexOf(':');
    if (colon > rest.lastIndexOf('/')) {
      ref = rest.slice(colon + 1);
      rest = rest.slice(0, colon);
    }
  }
  return `/v2/${rest}/manifests/${ref}`;
}

/**
 * Why a pull failed, in the registry's own words, where dockerd's message lost them (see
 * HTTP_FALLBACK): the agent asks the registry for the manifest once itself, over HTTPS
 * verified against the CA dockerd trusts for it (`/etc/docker/certs.d/HOST/ca.crt`; without
 * one it asks nothing), with the same credential. Undefined when it cannot tell more.
 */
export async function registryAnswer(image: string, dockerMessage: string, auth: RegistryAuth | undefined, certsDir = '/etc/docker/certs.d'): Promise<string | undefined> {
  if (!HTTP_FALLBACK.test(dockerMessage) || image.indexOf('/') < 0) return undefined;
  const host = imageRegistry(image);
  let ca: Buffer;
  try {
    ca = readFileSync(`${certsDir}/${host}/ca.crt`);
  } catch {
    return undefined;
  }
  const url = new URL(`https://${host}${manifestPath(image)}`);
  const headers: Record<string, string> = { accept: MANIFEST_TYPES };
  if (auth && auth.username !== '') headers.authorization = `Basic ${Buffer.from(`${auth.username}:${auth.password}`).toString('base64')}`;
  return new Promise((resolve) => {
    const req = httpsRequest(url, { method: 'GET', headers, ca, timeout: PROBE_TIMEOUT_MS }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => {
        if (body.length < 1000) body += d;
      });
      res.on('end', () => resolve((res.statusCode ?? 0) >= 400 ? `the registry answered ${res.statusCode} ${res.statusMessage ?? ''}: ${body.trim().slice(0, 500)}` : undefined));
      res.on('error', () => resolve(undefined));
    });
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve(undefined));
    req.end();
  });
}
