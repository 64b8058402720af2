// The credential a launch pulls its image with: of the secrets a container names, the first
// that holds one for the image's registry, put on the launch frame for the agent alone (the
// task's record keeps only the names). Pure: the leader's core calls it with its registry.

import type { ContainerSpec } from '../../shared/agent-messages.ts';
import { authForImage, parseDockerConfig } from '../../shared/docker-auth.ts';
import type { SecretRecord } from '../registry/commands.ts';

export type PullAuthResult = { ok: true; container: ContainerSpec } | { ok: false; message: string };

/**
 * The container as its agent gets it: with `pullAuth` set when one of its `pullSecrets`
 * serves the image's registry (none serving it: the pull goes without, as for a public
 * image). A secret deleted since the task was submitted fails the launch, naming it.
 */
export function withPullAuth(container: ContainerSpec, secrets: ReadonlyMap<string, Readonly<SecretRecord>>): PullAuthResult {
  const names = container.docker.pullSecrets ?? [];
  if (names.length === 0) return { ok: true, container };
  for (const name of names) {
    if (!secrets.has(name)) return { ok: false, message: `the image pull secret '${name}' does not exist (deleted since the task was submitted?): store it again with \`cairn secret create ${name}\`` };
  }
  for (const name of names) {
    const auth = authForImage(parseDockerConfig(secrets.get(name)!.dockerConfig, name), container.docker.image);
    if (auth) return { ok: true, container: { ...container, docker: { ...container.docker, pullAuth: auth } } };
  }
  return { ok: true, container };
}
