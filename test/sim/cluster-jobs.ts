// The jobs framework in the whole-cluster simulation: the production framework itself
// (master/frameworks/jobs/runtime.ts, JobsRuntime on the framework runtime), over a simulated
// scheduler transport (sim-transport.ts: calls are datagrams that may be lost, duplicated or
// late; events come on a stream that a leader change or a partition ends), the simulator's
// clock (sim-runtime-clock.ts) and a store that survives its crashes (sim-store.ts: writes
// durable a Raft round trip after they are made, lost when in flight at a crash). A crash
// drops the instance — its timers, its stream, its writes in flight — and starts a new one
// from the store, as a new leader's is. Its clock is anchored, at each start, on its host's
// wall clock, which clock-step faults move by hours: no job may fail DeadlineExceeded before
// it has run its activeDeadlineSeconds of simulated (monotonic) time, and no ACCEPT may launch
// a task that no durable record names.

import type { SchedulerCall } from '../../shared/mesos-v1.ts';
import type { SeededRandom } from '../../shared/random.ts';
import type { StorePut } from '../../shared/framework-host/store.ts';
import type { FrameworkEnv } from '../../shared/framework-host/contract.ts';
import type { JobSpec } from '../../shared/jobs/model.ts';
import { JOB_KEY_PREFIX, JobsRuntime, jobKey } from '../../master/frameworks/jobs/runtime.ts';
import { isFinished, type JobRecord } from '../../master/frameworks/jobs/record.ts';
import { steadyClock } from '../../shared/steady-clock.ts';
import { SimWallClock } from './cluster-clock.ts';
import type { FrameworkWorld } from './cluster-framework.ts';
import type { SimMaster } from './cluster-master.ts';
import { simEnv } from './sim-env.ts';
import { SimRuntimeClock } from './sim-runtime-clock.ts';
import { SimStore, type StoreBug } from './sim-store.ts';
import { simTransports, type SimTransport } from './sim-transport.ts';

/** The replica a jobs task runs: `<job>.<group>-<index>.<uid>.<n>` → `<job>/<group>-<index>`. */
export function replicaOfTask(taskId: string): string | undefined {
  const parts = taskId.split('.');
  return parts.length === 4 ? `${parts[0]}/${parts[1]}` : undefined;
}

/** An operator not answered within this long submits again. */
const SUBMIT_AGAIN_MS = 2_000;

export interface JobsWorld extends FrameworkWorld {
  leaders(): SimMaster[];
}

export class SimJobs {
  readonly name = 'jobs';
  readonly stats = { subscriptions: 0, launches: 0, crashes: 0, gangs: 0 };
  /** The wall clock of the host it runs on; its clock is anchored on it at each start. */
  readonly wall: SimWallClock;
  readonly violations: string[] = [];
  private readonly store: SimStore;
  private runtime!: JobsRuntime;
  private clock!: SimRuntimeClock;
  private transports: SimTransport[] = [];
  /** When (simulated time) each job (name/uid) was first recorded started. */
  private readonly startedAt = new Map<string, number>();
  private uids = 0;

  constructor(
    private readonly world: JobsWorld,
    private readonly rng: SeededRandom,
    jobs: { atMs: number; spec: JobSpec }[],
    plant?: StoreBug,
  ) {
    this.wall = new SimWallClock(world.clock);
    this.store = new SimStore(world.clock, () => world.net.delay() + world.net.delay(), (puts) => this.onWrite(puts), plant);
    this.boot();
    for (const j of jobs) this.world.clock.after(j.atMs, () => this.submit(j.spec));
  }

  /**
   * An operator's submission: one that met a crash is lost with the instance, and the
   * operator, never answered, sends it again until the job is recorded.
   */
  private submit(spec: JobSpec): void {
    void this.runtime.submit(spec, []);
    this.world.clock.after(SUBMIT_AGAIN_MS, () => {
      if (!this.store.data.has(jobKey(spec.name))) this.submit(spec);
    });
  }

  /** Every job submitted so far has ended. */
  get done(): boolean {
    return this.records().every(isFinished);
  }

  /** Every subscription of the running instance is up. */
  get subscribed(): boolean {
    return this.transports.length > 0 && this.transports.filter((t) => !t.isClosed).every((t) => t.connected);
  }

  records(): JobRecord[] {
    return [...this.store.data.entries()].filter(([k]) => k.startsWith(JOB_KEY_PREFIX)).map(([, v]) => v as unknown as JobRecord);
  }

  /** The framework's process dies: its instance, timers, streams and writes in flight are gone; the store is not. */
  crash(): void {
    this.stats.crashes++;
    this.clock.kill();
    this.store.crash();
    for (const t of this.transports) t.close();
    this.boot();
  }

  private boot(): void {
    // As FrameworkEnv.now: a steady clock read from its host's wall clock once, at start.
    const clock = this.world.clock;
    this.clock = new SimRuntimeClock(clock, steadyClock(this.wall.nowMs(), () => clock.nowMs));
    this.transports = [];
    const made = simTransports(this.world, this.rng.fork(), (call) => this.onCall(call));
    this.runtime = new JobsRuntime(this.env(), {
      clock: this.clock,
      transport: (info) => {
        this.stats.subscriptions++;
        const t = made(info) as SimTransport;
        this.transports.push(t);
        return t;
      },
      // Restarts back off as in production, scaled down so a run's restarts fit its liveness phase.
      restartBackoff: { initialMs: 1_000, factor: 2, maxMs: 8_000, resetAfterMs: 60_000 },
      uid: () => `u${++this.uids}`,
    });
  }

  private env(): FrameworkEnv {
    return simEnv(this.name, this.store.view(this.name), () => this.world.leaders()[0], () => this.clock.now());
  }

  /** A call sent: an ACCEPT launches only tasks that a durable record names (write the record, then ACCEPT). */
  private onCall(call: SchedulerCall): void {
    if (call.type !== 'ACCEPT') return;
    this.stats.gangs++;
    const durable = this.records().map((r) => JSON.stringify(r));
    for (const op of call.accept.operations) {
      for (const t of op.launch?.task_infos ?? []) {
        this.stats.launches++;
        const id = t.task_id.value;
        if (!durable.some((r) => r.includes(`"${id}"`))) this.violations.push(`ACCEPT launches ${id}, which no durable job record names`);
      }
    }
  }

  /** A record written: a job failed DeadlineExceeded must have run its activeDeadlineSeconds, on the simulated clock. */
  private onWrite(puts: StorePut[]): void {
    for (const p of puts) {
      if (!p.key.startsWith(JOB_KEY_PREFIX) || p.value === null) continue;
      const r = p.value as unknown as JobRecord;
      const key = `${r.spec.name}/${r.uid}`;
      const now = this.world.clock.nowMs;
      if (r.startedAtMs !== undefined && !this.startedAt.has(key)) this.startedAt.set(key, now);
      const deadlineS = r.spec.activeDeadlineSeconds;
      if (deadlineS === undefined || r.phase !== 'Failed' || r.conditions.at(-1)?.reason !== 'DeadlineExceeded') continue;
      const ranMs = now - (this.startedAt.get(key) ?? now);
      if (ranMs < deadlineS * 1000) this.violations.push(`job ${r.spec.name} failed DeadlineExceeded after ${ranMs} ms, before its activeDeadlineSeconds (${deadlineS} s)`);
    }
  }
}
