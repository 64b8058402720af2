// `cairn run`: a small framework of its own, like mesos-execute. It subscribes, launches
// K copies of a command from the offers it gets (declining the rest so it hogs nothing,
// suppressing offers once all are launched), copies each task's stdout and stderr to its
// own as they run, and exits with 0 when every task finished, else with the exit code of
// the first task that did not. It tears its framework down at the end and on Ctrl-C
// (which kills its tasks).
//
// While tasks wait for offers it says why (shared/sdk/why-waiting.ts): at once when no agent
// could ever fit one, or the agents that could are draining or unreachable (from the
// master's state, read again every few seconds), and when offers keep coming too small.
// `--timeout` ends the wait (exit 124, what it launched is killed); `--detach` prints the
// task ids once they are launched and leaves them running (`cairn attach` follows them).

import { randomBytes } from 'node:crypto';
import { isTerminal, type TaskState } from '../../../shared/agent-protocol.ts';
import type { OfferJson, TaskStatusJson } from '../../../shared/mesos-v1.ts';
import { SCALAR_NAMES, type MesosResource } from '../../../shared/resources.ts';
import { MasterClient } from '../../../shared/sdk/master-client.ts';
import { MasterHttpError } from '../../../shared/sdk/http-error.ts';
import { fitTasks, requirementResources, type PlacedTask, type TaskRequirement } from '../../../shared/sdk/offer-fit.ts';
import { SchedulerClient } from '../../../shared/sdk/scheduler-client.ts';
import { DeclinedOffers, explainUnfit } from '../../../shared/sdk/why-waiting.ts';
import { formatDurationMs } from '../../../shared/duration.ts';
import { clientTls } from '../common/client-tls.ts';
import type { CliIo } from '../common/io.ts';
import { followLog, LinePrefixer } from '../common/log-relay.ts';
import type { RunOptions } from './options.ts';
import { buildTaskInfo, describeEnding, EXIT_TIMED_OUT, exitCodeFor, runFrameworkInfo, taskIds, taskRequirement, type RunTaskSpec } from './run-tasks.ts';
import { findToken } from '../../../shared/sdk/credentials.ts';

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
  /** While tasks wait, how often the master's state is read again to say why (default 5000). */
  stateCheckMs?: number;
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
  private readonly stateCheckMs: number;
  /** Offers declined as too small since the last launch. */
  private readonly declinedOffers: DeclinedOffers;
  /** What the master's state last said about the wait (undefined: nothing wrong, or not read yet). */
  private unfit: string | undefined;
  private unfitSaid: string | undefined;
  private stateRead = false;
  /** Something was said about why the tasks wait. */
  private explained = false;
  private pendingDeclineNote: string | undefined;
  private timedOut = false;
  /** --detach: the tasks were launched and their ids printed; the framework is left to run them. */
  private detached = false;

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
    this.spec = { name: o.name, count: o.instances, command: o.command, env: o.env, ...(o.image !== undefined ? { image: o.image } : {}), ...(o.files !== undefined ? { files: o.files } : {}) };
    this.requirement = taskRequirement(o);
    this.pollIntervalMs = tuning.pollIntervalMs ?? 250;
    this.logGiveUpMs = tuning.logGiveUpMs ?? 10_000;
    this.killWaitMs = tuning.killWaitMs ?? 10_000;
    this.waitingNoticeMs = tuning.waitingNoticeMs ?? 10_000;
    this.declineRefuseS = tuning.declineRefuseSeconds ?? 5;
    this.stateCheckMs = tuning.stateCheckMs ?? 5000;
    this.declinedOffers = new DeclinedOffers(this.requirement);
    const tls = clientTls(o.tls);
    this.client = new SchedulerClient({ masterUrl: o.masterUrl, token: findToken(o.masterUrl, io.env), tls, frameworkInfo: runFrameworkInfo({ ...o, detach: o.detach === true }, o.user ?? tuning.user ?? '') });
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
    // The wait is timed from the start: a master that cannot be reached is waited for too.
    if (this.o.timeoutMs !== undefined) this.timers.push(setTimeout(() => this.timeout(), this.o.timeoutMs));
    try {
      await this.client.subscribe();
    } catch (err) {
      disposeInterrupt();
      this.timers.forEach(clearTimeout);
      this.client.close();
      if (this.interrupts > 0) return EXIT_INTERRUPTED;
      if (this.timedOut) return EXIT_TIMED_OUT;
      // With several masters the error names each and why it failed.
      this.note(this.o.masterUrl.includes(',') ? `cannot subscribe: ${message(err)}` : `cannot subscribe to the master at ${this.o.masterUrl}: ${message(err)}`);
      return 1;
    }
    this.timers.push(setTimeout(() => this.waitingNotice(), this.waitingNoticeMs));
    void this.checkState();

    const code = await this.done;
    this.timers.forEach(clearTimeout);
    disposeInterrupt();
    if (this.detached) {
      // The framework stays registered (its failover timeout) and its tasks run on.
      this.client.close();
      return code;
    }
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
        this.noteDeclined(offer);
        continue;
      }
      this.declinedOffers.reset();
      this.pendingDeclineNote = undefined;
      const launching = placed.map((p) => {
        const task = pending[p.index];
        task.phase = 'launching';
        task.agentId = offer.agent_id.value;
        return { task, info: buildTaskInfo(this.spec, task, offer.agent_id.value, p) };
      });
      const refuse = this.pending().length > 0 ? this.declineRefuseS : ALL_LAUNCHED_REFUSE_S;
      this.client.accept([offer.id.value], launching.map((l) => l.info), { refuse_seconds: refuse }).then(
        () => {
          const launched = launching.filter(({ task }) => task.phase === 'launching');
          launched.forEach(({ task }) => (task.phase = 'launched'));
          // The ids on stderr, so that stdout stays the tasks' own output.
          if (launched.length > 0) this.note(`launched ${launched.map(({ task }) => task.id).join(', ')} on ${offer.hostname}`);
          this.afterLaunch();
        },
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
    if (waiting === 0 || this.finished || this.explained) return;
    const each = requirementResources(this.requirement).toString();
    const ports = this.requirement.ports ? ` and ${this.requirement.ports} port(s)` : '';
    this.note(`waiting for offers: ${waiting} task(s) still need ${each}${ports} each`);
  }

  // ---- why the tasks wait -------------------------------------------------------------

  /**
   * Reads the agents from the master's state and says when none could ever fit a task, or
   * the ones that could are draining or unreachable; again every `stateCheckMs` while tasks
   * wait, saying it anew only when it changed. A state that cannot be read says nothing.
   */
  private async checkState(): Promise<void> {
    if (this.finished || this.pending().length === 0) return;
    try {
      this.unfit = explainUnfit(this.requirement, (await this.rest.state()).agents);
    } catch {
      this.unfit = undefined;
    }
    this.stateRead = true;
    if (this.finished || this.pending().length === 0) return;
    if (this.unfit !== undefined && this.unfit !== this.unfitSaid) {
      this.explained = true;
      const pending = this.pending();
      this.note(`cannot launch ${pending.length === 1 ? pending[0].id : `${pending.length} tasks`}: ${this.unfit}`);
    }
    this.unfitSaid = this.unfit;
    // Offers declined before the state was read: said now, unless the state said more.
    if (this.unfit === undefined && this.pendingDeclineNote !== undefined) {
      this.explained = true;
      this.note(this.pendingDeclineNote);
    }
    this.pendingDeclineNote = undefined;
    this.timers.push(setTimeout(() => void this.checkState(), this.stateCheckMs));
  }

  /** An offer declined as too small: normal while other tasks hold the rest; said once, then on change. */
  private noteDeclined(offer: OfferJson): void {
    const text = this.declinedOffers.add(usableResources(offer.resources));
    if (text === undefined) return;
    // When no agent could ever fit the task, that says more than any offer.
    if (!this.stateRead) this.pendingDeclineNote = text;
    else if (this.unfit === undefined) {
      this.explained = true;
      this.note(text);
    }
  }

  /** Everything launched: the wait is over (no timeout); with --detach, the ids once each task was heard of. */
  private afterLaunch(): void {
    if (!this.o.detach || this.finished || this.stopping) return;
    if (this.tasks.some((t) => t.phase !== 'launched' || t.state === undefined)) return;
    for (const t of this.tasks) this.io.stdout.write(`${t.id}\n`);
    this.detached = true;
    this.finish(0);
  }

  /** --timeout: not everything is launched in time. Kill what was, say what was awaited, exit 124. */
  private timeout(): void {
    if (this.finished || this.stopping) return;
    const waiting = this.pending().length;
    if (this.client.connected && waiting === 0 && !this.o.detach) return;
    this.timedOut = true;
    const after = formatDurationMs(this.o.timeoutMs!);
    if (!this.client.connected) {
      this.note(`timed out after ${after} waiting to subscribe to the master`);
      this.client.close();
      this.finish(EXIT_TIMED_OUT);
      return;
    }
    const each = requirementResources(this.requirement).toString();
    const ports = this.requirement.ports ? ` and ${this.requirement.ports} port(s)` : '';
    const why = this.unfit ?? this.declinedOffers.sentence()?.replace(/^waiting: /, '');
    const what = waiting > 0 ? `waiting for offers for ${waiting} of ${this.tasks.length} task(s), each ${each}${ports}` : 'waiting for the tasks to start';
    this.note(`timed out after ${after} ${what}${why ? ` (${why})` : ''}`);
    this.stopAll(EXIT_TIMED_OUT);
  }

  // ---- updates ------------------------------------------------------------------------

  private onUpdate(status: TaskStatusJson): void {
    const task = this.byId.get(status.task_id.value);
    if (!task || task.ended) return;
    task.phase = 'launched';
    task.state = status.state;
    if (status.agent_id?.value) task.agentId = status.agent_id.value;
    if (this.o.detach) {
      // Detached: no output is copied, and how a task ends is for `cairn attach` to say;
      // the ids are printed once every task was heard of.
      this.afterLaunch();
      if (isTerminal(status.state)) {
        task.ended = true;
        task.settled = true;
        this.checkDone();
      }
      return;
    }
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
    const live = this.tasks.filter((t) => t.phase !== 'pending' && !t.ended);
    this.note(live.length > 0 ? `interrupted: killing ${live.length} task(s) (Ctrl-C again to stop waiting)` : 'interrupted');
    this.stopAll(EXIT_INTERRUPTED);
  }

  /** Kills what was launched and ends with `code` once their ends are in (or after killWaitMs). */
  private stopAll(code: number): void {
    this.stopping = true;
    if (code !== EXIT_INTERRUPTED) this.fatalCode ??= code;
    const live = this.tasks.filter((t) => t.phase !== 'pending' && !t.ended);
    for (const t of live) this.client.kill(t.id, t.agentId).catch(() => undefined);
    this.timers.push(setTimeout(() => this.finish(code), this.killWaitMs));
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
