// Who may do what with apps and jobs: an in-process master with credentials and ACLs, and a
// simulated agent. Alice creates an app and a job; Bob can neither see nor change them (each
// refused, nothing changed) nor create in a role he is not allowed; a viewer with view_tasks
// on Alice sees but cannot change; Alice can do everything; each event stream carries only
// what its caller may see, and the master's task API treats their tasks as theirs; every
// change is audited with its principal.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rmSync } from 'node:fs';
import { Writable } from 'node:stream';
import pino from 'pino';
import { startMaster, type MasterHandle } from '../../master/server.ts';
import { MasterAuth } from '../../master/auth/master-auth.ts';
import { parseCredentials } from '../../master/auth/credentials.ts';
import { parseAcls } from '../../master/auth/acls.ts';
import { RegistryFrameworkStore } from '../../master/framework-host/store.ts';
import { parseApp } from '../../master/frameworks/services/app-parse.ts';
import { appKey } from '../../master/frameworks/services/records.ts';
import { FakeAgent } from '../harness/fake-agent.ts';
import { tempDir, waitFor } from '../harness/processes.ts';
import { marathon } from '../harness/marathon.ts';

const USERS = ['alice', 'bob', 'viewer'] as const;
type User = (typeof USERS)[number];
const secret = (name: string) => `${name}-secret-0123456789abcdef`;
const AGENT = { principal: 'agent-1', secret: secret('agent-1'), agent: true };

let master: MasterHandle;
let agent: FakeAgent;
let dir: string;
const logLines: string[] = [];
const streams: EventStream[] = [];

/** An SSE stream read in the background: its text so far. */
class EventStream {
  text = '';
  status = 0;
  private readonly abort = new AbortController();
  constructor(readonly path: string, readonly user: User) {}

  async open(): Promise<this> {
    const res = await fetch(`${master.url}${this.path}`, { headers: { authorization: `Bearer ${secret(this.user)}` }, signal: this.abort.signal });
    this.status = res.status;
    if (!res.body) return this;
    const reader = res.body.getReader();
    const decoder = new TextDecoder();
    void (async () => {
      try {
        for (;;) {
          const { done, value } = await reader.read();
          if (done) return;
          this.text += decoder.decode(value, { stream: true });
        }
      } catch {
        // aborted at the end of the test
      }
    })();
    return this;
  }

  close(): void {
    this.abort.abort();
  }
}

async function call(user: User, method: string, path: string, body?: unknown): Promise<{ status: number; body: any }> {
  const r = await marathon(master.url, method, path, body, { authorization: `Bearer ${secret(user)}` });
  // /v2 refusals are in Marathon's shape: Cairn's code in a header, the field in details[0].path.
  const code = r.headers.get('cairn-error-code');
  if (code === null) return r;
  return { ...r, body: { ...r.body, code, field: String(r.body.details?.[0]?.path ?? '/').slice(1) } };
}

async function runningTaskIds(user: User, appId: string): Promise<string[]> {
  const r = await call(user, 'GET', `/v2/apps${appId}`);
  return r.status === 200 ? (r.body.app.tasks as any[]).filter((t) => t.state === 'TASK_RUNNING').map((t) => t.id).sort() : [];
}

function waitForRunning(user: User, appId: string, n: number): Promise<string[]> {
  return waitFor(`${n} running task(s) of ${appId}`, async () => {
    const ids = await runningTaskIds(user, appId);
    return ids.length === n ? ids : undefined;
  }, 30_000, 100);
}

function waitForNoDeployments(user: User): Promise<boolean> {
  return waitFor('no deployment in flight', async () => {
    const r = await call(user, 'GET', '/v2/deployments');
    return r.status === 200 && (r.body as unknown[]).length === 0 ? true : undefined;
  }, 30_000, 100);
}

const JOB = (name: string, role: string) => ({
  name,
  kind: 'pytorch',
  role,
  groups: [{ name: 'master', template: { command: 'sleep 1000', cpus: 0.1, mem: 32 } }, { name: 'worker', template: { command: 'sleep 1000', cpus: 0.1, mem: 32 } }],
});

beforeAll(async () => {
  dir = tempDir();
  const credentials = parseCredentials(JSON.stringify({ credentials: [...USERS.map((u) => ({ principal: u, secret: secret(u) })), AGENT] }), 'test');
  const acls = parseAcls(JSON.stringify({
    permissive: false,
    register_frameworks: [
      { principals: { values: ['alice'] }, roles: { values: ['*', 'ml'] } },
      { principals: { values: ['bob'] }, roles: { values: ['*'] } },
    ],
    run_tasks: [{ principals: { type: 'ANY' }, users: { type: 'ANY' } }],
    view_tasks: [{ principals: { values: ['viewer'] }, framework_principals: { values: ['alice'] } }],
  }), 'acls');
  const sink = new Writable({
    write(chunk, _enc, done) {
      logLines.push(...String(chunk).split('\n').filter((l) => l !== ''));
      done();
    },
  });
  master = await startMaster({ auth: MasterAuth.on({ credentials, acls }), dataDir: dir, port: 0, host: '127.0.0.1', dnsPort: null, logger: pino({ level: 'info' }, sink) });
  agent = new FakeAgent({ masterUrl: master.url, hostname: 'h1', resources: 'cpus:8;mem:16384;disk:100000;ports:[31000-32000]', headers: { authorization: `Bearer ${AGENT.secret}` } });
  await agent.connect();
}, 60_000);

afterAll(async () => {
  for (const s of streams) s.close();
  await agent?.close();
  await master?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe('authorization of apps and jobs', { timeout: 180_000 }, () => {
  it("keeps Alice's app and job from Bob, shows them to a viewer, and lets Alice do everything", async () => {
    const events = Object.fromEntries(await Promise.all(USERS.map(async (u) => {
      const s = await new EventStream('/v2/events', u).open();
      streams.push(s);
      return [u, s] as const;
    }))) as Record<User, EventStream>;
    for (const u of USERS) expect(events[u].status).toBe(200);

    // Alice creates an app and a job in the role 'ml'.
    expect((await call('alice', 'POST', '/v2/apps', { id: '/alice/web', cmd: 'sleep 1000', cpus: 0.1, mem: 32, instances: 2 })).status).toBe(201);
    const tasks = await waitForRunning('alice', '/alice/web', 2);
    await waitForNoDeployments('alice');
    const submitted = await call('alice', 'POST', '/api/v1/jobs', JOB('train', 'ml'));
    expect(submitted.status, JSON.stringify(submitted.body)).toBe(201);
    const job = await waitFor('the job running', async () => {
      const j = await call('alice', 'GET', '/api/v1/jobs/train');
      return j.body?.phase === 'Running' ? j.body : undefined;
    }, 30_000, 100);
    expect(job.owner).toBe('alice');
    const appBefore = (await call('alice', 'GET', '/v2/apps/alice/web')).body.app;
    const jobEvents = { alice: await new EventStream('/api/v1/jobs/train/events', 'alice').open(), viewer: await new EventStream('/api/v1/jobs/train/events', 'viewer').open() };
    streams.push(jobEvents.alice, jobEvents.viewer);

    // Bob sees none of it.
    expect((await call('bob', 'GET', '/v2/apps')).body.apps).toEqual([]);
    expect((await call('bob', 'GET', '/v2/apps/alice/*')).body.apps).toEqual([]);
    for (const path of ['/v2/apps/alice/web', '/v2/apps/alice/web/tasks', '/v2/apps/alice/web/versions', '/api/v1/jobs/train', '/api/v1/jobs/train/events']) {
      const r = await call('bob', 'GET', path);
      expect(r.status, path).toBe(403);
      expect(r.body.code, path).toBe('CAIRN_FORBIDDEN');
    }
    expect((await call('bob', 'GET', '/v2/tasks')).body.tasks).toEqual([]);
    expect((await call('bob', 'GET', '/v2/queue')).body.queue).toEqual([]);
    expect((await call('bob', 'GET', '/api/v1/jobs')).body.jobs).toEqual([]);

    // Bob changes none of it: every change refused with 403 naming the field.
    const refusedChanges: [string, string, unknown?][] = [
      ['PUT', '/v2/apps/alice/web', { instances: 5 }],
      ['PATCH', '/v2/apps/alice/web', { cmd: 'sleep 2000' }],
      ['PUT', '/v2/apps/alice/web?partialUpdate=false', { id: '/alice/web', cmd: 'evil', instances: 1 }],
      ['POST', '/v2/apps/alice/web/restart'],
      ['DELETE', `/v2/apps/alice/web/tasks/${tasks[0]}`],
      ['DELETE', `/v2/apps/alice/web/tasks/${tasks[0]}?scale=true`],
      ['DELETE', '/v2/apps/alice/web/tasks'],
      ['DELETE', '/v2/apps/alice/web'],
      ['DELETE', '/api/v1/jobs/train'],
    ];
    for (const [method, path, body] of refusedChanges) {
      const r = await call('bob', method, path, body);
      expect(r.status, `${method} ${path}`).toBe(403);
      expect(r.body.code, `${method} ${path}`).toBe('CAIRN_FORBIDDEN');
      expect(r.body.field, `${method} ${path}`).toMatch(/^(id|name)$/);
    }
    // Nor reaches their tasks through the master's own task API (they run as the built-in principal).
    const jobTask = job.replicas[0].taskId as string;
    for (const id of [tasks[0]!, jobTask]) {
      expect((await call('bob', 'GET', `/api/v1/tasks/${encodeURIComponent(id)}`)).status, id).toBe(403);
      expect((await call('bob', 'GET', `/api/v1/tasks/${encodeURIComponent(id)}/logs`)).status, id).toBe(403);
      expect((await call('bob', 'GET', `/api/v1/tasks/${encodeURIComponent(id)}/usage`)).status, id).toBe(403);
      expect((await call('bob', 'POST', `/api/v1/tasks/${encodeURIComponent(id)}/kill`)).status, id).toBe(403);
      expect((await call('viewer', 'POST', `/api/v1/tasks/${encodeURIComponent(id)}/kill`)).status, id).toBe(403);
      expect((await call('viewer', 'GET', `/api/v1/tasks/${encodeURIComponent(id)}`)).status, id).toBe(200);
      expect((await call('alice', 'GET', `/api/v1/tasks/${encodeURIComponent(id)}`)).status, id).toBe(200);
    }
    const stateTasks = async (u: User) => ((await call(u, 'GET', '/api/v1/state')).body.tasks as any[]).map((t) => t.id);
    expect(await stateTasks('bob')).not.toContain(tasks[0]);
    expect(await stateTasks('bob')).not.toContain(jobTask);
    for (const u of ['alice', 'viewer'] as const) expect(await stateTasks(u), u).toEqual(expect.arrayContaining([...tasks, jobTask]));
    // Nor creates in a role he may not register in.
    const inMl = await call('bob', 'POST', '/api/v1/jobs', JOB('bobs', 'ml'));
    expect(inMl.status).toBe(403);
    expect(inMl.body).toMatchObject({ code: 'CAIRN_FORBIDDEN', field: 'role' });
    expect((await call('bob', 'GET', '/api/v1/jobs/bobs')).status).toBe(404);

    // An app of Alice's that cannot be placed: its deployment and queue entry stay, and Bob sees neither.
    expect((await call('alice', 'POST', '/v2/apps', { id: '/alice/big', cmd: 'sleep 1000', cpus: 100, mem: 32 })).status).toBe(201);
    const queued = (u: User) => waitFor(`${u}'s queue`, async () => {
      const q = (await call(u, 'GET', '/v2/queue')).body.queue as any[];
      return q.length > 0 ? q.map((x) => x.app.id) : undefined;
    }, 30_000, 100);
    expect(await queued('alice')).toEqual(['/alice/big']);
    expect(await queued('viewer')).toEqual(['/alice/big']);
    expect((await call('bob', 'GET', '/v2/queue')).body.queue).toEqual([]);
    const deployment = ((await call('alice', 'GET', '/v2/deployments')).body as any[]).find((d) => d.affectedApps[0] === '/alice/big');
    expect(deployment).toBeDefined();
    expect((await call('viewer', 'GET', '/v2/deployments')).body.map((d: any) => d.id)).toEqual([deployment.id]);
    expect((await call('bob', 'GET', '/v2/deployments')).body).toEqual([]);
    expect((await call('bob', 'GET', `/v2/deployments/${deployment.id}`)).status).toBe(403);
    expect((await call('bob', 'DELETE', `/v2/deployments/${deployment.id}`)).status).toBe(403);
    expect((await call('viewer', 'DELETE', `/v2/deployments/${deployment.id}?force=true`)).status).toBe(403);
    expect((await call('viewer', 'GET', `/v2/deployments/${deployment.id}`)).status).toBe(200);
    expect((await call('alice', 'GET', `/v2/deployments/${deployment.id}`)).status).toBe(200);
    expect((await call('alice', 'DELETE', '/v2/apps/alice/big?force=true')).status).toBe(200);
    await waitFor('the big app gone', async () => ((await call('alice', 'GET', '/v2/apps/alice/big')).status === 404 ? true : undefined), 30_000);

    // The viewer sees Alice's app and job, and cannot change them or create anything.
    expect((await call('viewer', 'GET', '/v2/apps')).body.apps.map((a: any) => a.id)).toEqual(['/alice/web']);
    expect((await call('viewer', 'GET', '/v2/apps/alice/web')).body.app.tasks.map((t: any) => t.id).sort()).toEqual(tasks);
    expect((await call('viewer', 'GET', '/v2/tasks')).body.tasks.map((t: any) => t.id).sort()).toEqual(tasks);
    expect((await call('viewer', 'GET', '/api/v1/jobs')).body.jobs.map((j: any) => j.name)).toEqual(['train']);
    expect((await call('viewer', 'GET', '/api/v1/jobs/train')).status).toBe(200);
    expect(jobEvents.viewer.status).toBe(200);
    for (const [method, path, body] of refusedChanges) {
      expect((await call('viewer', method, path, body)).status, `viewer ${method} ${path}`).toBe(403);
    }
    const viewerApp = await call('viewer', 'POST', '/v2/apps', { id: '/viewer/x', cmd: 'sleep 1000', cpus: 0.1, mem: 32 });
    expect(viewerApp.status).toBe(403);
    expect(viewerApp.body.field).toBe('role');

    // Nothing changed by any refusal.
    expect((await call('alice', 'GET', '/v2/apps/alice/web')).body.app).toMatchObject({ version: appBefore.version, instances: 2, cmd: 'sleep 1000' });
    expect(await runningTaskIds('alice', '/alice/web')).toEqual(tasks);
    expect(agent.killed).toEqual([]);
    expect((await call('alice', 'GET', '/api/v1/jobs/train')).body.phase).toBe('Running');

    // An app made before owners were kept is owned by nobody: even Alice and the viewer do not see it.
    await new RegistryFrameworkStore(master.context.registry, 'marathon').put(appKey('/old'), { app: parseApp({ id: '/old', cmd: 'true', instances: 0 }).app, version: '2020-01-01T00:00:00.000Z', configVersion: '2020-01-01T00:00:00.000Z' } as any);
    expect((await call('alice', 'GET', '/v2/apps/old')).status).toBe(403);
    expect((await call('alice', 'DELETE', '/v2/apps/old')).status).toBe(403);
    expect((await call('viewer', 'GET', '/v2/apps')).body.apps.map((a: any) => a.id)).toEqual(['/alice/web']);

    // Bob's own app is his: he sees it, Alice does not.
    expect((await call('bob', 'POST', '/v2/apps', { id: '/bob/svc', cmd: 'sleep 1000', cpus: 0.1, mem: 32 })).status).toBe(201);
    await waitForRunning('bob', '/bob/svc', 1);
    expect((await call('bob', 'GET', '/v2/apps')).body.apps.map((a: any) => a.id)).toEqual(['/bob/svc']);
    expect((await call('alice', 'GET', '/v2/apps')).body.apps.map((a: any) => a.id)).toEqual(['/alice/web']);

    // Alice can do all of it.
    expect((await call('alice', 'PUT', '/v2/apps/alice/web', { instances: 1 })).status).toBe(200);
    await waitForRunning('alice', '/alice/web', 1);
    await waitForNoDeployments('alice');
    expect((await call('alice', 'POST', '/v2/apps/alice/web/restart')).status).toBe(200);
    await waitForNoDeployments('alice');
    const [victim] = await waitForRunning('alice', '/alice/web', 1);
    expect((await call('alice', 'DELETE', `/v2/apps/alice/web/tasks/${victim}`)).status).toBe(200);
    expect((await call('alice', 'DELETE', '/api/v1/jobs/train')).status).toBe(200);
    await waitFor("the job's removal in its stream", () => (jobEvents.alice.text.includes('event: removed') ? true : undefined), 30_000);
    expect((await call('alice', 'DELETE', '/v2/apps/alice/web')).status).toBe(200);
    await waitFor('the app gone', async () => ((await call('alice', 'GET', '/v2/apps/alice/web')).status === 404 ? true : undefined), 30_000);
    await waitForNoDeployments('alice');

    // Each stream carried only the apps its caller may view.
    await waitFor("the app's stop in Alice's stream", () => (/event: deployment_success[^\n]*\ndata: [^\n]*StopApplication[^\n]*\/alice\/web/.test(events.alice.text) ? true : undefined), 30_000);
    for (const u of ['alice', 'viewer'] as const) {
      expect(events[u].text, u).toMatch(/event: api_post_event\ndata: [^\n]*"\/alice\/web"/);
      expect(events[u].text, u).toMatch(/event: status_update_event\ndata: [^\n]*"appId":"\/alice\/web"/);
      expect(events[u].text, u).not.toContain('/bob/svc');
    }
    expect(events.bob.text).toMatch(/event: status_update_event\ndata: [^\n]*"appId":"\/bob\/svc"/);
    expect(events.bob.text).not.toContain('/alice/web');
    expect(jobEvents.alice.text).toMatch(/event: replica\ndata: [^\n]*"job":"train"/);
    expect(jobEvents.viewer.text).toMatch(/event: replica\ndata: [^\n]*"job":"train"/);

    // Every change is audited with its principal, refused ones too.
    const audit = logLines.filter((l) => l.includes('"audit"'));
    expect(audit.some((l) => /"principal":"bob".*"method":"DELETE".*"path":"\/v2\/apps\/alice\/web".*"status":403/.test(l))).toBe(true);
    expect(audit.some((l) => /"principal":"bob".*"method":"POST".*"path":"\/api\/v1\/jobs".*"status":403/.test(l))).toBe(true);
    expect(audit.some((l) => /"principal":"alice".*"method":"DELETE".*"path":"\/api\/v1\/jobs\/train".*"status":200/.test(l))).toBe(true);
    expect(audit.some((l) => /"principal":"alice".*"method":"PUT".*"path":"\/v2\/apps\/alice\/web".*"status":200/.test(l))).toBe(true);
  });

  it("keeps Alice's experiment and its trials from Bob, shows them to a viewer, and lets Alice stop and delete it", async () => {
    const doc = (role: string) => ({
      kind: 'Experiment', metadata: { name: 'search' },
      spec: {
        role, objective: { type: 'maximize', objectiveMetricName: 'accuracy' }, parallelTrialCount: 1, maxTrialCount: 3,
        parameters: [{ name: 'lr', parameterType: 'double', feasibleSpace: { min: '0.1', max: '0.9' } }],
        trialTemplate: { command: 'sleep 1000; echo accuracy=${lr}', resources: { cpus: 0.1, memory: 32 } },
      },
    });
    const refused = await call('bob', 'POST', '/api/v1/experiments', doc('ml'));
    expect(refused.status).toBe(403);
    expect(refused.body).toMatchObject({ code: 'CAIRN_FORBIDDEN', field: 'spec.role' });
    const submitted = await call('alice', 'POST', '/api/v1/experiments', doc('ml'));
    expect(submitted.status, JSON.stringify(submitted.body)).toBe(201);
    const running = await waitFor('a trial running', async () => {
      const r = await call('alice', 'GET', '/api/v1/experiments/search');
      return r.body?.trials?.[0]?.state === 'Running' ? r.body : undefined;
    }, 30_000, 100);
    expect(running.owner).toBe('alice');
    const trialTask = running.trials[0].taskId as string;

    expect((await call('bob', 'GET', '/api/v1/experiments')).body.experiments).toEqual([]);
    expect((await call('viewer', 'GET', '/api/v1/experiments')).body.experiments.map((e: { name: string }) => e.name)).toEqual(['search']);
    expect((await call('viewer', 'GET', '/api/v1/experiments/search')).status).toBe(200);
    for (const [user, method, path] of [
      ['bob', 'GET', '/api/v1/experiments/search'],
      ['bob', 'GET', '/api/v1/experiments/search/events'],
      ['bob', 'POST', '/api/v1/experiments/search/stop'],
      ['bob', 'POST', '/api/v1/experiments/search/resume'],
      ['bob', 'DELETE', '/api/v1/experiments/search'],
      ['viewer', 'POST', '/api/v1/experiments/search/stop'],
      ['viewer', 'DELETE', '/api/v1/experiments/search'],
    ] as const) {
      const r = await call(user, method, path);
      expect(r.status, `${user} ${method} ${path}`).toBe(403);
      expect(r.body.code).toBe('CAIRN_FORBIDDEN');
    }
    // Its trial's task is Alice's on the master's own task API, though it runs as the built-in principal.
    expect((await call('bob', 'GET', `/api/v1/tasks/${encodeURIComponent(trialTask)}`)).status).toBe(403);
    expect((await call('bob', 'POST', `/api/v1/tasks/${encodeURIComponent(trialTask)}/kill`)).status).toBe(403);
    expect((await call('viewer', 'GET', `/api/v1/tasks/${encodeURIComponent(trialTask)}`)).status).toBe(200);
    expect((await call('alice', 'GET', `/api/v1/tasks/${encodeURIComponent(trialTask)}`)).status).toBe(200);
    expect((await call('alice', 'GET', '/api/v1/experiments/search')).body.phase).toBe('Running');

    expect((await call('alice', 'POST', '/api/v1/experiments/search/stop')).status).toBe(200);
    await waitFor('the trial killed', async () => ((await call('alice', 'GET', '/api/v1/experiments/search')).body.trials[0].state === 'Killed' ? true : undefined), 30_000, 100);
    expect((await call('alice', 'DELETE', '/api/v1/experiments/search')).status).toBe(200);
    expect((await call('alice', 'GET', '/api/v1/experiments/search')).status).toBe(404);
  });
});
