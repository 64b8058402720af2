// `cairn run`: a small framework of its own, like mesos-execute. It subscribes, launches
// K copies of a command from the offers it gets (declining the rest so it hogs nothing,
// suppressing offers once all are launched), copies each task's stdout and stderr to its
// own as they run, and exits with 0 when every task finished, else with the exit code of
// the first task that did not. It tears its framework down at the end and on Ctrl-C
// (which kills its tasks).

import { randomBytes } from 'node:crypto';
import { isTerminal, type TaskState } from '../../shared/agent-protocol.ts';
import type { OfferJson, TaskStatusJson } from '../../shared/mesos-v1.ts';
import { SCALAR_NAMES, type MesosResource } from '../../shared/resources.ts';
import { MasterClient } from '../../shared/sdk/master-client.ts';
import { MasterHttpError } from '../../shared/sdk/http-error.ts';
import { fitTasks, requirementResources, type PlacedTask, type TaskRequirement } from '../../shared/sdk/offer-fit.ts';
import { SchedulerClient } from '../../shared/sdk/scheduler-client.ts';
import { clientTls } from './client-tls.ts';
import type { CliIo } from './io.ts';
import { followLog, LinePrefixer } from './log-relay.ts';
import type { RunOptions } from './options.ts';
import { buildTaskInfo, describeEnding, exitCodeFor, runFrameworkInfo, taskIds, taskRequirement, type RunTaskSpec } from './run-tasks.ts';
import { findToken } from '../../shared/sdk/credentials.ts';

export interface RunTuning {
  /** Pause between log reads that brought nothing new (default 250). */
  pollIntervalMs?: number;
  /** After a task ended, stop reading its log after this long without new data (default 10000). */
  logGiveUpMs?: number;
  /** After Ctrl-C, how long to wait for the kills to land before tearing down (default 10000). */
  killWaitMs?: number;
  /** When to say that no offer has fit yet (default 10000). */
  waitingNoticeMs?: number;
  /** Filter on what was declined while tasks still wait for offers (default 5 s). */
  declineRefuseSeconds?: number;
  randomSuffix?: () => string;
  user?: string;
}

/** Once everything is launched, declined offers stay away this long (or until a revive). */
const ALL_LAUNCHED_REFUSE_S = 3600;
const EXIT_INTERRUPTED = 130;
const RESOURCE_NAMES: ReadonlySet<string> = new Set([...SCALAR_NAMES, 'ports']);

type Phase = 'pending' | 'launching' | 'launched';

interface RunTask {
  index: number;
  id: string;
  phase: Phase;
  agentId?: string;
  state?: TaskState;
  message?: string;
  exitCode?: number;
  /** A terminal update arrived. */
  ended: boolean;
  /** Logs drained and the ending reported: nothing more to do for this task. */
  settled: boolean;
  relay?: Promise<void>;
}

function message(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** Offers may carry resources this framework does not use; packing looks only at its own. */
function usableResources(resources: readonly MesosResource[]): MesosResource[] {
  return resources.filter((r) => RESOURCE_NAMES.has(r.name));
}

/** Launch failures that another offer can fix; anything else is a mistake to report. */
function retryable(err: unknown): boolean {
  if (!(err instanceof MasterHttpError)) return true;
  if (err.status >= 500) return true;
  return ['CAIRN_UNKNOWN_OFFER', 'CAIRN_OFFER_RESCINDED', 'CAIRN_INSUFFICIENT_RESOURCES', 'CAIRN_UNKNOWN_AGENT', 'CAIRN_AGENT_UNAVAILABLE'].includes(err.code);
}

export async function runRun(o: RunOptions, io: CliIo, tuning: RunTuning = {}): Promise<number> {
  return new RunSession(o, io, tuning).run();
}

class RunSession {
  private readonly tasks: RunTask[];
  private readonly byId = new Map<string, RunTask>();
  private readonly spec: RunTaskSpec;
  private readonly requirement: TaskRequirement;
  private readonly client: SchedulerClient;
  private readonly rest: MasterClient;
  private readonly pollIntervalMs: number;
  private readonly logGiveUpMs: number;
  private readonly killWaitMs: number;
  private readonly waitingNoticeMs: number;
  private readonly declineRefuseS: number;

  private suppressed = false;
  private stopping = false;
  private interrupts = 0;
  private firstFailure: RunTask | undefined;
  private fatalCode: number | undefined;
  private resolveDone!: (code: number) => void;
  private readonly done = new Promise<number>((r) => (this.resolveDone = r));
  private finished = false;
  private timers: NodeJS.Timeout[] = [];

  constructor(
    private readonly o: RunOptions,
    private readonly io: CliIo,
    tuning: RunTuning,
  ) {
    const suffix = tuning.randomSuffix ?? (() => randomBytes(3).toString('hex'));
    this.tasks = taskIds(o.name, o.instances, suffix).map((id, index) => ({ index, id, phase: 'pending', ended: false, settled: false }));
    this.tasks.forEach((t) => this.byId.set(t.id, t));
    this.spec = { name: o.name, count: o.instances, command: o.command, env: o.env };
    this.requirement = taskRequirement(o);
    this.pollIntervalMs = tuning.pollIntervalMs ?? 250;
    this.logGiveUpMs = tuning.logGiveUpMs ?? 10_000;
    this.killWaitMs = tuning.killWaitMs ?? 10_000;
    this.waitingNoticeMs = tuning.waitingNoticeMs ?? 10_000;
    this.declineRefuseS = tuning.declineRefuseSeconds ?? 5;
    const tls = clientTls(o.tls);
    this.client = new SchedulerClient({ masterUrl: o.masterUrl, token: findToken(o.masterUrl, io.env), tls, frameworkInfo: runFrameworkInfo(o, o.user ?? tuning.user ?? '') });
    this.rest = new MasterClient(o.masterUrl, { token: findToken(o.masterUrl, io.env), tls });
  }

  async run(): Promise<number> {
    const disposeInterrupt = this.io.onInterrupt(() => this.interrupt());
    this.client.on('offers', (offers) => this.onOffers(offers));
    this.client.on('update', (status) => this.onUpdate(status));
    this.client.on('error', (msg) => this.fail(`the master ended this framework: ${msg}`));
    this.client.on('disconnected', (reason) => this.note(`lost the master (${reason}); reconnecting`));
    this.client.on('subscribed', (_id, info) => {
      if (info.resubscribed) this.afterResubscribe();
    });
    try {
      await this.client.subscribe();
    } catch (err) {
      disposeInterrupt();
      this.client.close();
      if (this.interrupts > 0) return EXIT_INTERRUPTED;
      // With several masters the error names each and why it failed.
      this.note(this.o.masterUrl.includes(',') ? `cannot subscribe: ${message(err)}` : `cannot subscribe to the master at ${this.o.masterUrl}: ${message(err)}`);
      return 1;
    }
    this.timers.push(setTimeout(() => this.waitingNotice(), this.waitingNoticeMs));

    const code = await this.done;
    this.timers.forEach(clearTimeout);
    disposeInterrupt();
    try {
      await this.client.teardown();
    } catch {
      // Not connected any more: the master removes the framework after its failover timeout.
      this.client.close();
    }
    return code;
  }

  // ---- offers -------------------------------------------------------------------------

  private pending(): RunTask[] {
    return this.stopping ? [] : this.tasks.filter((t) => t.phase === 'pending');
  }

  private onOffers(offers: OfferJson[]): void {
    const declined: string[] = [];
    for (const offer of offers) {
      const pending = this.pending();
      if (pending.length === 0) {
        declined.push(offer.id.value);
        continue;
      }
      let placed: PlacedTask[];
      try {
        placed = fitTasks(usableResources(offer.resources), pending.map(() => this.requirement)).placed;
      } catch {
        placed = [];
      }
      if (placed.length === 0) {
        declined.push(offer.id.value);
        continue;
      }
      const launching = placed.map((p) => {
        const task = pending[p.index];
        task.phase = 'launching';
        task.agentId = offer.agent_id.value;
        return { task, info: buildTaskInfo(this.spec, task, offer.agent_id.value, p) };
      });
      const refuse = this.pending().length > 0 ? this.declineRefuseS : ALL_LAUNCHED_REFUSE_S;
      this.client.accept([offer.id.value], launching.map((l) => l.info), { refuse_seconds: refuse }).then(
        () => launching.forEach(({ task }) => {
          if (task.phase === 'launching') task.phase = 'launched';
        }),
        (err) => this.onLaunchFailed(launching.map((l) => l.task), err),
      );
    }
    if (declined.length > 0) {
      const refuse = this.pending().length > 0 ? this.declineRefuseS : ALL_LAUNCHED_REFUSE_S;
      this.client.decline(declined, refuse).catch(() => undefined);
    }
    this.suppressIfAllLaunched();
  }

  private suppressIfAllLaunched(): void {
    if (this.suppressed || this.pending().length > 0 || this.finished) return;
    this.suppressed = true;
    this.client.suppress().catch(() => {
      this.suppressed = false;
    });
  }

  private onLaunchFailed(tasks: RunTask[], err: unknown): void {
    const notLaunched = tasks.filter((t) => t.phase === 'launching');
    if (notLaunched.length === 0) return;
    if (this.stopping || !retryable(err)) {
      notLaunched.forEach((t) => {
        t.phase = 'pending';
        t.settled = true;
      });
      if (!this.stopping) this.fail(`cannot launch ${notLaunched.map((t) => t.id).join(', ')}: ${message(err)}`);
      this.checkDone();
      return;
    }
    notLaunched.forEach((t) => {
      t.phase = 'pending';
      t.agentId = undefined;
    });
    if (this.suppressed) {
      this.suppressed = false;
      this.client.revive().catch(() => undefined);
    }
  }

  private waitingNotice(): void {
    const waiting = this.pending().length;
    if (waiting === 0 || this.finished) return;
    const each = requirementResources(this.requirement).toString();
    const ports = this.requirement.ports ? ` and ${this.requirement.ports} port(s)` : '';
    this.note(`waiting for offers: ${waiting} task(s) still need ${each}${ports} each`);
  }

  // ---- updates ------------------------------------------------------------------------

  private onUpdate(status: TaskStatusJson): void {
    const task = this.byId.get(status.task_id.value);
    if (!task || task.ended) return;
    task.phase = 'launched';
    task.state = status.state;
    if (status.agent_id?.value) task.agentId = status.agent_id.value;
    this.startRelay(task);
    if (!isTerminal(status.state)) return;
    task.ended = true;
    task.message = status.message;
    if (status.state !== 'TASK_FINISHED') this.firstFailure ??= task;
    void task.relay!.then(() => this.settle(task));
  }

  private startRelay(task: RunTask): void {
    if (task.relay) return;
    const prefix = this.o.instances > 1 ? `[${task.index}] ` : '';
    const relay = (stream: 'stdout' | 'stderr') => {
      const out = stream === 'stdout' ? this.io.stdout : this.io.stderr;
      const lines = new LinePrefixer(prefix, (text) => void out.write(text));
      return followLog({
        source: this.rest,
        taskId: task.id,
        stream,
        write: (text) => lines.push(text),
        pollIntervalMs: this.pollIntervalMs,
        giveUpMs: this.logGiveUpMs,
        ended: () => task.ended,
        cancelled: () => this.finished,
      }).finally(() => lines.flush());
    };
    task.relay = Promise.all([relay('stdout'), relay('stderr')]).then(() => undefined);
  }

  /** The task's output is all out: report how it ended. */
  private async settle(task: RunTask): Promise<void> {
    const state = task.state!;
    if (state !== 'TASK_FINISHED') {
      try {
        task.exitCode = (await this.rest.task(task.id)).exitCode;
      } catch {
        // Unknown: reported as exit code 1.
      }
      const prefix = this.o.instances > 1 ? `[${task.index}] ` : '';
      if (!(this.stopping && state === 'TASK_KILLED')) {
        this.io.stderr.write(`${prefix}cairn run: ${describeEnding(task.id, state, task.exitCode, task.message)}\n`);
      }
    }
    task.settled = true;
    this.checkDone();
  }

  private checkDone(): void {
    if (this.finished) return;
    const open = this.tasks.some((t) => !t.settled && !(this.stopping && t.phase === 'pending'));
    if (open) return;
    if (this.fatalCode !== undefined) return this.finish(this.fatalCode);
    if (this.interrupts > 0) return this.finish(EXIT_INTERRUPTED);
    const failed = this.firstFailure;
    this.finish(failed ? exitCodeFor(failed.state!, failed.exitCode) : 0);
  }

  private finish(code: number): void {
    if (this.finished) return;
    this.finished = true;
    this.resolveDone(code);
  }

  // ---- connection and stopping --------------------------------------------------------

  private afterResubscribe(): void {
    this.note('reconnected to the master');
    const live = this.tasks.filter((t) => t.phase !== 'pending' && !t.ended);
    if (live.length > 0) {
      this.client.reconcile(live.map((t) => ({ taskId: t.id, ...(t.agentId ? { agentId: t.agentId } : {}) }))).catch(() => undefined);
    }
    if (this.pending().length > 0) {
      this.suppressed = false;
      this.client.revive().catch(() => undefined);
    } else {
      this.suppressed = false;
      this.suppressIfAllLaunched();
    }
  }

  private interrupt(): void {
    this.interrupts++;
    if (this.interrupts > 1 || !this.client.connected) {
      // Second Ctrl-C, or nothing to wait for: go now (the teardown kills what is left).
      if (!this.client.connected && this.interrupts === 1) this.client.close();
      this.finish(EXIT_INTERRUPTED);
      return;
    }
    this.stopping = true;
    const live = this.tasks.filter((t) => t.phase !== 'pending' && !t.ended);
    this.note(live.length > 0 ? `interrupted: killing ${live.length} task(s) (Ctrl-C again to stop waiting)` : 'interrupted');
    for (const t of live) this.client.kill(t.id, t.agentId).catch(() => undefined);
    this.timers.push(setTimeout(() => this.finish(EXIT_INTERRUPTED), this.killWaitMs));
    this.checkDone();
  }

  private fail(text: string, code = 1): void {
    if (this.finished) return;
    this.note(text);
    this.fatalCode ??= code;
    this.finish(this.fatalCode);
  }

  private note(text: string): void {
    this.io.stderr.write(`cairn run: ${text}\n`);
  }
}
