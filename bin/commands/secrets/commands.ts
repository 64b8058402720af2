// `cairn secret create|list|delete`: credentials stored in the cluster, which apps
// (`container.docker.pullConfig`) and jobs (`imagePullSecrets`) pull images with. A secret's
// content goes to the master once and is never printed: `list` shows names only.

import { readFileSync } from 'node:fs';
import { parseDockerConfig, dockerConfigJson, type DockerConfigJson } from '../../../shared/docker-auth.ts';
import { MasterHttpError } from '../../../shared/sdk/http-error.ts';
import type { TlsFiles } from '../../../shared/tls.ts';
import { isUnreachable, unreachableHint } from '../common/hints.ts';
import type { CliIo } from '../common/io.ts';
import { apiClientOptions, MasterApiClient } from '../common/master-api-client.ts';
import { printList, type OutputFormat } from '../common/output.ts';
import { exitCodeOf } from '../common/exit-codes.ts';

export interface SecretCommandOptions {
  masterUrl: string;
  tls?: TlsFiles;
}

/** Where `create` takes the credential from: a config.json, or one registry's user and password. */
export type SecretSource =
  | { fromFile: string }
  | { dockerServer: string; dockerUsername: string; password: string };

class SecretClient extends MasterApiClient {
  async create(name: string, dockerConfig: DockerConfigJson): Promise<void> {
    await this.request('POST', '/api/v1/secrets', `storing secret ${name}`, { body: JSON.stringify({ name, dockerConfig }), contentType: 'application/json' });
  }

  async list(): Promise<{ name: string }[]> {
    return (JSON.parse(await this.request('GET', '/api/v1/secrets', 'listing secrets')) as { secrets: { name: string }[] }).secrets;
  }

  async remove(name: string): Promise<void> {
    await this.request('DELETE', `/api/v1/secrets/${encodeURIComponent(name)}`, `deleting secret ${name}`);
  }
}

async function withSecrets(name: string, o: SecretCommandOptions, io: CliIo, body: (c: SecretClient) => Promise<void>): Promise<number> {
  try {
    await body(new SecretClient(o.masterUrl, apiClientOptions(o.masterUrl, o.tls, io)));
    return 0;
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    const hint = err instanceof MasterHttpError
      ? err.code === 'CAIRN_UNKNOWN_SECRET' ? ' — `cairn secret list` shows yours' : ''
      : isUnreachable(message) ? ` — ${unreachableHint(o.masterUrl)}` : '';
    io.stderr.write(`cairn secret ${name}: ${message}${hint}\n`);
    return exitCodeOf(err);
  }
}

/** The config the source gives, checked here so that a bad file is refused before anything is sent. */
export function dockerConfigOf(source: SecretSource, readFile: (path: string) => string = (p) => readFileSync(p, 'utf8')): DockerConfigJson {
  if ('fromFile' in source) {
    let text: string;
    try {
      text = readFile(source.fromFile);
    } catch (err) {
      throw new Error(`--from-file: cannot read ${source.fromFile}: ${(err as Error).message}`);
    }
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch (err) {
      throw new Error(`--from-file: ${source.fromFile} is not JSON: ${(err as Error).message}`);
    }
    return dockerConfigJson(parseDockerConfig(value, source.fromFile));
  }
  const password = source.password.replace(/\r?\n$/, '');
  if (password === '') throw new Error('--docker-password-stdin: stdin held no password');
  return dockerConfigJson(parseDockerConfig({ auths: { [source.dockerServer]: { username: source.dockerUsername, password } } }, '--docker-server'));
}

export function runSecretCreate(o: SecretCommandOptions & { name: string; source: SecretSource }, io: CliIo): Promise<number> {
  return withSecrets('create', o, io, async (c) => {
    await c.create(o.name, dockerConfigOf(o.source));
    io.stdout.write(`secret ${o.name} stored\n`);
  });
}

export function runSecretList(o: SecretCommandOptions & { output?: OutputFormat }, io: CliIo): Promise<number> {
  return withSecrets('list', o, io, async (c) => {
    const secrets = await c.list();
    printList(io, o.output, secrets, () => secrets.map((s) => `${s.name}\n`).join(''));
  });
}

export function runSecretDelete(o: SecretCommandOptions & { name: string }, io: CliIo): Promise<number> {
  return withSecrets('delete', o, io, async (c) => {
    await c.remove(o.name);
    io.stdout.write(`secret ${o.name} deleted\n`);
  });
}
