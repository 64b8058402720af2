// Katib's own experiment files through the command line, on a real master and agent
// (processes): `cairn tune submit -f` takes Katib's hp-tuning/random.yaml as it is upstream
// (test/fixtures/katib/); a copy with two lines changed (no image, the program's path at a
// stand-in for Katib's mnist.py, which prints its loss from the --lr and --momentum it is
// given) runs its trials with the values substituted; `cairn tune resume --max-trials`
// continues an experiment ended by its budget or its goal, and resumePolicy Never is honoured;
// pytorchjob-mnist.yaml, changed the same way, runs each trial as a PyTorch job of the job engine.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chmodSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { Cleanup, runCairn, startAgentProcess, startMasterProcess, waitFor, type CairnProcess } from '../harness/processes.ts';
import { authFetch } from '../harness/credentials.ts';
import type { ExperimentView } from '../../shared/tuning/views.ts';

const RANDOM = new URL('../fixtures/katib/random.yaml', import.meta.url);
const IMAGE_LINE = '                image: ghcr.io/kubeflow/katib/pytorch-mnist-cpu:latest\n';
const PROGRAM = '/opt/pytorch-mnist/mnist.py';

/** Katib's mnist.py as far as the experiment sees it: its arguments in, `epoch=N loss=…` lines and the loss out. */
const STAND_IN = `import argparse, sys
p = argparse.ArgumentParser()
p.add_argument("--epochs", type=int, required=True)
p.add_argument("--batch-size", type=int, required=True)
p.add_argument("--lr", type=float, required=True)
p.add_argument("--momentum", type=float, required=True)
a = p.parse_args()
print("argv " + " ".join(sys.argv[1:]))
loss = a.lr * a.momentum
for epoch in range(1, a.epochs + 1):
    print(f"epoch={epoch} loss={loss}")
print(f"loss={loss}")
`;

const cleanup = new Cleanup();
let master: CairnProcess;
let base: string;

beforeAll(async () => {
  base = cleanup.dir('cairn-tuning-katib-');
  chmodSync(base, 0o777);
  writeFileSync(join(base, 'mnist.py'), STAND_IN, { mode: 0o755 });
  master = await startMasterProcess(cleanup);
  const workDir = cleanup.dir('cairn-agent-');
  chmodSync(workDir, 0o755);
  // Katib's trials ask for 0.5 CPU and 1Gi each, three at once. No container tasks: the
  // unchanged file's trials must not pull Katib's image onto the test machine.
  await startAgentProcess(cleanup, master.url, { workDir, resources: 'cpus:2;mem:4096;ports:[31000-31099]', extra: ['--no-docker'] });
}, 60_000);

afterAll(async () => {
  await cleanup.run();
}, 60_000);

async function view(name: string): Promise<ExperimentView | undefined> {
  const r = await authFetch(`${master.url}/api/v1/experiments/${name}`);
  return r.status === 200 ? ((await r.json()) as ExperimentView) : undefined;
}

/** The experiment once it has ended and none of its trials runs. */
function settled(name: string, timeoutMs = 120_000): Promise<ExperimentView> {
  return waitFor(`experiment ${name} to end`, async () => {
    const v = await view(name);
    return v && v.phase !== 'Running' && !v.trials.some((t) => ['Pending', 'Starting', 'Running'].includes(t.state)) ? v : undefined;
  }, timeoutMs, 250);
}

/** random.yaml with the two changes a machine without Katib's image needs, each made exactly once. */
function runnableRandom(): string {
  const text = readFileSync(RANDOM, 'utf8');
  expect(text.split(IMAGE_LINE)).toHaveLength(2);
  expect(text.split(PROGRAM)).toHaveLength(2);
  return text.replace(IMAGE_LINE, '').replace(PROGRAM, join(base, 'mnist.py'));
}

/** A copy of random.yaml, runnable here, as an object to change further. */
function runnableDoc(name: string, spec: Record<string, unknown>): string {
  const doc = parseYaml(runnableRandom());
  doc.metadata.name = name;
  Object.assign(doc.spec, spec);
  const file = join(base, `${name}.json`);
  writeFileSync(file, JSON.stringify(doc));
  return file;
}

const PYTORCHJOB = new URL('../fixtures/katib/pytorchjob-mnist.yaml', import.meta.url);
const REPLICA_IMAGE_LINE = '                    image: ghcr.io/kubeflow/katib/pytorch-mnist-cpu:latest\n';

describe("Katib's experiment files through cairn tune", () => {
  it('takes random.yaml as it is upstream: trials of its primary container, values in its command', async () => {
    const r = await runCairn(['tune', 'submit', '-f', RANDOM.pathname, '--master', master.url]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toBe('random\n');
    // Nothing of it is ignored: trialSpec, trialParameters and primaryContainerName are read.
    expect(r.stderr).not.toMatch(/ignored/);
    // Its trials are launched in Katib's image, which this agent refuses to run.
    const v = await waitFor('a trial of random to end', async () => {
      const x = await view('random');
      return x && x.trials.some((t) => t.state === 'Failed') ? x : undefined;
    }, 30_000);
    expect(v.trials.find((t) => t.state === 'Failed')!.message).toMatch(/cannot run container tasks/);
    expect(v.spec.trial).toMatchObject({ image: 'ghcr.io/kubeflow/katib/pytorch-mnist-cpu:latest', cpus: 0.5, memMb: 1024 });
    expect(v.spec.trial.argv?.slice(-2)).toEqual(['--lr=${trialParameters.learningRate}', '--momentum=${trialParameters.momentum}']);
    for (const t of v.trials) {
      expect(t.params.lr).toBeGreaterThanOrEqual(0.01);
      expect(t.params.lr).toBeLessThanOrEqual(0.05);
    }
    // Katib's image is not run here: the experiment is removed.
    const d = await runCairn(['tune', 'delete', 'random', '--master', master.url]);
    expect(d.code, d.stderr).toBe(0);
  }, 60_000);

  it('runs a copy whose program is here: each trial gets its values in its command, and resumes with more trials', async () => {
    const file = join(base, 'random.yaml');
    writeFileSync(file, runnableRandom());
    const r = await runCairn(['tune', 'submit', '-f', file, '--master', master.url, '--wait'], {}, 150_000);
    // minimize loss with goal 0.001: lr·momentum is never that low, so all 12 trials run.
    expect(r.stdout).toMatch(/experiment random Succeeded \(MaxTrialsReached\)/);
    let v = await settled('random');
    expect(v.trials.map((t) => t.state)).toEqual(Array(12).fill('Succeeded'));
    for (const t of v.trials) {
      const lr = t.params.lr as number;
      const momentum = t.params.momentum as number;
      expect(t.value).toBeCloseTo(lr * momentum, 12);
      // One epoch reported, and the result after it: no phantom second step.
      expect(t.intermediate).toEqual([{ step: 1, value: t.value }]);
    }
    const logs = await runCairn(['tune', 'logs', 'random', '0', '--master', master.url]);
    expect(logs.code, logs.stderr).toBe(0);
    expect(logs.stdout.split('\n')[0]).toBe(`argv --epochs=1 --batch-size=16 --lr=${v.trials[0]!.params.lr} --momentum=${v.trials[0]!.params.momentum}`);
    const best = await runCairn(['tune', 'best', 'random', '-o', 'json', '--master', master.url]);
    expect(best.code, best.stderr).toBe(0);
    expect(JSON.parse(best.stdout).intermediate).toHaveLength(1);

    // Its budget spent: resuming without more is refused, saying by how much; with more, it goes on.
    const refused = await runCairn(['tune', 'resume', 'random', '--master', master.url]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/ended MaxTrialsReached after 12 trials \(maxTrialCount 12\): give maxTrialCount above 12 to run more \(--max-trials sets maxTrialCount\)/);
    const resumed = await runCairn(['tune', 'resume', 'random', '--max-trials', '14', '--master', master.url]);
    expect(resumed.code, resumed.stderr).toBe(0);
    await waitFor('random to run again', async () => ((await view('random'))?.trials.length === 14 ? true : undefined), 60_000);
    v = await settled('random');
    expect(v).toMatchObject({ phase: 'Succeeded', reason: 'MaxTrialsReached', maxTrialCount: 14 });
    expect(v.trials.map((t) => t.state)).toEqual(Array(14).fill('Succeeded'));
    expect(v.conditions.map((c) => c.reason)).toContain('ExperimentResumed');
  }, 240_000);

  it('continues an experiment that reached its goal when given more trials; resumePolicy Never keeps one ended', async () => {
    // Every trial reaches loss <= 0.05 (lr·momentum is at most 0.045): each ends the search.
    const goal = runnableDoc('katib-goal', { objective: { type: 'minimize', goal: 0.05, objectiveMetricName: 'loss' }, parallelTrialCount: 1 });
    const r = await runCairn(['tune', 'submit', '-f', goal, '--master', master.url]);
    expect(r.code, r.stderr).toBe(0);
    let v = await settled('katib-goal');
    expect(v).toMatchObject({ phase: 'Succeeded', reason: 'GoalReached' });
    expect(v.trials).toHaveLength(1);
    const same = await runCairn(['tune', 'resume', 'katib-goal', '--max-trials', '1', '--master', master.url]);
    expect(same.code).toBe(1);
    expect(same.stderr).toMatch(/ended GoalReached after 1 trial \(maxTrialCount 12\): give maxTrialCount above 12 \(asked: 1\)/);
    const more = await runCairn(['tune', 'resume', 'katib-goal', '--max-trials', '13', '--master', master.url]);
    expect(more.code, more.stderr).toBe(0);
    await waitFor('katib-goal to run a second trial', async () => ((await view('katib-goal'))?.trials.length === 2 ? true : undefined), 60_000);
    v = await settled('katib-goal');
    expect(v).toMatchObject({ phase: 'Succeeded', reason: 'GoalReached', maxTrialCount: 13 });
    expect(v.trials.map((t) => t.state)).toEqual(['Succeeded', 'Succeeded']);

    const never = runnableDoc('katib-never', { resumePolicy: 'Never', parallelTrialCount: 1, maxTrialCount: 1 });
    expect((await runCairn(['tune', 'submit', '-f', never, '--master', master.url])).code).toBe(0);
    expect(await settled('katib-never')).toMatchObject({ phase: 'Succeeded', reason: 'MaxTrialsReached' });
    const refused = await runCairn(['tune', 'resume', 'katib-never', '--max-trials', '3', '--master', master.url]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/spec\.resumePolicy: experiment 'katib-never' has resumePolicy Never/);
    expect((await view('katib-never'))!.trials).toHaveLength(1);
  }, 240_000);

  it("runs pytorchjob-mnist.yaml's PyTorchJob trials as jobs, master and worker given the trial's values", async () => {
    // The same two changes in both replicas (master and worker), and 2 trials rather than 12.
    const text = readFileSync(PYTORCHJOB, 'utf8');
    expect(text.split(REPLICA_IMAGE_LINE)).toHaveLength(3);
    expect(text.split(PROGRAM)).toHaveLength(3);
    const doc = parseYaml(text.replaceAll(REPLICA_IMAGE_LINE, '').replaceAll(PROGRAM, join(base, 'mnist.py')));
    doc.spec.maxTrialCount = 2;
    const file = join(base, 'pytorchjob-mnist.json');
    writeFileSync(file, JSON.stringify(doc));
    const r = await runCairn(['tune', 'submit', '-f', file, '--master', master.url]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toBe('pytorchjob-mnist\n');
    const v = await settled('pytorchjob-mnist');
    expect(v, JSON.stringify(v.trials.map((t) => t.message))).toMatchObject({ phase: 'Succeeded', reason: 'MaxTrialsReached' });
    for (const t of v.trials) {
      expect(t.state).toBe('Succeeded');
      expect(t.value).toBeCloseTo((t.params.lr as number) * (t.params.momentum as number), 12);
      // The trial's job: a PyTorch job of a master and a worker, each given the trial's words.
      const job = await (await authFetch(`${master.url}/api/v1/jobs/${t.jobName}`)).json();
      expect(job.spec.kind).toBe('pytorch');
      for (const g of job.spec.groups) expect(g.template.args.slice(-2)).toEqual([`--lr=${t.params.lr}`, `--momentum=${t.params.momentum}`]);
      expect(job.spec.groups.map((g: { name: string }) => g.name)).toEqual(['master', 'worker']);
    }
  }, 180_000);
});
