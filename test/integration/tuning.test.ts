// Tuning on a real master and agent (processes): bad experiments refused naming the field with
// nothing created; the trial contract — parameters as CAIRN_PARAM_* variables, in
// params.json and in place of ${name} in the command, inputs linked in, shipped files written,
// outputs in a directory of each trial's own — and metrics read from stdout, failures
// counted, the experiment ending on its trial budget with the best trial found.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Cleanup, runCairn, startAgentProcess, startMasterProcess, waitFor, type CairnProcess } from '../harness/processes.ts';
import { authFetch } from '../harness/credentials.ts';
import type { ExperimentView } from '../../shared/tuning/views.ts';

const cleanup = new Cleanup();
let master: CairnProcess;
let base: string;

beforeAll(async () => {
  base = cleanup.dir('cairn-tuning-');
  chmodSync(base, 0o777);
  master = await startMasterProcess(cleanup);
  // Trials run as the agent's task user: it must reach $CAIRN_SANDBOX/params.json by its path.
  const workDir = cleanup.dir('cairn-agent-');
  chmodSync(workDir, 0o755);
  await startAgentProcess(cleanup, master.url, { workDir, resources: 'cpus:4;mem:2048;ports:[31000-31099]' });
}, 60_000);

afterAll(async () => {
  await cleanup.run();
}, 60_000);

async function post(doc: unknown): Promise<{ status: number; body: any }> {
  const r = await authFetch(`${master.url}/api/v1/experiments`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(doc) });
  return { status: r.status, body: await r.json() };
}

async function view(name: string): Promise<ExperimentView | undefined> {
  const r = await authFetch(`${master.url}/api/v1/experiments/${name}`);
  return r.status === 200 ? ((await r.json()) as ExperimentView) : undefined;
}

/** An event stream read in the background; `ended` resolves with its events once the server ends it. */
async function readEvents(url: string): Promise<{ ended: Promise<{ event: string; data: any }[]> }> {
  const res = await authFetch(url);
  expect(res.status).toBe(200);
  const ended = (async () => {
    const text = await res.text();
    return text.split('\n\n').filter((b) => b.startsWith('event: ')).map((b) => {
      const [head, data] = b.split('\n');
      return { event: head!.slice('event: '.length), data: JSON.parse(data!.slice('data: '.length)) };
    });
  })();
  return { ended };
}

function experiment(name: string, spec: Record<string, unknown> = {}, trial: Record<string, unknown> = {}): unknown {
  return {
    apiVersion: 'kubeflow.org/v1beta1', kind: 'Experiment', metadata: { name },
    spec: {
      objective: { type: 'maximize', objectiveMetricName: 'accuracy' },
      algorithm: { algorithmName: 'random' },
      parallelTrialCount: 2, maxTrialCount: 4,
      parameters: [{ name: 'lr', parameterType: 'double', feasibleSpace: { min: '0.1', max: '0.9' } }],
      trialTemplate: { command: 'echo accuracy=${lr}', resources: { cpus: 0.25, memory: '64M' }, ...trial },
      ...spec,
    },
  };
}

describe('tuning experiments on a real cluster', () => {
  it('refuses bad experiments naming the field, and creates nothing', async () => {
    const cases: [unknown, RegExp, string][] = [
      [experiment('bad-algo', { algorithm: { algorithmName: 'simulated-annealing' } }), /unknown algorithm "simulated-annealing"/, 'spec.algorithm.algorithmName'],
      [experiment('bad-empty', { parameters: [] }), /empty/, 'spec.parameters'],
      [experiment('bad-bound', { parameters: '{"parameters": [{"name": "lr", "type": "bound", "value": [0.5, 0.1]}],}' }), /low > high/, 'spec.parameters.lr.value'],
      [experiment('bad-ref', {}, { command: 'train --lr ${lr} --wd ${weight_decay}' }), /\$\{weight_decay\}/, 'spec.trialTemplate.command'],
      [experiment('bad-mem', {}, { resources: { cpus: 1, memory: '5X' } }), /'5X' is not a size/, 'spec.trialTemplate.resources.memory'],
      [experiment('bad-core', { appCore: { cpus: 2, memory: '1X' } }), /'1X' is not a size/, 'spec.appCore.memory'],
    ];
    for (const [doc, message, field] of cases) {
      const r = await post(doc);
      expect(r.status, JSON.stringify(r.body)).toBe(400);
      expect(r.body.field).toBe(field);
      expect(r.body.message).toMatch(message);
    }
    const list = await (await authFetch(`${master.url}/api/v1/experiments`)).json();
    expect(list.experiments).toEqual([]);
  });

  it('gives each trial its parameters three ways, its inputs, files and outputs, and reads its metrics', async () => {
    const input = join(base, 'input');
    const output = join(base, 'output');
    mkdirSync(input);
    mkdirSync(output);
    chmodSync(output, 0o777);
    writeFileSync(join(input, 'hello.txt'), 'data\n');
    const command = [
      'test "$CAIRN_PARAM_LR" = ${lr} || { echo "env $CAIRN_PARAM_LR is not ${lr}" >&2; exit 3; }',
      'grep -q "\\"opt\\":\\"$CAIRN_PARAM_OPT\\"" "$CAIRN_SANDBOX/params.json" || { cat "$CAIRN_SANDBOX/params.json" >&2; exit 4; }',
      'test "$(cat data/hello.txt)" = data || exit 5',
      'test "$(cat helper.txt)" = shipped || exit 6',
      'echo "$CAIRN_TRIAL" > out/marker',
      'if [ ${opt} = bad ]; then echo accuracy=1; exit 1; fi',
      'echo "step=1 accuracy=0.01"',
      'echo "accuracy=${lr} loss=0.5"',
    ].join('\n');
    const r = await post(experiment('contract', {
      parallelTrialCount: 3, maxTrialCount: 8, maxFailedTrialCount: 8, seed: 11,
      parameters: [
        { name: 'lr', parameterType: 'double', feasibleSpace: { min: '0.1', max: '0.9' } },
        { name: 'opt', parameterType: 'categorical', feasibleSpace: { list: ['sgd', 'adam', 'bad'] } },
      ],
    }, {
      command,
      inputs: [`${input}#data`], outputs: [`${output}#out`],
      files: [{ name: 'helper.txt', base64: Buffer.from('shipped\n').toString('base64') }],
    }));
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    expect(r.body.seed).toBe(11);
    const done = await waitFor('the experiment to end', async () => {
      const v = await view('contract');
      return v && v.phase !== 'Running' ? v : undefined;
    }, 120_000, 200);
    expect(done.phase, JSON.stringify(done.trials.map((t) => [t.state, t.message]))).toBe('Succeeded');
    expect(done.reason).toBe('MaxTrialsReached');
    expect(done.trials).toHaveLength(8);
    const bad = done.trials.filter((t) => t.params.opt === 'bad');
    const good = done.trials.filter((t) => t.params.opt !== 'bad');
    expect(bad.length).toBeGreaterThan(0);
    expect(good.length).toBeGreaterThan(0);
    const stderr = async (taskId: string) => (await (await authFetch(`${master.url}/api/v1/tasks/${taskId}/logs?stream=stderr&offset=0`)).json()).data as string;
    for (const t of bad) expect(t, `${t.message}: ${await stderr(t.taskId!)}`).toMatchObject({ state: 'Failed', exitCode: 1 });
    for (const t of good) {
      expect(t.state, t.message).toBe('Succeeded');
      // The metric is the parameter itself, as printed by the trial (the last report counts).
      expect(t.value).toBeCloseTo(t.params.lr as number, 10);
      expect(t.metrics.loss).toBe(0.5);
      // Step 1 given, then the result on a line without a step: no phantom step 2.
      expect(t.intermediate).toEqual([{ step: 1, value: 0.01 }]);
    }
    for (const t of done.trials) expect(readFileSync(join(output, `contract-${t.index}`, 'marker'), 'utf8').trim()).toBe(String(t.index));
    const best = Math.max(...good.map((t) => t.value!));
    expect(done.best?.value).toBe(best);
    expect(done.counts).toMatchObject({ Succeeded: good.length, Failed: bad.length });
    // Its framework is gone once it settled.
    await waitFor('the experiment\'s framework torn down', async () => {
      const s = await (await authFetch(`${master.url}/api/v1/state`)).json();
      return s.frameworks.some((f: { name: string }) => f.name === 'tuning:contract') ? undefined : true;
    }, 30_000, 200);
    expect(existsSync(join(output, 'contract-0'))).toBe(true);
    // A trial's log, by experiment and index.
    const logs = await runCairn(['tune', 'logs', 'contract', String(good[0]!.index), '--master', master.url]);
    expect(logs.code, logs.stderr).toBe(0);
    expect(logs.stdout).toBe(`step=1 accuracy=0.01\naccuracy=${good[0]!.params.lr} loss=0.5\n`);
    const missing = await runCairn(['tune', 'logs', 'contract', '99', '--master', master.url]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/has no trial 99 \(it has 0 to 7\)/);
  }, 180_000);

  it('stops a running experiment, killing its trials, and resumes it', async () => {
    const go = join(base, 'go-stop');
    const r = await post(experiment('pausable', { parallelTrialCount: 2, maxTrialCount: 3 }, {
      command: `while [ ! -f ${go} ]; do sleep 0.1; done; echo accuracy=\${lr}`,
    }));
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    const events = await readEvents(`${master.url}/api/v1/experiments/pausable/events`);
    await waitFor('two trials running', async () => (await view('pausable'))?.counts.Running === 2 || undefined, 60_000, 100);
    const stop = await authFetch(`${master.url}/api/v1/experiments/pausable/stop`, { method: 'POST' });
    expect(stop.status).toBe(200);
    const stopped = await waitFor('both trials killed', async () => {
      const v = await view('pausable');
      return v?.phase === 'Stopped' && v.counts.Killed === 2 ? v : undefined;
    }, 60_000, 100);
    expect(stopped.trials.map((t) => t.state)).toEqual(['Killed', 'Killed']);
    writeFileSync(go, '');
    const resume = await authFetch(`${master.url}/api/v1/experiments/pausable/resume`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    expect(resume.status, await resume.clone().text()).toBe(200);
    // Stopped, with nothing running, the experiment had ended: so had its event stream.
    const stoppedStory = await events.ended;
    expect(stoppedStory.at(-1)).toMatchObject({ event: 'finished', data: { phase: 'Stopped', reason: 'ExperimentStopped' } });
    expect(stoppedStory.filter((e) => e.event === 'trial' && e.data.state === 'Killed').map((e) => e.data.index).sort()).toEqual([0, 1]);
    const resumed = await readEvents(`${master.url}/api/v1/experiments/pausable/events`);
    const done = await waitFor('the resumed experiment to end', async () => {
      const v = await view('pausable');
      return v && v.phase !== 'Running' ? v : undefined;
    }, 60_000, 200);
    expect(done.phase).toBe('Succeeded');
    expect(done.trials.map((t) => t.state)).toEqual(['Succeeded', 'Succeeded', 'Succeeded']);
    // The two killed trials ran again with the same parameters.
    expect(done.trials.slice(0, 2).map((t) => [t.params.lr, t.attempt])).toEqual(stopped.trials.map((t) => [t.params.lr, 2]));
    const again = await authFetch(`${master.url}/api/v1/experiments/pausable/resume`, { method: 'POST' });
    expect(again.status).toBe(409);
    // A stream opened later tells the whole story so far, and ends with it.
    const story = await resumed.ended;
    const conditions = story.filter((e) => e.event === 'condition').map((e) => e.data.reason);
    expect(conditions).toEqual(['ExperimentCreated', 'ExperimentStopped', 'ExperimentResumed', 'MaxTrialsReached']);
    expect(story.filter((e) => e.event === 'trial' && e.data.index === 2).at(-1)?.data.state).toBe('Succeeded');
    expect(story.at(-1)).toMatchObject({ event: 'finished', data: { phase: 'Succeeded', reason: 'MaxTrialsReached' } });
  }, 180_000);

  it('runs a distributed trial as a job of the job engine, its metrics read from the first replica', async () => {
    const r = await post({
      kind: 'Experiment', metadata: { name: 'ddp' },
      spec: {
        objective: { type: 'minimize', objectiveMetricName: 'loss' },
        algorithm: { algorithmName: 'sobol' },
        parallelTrialCount: 2, maxTrialCount: 3, seed: 4,
        parameters: [{ name: 'lr', parameterType: 'double', feasibleSpace: { min: '0.01', max: '0.5' } }],
        trialTemplate: {
          job: {
            name: 'ignored', kind: 'pytorch',
            groups: [
              { name: 'master', template: { command: 'test "$WORLD_SIZE" = 2 || exit 7; echo step=1 loss=9; echo "loss=${lr}"', cpus: 0.25, mem: 32 } },
              { name: 'worker', replicas: 1, template: { command: 'test "$CAIRN_PARAM_LR" = ${lr} && test "$RANK" = 1', cpus: 0.25, mem: 32 } },
            ],
          },
        },
      },
    });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    const done = await waitFor('the experiment to end', async () => {
      const v = await view('ddp');
      return v && v.phase !== 'Running' ? v : undefined;
    }, 120_000, 200);
    expect(done.phase, JSON.stringify(done.trials.map((t) => [t.state, t.message]))).toBe('Succeeded');
    expect(done.trials).toHaveLength(3);
    for (const t of done.trials) {
      expect(t.state, t.message).toBe('Succeeded');
      expect(t.value).toBeCloseTo(t.params.lr as number, 10);
      // Step 1 given; the last line, without a step, is the result and no step of its own.
      expect(t.intermediate).toEqual([{ step: 1, value: 9 }]);
      // The trial's job: both replicas ran and succeeded, in the jobs framework.
      // The master's end decides the job; the worker's own end is recorded a moment later.
      const replicas = (job: { replicas: { group: string; state: string }[] }) => job.replicas.map((x) => `${x.group}:${x.state}`);
      const job = await waitFor(`job ${t.jobName}'s replicas to end`, async () => {
        const j = await (await authFetch(`${master.url}/api/v1/jobs/${t.jobName}`)).json();
        return replicas(j).every((x) => !x.endsWith(':Running') && !x.endsWith(':Starting')) ? j : undefined;
      }, 30_000, 100);
      expect(job.phase).toBe('Succeeded');
      expect(replicas(job)).toEqual(['master:Succeeded', 'worker:Succeeded']);
    }
    expect(done.best?.value).toBe(Math.min(...done.trials.map((t) => t.value!)));
  }, 180_000);

  it('refuses a distributed trial whose job document is wrong, naming its field', async () => {
    const r = await post(experiment('bad-job', {}, { command: undefined, resources: undefined, job: { kind: 'pytorch', groups: [{ name: 'master', replicas: 0, template: { command: 'train ${lr}' } }] } }));
    expect(r.status, JSON.stringify(r.body)).toBe(400);
    expect(r.body.field).toMatch(/^spec\.trialTemplate\.job\.groups\[0\]/);
  });
});
