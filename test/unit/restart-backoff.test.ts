// Restart back-off: the pure arithmetic (Kubernetes' 10 s, 20 s, 40 s … 5 min; Marathon's
// backoffSeconds × backoffFactor^n up to maxLaunchDelaySeconds), the job engine's replicas and
// gangs waiting it out, its reset after a stable run, the time written in the record so a new
// leader waits the same, and the job document's field and the CLI flag.

import { describe, expect, it } from 'vitest';
import { Resources } from '../../shared/resources.ts';
import { backoffDelayMs, DEFAULT_RESTART_BACKOFF, nextRestart, secondsUntil } from '../../shared/sdk/restart-backoff.ts';
import { JobEngine, type Effects } from '../../master/frameworks/jobs/engine.ts';
import type { HeldOffer } from '../../shared/sdk/held-offer.ts';
import type { JobSpec } from '../../shared/jobs/model.ts';
import type { JobRecord } from '../../master/frameworks/jobs/record.ts';
import { validateJobSpec } from '../../shared/jobs/spec-validate.ts';
import { parseJobDocument } from '../../shared/jobs/spec-parse.ts';
import { jobDocumentFromFlags } from '../../bin/commands/jobs/flags.ts';
import { describeJob } from '../../bin/commands/jobs/commands.ts';
import { jobView } from '../../master/frameworks/jobs/record.ts';

const S = 1000;

describe('the back-off arithmetic', () => {
  it("is Kubernetes' CrashLoopBackOff by default: 10 s, 20 s, 40 s … capped at 300 s", () => {
    const seq = [1, 2, 3, 4, 5, 6, 7, 50, 10_000].map((n) => backoffDelayMs(DEFAULT_RESTART_BACKOFF, n) / S);
    expect(seq).toEqual([10, 20, 40, 80, 160, 300, 300, 300, 300]);
    expect(backoffDelayMs(DEFAULT_RESTART_BACKOFF, 0)).toBe(0);
  });

  it("is Marathon's backoffSeconds × backoffFactor^(n-1) up to maxLaunchDelaySeconds", () => {
    const marathon = { initialMs: 1 * S, factor: 1.15, maxMs: 300 * S };
    expect([1, 2, 3, 4].map((n) => backoffDelayMs(marathon, n))).toEqual([1000, 1150, 1323, 1521]);
    // 1.15^40 ≈ 268, 1.15^41 ≈ 308: the 42nd failure waits the cap.
    expect(backoffDelayMs(marathon, 41)).toBe(Math.round(1000 * 1.15 ** 40));
    expect(backoffDelayMs(marathon, 42)).toBe(300 * S);
    // A factor of 1: the same wait every time.
    expect([1, 5, 9].map((n) => backoffDelayMs({ initialMs: 3 * S, factor: 1, maxMs: 10 * S }, n))).toEqual([3000, 3000, 3000]);
  });

  it('counts restarts in a row, and starts over after a stable run', () => {
    let inRow = 0;
    const waits: number[] = [];
    for (let i = 0; i < 4; i++) {
      const d = nextRestart(DEFAULT_RESTART_BACKOFF, inRow, 2 * S, 0);
      inRow = d.inRow;
      waits.push(d.delayMs / S);
    }
    expect(waits).toEqual([10, 20, 40, 80]);
    // Ten minutes of running (the kubelet's rule) is stable: the next wait is the first again.
    expect(nextRestart(DEFAULT_RESTART_BACKOFF, inRow, 600 * S, 5_000)).toEqual({ inRow: 1, delayMs: 10 * S, restartAtMs: 15_000 });
    expect(nextRestart(DEFAULT_RESTART_BACKOFF, inRow, 599 * S, 5_000).inRow).toBe(5);
  });

  it('says whole seconds left, rounded up, and 0 once passed', () => {
    expect(secondsUntil(40_000, 0)).toBe(40);
    expect(secondsUntil(40_000, 100)).toBe(40);
    expect(secondsUntil(40_000, 40_000)).toBe(0);
    expect(secondsUntil(undefined, 0)).toBe(0);
  });
});

let offerSeq = 0;
function offer(agent = 1): HeldOffer {
  return { id: `o${++offerSeq}`, agentId: `a${agent}`, hostname: `h${agent}`, ip: `10.0.0.${agent}`, resources: Resources.parse('cpus:4;mem:1024;ports:[31000-31009]'), role: '*' };
}

function job(more: Partial<JobSpec> = {}): JobSpec {
  return {
    name: 'j', kind: 'batch', minAvailable: 1, successPolicy: 'Default', failurePolicies: [], backoffLimit: 20, cleanupPolicy: 'All', role: '*', priority: 0,
    groups: [{ name: 'worker', replicas: 1, restartPolicy: 'OnFailure', template: { command: 'false', cpus: 1, memMb: 64, diskMb: 0, gpus: 0, ports: 1, env: {}, volumes: [] } }],
    ...more,
  };
}

/** A job engine with Kubernetes' default back-off, and its record as the store would hold it. */
function engine() {
  const e = new JobEngine({ domain: 'cairn', gatherMs: 2_000, backoffBaseMs: 1_000, backoffMaxMs: 8_000 });
  e.setClusterTotals([Resources.parse('cpus:4;mem:1024;ports:[31000-31009]')]);
  const stored = new Map<string, JobRecord>();
  const take = (): Effects => {
    const x = e.takeEffects();
    for (const [k, v] of x.writes) if (v) stored.set(k, structuredClone(v));
    return x;
  };
  const launched = (x: Effects) => x.launches.flatMap((l) => l.tasks.map((t) => t.taskId));
  /** The replica's task runs from `runAt` and fails at `failAt`. */
  const runAndFail = (e2: JobEngine, runAt: number, failAt: number) => {
    const taskId = e2.get('j')!.replicas[0]!.taskId!;
    e2.taskUpdate({ taskId, state: 'TASK_RUNNING', message: '' }, runAt);
    e2.taskUpdate({ taskId, state: 'TASK_FAILED', exitCode: 1, message: 'exited with code 1' }, failAt);
  };
  /** Submitted, placed, ran from 10 ms and failed at 20 ms. */
  const failedOnce = () => {
    e.submit(job(), [], 'u', 0);
    e.offers([offer()], 1);
    take();
    runAndFail(e, 10, 20);
    take();
  };
  return { e, take, launched, runAndFail, stored, failedOnce };
}

describe('a job replica that keeps failing', () => {
  it('restarts after 10 s, 20 s, 40 s (never sooner), and its wait is in the record', () => {
    const { e, take, launched, runAndFail, stored } = engine();
    e.submit(job(), [], 'u', 0);
    e.offers([offer()], 1);
    expect(launched(take())).toHaveLength(1);
    let t = 1;
    for (const waitS of [10, 20, 40]) {
      runAndFail(e, t + 100, t + 200);
      const failedAt = t + 200;
      take();
      const rep = stored.get('j')!.replicas[0]!;
      expect(rep).toMatchObject({ state: 'Pending', restartAtMs: failedAt + waitS * S, backoffRestarts: [10, 20, 40].indexOf(waitS) + 1 });
      expect(describeJob(jobView(stored.get('j')!), failedAt)).toContain(`Pending (restarting in ${waitS} s)`);
      // Offers before its time are not used, and it asks for none.
      e.offers([offer()], failedAt + waitS * S - 1);
      expect(launched(take())).toEqual([]);
      expect(e.wantsOffers()).toBe(false);
      e.tick(failedAt + waitS * S);
      expect(e.wantsOffers()).toBe(true);
      e.offers([offer()], failedAt + waitS * S);
      expect(launched(take())).toHaveLength(1);
      t = failedAt + waitS * S;
    }
  });

  it('starts its back-off over after it ran 10 minutes', () => {
    const { e, take, runAndFail, stored, failedOnce } = engine();
    failedOnce();
    e.tick(20 + 10 * S);
    e.offers([offer()], 20 + 10 * S);
    take();
    runAndFail(e, 11 * S, 12 * S);
    take();
    expect(stored.get('j')!.replicas[0]).toMatchObject({ backoffRestarts: 2, restartAtMs: 12 * S + 20 * S });
    e.tick(32 * S);
    e.offers([offer()], 32 * S);
    take();
    // Stable: ran from 33 s to 33 s + 10 min.
    runAndFail(e, 33 * S, 33 * S + 600 * S);
    take();
    expect(stored.get('j')!.replicas[0]).toMatchObject({ backoffRestarts: 1, restartAtMs: 33 * S + 600 * S + 10 * S });
  });

  it('a new leader loading the record waits out the same back-off', () => {
    const { stored, failedOnce } = engine();
    failedOnce();
    const next = new JobEngine({ domain: 'cairn', gatherMs: 2_000, backoffBaseMs: 1_000, backoffMaxMs: 8_000 });
    next.load([...stored.values()]);
    next.takeEffects();
    next.offers([offer()], 5 * S);
    expect(next.takeEffects().launches).toEqual([]);
    next.offers([offer()], 20 + 10 * S);
    expect(next.takeEffects().launches).toHaveLength(1);
  });

  it("uses the job's own restartBackoff over the engine's default", () => {
    const { e, take, runAndFail, stored } = engine();
    e.submit(job({ restartBackoff: { initialSeconds: 1, factor: 3, maxSeconds: 5, resetAfterSeconds: 60 } }), [], 'u', 0);
    e.offers([offer()], 1);
    take();
    const waits: number[] = [];
    let t = 1;
    for (let i = 0; i < 3; i++) {
      runAndFail(e, t + 1, t + 2);
      take();
      const at = stored.get('j')!.replicas[0]!.restartAtMs!;
      waits.push((at - (t + 2)) / S);
      e.tick(at);
      e.offers([offer()], at);
      take();
      t = at;
    }
    expect(waits).toEqual([1, 3, 5]);
  });

  it('a gang restarted whole (RestartJob) waits out its back-off before it is placed again', () => {
    const { e, take, launched, stored } = engine();
    e.submit(job({ failurePolicies: [{ event: 'TaskFailed', action: 'RestartJob' }] }), [], 'u', 0);
    e.offers([offer()], 1);
    take();
    const taskId = e.get('j')!.replicas[0]!.taskId!;
    e.taskUpdate({ taskId, state: 'TASK_RUNNING', message: '' }, 2);
    e.taskUpdate({ taskId, state: 'TASK_FAILED', exitCode: 1, message: 'boom' }, 3);
    take();
    expect(stored.get('j')).toMatchObject({ phase: 'Queued', restartAtMs: 3 + 10 * S, backoffRestarts: 1 });
    expect(jobView(stored.get('j')!).restartAtMs).toBe(3 + 10 * S);
    expect(describeJob(jobView(stored.get('j')!), 3)).toContain('the gang is restarting in 10 s');
    e.offers([offer()], 5 * S);
    e.tick(9 * S);
    expect(launched(take())).toEqual([]);
    e.tick(3 + 10 * S);
    e.offers([offer()], 3 + 10 * S);
    expect(launched(take())).toHaveLength(1);
  });
});

describe('the restartBackoff field and flag', () => {
  const base = { name: 'j', kind: 'batch', groups: [{ name: 'w', template: { command: 'true' } }] };

  it('is read from a Cairn job, each field left out taking the default, and from a Kubeflow runPolicy', () => {
    expect(validateJobSpec({ ...base, restartBackoff: { initialSeconds: 1, maxSeconds: 4 } }).restartBackoff).toEqual({ initialSeconds: 1, factor: 2, maxSeconds: 4, resetAfterSeconds: 600 });
    expect(validateJobSpec(base).restartBackoff).toBeUndefined();
    const tf = parseJobDocument({
      apiVersion: 'kubeflow.org/v1', kind: 'PyTorchJob', metadata: { name: 'p' },
      spec: { runPolicy: { restartBackoff: { initialSeconds: 2 } }, pytorchReplicaSpecs: { Master: { replicas: 1, template: { spec: { containers: [{ name: 'pytorch', image: 'x', command: ['true'] }] } } } } },
    });
    expect(tf.spec.restartBackoff).toMatchObject({ initialSeconds: 2 });
  });

  it('refuses bad values, naming the field', () => {
    expect(() => validateJobSpec({ ...base, restartBackoff: { initialSeconds: -1 } })).toThrow(/restartBackoff.initialSeconds/);
    expect(() => validateJobSpec({ ...base, restartBackoff: { factor: 0.5 } })).toThrow(/restartBackoff.factor/);
    expect(() => validateJobSpec({ ...base, restartBackoff: { initialSeconds: 10, maxSeconds: 5 } })).toThrow(/restartBackoff.maxSeconds/);
    expect(() => validateJobSpec({ ...base, restartBackoff: { initial: 10 } })).toThrow(/unknown field 'initial'/);
  });

  it('comes from --restart-backoff INITIAL[,FACTOR[,MAX[,RESET-AFTER]]]', () => {
    expect(jobDocumentFromFlags({ kind: 'batch', restartBackoff: '1s,2,8s,1m' }, ['true'], 0).restartBackoff).toEqual({ initialSeconds: 1, factor: 2, maxSeconds: 8, resetAfterSeconds: 60 });
    expect(jobDocumentFromFlags({ kind: 'batch', restartBackoff: '500ms' }, ['true'], 0).restartBackoff).toEqual({ initialSeconds: 0.5 });
    expect(() => jobDocumentFromFlags({ kind: 'batch', restartBackoff: '10' }, ['true'], 0)).toThrow(/--restart-backoff.*needs a unit/);
    expect(() => jobDocumentFromFlags({ kind: 'batch', restartBackoff: '10s,0.5' }, ['true'], 0)).toThrow(/--restart-backoff.*factor/);
    expect(() => jobDocumentFromFlags({ kind: 'batch', restartBackoff: '10s,2,5s' }, ['true'], 0)).toThrow(/--restart-backoff.*maxSeconds/);
  });
});
