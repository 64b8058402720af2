// Sharing a full cluster, as real processes: a master and two agents, a cluster full of
// research batch work and a service that may not be preempted (the classes named as seed 002
// names them, Production and PTR). A production job that needs
// half the cluster gets it by preemption — exactly as many victims as it needs, never the
// service — and the research job it displaced runs again afterwards, no failure counted.
// Then quotas: a role below its guarantee takes it back from others, a role at its limit is
// offered no more, and a child's quota cannot exceed its parent's.

import { describe, expect, it } from 'vitest';
import { authFetch } from '../harness/credentials.ts';
import { Cleanup, startAgentProcess, startMasterProcess, waitFor } from '../harness/processes.ts';
import type { JobView } from '../../shared/jobs/model.ts';
import type { PreemptionRecord } from '../../master/registry/commands.ts';

/** The preemption grace the master is started with: victims here end on SIGTERM at once. */
const GRACE_MS = 2_000;

/** A master and `agents` agents of 4 cpus, tracked by the test's own `cleanup`. */
async function cluster(cleanup: Cleanup, agents: number) {
  const master = await startMasterProcess(cleanup, { extra: ['--preemption-grace', `${GRACE_MS}ms`] });
  for (let i = 0; i < agents; i++) await startAgentProcess(cleanup, master.url, { resources: 'cpus:4;mem:2048;ports:[31000-31049]' });
  await waitFor('agents registered', async () => {
    const st = (await (await authFetch(`${master.url}/api/v1/state`)).json()) as { agents: { connected: boolean }[] };
    return st.agents.filter((a) => a.connected).length === agents || undefined;
  });
  return master.url;
}

async function post(url: string, body: unknown): Promise<Response> {
  return authFetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
}

async function job(url: string, name: string): Promise<JobView> {
  return (await (await authFetch(`${url}/api/v1/jobs/${name}`)).json()) as JobView;
}

async function submitJob(url: string, spec: Record<string, unknown>): Promise<void> {
  const res = await post(`${url}/api/v1/jobs`, spec);
  expect(res.status, await res.clone().text()).toBe(201);
}

function batch(name: string, replicas: number, command: string, more: Record<string, unknown> = {}) {
  return { name, kind: 'batch', minAvailable: 1, groups: [{ name: 'w', replicas, restartPolicy: 'OnFailure', template: { command, cpus: 1, mem: 256, ports: 1 } }], ...more };
}

async function runningTasks(url: string): Promise<{ id: string; state: string; frameworkId: string; resources: string }[]> {
  const st = (await (await authFetch(`${url}/api/v1/state`)).json()) as { tasks: { id: string; state: string; frameworkId: string; resources: string }[] };
  return st.tasks.filter((t) => t.state === 'TASK_RUNNING' || t.state === 'TASK_STAGING' || t.state === 'TASK_STARTING');
}

// The two tests run side by side, each on a cluster of its own: most of their time is tasks
// sleeping (the research work, the production job, the others filling the cluster), and the
// moments they time are a few seconds long against bounds of 12 s.
describe.concurrent('preemption and quotas (real processes)', () => {
  it('a production job preempts exactly enough research tasks, never the non-preemptible service; the research job runs again later', async ({ onTestFinished }) => {
    const cleanup = new Cleanup();
    onTestFinished(() => cleanup.run());
    const url = await cluster(cleanup, 2); // 8 cpus in all
    // The service first: one instance that must never be preempted.
    const app = await post(`${url}/v2/apps`, { id: '/keeper', cmd: 'sleep 600', cpus: 1, mem: 128, instances: 1, labels: { 'cairn.preemptible': 'false' } });
    expect(app.status, await app.clone().text()).toBe(201);
    // Research work fills the other 7 cpus (its class by seed 002's name: PTR is research).
    await submitJob(url, batch('research', 7, 'sleep 12', { priorityClassName: 'PTR' }));
    await waitFor('the cluster full', async () => {
      const r = await job(url, 'research');
      return (r.replicas.filter((x) => x.state === 'Running').length === 7 && (await runningTasks(url)).length === 8) || undefined;
    }, 60_000);

    // Half of the cluster, all at once (a gang of 4).
    const submitted = Date.now();
    await submitJob(url, {
      name: 'prod', kind: 'pytorch', priorityClassName: 'Production',
      groups: [{ name: 'master', replicas: 1, template: { command: 'sleep 4', cpus: 1, mem: 256, ports: 1 } }, { name: 'worker', replicas: 3, template: { command: 'sleep 4', cpus: 1, mem: 256, ports: 1 } }],
    });
    await waitFor('prod running', async () => ((await job(url, 'prod')).phase === 'Running' || (await job(url, 'prod')).phase === 'Succeeded') || undefined, 60_000);
    const startedInMs = Date.now() - submitted;
    // The gang's gathering window (2 s) ends, it asks, the victims get SIGTERM and end at
    // once, their agents are kept for it: a few seconds, far below the research sleep.
    console.log(`production job running ${startedInMs} ms after its submission (grace ${GRACE_MS} ms)`);
    expect(startedInMs).toBeLessThan(GRACE_MS + 10_000);

    const { preemptions } = (await (await authFetch(`${url}/api/v1/preemptions`)).json()) as { preemptions: PreemptionRecord[] };
    expect(preemptions).toHaveLength(1);
    const p = preemptions[0]!;
    expect(p).toMatchObject({ cause: 'priority', preemptor: { priorityClass: 'production', for: 'job prod' } });
    // Exactly enough: 4 cpus were needed and nothing was free.
    expect(p.victims).toHaveLength(4);
    expect(p.victims.every((v) => v.taskId.startsWith('research.') && v.priorityClass === 'research')).toBe(true);
    const st = (await (await authFetch(`${url}/api/v1/state`)).json()) as { tasks: { id: string; state: string; labels?: { name: string; value: string }[]; message: string }[] };
    const keeper = st.tasks.filter((t) => t.id.startsWith('keeper.'));
    expect(keeper.map((t) => t.state)).toEqual(['TASK_RUNNING']);
    for (const v of p.victims) {
      const t = st.tasks.find((x) => x.id === v.taskId)!;
      expect(t.state).toBe('TASK_KILLED');
      expect(t.message).toMatch(/preempted for job prod/);
    }
    const research = await job(url, 'research');
    expect(research.restarts).toBe(0);
    expect(research.replicas.filter((x) => x.state === 'Pending')).toHaveLength(4);

    // prod ends; the preempted replicas run again and the research job succeeds, no failure counted.
    await waitFor('prod succeeded', async () => (await job(url, 'prod')).phase === 'Succeeded' || undefined, 60_000);
    const done = await waitFor('research succeeded', async () => {
      const r = await job(url, 'research');
      if (r.phase === 'Failed') throw new Error(`research failed: ${r.message}`);
      return r.phase === 'Succeeded' ? r : undefined;
    }, 90_000);
    expect(done.restarts).toBe(0);
    // Still one preemption: the requeued research work never displaced anything.
    const after = (await (await authFetch(`${url}/api/v1/preemptions`)).json()) as { preemptions: PreemptionRecord[] };
    expect(after.preemptions).toHaveLength(1);
    expect((await runningTasks(url)).map((t) => t.id.split('.')[0])).toEqual(['keeper']);
  }, 240_000);

  it('a role takes back its guarantee; a role at its limit is offered no more; a child quota cannot exceed its parent', async ({ onTestFinished }) => {
    const cleanup = new Cleanup();
    onTestFinished(() => cleanup.run());
    const url = await cluster(cleanup, 1); // 4 cpus
    const put = (role: string, body: unknown) => authFetch(`${url}/api/v1/quotas/${encodeURIComponent(role)}`, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

    // A limit: the capped role never holds more than 2 cpus, though 4 are free.
    expect((await put('capped', { limit: { cpus: 2 } })).status).toBe(200);
    await submitJob(url, batch('capped-work', 4, 'sleep 3', { role: 'capped' }));
    let most = 0;
    await waitFor('capped-work done', async () => {
      const r = await job(url, 'capped-work');
      most = Math.max(most, r.replicas.filter((x) => x.state === 'Running' || x.state === 'Starting').length);
      if (r.phase === 'Failed') throw new Error(`capped-work failed: ${r.message}`);
      return r.phase === 'Succeeded' || undefined;
    }, 90_000, 100);
    expect(most).toBe(2);

    // The hierarchy: a child above its parent's limit is refused, naming the field; nothing is stored.
    expect((await put('team', { guarantee: { cpus: 2 }, limit: { cpus: 4 } })).status).toBe(200);
    const over = await put('team/alice', { limit: { cpus: 8 } });
    expect(over.status).toBe(400);
    expect(await over.json()).toMatchObject({ field: 'limit.cpus' });
    const bad = await put('team/bob', { guarantee: { cpus: -1 } });
    expect(bad.status).toBe(400);
    expect(await bad.json()).toMatchObject({ field: 'guarantee.cpus' });
    const quotas = (await (await authFetch(`${url}/api/v1/quotas`)).json()) as { quotas: { role: string }[] };
    expect(quotas.quotas.map((q) => q.role)).toEqual(['capped', 'team']);

    // A guarantee: others fill the cluster; team asks for its 2 cpus and gets them back within seconds.
    await submitJob(url, batch('others', 4, 'sleep 20', { role: 'others' }));
    await waitFor('others fill the cluster', async () => (await job(url, 'others')).replicas.filter((x) => x.state === 'Running').length === 4 || undefined, 60_000);
    const asked = Date.now();
    await submitJob(url, { ...batch('team-work', 2, 'sleep 2', { role: 'team/alice' }), minAvailable: 2 });
    await waitFor('team-work running', async () => ['Running', 'Succeeded'].includes((await job(url, 'team-work')).phase) || undefined, 60_000);
    console.log(`team/alice had its guarantee back ${Date.now() - asked} ms after asking`);
    expect(Date.now() - asked).toBeLessThan(GRACE_MS + 10_000);
    const { preemptions } = (await (await authFetch(`${url}/api/v1/preemptions`)).json()) as { preemptions: PreemptionRecord[] };
    expect(preemptions).toHaveLength(1);
    expect(preemptions[0]).toMatchObject({ cause: 'guarantee', preemptor: { role: 'team/alice' } });
    expect(preemptions[0]!.victims.map((v) => v.role)).toEqual(['others', 'others']);

    // The usage view shows the quota and what the roles hold.
    const roles = (await (await authFetch(`${url}/api/v1/roles`)).json()) as { roles: { role: string; guarantee: unknown; limit: unknown; allocated: { cpus: number } }[] };
    const team = roles.roles.find((r) => r.role === 'team')!;
    expect(team).toMatchObject({ guarantee: { cpus: 2 }, limit: { cpus: 4 } });
    expect(roles.roles.find((r) => r.role === 'others')!.allocated.cpus).toBeLessThanOrEqual(2);
  }, 240_000);
});
