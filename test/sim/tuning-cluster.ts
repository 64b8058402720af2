// A discrete-event simulation of tuning jobs on a small Mesos-like cluster, driving the real
// pieces: the tuning core (master/frameworks/tuning/core.ts, the paper's App Core logic, with
// its search algorithms and the dynamic strategy) and the master's DRF allocator
// (master/allocator/allocator.ts). Each tuning job is a framework of its own in the allocator,
// as in the paper. The job's App Core is a task of that framework (1 cpu, 1 GB by default),
// placed on the first offer the framework gets and held for the job's life, so it takes room
// as in the paper; only then is the experiment submitted to the core.
//
// What the shell does (master/frameworks/tuning/runtime.ts) is done here the same way, on a
// simulated clock: a launch takes its offer's resources and gives back the unused rest with
// the runtime's filter (REFUSE_BUSY_S); a decline gives the offer back with the core's
// refuseSeconds as the filter; the framework is suppressed while it wants no offers and
// revived (which clears its filters) when it wants them again; the core ticks every 200 ms.
// The master's side: an allocation cycle every `allocationIntervalMs` and right after any
// resources come back (accept, decline, revive, a task's end), as leader-core.ts does. A trial
// runs for its duration, then its stdout lines go through trialOutput and its end through
// taskUpdate(TASK_FINISHED), and its resources go back to the allocator. No real timers, no
// Math.random: one seed gives one history.

import { Allocator, type Offer } from '../../master/allocator/allocator.ts';
import { REFUSE_BUSY_S, REFUSE_DYNAMIC_S, TuningCore, type TuningEffects } from '../../master/frameworks/tuning/core.ts';
import type { HeldOffer } from '../../shared/sdk/held-offer.ts';
import type { ExperimentSpec } from '../../shared/tuning/model.ts';
import type { Assignment } from '../../shared/tuning/space/types.ts';
import { Resources } from '../../shared/resources.ts';
import { SimClock } from './cluster-clock.ts';

export interface ClusterShape {
  readonly agents: number;
  readonly cpus: number;
  readonly memMb: number;
}

export interface SimTiming {
  /** The master's periodic allocation cycle. */
  readonly allocationIntervalMs: number;
  /** Offer → the framework's answer reaching the master (both ways on a LAN, plus the decision). */
  readonly frameworkRoundTripMs: number;
  /** A launched task's start on its agent (TASK_RUNNING). */
  readonly taskStartMs: number;
  /** A kill to the task's end. */
  readonly killMs: number;
  /** The tuning runtime's tick (TICK_MS in runtime.ts). */
  readonly tickMs: number;
}

export const DEFAULT_TIMING: SimTiming = { allocationIntervalMs: 100, frameworkRoundTripMs: 5, taskStartMs: 100, killMs: 50, tickMs: 200 };

export interface TrialOutcome {
  /** From TASK_RUNNING to TASK_FINISHED. */
  readonly durationMs: number;
  readonly lines: readonly string[];
}

export interface SimJob {
  readonly spec: ExperimentSpec;
  readonly submitAtMs: number;
  /** What the trial of `index` with `params` does (deterministic in its arguments). */
  readonly trial: (params: Assignment, index: number) => TrialOutcome;
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

interface Fw {
  readonly index: number;
  readonly name: string;
  readonly id: string;
  readonly job: SimJob;
  submitted: boolean;
  removed: boolean;
  suppressed: boolean;
  appCore?: { agentId: string; resources: Resources; atMs: number };
  readonly outstanding: Map<string, { agentId: string; resources: Resources }>;
  dynamicDeclines: number;
  trialMs: number;
  levelSum: number;
  levelSamples: number;
  holding: number;
  maxHolding: number;
  levelAtEnd?: number;
  endMs?: number;
  goalMs?: number;
}

interface Task {
  readonly id: string;
  readonly fw: Fw;
  readonly agentId: string;
  readonly resources: Resources;
  readonly outcome: TrialOutcome;
  state: 'starting' | 'running' | 'ended';
  startedMs?: number;
  killing: boolean;
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

export function simulate(opts: SimOptions): SimResult {
  const timing = opts.timing ?? DEFAULT_TIMING;
  const appCoreRes = Resources.of({ cpus: opts.appCore?.cpus ?? 1, mem: opts.appCore?.memMb ?? 1024 });
  const limitMs = opts.limitMs ?? 6 * 3600_000;
  const clock = new SimClock();
  const trace = opts.trace ? (line: string): void => opts.trace!(clock.nowMs, line) : undefined;
  const allocator = new Allocator();
  const core = new TuningCore();
  const totalCpus = opts.cluster.agents * opts.cluster.cpus;
  for (let i = 0; i < opts.cluster.agents; i++) {
    allocator.addAgent(`agent-${i}`, Resources.of({ cpus: opts.cluster.cpus, mem: opts.cluster.memMb }));
  }

  const fws: Fw[] = [];
  const byName = new Map<string, Fw>();
  const byId = new Map<string, Fw>();
  const tasks = new Map<string, Task>();
  let offerSeq = 0;
  let offersMade = 0;
  let declines = 0;
  let allocationRequested = false;
  let trialCpusHeld = 0;
  let trialCpuMs = 0;
  let lastCpuMark = 0;
  let busySinceMs: number | undefined;
  let busyMs = 0;

  const markCpus = (): void => {
    trialCpuMs += trialCpusHeld * (clock.nowMs - lastCpuMark);
    lastCpuMark = clock.nowMs;
  };
  const allDone = (): boolean => fws.length === opts.jobs.length && fws.every((f) => f.removed);

  const requestAllocation = (): void => {
    if (allocationRequested) return;
    allocationRequested = true;
    clock.after(0, () => {
      allocationRequested = false;
      allocate();
    });
  };

  const allocate = (): void => {
    const made: Offer[] = allocator.allocate(clock.nowMs);
    const perFw = new Map<Fw, HeldOffer[]>();
    for (const m of made) {
      const fw = byId.get(m.frameworkId)!;
      const id = `offer-${++offerSeq}`;
      offersMade++;
      fw.outstanding.set(id, { agentId: m.agentId, resources: m.resources });
      trace?.(`offer ${id} ${m.agentId} ${m.resources.toString()} -> ${fw.name} (level ${core.priorityLevel(fw.name) ?? '-'})`);
      const list = perFw.get(fw) ?? [];
      list.push({ id, agentId: m.agentId, hostname: m.agentId, ip: m.agentId, resources: m.resources, role: '*' });
      perFw.set(fw, list);
    }
    for (const [fw, list] of perFw) clock.after(timing.frameworkRoundTripMs, () => onOffers(fw, list));
  };

  const onOffers = (fw: Fw, list: HeldOffer[]): void => {
    const held = list.filter((o) => fw.outstanding.has(o.id));
    if (held.length === 0 || fw.removed) return;
    const now = clock.nowMs;
    if (!fw.appCore) {
      // The Client's launch of the App Core: the first offer with room for it.
      const i = held.findIndex((o) => o.resources.contains(appCoreRes));
      if (i === -1) {
        for (const o of held) giveBack(fw, o.id, REFUSE_BUSY_S);
        requestAllocation();
        return;
      }
      const o = held[i];
      fw.appCore = { agentId: o.agentId, resources: appCoreRes, atMs: now };
      const left = o.resources.subtract(appCoreRes);
      fw.outstanding.set(o.id, { agentId: o.agentId, resources: left });
      held[i] = { ...o, resources: left };
      const r = core.submit(fw.job.spec, [], `u${fw.index}`, now, 'bench');
      if (r === 'exists') throw new Error(`experiment ${fw.name} submitted twice`);
      fw.submitted = true;
    }
    if (opts.gate?.(fw.name, (name) => core.wantsOffers(name))) {
      for (const o of held) giveBack(fw, o.id, REFUSE_DYNAMIC_S);
      requestAllocation();
      return;
    }
    core.offers(fw.name, held, now);
    flush();
  };

  const giveBack = (fw: Fw, offerId: string, refuseSeconds: number): void => {
    const o = fw.outstanding.get(offerId);
    if (!o) return;
    fw.outstanding.delete(offerId);
    if (!o.resources.isEmpty()) allocator.recoverResources(fw.id, o.agentId, o.resources, refuseSeconds * 1000, clock.nowMs);
  };

  const endTask = (t: Task, state: 'TASK_FINISHED' | 'TASK_KILLED'): void => {
    if (t.state === 'ended') return;
    const wasRunning = t.state === 'running';
    t.state = 'ended';
    markCpus();
    trialCpusHeld -= t.resources.cpus;
    t.fw.holding--;
    if (wasRunning && t.startedMs !== undefined) t.fw.trialMs += clock.nowMs - t.startedMs;
    allocator.recoverResources(t.fw.id, t.agentId, t.resources, 0, clock.nowMs);
    const now = clock.nowMs;
    trace?.(`${state} ${t.id} on ${t.agentId}`);
    if (state === 'TASK_FINISHED') {
      // The runtime reads the trial's stdout to its end before its end is judged.
      const text = t.outcome.lines.join('\n') + '\n';
      core.trialOutput(t.fw.name, t.id, t.outcome.lines, text.length, now);
      core.taskUpdate(t.fw.name, { taskId: t.id, state, message: '', exitCode: 0 }, now);
    } else {
      core.taskUpdate(t.fw.name, { taskId: t.id, state, message: 'killed' }, now);
    }
    flush();
    requestAllocation();
  };

  const flush = (): void => {
    const e: TuningEffects = core.takeEffects();
    const now = clock.nowMs;
    for (const name of e.teardowns) {
      const fw = byName.get(name);
      if (!fw || fw.removed) continue;
      for (const id of [...fw.outstanding.keys()]) giveBack(fw, id, 0);
      for (const t of tasks.values()) if (t.fw === fw && t.state !== 'ended') endTask(t, 'TASK_KILLED');
      if (fw.appCore) allocator.recoverResources(fw.id, fw.appCore.agentId, fw.appCore.resources, 0, now);
      fw.levelAtEnd = core.priorityLevel(name);
      fw.endMs = now;
      const rec = core.experiment(name)?.record;
      const goal = rec?.conditions.find((c) => c.reason === 'GoalReached');
      if (goal) fw.goalMs = goal.atMs;
      allocator.removeFramework(fw.id);
      fw.removed = true;
      requestAllocation();
    }
    for (const k of e.kills) {
      // Only plain trials here (no distributed trials, whose kills name a job).
      const t = k.taskId === undefined ? undefined : tasks.get(k.taskId);
      if (!t || t.state === 'ended' || t.killing) continue;
      t.killing = true;
      clock.after(timing.killMs, () => endTask(t, 'TASK_KILLED'));
    }
    for (const l of e.launches) {
      const fw = byName.get(l.experiment)!;
      let offered = Resources.EMPTY;
      for (const id of l.offerIds) {
        const o = fw.outstanding.get(id);
        if (!o) throw new Error(`launch on an offer ${id} that ${fw.name} does not hold`);
        offered = offered.add(o.resources);
        fw.outstanding.delete(id);
      }
      let used = Resources.EMPTY;
      for (const tr of l.trials) {
        const res = Resources.fromMesos(tr.resources);
        used = used.add(res);
        const outcome = fw.job.trial(tr.params, tr.index);
        const task: Task = { id: tr.taskId, fw, agentId: l.agentId, resources: res, outcome, state: 'starting', killing: false };
        tasks.set(task.id, task);
        markCpus();
        trialCpusHeld += res.cpus;
        fw.maxHolding = Math.max(fw.maxHolding, ++fw.holding);
        clock.after(timing.taskStartMs, () => {
          if (task.state !== 'starting') return;
          task.state = 'running';
          task.startedMs = clock.nowMs;
          core.taskUpdate(fw.name, { taskId: task.id, state: 'TASK_RUNNING', message: '', agentId: task.agentId }, clock.nowMs);
          flush();
          clock.after(outcome.durationMs, () => endTask(task, 'TASK_FINISHED'));
        });
      }
      const rest = offered.subtract(used);
      trace?.(`launch ${fw.name} ${l.trials.length} trial(s) on ${l.agentId}, ${rest.toString() || 'nothing'} back`);
      // ACCEPT with the runtime's filter on what the launch left of the offer.
      if (!rest.isEmpty()) allocator.recoverResources(fw.id, l.agentId, rest, REFUSE_BUSY_S * 1000, now);
      requestAllocation();
    }
    for (const d of e.declines) {
      const fw = byName.get(d.experiment);
      if (!fw) continue;
      for (const id of d.offerIds) {
        if (!fw.outstanding.has(id)) continue;
        declines++;
        trace?.(`decline ${fw.name} ${id} for ${d.refuseSeconds} s`);
        if (d.refuseSeconds === REFUSE_DYNAMIC_S && fw.job.spec.scheduling === 'dynamic') fw.dynamicDeclines++;
        giveBack(fw, id, d.refuseSeconds);
      }
      requestAllocation();
    }
    // adjustOffers: suppressed while the experiment wants nothing, revived (filters cleared) when it does.
    for (const fw of fws) {
      if (!fw.submitted || fw.removed || !core.needsFramework(fw.name)) continue;
      const want = core.wantsOffers(fw.name);
      if (want && fw.suppressed) {
        fw.suppressed = false;
        trace?.(`revive ${fw.name}`);
        allocator.revive(fw.id);
        requestAllocation();
      } else if (!want && !fw.suppressed) {
        fw.suppressed = true;
        trace?.(`suppress ${fw.name}`);
        allocator.suppress(fw.id);
      }
    }
  };

  // Jobs arrive; the master allocates periodically; the runtime ticks.
  opts.jobs.forEach((job, index) => {
    clock.at(job.submitAtMs, () => {
      const fw: Fw = {
        index, name: job.spec.name, id: `tuning:${job.spec.name}`, job, submitted: false, removed: false, suppressed: false,
        outstanding: new Map(), dynamicDeclines: 0, trialMs: 0, levelSum: 0, levelSamples: 0, holding: 0, maxHolding: 0,
      };
      fws.push(fw);
      byName.set(fw.name, fw);
      byId.set(fw.id, fw);
      allocator.addFramework(fw.id, job.spec.role);
      busySinceMs ??= clock.nowMs;
      requestAllocation();
    });
  });
  const periodic = (): void => {
    if (allDone()) return;
    allocate();
    clock.after(timing.allocationIntervalMs, periodic);
  };
  clock.at(timing.allocationIntervalMs, periodic);
  const tick = (): void => {
    if (allDone()) return;
    core.tick(clock.nowMs);
    flush();
    for (const fw of fws) {
      const level = fw.submitted && !fw.removed ? core.priorityLevel(fw.name) : undefined;
      if (level === undefined) continue;
      fw.levelSum += level;
      fw.levelSamples++;
    }
    clock.after(timing.tickMs, tick);
  };
  clock.at(timing.tickMs, tick);

  let timedOut = false;
  while (!allDone()) {
    if (!clock.runNext(limitMs)) {
      timedOut = true;
      break;
    }
  }
  markCpus();
  const first = Math.min(...opts.jobs.map((j) => j.submitAtMs));
  const results: JobResult[] = fws.map((fw) => {
    const x = core.experiment(fw.name);
    const rec = x?.record;
    let best: number | undefined;
    for (const t of x?.trials ?? []) {
      const v = t.state === 'Succeeded' ? t.metrics[fw.job.spec.objective.metricName] : undefined;
      if (v !== undefined && (best === undefined || v > best)) best = v;
    }
    return {
      name: fw.name,
      submitMs: fw.job.submitAtMs,
      appCoreMs: fw.appCore?.atMs,
      goalMs: fw.goalMs,
      endMs: fw.endMs,
      phase: rec?.phase ?? 'NotSubmitted',
      reason: rec?.reason ?? '',
      trials: x?.trials.filter((t) => t.state !== 'Pending' && t.attempt > 0).length ?? 0,
      best,
      dynamicDeclines: fw.dynamicDeclines,
      levelAtEnd: fw.levelAtEnd,
      meanLevel: fw.levelSamples > 0 ? fw.levelSum / fw.levelSamples : undefined,
      trialSeconds: fw.trialMs / 1000,
      maxConcurrentTrials: fw.maxHolding,
    };
  });
  const lastEnd = Math.max(...results.map((r) => r.goalMs ?? r.endMs ?? clock.nowMs));
  busyMs = clock.nowMs - (busySinceMs ?? 0);
  return {
    jobs: results,
    makespanMs: lastEnd - first,
    offers: offersMade,
    declines,
    trialCpuUtilisation: busyMs > 0 ? trialCpuMs / (busyMs * totalCpus) : 0,
    timedOut,
  };
}
