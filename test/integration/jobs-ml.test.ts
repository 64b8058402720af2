// The example ML programs (examples/programs) as training jobs on a real local cluster: a
// master and two agents as processes, joined by gossip so that every replica is given the
// masters' DNS server (CAIRN_DNS) and finds its peers by their DNS names, and one shared job
// directory (--job-dirs, as a shared mount would be) for CAIRN_JOB_DIR.
//   1. PyTorch: 4 DDP ranks from Cairn's own JSON and from a Kubeflow PyTorchJob; the loss falls.
//   2. ps-lite: 1 scheduler, 2 servers, 4 workers; the scheduler killed mid-run (cairn kill)
//      restarts the gang, which completes.
//   3. TensorFlow: a TFJob with 2 ps and 3 workers succeeds, the ps are stopped; a worker
//      killed mid-run restarts (OnFailure) and resumes from its checkpoint.
//   4. Batch: 300 items over 4 workers exactly once, TaskFailed → RestartJob, maxRetry.
// Skipped with the reason where /usr/bin/python3 lacks torch, numpy or scikit-learn, except
// in CI.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { authFetch } from '../harness/credentials.ts';
import { startGossipCluster } from '../harness/gossip-cluster.ts';
import { jobsApi, pytorchJobYaml, replicaOf } from '../harness/jobs-api.ts';
import { Cleanup, freePortRange, runCairn, waitFor, type CairnProcess } from '../harness/processes.ts';
import type { JobView } from '../../shared/jobs/model.ts';

const PYTHON = '/usr/bin/python3';
const PROGRAMS = fileURLToPath(new URL('../../examples/programs/', import.meta.url));

const missing = (() => {
  const r = spawnSync(PYTHON, ['-c', 'import torch, numpy, sklearn'], { encoding: 'utf8' });
  return r.status === 0 ? undefined : `${PYTHON} cannot import torch, numpy and sklearn; apt-get install python3-torch python3-numpy python3-sklearn`;
})();
const skip = missing !== undefined && process.env.CI !== 'true';
if (skip) console.log(`skipping the ML jobs tests: ${missing}`);

const cleanup = new Cleanup();
let master: CairnProcess;
/** Every agent's --job-dirs: CAIRN_JOB_DIR is <jobDirs>/<job> wherever a replica runs. */
let jobDirs: string;

/** 4 cpus and 6 GiB each (declared): a 4-rank torch job spreads over both. Replicas listen on their ports: free ones, found at start. */
async function agentResources(): Promise<string[]> {
  const first = await freePortRange(200);
  return [0, 1].map((i) => `cpus:4;mem:6144;disk:2000;ports:[${first + i * 100}-${first + i * 100 + 99}]`);
}

beforeAll(async () => {
  if (skip) return;
  ({ master, jobDirs } = await startGossipCluster(cleanup, 'jobs-ml', await agentResources()));
}, 120_000);

afterAll(async () => {
  await cleanup.run();
}, 60_000);

const api = jobsApi(() => master.url);
const { submit, job, finished, taskLog } = api;
const replica = replicaOf;

/** The replica's log, once it shows `re` (its current task). */
async function waitLog(name: string, group: string, index: number, re: RegExp, timeoutMs = 120_000): Promise<{ log: string; taskId: string }> {
  return waitFor(`${name}/${group}-${index} to print ${re}`, async () => {
    const j = await job(name);
    if (j.phase === 'Failed') throw new Error(`job ${name} failed: ${j.message}`);
    const taskId = replica(j, group, index).taskId;
    if (!taskId) return undefined;
    const log = await taskLog(taskId).catch(() => '');
    return re.test(log) ? { log, taskId } : undefined;
  }, timeoutMs, 500);
}

function lossesOf(log: string, line: RegExp): number[] {
  return log.split('\n').filter((l) => line.test(l)).map((l) => Number(/loss (\d+\.\d+)/.exec(l)![1]));
}

/** A job's replicas as shown when an assertion fails. */
function describeJob(j: JobView): string {
  return `${j.phase}: ${j.message}; ${j.replicas.map((r) => `${r.group}-${r.index} ${r.state} exit ${r.exitCode} restarts ${r.restarts} ${r.message ?? ''}`).join('; ')}`;
}

const program = (file: string) => join(PROGRAMS, file);

describe.skipIf(skip)('ML programs as training jobs on a real cluster', () => {
  it('PyTorch: a 4-rank DDP job from Cairn JSON and from a Kubeflow PyTorchJob; the loss falls', async () => {
    const template = { command: [PYTHON, program('pytorch_ddp.py'), '--epochs', '5'], cpus: 0.5, mem: 1024 };
    const own = await submit({ name: 'ddp', kind: 'pytorch', groups: [{ name: 'master', replicas: 1, template }, { name: 'worker', replicas: 3, template }] });
    expect(own).toEqual({ name: 'ddp', ignored: [] });
    const yaml = pytorchJobYaml('ddp-kubeflow', [PYTHON, program('pytorch_ddp.py'), '--epochs', '5']);
    await submit(yaml, 'application/yaml');

    for (const name of ['ddp', 'ddp-kubeflow']) {
      const j = await finished(name, 240_000);
      expect(j.phase, describeJob(j)).toBe('Succeeded');
      const logs = await Promise.all([0, 1, 2, 3].map((rank) => {
        const r = rank === 0 ? replica(j, 'master', 0) : replica(j, 'worker', rank - 1);
        return taskLog(r.taskId!);
      }));
      // Every rank joined through the master's DNS name, resolved to an address.
      for (const [rank, log] of logs.entries()) expect(log).toMatch(new RegExp(`^rank ${rank} of 4 joined through \\d+\\.\\d+\\.\\d+\\.\\d+:\\d+$`, 'm'));
      const perRank = logs.map((l) => lossesOf(l, /^epoch \d+ loss/));
      for (const l of perRank) expect(l).toEqual(perRank[0]);
      expect(perRank[0]).toHaveLength(5);
      expect(perRank[0][4]).toBeLessThan(perRank[0][0] / 2);
      expect(logs[0]).toMatch(/^done: world 4 epochs 5 loss \S+ -> \S+ accuracy 0\.(8|9)\d+$/m);
      console.log(`${name}: loss by epoch ${perRank[0].join(', ')}`);
    }
  }, 300_000);

  it('ps-lite: 1 scheduler, 2 servers and 4 workers train; the scheduler killed mid-run restarts the gang, which completes', async () => {
    const template = (args: string[] = []) => ({ command: [PYTHON, program('pslite_numpy.py'), ...args], cpus: 0.2, mem: 256 });
    await submit({
      name: 'pslite',
      kind: 'pslite',
      groups: [
        { name: 'scheduler', replicas: 1, template: template() },
        { name: 'server', replicas: 2, template: template() },
        { name: 'worker', replicas: 4, template: template(['--steps', '40', '--step-delay', '0.1']) },
      ],
      backoffLimit: 3,
      // The gang restarts after 1 s rather than the default 10 s.
      restartBackoff: { initialSeconds: 1 },
    });
    // Mid-run: the workers are training.
    await waitLog('pslite', 'worker', 0, /^step 5 loss/m);
    const before = await job('pslite');
    const scheduler = replica(before, 'scheduler', 0);
    const killed = await runCairn(['kill', scheduler.taskId!, '--master', master.url]);
    expect(killed.code, killed.stderr).toBe(0);

    const j = await finished('pslite', 240_000);
    expect(j.phase, describeJob(j)).toBe('Succeeded');
    expect(j.restarts).toBeGreaterThanOrEqual(1);
    expect(j.conditions.map((c) => c.type)).toContain('Restarting');
    // The whole gang started again: the scheduler under a new task.
    expect(replica(j, 'scheduler', 0).taskId).not.toBe(scheduler.taskId);
    for (let w = 0; w < 4; w++) {
      const r = replica(j, 'worker', w);
      expect(r).toMatchObject({ state: 'Succeeded', exitCode: 0 });
      const log = await taskLog(r.taskId!);
      const l = lossesOf(log, /^step \d+ loss/);
      expect(l, log).toHaveLength(40);
      expect(l[39]).toBeLessThan(l[0] / 2);
    }
    // The scheduler and servers never end on their own: the engine stopped them.
    await waitFor('the scheduler and servers stopped', async () => {
      const now = await job('pslite');
      return now.replicas.filter((r) => r.group !== 'worker').every((r) => r.state === 'Killed') ? true : undefined;
    }, 30_000);
    const schedulerLog = await taskLog(replica(j, 'scheduler', 0).taskId!);
    expect(schedulerLog).toMatch(/all 4 workers finished; running until stopped/);
  }, 300_000);

  it('TensorFlow: a TFJob with 2 ps and 3 workers succeeds, its ps are stopped, and a killed worker resumes from its checkpoint', async () => {
    const args = ['--steps', '40', '--step-delay', '0.15', '--checkpoint-every', '5', '--expect', 'ps=2,worker=3'];
    const yaml = [
      'apiVersion: kubeflow.org/v1',
      'kind: TFJob',
      'metadata:',
      '  name: tf-ps',
      'spec:',
      '  runPolicy:',
      '    cleanPodPolicy: Running',
      '    backoffLimit: 3',
      '    restartBackoff: {initialSeconds: 1}',
      '  tfReplicaSpecs:',
      ...(['PS', 'Worker'] as const).flatMap((role) => [
        `    ${role}:`,
        `      replicas: ${role === 'PS' ? 2 : 3}`,
        '      restartPolicy: OnFailure',
        '      template:',
        '        spec:',
        '          containers:',
        '            - name: tensorflow',
        `              command: ${JSON.stringify([PYTHON, program('tf_config_trainer.py'), ...args])}`,
        '              resources:',
        '                requests: {cpu: 200m, memory: 256Mi}',
      ]),
    ].join('\n');
    // Submitted as a user would: the file to cairn job submit, which prints the job's name.
    const file = join(cleanup.dir('cairn-tfjob-'), 'tfjob.yaml');
    writeFileSync(file, yaml);
    const submitted = await runCairn(['job', 'submit', file, '--master', master.url]);
    expect(submitted.code, submitted.stderr).toBe(0);
    expect(submitted.stdout.trim()).toBe('tf-ps');

    // Worker 1 is mid-run, past a checkpoint: kill its task.
    const { taskId: first } = await waitLog('tf-ps', 'worker', 1, /^checkpoint at step 10$/m);
    const r = await authFetch(`${master.url}/api/v1/tasks/${encodeURIComponent(first)}/kill`, { method: 'POST' });
    expect(r.status).toBeLessThan(300);

    const waited = await runCairn(['job', 'wait', 'tf-ps', '--timeout', '4m', '--master', master.url], {}, 250_000);
    const j = await job('tf-ps');
    expect(waited.code, `${waited.stderr} ${describeJob(j)}`).toBe(0);
    expect(j.phase).toBe('Succeeded');
    const w1 = replica(j, 'worker', 1);
    expect(w1.restarts).toBe(1);
    expect(w1.taskId).not.toBe(first);
    // Its checkpoint was in CAIRN_JOB_DIR (the shared job directory), so it went on from there.
    const resumedLog = (await runCairn(['logs', 'tf-ps/worker-1', '--master', master.url])).stdout;
    const resumedAt = Number(/^resumed at step (\d+)$/m.exec(resumedLog)?.[1]);
    expect(resumedAt, resumedLog).toBeGreaterThanOrEqual(10);
    expect(Number(/^step (\d+) loss/m.exec(resumedLog)![1])).toBe(resumedAt);
    expect(existsSync(join(jobDirs, 'tf-ps', 'worker-1.json'))).toBe(true);
    // Worker 0 decided: every trainer finished and the loss fell.
    expect(await taskLog(replica(j, 'worker', 0).taskId!)).toMatch(/^chief: all 3 trainers finished; loss 2\.3026 -> 0\.\d+: success$/m);
    // The ps tasks never end on their own; they were stopped when the workers were done.
    await waitFor('the ps stopped', async () => {
      const now = await job('tf-ps');
      return now.replicas.filter((x) => x.group === 'ps').every((x) => x.state === 'Killed') ? true : undefined;
    }, 30_000);
    const psLog = await taskLog(replica(j, 'ps', 0).taskId!);
    expect(psLog).toMatch(/^ps 0 holds keys \[0, 325\)/m);
  }, 300_000);

  it('Batch: 300 items over 4 workers exactly once, a failure restarting the whole job (TaskFailed → RestartJob)', async () => {
    const yaml = (name: string, extra: string[], maxRetry: number) => [
      'apiVersion: batch.volcano.sh/v1alpha1',
      'kind: Job',
      'metadata:',
      `  name: ${name}`,
      'spec:',
      '  minAvailable: 4',
      `  maxRetry: ${maxRetry}`,
      '  policies:',
      '    - event: TaskFailed',
      '      action: RestartJob',
      '  tasks:',
      '    - name: worker',
      '      replicas: 4',
      '      template:',
      '        spec:',
      '          restartPolicy: Never',
      '          containers:',
      '            - name: worker',
      `              command: ${JSON.stringify([PYTHON, program('indexed_batch.py'), ...extra])}`,
      '              resources:',
      '                requests: {cpu: 200m, memory: 128Mi}',
    ].join('\n');

    // Replica 3 fails once, before item 7: the whole job starts again and finishes.
    await submit(yaml('items', ['--fail-at', '7', '--item-delay', '0.01'], 2), 'application/yaml');
    const j = await finished('items', 180_000);
    expect(j.phase, describeJob(j)).toBe('Succeeded');
    expect(j.restarts).toBe(1);
    expect(j.conditions.map((c) => c.type)).toContain('Restarting');
    const results = join(jobDirs, 'items', 'results');
    expect(existsSync(join(results, 'failed-at-7'))).toBe(true);
    const lines = readFileSync(join(results, 'processed.log'), 'utf8').trim().split('\n');
    const items = lines.map((l) => Number(l.split(' ')[0]));
    expect(items).toHaveLength(300);
    expect(new Set(items).size).toBe(300);
    // Each by the replica whose index it falls to (VC_TASK_INDEX of VC_WORKER_NUM 4).
    expect(lines.every((l) => Number(l.split(' ')[1]) === Number(l.split(' ')[0]) % 4)).toBe(true);
    expect(readdirSync(results).filter((f) => /^item-\d{5}\.json$/.test(f))).toHaveLength(300);

    // A replica that fails every time: the job is restarted maxRetry (2) times, then fails.
    await submit(yaml('items-broken', ['--fail-at', '5', '--fail-always'], 2), 'application/yaml');
    const waited = await runCairn(['job', 'wait', 'items-broken', '--timeout', '3m', '--master', master.url], {}, 200_000);
    expect(waited.code).not.toBe(0);
    expect(waited.stderr).toMatch(/backoffLimit 2/);
    const broken = await job('items-broken');
    expect(broken.phase, describeJob(broken)).toBe('Failed');
    // Two restarts, three runs: the third failure is refused a restart.
    expect(broken.conditions.filter((c) => c.type === 'Restarting'), JSON.stringify(broken.conditions)).toHaveLength(2);
    expect(broken.conditions.at(-1)).toMatchObject({ type: 'Failed', reason: 'BackoffLimitExceeded' });
    expect(broken.message).toMatch(/restarted 2 times \(backoffLimit 2\)/);
    expect(broken.restarts).toBe(2);
    expect(replica(broken, 'worker', 1)).toMatchObject({ state: 'Failed', exitCode: 3 });
  }, 400_000);
});
