// The master's /metrics with work of every kind present, as real processes (a master, an
// agent): apps (one running, one whose instance waits), jobs (one running in a role with a
// quota, one queued that fits the agent but not what is free), an experiment whose trial ran, and a production job that preempted
// research work. Each new family is there with the values the scenario makes, the whole
// text passes `promtool check metrics`, and the Grafana dashboard in deploy/ reads only
// metrics this master exports.

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { authFetch } from '../harness/credentials.ts';
import { Cleanup, startAgentProcess, startMasterProcess, waitFor, type CairnProcess } from '../harness/processes.ts';
import { familyTypes, promtool, promtoolProblems, sample, sampleNames } from '../harness/prometheus-text.ts';
import { dashboardExpressions, promqlMetricNames } from '../harness/promql-names.ts';

const cleanup = new Cleanup();
let master: CairnProcess;
const MIB = 1024 * 1024;

async function send(method: string, path: string, body?: unknown): Promise<{ status: number; body: any }> {
  const r = await authFetch(`${master.url}${path}`, { method, ...(body === undefined ? {} : { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }) });
  const text = await r.text();
  return { status: r.status, body: text === '' ? undefined : JSON.parse(text) };
}

async function metricsText(): Promise<string> {
  const r = await authFetch(`${master.url}/metrics`);
  expect(r.status).toBe(200);
  return r.text();
}

const job = (name: string, cpus: number, more: Record<string, unknown> = {}) => ({
  name, kind: 'batch', groups: [{ name: 'w', replicas: 1, template: { command: 'sleep 600', cpus, mem: 32 } }], ...more,
});

async function jobPhase(name: string): Promise<string | undefined> {
  return (await send('GET', `/api/v1/jobs/${name}`)).body?.phase;
}

let text = '';

beforeAll(async () => {
  // The preemption's victims end on SIGTERM at once; a short grace keeps the test quick.
  master = await startMasterProcess(cleanup, { extra: ['--preemption-grace', '1s'] });
  await startAgentProcess(cleanup, master.url, { resources: 'cpus:2;mem:2048;disk:1024;ports:[31000-31009]', extra: ['--usage-interval', '200ms'] });

  // Role ml: a quota naming a CPU guarantee, and CPU and memory limits.
  expect((await send('PUT', '/api/v1/quotas/ml', { guarantee: { cpus: 0.5 }, limit: { cpus: 1, mem: 512 } })).status).toBe(200);
  const app = await send('POST', '/v2/apps', { id: '/metrics-web', cmd: 'sleep 600', cpus: 0.1, mem: 32, instances: 1, labels: { 'cairn.preemptible': 'false' } });
  expect(app.status, JSON.stringify(app.body)).toBe(201);
  const small = await send('POST', '/api/v1/jobs', job('small', 0.2, { role: 'ml' }));
  expect(small.status, JSON.stringify(small.body)).toBe(201);
  const exp = await send('POST', '/api/v1/experiments', {
    kind: 'Experiment', metadata: { name: 'search' },
    spec: {
      objective: { type: 'maximize', objectiveMetricName: 'accuracy' }, parallelTrialCount: 1, maxTrialCount: 1,
      parameters: [{ name: 'lr', parameterType: 'double', feasibleSpace: { min: '0.1', max: '0.9' } }],
      trialTemplate: { command: 'echo accuracy=${lr}', resources: { cpus: 0.1, memory: 32 } },
    },
  });
  expect(exp.status, JSON.stringify(exp.body)).toBe(201);
  await waitFor('the small job running', async () => (await jobPhase('small')) === 'Running' || undefined, 60_000);
  await waitFor('the experiment ended', async () => {
    const e = (await send('GET', '/api/v1/experiments/search')).body;
    return (e?.phase !== undefined && e.phase !== 'Running') || undefined;
  }, 60_000);

  // Research work (the default class) takes the rest: 2 - 0.1 - 0.2 = 1.7 CPUs.
  expect((await send('POST', '/api/v1/jobs', job('filler', 1.7))).status).toBe(201);
  await waitFor('the filler running', async () => (await jobPhase('filler')) === 'Running' || undefined, 60_000);
  // A production job finds nothing free: the filler is preempted for it.
  expect((await send('POST', '/api/v1/jobs', job('urgent', 1, { priorityClassName: 'production' }))).status).toBe(201);
  await waitFor('the urgent job running', async () => (await jobPhase('urgent')) === 'Running' || undefined, 60_000);
  // Fits the agent (2 CPUs) but not what is free (0.7): it waits, and preempts no one (research is the lowest class).
  expect((await send('POST', '/api/v1/jobs', job('big', 1.5))).status).toBe(201);
  await waitFor('the big job queued', async () => (await jobPhase('big')) === 'Queued' || undefined, 30_000);

  // An app whose instance fits the agent but not what is free: it waits in the launch queue.
  const waiting = await send('POST', '/v2/apps', { id: '/metrics-wait', cmd: 'sleep 600', cpus: 1, mem: 32, instances: 1 });
  expect(waiting.status, JSON.stringify(waiting.body)).toBe(201);

  // The agent's usage report is in (the dashboard reads it); the big job and the app's
  // instance have waited a while (an app's wait is seen from one scrape to the next).
  text = await waitFor('the queued job and app instance waiting and a usage report in', async () => {
    const t = await metricsText();
    const waited = (sample(t, 'cairn_jobs_queued_oldest_wait_seconds') ?? 0) > 0.5 && (sample(t, 'cairn_app_instances_queued_oldest_wait_seconds') ?? 0) > 0.5;
    return waited && t.includes('\ncairn_master_agent_cpus_used{') ? t : undefined;
  }, 30_000, 250);
}, 240_000);

afterAll(async () => {
  await cleanup.run();
}, 60_000);

describe("the master's /metrics with jobs, an app, an experiment and a preemption", () => {
  it('passes promtool, counters end in _total and only counters do', () => {
    if (promtool) expect(promtoolProblems(text)).toBe('');
    for (const [name, type] of familyTypes(text)) expect(name.endsWith('_total'), `${name} is a ${type}`).toBe(type === 'counter');
  });

  it('jobs by phase, and the queued job with how long it has waited', () => {
    const types = familyTypes(text);
    expect(types.get('cairn_jobs')).toBe('gauge');
    // small and urgent run; filler (preempted) waits to be placed again, or runs again queued; big is queued.
    expect(sample(text, 'cairn_jobs{phase="Running"}')).toBeGreaterThanOrEqual(2);
    expect(sample(text, 'cairn_jobs{phase="Queued"}')).toBeGreaterThanOrEqual(1);
    expect(sample(text, 'cairn_jobs{phase="Failed"}')).toBe(0);
    const all = ['Created', 'Queued', 'Running', 'Restarting', 'Succeeded', 'Failed'].reduce((n, p) => n + sample(text, `cairn_jobs{phase="${p}"}`)!, 0);
    expect(all).toBe(4);
    expect(sample(text, 'cairn_jobs_queued')).toBeGreaterThanOrEqual(1);
    expect(sample(text, 'cairn_jobs_queued')).toBe(sample(text, 'cairn_jobs{phase="Queued"}'));
    expect(sample(text, 'cairn_jobs_queued_oldest_wait_seconds')).toBeGreaterThan(0.5);
    expect(sample(text, 'cairn_jobs_queued_oldest_wait_seconds')).toBeLessThan(240);
    // small, filler and urgent were placed: their waits counted, none negative, none past the test.
    expect(types.get('cairn_jobs_queue_wait_seconds')).toBe('histogram');
    expect(sample(text, 'cairn_jobs_queue_wait_seconds_count')).toBeGreaterThanOrEqual(3);
    expect(sample(text, 'cairn_jobs_queue_wait_seconds_bucket{le="+Inf"}')).toBe(sample(text, 'cairn_jobs_queue_wait_seconds_count'));
    expect(sample(text, 'cairn_jobs_queue_wait_seconds_sum')).toBeGreaterThanOrEqual(0);
    expect(sample(text, 'cairn_jobs_queue_wait_seconds_sum')).toBeLessThan(240 * sample(text, 'cairn_jobs_queue_wait_seconds_count')!);
  });

  it('experiments by phase, trials by state, and the trial\'s wait to start', () => {
    expect(sample(text, 'cairn_experiments{phase="Running"}')).toBe(0);
    expect(['Succeeded', 'Failed', 'Stopped'].reduce((n, p) => n + sample(text, `cairn_experiments{phase="${p}"}`)!, 0)).toBe(1);
    expect(sample(text, 'cairn_trials{state="Succeeded"}')).toBe(1);
    expect(sample(text, 'cairn_trials{state="Pending"}')).toBe(0);
    expect(sample(text, 'cairn_trials_queued')).toBe(0);
    expect(sample(text, 'cairn_trials_queued_oldest_wait_seconds')).toBe(0);
    expect(sample(text, 'cairn_trials_queue_wait_seconds_count')).toBe(1);
  });

  it('apps and their launch queue', async () => {
    expect(sample(text, 'cairn_apps')).toBe(2);
    // /metrics-web runs; /metrics-wait's one instance waits.
    expect(sample(text, 'cairn_app_instances_queued')).toBe(1);
    expect(sample(text, 'cairn_app_instances_queued_oldest_wait_seconds')).toBeGreaterThan(0.5);
    expect(sample(text, 'cairn_app_instances_queued_oldest_wait_seconds')).toBeLessThan(60);
    // Scaled to none (forced: its deployment never ends), nothing waits any more.
    expect((await send('PUT', '/v2/apps/metrics-wait?force=true', { instances: 0 })).status).toBeLessThan(300);
    await waitFor('the launch queue empty', async () => {
      const t = await metricsText();
      return (sample(t, 'cairn_app_instances_queued') === 0 && sample(t, 'cairn_app_instances_queued_oldest_wait_seconds') === 0) || undefined;
    }, 20_000);
  });

  it('the preemption, by cause and class, and its victims', async () => {
    const { preemptions } = (await send('GET', '/api/v1/preemptions')).body as { preemptions: { cause: string; victims: { priorityClass: string }[] }[] };
    expect(preemptions).toHaveLength(1);
    expect(sample(text, 'cairn_master_preemptions_total{cause="priority",priority_class="production"}')).toBe(1);
    expect(sample(text, 'cairn_master_preempted_tasks_total{cause="priority",priority_class="research"}')).toBe(preemptions[0]!.victims.length);
  });

  it('per role: allocated beside the quota\'s guarantee and limits, in base units', () => {
    expect(sample(text, 'cairn_master_role_cpus{role="ml",kind="allocated"}')).toBeCloseTo(0.2, 6);
    expect(sample(text, 'cairn_master_role_cpus{role="ml",kind="guarantee"}')).toBe(0.5);
    expect(sample(text, 'cairn_master_role_cpus{role="ml",kind="limit"}')).toBe(1);
    expect(sample(text, 'cairn_master_role_memory_bytes{role="ml",kind="allocated"}')).toBe(32 * MIB);
    expect(sample(text, 'cairn_master_role_memory_bytes{role="ml",kind="limit"}')).toBe(512 * MIB);
    // No disk limit named: no sample, not a 0 that would read as "none allowed".
    expect(sample(text, 'cairn_master_role_disk_bytes{role="ml",kind="limit"}')).toBeUndefined();
    expect(sample(text, 'cairn_master_role_gpus{role="ml",kind="allocated"}')).toBe(0);
  });

  it('the Grafana dashboard in deploy/ reads only metrics this master exports, and each new family', () => {
    const dashboard = JSON.parse(readFileSync(join(import.meta.dirname, '../../deploy/grafana/cairn-dashboard.json'), 'utf8'));
    const exported = sampleNames(text);
    const exprs = dashboardExpressions(dashboard);
    expect(exprs.length).toBeGreaterThan(10);
    const read = new Set<string>();
    for (const { panel, expr } of exprs) {
      const names = promqlMetricNames(expr);
      expect(names.size, `${panel}: ${expr}`).toBeGreaterThan(0);
      for (const n of names) {
        expect(exported.has(n), `panel "${panel}" reads ${n}, which /metrics does not export`).toBe(true);
        read.add(n.replace(/_bucket$/, ''));
      }
    }
    for (const f of ['cairn_jobs', 'cairn_experiments', 'cairn_trials', 'cairn_jobs_queued', 'cairn_trials_queued', 'cairn_app_instances_queued', 'cairn_jobs_queue_wait_seconds', 'cairn_trials_queue_wait_seconds', 'cairn_master_preemptions_total', 'cairn_master_role_cpus', 'cairn_master_role_memory_bytes']) {
      expect(read, f).toContain(f);
    }
  });
});
