// Agents: connections, the frames they send, registration (and re-registration with the
// tasks an agent still runs), a successor at a known agent's address, and each agent's place
// in the allocator. Liveness (pings, gossip) is agent-liveness.ts.

import { isTerminal, NOT_DRAINING, type DrainOrder, type Register } from '../../shared/agent-messages.ts';
import { CairnError } from '../../shared/errors.ts';
import { randomUuid } from '../../shared/random.ts';
import { Resources } from '../../shared/resources.ts';
import type { AgentDrain } from '../registry/commands.ts';
import type { RegistryEvent } from '../registry/state-machine.ts';
import { recoverOffers } from './allocation.ts';
import type { AgentConn, LeaderState } from './leader-state.ts';
import type { ConnId, LeaderInput } from './messages.ts';
import { agentStatusUpdate, forwardEvents } from './updates.ts';

type LeaderAgentFrame = Extract<LeaderInput, { type: 'agent_frame' }>['frame'];

/** Agents known from before a restart or a leader change: heard from now, findable by address. */
export function restoreAgents(leader: LeaderState): void {
  for (const agent of leader.registry().agents.values()) {
    leader.lastSeenMs.set(agent.id, leader.nowMs);
    leader.agentAt.set(addressKey(agent.ip, agent.httpPort, agent.hostname), agent.id);
  }
}

export function agentConnected(leader: LeaderState, input: Extract<LeaderInput, { type: 'agent_connected' }>): void {
  leader.metrics.agentConnections++;
  leader.conns.set(input.conn, { conn: input.conn, remoteAddress: input.remoteAddress, principal: input.principal, agentId: undefined, missedPings: 0, awaitingPong: false, closed: false });
}

export function agentDisconnected(leader: LeaderState, conn: ConnId): void {
  const c = leader.conns.get(conn);
  if (!c) return;
  c.closed = true;
  leader.conns.delete(conn);
  if (c.agentId && leader.links.get(c.agentId) === c) {
    leader.links.delete(c.agentId);
    leader.usage.delete(c.agentId);
    leader.lastSeenMs.set(c.agentId, leader.nowMs);
  }
}

export function badAgentFrame(leader: LeaderState, conn: ConnId, err: CairnError): void {
  const c = leader.conns.get(conn);
  leader.metrics.badAgentFrames++;
  leader.log('warn', 'bad frame from agent; closing its connection', { remote: c?.remoteAddress, err: err.message });
  if (!c) return;
  leader.sendConn(c, { error: { code: err.code, message: err.message } });
  leader.closeConn(c, 1002, err.code);
}

export function agentFrame(leader: LeaderState, conn: ConnId, frame: LeaderAgentFrame): void {
  const c = leader.conns.get(conn);
  if (!c || c.closed) return;
  try {
    if ('register' in frame) registerAgent(leader, c, frame.register);
    else if (!c.agentId) throw new CairnError('CAIRN_BAD_FRAME', 'the first frame must be register', 'frame');
    else if ('statusUpdate' in frame) agentStatusUpdate(leader, c, c.agentId, frame.statusUpdate);
    else if ('pong' in frame) agentPong(leader, c, c.agentId);
    else if ('usage' in frame) {
      if (leader.links.get(c.agentId) === c) leader.usage.set(c.agentId, frame.usage);
    }
  } catch (err) {
    badAgentFrame(leader, conn, err instanceof CairnError ? err : new CairnError('CAIRN_BAD_FRAME', String(err), 'frame'));
  }
}

function registerAgent(leader: LeaderState, c: AgentConn, reg: Register): void {
  const total = Resources.parse(reg.resources, 'register.resources');
  if (!reg.hostname) throw new CairnError('CAIRN_BAD_FRAME', 'hostname is required', 'register.hostname');
  const state = leader.registry();
  const known = reg.agentId !== '' ? state.agents.get(reg.agentId) : undefined;
  // An agent speaks only for itself (Kubernetes' NodeRestriction): an id registered under
  // one credential is never taken over with another, which would disconnect the real agent.
  if (known?.principal !== undefined && known.principal !== c.principal) {
    throw new CairnError('CAIRN_FORBIDDEN', `agent ${known.id} is registered by principal '${known.principal}', not '${c.principal}'`, 'register.agent_id');
  }
  const agentId = reg.agentId !== '' ? reg.agentId : `${randomUuid(leader.random)}-S0`;
  const previous = leader.links.get(agentId);
  if (previous && previous !== c) {
    leader.closeConn(previous, 1000, 'replaced by a newer connection');
    leader.links.delete(agentId);
  }
  const now = leader.nowMs;
  const ip = reg.ip || c.remoteAddress;
  if (reg.agentId === '') removeSuperseded(leader, ip, reg.httpPort, reg.hostname, c.principal);
  const activeBefore = known ? state.activeTasksOn(agentId).length : 0;
  leader.propose({
    type: 'agent_registered',
    agent: {
      id: agentId,
      hostname: reg.hostname,
      ip,
      httpPort: reg.httpPort,
      resources: total.toString(),
      attributes: Object.fromEntries(reg.attributes.map((a) => [a.name, a.value])),
      registeredAtMs: now,
      ...(reg.isolation ? { isolation: reg.isolation } : {}),
      ...(reg.https ? { https: true } : {}),
      ...(c.principal !== '' ? { principal: c.principal } : {}),
    },
    // Sent whenever the agent names an id: the state it applies to may know the agent even if
    // this (possibly older) view does not.
    runningTasks: reg.agentId !== '' ? reg.tasks.map((t) => ({ taskId: t.taskId, state: t.state })) : undefined,
    uuids: leader.uuids(activeBefore),
    atMs: now,
  }, (events) => agentRegistered(leader, c, agentId, reg, total, !!known, events));
}

/**
 * An agent that registers without an id at the address of a known agent that is not
 * connected is that agent's successor (its work dir was wiped, or it never heard the id it
 * was given): the old one is removed, its tasks GONE, as Mesos does for a new agent at a
 * registered agent's address. Otherwise it would stay unreachable for ever, and so would
 * its tasks.
 */
function removeSuperseded(leader: LeaderState, ip: string, httpPort: number, hostname: string, principal: string): void {
  const state = leader.registry();
  const known = leader.agentAt.get(addressKey(ip, httpPort, hostname));
  const a = known !== undefined ? state.agents.get(known) : undefined;
  // Only an agent of the same principal succeeds one: another credential may not remove it.
  if (a && a.ip === ip && a.httpPort === httpPort && a.hostname === hostname && !leader.links.has(a.id) && (a.principal ?? principal) === principal) {
    const agentId = a.id;
    leader.log('warn', 'a new agent registers at the address of an old one: removing the old one', { agentId, host: hostname, ip, httpPort });
    recoverOffers(leader, (o) => o.agentId === agentId, true);
    if (leader.allocator.hasAgent(agentId)) leader.allocator.setAgentActive(agentId, false);
    leader.propose({ type: 'agent_removed', agentId, uuids: leader.uuids(state.activeTasksOn(agentId).length), atMs: leader.nowMs, registrations: a.registrations ?? 0 }, (events) => {
      if (leader.registry().agents.has(agentId)) return; // it came back meanwhile: nothing was removed
      if (leader.allocator.hasAgent(agentId)) leader.allocator.removeAgent(agentId);
      leader.lastSeenMs.delete(agentId);
      forwardEvents(leader, events);
    });
  }
}

function agentRegistered(leader: LeaderState, c: AgentConn, agentId: string, reg: Register, total: Resources, reregistered: boolean, events: RegistryEvent[]): void {
  const state = leader.registry();
  const record = state.agents.get(agentId);
  if (record) leader.agentAt.set(addressKey(record.ip, record.httpPort, record.hostname), agentId);
  leader.lastSeenMs.set(agentId, leader.nowMs);
  if (c.closed) {
    // The connection went away before its registration was durable; the agent will
    // register again. Its updates still go to frameworks.
    forwardEvents(leader, events);
    return;
  }
  c.agentId = agentId;
  const previous = leader.links.get(agentId);
  if (previous && previous !== c) leader.closeConn(previous, 1000, 'replaced by a newer connection');
  leader.links.set(agentId, c);
  leader.sendConn(c, {
    registered: {
      agentId,
      lostTaskIds: events.filter((e) => e.update.state === 'TASK_LOST').map((e) => e.task.id),
      pingIntervalMs: leader.config.pingIntervalMs,
      drain: drainOrder(state.agents.get(agentId)?.drain),
    },
  });
  forwardEvents(leader, events);
  // Tasks the agent runs that the master does not know of (or that were killed or written
  // off meanwhile) must not keep running unaccounted for.
  for (const t of reg.tasks) {
    const task = state.tasks.get(t.taskId);
    if (!task || task.agentId !== agentId || isTerminal(task.state) || leader.pendingKills.has(t.taskId)) {
      const why = leader.pendingKills.get(t.taskId);
      leader.pendingKills.delete(t.taskId);
      leader.sendConn(c, { kill: { taskId: t.taskId, frameworkId: t.frameworkId, graceMs: why?.graceMs ?? task?.killGraceMs ?? 0, ...(why ? { reason: why.reason, message: why.message } : {}) } });
    }
  }
  addAgentToAllocator(leader, agentId, total);
  leader.log('info', 'agent registered', { agentId, principal: c.principal, host: reg.hostname, resources: total.toString(), reregistered });
  leader.requestAllocation();
}

function addAgentToAllocator(leader: LeaderState, agentId: string, total: Resources): void {
  const state = leader.registry();
  recoverOffers(leader, (o) => o.agentId === agentId, true);
  if (leader.allocator.hasAgent(agentId)) leader.allocator.removeAgent(agentId);
  let used = Resources.EMPTY;
  const usedBy: { frameworkId: string; resources: Resources }[] = [];
  for (const t of state.activeTasksOn(agentId)) {
    const r = Resources.parse(t.resources);
    used = used.add(r);
    usedBy.push({ frameworkId: t.frameworkId, resources: r });
  }
  for (const [taskId, l] of leader.launching) {
    if (l.agentId !== agentId || state.tasks.has(taskId)) continue;
    used = used.add(l.resources);
    usedBy.push({ frameworkId: l.frameworkId, resources: l.resources });
  }
  leader.allocator.addAgent(agentId, total, used, usedBy.filter((u) => frameworkInAllocator(leader, u.frameworkId)));
  if (state.agents.get(agentId)?.drain) leader.allocator.setAgentActive(agentId, false);
}

function frameworkInAllocator(leader: LeaderState, frameworkId: string): boolean {
  const state = leader.registry();
  const fw = state.frameworks.get(frameworkId);
  return !!fw && (fw.removedAtMs === undefined || state.activeTasksOf(frameworkId).length > 0);
}

function agentPong(leader: LeaderState, c: AgentConn, agentId: string): void {
  c.awaitingPong = false;
  c.missedPings = 0;
  leader.lastSeenMs.set(agentId, leader.nowMs);
}

/** A drain as the agent is told it (absent: not draining). */
export function drainOrder(drain: AgentDrain | undefined): DrainOrder {
  if (!drain) return NOT_DRAINING;
  return { draining: true, hasDeadline: drain.deadlineAtMs !== null, deadlineAtMs: drain.deadlineAtMs ?? 0 };
}

function addressKey(ip: string, httpPort: number, hostname: string): string {
  return `${ip}|${httpPort}|${hostname}`;
}
