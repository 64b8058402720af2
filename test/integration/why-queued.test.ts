// Nothing waits in silence, on real processes: a master and one small agent (1 cpu), an app
// /dev/web holding 0.2 of it, and a PyTorchJob whose gang needs the whole cpu. The job's
// message names the app as the holder (by its id, not a task UUID) within one allocation
// interval of its submission; `cairn job wait` prints the reason as it waits, then each
// condition and the replicas running once the app is gone; a job with a replica bigger than
// the agent is refused at submit naming the agent and its size, and submitted anyway with
// --allow-unschedulable (exit 3, a warning). An app's waiting instance says the same in the
// launch queue, and `cairn app deploy --wait` prints it, then the instance running; a pending
// trial too (a task trial, and a distributed one whose job waits), and `cairn tune submit
// --wait` prints it, then the trial starting.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { authFetch } from '../harness/credentials.ts';
import { jobsApi, pytorchJobYaml } from '../harness/jobs-api.ts';
import { Cleanup, runCairn, startAgentProcess, startCairn, startMasterProcess, waitFor, type CairnProcess } from '../harness/processes.ts';

const cleanup = new Cleanup();
let master: CairnProcess;
const api = jobsApi(() => master.url);
/** The master's allocation interval (its default, Mesos' 1 s). */
const ALLOCATION_INTERVAL_MS = 1_000;

beforeAll(async () => {
  master = await startMasterProcess(cleanup);
  await startAgentProcess(cleanup, master.url, { resources: 'cpus:1;mem:512;disk:1000;ports:[31000-31009]' });
  await waitFor('the agent registered', async () => {
    const s = await (await authFetch(`${master.url}/api/v1/state`)).json();
    return s.agents?.length === 1 ? true : undefined;
  }, 30_000);
}, 90_000);

afterAll(async () => {
  await cleanup.run();
}, 60_000);

async function marathon(method: string, path: string, body?: unknown): Promise<Response> {
  return authFetch(`${master.url}${path}`, { method, ...(body !== undefined ? { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) } : {}) });
}

describe('a queued job says what is short and who holds it', () => {
  it('names the app that holds the missing cpu within one allocation interval; job wait prints each change', async () => {
    expect((await marathon('POST', '/v2/apps', { id: '/dev/web', cmd: 'sleep 1000', cpus: 0.2, mem: 32, instances: 1 })).status).toBe(201);
    await waitFor('/dev/web running', async () => {
      const app = (await (await marathon('GET', '/v2/apps/dev/web')).json()).app;
      return app?.tasksRunning === 1 ? true : undefined;
    }, 30_000);

    const submittedAt = Date.now();
    await api.submit(pytorchJobYaml('pt', ['sleep', '3'], { workers: 1, cpu: '500m', memory: '64Mi' }), 'application/yaml');
    // Polled, not slept: the reason must be there before the next allocation round ends.
    const queued = await waitFor('the job names its blocker', async () => {
      const j = await api.job('pt');
      return /\/dev\/web holds cpus 0\.2/.test(j.message) ? j : undefined;
    }, ALLOCATION_INTERVAL_MS, 25);
    expect(Date.now() - submittedAt).toBeLessThanOrEqual(ALLOCATION_INTERVAL_MS + 500);
    expect(queued.phase).toBe('Queued');
    expect(queued.message).toMatch(/^its gang of 2 replicas does not fit: \w+-0 needs cpus 0\.5; the best agent, localhost, has cpus 0\.3 free after the gang's other replicas; \/dev\/web holds cpus 0\.2 there; research class may preempt it: no \(it is research class too\)/);

    const wait = cleanup.track(startCairn(['job', 'wait', 'pt', '--master', master.url, '--timeout', '90s'], master.url));
    await waitFor('job wait says why the job waits', () => (/\/dev\/web holds cpus 0\.2/.test(wait.output) ? true : undefined), 15_000);
    expect(wait.output).toMatch(/pt: Queued \(WaitingForGang\)/);

    // The holder goes: the gang fits, runs and ends, and job wait says so as it happens.
    expect((await marathon('DELETE', '/v2/apps/dev/web')).status).toBeLessThan(300);
    const code = await waitFor('job wait ended', () => (wait.child.exitCode !== null ? wait.child.exitCode : undefined), 60_000, 100);
    expect(code, wait.output).toBe(0);
    const out = wait.output;
    const order = [/pt: Queued \(WaitingForGang\)/, /\/dev\/web holds cpus 0\.2/, /pt: Running \(GangRunning\)/, /pt: replicas 2\/2 running/, /job pt succeeded/];
    let at = 0;
    for (const re of order) {
      const m = re.exec(out.slice(at));
      expect(m, `${re} after offset ${at} in:\n${out}`).not.toBeNull();
      at += m!.index + m![0].length;
    }
  }, 120_000);

  it('an app instance that waits says what is short and who holds it: /v2/queue, cairn app queue, and app deploy --wait as it happens', async () => {
    expect((await marathon('POST', '/v2/apps', { id: '/dev/web', cmd: 'sleep 1000', cpus: 0.2, mem: 32, instances: 1 })).status).toBe(201);
    await waitFor('/dev/web running', async () => ((await (await marathon('GET', '/v2/apps/dev/web')).json()).app?.tasksRunning === 1 ? true : undefined), 30_000);
    const file = join(cleanup.dir('cairn-why-queued-'), 'big.json');
    writeFileSync(file, JSON.stringify({ id: '/dev/big', cmd: 'sleep 1000', cpus: 0.9, mem: 32, instances: 1 }));
    const deploy = cleanup.track(startCairn(['app', 'deploy', file, '--wait', '--timeout', '90s', '--master', master.url], master.url));
    await waitFor('app deploy --wait says why /dev/big waits', () => (/\/dev\/big: waiting: needs cpus 0\.9;/.test(deploy.output) ? true : undefined), 15_000);

    const q = (await (await marathon('GET', '/v2/queue?cairn=true')).json()).queue as { app: { id: string }; why?: string }[];
    expect(q.find((x) => x.app.id === '/dev/big')?.why).toBe('needs cpus 0.9; the best agent, localhost, has cpus 0.8 free; /dev/web holds cpus 0.2 there; research class may preempt it: no (it is research class too)');
    const listed = await runCairn(['app', 'queue', '--master', master.url]);
    expect(listed.code, listed.stderr).toBe(0);
    expect(listed.stdout).toMatch(/\/dev\/big .*needs cpus 0\.9; .*\/dev\/web holds cpus 0\.2 there/);

    // The holder goes: the instance starts, and deploy --wait says so and ends.
    expect((await marathon('DELETE', '/v2/apps/dev/web')).status).toBeLessThan(300);
    const code = await waitFor('app deploy --wait ended', () => (deploy.child.exitCode !== null ? deploy.child.exitCode : undefined), 60_000, 100);
    expect(code, deploy.output).toBe(0);
    const order = [/app created: \/dev\/big/, /\/dev\/big: replicas 0\/1 running/, /\/dev\/big: waiting: needs cpus 0\.9; the best agent, localhost, has cpus 0\.8 free; \/dev\/web holds cpus 0\.2 there/, /\/dev\/big: replicas 1\/1 running/, /\/dev\/big: deployed \(1\/1 running\)/];
    let at = 0;
    for (const re of order) {
      const m = re.exec(deploy.output.slice(at));
      expect(m, `${re} after offset ${at} in:\n${deploy.output}`).not.toBeNull();
      at += m!.index + m![0].length;
    }
    expect((await marathon('DELETE', '/v2/apps/dev/big')).status).toBeLessThan(300);
  }, 90_000);

  it('a pending trial says what is short and who holds it; tune submit --wait prints it, then the trial starting', async () => {
    expect((await marathon('POST', '/v2/apps', { id: '/dev/web', cmd: 'sleep 1000', cpus: 0.2, mem: 32, instances: 1 })).status).toBe(201);
    await waitFor('/dev/web running', async () => ((await (await marathon('GET', '/v2/apps/dev/web')).json()).app?.tasksRunning === 1 ? true : undefined), 30_000);
    const file = join(cleanup.dir('cairn-why-queued-'), 'hp.json');
    writeFileSync(file, JSON.stringify({
      apiVersion: 'kubeflow.org/v1beta1', kind: 'Experiment', metadata: { name: 'hp' },
      spec: {
        objective: { type: 'maximize', objectiveMetricName: 'accuracy' }, algorithm: { algorithmName: 'random' },
        parallelTrialCount: 1, maxTrialCount: 1,
        parameters: [{ name: 'lr', parameterType: 'double', feasibleSpace: { min: '0.1', max: '0.9' } }],
        trialTemplate: { command: 'sleep 3; echo accuracy=${lr}', resources: { cpus: 0.9, memory: '32M' } },
      },
    }));
    const tune = cleanup.track(startCairn(['tune', 'submit', '-f', file, '--wait', '--master', master.url], master.url));
    await waitFor('tune submit --wait says why the trial waits', () => (/1 trial waiting for room: needs cpus 0\.9; .*\/dev\/web holds cpus 0\.2 there/.test(tune.output) ? true : undefined), 20_000);
    const e = await (await authFetch(`${master.url}/api/v1/experiments/hp`)).json();
    expect(e.trials[0].message).toBe('waiting for room: needs cpus 0.9; the best agent, localhost, has cpus 0.8 free; /dev/web holds cpus 0.2 there; research class may preempt it: no (it is research class too)');

    expect((await marathon('DELETE', '/v2/apps/dev/web')).status).toBeLessThan(300);
    const code = await waitFor('tune submit --wait ended', () => (tune.child.exitCode !== null ? tune.child.exitCode : undefined), 60_000, 100);
    expect(code, tune.output).toBe(0);
    expect(tune.output).toMatch(/waiting for room[\s\S]*trial 0 started on localhost[\s\S]*trial 0 Succeeded[\s\S]*experiment hp Succeeded/);
    expect((await authFetch(`${master.url}/api/v1/experiments/hp`, { method: 'DELETE' })).status).toBeLessThan(300);
  }, 90_000);

  it('a distributed trial whose job waits for its gang says why, naming the holder', async () => {
    expect((await marathon('POST', '/v2/apps', { id: '/dev/web', cmd: 'sleep 1000', cpus: 0.2, mem: 32, instances: 1 })).status).toBe(201);
    await waitFor('/dev/web running', async () => ((await (await marathon('GET', '/v2/apps/dev/web')).json()).app?.tasksRunning === 1 ? true : undefined), 30_000);
    const r = await authFetch(`${master.url}/api/v1/experiments`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({
      kind: 'Experiment', metadata: { name: 'ddp' },
      spec: {
        objective: { type: 'minimize', objectiveMetricName: 'loss' }, algorithm: { algorithmName: 'random' },
        parallelTrialCount: 1, maxTrialCount: 1,
        parameters: [{ name: 'lr', parameterType: 'double', feasibleSpace: { min: '0.01', max: '0.5' } }],
        trialTemplate: { job: { name: 'ignored', kind: 'pytorch', groups: [
          { name: 'master', template: { command: 'echo loss=${lr}', cpus: 0.5, mem: 32 } },
          { name: 'worker', replicas: 1, template: { command: 'true', cpus: 0.5, mem: 32 } },
        ] } },
      },
    }) });
    expect(r.status).toBe(201);
    const trial = await waitFor('the trial names its blocker', async () => {
      const e = await (await authFetch(`${master.url}/api/v1/experiments/ddp`)).json();
      const t = e.trials?.[0];
      return /^waiting for room: \w+-0 needs cpus 0\.5; .*\/dev\/web holds cpus 0\.2 there/.test(t?.message ?? '') ? t : undefined;
    }, 20_000);
    expect(trial.state).toBe('Starting');
    expect((await authFetch(`${master.url}/api/v1/experiments/ddp`, { method: 'DELETE' })).status).toBeLessThan(300);
    expect((await marathon('DELETE', '/v2/apps/dev/web')).status).toBeLessThan(300);
  }, 60_000);

  it('refuses a job with a replica bigger than every agent, naming the largest; --allow-unschedulable submits it with exit 3', async () => {
    const huge = pytorchJobYaml('huge', ['true'], { workers: 1, cpu: '4', memory: '64Mi' });
    const r = await authFetch(`${master.url}/api/v1/jobs`, { method: 'POST', headers: { 'content-type': 'application/yaml' }, body: huge });
    expect(r.status).toBe(422);
    const body = await r.json();
    expect(body.code).toBe('CAIRN_UNSCHEDULABLE');
    expect(body.message).toMatch(/needs cpus 4, mem 64 MiB, ports 1, more than any agent has in all: the only agent, localhost \([^)]+\), has cpus 1, mem 512 MiB, ports 10; it can never start/);
    expect(body.field).toMatch(/Master|Worker/);
    expect((await authFetch(`${master.url}/api/v1/jobs/huge`)).status).toBe(404);

    const file = join(cleanup.dir('cairn-why-queued-'), 'huge.yaml');
    writeFileSync(file, huge);
    const refused = await runCairn(['job', 'submit', file, '--master', master.url]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/the only agent, localhost .* has cpus 1.*--allow-unschedulable/s);

    const allowed = await runCairn(['job', 'submit', file, '--allow-unschedulable', '--master', master.url]);
    expect(allowed.code, allowed.stderr).toBe(3);
    expect(allowed.stdout.trim()).toBe('huge');
    expect(allowed.stderr).toMatch(/warning: .*needs cpus 4.*waits until an agent that can hold it joins/);
    const j = await waitFor('huge says it is unschedulable', async () => {
      const v = await api.job('huge');
      return /^Unschedulable/.test(v.message) ? v : undefined;
    }, 10_000);
    expect(j.phase).toBe('Queued');
    expect((await authFetch(`${master.url}/api/v1/jobs/huge`, { method: 'DELETE' })).status).toBeLessThan(300);
  }, 60_000);
});
