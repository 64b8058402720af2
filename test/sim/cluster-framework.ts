// A simulated framework: a scripted client of the scheduler API with a workload of jobs,
// each to be run until one of its tasks FINISHES. It subscribes (again, with its id, after
// a disconnect or a leader change, following a follower's pointer), launches from offers as
// many jobs as fit, acknowledges every update (some twice), reconciles tasks it has not
// heard of for a while, relaunches a job under a new task id when its task is lost or
// fails, and kills tasks it had given up on. Its calls travel as datagrams: lost,
// duplicated or late.

import { isTerminal, type TaskState } from '../../shared/agent-messages.ts';
import type { SchedulerEvent } from '../../shared/mesos-v1.ts';
import type { SeededRandom } from '../../shared/random.ts';
import { Resources } from '../../shared/resources.ts';
import type { FrameworkSpec, TaskSpec } from '../../master/scheduler-calls.ts';
import type { SchedulerCall } from '../../master/leader/messages.ts';
import type { SimClock } from './cluster-clock.ts';
import { NOT_LEADER_CLOSE, sendSchedulerCall, type SimMaster, type StreamConn } from './cluster-master.ts';
import type { SimNet } from './cluster-net.ts';

export interface FrameworkWorld {
  readonly clock: SimClock;
  readonly net: SimNet;
  masters(): SimMaster[];
  /** Told of every UPDATE the framework receives, with when it was sent. */
  updateReceived(fw: { readonly name: string }, status: { taskId: string; state: TaskState; uuid: string | undefined }, sentAtMs: number): void;
}

interface Job {
  readonly index: number;
  taskId: string | undefined;
  finished: boolean;
}

interface KnownTask {
  job: number;
  state: TaskState | 'LAUNCHING';
  launchedAtMs: number;
  heardAtMs: number;
}

const TASK_RESOURCES = Resources.parse('cpus:0.5;mem:128');
const RECONCILE_EVERY_MS = 5_000;

export class SimFramework {
  frameworkId: string | undefined;
  stream: StreamConn | undefined;
  subscribed = false;
  readonly jobs: Job[];
  readonly tasks = new Map<string, KnownTask>();
  private seq = 0;
  private hint: number | undefined;
  private nextMaster = 0;
  readonly stats = { subscriptions: 0, accepts: 0, relaunches: 0, updates: 0 };

  constructor(
    readonly name: string,
    readonly role: string,
    jobs: number,
    private readonly world: FrameworkWorld,
    private readonly rng: SeededRandom,
  ) {
    this.jobs = Array.from({ length: jobs }, (_, index) => ({ index, taskId: undefined, finished: false }));
    this.subscribe();
    const reconcile = () => {
      this.reconcile();
      this.world.clock.after(RECONCILE_EVERY_MS, reconcile);
    };
    this.world.clock.after(RECONCILE_EVERY_MS, reconcile);
  }

  get done(): boolean {
    return this.jobs.every((j) => j.finished);
  }

  /** The stream breaks (a proxy, a restart of the framework's process): it resubscribes. */
  disconnect(): void {
    const s = this.stream;
    if (!s) return;
    this.lost(s);
    s.close('peer', 1006, 'framework disconnected', false);
  }

  private get streamId(): string | undefined {
    return this.stream && this.subscribed ? `s${this.stream.id}` : undefined;
  }

  private subscribe(): void {
    if (this.stream) return;
    const masters = this.world.masters();
    const target = (this.hint !== undefined ? masters.find((m) => m.id === this.hint) : undefined) ?? masters[this.nextMaster++ % masters.length];
    this.hint = undefined;
    const stream = this.world.net.connect<never, SchedulerEvent>(target.id);
    this.stream = stream;
    this.subscribed = false;
    stream.peer = {
      onMessage: (event, sentAtMs) => {
        if (this.stream === stream) this.onEvent(event, sentAtMs);
      },
      onClose: (code, reason) => {
        if (this.stream !== stream) return;
        if (code === NOT_LEADER_CLOSE && reason !== '0') this.hint = Number(reason);
        this.lost(stream);
      },
    };
    const spec: FrameworkSpec = { name: this.name, user: 'sim', role: this.role, principal: this.name, failoverTimeoutS: 3_600, capabilities: [], ...(this.frameworkId ? { id: this.frameworkId } : {}) };
    this.stats.subscriptions++;
    this.world.clock.after(this.world.net.delay(), () => {
      if (this.stream === stream) target.acceptSubscription(stream, spec);
    });
  }

  private lost(stream: StreamConn): void {
    if (this.stream !== stream) return;
    this.stream = undefined;
    this.subscribed = false;
    this.world.clock.after(this.rng.range(100, 1_000), () => this.subscribe());
  }

  /** A call to the master this stream is on; lost, duplicated or late like any request. */
  private call(call: SchedulerCall): void {
    sendSchedulerCall(this.world, this.stream, this.subscribed, call);
  }

  private onEvent(event: SchedulerEvent, sentAtMs: number): void {
    switch (event.type) {
      case 'SUBSCRIBED':
        this.frameworkId = event.subscribed.framework_id.value;
        this.subscribed = true;
        this.reconcile(true);
        return;
      case 'OFFERS':
        for (const o of event.offers.offers) this.useOffer(o.id.value, o.agent_id.value, Resources.fromMesos(o.resources));
        return;
      case 'UPDATE': {
        const s = event.update.status;
        this.onUpdate(s.task_id.value, s.state, s.uuid, sentAtMs);
        return;
      }
      default:
        return;
    }
  }

  private useOffer(offerId: string, agentId: string, offered: Resources): void {
    if (!this.frameworkId) return;
    const tasks: TaskSpec[] = [];
    let left = offered;
    for (const job of this.jobs) {
      if (job.finished || job.taskId !== undefined) continue;
      if (!left.contains(TASK_RESOURCES)) break;
      left = left.subtract(TASK_RESOURCES);
      const taskId = `${this.name}-j${job.index}-t${++this.seq}`;
      job.taskId = taskId;
      this.tasks.set(taskId, { job: job.index, state: 'LAUNCHING', launchedAtMs: this.world.clock.nowMs, heardAtMs: this.world.clock.nowMs });
      tasks.push({ taskId, name: `job-${job.index}`, agentId, resources: TASK_RESOURCES, command: { shell: true, value: 'true', arguments: [], environment: [] }, labels: [], killGraceMs: 1_000 });
    }
    if (tasks.length > 0) this.stats.accepts++;
    this.call({ type: 'ACCEPT', frameworkId: this.frameworkId, offerIds: [offerId], tasks, refuseMs: tasks.length > 0 ? undefined : 1_000 });
  }

  private onUpdate(taskId: string, state: TaskState, uuid: string | undefined, sentAtMs: number): void {
    this.stats.updates++;
    this.world.updateReceived(this, { taskId, state, uuid }, sentAtMs);
    if (uuid && this.frameworkId) {
      const ack: SchedulerCall = { type: 'ACKNOWLEDGE', frameworkId: this.frameworkId, taskId, agentId: '', uuid };
      this.call(ack);
      if (this.rng.chance(0.1)) this.call(ack);
    }
    const known = this.tasks.get(taskId);
    if (!known) return;
    known.state = state;
    known.heardAtMs = this.world.clock.nowMs;
    const job = this.jobs[known.job];
    if (job.taskId !== taskId) {
      // A task this framework gave up on and relaunched elsewhere: it must not run twice.
      if (!isTerminal(state) && state !== 'TASK_UNREACHABLE' && this.frameworkId) this.call({ type: 'KILL', frameworkId: this.frameworkId, taskId });
      return;
    }
    if (state === 'TASK_FINISHED') job.finished = true;
    else if (isTerminal(state)) {
      job.taskId = undefined;
      this.stats.relaunches++;
    }
  }

  /** Asks about tasks not heard of for a while (all current ones right after subscribing). */
  private reconcile(all = false): void {
    if (!this.frameworkId || !this.streamId) return;
    const now = this.world.clock.nowMs;
    const ids: string[] = [];
    for (const job of this.jobs) {
      if (job.finished || job.taskId === undefined) continue;
      const t = this.tasks.get(job.taskId);
      if (!t || isTerminal(t.state as TaskState)) continue;
      if (all || now - t.heardAtMs >= RECONCILE_EVERY_MS) ids.push(job.taskId);
    }
    if (ids.length > 0) this.call({ type: 'RECONCILE', frameworkId: this.frameworkId, taskIds: ids });
  }
}
