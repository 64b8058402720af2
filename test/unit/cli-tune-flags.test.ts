// cairn tune submit's flags as the experiment document the master takes: the tuning paper's
// command line exactly as written, Cairn's further flags, every bad value refused naming its
// flag before anything is sent, --files shipped as the files' real bytes, the paper's
// parameter file told from an NNI search space; then the other tune commands against a small
// fake master (submit --wait, show, best, list, stop, resume, delete).

import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CairnError } from '../../shared/errors.ts';
import { runCli } from '../../bin/commands/program.ts';
import { experimentFromFlags, parameterFile, sizeFlag, type TuneFlags } from '../../bin/commands/tune/flags.ts';
import { describeExperiment, experimentsTable, trialLine } from '../../bin/commands/tune/commands.ts';
import { parseExperimentDocument } from '../../master/frameworks/tuning/spec-parse.ts';
import { paramNames } from '../../shared/tuning/space/sample.ts';
import type { ExperimentView, TrialView } from '../../shared/tuning/views.ts';
import { cli } from '../harness/cli-capture.ts';
import type { CliIo } from '../../bin/commands/common/io.ts';

const NOW = Date.UTC(2026, 0, 2, 3, 4, 5);
const dir = mkdtempSync(join(tmpdir(), 'cairn-tune-flags-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

// The paper's parameter file, its trailing commas included.
const PAPER_TEXT = `{"parameters": [
  {"name": "learning_rate", "type": "bound", "value": [0.0005, 0.5]},
  {"name": "momentum", "type": "bound", "value": [0.0, 0.99]},
  {"name": "batch_size", "type": "number", "value": [16, 32, 64, 128, 256]},
],}
`;
const NNI = { lr: { _type: 'loguniform', _value: [0.0001, 0.1] }, layers: { _type: 'choice', _value: [1, 2, 3] } };
const KATIB = { parameters: [{ name: 'lr', parameterType: 'double', feasibleSpace: { min: '0.01', max: '0.1' } }] };

const paperFile = join(dir, 'demo-parameters.json');
const nniFile = join(dir, 'nni-space.json');
const katibFile = join(dir, 'katib-parameters.json');
const trainPy = join(dir, 'train.py');
const weights = join(dir, 'weights.bin');
writeFileSync(paperFile, PAPER_TEXT);
writeFileSync(nniFile, JSON.stringify(NNI));
writeFileSync(katibFile, JSON.stringify(KATIB));
writeFileSync(trainPy, 'print("hi")\n');
// Every byte value, so an encoding that mangles binary shows.
writeFileSync(weights, Buffer.from(Array.from({ length: 256 }, (_, i) => i)));

const LAUNCH = 'python3 train.py --lr ${learning_rate} --momentum ${momentum} --batch-size ${batch_size}';

/** The paper's submission, flag for flag. */
const PAPER_ARGV = [
  'tune', 'submit',
  '--app-name', 'mnist-demo',
  '--input', '/data/mnist#mnist',
  '--input', '/data/vocab#vocab',
  '--output', '/data/models#models',
  '--files', `${trainPy},${weights}`,
  '--app-runner-launch-cmd', LAUNCH,
  '--app-runner-memory', '5G',
  '--app-runner-cpus', '3',
  '--app-core-memory', '1G',
  '--app-core-cpus', '2',
  '--trail-steps', '100',
  '--tuning-type', 'bayesian',
  '--tuning-parameters', paperFile,
];

const PAPER_DOCUMENT = {
  kind: 'Experiment',
  metadata: { name: 'mnist-demo' },
  spec: {
    objective: { type: 'maximize', objectiveMetricName: 'accuracy' },
    algorithm: { algorithmName: 'bayesian' },
    parallelTrialCount: 1,
    maxTrialCount: 100,
    parameters: PAPER_TEXT,
    appCore: { cpus: 2, memory: '1G' },
    trialTemplate: {
      command: LAUNCH,
      resources: { cpus: 3, memory: '5G' },
      inputs: ['/data/mnist#mnist', '/data/vocab#vocab'],
      outputs: ['/data/models#models'],
      files: [
        { name: 'train.py', base64: 'cHJpbnQoImhpIikK' },
        { name: 'weights.bin', base64: Buffer.from(Array.from({ length: 256 }, (_, i) => i)).toString('base64') },
      ],
    },
  },
};

function refused(flags: TuneFlags): CairnError {
  try {
    experimentFromFlags(flags, NOW);
  } catch (err) {
    expect(err).toBeInstanceOf(CairnError);
    expect((err as CairnError).code).toBe('CAIRN_BAD_FLAG');
    return err as CairnError;
  }
  throw new Error('expected the flags to be refused');
}

const BASE: TuneFlags = { appRunnerLaunchCmd: LAUNCH, tuningParameters: paperFile };

describe('cairn tune submit: the paper\'s flags', () => {
  it('the paper\'s full submission is exactly this document (--dry-run prints it and sends nothing)', async () => {
    const r = await cli([...PAPER_ARGV, '--dry-run', '--master', 'http://127.0.0.1:1']);
    expect(r.err).toBe('');
    expect(r.code).toBe(0);
    expect(JSON.parse(r.out)).toEqual(PAPER_DOCUMENT);
    expect(r.out.endsWith('}\n')).toBe(true);
  });

  it('the master accepts it: 5G is 5 GiB, bayesian its Bayesian optimisation, the App Core reported ignored', () => {
    const { spec, ignored } = parseExperimentDocument(PAPER_DOCUMENT, undefined, { seed: 7 });
    expect(spec.name).toBe('mnist-demo');
    expect(spec.algorithm.name).toBe('bayesianoptimization');
    expect(spec.maxTrialCount).toBe(100);
    expect(spec.parallelTrialCount).toBe(1);
    expect(spec.trial).toMatchObject({ cpus: 3, memMb: 5120, inputs: [{ hostPath: '/data/mnist', name: 'mnist' }, { hostPath: '/data/vocab', name: 'vocab' }], outputs: [{ hostPath: '/data/models', name: 'models' }] });
    expect(spec.space.params.map((p) => p.name)).toEqual(['learning_rate', 'momentum', 'batch_size']);
    expect(ignored.map((i) => i.field)).toEqual(['spec.appCore']);
  });

  it('--files ships each file\'s real bytes, base64, under its own name', () => {
    const doc = experimentFromFlags({ ...BASE, files: [`${trainPy},${weights}`] }, NOW) as { spec: { trialTemplate: { files: { name: string; base64: string }[] } } };
    const [py, bin] = doc.spec.trialTemplate.files;
    expect(py).toEqual({ name: 'train.py', base64: 'cHJpbnQoImhpIikK' });
    expect(Buffer.from(py.base64, 'base64').toString('utf8')).toBe('print("hi")\n');
    expect(bin.name).toBe('weights.bin');
    expect([...Buffer.from(bin.base64, 'base64')]).toEqual(Array.from({ length: 256 }, (_, i) => i));
    // Repeated --files add up, as F1,F2 does.
    const twice = experimentFromFlags({ ...BASE, files: [trainPy, weights] }, NOW) as typeof doc;
    expect(twice.spec.trialTemplate.files).toEqual(doc.spec.trialTemplate.files);
  });

  it('Cairn\'s own flags: objective, parallelism, seed, early stopping, settings, scheduling, image, env, role, timeout, gpus', () => {
    const doc = experimentFromFlags({
      appName: 'lossy', appRunnerLaunchCmd: 'python3 t.py --lr ${lr}', tuningParameters: nniFile, trialSteps: '20',
      metric: 'val-loss', goal: '0.05', minimize: true, parallelism: '4', seed: '42', maxFailed: '0',
      tuningType: 'tpe', algorithmSetting: ['n_startup_trials=5', 'gamma=0.25'],
      earlyStopping: 'asha', earlyStoppingSetting: ['min_resource=2'], scheduling: 'dynamic',
      image: 'python:3.12-slim', env: ['A=1', 'B=x=y'], role: 'ml', trialTimeout: 90_500, gpus: '1', appRunnerMemory: '1.5gi',
    }, NOW);
    expect(doc).toEqual({
      kind: 'Experiment',
      metadata: { name: 'lossy' },
      spec: {
        objective: { type: 'minimize', objectiveMetricName: 'val-loss', goal: 0.05 },
        algorithm: { algorithmName: 'tpe', algorithmSettings: [{ name: 'n_startup_trials', value: '5' }, { name: 'gamma', value: '0.25' }] },
        earlyStopping: { algorithmName: 'asha', algorithmSettings: [{ name: 'min_resource', value: '2' }] },
        parallelTrialCount: 4,
        maxTrialCount: 20,
        maxFailedTrialCount: 0,
        searchSpace: NNI,
        seed: 42,
        role: 'ml',
        scheduling: { policy: 'dynamic' },
        trialTemplate: {
          command: 'python3 t.py --lr ${lr}',
          image: 'python:3.12-slim',
          resources: { memory: '1.5Gi', gpus: 1 },
          env: { A: '1', B: 'x=y' },
          timeoutSeconds: 91,
        },
      },
    });
    const { spec } = parseExperimentDocument(doc, undefined, { seed: 1 });
    expect(spec.trial).toMatchObject({ memMb: 1536, gpus: 1, timeoutSeconds: 91, image: 'python:3.12-slim' });
    expect(spec.earlyStopping?.name).toBe('asha');
  });

  it('defaults: a name from the time, random search, maximize accuracy, one trial at a time', () => {
    expect(experimentFromFlags(BASE, NOW)).toEqual({
      kind: 'Experiment',
      metadata: { name: `tune-${NOW.toString(36)}` },
      spec: {
        objective: { type: 'maximize', objectiveMetricName: 'accuracy' },
        algorithm: { algorithmName: 'random' },
        parallelTrialCount: 1,
        parameters: PAPER_TEXT,
        trialTemplate: { command: LAUNCH },
      },
    });
  });

  it('--trial-steps is --trail-steps\' alias, through the command line as well', async () => {
    const r = await cli(['tune', 'submit', '--dry-run', '--app-runner-launch-cmd', 'true', '--tuning-parameters', paperFile, '--trial-steps', '7', '--app-name', 'x']);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.out).spec.maxTrialCount).toBe(7);
    const both = await cli(['tune', 'submit', '--dry-run', '--app-runner-launch-cmd', 'true', '--tuning-parameters', paperFile, '--trial-steps', '7', '--trail-steps', '8']);
    expect(both.code).toBe(2);
    expect(both.err).toMatch(/^error: --trial-steps: /);
  });

  it('sizes: a number and B, K(B), M(B), G(B), T(B), Ki, Mi, Gi, Ti in any case', () => {
    expect(['512', '512M', '512mb', '1.5g', '5G', '5GB', '2t', '100kb', '1024B', '5Gi', '5gi', '256mi', '1TI', '64Ki'].map((v) => sizeFlag(v, '--x'))).toEqual(
      ['512', '512M', '512MB', '1.5G', '5G', '5GB', '2T', '100KB', '1024B', '5Gi', '5Gi', '256Mi', '1Ti', '64Ki'],
    );
    for (const bad of ['5X', '0G', '0', '-1G', 'G', '1e9', '5 GiB', '.5G', '']) {
      expect(() => sizeFlag(bad, '--app-runner-memory'), bad).toThrow(/^--app-runner-memory: /);
    }
  });
});

describe("the tuning paper's Figure 3, as printed (test/fixtures/seed-001-paper-submit)", () => {
  const seed = fileURLToPath(new URL('../fixtures/seed-001-paper-submit/', import.meta.url));
  const cairn = fileURLToPath(new URL('../../bin/cairn.js', import.meta.url));

  it('its submit.sh, run by sh with da-submit being `cairn tune submit`, parses: testAutoML is the experiment testautoml', () => {
    // The script and the parameter file byte for byte (trailing backslash, trailing comma);
    // da-submit is cairn tune submit --dry-run, run where the user's demo.py lies.
    const work = mkdtempSync(join(dir, 'figure3-'));
    mkdirSync(join(work, 'bin'));
    writeFileSync(join(work, 'bin', 'da-submit'), `#!/bin/sh\nexec "${process.execPath}" "${cairn}" tune submit --dry-run "$@"\n`, { mode: 0o755 });
    writeFileSync(join(work, 'demo.py'), 'print("accuracy=0.5")\n');
    copyFileSync(join(seed, 'demo-parameters.json'), join(work, 'demo-parameters.json'));
    const r = spawnSync('/bin/sh', [join(seed, 'submit.sh')], { cwd: work, env: { ...process.env, DISAUTO_HOME: work, CAIRN_LOG_LEVEL: 'warn' }, encoding: 'utf8', timeout: 60_000 });
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    const doc = JSON.parse(r.stdout);
    expect(doc.metadata).toEqual({ name: 'testAutoML' });
    expect(doc.spec.trialTemplate).toMatchObject({ command: 'python demo.py', resources: { cpus: 3, memory: '5G' }, inputs: ['/tmp/data/testAutoML#data'], outputs: ['/tmp/testAutoML_model#model'] });
    expect(doc.spec.trialTemplate.files.map((f: { name: string }) => f.name)).toEqual(['demo.py']);
    const { spec, ignored } = parseExperimentDocument(doc, undefined, { seed: 1 });
    expect(spec.name).toBe('testautoml');
    expect(spec.displayName).toBe('testAutoML');
    expect(spec.maxTrialCount).toBe(100);
    expect(spec.algorithm.name).toBe('random');
    expect(spec.trial).toMatchObject({ cpus: 3, memMb: 5120, inputs: [{ hostPath: '/tmp/data/testAutoML', name: 'data' }], outputs: [{ hostPath: '/tmp/testAutoML_model', name: 'model' }] });
    expect(paramNames(spec.space)).toEqual(['momentum', 'learningRate']);
    expect(ignored.map((i) => i.field)).toContain('spec.appCore');
  }, 60_000);

  it('names in any case become DNS labels, the name given kept to show; what stays no label is refused naming the field', () => {
    const named = (appName: string) => parseExperimentDocument(experimentFromFlags({ ...BASE, appName }, NOW)).spec;
    expect(named('testAutoML')).toMatchObject({ name: 'testautoml', displayName: 'testAutoML' });
    expect(named('My_Experiment.v2')).toMatchObject({ name: 'my-experiment-v2', displayName: 'My_Experiment.v2' });
    expect(named('digits').displayName).toBeUndefined();
    expect(refused({ ...BASE, appName: 'test AutoML' }).field).toBe('--app-name');
    expect(refused({ ...BASE, appName: '_x' }).message).toContain('upper case is taken as lower case');
    expect(() => parseExperimentDocument({ ...PAPER_DOCUMENT, metadata: { name: 'bad name!' } })).toThrowError(expect.objectContaining({ field: 'metadata.name' }));
    expect(describeExperiment(view('Running', [], { name: 'testautoml', displayName: 'testAutoML' }), NOW)).toContain('Name:        testautoml (testAutoML)\n');
  });

  it('--priority-class in any case, or an alias, is sent as given for the master to resolve; a malformed one is refused naming the flag', () => {
    expect((experimentFromFlags({ ...BASE, priorityClass: 'PTR' }, NOW).spec as Record<string, unknown>).priorityClassName).toBe('PTR');
    expect(parseExperimentDocument(experimentFromFlags({ ...BASE, priorityClass: 'Production' }, NOW)).spec.priorityClass).toBe('Production');
    expect(refused({ ...BASE, priorityClass: 'not a class' }).field).toBe('--priority-class');
  });
});

describe('cairn tune submit: bad flags are refused before anything is sent, naming the flag', () => {
  it('each bad value, named', () => {
    const cases: [TuneFlags, string][] = [
      [{ ...BASE, appRunnerMemory: '5X' }, '--app-runner-memory'],
      [{ ...BASE, appCoreMemory: '0G' }, '--app-core-memory'],
      [{ ...BASE, appRunnerCpus: '0' }, '--app-runner-cpus'],
      [{ ...BASE, appCoreCpus: 'two' }, '--app-core-cpus'],
      [{ ...BASE, trailSteps: '1.5' }, '--trail-steps'],
      [{ ...BASE, trailSteps: 'ten' }, '--trail-steps'],
      [{ ...BASE, trailSteps: '0' }, '--trail-steps'],
      [{ ...BASE, trialSteps: '2.5' }, '--trial-steps'],
      [{ tuningParameters: paperFile }, '--app-runner-launch-cmd'],
      [{ ...BASE, appRunnerLaunchCmd: '  ' }, '--app-runner-launch-cmd'],
      [{ ...BASE, appRunnerLaunchCmd: 'python3 t.py --lr ${lr}' }, '--app-runner-launch-cmd'],
      [{ appRunnerLaunchCmd: LAUNCH }, '--tuning-parameters'],
      [{ ...BASE, input: ['data/mnist#mnist'] }, '--input'],
      [{ ...BASE, input: ['/data/mnist#../up'] }, '--input'],
      [{ ...BASE, output: ['models#m'] }, '--output'],
      [{ ...BASE, appName: 'My Experiment' }, '--app-name'],
      [{ ...BASE, appName: 'a'.repeat(49) }, '--app-name'],
      [{ ...BASE, tuningType: 'hill-climbing' }, '--tuning-type'],
      [{ ...BASE, parallelism: '0' }, '--parallelism'],
      [{ ...BASE, seed: 'x' }, '--seed'],
      [{ ...BASE, maxFailed: '-1' }, '--max-failed'],
      [{ ...BASE, goal: 'high' }, '--goal'],
      [{ ...BASE, metric: 'val loss' }, '--metric'],
      [{ ...BASE, maximize: true, minimize: true }, '--minimize'],
      [{ ...BASE, earlyStopping: 'never' }, '--early-stopping'],
      [{ ...BASE, earlyStoppingSetting: ['min_resource=2'] }, '--early-stopping-setting'],
      [{ ...BASE, algorithmSetting: ['gamma'] }, '--algorithm-setting'],
      [{ ...BASE, scheduling: 'lifo' }, '--scheduling'],
      [{ ...BASE, image: 'not an image' }, '--image'],
      [{ ...BASE, env: ['1X=y'] }, '--env'],
      [{ ...BASE, role: 'bad role' }, '--role'],
      [{ ...BASE, gpus: '0.5' }, '--gpus'],
      [{ ...BASE, files: [join(dir, 'missing.py')] }, '--files'],
      [{ ...BASE, files: [`${trainPy},${trainPy}`] }, '--files'],
      [{ ...BASE, tuningParameters: join(dir, 'missing.json') }, '--tuning-parameters'],
    ];
    for (const [flags, flag] of cases) {
      const err = refused(flags);
      expect(err.field, JSON.stringify(flags)).toBe(flag);
      expect(err.message.startsWith(`${flag}: `), err.message).toBe(true);
    }
    // The message says what to fix.
    expect(refused({ ...BASE, appRunnerMemory: '5X' }).message).toBe("--app-runner-memory: '5X' is not a size: a number greater than 0 with an optional unit (B, K, KB, M, MB, G, GB, T, TB, Ki, Mi, Gi, Ti), e.g. 512M or 5G");
    expect(refused({ ...BASE, trailSteps: '1.5' }).message).toBe("--trail-steps: must be a whole number of 1 or more, not '1.5'");
    expect(refused({ ...BASE, files: [join(dir, 'missing.py')] }).message).toBe(`--files: cannot read ${join(dir, 'missing.py')}: no such file`);
    expect(refused({ ...BASE, input: ['data/mnist#mnist'] }).message).toBe("--input: 'data/mnist#mnist' needs an absolute path on the agents, as /data/mnist#mnist");
    expect(refused({ ...BASE, appRunnerLaunchCmd: 'python3 t.py --lr ${lr}' }).message).toBe(`--app-runner-launch-cmd: refers to \${lr}, which is no parameter of ${paperFile} (parameters: learning_rate, momentum, batch_size)`);
  });

  it('through the command line: exit 2, the flag named on stderr, nothing on stdout', async () => {
    const cases: [string[], RegExp][] = [
      [['--app-runner-memory', '5X'], /^error: --app-runner-memory: '5X' is not a size/],
      [['--trail-steps', '12.5'], /^error: --trail-steps: /],
      [['--input', 'relative/path#x'], /^error: --input: /],
      [['--files', join(dir, 'nope.txt')], /^error: --files: cannot read .*nope\.txt: no such file/],
      [['--trial-timeout', '5'], /^error: option '--trial-timeout <duration>' argument '5' is invalid/],
      [['--maximize', '--minimize'], /^error: --minimize: /],
    ];
    for (const [extra, message] of cases) {
      const r = await cli(['tune', 'submit', '--dry-run', '--app-runner-launch-cmd', LAUNCH, '--tuning-parameters', paperFile, ...extra]);
      expect(r.code, extra.join(' ')).toBe(2);
      expect(r.err, extra.join(' ')).toMatch(message);
      expect(r.out).toBe('');
    }
    const missing = await cli(['tune', 'submit', '--dry-run', '--tuning-parameters', paperFile]);
    expect(missing.code).toBe(2);
    expect(missing.err).toMatch(/^error: --app-runner-launch-cmd: is required/);
  });

  it('-f takes a file as it is, and no document flags beside it', async () => {
    const yamlFile = join(dir, 'experiment.yaml');
    writeFileSync(yamlFile, 'kind: Experiment\nmetadata:\n  name: from-file\nspec:\n  parallelTrialCount: 2\n');
    const r = await cli(['tune', 'submit', '-f', yamlFile, '--dry-run']);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.out)).toEqual({ kind: 'Experiment', metadata: { name: 'from-file' }, spec: { parallelTrialCount: 2 } });
    const both = await cli(['tune', 'submit', '-f', yamlFile, '--app-name', 'x', '--trail-steps', '3']);
    expect(both.code).toBe(2);
    expect(both.err).toMatch(/give the file or the flags, not both \(--app-name, --trail-steps\)/);
  });
});

describe('--tuning-parameters: the paper\'s file or an NNI search space', () => {
  it('a top-level "parameters" key: the paper\'s file, sent as its text, trailing commas and all', () => {
    const p = parameterFile(paperFile);
    expect(p.field).toEqual({ parameters: PAPER_TEXT });
    expect(p.space.params.map((x) => x.kind)).toEqual(['double', 'double', 'categorical']);
    // The example the repository ships is one too.
    const shipped = fileURLToPath(new URL('../../examples/tuning/demo-parameters.json', import.meta.url));
    expect(parameterFile(shipped).field).toEqual({ parameters: readFileSync(shipped, 'utf8') });
  });

  it('anything else: an NNI space, parsed and sent as spec.searchSpace', () => {
    const p = parameterFile(nniFile);
    expect(p.field).toEqual({ searchSpace: NNI });
    expect(p.space.params.map((x) => x.name)).toEqual(['lr', 'layers']);
    // An NNI parameter that happens to be called "parameters" is still NNI.
    const named = join(dir, 'nni-named.json');
    writeFileSync(named, JSON.stringify({ parameters: { _type: 'choice', _value: [1, 2] } }));
    expect(parameterFile(named).field).toEqual({ searchSpace: { parameters: { _type: 'choice', _value: [1, 2] } } });
  });

  it('Katib\'s parameter list under "parameters" is sent as the list', () => {
    expect(parameterFile(katibFile).field).toEqual({ parameters: KATIB.parameters });
  });

  it('a bad file is refused naming --tuning-parameters, the file and where in it', () => {
    const notJson = join(dir, 'broken.json');
    writeFileSync(notJson, '{"parameters": [ {"name": "lr", "type": "bound", "value": [0.1 0.2]} ]}');
    expect(() => parameterFile(notJson)).toThrow(new RegExp(`^--tuning-parameters: ${notJson}: not valid JSON at line 1, column `));
    const badBound = join(dir, 'bad-bound.json');
    writeFileSync(badBound, '{"parameters": [{"name": "lr", "type": "bound", "value": [0.5, 0.1]}]}');
    expect(() => parameterFile(badBound)).toThrow(`--tuning-parameters: ${badBound}: parameters.lr.value: low > high (0.5 > 0.1)`);
    const badNni = join(dir, 'bad-nni.json');
    writeFileSync(badNni, JSON.stringify({ lr: { _type: 'uniformish', _value: [0, 1] } }));
    expect(() => parameterFile(badNni)).toThrow(/^--tuning-parameters: .*bad-nni\.json: lr\._type: /);
    const list = join(dir, 'list.json');
    writeFileSync(list, '[1, 2]');
    expect(() => parameterFile(list)).toThrow(/^--tuning-parameters: .*list\.json: must be a JSON object/);
  });
});

// ---- the other commands, against a fake master ----------------------------------------------

const trial = (index: number, state: TrialView['state'], value: number | undefined, params: TrialView['params'], extra: Partial<TrialView> = {}): TrialView => ({
  index, name: `digits-${index}`, state, params, ...(value !== undefined ? { value } : {}), metrics: value !== undefined ? { accuracy: value, loss: 1 - value } : {}, intermediate: [], attempt: 1, createdMs: NOW,
  startedMs: NOW + index * 1000, ...(state !== 'Running' && state !== 'Pending' ? { finishedMs: NOW + index * 1000 + 65_000 } : {}), hostname: `h${index}`, ...extra,
});

function view(phase: ExperimentView['phase'], trials: TrialView[], extra: Partial<ExperimentView> = {}): ExperimentView {
  const counts = { Pending: 0, Starting: 0, Running: 0, Succeeded: 0, Failed: 0, EarlyStopped: 0, Killed: 0 };
  for (const t of trials) counts[t.state] += 1;
  const ok = trials.filter((t) => t.state === 'Succeeded' && t.value !== undefined);
  const best = ok.reduce<TrialView | undefined>((b, t) => (!b || t.value! > b.value! ? t : b), undefined);
  return {
    name: 'digits', owner: '', phase, reason: phase === 'Running' ? 'ExperimentRunning' : phase === 'Succeeded' ? 'GoalReached' : 'ExperimentStopped', message: phase === 'Succeeded' ? 'trial 2 reached the goal' : '',
    objective: { type: 'maximize', metricName: 'accuracy', goal: 0.95, additionalMetricNames: [] }, algorithm: 'random', parallelTrialCount: 2, maxTrialCount: 4, maxFailedTrialCount: 3,
    scheduling: 'fifo', seed: 9, counts, ...(best ? { best } : {}), createdMs: NOW,
    spec: {} as ExperimentView['spec'], ignored: [], conditions: [], trials, ...extra,
  };
}

describe('the other tune commands, against a fake master', () => {
  let server: Server;
  let url = '';
  const seen: { method: string; url: string; type?: string; auth?: string; body: string }[] = [];
  let views: ExperimentView[] = [];
  let gets = 0;

  beforeAll(async () => {
    server = createServer((req: IncomingMessage, res) => {
      let body = '';
      req.on('data', (d: Buffer) => (body += d.toString()));
      req.on('end', () => {
        seen.push({ method: req.method!, url: req.url!, ...(req.headers['content-type'] ? { type: req.headers['content-type'] } : {}), ...(req.headers.authorization ? { auth: req.headers.authorization } : {}), body });
        const send = (status: number, value: unknown) => {
          res.writeHead(status, { 'content-type': 'application/json' });
          res.end(JSON.stringify(value));
        };
        // A follower: every change goes to the leader (the same server, another path prefix).
        if (req.url!.startsWith('/api/') && req.method !== 'GET') {
          res.writeHead(307, { location: `/leader${req.url}` });
          return void res.end();
        }
        const path = req.url!.replace(/^\/leader/, '');
        if (req.method === 'POST' && path === '/api/v1/experiments') return send(201, { name: 'digits', seed: 9, ignored: [{ field: 'spec.appCore', reason: 'the search runs inside the leading master' }] });
        if (req.method === 'GET' && path === '/api/v1/experiments') return send(200, { experiments: [views[views.length - 1]] });
        if (req.method === 'GET' && path === '/api/v1/experiments/digits') return send(200, views[Math.min(gets++, views.length - 1)]);
        if (req.method === 'GET' && path === '/api/v1/experiments/none') return send(200, view('Running', [trial(0, 'Running', undefined, { lr: 0.1 })]));
        if (req.method === 'POST' && path === '/api/v1/experiments/digits/stop') return send(200, { name: 'digits', phase: 'Stopped' });
        if (req.method === 'POST' && path === '/api/v1/experiments/digits/resume') return send(200, { name: 'digits', phase: 'Running' });
        if (req.method === 'DELETE' && path === '/api/v1/experiments/digits') return send(200, { name: 'digits', deleted: true });
        send(404, { code: 'CAIRN_UNKNOWN_EXPERIMENT', message: `no experiment '${path.split('/')[4]}'`, field: 'name' });
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));

  it('submit --wait: the ignored fields on stderr, the name, each trial as it starts and ends, why trials wait, the best, exit 0 on success', async () => {
    seen.length = 0;
    gets = 0;
    const t0 = trial(0, 'Succeeded', 0.9, { lr: 0.1, batch: 32 });
    const t1 = trial(1, 'Failed', undefined, { lr: 0.5, batch: 64 }, { message: 'exited with 1' });
    const t2 = trial(2, 'Succeeded', 0.96, { lr: 0.0123456789, batch: 16 });
    const waiting = 'waiting for room: needs cpus 1; the best agent, h1, has cpus 0.5 free; /dev/web holds cpus 0.5 there; research class may preempt it: no (it is research class too)';
    views = [
      view('Running', [t0, trial(1, 'Running', undefined, t1.params), trial(2, 'Pending', undefined, t2.params, { message: waiting })]),
      view('Running', [t0, t1, trial(2, 'Running', undefined, t2.params)]),
      view('Succeeded', [t0, t1, t2]),
    ];
    const r = await cli([...PAPER_ARGV, '--wait', '--master', url], { CAIRN_TOKEN: 'sekrit' });
    expect(r.code).toBe(0);
    expect(r.err).toBe('cairn tune submit: ignored spec.appCore: the search runs inside the leading master\ncairn tune submit: following digits (seed 9); Ctrl-C stops following, not the experiment\n');
    expect(r.out).toBe([
      'digits',
      // As it happens: each trial as it starts, and why the others wait.
      'trial 1 started on h1',
      `1 trial ${waiting}`,
      'trial 0 Succeeded accuracy=0.9 lr=0.1 batch=32',
      'trial 2 started on h2',
      'trial 1 Failed accuracy=- lr=0.5 batch=64 (exited with 1)',
      'trial 2 Succeeded accuracy=0.96 lr=0.0123457 batch=16',
      'experiment digits Succeeded (GoalReached): trial 2 reached the goal',
      'best: trial 2 Succeeded accuracy=0.96 lr=0.0123457 batch=16',
      '',
    ].join('\n'));
    // The document went to the leader as JSON, with the credential kept across the redirect.
    const post = seen.find((s) => s.method === 'POST' && s.url === '/leader/api/v1/experiments')!;
    expect(post.type).toBe('application/json');
    expect(post.auth).toBe('Bearer sekrit');
    expect(JSON.parse(post.body)).toEqual(PAPER_DOCUMENT);
  });

  it('submit --wait exits 1 when the experiment is stopped', async () => {
    gets = 0;
    views = [view('Stopped', [trial(0, 'Killed', undefined, { lr: 0.1 })])];
    const r = await cli(['tune', 'submit', '--app-runner-launch-cmd', 'true', '--tuning-parameters', nniFile, '--wait', '--master', url]);
    expect(r.code).toBe(1);
    expect(r.out).toBe('digits\ntrial 0 Killed accuracy=- lr=0.1\nexperiment digits Stopped (ExperimentStopped)\nbest: none (no trial succeeded)\n');
  });

  it('submit --wait: Ctrl-C stops following (exit 130), the experiment runs on', async () => {
    gets = 0;
    views = [view('Running', [trial(0, 'Succeeded', 0.9, { lr: 0.1 }), trial(1, 'Running', undefined, { lr: 0.2 })])];
    let out = '';
    let err = '';
    const io: CliIo = {
      stdout: { write: (t: string) => (out += t) }, stderr: { write: (t: string) => (err += t) }, env: {},
      onInterrupt: (listener) => {
        const timer = setTimeout(() => listener('SIGINT'), 300);
        return () => clearTimeout(timer);
      },
    };
    const started = Date.now();
    expect(await runCli(['tune', 'submit', '--app-runner-launch-cmd', 'true', '--tuning-parameters', nniFile, '--wait', '--master', url], io)).toBe(130);
    expect(Date.now() - started).toBeLessThan(900);
    expect(out).toBe('digits\ntrial 1 started on h1\ntrial 0 Succeeded accuracy=0.9 lr=0.1\n');
    expect(err).toMatch(/stopped following; experiment digits runs on \(cairn tune show digits; cairn tune stop digits stops it\)\n$/);
  });

  it('show: header, trials table and chart; -o json the view', async () => {
    gets = 0;
    const e = view('Succeeded', [trial(0, 'Succeeded', 0.9, { lr: 0.1 }), trial(1, 'Failed', undefined, { lr: 0.5 }), trial(2, 'Succeeded', 0.96, { lr: 0.01 })]);
    views = [e];
    const text = describeExperiment(e, NOW + 600_000, { colour: false, chartWidth: 10, chartHeight: 3 });
    expect(text).toBe([
      'Name:        digits',
      'Phase:       Succeeded',
      'Reason:      GoalReached',
      'Message:     trial 2 reached the goal',
      'Objective:   maximize accuracy (goal 0.95)',
      'Algorithm:   random (seed 9, 2 at once, scheduling fifo)',
      'Progress:    3/4 done: 2 succeeded, 1 failed, 0 early-stopped, 0 killed; 0 running, 0 pending',
      'Best:        trial 2: accuracy=0.96  lr=0.01',
      'Created:     10m ago',
      '',
      'Trials:',
      'INDEX  STATE      VALUE  PARAMS   DURATION  HOST',
      '0      Succeeded  0.9    lr=0.1   1m05s     h0',
      '1      Failed     -      lr=0.5   1m05s     h1',
      '2      Succeeded  0.96   lr=0.01  1m05s     h2',
      '',
      'accuracy',
      '0.96 |         *',
      '     |         |',
      ' 0.9 |*--------',
      '     +----------',
      '      0 trial  2',
      '      * trial value   - best so far',
      '',
    ].join('\n'));
    const r = await cli(['tune', 'show', 'digits', '-o', 'json', '--master', url]);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.out)).toEqual(e);
    const plain = await cli(['tune', 'show', 'digits', '--master', url]);
    expect(plain.out).toContain('best so far');
    expect(plain.out).not.toContain('\x1b[');
  });

  it('best: the params and metrics; -o json the trial; exit 1 while none succeeded', async () => {
    gets = 0;
    const e = view('Running', [trial(0, 'Succeeded', 0.9, { lr: 0.1, opt: 'sgd' })]);
    views = [e];
    const r = await cli(['tune', 'best', 'digits', '--master', url]);
    expect(r.code).toBe(0);
    expect(r.out).toBe('Trial:       0 (digits-0)\naccuracy:    0.9\nParams:\n  lr=0.1\n  opt=sgd\nMetrics:\n  accuracy=0.9\n  loss=0.1\n');
    const j = await cli(['tune', 'best', 'digits', '-o', 'json', '--master', url]);
    expect(JSON.parse(j.out)).toEqual(e.best);
    const none = await cli(['tune', 'best', 'none', '--master', url]);
    expect(none.code).toBe(1);
    expect(none.out).toBe('');
    expect(none.err).toBe('cairn tune best: no trial of digits has succeeded yet (Running; 1 running, 0 failed)\n');
  });

  it('list, stop, resume, delete, and an unknown experiment', async () => {
    views = [view('Running', [trial(0, 'Succeeded', 0.9, { lr: 0.1 }), trial(1, 'Running', undefined, { lr: 0.2 })])];
    expect(experimentsTable([views[0]], NOW + 30_000, false)).toBe('NAME    PHASE    REASON             TRIALS  BEST  AGE\ndigits  Running  ExperimentRunning  1/4     0.9   30s\n');
    const list = await cli(['tune', 'list', '-o', 'yaml', '--master', url]);
    expect(list.code).toBe(0);
    expect(list.out).toMatch(/^- name: digits\n/);
    seen.length = 0;
    expect((await cli(['tune', 'stop', 'digits', '--master', url])).out).toBe('experiment digits stopped\n');
    expect((await cli(['tune', 'resume', 'digits', '--max-trials', '10', '--max-failed', '2', '--master', url])).out).toBe('experiment digits resumed\n');
    expect((await cli(['tune', 'delete', 'digits', '--master', url])).out).toBe('experiment digits deleted\n');
    expect(seen.filter((s) => s.url.startsWith('/leader')).map((s) => [s.method, s.url, s.body])).toEqual([
      ['POST', '/leader/api/v1/experiments/digits/stop', '{}'],
      ['POST', '/leader/api/v1/experiments/digits/resume', '{"maxTrialCount":10,"maxFailedTrialCount":2}'],
      ['DELETE', '/leader/api/v1/experiments/digits', ''],
    ]);
    const unknown = await cli(['tune', 'show', 'nope', '--master', url]);
    expect(unknown.code).toBe(1);
    expect(unknown.err).toBe("cairn tune show: no experiment 'nope' — `cairn tune list` shows the experiments there are\n");
    const bad = await cli(['tune', 'resume', 'digits', '--max-trials', 'x', '--master', url]);
    expect(bad.code).toBe(2);
    expect(bad.err).toMatch(/--max-trials/);
  });

  it('a trial line as --wait prints it', () => {
    expect(trialLine(view('Running', []), trial(3, 'EarlyStopped', 0.5, { lr: 1e-7 }, { message: 'below the median' }))).toBe('trial 3 EarlyStopped accuracy=0.5 lr=1e-7 (below the median)');
  });
});
