// Bad input about sharing is refused naming the field, and nothing is stored: an unknown
// priority class wherever work names one (a job, an experiment, an app, a framework's
// subscription), a REQUEST without resources, a quota whose child exceeds its parent or
// whose guarantee is negative. Seed 002's class names (Production, Iteration, PTR), in any
// case, are taken wherever a class is named and stored as Cairn's. A master in this process,
// authentication off.

import { afterEach, describe, expect, it } from 'vitest';
import { rmSync } from 'node:fs';
import { startMaster, type MasterHandle } from '../../master/server.ts';
import { MasterAuth } from '../../master/auth/master-auth.ts';
import { silentLogger } from '../../shared/logger.ts';
import { tempDir, waitFor } from '../harness/processes.ts';
import { PriorityClasses } from '../../shared/sharing/priority-classes.ts';
import { RawScheduler } from '../harness/raw-scheduler.ts';

let master: MasterHandle | undefined;
let dir = '';
afterEach(async () => {
  await master?.stop();
  master = undefined;
  if (dir) rmSync(dir, { recursive: true, force: true });
});

async function send(method: string, path: string, body: unknown): Promise<{ status: number; body: any }> {
  const init: RequestInit = body === undefined
    ? { method, headers: { accept: 'application/json' } }
    : { method, headers: { 'content-type': 'application/json', accept: 'application/json' }, body: JSON.stringify(body) };
  const res = await fetch(`${master!.url}${path}`, init);
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
}

describe('sharing: bad input', () => {
  it('refuses an unknown class, a child quota above its parent and a negative guarantee, naming the field; stores nothing', async () => {
    dir = tempDir();
    master = await startMaster({ auth: MasterAuth.off(), dataDir: dir, port: 0, host: '127.0.0.1', dnsPort: null, logger: silentLogger() });
    const state = master.context.registry.state;

    const job = await send('POST', '/api/v1/jobs', { name: 'j', kind: 'batch', priorityClassName: 'urgent', groups: [{ name: 'w', replicas: 1, template: { command: 'true' } }] });
    expect(job.status).toBe(400);
    expect(job.body).toMatchObject({ field: 'priorityClassName' });
    expect(job.body.message).toMatch(/unknown priority class 'urgent'.*production, iteration, research/);
    expect(state.builtin.get('jobs')?.has('job/j') ?? false).toBe(false);

    const exp = await send('POST', '/api/v1/experiments', {
      metadata: { name: 'e' },
      spec: { priorityClassName: 'urgent', objective: { metricName: 'loss', type: 'minimize' }, algorithm: { algorithmName: 'random' }, parameters: [{ name: 'x', parameterType: 'double', feasibleSpace: { min: '0', max: '1' } }], trialTemplate: { command: 'echo loss=${x}' } },
    });
    expect(exp.status).toBe(400);
    expect(exp.body).toMatchObject({ field: 'spec.priorityClassName' });

    const app = await send('POST', '/v2/apps', { id: '/a', cmd: 'sleep 1', cpus: 0.1, mem: 32, labels: { 'cairn.priority-class': 'urgent' } });
    expect(app.status).toBe(400);
    expect(JSON.stringify(app.body)).toMatch(/labels\/cairn\.priority-class/);
    const app2 = await send('POST', '/v2/apps', { id: '/a', cmd: 'sleep 1', cpus: 0.1, mem: 32, labels: { 'cairn.preemptible': 'no' } });
    expect(app2.status).toBe(400);
    expect(JSON.stringify(app2.body)).toMatch(/labels\/cairn\.preemptible/);

    const sub = await send('POST', '/api/v1/scheduler', { type: 'SUBSCRIBE', subscribe: { framework_info: { user: 'u', name: 'f', labels: { labels: [{ key: 'cairn.priority-class', value: 'urgent' }] } } } });
    expect(sub.status).toBe(400);
    expect(sub.body).toMatchObject({ field: 'subscribe.framework_info.labels' });
    expect([...state.frameworks.values()].filter((f) => f.name === 'f')).toEqual([]);

    expect((await send('PUT', '/api/v1/quotas/team', { limit: { gpus: 8 } })).status).toBe(200);
    const child = await send('PUT', `/api/v1/quotas/${encodeURIComponent('team/a')}`, { limit: { gpus: 16 } });
    expect(child.status).toBe(400);
    expect(child.body).toMatchObject({ field: 'limit.gpus' });
    expect(child.body.message).toMatch(/team\/a.*16.*team.*8/);
    const negative = await send('PUT', '/api/v1/quotas/other', { guarantee: { cpus: -2 } });
    expect(negative.status).toBe(400);
    expect(negative.body).toMatchObject({ field: 'guarantee.cpus' });
    const badRole = await send('PUT', `/api/v1/quotas/${encodeURIComponent('team//x')}`, { limit: { cpus: 1 } });
    expect(badRole.status).toBe(400);
    expect(badRole.body).toMatchObject({ field: 'role' });
    expect([...state.quotas.keys()]).toEqual(['team']);
    expect((await send('DELETE', '/api/v1/quotas/nobody', undefined)).status).toBe(404);
  }, 60_000);
});

describe("sharing: seed 002's class names", () => {
  it('takes Production, Iteration and PTR in any case for jobs, experiments, apps and frameworks, storing production, iteration and research; Iteration as the default', async () => {
    dir = tempDir();
    // Seed 002's setting: Iteration is the default class.
    master = await startMaster({ auth: MasterAuth.off(), dataDir: dir, port: 0, host: '127.0.0.1', dnsPort: null, logger: silentLogger(), priorityClasses: new PriorityClasses(undefined, 'Iteration') });
    const state = master.context.registry.state;
    const job = (name: string, priorityClassName: string) => send('POST', '/api/v1/jobs', { name, kind: 'batch', priorityClassName, groups: [{ name: 'w', replicas: 1, template: { command: 'true' } }] });
    const classOfJob = async (name: string) => (await send('GET', `/api/v1/jobs/${name}`, undefined)).body.spec.priorityClass;

    expect((await job('ptr', 'PTR')).status).toBe(201);
    expect(await classOfJob('ptr')).toBe('research');
    expect((await job('prod', 'Production')).status).toBe(201);
    expect(await classOfJob('prod')).toBe('production');
    // The default class is stored as none.
    expect((await job('iter', 'ITERATION')).status).toBe(201);
    expect(await classOfJob('iter')).toBeUndefined();

    const unknown = await job('nope', 'Urgent');
    expect(unknown.status).toBe(400);
    expect(unknown.body).toMatchObject({ field: 'priorityClassName' });
    expect(unknown.body.message).toMatch(/unknown priority class 'Urgent'.*PTR is research/);

    const exp = await send('POST', '/api/v1/experiments', {
      metadata: { name: 'e' },
      spec: { priorityClassName: 'ptr', objective: { metricName: 'loss', type: 'minimize' }, algorithm: { algorithmName: 'random' }, parameters: [{ name: 'x', parameterType: 'double', feasibleSpace: { min: '0', max: '1' } }], trialTemplate: { command: 'echo loss=${x}' } },
    });
    expect(exp.status).toBe(201);
    expect((await send('GET', '/api/v1/experiments/e', undefined)).body.spec.priorityClass).toBe('research');

    expect((await send('POST', '/v2/apps', { id: '/a', cmd: 'sleep 1', cpus: 0.1, mem: 32, labels: { 'cairn.priority-class': 'PTR' } })).status).toBe(201);

    const fw = new RawScheduler(master.url, {});
    try {
      expect(await fw.subscribe({ user: 'u', name: 'prod-fw', labels: { labels: [{ key: 'cairn.priority-class', value: 'Production' }] } })).toEqual({ status: 200 });
      expect(await waitFor('the framework recorded', () => state.frameworks.get(fw.frameworkId))).toMatchObject({ priorityClass: 'production' });
    } finally {
      fw.close();
    }
    const roles = await send('GET', '/api/v1/roles?usage=false', undefined);
    expect(roles.body.priorityClasses).toEqual({ names: ['production', 'iteration', 'research'], default: 'iteration' });
  }, 60_000);
});
