// The training-job engine on real processes: a master and two agents with small resources
// (2 cpus, 1 GiB each), jobs whose replicas are plain shell. A 3-group job succeeds and its
// parameter servers are stopped; a failing replica with OnFailure restarts; two jobs that
// each need 3/4 of the cluster both finish, one after the other, in both orders; a job
// larger than the cluster is Unschedulable; bad documents are refused naming the field,
// with nothing created.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chmodSync, writeFileSync } from 'node:fs';
import { authFetch } from '../harness/credentials.ts';
import { Cleanup, runCairn, startAgentProcess, startMasterProcess, waitFor, type CairnProcess } from '../harness/processes.ts';
import type { JobView } from '../../shared/jobs/model.ts';

const cleanup = new Cleanup();
let master: CairnProcess;
let scratch: string;

beforeAll(async () => {
  scratch = cleanup.dir('cairn-jobs-scratch-');
  // Replicas run as the agents' task user (nobody): they leave their marks here.
  chmodSync(scratch, 0o777);
  master = await startMasterProcess(cleanup);
  // Both agents make jobs' directories on one "shared mount", as a cluster with NFS would.
  const jobDirs = ['--job-dirs', `${scratch}/job-dirs`];
  await startAgentProcess(cleanup, master.url, { resources: 'cpus:2;mem:1024;disk:1000;ports:[31000-31049]', extra: jobDirs });
  await startAgentProcess(cleanup, master.url, { resources: 'cpus:2;mem:1024;disk:1000;ports:[31050-31099]', extra: jobDirs });
  await waitFor('two agents registered', async () => {
    const s = await (await authFetch(`${master.url}/api/v1/state`)).json();
    return s.agents?.length === 2 ? true : undefined;
  }, 30_000);
}, 90_000);

afterAll(async () => {
  await cleanup.run();
}, 60_000);

async function submit(doc: unknown, contentType = 'application/json'): Promise<Response> {
  return authFetch(`${master.url}/api/v1/jobs`, { method: 'POST', headers: { 'content-type': contentType }, body: typeof doc === 'string' ? doc : JSON.stringify(doc) });
}

async function job(name: string): Promise<JobView> {
  const r = await authFetch(`${master.url}/api/v1/jobs/${name}`);
  expect(r.status).toBe(200);
  return (await r.json()) as JobView;
}

async function waitFinished(name: string, timeoutMs = 60_000): Promise<JobView> {
  return waitFor(`job ${name} finished`, async () => {
    const j = await job(name);
    return j.phase === 'Succeeded' || j.phase === 'Failed' ? j : undefined;
  }, timeoutMs, 200);
}

function group(name: string, replicas: number, command: string, more: Record<string, unknown> = {}) {
  return { name, replicas, template: { command, cpus: 0.5, mem: 64, ...more } };
}

describe('training jobs on a real cluster', () => {
  it('runs a 3-group TensorFlow job to success; its parameter servers are stopped', async () => {
    const res = await submit({
      name: 'tf3',
      kind: 'tensorflow',
      groups: [
        group('chief', 1, 'echo "$TF_CONFIG"; sleep 3; exit 0'),
        group('ps', 1, 'exec sleep 600'),
        group('worker', 2, 'echo "worker $CAIRN_REPLICA_INDEX of $CAIRN_PEERS"; exit 0'),
      ],
    });
    expect(res.status).toBe(201);
    expect(await res.json()).toEqual({ name: 'tf3', ignored: [] });
    const done = await waitFinished('tf3');
    expect(done.phase, done.message).toBe('Succeeded');
    expect(done.conditions.map((c) => c.type)).toEqual(['Created', 'Queued', 'Running', 'Succeeded']);
    await waitFor('the ps stopped', async () => ((await job('tf3')).replicas.find((r) => r.group === 'ps')!.state === 'Killed' ? true : undefined), 30_000);
    const j = await job('tf3');
    expect(j.replicas.filter((r) => r.group !== 'ps').every((r) => r.state === 'Succeeded' && r.exitCode === 0)).toBe(true);
    // Every replica had its own port from its agent's range.
    const ports = j.replicas.map((r) => r.ports[0]);
    expect(new Set(ports).size).toBe(4);
    // The task is named for DNS and its log is read through the logs API.
    const chief = j.replicas.find((r) => r.group === 'chief')!;
    const task = await (await authFetch(`${master.url}/api/v1/tasks/${encodeURIComponent(chief.taskId!)}`)).json();
    expect(task.name).toBe('tf3-chief-0');
    const log = await (await authFetch(`${master.url}/api/v1/tasks/${encodeURIComponent(chief.taskId!)}/logs?stream=stdout&offset=0`)).json();
    const tfConfig = JSON.parse(log.data.trim().split('\n')[0]);
    expect(tfConfig.task).toEqual({ type: 'chief', index: 0 });
    expect(tfConfig.cluster.ps[0]).toMatch(/^tf3-ps-0\.jobs\.cairn:\d+$/);
  }, 90_000);

  it('restarts a failing replica with OnFailure; it finds its checkpoint in CAIRN_JOB_DIR', async () => {
    // Replica 1 checkpoints step 5 and fails; restarted, it resumes from the checkpoint.
    const script = [
      'ckpt="$CAIRN_JOB_DIR/ckpt-$CAIRN_REPLICA_INDEX"',
      'if [ -f "$ckpt" ]; then echo "resumed at step $(cat "$ckpt") in $CAIRN_JOB_DIR"; exit 0; fi',
      'echo 5 > "$ckpt"',
      'if [ "$CAIRN_REPLICA_INDEX" = 1 ]; then exit 3; fi',
    ].join('\n');
    // A short restart back-off (the default waits 10 s first): test/integration/restart-backoff.test.ts measures it.
    const res = await submit({ name: 'flaky', kind: 'batch', restartBackoff: { initialSeconds: 1 }, groups: [{ ...group('worker', 2, script), restartPolicy: 'OnFailure' }] });
    expect(res.status).toBe(201);
    const done = await waitFinished('flaky');
    expect(done.phase, done.message).toBe('Succeeded');
    expect(done.restarts).toBe(1);
    const w1 = done.replicas.find((r) => r.index === 1)!;
    expect(w1).toMatchObject({ restarts: 1, exitCode: 0, state: 'Succeeded' });
    expect(w1.taskId).toMatch(/\.flaky\.|\.\d+$/);
    const log = await (await authFetch(`${master.url}/api/v1/tasks/${encodeURIComponent(w1.taskId!)}/logs?stream=stdout&offset=0`)).json();
    expect(log.data).toBe(`resumed at step 5 in ${scratch}/job-dirs/flaky\n`);
  }, 90_000);

  it('streams a job\'s conditions and replica changes as server-sent events, ending when it is over', async () => {
    expect((await submit({ name: 'ev', kind: 'batch', groups: [group('worker', 1, 'sleep 1')] })).status).toBe(201);
    const res = await authFetch(`${master.url}/api/v1/jobs/ev/events`);
    expect(res.headers.get('content-type')).toMatch(/text\/event-stream/);
    const text = await res.text(); // the stream ends after 'finished'
    const events = text.split('\n\n').filter((b) => b.startsWith('event:')).map((b) => ({ type: /^event: (\w+)/.exec(b)![1], data: JSON.parse(/\ndata: (.*)/.exec(b)![1]!) }));
    expect(events.filter((e) => e.type === 'condition').map((e) => e.data.type)).toEqual(['Created', 'Queued', 'Running', 'Succeeded']);
    const states = events.filter((e) => e.type === 'replica').map((e) => e.data.state);
    expect(states[0]).toMatch(/Pending|Starting|Running/);
    expect(states).toContain('Running');
    expect(states.at(-1)).toBe('Succeeded');
    expect(events.at(-1)).toMatchObject({ type: 'finished', data: { job: 'ev', phase: 'Succeeded' } });
    expect((await authFetch(`${master.url}/api/v1/jobs/nope/events`)).status).toBe(404);
  }, 60_000);

  it('fails a job past its activeDeadlineSeconds, killing its replicas, and removes a finished job after its TTL', async () => {
    expect((await submit({ name: 'late', kind: 'batch', activeDeadlineSeconds: 1, groups: [group('worker', 1, 'exec sleep 60')] })).status).toBe(201);
    expect((await submit({ name: 'brief', kind: 'batch', ttlSecondsAfterFinished: 1, groups: [group('worker', 1, 'true')] })).status).toBe(201);
    const late = await waitFinished('late', 30_000);
    expect(late.phase).toBe('Failed');
    expect(late.conditions.at(-1)).toMatchObject({ type: 'Failed', reason: 'DeadlineExceeded' });
    await waitFor('its replica killed', async () => ((await job('late')).replicas[0]!.state === 'Killed' ? true : undefined), 30_000);
    await waitFor('the finished job removed after its TTL', async () => ((await authFetch(`${master.url}/api/v1/jobs/brief`)).status === 404 ? true : undefined), 30_000, 200);
  }, 60_000);

  for (const order of [['wide', 'tall'], ['tall', 'wide']] as const) {
    it(`two jobs each needing 3/4 of the cluster both finish, one after the other (${order.join(' first, then ')})`, async () => {
      const docs = {
        // 3 cpus each: 3 replicas of 1 cpu, or 2 replicas of 1.5 cpus.
        wide: { name: `wide-${order[0]}`, kind: 'batch', groups: [{ name: 'worker', replicas: 3, template: { command: 'sleep 2', cpus: 1, mem: 64 } }] },
        tall: { name: `tall-${order[0]}`, kind: 'batch', groups: [{ name: 'worker', replicas: 2, template: { command: 'sleep 2', cpus: 1.5, mem: 64 } }] },
      };
      const first = docs[order[0]];
      const second = docs[order[1]];
      expect((await submit(first)).status).toBe(201);
      expect((await submit(second)).status).toBe(201);
      const a = await waitFinished(first.name, 90_000);
      const b = await waitFinished(second.name, 90_000);
      expect(a.phase, a.message).toBe('Succeeded');
      expect(b.phase, b.message).toBe('Succeeded');
      // One ran, then the other: their running times do not overlap.
      const [early, late] = a.startedAtMs! <= b.startedAtMs! ? [a, b] : [b, a];
      expect(late.startedAtMs!).toBeGreaterThanOrEqual(early.finishedAtMs!);
    }, 120_000);
  }

  it('marks a job that asks for more than the cluster has Unschedulable, with a message', async () => {
    // Each replica fits an agent, the gang not the cluster (a replica bigger than every agent is refused at submit: why-queued.test.ts).
    const res = await submit({ name: 'huge', kind: 'batch', groups: [{ name: 'worker', replicas: 3, template: { command: 'true', cpus: 1.5, mem: 64 } }] });
    expect(res.status).toBe(201);
    const j = await waitFinished('huge', 30_000);
    expect(j.phase).toBe('Failed');
    expect(j.conditions.at(-1)).toMatchObject({ type: 'Failed', reason: 'Unschedulable' });
    expect(j.message).toMatch(/Unschedulable: its gang of 3 replicas needs cpus:4.5.*2 agents have cpus:4/);
  }, 60_000);

  it('refuses bad documents naming the field, and creates nothing', async () => {
    const before = ((await (await authFetch(`${master.url}/api/v1/jobs`)).json()) as { jobs: JobView[] }).jobs.map((j) => j.name);
    const cases: [unknown, string, string, RegExp][] = [
      [{ name: 'bad1', kind: 'mpi', groups: [group('worker', 1, 'true')] }, 'application/json', 'kind', /mpi/],
      [{ name: 'bad2', kind: 'batch', groups: [group('worker', 0, 'true')] }, 'application/json', 'groups[0].replicas', /from 1 to/],
      [
        'apiVersion: kubeflow.org/v1\nkind: TFJob\nmetadata: {name: bad3}\nspec:\n  tfReplicaSpecs:\n    Chief: {replicas: 2, template: {spec: {containers: [{name: tensorflow, image: tf:1}]}}}\n',
        'application/yaml', 'spec.tfReplicaSpecs.Chief.replicas', /1/,
      ],
      [
        'apiVersion: kubeflow.org/v1\nkind: PyTorchJob\nmetadata: {name: bad4}\nspec:\n  pytorchReplicaSpecs:\n    Worker: {replicas: 2, template: {spec: {containers: [{name: pytorch, image: pt:1}]}}}\n',
        'application/yaml', 'spec.pytorchReplicaSpecs', /[Mm]aster/,
      ],
      ['name: bad5\nkind: batch\ngroups: [ {name: worker\n', 'application/yaml', 'body', /YAML/],
    ];
    for (const [doc, type, field, message] of cases) {
      const res = await submit(doc, type);
      const body = await res.json();
      expect(res.status, JSON.stringify(body)).toBeGreaterThanOrEqual(400);
      expect(res.status).toBeLessThan(500);
      expect(body.code).toBe('CAIRN_INVALID_JOB');
      expect(body.field).toBe(field);
      expect(body.message).toMatch(message);
    }
    const after = ((await (await authFetch(`${master.url}/api/v1/jobs`)).json()) as { jobs: JobView[] }).jobs.map((j) => j.name);
    expect(after).toEqual(before);
  }, 30_000);

  it('the command line: submit a file, wait, show, list, logs of one replica and of all, delete', async () => {
    const file = `${scratch}/job.yaml`;
    // The master decides the job; it outlives the workers, so every log is whole.
    writeFileSync(file, 'name: cli\nkind: pytorch\ngroups:\n  - name: master\n    template: {command: \'echo "rank $RANK of $WORLD_SIZE"; sleep 2\', cpus: 0.5, mem: 64}\n  - name: worker\n    replicas: 2\n    template: {command: \'echo "rank $RANK of $WORLD_SIZE"\', cpus: 0.5, mem: 64}\n');
    const m = ['--master', master.url];
    const submitted = await runCairn(['job', 'submit', file, ...m]);
    expect(submitted.stdout, submitted.stderr).toBe('cli\n');
    const waited = await runCairn(['job', 'wait', 'cli', ...m], {}, 60_000);
    expect(waited.code, waited.stderr).toBe(0);
    expect(waited.stdout).toMatch(/job cli succeeded: the master exited 0/);
    const shown = await runCairn(['job', 'show', 'cli', ...m]);
    expect(shown.stdout).toMatch(/Phase:\s+Succeeded/);
    expect(shown.stdout).toMatch(/master-0\s+Succeeded/);
    const listed = JSON.parse((await runCairn(['job', 'list', '-o', 'json', ...m])).stdout);
    const table = (await runCairn(['job', 'list', ...m])).stdout;
    expect(table).toMatch(/^NAME\s+KIND\s+PHASE\s+RUN\/DONE\/ALL\s+RESTARTS\s+AGE/);
    expect(table).toMatch(/\ncli\s+pytorch\s+Succeeded\s+0\/[1-3]\/3\s+0\s/);
    expect(listed.map((j: JobView) => j.name)).toContain('cli');
    const one = await runCairn(['logs', 'cli/worker-1', ...m]);
    expect(one.stdout, one.stderr).toBe('rank 2 of 3\n');
    const all = await runCairn(['job', 'logs', 'cli', '--all', ...m]);
    expect(all.stdout.split('\n').filter(Boolean).sort()).toEqual(['[master-0] rank 0 of 3', '[worker-0] rank 1 of 3', '[worker-1] rank 2 of 3']);
    // Followed, the logs end with the tasks: everything once.
    const followed = await runCairn(['job', 'logs', 'cli', '--all', '--follow', ...m]);
    expect(followed.stdout.split('\n').filter(Boolean).sort()).toEqual(['[master-0] rank 0 of 3', '[worker-0] rank 1 of 3', '[worker-1] rank 2 of 3']);
    expect((await runCairn(['logs', 'cli/master-0', '--follow', ...m])).stdout).toBe('rank 0 of 3\n');
    const missing = await runCairn(['logs', 'cli/worker-9', ...m]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/job cli has no replica worker-9 \(it has master-0, worker-0, worker-1\)/);
    // A failing job: wait exits non-zero with the reason.
    writeFileSync(file, 'name: cli-bad\nkind: batch\ngroups: [{name: worker, restartPolicy: Never, template: {command: "exit 7", cpus: 0.5, mem: 64}}]\n');
    expect((await runCairn(['job', 'submit', file, ...m])).stdout).toBe('cli-bad\n');
    const failed = await runCairn(['job', 'wait', 'cli-bad', ...m], {}, 60_000);
    expect(failed.code).toBe(1);
    expect(failed.stderr).toMatch(/job cli-bad failed \(ReplicaFailed\): worker 0 failed with exit code 7/);
    // A live job's name is taken: refused with a hint, and the first one is not touched.
    writeFileSync(file, 'name: cli-live\nkind: batch\ngroups: [{name: worker, template: {command: "sleep 60", cpus: 0.5, mem: 64}}]\n');
    expect((await runCairn(['job', 'submit', file, ...m])).stdout).toBe('cli-live\n');
    const taken = await runCairn(['job', 'submit', file, ...m]);
    expect(taken.code).toBe(1);
    expect(taken.stderr).toMatch(/'cli-live' is still live.*cairn job delete NAME/);
    const live = await waitFor('cli-live running', async () => {
      const r = (await job('cli-live')).replicas[0]!;
      return r.state === 'Running' ? r : undefined;
    }, 30_000);
    expect((await runCairn(['job', 'delete', 'cli-live', ...m])).stdout).toBe('job cli-live deleted\n');
    // Deleting a job kills what it runs.
    await waitFor('its replica killed', async () => {
      const t = await (await authFetch(`${master.url}/api/v1/tasks/${encodeURIComponent(live.taskId!)}`)).json();
      return t.state === 'TASK_KILLED' ? true : undefined;
    }, 30_000);
    // From flags, in the style of dmlc's tracker: the job's name is printed.
    const flagged = await runCairn(['job', 'submit', '--kind', 'pslite', '--num-servers', '1', '--num-workers', '2', '--cpus', '0.25', '--mem', '32', '--name', 'cli-ps', ...m, '--', 'echo "$DMLC_ROLE $DMLC_NUM_WORKER"; [ "$DMLC_ROLE" = worker ] || exec sleep 60']);
    expect(flagged.stdout, flagged.stderr).toBe('cli-ps\n');
    expect((await runCairn(['job', 'wait', 'cli-ps', ...m], {}, 60_000)).code).toBe(0);
    expect((await runCairn(['logs', 'cli-ps/worker-1', ...m])).stdout).toBe('worker 2\n');
    expect((await runCairn(['job', 'delete', 'cli', ...m])).code).toBe(0);
    expect((await authFetch(`${master.url}/api/v1/jobs/cli`)).status).toBe(404);
    const gone = await runCairn(['job', 'show', 'cli', ...m]);
    expect(gone.code).toBe(1);
    expect(gone.stderr).toMatch(/no job 'cli'.*cairn job list/);
  }, 120_000);
});
