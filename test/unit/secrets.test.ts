// Registry credentials: a Docker config.json checked at the edge (what `--docker-config`, a
// stored secret and `cairn secret create` take), the credential picked for an image's
// registry, the secret commands of the registry, the launch that finds its secret gone, and
// where apps and jobs name their secrets.

import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { authForImage, dockerConfigJson, imageRegistry, parseDockerConfig } from '../../shared/docker-auth.ts';
import { withPullAuth } from '../../master/leader/pull-auth.ts';
import { RegistryStateMachine } from '../../master/registry/state-machine.ts';
import type { SecretRecord } from '../../master/registry/commands.ts';
import type { ContainerSpec } from '../../shared/agent-messages.ts';
import { compileAgentOptions } from '../../agent/options.ts';
import { manifestPath, takePullAuth } from '../../agent/executors/docker/registry-auth.ts';
import { parseJobDocument } from '../../shared/jobs/spec-parse.ts';
import { parseApp } from '../../master/frameworks/services/app-parse.ts';
import { buildTaskInfo } from '../../master/frameworks/services/task-info.ts';
import { dockerConfigOf } from '../../bin/commands/secrets/commands.ts';

const b64 = (s: string) => Buffer.from(s).toString('base64');

describe('a Docker config.json', () => {
  it('gives the credential of the image\'s registry, Docker Hub\'s aliases as one', () => {
    const c = parseDockerConfig({ auths: { 'https://index.docker.io/v1/': { auth: b64('hub:pw1') }, 'registry.example.com:5000': { username: 'u', password: 'p:w' } } }, 'cfg');
    expect(authForImage(c, 'python:3.12')).toMatchObject({ serverAddress: 'docker.io', username: 'hub', password: 'pw1' });
    expect(authForImage(c, 'team/app')).toMatchObject({ username: 'hub' });
    expect(authForImage(c, 'registry.example.com:5000/team/app:1')).toMatchObject({ username: 'u', password: 'p:w' });
    expect(authForImage(c, 'other.example.com/app')).toBeUndefined();
    expect(imageRegistry('localhost/app')).toBe('localhost');
    expect(dockerConfigJson(c).auths['docker.io']).toEqual({ username: 'hub', password: 'pw1' });
  });

  it.each([
    [[], 'cfg: must be a Docker config.json'],
    [{}, 'cfg.auths: is required'],
    [{ credsStore: 'desktop' }, 'credential helper'],
    [{ auths: {} }, 'names no registry'],
    [{ auths: { 'r.io': { auth: 'not base64!' } } }, 'cfg.auths["r.io"].auth: is not base64'],
    [{ auths: { 'r.io': { auth: b64('nocolon') } } }, 'no user before a colon'],
    [{ auths: { 'r.io': { email: 'x@y' } } }, 'cfg.auths["r.io"]: holds no credential'],
    [{ auths: { 'r.io': { username: 7, password: 'p' } } }, 'cfg.auths["r.io"].username: must be a string'],
    [{ auths: { 'https://r.io': { auth: b64('a:b') }, 'r.io': { auth: b64('a:b') } } }, 'a second time'],
  ])('refuses %j naming the field', (value, message) => {
    expect(() => parseDockerConfig(value, 'cfg')).toThrow(message);
  });
});

describe('the agent\'s --docker-config', () => {
  const opts = { masterUrl: 'http://127.0.0.1:5050', workDir: '/tmp/cairn-agent-opts' };

  it('is refused at start naming the flag, the file and the problem', () => {
    const dir = mkdtempSync(join(tmpdir(), 'cairn-docker-config-'));
    try {
      const bad = join(dir, 'config.json');
      writeFileSync(bad, JSON.stringify({ auths: { 'r.io': { auth: 'x' } } }));
      expect(() => compileAgentOptions({ ...opts, dockerConfig: bad })).toThrow(`--docker-config: ${bad}.auths["r.io"].auth: is not base64`);
      writeFileSync(bad, '{not json');
      expect(() => compileAgentOptions({ ...opts, dockerConfig: bad })).toThrow(`--docker-config: ${bad} is not JSON`);
      expect(() => compileAgentOptions({ ...opts, dockerConfig: join(dir, 'absent.json') })).toThrow(`--docker-config: cannot read ${join(dir, 'absent.json')}`);
      writeFileSync(bad, JSON.stringify({ auths: { 'r.io:5000': { username: 'u', password: 'p' } } }));
      expect(compileAgentOptions({ ...opts, dockerConfig: bad }).dockerConfig?.auths.get('r.io:5000')?.username).toBe('u');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('is used for an image whose launch brings no credential, and the launch\'s is taken off the spec', () => {
    const agent = parseDockerConfig({ auths: { 'r.io': { username: 'agent', password: 'a' } } }, 'cfg');
    const own = { serverAddress: 'r.io', username: 'task', password: 't', identityToken: '' };
    const spec = { image: 'r.io/app', network: 'host' as const, portMappings: [], pullPolicy: 'always' as const, pullAuth: own };
    expect(takePullAuth(spec, agent)?.username).toBe('task');
    expect(spec.pullAuth).toBeNull();
    expect(takePullAuth(spec, agent)?.username).toBe('agent');
    expect(takePullAuth({ ...spec, image: 'other.io/app' }, agent)).toBeUndefined();
    expect(manifestPath('127.0.0.1:5000/cairn/private:noauth')).toBe('/v2/cairn/private/manifests/noauth');
    expect(manifestPath('r.io:5000/app')).toBe('/v2/app/manifests/latest');
  });
});

describe('stored secrets', () => {
  const secret = (owner: string, user = 'u') => ({ name: 'regcred', owner, dockerConfig: { auths: { 'r.io': { username: user, password: 'p' } } }, createdAtMs: 1 });

  it('are replaced only by their owner, removed, and kept in snapshots', () => {
    const sm = new RegistryStateMachine();
    sm.apply({ type: 'secret_set', secret: secret('alice') });
    sm.apply({ type: 'secret_set', secret: secret('bob', 'bob') });
    expect(sm.secrets.get('regcred')?.owner).toBe('alice');
    sm.apply({ type: 'secret_set', secret: secret('alice', 'alice2') });
    expect(sm.secrets.get('regcred')?.dockerConfig.auths['r.io']?.username).toBe('alice2');
    expect(RegistryStateMachine.fromSnapshot(JSON.parse(JSON.stringify(sm.snapshot()))).secrets.get('regcred')?.owner).toBe('alice');
    sm.apply({ type: 'secret_removed', name: 'regcred' });
    expect(sm.secrets.size).toBe(0);
  });

  it('give the launch the credential of the image\'s registry, and fail a launch whose secret is gone', () => {
    const container: ContainerSpec = { type: 'docker', docker: { image: 'r.io/app:1', network: 'host', portMappings: [], pullPolicy: 'if-not-present', pullSecrets: ['other', 'regcred'] }, volumes: [] };
    const secrets = new Map<string, SecretRecord>([['regcred', secret('alice')], ['other', { ...secret('alice'), name: 'other', dockerConfig: { auths: { 'x.io': { username: 'x', password: 'x' } } } }]]);
    const r = withPullAuth(container, secrets);
    expect(r.ok && r.container.docker.pullAuth).toMatchObject({ serverAddress: 'r.io', username: 'u', password: 'p' });
    // The record's container is not changed: the credential rides on the launch only.
    expect(container.docker.pullAuth).toBeUndefined();
    secrets.delete('regcred');
    expect(withPullAuth(container, secrets)).toEqual({ ok: false, message: expect.stringContaining("the image pull secret 'regcred' does not exist") });
  });
});

describe('where apps and jobs name their secrets', () => {
  it('a Marathon app\'s pullConfig, directly or through its secrets\' source, goes to the task by name', () => {
    const direct = parseApp({ id: '/a', cpus: 0.1, mem: 32, container: { type: 'DOCKER', docker: { image: 'r.io/app', pullConfig: { secret: 'regcred' } } } });
    expect(direct.app.container?.docker?.pullSecret).toBe('regcred');
    expect(direct.ignored).not.toContain('/container/docker/pullConfig');
    const indirect = parseApp({ id: '/a', cpus: 0.1, mem: 32, secrets: { pc: { source: '/team/regcred' } }, container: { type: 'DOCKER', docker: { image: 'r.io/app', pullConfig: { secret: 'pc' } } } });
    expect(indirect.app.container?.docker?.pullSecret).toBe('/team/regcred');
    const task = buildTaskInfo({ app: indirect.app, version: 'v', configVersion: 'v' } as never, { agentId: 'a1', hostname: 'h', ports: [31000], resources: { toMesos: () => [] } } as never, 't1');
    expect(task.container?.docker.pull_secrets).toEqual(['/team/regcred']);
    expect(() => parseApp({ id: '/a', cpus: 0.1, mem: 32, container: { type: 'DOCKER', docker: { image: 'r.io/app', pullConfig: { secret: 'bad name!' } } } })).toThrow();
  });

  it('a job\'s imagePullSecrets, in Cairn\'s document and in a pod template, refused naming the field', () => {
    const own = parseJobDocument({ name: 'j', kind: 'batch', groups: [{ name: 'w', replicas: 1, template: { image: 'r.io/app', imagePullSecrets: [{ name: 'regcred' }, 'other'] } }] });
    expect(own.spec.groups[0]!.template.imagePullSecrets).toEqual(['regcred', 'other']);
    const pod = (secrets: unknown) => ({
      apiVersion: 'kubeflow.org/v1', kind: 'PyTorchJob', metadata: { name: 'p' },
      spec: { pytorchReplicaSpecs: { Master: { replicas: 1, template: { spec: { imagePullSecrets: secrets, containers: [{ name: 'pytorch', image: 'r.io/app' }] } } } } },
    });
    const parsed = parseJobDocument(pod([{ name: 'regcred' }]));
    expect(parsed.spec.groups[0]!.template.imagePullSecrets).toEqual(['regcred']);
    expect(parsed.ignored.map((i) => i.path)).not.toContain('spec.pytorchReplicaSpecs.Master.template.spec.imagePullSecrets');
    expect(parsed.locate('groups[0].template.imagePullSecrets[0]')).toBe('spec.pytorchReplicaSpecs.Master.template.spec.imagePullSecrets[0]');
    expect(() => parseJobDocument(pod([{ name: 'bad name!' }]))).toThrow('spec.pytorchReplicaSpecs.Master.template.spec.imagePullSecrets[0].name');
    expect(() => parseJobDocument({ name: 'j', kind: 'batch', groups: [{ name: 'w', replicas: 1, template: { command: 'true', imagePullSecrets: ['regcred'] } }] })).toThrow('needs an image');
  });

  it('`cairn secret create` checks a file, or one registry\'s user and password, before sending it', () => {
    expect(dockerConfigOf({ dockerServer: 'r.io:5000', dockerUsername: 'u', password: 'pw\n' })).toEqual({ auths: { 'r.io:5000': { username: 'u', password: 'pw' } } });
    expect(() => dockerConfigOf({ dockerServer: 'r.io', dockerUsername: 'u', password: '\n' })).toThrow('--docker-password-stdin: stdin held no password');
    expect(() => dockerConfigOf({ fromFile: 'c.json' }, () => '{}')).toThrow('c.json.auths: is required');
  });
});
