// Preemptions the leader carries out: a framework's REQUEST for a gang it cannot place is
// decided (preemption.ts), the decision made durable as a record, then its victims killed and
// the freed agents earmarked for the preemptor. A new leader carries on from the records.

import { isTerminal } from '../../shared/agent-messages.ts';
import { randomUuid } from '../../shared/random.ts';
import type { PreemptionRecord } from '../registry/commands.ts';
import { recoverOffers } from './allocation.ts';
import { killTask } from './launches.ts';
import type { LeaderState } from './leader-state.ts';
import type { SchedulerCall } from './messages.ts';
import { classOf, decidePreemption } from './preemption.ts';

/**
 * A gang the framework cannot place: room is made for it by preemption if its class (or
 * its role's guarantee) allows. One preemption per framework at a time; the agents freed
 * are earmarked for it, and offers of them to others are rescinded.
 */
export function request(leader: LeaderState, call: Extract<SchedulerCall, { type: 'REQUEST' }>): void {
  const state = leader.registry();
  const fw = state.frameworks.get(call.frameworkId)!;
  if (leader.preempting.has(call.frameworkId)) return;
  const claimed = victimsStillRunning(leader);
  for (const p of leader.preempting.values()) for (const v of p.victims) claimed.add(v);
  const decision = decidePreemption({
    state,
    classes: leader.config.priorityClasses,
    quotas: leader.quotas,
    agentUsable: (agentId) => leader.allocator.hasAgent(agentId) && leader.links.has(agentId),
    launching: leader.launching.values(),
    claimed,
  }, call.frameworkId, call.members);
  if (decision.kind === 'none') {
    leader.log('debug', 'no preemption for a request', { frameworkId: call.frameworkId, for: call.for, why: decision.why });
    return;
  }
  const untilMs = leader.nowMs + leader.config.preemptionGraceMs + leader.config.earmarkMs;
  if (decision.kind === 'fits') {
    makeRoom(leader, call.frameworkId, decision.agentIds, untilMs);
    return;
  }
  const classes = leader.config.priorityClasses;
  const record: PreemptionRecord = {
    id: randomUuid(leader.random),
    atMs: leader.nowMs,
    cause: decision.cause,
    preemptor: { frameworkId: fw.id, name: fw.name, role: fw.role, priorityClass: classOf(fw, classes), for: call.for },
    victims: decision.victims.map((t) => {
      const vf = state.frameworks.get(t.frameworkId);
      return { taskId: t.id, frameworkId: t.frameworkId, agentId: t.agentId, role: vf?.role ?? '*', priorityClass: classOf(vf, classes) };
    }),
  };
  const entry = { victims: new Set(record.victims.map((v) => v.taskId)), untilMs };
  leader.preempting.set(call.frameworkId, entry);
  const message = preemptionMessage(record);
  leader.propose({ type: 'preemption', record }, () => {
    leader.metrics.countPreemption(record);
    const now = leader.registry();
    for (const v of record.victims) {
      const t = now.tasks.get(v.taskId);
      if (!t || isTerminal(t.state)) {
        entry.victims.delete(v.taskId);
        continue;
      }
      killTask(leader, t, { reason: 'REASON_CONTAINER_PREEMPTED', message, graceMs: leader.config.preemptionGraceMs });
    }
    makeRoom(leader, call.frameworkId, decision.agentIds, untilMs);
    leader.log('warn', 'tasks preempted', { preemptor: fw.id, for: call.for, cause: decision.cause, victims: record.victims.map((v) => v.taskId) });
    if (entry.victims.size === 0) leader.preempting.delete(call.frameworkId);
  }, () => {
    leader.preempting.delete(call.frameworkId);
  });
}

/**
 * Victims of committed preemptions that have not ended. Never chosen again, even once their
 * preemptor stopped waiting for them (an agent gone quiet) or an earlier leader decided them.
 */
function victimsStillRunning(leader: LeaderState): Set<string> {
  const state = leader.registry();
  const out = new Set<string>();
  for (const r of state.preemptions) {
    for (const v of r.victims) {
      const t = state.tasks.get(v.taskId);
      if (t && !isTerminal(t.state)) out.add(v.taskId);
    }
  }
  return out;
}

/**
 * A new leader carries out the preemptions committed under an earlier one: the record is the
 * decision, and the leader that made it may have gone before its kills reached the agents.
 * Victims still running are killed as their agents register, and their preemptor waits for
 * them as it would have.
 */
export function resumePreemptions(leader: LeaderState): void {
  const state = leader.registry();
  const untilMs = leader.nowMs + leader.config.preemptionGraceMs + leader.config.earmarkMs;
  for (const r of state.preemptions) {
    const message = preemptionMessage(r);
    for (const v of r.victims) {
      const t = state.tasks.get(v.taskId);
      if (!t || isTerminal(t.state)) continue;
      leader.pendingKills.set(t.id, { reason: 'REASON_CONTAINER_PREEMPTED', message, graceMs: leader.config.preemptionGraceMs });
      const entry = leader.preempting.get(r.preemptor.frameworkId) ?? { victims: new Set<string>(), untilMs };
      entry.victims.add(t.id);
      leader.preempting.set(r.preemptor.frameworkId, entry);
    }
  }
}

/** A victim that never ends (its agent gone quiet) does not block its preemptor for ever. */
export function expirePreemptions(leader: LeaderState): void {
  for (const [preemptor, p] of leader.preempting) if (leader.nowMs >= p.untilMs) leader.preempting.delete(preemptor);
}

/** Keeps the agents for the framework a while, and takes back what others were offered of them. */
function makeRoom(leader: LeaderState, frameworkId: string, agentIds: string[], untilMs: number): void {
  const agents = new Set(agentIds);
  for (const a of agents) if (leader.allocator.hasAgent(a)) leader.allocator.earmark(a, frameworkId, untilMs);
  recoverOffers(leader, (o) => agents.has(o.agentId) && o.frameworkId !== frameworkId, true);
  leader.allocator.revive(frameworkId);
  leader.requestAllocation();
}

/** What a preemption's victims are told, and their frameworks with them. */
function preemptionMessage(r: PreemptionRecord): string {
  const p = r.preemptor;
  const what = p.for !== '' ? p.for : `framework ${p.name || p.frameworkId}`;
  return r.cause === 'priority' ? `preempted for ${what} (class ${p.priorityClass}, role ${p.role})` : `preempted for ${what}: role ${p.role} takes back its guarantee`;
}
