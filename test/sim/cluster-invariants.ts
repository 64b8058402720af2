// What must hold in the whole-cluster simulation. `checkStep` runs after every step of
// simulated time, on every master that currently leads; `checkSettled` runs once the faults
// have stopped and the cluster has gone quiet. Each returns the violations it found, in
// words that say which object broke which rule.

import { isTerminal } from '../../shared/agent-messages.ts';
import { Resources } from '../../shared/resources.ts';
import type { SimAgent } from './cluster-agent.ts';
import type { SimFramework } from './cluster-framework.ts';
import type { SimMaster } from './cluster-master.ts';
import { replicaOfTask } from './cluster-jobs.ts';

const parsed = new Map<string, Resources>();

/** Resources read once per distinct text: the checks run every step over every live task, and tasks share a few shapes. */
export function parseOnce(text: string): Resources {
  let r = parsed.get(text);
  if (r === undefined) {
    r = Resources.parse(text);
    if (parsed.size < 10_000) parsed.set(text, r);
  }
  return r;
}

/**
 * On a leader: what tasks hold on an agent plus what is offered of it never exceeds the
 * agent's total, and no port is held twice (by two offers, or an offer and a task).
 */
export function checkStep(master: SimMaster): string[] {
  const core = master.core;
  if (!core) return [];
  const out: string[] = [];
  const held = new Map<string, { sum: Resources; ports: number; what: string[] }>();
  const hold = (agentId: string, r: Resources, what: string) => {
    const h = held.get(agentId) ?? { sum: Resources.EMPTY, ports: 0, what: [] };
    h.sum = h.sum.add(r);
    h.ports += r.portCount();
    h.what.push(what);
    held.set(agentId, h);
  };
  for (const t of master.state.tasks.values()) {
    if (isTerminal(t.state)) continue;
    hold(t.agentId, parseOnce(t.resources), `task ${t.id}`);
  }
  for (const o of core.offers.all()) hold(o.agentId, o.resources, `offer ${o.id}`);
  for (const [agentId, h] of held) {
    const agent = master.state.agents.get(agentId);
    if (!agent) {
      if (h.what.some((w) => w.startsWith('offer'))) out.push(`master ${master.id}: ${h.what.join(', ')} on unknown agent ${agentId}`);
      continue;
    }
    const total = parseOnce(agent.resources);
    if (!total.contains(h.sum)) out.push(`master ${master.id}: agent ${agentId} holds ${h.sum.toString()} (${h.what.join(', ')}) but has ${total.toString()}`);
    if (h.sum.portCount() !== h.ports) out.push(`master ${master.id}: a port of agent ${agentId} is held twice (${h.what.join(', ')})`);
  }
  return out;
}

/**
 * After the faults: every task of a live framework is in a state its agent agrees with,
 * every update was acknowledged, the framework's last word on each task is the registry's,
 * and nothing still runs that the registry thinks has ended.
 */
export function checkSettled(leader: SimMaster, agents: SimAgent[], frameworks: SimFramework[]): string[] {
  const out: string[] = [];
  const agentById = new Map(agents.map((a) => [a.agentId, a]));
  const live = new Set(frameworks.map((f) => f.frameworkId));
  for (const t of leader.state.tasks.values()) {
    if (!live.has(t.frameworkId)) continue;
    const agent = agentById.get(t.agentId);
    const onAgent = agent?.tasks.get(t.id);
    if (onAgent) {
      const agrees = isTerminal(onAgent.state) ? onAgent.state === t.state : !isTerminal(t.state);
      if (!agrees) out.push(`task ${t.id}: the registry says ${t.state}, its agent ${agent!.hostname} says ${onAgent.state}`);
    } else if (!isTerminal(t.state)) {
      out.push(`task ${t.id}: the registry says ${t.state} but no agent runs it`);
    }
    if (t.unacked) out.push(`task ${t.id}: update ${t.unacked.state} (${t.unacked.uuid}) never acknowledged`);
  }
  for (const fw of frameworks) {
    for (const [taskId, known] of fw.tasks) {
      const t = leader.state.tasks.get(taskId);
      if (t && known.state !== t.state) out.push(`framework ${fw.name}: last heard ${known.state} of task ${taskId}, the registry says ${t.state}`);
    }
  }
  for (const a of agents) {
    for (const t of a.tasks.values()) {
      const r = leader.state.tasks.get(t.taskId);
      if (!isTerminal(t.state) && (!r || isTerminal(r.state))) out.push(`agent ${a.hostname} still runs task ${t.taskId}, which the registry has ${r ? `as ${r.state}` : 'never heard of'}`);
    }
    if (a.pending.size > 0) out.push(`agent ${a.hostname}: ${a.pending.size} status updates never acknowledged`);
  }
  return out;
}

/** Jobs: no replica index of a job runs twice at once, on any agent (up or crashed). */
export function checkReplicasOnce(agents: SimAgent[]): string[] {
  const running = new Map<string, string>();
  const out: string[] = [];
  for (const a of agents) {
    for (const t of a.tasks.values()) {
      if (isTerminal(t.state)) continue;
      const replica = replicaOfTask(t.taskId);
      if (replica === undefined) continue;
      const other = running.get(replica);
      if (other !== undefined) out.push(`replica ${replica} runs twice at once: ${other} and task ${t.taskId} on ${a.hostname}`);
      running.set(replica, `task ${t.taskId} on ${a.hostname}`);
    }
  }
  return out;
}

/** No task id (of those with the prefix) runs on two agents at once: one instance record, one live task. */
export function checkTasksOnce(agents: SimAgent[], prefix: string): string[] {
  const running = new Map<string, string>();
  const out: string[] = [];
  for (const a of agents) {
    for (const t of a.tasks.values()) {
      if (isTerminal(t.state) || !t.taskId.startsWith(prefix)) continue;
      const other = running.get(t.taskId);
      if (other !== undefined) out.push(`task ${t.taskId} runs twice at once: on ${other} and on ${a.hostname}`);
      running.set(t.taskId, a.hostname);
    }
  }
  return out;
}
