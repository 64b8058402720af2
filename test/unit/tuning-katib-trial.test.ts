// Katib's own trial template, read from Katib's example files as they are upstream
// (test/fixtures/katib/, README there): trialSpec with trialParameters, each
// `${trialParameters.<name>}` filled in the primary container's command, args, image and env;
// a batch Job's primary container as a task trial, a PyTorchJob as a distributed trial;
// Katib's metadata references; resumePolicy; and each refusal naming its field.

import { describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import { refusal } from '../harness/refusal.ts';
import { parseExperimentDocument } from '../../master/frameworks/tuning/spec-parse.ts';
import { trialCommandLine, trialScript, trialTaskInfo } from '../../master/frameworks/tuning/trial-command.ts';
import { trialJobSpec } from '../../master/frameworks/tuning/trial-job.ts';

const fixture = (name: string) => readFileSync(new URL(`../fixtures/katib/${name}`, import.meta.url), 'utf8');
const PARAMS = { lr: 0.0123, momentum: 0.7 };

/** Katib's random example as an object, changed by `edit` (for the refusals). */
function randomWith(edit: (doc: any) => void): unknown {
  const doc = parseYaml(fixture('random.yaml'));
  edit(doc);
  return doc;
}

describe("Katib's trialSpec form", () => {
  it("runs random.yaml's batch Job: the primary container's words with the trial's values, its image and resources", () => {
    const { spec, ignored } = parseExperimentDocument(fixture('random.yaml'), 'application/yaml');
    expect(ignored).toEqual([]);
    expect(spec.name).toBe('random');
    expect(spec.trial).toMatchObject({
      image: 'ghcr.io/kubeflow/katib/pytorch-mnist-cpu:latest', cpus: 0.5, memMb: 1024, gpus: 0,
      argv: ['python3', '/opt/pytorch-mnist/mnist.py', '--epochs=1', '--batch-size=16', '--lr=${trialParameters.learningRate}', '--momentum=${trialParameters.momentum}'],
      trialParameters: [
        { name: 'learningRate', reference: 'lr', description: 'Learning rate for the training model' },
        { name: 'momentum', reference: 'momentum', description: 'Momentum for the training model' },
      ],
    });
    expect(trialCommandLine(spec, 3, PARAMS)).toBe('python3 /opt/pytorch-mnist/mnist.py --epochs=1 --batch-size=16 --lr=0.0123 --momentum=0.7');
    expect(trialScript(spec, 3, PARAMS).split('\n').at(-1)).toBe('python3 /opt/pytorch-mnist/mnist.py --epochs=1 --batch-size=16 --lr=0.0123 --momentum=0.7');
    const info = trialTaskInfo(spec, { index: 3, taskId: 't', resources: [], params: PARAMS }, 'a1');
    expect(info.container?.docker?.image).toBe('ghcr.io/kubeflow/katib/pytorch-mnist-cpu:latest');
  });

  it('passes a value as one word, as it is, whatever it holds (Katib substitutes text; the shell sees one argument)', () => {
    const doc = randomWith((d) => {
      d.spec.parameters.push({ name: 'opt', parameterType: 'categorical', feasibleSpace: { list: ["it's a b", '$HOME'] } });
      d.spec.trialTemplate.trialParameters.push({ name: 'optimizer', reference: 'opt' });
      d.spec.trialTemplate.trialSpec.spec.template.spec.containers[0].command = ['printf', '%s\\n', '--opt=${trialParameters.optimizer}', '${trialParameters.optimizer}', '${HOME}'];
    });
    const { spec } = parseExperimentDocument(doc);
    for (const value of ["it's a b", '$HOME']) {
      const out = execFileSync('sh', ['-c', trialCommandLine(spec, 0, { ...PARAMS, opt: value })], { encoding: 'utf8' });
      // A `${...}` that is no trial parameter is left as written, and not expanded either.
      expect(out).toBe(`--opt=${value}\n${value}\n\${HOME}\n`);
    }
  });

  it('runs a first word holding = as the program, not as a variable assignment', () => {
    const doc = randomWith((d) => {
      d.spec.trialTemplate.trialSpec.spec.template.spec.containers[0].command = ['${trialParameters.learningRate}', 'x'];
      d.spec.trialTemplate.trialParameters[0].reference = '${trialSpec.Kind}';
    });
    const { spec } = parseExperimentDocument(doc);
    expect(trialCommandLine(spec, 0, PARAMS)).toBe('Job x');
    const assign = randomWith((d) => { d.spec.trialTemplate.trialSpec.spec.template.spec.containers[0].command = ['A=1', 'b']; });
    expect(trialCommandLine(parseExperimentDocument(assign).spec, 0, PARAMS)).toBe("'A=1' b");
  });

  it("fills the image and env, and Katib's metadata references (trial-metadata-substitution.yaml)", () => {
    const { spec, ignored } = parseExperimentDocument(fixture('trial-metadata-substitution.yaml'), 'application/yaml');
    expect(ignored.map((i) => i.field)).toEqual(['spec.trialTemplate.trialSpec.metadata']);
    const info = trialTaskInfo(spec, { index: 4, taskId: 't', resources: [], params: PARAMS }, 'a1');
    const env = Object.fromEntries(info.command!.environment!.variables!.map((v) => [v.name, v.value]));
    expect(env).toMatchObject({
      TRIAL_NAME: 'trial-metadata-substitution-4', TRIAL_NAMESPACE: 'kubeflow', TRIAL_KIND: 'Job', TRIAL_API_VERSION: 'batch/v1',
      TRIAL_LABEL_CUSTOM: 'custom-label', TRIAL_ANNOTATION_CUSTOM: 'custom-annotation', CAIRN_PARAM_LR: '0.0123',
    });
    const tagged = parseExperimentDocument(randomWith((d) => {
      d.spec.trialTemplate.trialSpec.spec.template.spec.containers[0].image = 'registry:5000/mnist:${trialParameters.momentum}';
    })).spec;
    expect(trialTaskInfo(tagged, { index: 0, taskId: 't', resources: [], params: PARAMS }, 'a1').container?.docker?.image).toBe('registry:5000/mnist:0.7');
  });

  it("runs pytorchjob-mnist.yaml's PyTorchJob as a distributed trial, every replica's words filled", () => {
    const { spec, ignored } = parseExperimentDocument(fixture('pytorchjob-mnist.yaml'), 'application/yaml');
    expect(ignored).toEqual([]);
    expect(spec.trial.job).toBeDefined();
    const { job } = trialJobSpec(spec, spec.trial.job!, 'tune-u1-2-1', 2, PARAMS);
    expect(job.name).toBe('tune-u1-2-1');
    expect(job.kind).toBe('pytorch');
    expect(job.groups.map((g) => g.name)).toEqual(['master', 'worker']);
    for (const g of job.groups) {
      expect(g.template.command).toBe('python3');
      expect(g.template.args).toEqual(['/opt/pytorch-mnist/mnist.py', '--epochs=1', '--batch-size=16', '--lr=0.0123', '--momentum=0.7']);
      expect(g.template.env).toMatchObject({ CAIRN_TRIAL_NAME: 'pytorchjob-mnist-2', CAIRN_PARAM_MOMENTUM: '0.7' });
    }
  });

  it('refuses what it cannot run, naming the field', () => {
    const at = 'spec.trialTemplate';
    const containers = `${at}.trialSpec.spec.template.spec.containers`;
    const cases: [unknown, string, RegExp][] = [
      [randomWith((d) => { d.spec.trialTemplate.trialSpec.spec.template.spec.containers[0].command.push('--wd=${trialParameters.weightDecay}'); }), `${at}.trialSpec`, /\$\{trialParameters\.weightDecay\}.*declared: learningRate, momentum/],
      [randomWith((d) => { d.spec.trialTemplate.trialParameters[0].reference = 'learning_rate'; }), `${at}.trialParameters[0].reference`, /'learning_rate' is no parameter of the search space \(parameters: lr, momentum\)/],
      [randomWith((d) => { d.spec.trialTemplate.trialParameters[1].name = 'learningRate'; }), `${at}.trialParameters[1].name`, /declared twice/],
      [randomWith((d) => { d.spec.trialTemplate.trialParameters[0].reference = '${trialSpec.Labels[missing]}'; }), `${at}.trialParameters[0].reference`, /no metadata of the trial/],
      [randomWith((d) => { d.spec.trialTemplate.primaryContainerName = 'trainer'; }), `${at}.primaryContainerName`, /'trainer' \(its containers: training-container\)/],
      [randomWith((d) => {
        delete d.spec.trialTemplate.primaryContainerName;
        d.spec.trialTemplate.trialSpec.spec.template.spec.containers.push({ name: 'sidecar', image: 'busybox', command: ['sleep', '1'] });
      }), `${at}.primaryContainerName`, /is required when the trial's pod has 2 containers \(training-container, sidecar\)/],
      [randomWith((d) => { delete d.spec.trialTemplate.trialSpec.spec.template.spec.containers[0].command; }), `${containers}[0].command`, /is required/],
      [randomWith((d) => { d.spec.trialTemplate.trialSpec.spec.template.spec.containers[0].resources.limits.memory = '1Gx'; }), `${containers}[0].resources.limits.memory`, /not a Kubernetes quantity/],
      [randomWith((d) => { d.spec.trialTemplate.trialSpec.kind = 'MPIJob'; d.spec.trialTemplate.trialSpec.apiVersion = 'kubeflow.org/v1'; }), `${at}.trialSpec.kind`, /Job \(batch\/v1\), PyTorchJob or TFJob.*"MPIJob"/],
      [randomWith((d) => { d.spec.trialTemplate.command = 'python3 train.py'; }), `${at}.command`, /not beside it/],
      [randomWith((d) => { delete d.spec.trialTemplate.trialSpec; d.spec.trialTemplate.configMap = { configMapName: 'x' }; }), `${at}.configMap`, /ConfigMaps do not exist/],
      [randomWith((d) => { d.spec.trialTemplate.trialSpec.spec.template.spec.containers[0].image = '${trialParameters.momentum} x'; }), `${containers}[0].image`, /not an image name/],
    ];
    for (const [doc, field, message] of cases) {
      const err = refusal(() => parseExperimentDocument(doc));
      expect(err.field, err.message).toBe(field);
      expect(err.message).toMatch(message);
    }
  });

  it('reads resumePolicy: Never, LongRunning and FromVolume kept, anything else refused naming the field', () => {
    expect(parseExperimentDocument(fixture('long-running-resume.yaml'), 'application/yaml')).toMatchObject({ spec: { resumePolicy: 'LongRunning' }, ignored: [] });
    for (const policy of ['Never', 'FromVolume']) {
      expect(parseExperimentDocument(randomWith((d) => { d.spec.resumePolicy = policy; })).spec.resumePolicy).toBe(policy);
    }
    expect(parseExperimentDocument(fixture('random.yaml'), 'application/yaml').spec.resumePolicy).toBeUndefined();
    const err = refusal(() => parseExperimentDocument(randomWith((d) => { d.spec.resumePolicy = 'Always'; })));
    expect(err.field).toBe('spec.resumePolicy');
    expect(err.message).toMatch(/must be Never, LongRunning, FromVolume, got "Always"/);
  });
});
