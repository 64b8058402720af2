// Bounds on the strings an agent sends the master, checked as frames arrive (the master
// keeps registrations and status updates in its replicated registry). An id, a name or a
// list beyond its bound refuses the frame (CAIRN_BAD_FRAME naming the field: the agent's
// connection is closed); a status update's message is cut instead, since a refused update
// would be re-sent for ever.

import type { AgentToMaster, RunningTask } from './agent-messages.ts';
import { CairnError } from './errors.ts';

export const AGENT_FRAME_LIMITS = {
  /** Agent, task and framework ids (the scheduler API's bound). */
  id: 255,
  /** Host names, versions, attribute names, status reasons. */
  name: 1024,
  /** Attribute values, the isolation summary, a status update's message (cut, not refused). */
  text: 4096,
  /** Resources in text form (port ranges can be long). */
  resources: 64 * 1024,
  attributes: 256,
  /** Tasks listed in one registration. */
  tasks: 100_000,
} as const;

function bounded(value: unknown, field: string, max: number): void {
  if (typeof value === 'string' && value.length > max) {
    throw new CairnError('CAIRN_BAD_FRAME', `is too long: ${value.length} characters, at most ${max}`, field);
  }
}

function checkTask(t: RunningTask, field: string): void {
  bounded(t.taskId, `${field}.taskId`, AGENT_FRAME_LIMITS.id);
  bounded(t.frameworkId, `${field}.frameworkId`, AGENT_FRAME_LIMITS.id);
  bounded(t.resources, `${field}.resources`, AGENT_FRAME_LIMITS.resources);
}

/** Throws CAIRN_BAD_FRAME naming the field beyond its bound; cuts an over-long status message in place. */
export function checkAgentFrame(frame: AgentToMaster): void {
  const L = AGENT_FRAME_LIMITS;
  if ('register' in frame) {
    const r = frame.register;
    bounded(r.agentId, 'register.agentId', L.id);
    bounded(r.hostname, 'register.hostname', L.name);
    bounded(r.ip, 'register.ip', L.name);
    bounded(r.resources, 'register.resources', L.resources);
    bounded(r.version, 'register.version', L.name);
    bounded(r.isolation, 'register.isolation', L.text);
    const attributes = r.attributes ?? [];
    if (attributes.length > L.attributes) throw new CairnError('CAIRN_BAD_FRAME', `has ${attributes.length} entries, at most ${L.attributes}`, 'register.attributes');
    attributes.forEach((a, i) => {
      bounded(a.name, `register.attributes[${i}].name`, L.name);
      bounded(a.value, `register.attributes[${i}].value`, L.text);
    });
    const tasks = r.tasks ?? [];
    if (tasks.length > L.tasks) throw new CairnError('CAIRN_BAD_FRAME', `has ${tasks.length} entries, at most ${L.tasks}`, 'register.tasks');
    tasks.forEach((t, i) => checkTask(t, `register.tasks[${i}]`));
  } else if ('statusUpdate' in frame) {
    const u = frame.statusUpdate;
    bounded(u.taskId, 'statusUpdate.taskId', L.id);
    bounded(u.frameworkId, 'statusUpdate.frameworkId', L.id);
    bounded(u.reason, 'statusUpdate.reason', L.name);
    if (typeof u.message === 'string' && u.message.length > L.text) u.message = `${u.message.slice(0, L.text - 3)}...`;
  }
}
