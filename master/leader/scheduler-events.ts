// The scheduler-API events the leader sends frameworks, built from registry records: pure
// functions, so the core and its tests build exactly the JSON a Mesos framework reads.

import type { TaskState } from '../../shared/agent-messages.ts';
import type { OfferJson, SchedulerEvent, TaskStatusJson } from '../../shared/mesos-v1.ts';
import type { Resources } from '../../shared/resources.ts';
import type { AgentRecord, PendingUpdate, TaskRecord } from '../registry/commands.ts';

/** UPDATE for a task's status update as the registry holds it (uuid set: to be acknowledged). */
export function updateEvent(t: TaskRecord, u: PendingUpdate): SchedulerEvent {
  const status: TaskStatusJson = {
    task_id: { value: t.id },
    state: u.state,
    agent_id: { value: t.agentId },
    message: u.message,
    source: u.source,
    uuid: u.uuid,
    timestamp: u.atMs / 1000,
  };
  if (u.reason) status.reason = u.reason;
  if (u.healthy !== undefined) status.healthy = u.healthy;
  return { type: 'UPDATE', update: { status } };
}

/** UPDATE the master answers with on its own (reconciliation): no uuid, nothing to acknowledge. */
export function statusEvent(taskId: string, agentId: string | undefined, state: TaskState, message: string, reason: string, nowMs: number, healthy?: boolean): SchedulerEvent {
  const status: TaskStatusJson = { task_id: { value: taskId }, state, message, source: 'SOURCE_MASTER', reason, timestamp: nowMs / 1000 };
  if (agentId) status.agent_id = { value: agentId };
  if (healthy !== undefined) status.healthy = healthy;
  return { type: 'UPDATE', update: { status } };
}

export function offerJson(offerId: string, frameworkId: string, role: string, agent: AgentRecord, resources: Resources): OfferJson {
  return {
    id: { value: offerId },
    framework_id: { value: frameworkId },
    agent_id: { value: agent.id },
    hostname: agent.hostname,
    url: { scheme: agent.https ? 'https' : 'http', address: { hostname: agent.hostname, ip: agent.ip, port: agent.httpPort }, path: '/' },
    resources: resources.toMesos(role),
    attributes: Object.entries(agent.attributes).map(([name, value]) => ({ name, type: 'TEXT' as const, text: { value } })),
  };
}
