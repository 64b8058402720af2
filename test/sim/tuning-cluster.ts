// A discrete-event simulation of tuning jobs on a small Mesos-like cluster, driving the real
// pieces: the production tuning framework (master/frameworks/tuning/runtime.ts, TuningRuntime,
// the shell that runs on the leader, with its core master/frameworks/tuning/core.ts: the
// paper's App Core logic, its search algorithms and the dynamic strategy) and the master's DRF
// allocator (master/allocator/allocator.ts). Each tuning job is a framework of its own in the
// allocator, as in the paper; its App Core (1 cpu, 1 GB by default) is carved out of the first
// offer its framework gets and held for the job's life, so it takes room as in the paper.
//
// The runtime runs as on a leader — its 200 ms ticks, its 1 s reads of running trials' stdout,
// records written before launches, launches that give back the unused rest with REFUSE_BUSY_S,
// declines with the core's refuseSeconds, suppress and revive — over the simulator's
// scheduler transport (tuning-transport.ts), clock (sim-runtime-clock.ts) and store
// (sim-store.ts), with seeded uids and its trials' stdout read from the simulated master
// (tuning-master.ts: allocation cycles, offers, trials that run for their duration, print
// their lines and end). No real timers, no Math.random: one seed gives one history. The
// runtime works on promises: after each event of the simulated clock the promise jobs it
// started run before the next event.

import { TUNING_FRAMEWORK_NAME, TuningRuntime } from '../../master/frameworks/tuning/runtime.ts';
import type { ExperimentSpec } from '../../shared/tuning/model.ts';
import { Resources } from '../../shared/resources.ts';
import { SimClock } from './cluster-clock.ts';
import { forbidNondeterminism } from './determinism.ts';
import { simEnv } from './sim-env.ts';
import { SimRuntimeClock } from './sim-runtime-clock.ts';
import { SimStore } from './sim-store.ts';
import { DEFAULT_TIMING, TuningSimMaster, type SimTiming, type TrialProgram } from './tuning-master.ts';
import { TuningSimTransport } from './tuning-transport.ts';

export { DEFAULT_TIMING, type SimTiming, type TrialOutcome } from './tuning-master.ts';

export interface ClusterShape {
  readonly agents: number;
  readonly cpus: number;
  readonly memMb: number;
}

export interface SimJob {
  readonly spec: ExperimentSpec;
  readonly submitAtMs: number;
  /** What the trial of `index` with `params` does (deterministic in its arguments). */
  readonly trial: TrialProgram;
}

export interface JobResult {
  readonly name: string;
  readonly submitMs: number;
  /** When its App Core got its place. */
  readonly appCoreMs: number | undefined;
  /** When a trial reached the goal (the experiment's GoalReached), or undefined. */
  readonly goalMs: number | undefined;
  /** When the job's framework was torn down (its last trial ended). */
  readonly endMs: number | undefined;
  readonly phase: string;
  readonly reason: string;
  readonly trials: number;
  readonly best: number | undefined;
  /** Offers this job's core declined because of the dynamic strategy. */
  readonly dynamicDeclines: number;
  /** Its dynamic level when it ended, and its mean over its life (sampled every tick). */
  readonly levelAtEnd: number | undefined;
  readonly meanLevel: number | undefined;
  /** Trial-seconds it ran (its share of the cluster over time). */
  readonly trialSeconds: number;
  /** The most trials it held at once (launched and not yet ended). */
  readonly maxConcurrentTrials: number;
}

export interface SimResult {
  readonly jobs: JobResult[];
  /** From the first submission to the last job's goal (or end). */
  readonly makespanMs: number;
  readonly offers: number;
  readonly declines: number;
  /** Mean cpus held by trials while any job ran, over the cluster's cpus. */
  readonly trialCpuUtilisation: number;
  readonly timedOut: boolean;
}

export interface SimOptions {
  readonly cluster: ClusterShape;
  readonly jobs: readonly SimJob[];
  readonly appCore?: { cpus: number; memMb: number };
  readonly timing?: SimTiming;
  /** Simulated time after which the run is abandoned. */
  readonly limitMs?: number;
  /**
   * A scheduler outside the jobs, for measuring what the strategies could reach: given an
   * offer's framework and whether a job wants offers, true gives the offer back (a 1 s
   * filter) before the job's core sees it. The oracle of the paper bench uses it.
   */
  readonly gate?: (framework: string, wantsOffers: (framework: string) => boolean) => boolean;
  /** Told every offer, launch, decline, task end and (un)suppression, for debugging. */
  readonly trace?: (atMs: number, line: string) => void;
}

/** Promise turns run after each clock event: deeper than any chain of the runtime's between two events. */
const PROMISE_TURNS = 64;
/** Levels are sampled as often as the runtime ticks. */
const LEVEL_SAMPLE_MS = 200;

export async function simulate(opts: SimOptions): Promise<SimResult> {
  const timing = opts.timing ?? DEFAULT_TIMING;
  const limitMs = opts.limitMs ?? 6 * 3600_000;
  const clock = new SimClock();
  const trace = opts.trace ? (line: string): void => opts.trace!(clock.nowMs, line) : undefined;
  const jobs = new Map(opts.jobs.map((j) => [j.spec.name, j]));
  const ended = new Map<string, { levelAtEnd: number | undefined }>();
  const levels = new Map<string, { sum: number; samples: number }>();
  let runtime: TuningRuntime | undefined;
  const master = new TuningSimMaster(clock, {
    cluster: opts.cluster,
    appCore: Resources.of({ cpus: opts.appCore?.cpus ?? 1, mem: opts.appCore?.memMb ?? 1024 }),
    timing,
    job: (name) => {
      const j = jobs.get(name);
      if (!j) throw new Error(`a framework for ${name}, which no job names`);
      return { trial: j.trial, dynamic: j.spec.scheduling === 'dynamic' };
    },
    wantsOffers: (name) => runtime?.core.wantsOffers(name) ?? false,
    ...(opts.gate ? { gate: opts.gate } : {}),
    tornDown: (name) => ended.set(name, { levelAtEnd: runtime?.core.priorityLevel(name) }),
    ...(trace ? { trace } : {}),
  });
  // The runtime as a leader runs it: its records in a replicated store, its clock and transport the simulator's.
  const store = new SimStore(clock, () => timing.recordCommitMs, () => {});
  let uids = 0;
  runtime = new TuningRuntime(simEnv(TUNING_FRAMEWORK_NAME, store.view(TUNING_FRAMEWORK_NAME), () => undefined, () => clock.nowMs), {
    clock: new SimRuntimeClock(clock, () => clock.nowMs),
    transport: (info) => new TuningSimTransport(clock, master, info, timing.frameworkRoundTripMs / 2),
    uid: () => `u${++uids}`,
    readStdout: (taskId, _agentId, offset, final) => Promise.resolve(master.readStdout(taskId, offset, final)),
  });
  const rt = runtime;

  let failure: Error | undefined;
  for (const job of opts.jobs) {
    clock.at(job.submitAtMs, () => {
      rt.submit(job.spec, [], 'bench').then((r) => {
        if (r === 'exists') failure ??= new Error(`experiment ${job.spec.name} submitted twice`);
      }, (err: Error) => (failure ??= err));
    });
  }
  const sampleLevels = (): void => {
    for (const fw of master.frameworks) {
      const level = fw.removed ? undefined : rt.core.priorityLevel(fw.name);
      if (level === undefined) continue;
      const l = levels.get(fw.name) ?? { sum: 0, samples: 0 };
      l.sum += level;
      l.samples++;
      levels.set(fw.name, l);
    }
    clock.after(LEVEL_SAMPLE_MS, sampleLevels);
  };
  clock.after(LEVEL_SAMPLE_MS, sampleLevels);

  const allDone = (): boolean => ended.size === opts.jobs.length;
  let timedOut = false;
  // Only promise jobs run between the events (no host timer or I/O), so the host's clock,
  // chance and timers can be off limits for the whole run.
  const restore = forbidNondeterminism();
  try {
    while (!allDone()) {
      if (!clock.runNext(limitMs)) {
        timedOut = true;
        break;
      }
      for (let i = 0; i < PROMISE_TURNS; i++) await Promise.resolve();
      if (failure) throw failure;
    }
  } finally {
    rt.stop();
    restore();
  }

  const first = Math.min(...opts.jobs.map((j) => j.submitAtMs));
  const results: JobResult[] = opts.jobs.map((job) => {
    const name = job.spec.name;
    const fw = master.frameworks.find((f) => f.name === name);
    const x = rt.core.experiment(name);
    const rec = x?.record;
    let best: number | undefined;
    for (const t of x?.trials ?? []) {
      const v = t.state === 'Succeeded' ? t.metrics[job.spec.objective.metricName] : undefined;
      if (v !== undefined && (best === undefined || v > best)) best = v;
    }
    const level = levels.get(name);
    return {
      name,
      submitMs: job.submitAtMs,
      appCoreMs: fw?.appCore?.atMs,
      goalMs: rec?.conditions.find((c) => c.reason === 'GoalReached')?.atMs,
      endMs: fw?.endMs,
      phase: rec?.phase ?? 'NotSubmitted',
      reason: rec?.reason ?? '',
      trials: x?.trials.filter((t) => t.state !== 'Pending' && t.attempt > 0).length ?? 0,
      best,
      dynamicDeclines: fw?.dynamicDeclines ?? 0,
      levelAtEnd: ended.get(name)?.levelAtEnd,
      meanLevel: level ? level.sum / level.samples : undefined,
      trialSeconds: (fw?.trialMs ?? 0) / 1000,
      maxConcurrentTrials: fw?.maxHolding ?? 0,
    };
  });
  const lastEnd = Math.max(...results.map((r) => r.goalMs ?? r.endMs ?? clock.nowMs));
  const busyMs = clock.nowMs - first;
  return {
    jobs: results,
    makespanMs: lastEnd - first,
    offers: master.offers,
    declines: master.declines,
    trialCpuUtilisation: busyMs > 0 ? master.trialCpuMsSoFar() / (busyMs * opts.cluster.agents * opts.cluster.cpus) : 0,
    timedOut,
  };
}
