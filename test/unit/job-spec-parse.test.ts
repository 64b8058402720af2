// Job documents as people write them (test/fixtures/jobs/): Cairn's own YAML, Kubeflow's
// TFJob and PyTorchJob examples, Volcano jobs; what Cairn cannot honour listed as ignored;
// the bad ones refused naming the field where the user wrote it.

import { readFileSync, readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { CairnError } from '../../shared/errors.ts';
import { parseJobDocument, parseJobText } from '../../shared/jobs/spec-parse.ts';
import { coresOf, mibOf, parseQuantity } from '../../shared/quantity.ts';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const FIXTURES = join(ROOT, 'test', 'fixtures', 'jobs');
const fixture = (name: string) => readFileSync(join(FIXTURES, name), 'utf8');

function refusal(fn: () => unknown): CairnError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(CairnError);
    expect((err as CairnError).code).toBe('CAIRN_INVALID_JOB');
    return err as CairnError;
  }
  throw new Error('expected the document to be refused');
}

const paths = (ignored: { path: string }[]) => ignored.map((i) => i.path);

describe('parseJobDocument: Cairn\'s own format', () => {
  it('reads the YAML fixture with its defaults', () => {
    const { spec, ignored } = parseJobDocument(fixture('cairn-pslite.yaml'));
    expect(ignored).toEqual([]);
    expect(spec.name).toBe('sgd');
    expect(spec.kind).toBe('pslite');
    expect(spec.groups.map((g) => [g.name, g.replicas, g.restartPolicy])).toEqual([
      ['scheduler', 1, 'OnFailure'],
      ['server', 2, 'OnFailure'],
      ['worker', 4, 'ExitCode'],
    ]);
    expect(spec.groups[2].template).toMatchObject({ command: 'python3', args: ['/opt/cairn/examples/programs/pslite_numpy.py', '--steps', '200'], env: { LEARNING_RATE: '0.1' } });
    expect(spec.groups[0].template).toMatchObject({ cpus: 0.5, memMb: 256 });
    expect(spec).toMatchObject({ minAvailable: 7, backoffLimit: 2, failurePolicies: [{ event: 'TaskFailed', action: 'RestartJob', group: 'server' }] });
  });

  it('takes the same job as JSON text, as a parsed object, and with a JSON content type', () => {
    const obj = { name: 'j', kind: 'batch', groups: [{ name: 'w', replicas: 3, template: { command: 'true' } }] };
    const a = parseJobDocument(JSON.stringify(obj));
    const b = parseJobDocument(obj);
    const c = parseJobDocument(JSON.stringify(obj, null, 2), 'application/json; charset=utf-8');
    const d = parseJobDocument(`apiVersion: cairn/v1\nname: j\nkind: batch\ngroups:\n  - {name: w, replicas: 3, template: {command: "true"}}\n`, 'application/yaml');
    expect(a).toEqual(b);
    expect(c).toEqual(b);
    expect(d).toEqual(b);
    expect(b.spec.groups[0].replicas).toBe(3);
  });

  it('refuses unknown fields of its own format', () => {
    const err = refusal(() => parseJobDocument('name: j\nkind: batch\nparallelism: 3\ngroups: [{name: w, template: {command: x}}]\n'));
    expect(err.field).toBe('parallelism');
  });
});

describe('parseJobDocument: Kubeflow TFJob', () => {
  it("reads Kubeflow's mnist example, listing the claim it cannot mount", () => {
    const { spec, ignored } = parseJobDocument(fixture('tfjob-mnist.yaml'));
    expect(spec).toMatchObject({ name: 'mnist', kind: 'tensorflow', cleanupPolicy: 'None', minAvailable: 1 });
    expect(spec.groups).toEqual([
      {
        name: 'worker',
        replicas: 1,
        restartPolicy: 'Never',
        template: {
          command: 'python',
          args: ['/var/tf_mnist/mnist_with_summaries.py', '--log_dir=/train/logs', '--learning_rate=0.01', '--batch_size=150'],
          image: 'kubeflow/tf-mnist-with-summaries:latest',
          cpus: 1,
          memMb: 512,
          diskMb: 0,
          gpus: 0,
          ports: 1,
          env: {},
          volumes: [],
        },
      },
    ]);
    expect(paths(ignored)).toEqual([
      'metadata.namespace',
      'spec.tfReplicaSpecs.Worker.template.spec.volumes[0]',
      'spec.tfReplicaSpecs.Worker.template.spec.containers[0].volumeMounts[0]',
    ]);
    expect(ignored[1].why).toMatch(/persistentVolumeClaim volumes do not exist/);
  });

  it('reads a dist-mnist TFJob: resources, GPUs, hostPath, run policy, queue; lists the rest with why', () => {
    const { spec, ignored } = parseJobDocument(fixture('tfjob-dist-mnist.yaml'));
    expect(spec).toMatchObject({
      name: 'dist-mnist',
      kind: 'tensorflow',
      successPolicy: 'AllWorkers',
      cleanupPolicy: 'Running',
      backoffLimit: 3,
      activeDeadlineSeconds: 3600,
      ttlSecondsAfterFinished: 600,
      minAvailable: 5,
      role: 'research',
    });
    const [ps, worker] = spec.groups;
    expect(ps).toMatchObject({ name: 'ps', replicas: 2, restartPolicy: 'OnFailure' });
    expect(ps.template).toMatchObject({ command: 'python', args: ['/var/tf_dist_mnist/dist_mnist.py', '--train_steps=2000'], cpus: 0.5, memMb: 1024, gpus: 0, ports: 1 });
    expect(worker).toMatchObject({ name: 'worker', replicas: 3, restartPolicy: 'ExitCode' });
    // 2G is 2e9 bytes: 1907.35 MiB, rounded up.
    expect(worker.template).toMatchObject({ cpus: 2, memMb: 1908, gpus: 1, env: { TF_CPP_MIN_LOG_LEVEL: '2' } });
    expect(worker.template.volumes).toEqual([{ containerPath: '/data/mnist', hostPath: '/srv/datasets/mnist', mode: 'RO' }]);
    const w = 'spec.tfReplicaSpecs.Worker.template.spec';
    expect(paths(ignored)).toEqual(
      expect.arrayContaining([
        'metadata.namespace',
        'metadata.labels.team',
        'spec.tfReplicaSpecs.PS.template.metadata',
        'spec.tfReplicaSpecs.PS.template.spec.containers[0].resources.limits.cpu',
        'spec.tfReplicaSpecs.PS.template.spec.containers[0].ports[0].containerPort',
        `${w}.containers[1]`,
        `${w}.volumes[0].hostPath.type`,
        `${w}.volumes[1]`,
        `${w}.nodeSelector`,
        `${w}.tolerations`,
        `${w}.containers[0].env[1].valueFrom`,
        `${w}.containers[0].resources.limits.memory`,
        `${w}.containers[0].volumeMounts[1]`,
      ]),
    );
    expect(ignored).toHaveLength(13);
    // The class is read; whether the cluster has it is the master's to say when it is submitted.
    expect(spec.priorityClass).toBe('high');
    for (const i of ignored) expect(i.why.length).toBeGreaterThan(10);
    expect(ignored.find((i) => i.path === `${w}.containers[1]`)!.why).toMatch(/sidecar/);
    expect(ignored.find((i) => i.path.endsWith('containerPort'))!.why).toMatch(/assigns each replica its ports/);
  });

  it('accepts replica types in any case and the older layout with run policy fields under spec', () => {
    const { spec, ignored } = parseJobDocument({
      apiVersion: 'kubeflow.org/v1',
      kind: 'TFJob',
      metadata: { name: 'old' },
      spec: {
        cleanPodPolicy: 'All',
        backoffLimit: 1,
        runPolicy: { backoffLimit: 2 },
        tfReplicaSpecs: { ps: { template: { spec: { containers: [{ name: 'tensorflow', command: ['python3', 'ps.py'] }] } } }, worker: { replicas: 2, template: { spec: { containers: [{ name: 'tensorflow', command: ['python3', 'w.py'] }] } } } },
      },
    });
    expect(spec.groups.map((g) => [g.name, g.replicas, g.restartPolicy])).toEqual([
      ['ps', 1, 'Never'],
      ['worker', 2, 'Never'],
    ]);
    expect(spec.cleanupPolicy).toBe('All');
    expect(spec.backoffLimit).toBe(2);
    expect(ignored).toEqual([{ path: 'spec.backoffLimit', why: 'spec.runPolicy.backoffLimit is given too, and wins' }]);
    // No image: a process on the agent.
    expect(spec.groups[0].template.image).toBeUndefined();
  });

  it('uses the container named tensorflow, wherever it is, and lists the others', () => {
    const { spec, ignored } = parseJobDocument({
      apiVersion: 'kubeflow.org/v1',
      kind: 'TFJob',
      metadata: { name: 'side' },
      spec: { tfReplicaSpecs: { Worker: { template: { spec: { containers: [{ name: 'proxy', image: 'envoy' }, { name: 'tensorflow', image: 'tf:2', command: ['python3', 't.py'] }] } } } } },
    });
    expect(spec.groups[0].template).toMatchObject({ image: 'tf:2', command: 'python3' });
    expect(paths(ignored)).toEqual(['spec.tfReplicaSpecs.Worker.template.spec.containers[0]']);
  });

  it('refuses a TFJob with two chiefs, naming spec.tfReplicaSpecs.Chief.replicas', () => {
    const err = refusal(() => parseJobDocument(fixture('bad-tfjob-two-chiefs.yaml')));
    expect(err.field).toBe('spec.tfReplicaSpecs.Chief.replicas');
    expect(err.message).toMatch(/at most one chief/);
  });

  it('refuses what it cannot read, naming the field as written', () => {
    const tf = (replicaSpecs: unknown, extra: Record<string, unknown> = {}) => ({ apiVersion: 'kubeflow.org/v1', kind: 'TFJob', metadata: { name: 'x' }, spec: { tfReplicaSpecs: replicaSpecs, ...extra } });
    const c = (container: Record<string, unknown>) => ({ template: { spec: { containers: [{ name: 'tensorflow', image: 'tf', ...container }] } } });
    expect(refusal(() => parseJobDocument(tf({ Launcher: c({}) }))).field).toBe('spec.tfReplicaSpecs.Launcher');
    expect(refusal(() => parseJobDocument(tf({ Worker: c({}), worker: c({}) }))).field).toBe('spec.tfReplicaSpecs.worker');
    expect(refusal(() => parseJobDocument(tf({ Worker: c({ resources: { requests: { memory: '1Gb' } } }) }))).field).toBe('spec.tfReplicaSpecs.Worker.template.spec.containers[0].resources.requests.memory');
    expect(refusal(() => parseJobDocument(tf({ Worker: c({ resources: { limits: { 'nvidia.com/gpu': '500m' } } }) }))).field).toBe('spec.tfReplicaSpecs.Worker.template.spec.containers[0].resources.limits["nvidia.com/gpu"]');
    expect(refusal(() => parseJobDocument(tf({ Worker: { template: { spec: { containers: [] } } } }))).field).toBe('spec.tfReplicaSpecs.Worker.template.spec.containers');
    expect(refusal(() => parseJobDocument(tf({ Worker: { replicas: 2 } }))).field).toBe('spec.tfReplicaSpecs.Worker.template');
    expect(refusal(() => parseJobDocument(tf({ Worker: { ...c({}), restartPolicy: 'Sometimes' } }))).field).toBe('spec.tfReplicaSpecs.Worker.restartPolicy');
    expect(refusal(() => parseJobDocument(tf({ Worker: c({ env: [{ name: '1X', value: 'v' }] }) }))).field).toBe('spec.tfReplicaSpecs.Worker.template.spec.containers[0].env[0]');
    expect(refusal(() => parseJobDocument(tf({ Worker: c({}) }, { runPolicy: { cleanPodPolicy: 'Sometimes' } }))).field).toBe('spec.runPolicy.cleanPodPolicy');
    expect(refusal(() => parseJobDocument(tf({ Worker: c({}) }, { runPolicy: { schedulingPolicy: { minAvailable: 2 } } }))).field).toBe('spec.runPolicy.schedulingPolicy.minAvailable');
    expect(refusal(() => parseJobDocument(tf({ Worker: c({}) }, { successPolicy: 'Any' }))).field).toBe('spec.successPolicy');
    expect(refusal(() => parseJobDocument(tf({ Worker: c({ image: undefined, command: undefined }) }))).field).toBe('spec.tfReplicaSpecs.Worker.template.spec.containers[0].command');
    expect(refusal(() => parseJobDocument(tf(undefined))).field).toBe('spec.tfReplicaSpecs');
    expect(refusal(() => parseJobDocument({ ...tf({ Worker: c({}) }), metadata: { name: 'Bad_Name' } })).field).toBe('metadata.name');
    expect(refusal(() => parseJobDocument({ ...tf({ Worker: c({}) }), metadata: {} })).field).toBe('metadata.name');
  });
});

describe('parseJobDocument: Kubeflow PyTorchJob', () => {
  it("reads Kubeflow's gloo mnist example (image entrypoint, GPU limits)", () => {
    const { spec, ignored } = parseJobDocument(fixture('pytorchjob-mnist.yaml'));
    expect(ignored).toEqual([]);
    expect(spec).toMatchObject({ name: 'pytorch-dist-mnist-gloo', kind: 'pytorch', minAvailable: 2, cleanupPolicy: 'All' });
    expect(spec.groups.map((g) => [g.name, g.replicas, g.restartPolicy, g.template.gpus])).toEqual([
      ['master', 1, 'OnFailure', 1],
      ['worker', 1, 'OnFailure', 1],
    ]);
    expect(spec.groups[0].template).toMatchObject({ command: '', args: ['--backend', 'gloo'], image: 'kubeflow/pytorch-dist-mnist:latest' });
  });

  it('lists elastic policy, nprocPerNode, init containers and service accounts as ignored', () => {
    const { spec, ignored } = parseJobDocument(fixture('pytorchjob-elastic.yaml'));
    expect(spec.groups.map((g) => [g.name, g.replicas])).toEqual([
      ['master', 1],
      ['worker', 3],
    ]);
    expect(paths(ignored).sort()).toEqual([
      'spec.elasticPolicy',
      'spec.nprocPerNode',
      'spec.pytorchReplicaSpecs.master.template.spec.initContainers',
      'spec.pytorchReplicaSpecs.master.template.spec.serviceAccountName',
    ]);
  });

  it('refuses a PyTorchJob without a master, and one with two', () => {
    const err = refusal(() => parseJobDocument(fixture('bad-pytorchjob-no-master.yaml')));
    expect(err.field).toBe('spec.pytorchReplicaSpecs');
    expect(err.message).toMatch(/master/);
    const two = fixture('pytorchjob-mnist.yaml').replace('Master:\n      replicas: 1', 'Master:\n      replicas: 2');
    expect(refusal(() => parseJobDocument(two)).field).toBe('spec.pytorchReplicaSpecs.Master.replicas');
    const ps = { apiVersion: 'kubeflow.org/v1', kind: 'PyTorchJob', metadata: { name: 'p' }, spec: { pytorchReplicaSpecs: { PS: { template: { spec: { containers: [{ image: 'x' }] } } } } } };
    expect(refusal(() => parseJobDocument(ps)).field).toBe('spec.pytorchReplicaSpecs.PS');
  });
});

describe('parseJobDocument: Volcano Job', () => {
  it('reads a Volcano job with policies, plugins, queue and maxRetry', () => {
    const { spec, ignored } = parseJobDocument(fixture('volcano-job.yaml'));
    expect(spec).toMatchObject({ name: 'test-job', kind: 'batch', minAvailable: 3, backoffLimit: 5, role: '*', cleanupPolicy: 'All', priorityClass: 'high-priority' });
    expect(spec.groups.map((g) => [g.name, g.replicas, g.restartPolicy])).toEqual([
      ['default-nginx', 6, 'OnFailure'],
      ['reducer', 1, 'Never'],
    ]);
    expect(spec.groups[0].template).toMatchObject({ image: 'nginx', command: '', args: [], cpus: 1 });
    expect(spec.groups[1].template).toMatchObject({ image: 'busybox', command: 'sh', args: ['-c', 'echo reduce $VC_TASK_INDEX'] });
    // PodEvicted and PodFailed are both a failed replica: one policy.
    expect(spec.failurePolicies).toEqual([
      { event: 'TaskCompleted', action: 'CompleteJob', group: 'reducer' },
      { event: 'TaskFailed', action: 'RestartJob' },
    ]);
    expect(paths(ignored).sort()).toEqual(
      [
        'spec.plugins.ssh',
        'spec.schedulerName',
        'spec.tasks[0].template.metadata',
        'spec.tasks[0].template.spec.containers[0].imagePullPolicy',
        'spec.tasks[1].policies[1]',
        'spec.volumes',
      ].sort(),
    );
    expect(ignored.find((i) => i.path === 'spec.tasks[1].policies[1]')!.why).toMatch(/exit-code policies/);
  });

  it('maps events, actions and the queue; defaults maxRetry to Volcano\'s 3', () => {
    const doc = (spec: Record<string, unknown>) => ({
      apiVersion: 'batch.volcano.sh/v1alpha1',
      kind: 'Job',
      metadata: { name: 'v' },
      spec: { tasks: [{ name: 'w', replicas: 2, template: { spec: { containers: [{ image: 'busybox', command: ['true'] }] } } }], ...spec },
    });
    const { spec, ignored } = parseJobDocument(
      doc({
        queue: 'gpu-team',
        policies: [
          { event: '*', action: 'TerminateJob' },
          { events: ['Unknown', 'TaskFailed'], action: 'RestartJob', timeout: '10s' },
          { event: 'OutOfSync', action: 'RestartJob' },
          { event: 'PodFailed', action: 'ResumeJob' },
          { event: 'PodFailed', action: 'RestartPod' },
        ],
      }),
    );
    expect(spec.role).toBe('gpu-team');
    expect(spec.backoffLimit).toBe(3);
    expect(spec.failurePolicies).toEqual([
      { event: 'TaskFailed', action: 'AbortJob' },
      { event: 'Unschedulable', action: 'AbortJob' },
      { event: 'Unschedulable', action: 'RestartJob' },
      { event: 'TaskFailed', action: 'RestartJob' },
      { event: 'TaskFailed', action: 'RestartTask' },
    ]);
    expect(paths(ignored)).toEqual(['spec.policies[1].timeout', 'spec.policies[2].event', 'spec.policies[3]']);
    expect(refusal(() => parseJobDocument(doc({ policies: [{ event: 'PodExploded', action: 'RestartJob' }] }))).field).toBe('spec.policies[0].event');
    expect(refusal(() => parseJobDocument(doc({ policies: [{ events: ['PodFailed', 'Bogus'], action: 'RestartJob' }] }))).field).toBe('spec.policies[0].events[1]');
    expect(refusal(() => parseJobDocument(doc({ policies: [{ event: 'PodFailed', action: 'Explode' }] }))).field).toBe('spec.policies[0].action');
    expect(refusal(() => parseJobDocument(doc({ minAvailable: 3 }))).field).toBe('spec.minAvailable');
    expect(refusal(() => parseJobDocument(doc({ maxRetry: -1 }))).field).toBe('spec.maxRetry');
  });

  it('is a ps-lite job when its cairn.io/kind label says so', () => {
    const { spec, ignored } = parseJobDocument(fixture('volcano-pslite.yaml'));
    expect(ignored).toEqual([]);
    expect(spec.kind).toBe('pslite');
    expect(spec.groups.map((g) => [g.name, g.replicas])).toEqual([
      ['scheduler', 1],
      ['server', 2],
      ['worker', 4],
    ]);
    const noScheduler = fixture('volcano-pslite.yaml').replace('name: scheduler', 'name: coordinator');
    expect(refusal(() => parseJobDocument(noScheduler)).field).toBe('spec.tasks[0].name');
    const badKind = fixture('volcano-pslite.yaml').replace('cairn.io/kind: pslite', 'cairn.io/kind: mxnet');
    expect(refusal(() => parseJobDocument(badKind)).field).toBe('metadata.labels["cairn.io/kind"]');
  });

  it('refuses replicas < 1 naming the task\'s field', () => {
    const err = refusal(() => parseJobDocument(fixture('bad-replicas-zero.yaml')));
    expect(err.field).toBe('spec.tasks[0].replicas');
  });
});

describe('parseJobDocument: what is not a job', () => {
  it('refuses an unknown kind, naming kind', () => {
    const err = refusal(() => parseJobDocument(fixture('bad-unknown-kind.yaml')));
    expect(err.field).toBe('kind');
    expect(err.message).toMatch(/mxnet/);
    expect(refusal(() => parseJobDocument({ apiVersion: 'kubeflow.org/v1', kind: 'MXJob', metadata: { name: 'm' }, spec: {} })).field).toBe('kind');
    expect(refusal(() => parseJobDocument({ apiVersion: 'batch.volcano.sh/v1alpha1', kind: 'Queue', metadata: { name: 'q' } })).field).toBe('kind');
    expect(refusal(() => parseJobDocument({ apiVersion: 'batch/v1', kind: 'Job', metadata: { name: 'k' } })).field).toBe('apiVersion');
    const volcanoWithoutApi = refusal(() => parseJobDocument({ kind: 'Job', metadata: { name: 'k' } }));
    expect(volcanoWithoutApi.field).toBe('kind');
    expect(volcanoWithoutApi.message).toMatch(/batch\.volcano\.sh/);
    expect(refusal(() => parseJobDocument({ kind: 'TFJob', metadata: { name: 'k' } })).field).toBe('apiVersion');
  });

  it('refuses YAML that does not parse on body, with its line', () => {
    const err = refusal(() => parseJobDocument(fixture('bad-not-yaml.yaml')));
    expect(err.field).toBe('body');
    expect(err.message).toMatch(/not valid YAML \(line \d+, column \d+\)/);
    const dup = refusal(() => parseJobDocument('name: a\nname: b\n'));
    expect(dup.field).toBe('body');
    expect(dup.message).toMatch(/line 2/);
    const json = refusal(() => parseJobDocument('{"name": "a",\n "kind": "batch"', 'application/json'));
    expect(json.field).toBe('body');
    expect(json.message).toMatch(/not valid JSON \(line 2, column \d+\)/);
    // Valid YAML, but not JSON: the JSON content type is held to JSON.
    expect(refusal(() => parseJobDocument('{"name": "a",\n "kind": }', 'application/json')).message).toMatch(/not valid JSON/);
  });

  it('refuses empty text, several documents, and values that are not objects', () => {
    expect(refusal(() => parseJobDocument('')).field).toBe('body');
    expect(refusal(() => parseJobDocument('# nothing\n')).field).toBe('body');
    expect(refusal(() => parseJobDocument('name: a\n---\nname: b\n')).message).toMatch(/2 YAML documents/);
    expect(refusal(() => parseJobDocument('- a\n- b\n')).field).toBe('body');
    expect(refusal(() => parseJobDocument('just a string')).field).toBe('body');
    expect(refusal(() => parseJobDocument(null)).field).toBe('body');
    expect(refusal(() => parseJobText('x'.repeat(5 * 1024 * 1024))).message).toMatch(/at most/);
  });

  it('refuses a YAML alias bomb instead of expanding it', () => {
    const lines = ['a: &a [x, x, x, x, x, x, x, x, x, x]'];
    for (let i = 1; i < 12; i++) lines.push(`${String.fromCharCode(97 + i)}: &${String.fromCharCode(97 + i)} [${Array(10).fill(`*${String.fromCharCode(96 + i)}`).join(', ')}]`);
    const err = refusal(() => parseJobDocument(lines.join('\n')));
    expect(err.field).toBe('body');
    expect(err.message).toMatch(/alias/i);
  });
});

describe('every fixture', () => {
  it('parses when good and is refused with a field when bad', () => {
    const files = readdirSync(FIXTURES).filter((f) => f.endsWith('.yaml'));
    expect(files.length).toBeGreaterThanOrEqual(12);
    for (const f of files) {
      if (f.startsWith('bad-')) expect(refusal(() => parseJobDocument(fixture(f))).field, f).toBeTruthy();
      else expect(parseJobDocument(fixture(f)).spec.name, f).toMatch(/^[a-z]/);
    }
  });
});

describe('Kubernetes quantities', () => {
  it('reads cpu and memory as Kubernetes writes them', () => {
    expect(coresOf(parseQuantity('500m')!)).toBe(0.5);
    expect(coresOf(parseQuantity('2')!)).toBe(2);
    expect(coresOf(parseQuantity(1.5)!)).toBe(1.5);
    expect(coresOf(parseQuantity('100m')!)).toBe(0.1);
    expect(coresOf(parseQuantity('1001u')!)).toBe(0.002);
    expect(mibOf(parseQuantity('1Gi')!)).toBe(1024);
    expect(mibOf(parseQuantity('512Mi')!)).toBe(512);
    expect(mibOf(parseQuantity('1G')!)).toBe(954);
    expect(mibOf(parseQuantity('128974848')!)).toBe(123);
    expect(mibOf(parseQuantity('129e6')!)).toBe(124);
    expect(mibOf(parseQuantity('1.5Gi')!)).toBe(1536);
    expect(mibOf(parseQuantity('64Ki')!)).toBe(1);
    for (const bad of ['1Gb', 'lots', '-1', '1e3Mi', '', 'Gi', '1 Gi', true, null]) expect(parseQuantity(bad), String(bad)).toBeUndefined();
  });
});

describe('malformed documents', () => {
  /** A small seeded generator (mulberry32), so a failure replays. */
  function rng(seed: number): () => number {
    let a = seed >>> 0;
    return () => {
      a = (a + 0x6d2b79f5) >>> 0;
      let t = a;
      t = Math.imul(t ^ (t >>> 15), t | 1);
      t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
      return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    };
  }
  const WEIRD: unknown[] = [null, 0, -1, 1.5, '', 'x', '500m', true, [], [1], {}, { a: 1 }, [{}], 1e308];

  function mutate(doc: unknown, random: () => number): unknown {
    const copy = structuredClone(doc);
    // Walk to a random node and replace one of its children.
    let node = copy as Record<string, unknown>;
    for (let depth = 0; depth < 12; depth++) {
      const keys = Object.keys(node);
      if (keys.length === 0) break;
      const key = keys[Math.floor(random() * keys.length)];
      const child = node[key];
      if (typeof child !== 'object' || child === null || random() < 0.25) {
        if (random() < 0.2) delete node[key];
        else node[key] = structuredClone(WEIRD[Math.floor(random() * WEIRD.length)]);
        return copy;
      }
      node = child as Record<string, unknown>;
    }
    return copy;
  }

  it('are refused with CAIRN_INVALID_JOB and a field, never another error', () => {
    const goods = readdirSync(FIXTURES).filter((f) => f.endsWith('.yaml') && !f.startsWith('bad-')).map((f) => parseJobText(fixture(f)));
    const random = rng(13);
    let refused = 0;
    for (let i = 0; i < 3000; i++) {
      const doc = mutate(goods[i % goods.length], random);
      try {
        parseJobDocument(doc);
      } catch (err) {
        expect(err, `seed 13, case ${i}: ${JSON.stringify(doc)}`).toBeInstanceOf(CairnError);
        expect((err as CairnError).code).toBe('CAIRN_INVALID_JOB');
        expect((err as CairnError).field, `case ${i}`).toBeTruthy();
        refused++;
      }
    }
    // Most mutations break something; some (an ignored field changed) do not.
    expect(refused).toBeGreaterThan(1000);
  });
});

describe('the examples the README points to', () => {
  const EXAMPLES = join(ROOT, 'examples', 'jobs');
  const PROGRAMS = ['pslite_numpy.py', 'tf_config_trainer.py', 'pytorch_ddp.py', 'indexed_batch.py'];

  it('parse with nothing ignored, as the kinds and replicas the README lists, running the example programs', () => {
    const expected: Record<string, [string, [string, number][]]> = {
      'pslite.yaml': ['pslite', [['scheduler', 1], ['server', 2], ['worker', 4]]],
      'tfjob.yaml': ['tensorflow', [['ps', 2], ['worker', 3]]],
      'pytorchjob.yaml': ['pytorch', [['master', 1], ['worker', 3]]],
      'volcano-batch.yaml': ['batch', [['worker', 4]]],
    };
    expect(readdirSync(EXAMPLES).sort()).toEqual(Object.keys(expected).sort());
    for (const [file, [kind, groups]] of Object.entries(expected)) {
      const { spec, ignored } = parseJobDocument(readFileSync(join(EXAMPLES, file), 'utf8'));
      expect(ignored, file).toEqual([]);
      expect(spec.kind, file).toBe(kind);
      expect(spec.groups.map((g) => [g.name, g.replicas]), file).toEqual(groups);
      for (const g of spec.groups) {
        // Processes run with the system's python, on the project's example programs.
        expect(g.template.image, file).toBeUndefined();
        expect(g.template.command, file).toBe('/usr/bin/python3');
        const program = g.template.args![0];
        expect(program.startsWith('/opt/cairn/examples/programs/'), file).toBe(true);
        expect(PROGRAMS, file).toContain(program.slice('/opt/cairn/examples/programs/'.length));
      }
    }
  });

  it("README's sketch of Cairn's own format is a valid job", () => {
    const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
    const section = readme.slice(readme.indexOf('## Training jobs'));
    const block = /Cairn's own format[^\n]*\n\n```yaml\n([\s\S]*?)```/.exec(section);
    expect(block).not.toBeNull();
    const { spec } = parseJobDocument(block![1]);
    expect(spec).toMatchObject({ name: 'sweep', kind: 'batch', minAvailable: 4, backoffLimit: 6, cleanupPolicy: 'All' });
    expect(spec.groups[0]).toMatchObject({ name: 'worker', replicas: 4, restartPolicy: 'ExitCode' });
  });
});

describe('YAML as Kubernetes users write it', () => {
  it('takes anchors and merge keys, as kubectl does', () => {
    const { spec } = parseJobDocument(`
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: merged}
spec:
  pytorchReplicaSpecs:
    Master: &replica
      replicas: 1
      template:
        spec:
          containers:
            - name: pytorch
              command: [python3, train.py]
    Worker:
      <<: *replica
      replicas: 3
`);
    expect(spec.groups.map((g) => [g.name, g.replicas, g.template.command])).toEqual([
      ['master', 1, 'python3'],
      ['worker', 3, 'python3'],
    ]);
  });
});
