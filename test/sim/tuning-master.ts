// The tuning simulation's master: the real DRF allocator (master/allocator/allocator.ts)
// behind the scheduler API that the production tuning runtime speaks (tuning-transport.ts),
// on the simulated clock. It allocates every `allocationIntervalMs` and right after any
// resources come back (accept, decline, revive, a task's end), as leader-core.ts does; it
// answers SUBSCRIBE, ACCEPT, DECLINE, REVIVE, SUPPRESS, KILL, RECONCILE, ACKNOWLEDGE and
// TEARDOWN, and sends SUBSCRIBED, OFFERS and UPDATE. Each job's App Core (the paper's; Cairn
// has none, its runtime runs on the leader) is carved out of the first offer with room for it
// that its framework gets, before the runtime sees that offer, and held until the framework
// is torn down. A trial runs for its duration, then prints its lines on stdout and ends
// (TASK_FINISHED); a killed one prints nothing.

import { Allocator, type Offer } from '../../master/allocator/allocator.ts';
import { REFUSE_BUSY_S, REFUSE_DYNAMIC_S } from '../../master/frameworks/tuning/core.ts';
import { EXPERIMENT_FRAMEWORK_PREFIX } from '../../master/frameworks/tuning/runtime.ts';
import { stdoutLines, type StdoutRead } from '../../master/frameworks/tuning/trial-logs.ts';
import type { FrameworkSpec, SchedulerCallParsed, TaskSpec } from '../../master/scheduler-calls.ts';
import type { TaskState } from '../../shared/agent-messages.ts';
import type { OfferJson, TaskStatusJson } from '../../shared/mesos-v1.ts';
import { Resources } from '../../shared/resources.ts';
import type { Assignment } from '../../shared/tuning/space/types.ts';
import type { SimClock } from './cluster-clock.ts';
import type { TuningSimTransport } from './tuning-transport.ts';

export interface SimTiming {
  /** The master's periodic allocation cycle. */
  readonly allocationIntervalMs: number;
  /** Offer → the framework's answer reaching the master (both ways on a LAN, plus the decision); each way is half. */
  readonly frameworkRoundTripMs: number;
  /** A launched task's start on its agent (TASK_RUNNING). */
  readonly taskStartMs: number;
  /** A kill to the task's end. */
  readonly killMs: number;
  /** A record's write to its being durable (a Raft commit on the masters). */
  readonly recordCommitMs: number;
}

export const DEFAULT_TIMING: SimTiming = { allocationIntervalMs: 100, frameworkRoundTripMs: 5, taskStartMs: 100, killMs: 50, recordCommitMs: 1 };

export interface TrialOutcome {
  /** From TASK_RUNNING to TASK_FINISHED. */
  readonly durationMs: number;
  readonly lines: readonly string[];
}

/** What a job's trial of `index` with `params` does (deterministic in its arguments). */
export type TrialProgram = (params: Assignment, index: number) => TrialOutcome;

export interface MasterOptions {
  readonly cluster: { readonly agents: number; readonly cpus: number; readonly memMb: number };
  readonly appCore: Resources;
  readonly timing: SimTiming;
  /** The trial program of an experiment, and whether it schedules dynamically (its declines are counted). */
  readonly job: (experiment: string) => { trial: TrialProgram; dynamic: boolean };
  /** Whether an experiment wants offers now (the runtime's core), for the gate. */
  readonly wantsOffers: (experiment: string) => boolean;
  /** tuning-cluster.ts' SimOptions.gate. */
  readonly gate?: (framework: string, wantsOffers: (framework: string) => boolean) => boolean;
  /** Told when a framework is torn down. */
  readonly tornDown: (experiment: string) => void;
  readonly trace?: (line: string) => void;
}

/** One experiment's framework, as the master has it. */
export interface SimFramework {
  readonly name: string;
  readonly id: string;
  readonly dynamic: boolean;
  readonly trial: TrialProgram;
  stream: TuningSimTransport;
  removed: boolean;
  suppressed: boolean;
  appCore?: { agentId: string; resources: Resources; atMs: number };
  readonly outstanding: Map<string, { agentId: string; resources: Resources }>;
  dynamicDeclines: number;
  trialMs: number;
  holding: number;
  maxHolding: number;
  endMs?: number;
}

interface Task {
  readonly id: string;
  readonly fw: SimFramework;
  readonly agentId: string;
  readonly resources: Resources;
  readonly outcome: TrialOutcome;
  state: TaskState;
  startedMs?: number;
  killing: boolean;
  /** What it printed on stdout. */
  stdout: string;
}

const DEFAULT_REFUSE_MS = 5_000;

export class TuningSimMaster {
  readonly frameworks: SimFramework[] = [];
  offers = 0;
  declines = 0;
  private readonly allocator = new Allocator();
  private readonly byId = new Map<string, SimFramework>();
  private readonly tasks = new Map<string, Task>();
  private offerSeq = 0;
  private updateSeq = 0;
  private allocationRequested = false;
  private trialCpusHeld = 0;
  private trialCpuMs = 0;
  private lastCpuMark = 0;

  constructor(
    private readonly clock: SimClock,
    private readonly o: MasterOptions,
  ) {
    for (let i = 0; i < o.cluster.agents; i++) this.allocator.addAgent(`agent-${i}`, Resources.of({ cpus: o.cluster.cpus, mem: o.cluster.memMb }));
    const periodic = (): void => {
      this.allocate();
      clock.after(o.timing.allocationIntervalMs, periodic);
    };
    clock.after(o.timing.allocationIntervalMs, periodic);
  }

  /** Cpu-milliseconds held by trials so far. */
  trialCpuMsSoFar(): number {
    this.markCpus();
    return this.trialCpuMs;
  }

  subscribe(spec: FrameworkSpec, stream: TuningSimTransport): void {
    const id = spec.id ?? spec.name;
    let fw = this.byId.get(id);
    if (fw) {
      fw.stream = stream;
    } else {
      const name = spec.name.slice(EXPERIMENT_FRAMEWORK_PREFIX.length);
      const job = this.o.job(name);
      fw = {
        name, id, dynamic: job.dynamic, trial: job.trial, stream, removed: false, suppressed: false,
        outstanding: new Map(), dynamicDeclines: 0, trialMs: 0, holding: 0, maxHolding: 0,
      };
      this.frameworks.push(fw);
      this.byId.set(id, fw);
      this.allocator.addFramework(id, spec.role);
    }
    stream.deliver({ type: 'SUBSCRIBED', subscribed: { framework_id: { value: id }, heartbeat_interval_seconds: 15 } });
    this.requestAllocation();
  }

  handle(call: SchedulerCallParsed): void {
    if (call.type === 'SUBSCRIBE') return;
    const fw = this.byId.get(call.frameworkId);
    if (!fw || fw.removed) return;
    switch (call.type) {
      case 'ACCEPT':
        return this.accept(fw, call.offerIds, call.tasks, call.refuseMs ?? DEFAULT_REFUSE_MS);
      case 'DECLINE':
        return this.decline(fw, call.offerIds, call.refuseMs ?? DEFAULT_REFUSE_MS);
      case 'REVIVE':
        if (fw.suppressed) this.o.trace?.(`revive ${fw.name}`);
        fw.suppressed = false;
        this.allocator.revive(fw.id);
        return this.requestAllocation();
      case 'SUPPRESS':
        if (!fw.suppressed) this.o.trace?.(`suppress ${fw.name}`);
        fw.suppressed = true;
        return this.allocator.suppress(fw.id);
      case 'KILL': {
        const t = this.tasks.get(call.taskId);
        if (!t || t.fw !== fw || isEnded(t) || t.killing) return;
        t.killing = true;
        this.clock.after(this.o.timing.killMs, () => this.endTask(t, 'TASK_KILLED'));
        return;
      }
      case 'RECONCILE':
        return this.reconcile(fw, call.taskIds);
      case 'TEARDOWN':
        return this.teardown(fw);
      default:
        // ACKNOWLEDGE: every update is sent once here, nothing waits for it; REQUEST: no preemption here.
        return;
    }
  }

  /** A trial's stdout from byte `offset`, as its agent would serve it (trial-logs.ts reads it so). */
  readStdout(taskId: string, offset: number, final: boolean): StdoutRead | undefined {
    const t = this.tasks.get(taskId);
    if (!t) return undefined;
    const bytes = Buffer.from(t.stdout);
    return stdoutLines(bytes.subarray(offset).toString(), offset, bytes.length, final, isEnded(t));
  }

  private markCpus(): void {
    this.trialCpuMs += this.trialCpusHeld * (this.clock.nowMs - this.lastCpuMark);
    this.lastCpuMark = this.clock.nowMs;
  }

  private requestAllocation(): void {
    if (this.allocationRequested) return;
    this.allocationRequested = true;
    this.clock.after(0, () => {
      this.allocationRequested = false;
      this.allocate();
    });
  }

  private allocate(): void {
    const made: Offer[] = this.allocator.allocate(this.clock.nowMs);
    const perFw = new Map<SimFramework, OfferJson[]>();
    for (const m of made) {
      const fw = this.byId.get(m.frameworkId)!;
      const id = `offer-${++this.offerSeq}`;
      this.offers++;
      fw.outstanding.set(id, { agentId: m.agentId, resources: m.resources });
      this.o.trace?.(`offer ${id} ${m.agentId} ${m.resources.toString()} -> ${fw.name}`);
      perFw.set(fw, [...(perFw.get(fw) ?? []), offerJson(id, fw.id, m.agentId, m.resources)]);
    }
    for (const [fw, list] of perFw) {
      const sent = this.placeAppCore(fw, list);
      if (sent.length === 0) continue;
      if (this.o.gate?.(fw.name, this.o.wantsOffers)) {
        for (const o of sent) this.giveBack(fw, o.id.value, REFUSE_DYNAMIC_S * 1000);
        this.requestAllocation();
        continue;
      }
      fw.stream.deliver({ type: 'OFFERS', offers: { offers: sent } });
    }
  }

  /**
   * The Client's launch of the App Core: out of the first offer with room for it, before the
   * framework sees any; without one, every offer goes back (as a busy framework's would).
   * The offers left to send.
   */
  private placeAppCore(fw: SimFramework, list: OfferJson[]): OfferJson[] {
    if (fw.appCore) return list;
    const appCore = this.o.appCore;
    const i = list.findIndex((o) => fw.outstanding.get(o.id.value)!.resources.contains(appCore));
    if (i === -1) {
      for (const o of list) this.giveBack(fw, o.id.value, REFUSE_BUSY_S * 1000);
      this.requestAllocation();
      return [];
    }
    const o = fw.outstanding.get(list[i].id.value)!;
    fw.appCore = { agentId: o.agentId, resources: appCore, atMs: this.clock.nowMs };
    const left = o.resources.subtract(appCore);
    fw.outstanding.set(list[i].id.value, { agentId: o.agentId, resources: left });
    const out = [...list];
    if (left.isEmpty()) {
      fw.outstanding.delete(list[i].id.value);
      out.splice(i, 1);
    } else {
      out[i] = offerJson(list[i].id.value, fw.id, o.agentId, left);
    }
    return out;
  }

  private giveBack(fw: SimFramework, offerId: string, refuseMs: number): void {
    const o = fw.outstanding.get(offerId);
    if (!o) return;
    fw.outstanding.delete(offerId);
    if (!o.resources.isEmpty()) this.allocator.recoverResources(fw.id, o.agentId, o.resources, refuseMs, this.clock.nowMs);
  }

  private decline(fw: SimFramework, offerIds: string[], refuseMs: number): void {
    for (const id of offerIds) {
      if (!fw.outstanding.has(id)) continue;
      this.declines++;
      this.o.trace?.(`decline ${fw.name} ${id} for ${refuseMs / 1000} s`);
      if (refuseMs === REFUSE_DYNAMIC_S * 1000 && fw.dynamic) fw.dynamicDeclines++;
      this.giveBack(fw, id, refuseMs);
    }
    this.requestAllocation();
  }

  private accept(fw: SimFramework, offerIds: string[], specs: TaskSpec[], refuseMs: number): void {
    let offered = Resources.EMPTY;
    let agentId: string | undefined;
    for (const id of offerIds) {
      const o = fw.outstanding.get(id);
      if (!o) throw new Error(`${fw.name} launches on an offer ${id} it does not hold`);
      offered = offered.add(o.resources);
      agentId = o.agentId;
      fw.outstanding.delete(id);
    }
    let used = Resources.EMPTY;
    for (const spec of specs) {
      if (spec.agentId !== agentId) throw new Error(`${fw.name} launches ${spec.taskId} on ${spec.agentId}, not on its offers' agent ${agentId}`);
      used = used.add(spec.resources);
      this.launch(fw, spec);
    }
    if (!offered.contains(used)) throw new Error(`${fw.name} launches ${used.toString()} on offers of ${offered.toString()}`);
    const rest = offered.subtract(used);
    this.o.trace?.(`launch ${fw.name} ${specs.length} trial(s) on ${agentId}, ${rest.toString() || 'nothing'} back`);
    if (agentId !== undefined && !rest.isEmpty()) this.allocator.recoverResources(fw.id, agentId, rest, refuseMs, this.clock.nowMs);
    this.requestAllocation();
  }

  private launch(fw: SimFramework, spec: TaskSpec): void {
    const { params, index } = trialOf(spec);
    const outcome = fw.trial(params, index);
    const task: Task = { id: spec.taskId, fw, agentId: spec.agentId, resources: spec.resources, outcome, state: 'TASK_STAGING', killing: false, stdout: '' };
    this.tasks.set(task.id, task);
    this.markCpus();
    this.trialCpusHeld += task.resources.cpus;
    fw.maxHolding = Math.max(fw.maxHolding, ++fw.holding);
    this.clock.after(this.o.timing.taskStartMs, () => {
      if (task.state !== 'TASK_STAGING' || fw.removed) return;
      task.state = 'TASK_RUNNING';
      task.startedMs = this.clock.nowMs;
      this.update(task, '');
      this.clock.after(outcome.durationMs, () => {
        if (isEnded(task)) return;
        task.stdout = outcome.lines.map((l) => `${l}\n`).join('');
        this.endTask(task, 'TASK_FINISHED');
      });
    });
  }

  private update(t: Task, message: string): void {
    const uuid = Buffer.alloc(16);
    uuid.writeUInt32BE(++this.updateSeq, 12);
    t.fw.stream.deliver({ type: 'UPDATE', update: { status: status(t, message, uuid.toString('base64'), this.clock.nowMs) } });
  }

  private endTask(t: Task, state: 'TASK_FINISHED' | 'TASK_KILLED', quietly = false): void {
    if (isEnded(t)) return;
    const wasRunning = t.state === 'TASK_RUNNING';
    t.state = state;
    this.markCpus();
    this.trialCpusHeld -= t.resources.cpus;
    t.fw.holding--;
    if (wasRunning && t.startedMs !== undefined) t.fw.trialMs += this.clock.nowMs - t.startedMs;
    this.allocator.recoverResources(t.fw.id, t.agentId, t.resources, 0, this.clock.nowMs);
    this.o.trace?.(`${state} ${t.id} on ${t.agentId}`);
    if (!quietly) this.update(t, state === 'TASK_KILLED' ? 'killed' : '');
    this.requestAllocation();
  }

  /** What the master knows of the tasks named (all the framework's live ones when none is), without uuids. */
  private reconcile(fw: SimFramework, taskIds: string[]): void {
    const named = taskIds.length > 0 ? taskIds : [...this.tasks.values()].filter((t) => t.fw === fw && !isEnded(t)).map((t) => t.id);
    for (const id of named) {
      const t = this.tasks.get(id);
      const s: TaskStatusJson = t && t.fw === fw ? status(t, '', undefined, this.clock.nowMs) : { task_id: { value: id }, state: 'TASK_LOST', message: 'unknown to the master', source: 'SOURCE_MASTER' };
      fw.stream.deliver({ type: 'UPDATE', update: { status: s } });
    }
  }

  /** TEARDOWN: whatever of the framework still runs is killed, its offers and App Core come back, and it is gone. */
  private teardown(fw: SimFramework): void {
    for (const id of [...fw.outstanding.keys()]) this.giveBack(fw, id, 0);
    for (const t of this.tasks.values()) if (t.fw === fw) this.endTask(t, 'TASK_KILLED', true);
    if (fw.appCore) this.allocator.recoverResources(fw.id, fw.appCore.agentId, fw.appCore.resources, 0, this.clock.nowMs);
    this.allocator.removeFramework(fw.id);
    fw.removed = true;
    fw.endMs = this.clock.nowMs;
    this.o.tornDown(fw.name);
    this.requestAllocation();
  }
}

function isEnded(t: Task): boolean {
  return t.state === 'TASK_FINISHED' || t.state === 'TASK_KILLED';
}

function status(t: Task, message: string, uuid: string | undefined, nowMs: number): TaskStatusJson {
  return {
    task_id: { value: t.id }, state: t.state, agent_id: { value: t.agentId }, message, source: 'SOURCE_AGENT', timestamp: nowMs / 1000,
    ...(uuid ? { uuid } : {}),
  };
}

function offerJson(offerId: string, frameworkId: string, agentId: string, resources: Resources): OfferJson {
  return {
    id: { value: offerId }, framework_id: { value: frameworkId }, agent_id: { value: agentId }, hostname: agentId,
    url: { scheme: 'http', address: { hostname: agentId, ip: agentId, port: 5051 } },
    resources: resources.toMesos('*'), attributes: [],
  };
}

/** The trial's index and parameters, as its program reads them: CAIRN_TRIAL and the params.json its script writes. */
function trialOf(spec: TaskSpec): { index: number; params: Assignment } {
  const index = Number(spec.command.environment.find((v) => v.name === 'CAIRN_TRIAL')?.value);
  const line = /^printf '%s\\n' '(.*)' > params\.json$/m.exec(spec.command.value);
  if (!line || !Number.isInteger(index)) throw new Error(`task ${spec.taskId} names no trial and parameters`);
  return { index, params: JSON.parse(line[1].replaceAll(`'\\''`, `'`)) as Assignment };
}
