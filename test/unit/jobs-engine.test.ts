// The job engine's core, driven by hand: lifecycle and conditions, gang placement without
// deadlock, Unschedulable, restart and failure policies, the kinds' rules, backoffLimit,
// activeDeadlineSeconds, TTL, stale tasks and resuming from stored records.

import { describe, expect, it } from 'vitest';
import { Resources } from '../../shared/resources.ts';
import { JobEngine, type Effects, type EngineOptions } from '../../master/frameworks/jobs/engine.ts';
import type { HeldOffer } from '../../shared/sdk/held-offer.ts';
import type { JobKind, JobSpec, ReplicaGroup, RestartPolicy } from '../../shared/jobs/model.ts';
import type { JobRecord } from '../../master/frameworks/jobs/record.ts';

// A short restart back-off (times here are a few ms apart); its own tests below use Kubernetes' default.
const OPTS: EngineOptions = { domain: 'cairn', gatherMs: 2_000, backoffBaseMs: 1_000, backoffMaxMs: 8_000, restartBackoff: { initialMs: 1, factor: 2, maxMs: 4, resetAfterMs: 1_000 } };

function group(name: string, replicas: number, restartPolicy: RestartPolicy = 'OnFailure', cpus = 1, memMb = 128): ReplicaGroup {
  return { name, replicas, restartPolicy, template: { command: 'true', cpus, memMb, diskMb: 0, gpus: 0, ports: 1, env: {}, volumes: [] } };
}

function spec(name: string, kind: JobKind, groups: ReplicaGroup[], more: Partial<JobSpec> = {}): JobSpec {
  const total = groups.reduce((n, g) => n + g.replicas, 0);
  return { name, kind, groups, minAvailable: total, successPolicy: 'Default', failurePolicies: [], backoffLimit: 3, cleanupPolicy: 'Running', role: '*', priority: 0, ...more };
}

let offerSeq = 0;
function offer(agent: number, res = 'cpus:4;mem:1024;ports:[31000-31009]'): HeldOffer {
  return { id: `o${++offerSeq}`, agentId: `a${agent}`, hostname: `h${agent}`, ip: `10.0.0.${agent}`, resources: Resources.parse(res), role: '*' };
}

/** An engine with the effects of every call collected. */
function harness(totals = ['cpus:4;mem:1024;ports:[31000-31009]', 'cpus:4;mem:1024;ports:[31000-31009]']) {
  const e = new JobEngine(OPTS);
  e.setClusterTotals(totals.map((t) => Resources.parse(t)));
  const all: Effects[] = [];
  const take = () => {
    const x = e.takeEffects();
    all.push(x);
    return x;
  };
  /** Every task of the record reports `state`. */
  const report = (job: string, state: 'TASK_RUNNING', now: number) => {
    for (const r of e.get(job)!.replicas) if (r.taskId && (r.state === 'Starting' || r.state === 'Running')) e.taskUpdate({ taskId: r.taskId, state, message: '' }, now);
  };
  const end = (job: string, grp: string, index: number, exitCode: number, now: number) => {
    const r = e.get(job)!.replicas.find((x) => x.group === grp && x.index === index)!;
    e.taskUpdate({ taskId: r.taskId!, state: exitCode === 0 ? 'TASK_FINISHED' : 'TASK_FAILED', exitCode, message: `exited with code ${exitCode}` }, now);
  };
  const killed = (x: Effects) => x.kills.map((k) => k.taskId);
  /** The engine's kills arrive back as TASK_KILLED. */
  const confirmKills = (x: Effects, now: number) => {
    for (const k of x.kills) e.taskUpdate({ taskId: k.taskId, state: 'TASK_KILLED', exitCode: 143, message: 'killed' }, now);
  };
  return { e, take, report, end, killed, confirmKills };
}

describe('job engine: lifecycle', () => {
  it('goes Created → Queued → Running → Succeeded, with every replica launched at once and named', () => {
    const { e, take, report, end } = harness();
    const r = e.submit(spec('b1', 'batch', [group('worker', 3)]), [], 'u1', 0) as JobRecord;
    expect(r.conditions.map((c) => c.type)).toEqual(['Created', 'Queued']);
    take();
    e.offers([offer(1), offer(2)], 10);
    const x = take();
    const tasks = x.launches.flatMap((l) => l.tasks);
    expect(tasks.map((t) => t.name).sort()).toEqual(['b1-worker-0', 'b1-worker-1', 'b1-worker-2']);
    expect(tasks.every((t) => t.env.CAIRN_JOB === 'b1' && t.env.PORT === String(t.ports[0]))).toBe(true);
    // Recorded before it is acted on: the write comes with the launch.
    expect(x.writes.get('b1')?.replicas.every((rep) => rep.state === 'Starting' && rep.taskId)).toBe(true);
    report('b1', 'TASK_RUNNING', 20);
    expect(e.get('b1')!.phase).toBe('Running');
    end('b1', 'worker', 0, 0, 30);
    end('b1', 'worker', 1, 0, 31);
    expect(e.get('b1')!.phase).toBe('Running');
    end('b1', 'worker', 2, 0, 32);
    const done = e.get('b1')!;
    expect(done.phase).toBe('Succeeded');
    expect(done.finishedAtMs).toBe(32);
    expect(done.conditions.map((c) => c.type)).toEqual(['Created', 'Queued', 'Running', 'Succeeded']);
    expect(done.replicas.map((x) => x.exitCode)).toEqual([0, 0, 0]);
  });

  it('refuses a second live job of the same name, and replaces a finished one', () => {
    const { e, take, report, end } = harness();
    e.submit(spec('same', 'batch', [group('worker', 1)]), [], 'u1', 0);
    expect(e.submit(spec('same', 'batch', [group('worker', 1)]), [], 'u2', 1)).toBe('exists');
    e.offers([offer(1)], 2);
    take();
    report('same', 'TASK_RUNNING', 3);
    end('same', 'worker', 0, 0, 4);
    expect(e.submit(spec('same', 'batch', [group('worker', 2)]), [], 'u3', 5)).not.toBe('exists');
    expect(e.get('same')!.uid).toBe('u3');
  });
});

describe('job engine: saying why a gang waits', () => {
  it('says at once, as it starts gathering, what keeps the gang out and who holds it; and again when the window ends', () => {
    const asked: { labels: string[]; cls: string | undefined }[] = [];
    let why: string | undefined = 'worker-1 needs cpus 1; the best agent, h1, has cpus 0.5 free; /dev/web holds cpus 0.5 there';
    const e = new JobEngine({
      ...OPTS,
      explainWait: (members, cls) => {
        asked.push({ labels: members.map((m) => m.label), cls });
        return why;
      },
    });
    e.setClusterTotals([Resources.parse('cpus:4;mem:1024;ports:[31000-31009]')]);
    e.submit(spec('w', 'batch', [group('worker', 2)], { priorityClass: 'production' }), [], 'u', 0);
    expect(asked).toEqual([{ labels: ['worker-0', 'worker-1'], cls: 'production' }]);
    expect(e.get('w')!.message).toBe(`its gang of 2 replicas does not fit: ${why}; gathering offers`);
    expect(e.takeEffects().writes.get('w')?.message).toMatch(/\/dev\/web holds/);
    e.tick(2_100);
    expect(e.get('w')!.message).toBe(`its gang of 2 replicas does not fit: ${why}; trying again in 1000 ms (attempt 1)`);
    // Free room again (the holder went): the next window's message says only what it saw.
    why = undefined;
    e.tick(3_200);
    e.tick(5_300);
    expect(e.get('w')!.message).toMatch(/did not fit in the offers gathered for 2000 ms; trying again in 2000 ms \(attempt 2\)/);
  });
});

describe('job engine: gangs', () => {
  it('holds offers while the gang does not fit, then declines them all and backs off', () => {
    const { e, take } = harness();
    e.submit(spec('g', 'batch', [group('worker', 6, 'OnFailure', 1)]), [], 'u', 0);
    e.offers([offer(1)], 100); // 4 cpus of the 6 needed
    let x = take();
    expect(x.launches).toEqual([]);
    expect(x.declines).toEqual([]); // held, not accepted, not yet released
    e.tick(1_000);
    expect(take().declines).toEqual([]);
    e.tick(2_100); // the window is over
    x = take();
    expect(x.declines.length).toBe(1);
    const r = e.get('g')!;
    expect(r.gangAttempts).toBe(1);
    expect(r.nextTryAtMs).toBe(3_100);
    expect(r.message).toMatch(/did not fit .* trying again in 1000 ms/);
    // During the backoff offers are not held.
    e.offers([offer(1), offer(2)], 2_500);
    x = take();
    expect(x.launches).toEqual([]);
    expect(x.declines.length).toBe(2);
    // After it, the whole cluster comes: all six at once.
    e.offers([offer(1), offer(2)], 3_200);
    x = take();
    expect(x.launches.flatMap((l) => l.tasks).length).toBe(6);
  });

  it('two jobs each needing 3/4 of the cluster never both hold part of it: one runs, then the other', () => {
    for (const order of [['first', 'second'], ['second', 'first']]) {
      const { e, take, report, end } = harness();
      for (const [i, name] of order.entries()) e.submit(spec(name!, 'batch', [group('worker', 3, 'OnFailure', 2)]), [], name!, i);
      e.offers([offer(1), offer(2)], 10);
      let x = take();
      const started = new Set(x.launches.flatMap((l) => l.tasks.map((t) => t.job)));
      expect([...started]).toEqual([order[0]]);
      const leftOffers = x.declines;
      // The second gathers what is left (1/4) but cannot place, and lets it go after the window.
      expect(e.get(order[1]!)!.replicas.every((r) => r.state === 'Pending')).toBe(true);
      void leftOffers;
      e.offers([offer(2, 'cpus:2;mem:512;ports:[31005-31009]')], 20);
      expect(take().launches).toEqual([]);
      e.tick(2_100);
      x = take();
      expect(x.declines.length).toBeGreaterThan(0);
      report(order[0]!, 'TASK_RUNNING', 2_200);
      for (let i = 0; i < 3; i++) end(order[0]!, 'worker', i, 0, 3_000);
      expect(e.get(order[0]!)!.phase).toBe('Succeeded');
      // Its end frees the cluster; the waiting job may try at once, not after its backoff.
      e.offers([offer(1), offer(2)], 3_010);
      x = take();
      expect(new Set(x.launches.flatMap((l) => l.tasks.map((t) => t.job)))).toEqual(new Set([order[1]]));
      expect(x.launches.flatMap((l) => l.tasks).length).toBe(3);
    }
  });

  it('a higher priority job takes over the gathering, whatever the order of submission', () => {
    const { e, take } = harness();
    e.submit(spec('low', 'batch', [group('worker', 3, 'OnFailure', 2)]), [], 'u1', 0);
    e.offers([offer(1)], 10); // 'low' gathers and holds this offer
    expect(take().declines).toEqual([]);
    e.submit(spec('high', 'batch', [group('worker', 3, 'OnFailure', 2)], { priority: 10 }), [], 'u2', 20);
    e.offers([offer(2)], 30);
    const x = take();
    expect(new Set(x.launches.flatMap((l) => l.tasks.map((t) => t.job)))).toEqual(new Set(['high']));
    expect(e.get('low')!.phase).toBe('Queued');
  });

  it('a job draws only on the offers of its own role; the others are let go', () => {
    const { e, take } = harness();
    e.submit(spec('teamed', 'batch', [group('worker', 2, 'OnFailure', 2)], { role: 'team-a' }), [], 'u', 0);
    take();
    const theirs = { ...offer(1), role: 'team-b' };
    e.offers([theirs], 10);
    expect(take()).toMatchObject({ launches: [], declines: [theirs.id] });
    const ours = { ...offer(2), role: 'team-a' };
    e.offers([ours], 20);
    const x = take();
    expect(x.launches).toEqual([expect.objectContaining({ role: 'team-a', offerIds: [ours.id] })]);
    expect(x.launches[0]!.tasks[0]!.resources[0]).toMatchObject({ role: 'team-a' });
    expect(e.roles()).toEqual(['team-a']);
  });

  it('starts minAvailable replicas as the gang, and the rest as offers allow', () => {
    const { e, take } = harness();
    e.submit(spec('part', 'batch', [group('worker', 4, 'OnFailure', 2)], { minAvailable: 2 }), [], 'u', 0);
    e.offers([offer(1)], 1); // 4 cpus: the gang of 2 fits, the others do not yet
    expect(take().launches.flatMap((l) => l.tasks.map((t) => t.name))).toEqual(['part-worker-0', 'part-worker-1']);
    e.offers([offer(2)], 2);
    expect(take().launches.flatMap((l) => l.tasks.map((t) => t.name))).toEqual(['part-worker-2', 'part-worker-3']);
  });

  it('a gang larger than the cluster is Unschedulable with the reason; with a RestartJob policy it waits', () => {
    const { e, take } = harness();
    e.submit(spec('huge', 'batch', [group('worker', 3, 'OnFailure', 3)]), [], 'u', 0);
    const r = e.get('huge')!;
    expect(r.phase).toBe('Failed');
    expect(r.conditions.at(-1)).toMatchObject({ type: 'Failed', reason: 'Unschedulable' });
    expect(r.message).toMatch(/Unschedulable: its gang of 3 replicas needs cpus:9.*cluster's 2 agents have cpus:8/);
    take();
    e.submit(spec('patient', 'batch', [group('worker', 3, 'OnFailure', 3)], { failurePolicies: [{ event: 'Unschedulable', action: 'RestartJob' }] }), [], 'u', 0);
    expect(e.get('patient')!.phase).toBe('Queued');
    expect(e.get('patient')!.message).toMatch(/^Unschedulable/);
    // Submitted with allowUnschedulable: it waits too, with no policy of its own.
    e.submit(spec('allowed', 'batch', [group('worker', 1, 'OnFailure', 9)], { allowUnschedulable: true }), [], 'u', 0);
    expect(e.get('allowed')!.phase).toBe('Queued');
    expect(e.get('allowed')!.message).toMatch(/^Unschedulable/);
  });

  it('places a 1000-replica gang on 100 agents, all at once', () => {
    const { e, take } = harness(Array.from({ length: 100 }, () => 'cpus:16;mem:65536;ports:[31000-31099]'));
    e.submit(spec('big', 'batch', [group('worker', 1_000, 'OnFailure', 1, 512)]), [], 'u', 0);
    e.offers(Array.from({ length: 100 }, (_, i) => offer(i, 'cpus:16;mem:65536;ports:[31000-31099]')), 1);
    const x = take();
    expect(x.launches.length).toBe(63); // packed: 16 per agent
    expect(x.launches.flatMap((l) => l.tasks).length).toBe(1_000);
    const ports = new Set(x.launches.flatMap((l) => l.tasks.map((t) => `${l.agentId}:${t.ports[0]}`)));
    expect(ports.size).toBe(1_000);
  });
});

describe('job engine: restart and failure policies', () => {
  function running(kind: JobKind, groups: ReplicaGroup[], more: Partial<JobSpec> = {}) {
    const h = harness();
    h.e.submit(spec('j', kind, groups, more), [], 'u', 0);
    h.e.offers([offer(1), offer(2)], 1);
    h.take();
    h.report('j', 'TASK_RUNNING', 2);
    return h;
  }

  it('OnFailure restarts the failed replica alone under a new task id, on its previous agent and ports', () => {
    const h = running('batch', [group('worker', 2, 'OnFailure')]);
    const before = { ...h.e.get('j')!.replicas[1]! };
    h.end('j', 'worker', 1, 3, 10);
    const r = h.e.get('j')!;
    expect(r.replicas[1]).toMatchObject({ state: 'Pending', restarts: 1, exitCode: 3 });
    expect(r.restarts).toBe(1);
    h.e.offers([offer(2), offer(1)], 20);
    const x = h.take();
    const t = x.launches.flatMap((l) => l.tasks);
    expect(t.map((y) => y.name)).toEqual(['j-worker-1']);
    expect(t[0]!.taskId).not.toBe(before.taskId);
    expect(x.launches[0]!.agentId).toBe(before.agentId);
    expect(t[0]!.ports).toEqual(before.ports);
  });

  it('a replica restarted on other ports is told the peers as they are now, not as they were', () => {
    const h = running('batch', [group('worker', 2, 'OnFailure')]);
    const first = h.e.get('j')!.replicas.map((r) => `${r.group}-${r.index}:${r.ports[0]}`);
    h.end('j', 'worker', 1, 3, 10);
    // Its old agent is gone: it lands elsewhere, on another port.
    h.e.offers([offer(7, 'cpus:4;mem:1024;ports:[32000-32009]')], 20);
    const t = h.take().launches.flatMap((l) => l.tasks)[0]!;
    expect(t.ports).toEqual([32000]);
    expect(t.env.CAIRN_PEERS).toBe(`j-worker-0.jobs.cairn:${first[0]!.split(':')[1]},j-worker-1.jobs.cairn:32000`);
  });

  it('Never fails the job; ExitCode retries 137 but not 1; Always restarts even after exit 0', () => {
    let h = running('batch', [group('worker', 2, 'Never')]);
    h.end('j', 'worker', 0, 2, 10);
    expect(h.e.get('j')!).toMatchObject({ phase: 'Failed' });
    expect(h.killed(h.take())).toEqual([h.e.get('j')!.replicas[1]!.taskId]);

    h = running('batch', [group('worker', 2, 'ExitCode')]);
    h.end('j', 'worker', 0, 137, 10);
    expect(h.e.get('j')!.replicas[0]!.state).toBe('Pending');
    h.end('j', 'worker', 1, 1, 11);
    expect(h.e.get('j')!.conditions.at(-1)).toMatchObject({ type: 'Failed', reason: 'PermanentExitCode' });

    h = running('pytorch', [group('master', 1, 'OnFailure'), group('worker', 2, 'Always')]);
    h.end('j', 'worker', 1, 0, 10);
    expect(h.e.get('j')!.replicas[2]!.state).toBe('Pending');
    h.end('j', 'master', 0, 0, 11);
    expect(h.e.get('j')!.phase).toBe('Succeeded');
  });

  it('fails the job once restarts exceed backoffLimit', () => {
    const h = running('batch', [group('worker', 1, 'OnFailure')], { backoffLimit: 1 });
    h.end('j', 'worker', 0, 1, 10);
    h.e.offers([offer(1)], 11);
    h.take();
    h.end('j', 'worker', 0, 1, 12);
    const r = h.e.get('j')!;
    expect(r.phase).toBe('Failed');
    expect(r.conditions.at(-1)!.reason).toBe('BackoffLimitExceeded');
    // The restart refused is not counted: one was made.
    expect(r.restarts).toBe(1);
    expect(r.conditions.at(-1)!.message).toMatch(/restarted 1 times \(backoffLimit 1\)/);
  });

  it('a TaskFailed → RestartJob policy kills every replica, then places the gang again', () => {
    const h = running('batch', [group('worker', 3, 'Never')], { failurePolicies: [{ event: 'TaskFailed', action: 'RestartJob' }] });
    const first = h.e.get('j')!.replicas.map((r) => r.taskId);
    h.end('j', 'worker', 2, 1, 10);
    expect(h.e.get('j')!.phase).toBe('Restarting');
    const x = h.take();
    expect(h.killed(x).sort()).toEqual([first[0], first[1]].sort());
    h.confirmKills(x, 11);
    const r = h.e.get('j')!;
    expect(r.phase).toBe('Queued');
    expect(r.replicas.every((y) => y.state === 'Pending' && y.restarts === 1)).toBe(true);
    h.e.offers([offer(1), offer(2)], 12);
    expect(h.take().launches.flatMap((l) => l.tasks).length).toBe(3);
    expect(h.e.get('j')!.conditions.map((c) => c.type)).toEqual(['Created', 'Queued', 'Running', 'Restarting', 'Queued']);
  });

  it('a TaskCompleted → CompleteJob policy ends the job on the first completion', () => {
    const h = running('batch', [group('driver', 1), group('worker', 2)], { failurePolicies: [{ event: 'TaskCompleted', action: 'CompleteJob', group: 'driver' }] });
    h.end('j', 'worker', 0, 0, 10);
    expect(h.e.get('j')!.phase).toBe('Running');
    h.end('j', 'driver', 0, 0, 11);
    expect(h.e.get('j')!.phase).toBe('Succeeded');
    expect(h.killed(h.take()).length).toBe(1);
  });
});

describe('job engine: kinds', () => {
  it('pslite: a scheduler death restarts the whole gang; the workers\' success stops scheduler and servers', () => {
    const h = harness();
    h.e.submit(spec('ps', 'pslite', [group('scheduler', 1), group('server', 2), group('worker', 4)], { }), [], 'u', 0);
    h.e.offers([offer(1), offer(2)], 1);
    const launched = h.take().launches.flatMap((l) => l.tasks);
    expect(launched.length).toBe(7);
    const sched = launched.find((t) => t.group === 'scheduler')!;
    expect(sched.env.DMLC_USE_KUBERNETES).toBe('1');
    h.report('ps', 'TASK_RUNNING', 2);
    h.end('ps', 'scheduler', 0, 137, 10);
    expect(h.e.get('ps')!.conditions.at(-1)).toMatchObject({ type: 'Restarting', reason: 'PsliteGangBroken' });
    const x = h.take();
    expect(x.kills.length).toBe(6);
    h.confirmKills(x, 11);
    h.e.offers([offer(1), offer(2)], 12);
    expect(h.take().launches.flatMap((l) => l.tasks).length).toBe(7);
    h.report('ps', 'TASK_RUNNING', 13);
    for (let i = 0; i < 4; i++) h.end('ps', 'worker', i, 0, 20);
    expect(h.e.get('ps')!.phase).toBe('Succeeded');
    const stopped = h.take().kills.map((k) => k.taskId);
    expect(stopped.length).toBe(3);
    expect(stopped.every((t) => /\.(scheduler|server)-\d\./.test(t))).toBe(true);
  });

  it('tensorflow: the chief decides, and parameter servers are stopped even with cleanupPolicy None', () => {
    const h = harness();
    h.e.submit(spec('tf', 'tensorflow', [group('chief', 1), group('ps', 2), group('worker', 2)], { cleanupPolicy: 'None' }), [], 'u', 0);
    h.e.offers([offer(1), offer(2)], 1);
    h.take();
    h.report('tf', 'TASK_RUNNING', 2);
    h.end('tf', 'worker', 0, 0, 10);
    expect(h.e.get('tf')!.phase).toBe('Running');
    h.end('tf', 'chief', 0, 0, 11);
    expect(h.e.get('tf')!.phase).toBe('Succeeded');
    const stopped = h.take().kills.map((k) => k.taskId);
    expect(stopped.length).toBe(2);
    expect(stopped.every((t) => /\.ps-\d\./.test(t))).toBe(true);
  });

  it('tensorflow AllWorkers waits for every worker', () => {
    const h = harness();
    h.e.submit(spec('tf', 'tensorflow', [group('ps', 1), group('worker', 2)], { successPolicy: 'AllWorkers' }), [], 'u', 0);
    h.e.offers([offer(1), offer(2)], 1);
    h.take();
    h.report('tf', 'TASK_RUNNING', 2);
    h.end('tf', 'worker', 0, 0, 10);
    expect(h.e.get('tf')!.phase).toBe('Running');
    h.end('tf', 'worker', 1, 0, 11);
    expect(h.e.get('tf')!.phase).toBe('Succeeded');
  });
});

describe('job engine: limits, TTL and resuming', () => {
  it('fails a job past its activeDeadlineSeconds and kills what runs', () => {
    const h = harness();
    h.e.submit(spec('d', 'batch', [group('worker', 2)], { activeDeadlineSeconds: 5 }), [], 'u', 0);
    h.e.offers([offer(1)], 100);
    h.take();
    h.e.tick(5_099);
    expect(h.e.get('d')!.phase).toBe('Queued');
    h.e.tick(5_100);
    expect(h.e.get('d')!.conditions.at(-1)).toMatchObject({ type: 'Failed', reason: 'DeadlineExceeded' });
    expect(h.take().kills.length).toBe(2);
  });

  it('removes a finished job after its TTL', () => {
    const h = harness();
    h.e.submit(spec('t', 'batch', [group('worker', 1)], { ttlSecondsAfterFinished: 10 }), [], 'u', 0);
    h.e.offers([offer(1)], 1);
    h.take();
    h.end('t', 'worker', 0, 0, 1_000);
    h.take();
    h.e.tick(10_999);
    expect(h.e.get('t')).toBeDefined();
    h.e.tick(11_000);
    expect(h.e.get('t')).toBeUndefined();
    expect(h.take().writes.get('t')).toBeNull();
  });

  it('waits for a replica whose agent is unreachable instead of starting it twice', () => {
    const h = harness();
    h.e.submit(spec('u', 'batch', [group('worker', 1, 'OnFailure')]), [], 'u', 0);
    h.e.offers([offer(1)], 1);
    h.take();
    const taskId = h.e.get('u')!.replicas[0]!.taskId!;
    h.e.taskUpdate({ taskId, state: 'TASK_RUNNING', message: '' }, 2);
    h.e.taskUpdate({ taskId, state: 'TASK_UNREACHABLE', message: 'agent is unreachable' }, 3);
    expect(h.e.get('u')!.replicas[0]).toMatchObject({ state: 'Running', message: 'its agent is unreachable: agent is unreachable' });
    h.e.offers([offer(2)], 4);
    expect(h.take().launches).toEqual([]);
    h.e.taskUpdate({ taskId, state: 'TASK_RUNNING', message: '' }, 5);
    expect(h.e.get('u')!.replicas[0]!.message).toBe('');
    // Written off for good (the agent was removed): only now is it started again.
    h.e.taskUpdate({ taskId, state: 'TASK_GONE', message: 'agent was removed' }, 6);
    h.e.offers([offer(2)], 7);
    expect(h.take().launches.flatMap((l) => l.tasks.map((t) => t.name))).toEqual(['u-worker-0']);
  });

  it('kills tasks no replica owns, and ignores an end it has already counted', () => {
    const h = harness();
    h.e.submit(spec('s', 'batch', [group('worker', 1, 'OnFailure')]), [], 'u', 0);
    h.e.offers([offer(1)], 1);
    h.take();
    const old = h.e.get('s')!.replicas[0]!.taskId!;
    h.end('s', 'worker', 0, 1, 2);
    h.e.taskUpdate({ taskId: old, state: 'TASK_FAILED', exitCode: 1, message: '' }, 3); // re-sent
    expect(h.e.get('s')!.restarts).toBe(1);
    h.take();
    h.e.taskUpdate({ taskId: 'someone-else.worker-0.x.1', state: 'TASK_RUNNING', message: '' }, 4);
    expect(h.take().kills).toEqual([{ taskId: 'someone-else.worker-0.x.1', role: '*' }]);
  });

  it('a new engine resumes from the stored records: same tasks, kills it had decided sent again', () => {
    const h = harness();
    h.e.submit(spec('r', 'batch', [group('worker', 2, 'Never')], { failurePolicies: [{ event: 'TaskFailed', action: 'RestartJob' }] }), [], 'u', 0);
    h.e.offers([offer(1)], 1);
    h.take();
    h.end('r', 'worker', 0, 1, 2);
    const stored = structuredClone(h.take().writes.get('r')!);
    const next = new JobEngine(OPTS);
    next.load([stored]);
    expect(next.liveTasks().map((t) => t.taskId)).toEqual([stored.replicas[1]!.taskId]);
    expect(next.takeEffects().kills.map((k) => k.taskId)).toEqual([stored.replicas[1]!.taskId]);
    next.taskUpdate({ taskId: stored.replicas[1]!.taskId!, state: 'TASK_KILLED', message: '' }, 3);
    expect(next.get('r')!.phase).toBe('Queued');
  });
});

describe('job engine: priority classes and preemption', () => {
  const RANKS: Record<string, number> = { production: 2, iteration: 1 };
  const classed = () => {
    const e = new JobEngine({ ...OPTS, classRank: (c) => (c === undefined ? 0 : RANKS[c] ?? 0) });
    e.setClusterTotals([Resources.parse('cpus:4;mem:1024;ports:[31000-31009]')]);
    return e;
  };
  const lane = (role: string, cls: string) => `${role}@${cls}`;

  it('gathers for a higher class first, goes through its own subscription, and asks the master for room when its gang does not fit', () => {
    const e = classed();
    e.submit(spec('research', 'batch', [group('w', 2)], { priority: 100 }), [], 'u1', 0);
    e.submit(spec('prod', 'pytorch', [group('master', 1), group('worker', 3)], { priorityClass: 'production' }), [], 'u2', 0);
    e.takeEffects();
    expect(e.roles()).toEqual(['*', lane('*', 'production')]);
    expect(e.wantsOffers(lane('*', 'production'))).toBe(true);
    // Only half of what prod needs is offered, through its subscription: it holds it, then asks.
    e.offers([{ ...offer(1, 'cpus:2;mem:1024;ports:[31000-31009]'), lane: lane('*', 'production') }], 10);
    expect(e.takeEffects().launches).toEqual([]);
    e.tick(2_100);
    const x = e.takeEffects();
    expect(x.requests).toEqual([{ role: lane('*', 'production'), job: 'prod', members: Array(4).fill(Resources.parse('cpus:1;mem:128')) }]);
    expect(x.declines.length).toBe(1);
    // A higher class retries soon (the master may make room), not after a growing backoff.
    expect(e.get('prod')!.nextTryAtMs).toBe(2_100 + OPTS.backoffBaseMs);
    // The research job (higher numeric priority, lower class) gathers meanwhile and gets only its own lane's offers.
    e.offers([{ ...offer(1), lane: lane('*', 'production') }], 2_200);
    expect(e.takeEffects().launches).toEqual([]);
    e.offers([offer(1)], 2_300);
    expect(e.takeEffects().launches.flatMap((l) => l.tasks.map((t) => t.job))).toEqual(['research', 'research']);
  });

  it('requeues a preempted replica without counting a restart; a gang starts again whole', () => {
    const e = classed();
    e.setClusterTotals([Resources.parse('cpus:8;mem:4096;ports:[31000-31009]')]);
    e.submit(spec('gang', 'pytorch', [group('master', 1), group('worker', 1)], { backoffLimit: 0 }), [], 'u2', 0);
    e.submit(spec('solo', 'batch', [group('w', 2)], { minAvailable: 1, backoffLimit: 0 }), [], 'u1', 1);
    e.takeEffects();
    e.offers([offer(1, 'cpus:8;mem:4096;ports:[31000-31009]')], 10);
    e.takeEffects();
    e.offers([offer(2, 'cpus:8;mem:4096;ports:[31000-31009]')], 20);
    e.takeEffects();
    for (const job of ['solo', 'gang']) for (const r of e.get(job)!.replicas) if (r.taskId) e.taskUpdate({ taskId: r.taskId, state: 'TASK_RUNNING', message: '' }, 30);
    expect(e.get('solo')!.phase).toBe('Running');
    expect(e.get('gang')!.phase).toBe('Running');
    const preempt = (job: string, i: number) => {
      const rep = e.get(job)!.replicas[i]!;
      e.taskUpdate({ taskId: rep.taskId!, state: 'TASK_KILLED', exitCode: 143, reason: 'REASON_CONTAINER_PREEMPTED', message: 'preempted for job prod (class production, role *)' }, 40);
    };
    preempt('solo', 0);
    const solo = e.get('solo')!;
    // backoffLimit 0: a counted restart would have failed the job.
    expect(solo.phase).toBe('Running');
    expect(solo.restarts).toBe(0);
    expect(solo.replicas[0]!.state).toBe('Pending');
    expect(solo.replicas[0]!.message).toMatch(/preempted/);
    preempt('gang', 1);
    const x = e.takeEffects();
    const gang = e.get('gang')!;
    expect(gang.phase).toBe('Restarting');
    expect(gang.conditions.at(-1)!.reason).toBe('Preempted');
    expect(gang.restarts).toBe(0);
    // Its other replica is stopped, then the whole gang waits to be placed again.
    const master = gang.replicas[0]!.taskId!;
    expect(x.kills.map((k) => k.taskId)).toContain(master);
    e.taskUpdate({ taskId: master, state: 'TASK_KILLED', exitCode: 143, message: 'killed' }, 50);
    expect(e.get('gang')!.phase).toBe('Queued');
    expect(e.get('gang')!.restarts).toBe(0);
  });
});
