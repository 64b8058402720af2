// Images from a private registry, for real: Debian's docker-registry on loopback with
// htpasswd auth and TLS (a CA and a certificate made here; dockerd trusts the CA through
// /etc/docker/certs.d/127.0.0.1:PORT/ca.crt, which it reads at each pull). The busybox test
// image is pushed under four tags, and the local tags removed, so every launch pulls:
//   - an app with container.docker.pullConfig naming a stored secret runs;
//   - a job whose replica template has imagePullSecrets runs;
//   - an agent started with --docker-config pulls for an app that names no secret;
//   - without any credential the task is TASK_FAILED with the registry's 401 in its message.
// The password never shows: not in the master's or the agent's log (at debug), not in any
// GET answer, not in `cairn task`, `cairn secret list`.
//
// Outside CI the file is skipped, with the reason printed, when Docker does not answer or
// docker-registry/htpasswd/openssl are missing; in CI (.ci/run installs them) it must run.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import Docker from 'dockerode';
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, rmSync, writeFileSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { dockerUnavailable, ensureTestImage, TEST_IMAGE } from '../harness/docker.ts';
import { TEST_AGENT, TEST_USER } from '../harness/credentials.ts';
import { marathon } from '../harness/marathon.ts';
import { Cleanup, freePort, runCairn, startAgentProcess, startMasterProcess, waitFor, type CairnProcess } from '../harness/processes.ts';

function missingTool(): string | undefined {
  for (const [tool, pkg] of [['docker-registry', 'docker-registry'], ['htpasswd', 'apache2-utils'], ['openssl', 'openssl']]) {
    try {
      execFileSync('sh', ['-c', `command -v ${tool}`], { stdio: 'ignore' });
    } catch {
      return `${tool} is not installed (apt-get install -y ${pkg})`;
    }
  }
  return undefined;
}

const why = (await dockerUnavailable()) ?? missingTool() ?? (process.getuid?.() === 0 ? undefined : 'not root: cannot write /etc/docker/certs.d');
if (why && process.env.CI) throw new Error(`CI must run the private registry test: ${why}`);
if (why) console.warn(`skipping the private registry test: ${why}`);

const USER = 'puller';
const PASSWORD = `pw-${randomBytes(12).toString('hex')}`;
const OTHER = { principal: 'other', secret: 'other-secret-0123456789abcdef' };

describe.skipIf(!!why)('images from a private registry (docker-registry, htpasswd, TLS)', () => {
  const cleanup = new Cleanup();
  const docker = new Docker();
  let dir: string;
  let port: number;
  let registry: ChildProcess | undefined;
  let registryLog = '';
  let certsDir: string;
  /** Whether /etc/docker/certs.d was made here (then it goes too). */
  let madeCertsRoot = false;
  let master: CairnProcess;
  let agent: CairnProcess | undefined;
  let repo: string;
  const pushed: string[] = [];
  const bearer = { authorization: `Bearer ${TEST_USER.secret}` };

  const tag = (t: string) => `${repo}:${t}`;
  const api = (path: string, init: RequestInit = {}) => fetch(`${master.url}${path}`, { ...init, headers: { ...bearer, ...(init.headers as Record<string, string> | undefined) } });

  beforeAll(async () => {
    dir = cleanup.dir('cairn-registry-');
    port = await freePort();
    repo = `127.0.0.1:${port}/cairn/private`;
    // A CA, and the registry's certificate for 127.0.0.1 signed by it.
    const ssl = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
    ssl('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'ca.key', '-out', 'ca.crt', '-days', '1', '-subj', '/CN=cairn test registry CA');
    ssl('req', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'registry.key', '-out', 'registry.csr', '-subj', '/CN=127.0.0.1');
    writeFileSync(join(dir, 'san.ext'), 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n');
    ssl('x509', '-req', '-in', 'registry.csr', '-CA', 'ca.crt', '-CAkey', 'ca.key', '-CAcreateserial', '-out', 'registry.crt', '-days', '1', '-extfile', 'san.ext');
    writeFileSync(join(dir, 'htpasswd'), execFileSync('htpasswd', ['-Bbn', USER, PASSWORD]));
    mkdirSync(join(dir, 'storage'));
    writeFileSync(join(dir, 'config.yml'), [
      'version: 0.1',
      'log: {level: info}',
      `storage: {filesystem: {rootdirectory: ${join(dir, 'storage')}}}`,
      `http: {addr: "127.0.0.1:${port}", tls: {certificate: ${join(dir, 'registry.crt')}, key: ${join(dir, 'registry.key')}}}`,
      `auth: {htpasswd: {realm: cairn-test, path: ${join(dir, 'htpasswd')}}}`,
      '',
    ].join('\n'));
    // dockerd reads this directory at each pull: no restart, and removed after.
    certsDir = `/etc/docker/certs.d/127.0.0.1:${port}`;
    madeCertsRoot = !existsSync('/etc/docker/certs.d');
    mkdirSync(certsDir, { recursive: true });
    writeFileSync(join(certsDir, 'ca.crt'), readFileSync(join(dir, 'ca.crt')));

    registry = spawn('docker-registry', ['serve', join(dir, 'config.yml')], { stdio: ['ignore', 'pipe', 'pipe'] });
    registry.stdout?.on('data', (d) => (registryLog += d));
    registry.stderr?.on('data', (d) => (registryLog += d));
    const ca = new HttpsAgent({ ca: readFileSync(join(dir, 'ca.crt')) });
    // It answers /v2/ with 401 until asked with the password: up, and guarded.
    await waitFor(`the registry on 127.0.0.1:${port} (its log: ${registryLog.slice(-300)})`, () => new Promise<true | undefined>((resolve) => {
      const req = httpsRequest({ host: '127.0.0.1', port, path: '/v2/', agent: ca }, (res) => {
        res.resume();
        resolve(res.statusCode === 401 ? true : undefined);
      });
      req.on('error', () => resolve(undefined));
      req.end();
    }), 30_000, 100);

    await ensureTestImage();
    const auth = { username: USER, password: PASSWORD, serveraddress: `127.0.0.1:${port}` };
    for (const t of ['app', 'job', 'agent', 'noauth']) {
      await docker.getImage(TEST_IMAGE).tag({ repo, tag: t });
      pushed.push(tag(t));
      const stream = await docker.getImage(tag(t)).push({ authconfig: auth });
      await new Promise<void>((resolve, reject) => docker.modem.followProgress(stream, (err: Error | null, out: { error?: string }[]) => {
        const failed = err ?? out.find((o) => o.error);
        return failed ? reject(new Error(`push of ${tag(t)}: ${err?.message ?? (failed as { error: string }).error}`)) : resolve();
      }));
      // Gone from the daemon, so that the launch must pull it.
      await docker.getImage(tag(t)).remove();
    }

    const credentials = join(dir, 'credentials.json');
    writeFileSync(credentials, JSON.stringify({ credentials: [{ ...TEST_USER }, { ...OTHER }, { ...TEST_AGENT, agent: true }] }), { mode: 0o600 });
    master = await startMasterProcess(cleanup, { extra: ['--credentials', credentials], env: { CAIRN_LOG_LEVEL: 'debug' } });
  }, 180_000);

  afterAll(async () => {
    await agent?.kill('SIGTERM');
    await cleanup.run();
    registry?.kill('SIGKILL');
    if (certsDir) rmSync(madeCertsRoot ? '/etc/docker/certs.d' : certsDir, { recursive: true, force: true });
    for (const t of pushed) await docker.getImage(t).remove({ force: true }).catch(() => undefined);
  }, 120_000);

  async function startAgent(extra: string[] = []): Promise<void> {
    await agent?.kill('SIGTERM');
    const p = await startAgentProcess(cleanup, master.url, { resources: 'cpus:4;mem:4096;disk:1024;ports:[32000-32099]', extra });
    agent = p;
    await waitFor('the agent registered', async () => {
      const s = (await (await api('/api/v1/state')).json()) as { agents: { hostname: string; active?: boolean }[] };
      return s.agents.length > 0 || undefined;
    }, 30_000, 100);
  }

  async function createSecret(name: string, as = TEST_USER.secret): Promise<{ code: number | null; stdout: string; stderr: string }> {
    const config = join(dir, `${name}.json`);
    writeFileSync(config, JSON.stringify({ auths: { [`https://127.0.0.1:${port}`]: { auth: Buffer.from(`${USER}:${PASSWORD}`).toString('base64') } } }), { mode: 0o600 });
    try {
      return await runCairn(['secret', 'create', name, '--from-file', config, '--master', master.url], { CAIRN_TOKEN: as });
    } finally {
      rmSync(config);
    }
  }

  /** Every task of the app ended, for its failure. */
  async function endedTask(name: string): Promise<{ id: string; state: string; message: string }> {
    return waitFor(`a task of ${name} ended`, async () => {
      const s = (await (await api('/api/v1/state')).json()) as { tasks: { id: string; name: string; state: string; message: string }[] };
      return s.tasks.find((t) => t.name === name && ['TASK_FAILED', 'TASK_LOST', 'TASK_ERROR'].includes(t.state));
    }, 120_000, 200);
  }

  it('refuses, naming it, an app or a job that names a secret that does not exist, or another principal\'s', async () => {
    await startAgent();
    const app = await marathon(master.url, 'POST', '/v2/apps', { id: '/nosecret', cmd: 'true', cpus: 0.1, mem: 32, container: { type: 'DOCKER', docker: { image: tag('app'), pullConfig: { secret: 'missing' } } } });
    expect(app.status).toBe(422);
    expect(JSON.stringify(app.body)).toContain('/container/docker/pullConfig/secret');
    expect(JSON.stringify(app.body)).toContain("no secret named 'missing'");
    const job = await api('/api/v1/jobs', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({
      apiVersion: 'kubeflow.org/v1', kind: 'PyTorchJob', metadata: { name: 'nosecret' },
      spec: { pytorchReplicaSpecs: { Master: { replicas: 1, template: { spec: { imagePullSecrets: [{ name: 'missing' }], containers: [{ name: 'pytorch', image: tag('job'), command: ['true'] }] } } } } },
    }) });
    const body = (await job.json()) as { code: string; field: string; message: string };
    expect(job.status).toBe(400);
    expect(body.field).toBe('spec.pytorchReplicaSpecs.Master.template.spec.imagePullSecrets[0]');
    expect(body.message).toContain("no secret named 'missing'");

    expect((await createSecret('others', OTHER.secret)).code).toBe(0);
    const theirs = await marathon(master.url, 'POST', '/v2/apps', { id: '/theirs', cmd: 'true', cpus: 0.1, mem: 32, container: { type: 'DOCKER', docker: { image: tag('app'), pullConfig: { secret: 'others' } } } });
    expect(theirs.status).toBe(422);
    expect(JSON.stringify(theirs.body)).toContain("no secret named 'others' that principal 'tester' may use");
    const listed = await runCairn(['secret', 'list', '--master', master.url]);
    expect(listed.stdout).not.toContain('others');
  }, 120_000);

  it('pulls an app\'s image with the secret its pullConfig names, and a job\'s with its imagePullSecrets', async () => {
    const created = await createSecret('regcred');
    expect(created.code, created.stderr).toBe(0);
    expect((await runCairn(['secret', 'list', '--master', master.url])).stdout).toBe('regcred\n');

    const app = await marathon(master.url, 'POST', '/v2/apps', {
      id: '/private-app', cmd: 'echo pulled-app; sleep 600', cpus: 0.1, mem: 32,
      container: { type: 'DOCKER', docker: { image: tag('app'), pullConfig: { secret: 'pullConfigSecret' } } },
      // Marathon's indirection: the app's secret whose source is the stored one.
      secrets: { pullConfigSecret: { source: 'regcred' } },
    });
    expect(app.status, JSON.stringify(app.body)).toBe(201);
    await waitFor('the app\'s task running', async () => {
      const r = await marathon(master.url, 'GET', '/v2/apps/private-app/tasks');
      return (r.body as { tasks: { state: string }[] }).tasks.some((t) => t.state === 'TASK_RUNNING') || undefined;
    }, 120_000, 200);

    const submitted = await api('/api/v1/jobs', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({
      apiVersion: 'kubeflow.org/v1', kind: 'PyTorchJob', metadata: { name: 'private-job' },
      spec: { pytorchReplicaSpecs: { Master: { replicas: 1, restartPolicy: 'Never', template: { spec: { imagePullSecrets: [{ name: 'regcred' }], containers: [{ name: 'pytorch', image: tag('job'), command: ['sh', '-c', 'echo pulled-job'], resources: { requests: { cpu: '100m', memory: '32Mi' } } }] } } } } },
    }) });
    expect(submitted.status, await submitted.clone().text()).toBe(201);
    const done = await waitFor('the job finished', async () => {
      const j = (await (await api('/api/v1/jobs/private-job')).json()) as { phase: string; message?: string };
      return j.phase === 'Succeeded' || j.phase === 'Failed' ? j : undefined;
    }, 120_000, 200);
    expect(done.phase, done.message).toBe('Succeeded');
  }, 300_000);

  it('fails a task that pulls without a credential TASK_FAILED, with the registry\'s 401 in its message', async () => {
    const app = await marathon(master.url, 'POST', '/v2/apps', { id: '/noauth', cmd: 'sleep 600', cpus: 0.1, mem: 32, container: { type: 'DOCKER', docker: { image: tag('noauth') } } });
    expect(app.status).toBe(201);
    const t = await endedTask('noauth');
    expect(t.state).toBe('TASK_FAILED');
    expect(t.message).toContain(`cannot pull image ${tag('noauth')}`);
    expect(t.message).toMatch(/401 Unauthorized|no basic auth credentials|unauthorized: authentication required/);
    expect((await marathon(master.url, 'DELETE', '/v2/apps/noauth')).status).toBe(200);
  }, 180_000);

  it('pulls with the agent\'s --docker-config for an app that names no secret', async () => {
    const config = join(dir, 'agent-docker-config.json');
    writeFileSync(config, JSON.stringify({ auths: { [`127.0.0.1:${port}`]: { username: USER, password: PASSWORD } } }), { mode: 0o600 });
    await startAgent(['--docker-config', config]);
    const app = await marathon(master.url, 'POST', '/v2/apps', { id: '/agent-creds', cmd: 'echo pulled-agent; sleep 600', cpus: 0.1, mem: 32, container: { type: 'DOCKER', docker: { image: tag('agent') } } });
    expect(app.status).toBe(201);
    await waitFor('the app\'s task running', async () => {
      const r = await marathon(master.url, 'GET', '/v2/apps/agent-creds/tasks');
      return (r.body as { tasks: { state: string }[] }).tasks.some((t) => t.state === 'TASK_RUNNING') || undefined;
    }, 120_000, 200);
  }, 180_000);

  it('never shows the password: not in logs, GET answers, `cairn task` or the task records', async () => {
    const answers: string[] = [];
    for (const path of ['/api/v1/state', '/api/v1/secrets', '/api/v1/jobs/private-job', '/master/state']) answers.push(await (await api(path)).text());
    for (const path of ['/v2/apps', '/v2/tasks', '/v2/apps/private-app?embed=app.taskStats']) answers.push(JSON.stringify((await marathon(master.url, 'GET', path)).body));
    const state = JSON.parse(answers[0]!) as { tasks: { id: string; name: string }[] };
    for (const t of state.tasks) {
      answers.push(await (await api(`/api/v1/tasks/${encodeURIComponent(t.id)}`)).text());
      const shown = await runCairn(['task', t.id, '--master', master.url]);
      answers.push(shown.stdout + shown.stderr);
    }
    // The app's task record keeps the name of what it pulls with, never the credential.
    expect(answers.join('\n')).toContain('regcred');
    const encoded = Buffer.from(`${USER}:${PASSWORD}`).toString('base64');
    for (const text of [...answers, master.output, agent!.output]) {
      expect(text).not.toContain(PASSWORD);
      expect(text).not.toContain(encoded);
    }
    // The master's log was written at debug: it is there to be searched.
    expect(master.output.length).toBeGreaterThan(0);
  }, 120_000);

  it('deletes a secret; a change to an app naming it is then refused, saying so', async () => {
    const del = await runCairn(['secret', 'delete', 'regcred', '--master', master.url]);
    expect(del.code, del.stderr).toBe(0);
    expect((await runCairn(['secret', 'list', '--master', master.url])).stdout).toBe('');
    // A change to the app is refused now, naming the secret (a launch that finds it gone fails: test/unit/secrets.test.ts).
    const change = await marathon(master.url, 'PUT', '/v2/apps/private-app', { instances: 2 });
    expect(change.status).toBe(422);
    expect(JSON.stringify(change.body)).toContain("no secret named 'regcred'");
    const gone = await runCairn(['secret', 'delete', 'regcred', '--master', master.url]);
    expect(gone.code).toBe(1);
    expect(gone.stderr).toContain("no secret named 'regcred'");
  }, 120_000);
});
