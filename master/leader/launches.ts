// Offers and launches: ACCEPT validated whole, its tasks made durable, then sent to their
// agent in one frame; DECLINE; kills, by a framework's KILL or on the leader's own account.
//
// What must hold: a bad ACCEPT changes nothing, and no task reaches its agent before every
// task of its launch is committed.

import { isTerminal, type TaskInfo } from '../../shared/agent-messages.ts';
import { CairnError } from '../../shared/errors.ts';
import { Resources } from '../../shared/resources.ts';
import type { TaskSpec } from '../scheduler-calls.ts';
import type { OutstandingOffer } from '../offers.ts';
import type { TaskRecord } from '../registry/commands.ts';
import { withPullAuth } from './pull-auth.ts';
import type { KillReason, LeaderState } from './leader-state.ts';
import type { SchedulerCall } from './messages.ts';
import { statusEvent } from './scheduler-events.ts';
import { masterUpdate } from './updates.ts';

export function accept(leader: LeaderState, call: Extract<SchedulerCall, { type: 'ACCEPT' }>): void {
  const state = leader.registry();
  // Validate everything first: a bad ACCEPT changes nothing and keeps the offers outstanding.
  const offers: OutstandingOffer[] = call.offerIds.map((id, i) => {
    const o = leader.offers.get(id);
    const field = `accept.offer_ids[${i}]`;
    if (!o) {
      if (leader.rescinded.has(id)) throw new CairnError('CAIRN_OFFER_RESCINDED', `offer ${id} was rescinded`, field);
      throw new CairnError('CAIRN_UNKNOWN_OFFER', `offer ${id} is not outstanding`, field);
    }
    if (o.frameworkId !== call.frameworkId) throw new CairnError('CAIRN_UNKNOWN_OFFER', `offer ${id} was made to another framework`, field);
    return o;
  });
  if (new Set(call.offerIds).size !== call.offerIds.length) throw new CairnError('CAIRN_BAD_REQUEST', 'an offer id appears twice', 'accept.offer_ids');
  if (offers.length === 0) throw new CairnError('CAIRN_BAD_REQUEST', 'ACCEPT needs at least one offer id', 'accept.offer_ids');
  const agentId = offers[0].agentId;
  if (offers.some((o) => o.agentId !== agentId)) throw new CairnError('CAIRN_BAD_REQUEST', 'all offers of one ACCEPT must be for the same agent', 'accept.offer_ids');
  const offered = offers.reduce((acc, o) => acc.add(o.resources), Resources.EMPTY);
  let used = Resources.EMPTY;
  const seen = new Set<string>();
  call.tasks.forEach((t, i) => {
    const field = `accept.operations.launch.task_infos[${i}]`;
    if (t.agentId !== agentId) throw new CairnError('CAIRN_BAD_REQUEST', `agent ${t.agentId} is not the offers' agent ${agentId}`, `${field}.agent_id`);
    if (seen.has(t.taskId) || leader.launching.has(t.taskId) || state.tasks.has(t.taskId)) {
      throw new CairnError('CAIRN_DUPLICATE_TASK', `task id '${t.taskId}' is already in use`, `${field}.task_id`);
    }
    seen.add(t.taskId);
    used = used.add(t.resources);
    if (!offered.contains(used)) {
      throw new CairnError('CAIRN_INSUFFICIENT_RESOURCES', `tasks ask ${used.toString()} but the offers hold ${offered.toString()}`, `${field}.resources`);
    }
  });
  for (const o of offers) leader.offers.remove(o.id);
  if (call.tasks.length > 0) leader.allocator.clearEarmark(agentId, call.frameworkId);
  const remaining = offered.subtract(used);
  if (!remaining.isEmpty()) {
    leader.allocator.recoverResources(call.frameworkId, agentId, remaining, call.refuseMs ?? leader.config.defaultRefuseMs, leader.nowMs);
  }
  leader.requestAllocation();
  // Tasks refused on their own at the edge (scheduler-calls.ts): each is answered TASK_ERROR, as
  // Mesos answers an invalid task, and the rest of the ACCEPT goes ahead. The message names
  // the field at fault, as a refused call's answer does.
  for (const r of call.refused ?? []) leader.toFramework(call.frameworkId, statusEvent(r.taskId, r.agentId ?? agentId, 'TASK_ERROR', `${r.field}: ${r.message}`, r.reason ?? 'REASON_TASK_INVALID', leader.nowMs));
  if (call.tasks.length === 0) return;
  leader.metrics.tasksLaunched += call.tasks.length;
  launch(leader, call.frameworkId, agentId, call.tasks);
}

/** Proposes every task of one ACCEPT; the launch goes to the agent once every one is durable, in one frame. */
function launch(leader: LeaderState, frameworkId: string, agentId: string, tasks: TaskSpec[]): void {
  let waiting = tasks.length;
  let failed = false;
  const done = () => {
    if (--waiting > 0) return;
    const state = leader.registry();
    for (const t of tasks) {
      leader.launching.delete(t.taskId);
      // A launch that never reached the registry gives back what it took.
      if (!state.tasks.has(t.taskId) && leader.allocator.hasAgent(agentId) && leader.allocator.hasFramework(frameworkId)) {
        leader.allocator.recoverResources(frameworkId, agentId, t.resources, 0, leader.nowMs);
        leader.requestAllocation();
      }
    }
    if (failed) {
      leader.log('warn', 'launch not recorded; tasks not started', { frameworkId });
      return;
    }
    sendLaunch(leader, frameworkId, agentId, tasks);
  };
  for (const t of tasks) {
    leader.launching.set(t.taskId, { agentId, frameworkId, resources: t.resources });
    leader.propose({
      type: 'task_launched',
      task: {
        id: t.taskId,
        name: t.name,
        frameworkId,
        agentId,
        resources: t.resources.toString(),
        command: t.command,
        labels: t.labels,
        killGraceMs: t.killGraceMs,
        ...(t.container ? { container: t.container } : {}),
        ...(t.healthCheck ? { healthCheck: t.healthCheck } : {}),
        launchedAtMs: leader.nowMs,
      },
      atMs: leader.nowMs,
    }, done, (message) => {
      failed = true;
      leader.log('warn', 'task launch not recorded', { taskId: t.taskId, err: message });
      done();
    });
  }
}

function sendLaunch(leader: LeaderState, frameworkId: string, agentId: string, tasks: TaskSpec[]): void {
  const state = leader.registry();
  // A task killed (or written off) between its proposal and now is not started.
  const live = tasks.filter((t) => {
    const r = state.tasks.get(t.taskId);
    return r !== undefined && r.state === 'TASK_STAGING';
  });
  if (live.length === 0) return;
  if (!leader.links.has(agentId)) {
    for (const t of live) masterUpdate(leader, t.taskId, 'TASK_LOST', 'agent is not connected', 'REASON_AGENT_DISCONNECTED');
    return;
  }
  const frameworkName = state.frameworks.get(frameworkId)?.name ?? '';
  // The image's registry credential goes to the agent with this launch and is kept nowhere.
  const containers = new Map<string, TaskInfo['container']>();
  const launchable = live.filter((t) => {
    if (!t.container) return true;
    const resolved = withPullAuth(t.container, state.secrets);
    if (!resolved.ok) masterUpdate(leader, t.taskId, 'TASK_FAILED', resolved.message, 'REASON_CONTAINER_LAUNCH_FAILED');
    else containers.set(t.taskId, resolved.container);
    return resolved.ok;
  });
  if (launchable.length === 0) return;
  const infos: TaskInfo[] = launchable.map((t) => ({
    taskId: t.taskId,
    frameworkId,
    name: t.name,
    resources: t.resources.toString(),
    command: t.command,
    killGraceMs: t.killGraceMs,
    labels: t.labels,
    container: containers.get(t.taskId) ?? null,
    dnsName: leader.taskDnsName?.(t.name, frameworkName) ?? '',
    user: state.frameworks.get(frameworkId)?.user ?? '',
    principal: leader.taskPrincipal?.(frameworkId, t.labels) ?? '',
    healthCheck: t.healthCheck ?? null,
  }));
  leader.toAgent(agentId, { launch: { tasks: infos } });
}

export function decline(leader: LeaderState, call: Extract<SchedulerCall, { type: 'DECLINE' }>): void {
  for (const id of call.offerIds) {
    const o = leader.offers.get(id);
    if (!o || o.frameworkId !== call.frameworkId) continue; // Mesos ignores unknown offers here
    leader.offers.remove(id);
    leader.allocator.recoverResources(o.frameworkId, o.agentId, o.resources, call.refuseMs ?? leader.config.defaultRefuseMs, leader.nowMs);
  }
  leader.requestAllocation();
}

/** A framework's KILL: a task it does not have is answered TASK_LOST, as Mesos does. */
export function frameworkKill(leader: LeaderState, call: Extract<SchedulerCall, { type: 'KILL' }>): void {
  const task = leader.registry().tasks.get(call.taskId);
  if (!task || task.frameworkId !== call.frameworkId) {
    leader.toFramework(call.frameworkId, statusEvent(call.taskId, undefined, 'TASK_LOST', 'unknown task', 'REASON_RECONCILIATION', leader.nowMs));
    return;
  }
  killTask(leader, task);
}

/** Asks the task's agent to kill it (operator, framework or preemption); kept for the agent while it has no connection. */
export function killTask(leader: LeaderState, task: TaskRecord, why?: KillReason): void {
  if (isTerminal(task.state)) return;
  const kill = { taskId: task.id, frameworkId: task.frameworkId, graceMs: why?.graceMs ?? task.killGraceMs, ...(why ? { reason: why.reason, message: why.message } : {}) };
  if (!leader.toAgent(task.agentId, { kill })) leader.pendingKills.set(task.id, why);
}
