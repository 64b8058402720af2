// Status updates and their acknowledgements: an agent's update made durable, then acked to
// the agent and forwarded to the framework; the master's own updates (lost, unreachable);
// re-sends of updates not yet acknowledged; ACKNOWLEDGE and RECONCILE.
//
// What must hold: an update is acked to its agent and forwarded only once it is committed, and
// re-sent until the framework's acknowledgement is.

import { isTerminal, type StatusUpdate, type TaskState } from '../../shared/agent-messages.ts';
import { Resources } from '../../shared/resources.ts';
import type { RegistryEvent } from '../registry/state-machine.ts';
import type { AgentConn, LeaderState } from './leader-state.ts';
import type { SchedulerCall } from './messages.ts';
import { statusEvent, updateEvent } from './scheduler-events.ts';

export function agentStatusUpdate(leader: LeaderState, c: AgentConn, agentId: string, su: StatusUpdate): void {
  leader.metrics.statusUpdates++;
  const ack = () => leader.sendConn(c, { ack: { uuid: su.uuid, taskId: su.taskId } });
  const task = leader.registry().tasks.get(su.taskId);
  const healthy = su.hasHealthy ? su.healthy === true : undefined;
  // An update in the same state that changes only the task's health is news, not a duplicate.
  const healthChanged = healthy !== undefined && task?.healthy !== healthy;
  if (!task || task.agentId !== agentId || isTerminal(task.state) || (task.state === su.state && !isTerminal(su.state) && !healthChanged)) {
    ack(); // nothing to change: unknown, stale or a re-sent duplicate
    return;
  }
  const wasRunning = task.state === 'TASK_RUNNING';
  leader.propose({
    type: 'status_update',
    taskId: su.taskId,
    state: su.state,
    message: su.message,
    reason: su.reason,
    exitCode: su.hasExitCode ? su.exitCode : undefined,
    source: 'SOURCE_AGENT',
    uuid: Buffer.from(su.uuid).toString('base64'),
    atMs: leader.nowMs,
    ...(healthy !== undefined ? { healthy } : {}),
  }, (events) => {
    // Launch latency, ACCEPT to RUNNING, for tasks this leader launched (an earlier leader's would count the failover).
    if (su.state === 'TASK_RUNNING' && !wasRunning && task.launchedAtMs >= leader.startedAtMs) leader.metrics.launchSeconds.observe((leader.nowMs - task.launchedAtMs) / 1000);
    ack();
    forwardEvents(leader, events);
  });
}

/** A status update the master itself decides (lost, unreachable...). */
export function masterUpdate(leader: LeaderState, taskId: string, state: TaskState, message: string, reason: string): void {
  leader.propose({ type: 'status_update', taskId, state, message, reason, source: 'SOURCE_MASTER', uuid: leader.uuid(), atMs: leader.nowMs }, (events) => forwardEvents(leader, events));
}

/** After a registry change is committed: tell frameworks, give back resources of ended tasks. */
export function forwardEvents(leader: LeaderState, events: RegistryEvent[]): void {
  const state = leader.registry();
  for (const e of events) {
    const t = e.task;
    leader.toFramework(t.frameworkId, updateEvent(t, e.update));
    leader.forwardedAt.set(e.update.uuid, leader.nowMs);
    const wasHolding = !isTerminal(e.previousState) && e.previousState !== 'TASK_UNREACHABLE';
    if (!isTerminal(e.update.state)) continue;
    leader.pendingKills.delete(t.id);
    for (const [preemptor, p] of leader.preempting) {
      if (p.victims.delete(t.id) && p.victims.size === 0) leader.preempting.delete(preemptor);
    }
    if (!leader.allocator.hasFramework(t.frameworkId)) continue;
    if (wasHolding && state.agents.get(t.agentId)?.reachable && leader.allocator.hasAgent(t.agentId)) {
      try {
        leader.allocator.recoverResources(t.frameworkId, t.agentId, Resources.parse(t.resources), 0, leader.nowMs);
      } catch (err) {
        leader.log('debug', 'resources of ended task not recovered', { err: (err as Error).message, taskId: t.id });
      }
    }
    const fw = state.frameworks.get(t.frameworkId);
    if (fw?.removedAtMs !== undefined && state.activeTasksOf(fw.id).length === 0) leader.allocator.removeFramework(fw.id);
    leader.requestAllocation();
  }
}

/**
 * Re-sends updates still unacknowledged a retry period after they were made; younger ones
 * have just gone out and most are being acknowledged (re-sending those too made a third of
 * the update traffic at 10,000 tasks/s duplicates).
 */
export function resendUnacknowledged(leader: LeaderState): void {
  if (leader.sessions.size === 0) return;
  const before = leader.nowMs - leader.config.updateRetryMs;
  // Made when this core first sent it, on this core's clock — not the update's atMs: that is
  // the clock of whichever leader wrote it, hours apart from this one's after a wall-clock
  // step, and an update from the future would not be re-sent until the clocks met. One this
  // core never sent (an earlier leader's) is due at once.
  const sent = new Map<string, number>();
  for (const t of leader.registry().tasks.values()) {
    if (!t.unacked) continue;
    const at = leader.forwardedAt.get(t.unacked.uuid) ?? -Infinity;
    sent.set(t.unacked.uuid, at);
    if (at <= before && leader.sessions.has(t.frameworkId)) leader.toFramework(t.frameworkId, updateEvent(t, t.unacked));
  }
  leader.forwardedAt = sent;
}

/** Updates a framework has not acknowledged, sent again as it (re)subscribes. */
export function resendTo(leader: LeaderState, frameworkId: string): void {
  for (const t of leader.registry().tasks.values()) {
    if (t.frameworkId === frameworkId && t.unacked) leader.toFramework(frameworkId, updateEvent(t, t.unacked));
  }
}

export function acknowledge(leader: LeaderState, call: Extract<SchedulerCall, { type: 'ACKNOWLEDGE' }>): void {
  const task = leader.registry().tasks.get(call.taskId);
  if (task && task.frameworkId === call.frameworkId && task.unacked?.uuid === call.uuid) {
    // Nothing waits on it: an update not acknowledged durably is simply sent again.
    leader.propose({ type: 'status_acknowledged', taskId: task.id, uuid: call.uuid }, () => undefined, () => undefined);
  }
}

export function reconcile(leader: LeaderState, call: Extract<SchedulerCall, { type: 'RECONCILE' }>): void {
  const state = leader.registry();
  const launchingOf = [...leader.launching].filter(([, l]) => l.frameworkId === call.frameworkId).map(([id]) => id);
  const tasks = call.taskIds.length > 0 ? call.taskIds : [...state.activeTasksOf(call.frameworkId).map((t) => t.id), ...launchingOf];
  for (const id of tasks) {
    const t = state.tasks.get(id);
    const launching = leader.launching.get(id);
    if (t && t.frameworkId === call.frameworkId) leader.toFramework(call.frameworkId, statusEvent(t.id, t.agentId, t.state, t.message, 'REASON_RECONCILIATION', leader.nowMs, t.healthy));
    // Accepted, its launch not yet durable (a slow disk, a busy quorum): staging, as Mesos
    // answers for a pending task. TASK_LOST here would have a framework give up on a task
    // that starts a moment later, and relaunched under a new id it would run twice. However
    // long the write takes, it settles while this core leads: it commits, or it fails (the
    // disk refuses it, or this master stops leading, and then the next leader answers from
    // its registry); a failed launch leaves `launching` and is answered unknown below.
    else if (launching && launching.frameworkId === call.frameworkId) leader.toFramework(call.frameworkId, statusEvent(id, launching.agentId, 'TASK_STAGING', 'its launch is being recorded', 'REASON_RECONCILIATION', leader.nowMs));
    else leader.toFramework(call.frameworkId, statusEvent(id, undefined, 'TASK_LOST', 'unknown task', 'REASON_RECONCILIATION', leader.nowMs));
  }
}
