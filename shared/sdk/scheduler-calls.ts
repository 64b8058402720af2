// The scheduler calls a framework sends once subscribed, built from what it means to say.
// One definition of each call's shape: the HTTP client (scheduler-client.ts) and the
// framework runtime (shared/framework-runtime/) both send these. Pure.

import type { Resources } from '../resources.ts';
import type { Filters, Id, OfferOperationJson, SchedulerCall, TaskInfoJson, TaskStatusJson } from '../mesos-v1.ts';

/** Launches `tasks` on the offers (all on one agent); no task at all accepts nothing. */
export function acceptCall(frameworkId: Id, offerIds: string[], tasks: TaskInfoJson[], filters?: Filters): SchedulerCall {
  const operations: OfferOperationJson[] = tasks.length > 0 ? [{ type: 'LAUNCH', launch: { task_infos: tasks } }] : [];
  return acceptOperationsCall(frameworkId, offerIds, operations, filters);
}

export function acceptOperationsCall(frameworkId: Id, offerIds: string[], operations: OfferOperationJson[], filters?: Filters): SchedulerCall {
  return {
    type: 'ACCEPT',
    framework_id: frameworkId,
    accept: { offer_ids: offerIds.map((value) => ({ value })), operations, ...(filters ? { filters } : {}) },
  };
}

export function declineCall(frameworkId: Id, offerIds: string[], refuseSeconds?: number): SchedulerCall {
  return {
    type: 'DECLINE',
    framework_id: frameworkId,
    decline: { offer_ids: offerIds.map((value) => ({ value })), ...(refuseSeconds !== undefined ? { filters: { refuse_seconds: refuseSeconds } } : {}) },
  };
}

export function reviveCall(frameworkId: Id, roles?: string[]): SchedulerCall {
  return { type: 'REVIVE', framework_id: frameworkId, ...(roles ? { revive: { roles } } : {}) };
}

export function suppressCall(frameworkId: Id, roles?: string[]): SchedulerCall {
  return { type: 'SUPPRESS', framework_id: frameworkId, ...(roles ? { suppress: { roles } } : {}) };
}

/** Mesos' REQUEST: room for a gang the master could not place; `forWhat` names the work. */
export function requestRoomCall(frameworkId: Id, members: Resources[], forWhat: string): SchedulerCall {
  return {
    type: 'REQUEST',
    framework_id: frameworkId,
    request: { requests: members.map((m) => ({ resources: m.toMesos() })), for: forWhat },
  };
}

export function killCall(frameworkId: Id, taskId: string, agentId?: string): SchedulerCall {
  return {
    type: 'KILL',
    framework_id: frameworkId,
    kill: { task_id: { value: taskId }, ...(agentId ? { agent_id: { value: agentId } } : {}) },
  };
}

/** The acknowledgement of an update that carries a uuid and names its agent. */
export function acknowledgeCall(frameworkId: Id, status: TaskStatusJson & { uuid: string; agent_id: Id }): SchedulerCall {
  return {
    type: 'ACKNOWLEDGE',
    framework_id: frameworkId,
    acknowledge: { agent_id: { value: status.agent_id.value }, task_id: { value: status.task_id.value }, uuid: status.uuid },
  };
}

/** The latest state of the given tasks; none at all asks for every task (implicit). */
export function reconcileCall(frameworkId: Id, tasks: { taskId: string; agentId?: string }[] = []): SchedulerCall {
  return {
    type: 'RECONCILE',
    framework_id: frameworkId,
    reconcile: { tasks: tasks.map((t) => ({ task_id: { value: t.taskId }, ...(t.agentId ? { agent_id: { value: t.agentId } } : {}) })) },
  };
}

export function teardownCall(frameworkId: Id): SchedulerCall {
  return { type: 'TEARDOWN', framework_id: frameworkId };
}
