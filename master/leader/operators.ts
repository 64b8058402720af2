// Operator calls: kill a task, drain and undrain an agent, tear a framework down, set a role's
// quota or weight. Each is checked before it is proposed (an invalid call throws naming the
// field, and nothing changes) and answered once what it changes is durable.

import { NOT_DRAINING } from '../../shared/agent-messages.ts';
import { CairnError } from '../../shared/errors.ts';
import { drainOrder } from './agents.ts';
import { recoverOffers } from './allocation.ts';
import { killTask } from './launches.ts';
import type { LeaderState } from './leader-state.ts';
import type { OperatorCall, RequestId } from './messages.ts';
import { checkQuota, setQuotas } from './quotas.ts';
import { teardown } from './subscriptions.ts';

export function operator(leader: LeaderState, request: RequestId, call: OperatorCall): void {
  const state = leader.registry();
  switch (call.type) {
    case 'kill_task': {
      const task = state.tasks.get(call.taskId);
      if (!task) throw new CairnError('CAIRN_UNKNOWN_TASK', `no task '${call.taskId}'`, 'taskId');
      killTask(leader, task);
      leader.reply(request, { type: 'done' });
      return;
    }
    case 'drain_agent':
      if (!state.agents.has(call.agentId)) throw new CairnError('CAIRN_UNKNOWN_AGENT', `no agent '${call.agentId}'`, 'agentId');
      return drain(leader, request, call.agentId, call.deadlineAtMs);
    case 'teardown_framework': {
      const fw = state.frameworks.get(call.frameworkId);
      if (!fw || fw.removedAtMs !== undefined) throw new CairnError('CAIRN_UNKNOWN_FRAMEWORK', `no framework '${call.frameworkId}'`, 'frameworkId');
      teardown(leader, call.frameworkId, 'torn down by an operator', request);
      return;
    }
    case 'undrain_agent': {
      if (!state.agents.has(call.agentId)) throw new CairnError('CAIRN_UNKNOWN_AGENT', `no agent '${call.agentId}'`, 'agentId');
      const agentId = call.agentId;
      leader.propose({ type: 'agent_drain', agentId, drain: null }, () => {
        if (leader.toAgent(agentId, { drain: NOT_DRAINING }) && leader.allocator.hasAgent(agentId)) leader.allocator.setAgentActive(agentId, true);
        leader.log('info', 'agent drain ended', { agentId });
        leader.requestAllocation();
        leader.reply(request, { type: 'done' });
      }, (message) => leader.replyFailed(request, message));
      return;
    }
    case 'set_quota':
      checkQuota(leader, call.role, call.quota);
      leader.propose({ type: 'quota_set', role: call.role, quota: call.quota }, () => {
        setQuotas(leader, [...leader.registry().quotas.values()]);
        leader.requestAllocation();
        leader.reply(request, { type: 'done' });
      }, (message) => leader.replyFailed(request, message));
      return;
    case 'set_role_weight': {
      // Checked before it is durable: a weight the allocator refuses must never reach the log.
      if (!Number.isFinite(call.weight) || call.weight <= 0) {
        throw new CairnError('CAIRN_BAD_REQUEST', `role '${call.role}' needs a finite weight > 0, got ${call.weight}`, 'weight');
      }
      leader.propose({ type: 'role_weight_set', role: call.role, weight: call.weight }, () => {
        leader.allocator.setRoleWeight(call.role, call.weight);
        leader.requestAllocation();
        leader.reply(request, { type: 'done' });
      }, (message) => leader.replyFailed(request, message));
      return;
    }
  }
}

/**
 * Drains (Mesos' DRAIN_AGENT, Nomad's node drain): durable first, then no more offers of the
 * agent (outstanding ones rescinded) and the agent told, which refuses new tasks and kills
 * what still runs at the deadline. Draining again moves the deadline.
 */
function drain(leader: LeaderState, request: RequestId, agentId: string, deadlineAtMs: number | null): void {
  leader.propose({ type: 'agent_drain', agentId, drain: { sinceMs: leader.nowMs, deadlineAtMs } }, () => {
    const drain = leader.registry().agents.get(agentId)?.drain;
    if (!drain) {
      leader.emit({ type: 'reply_error', request, error: new CairnError('CAIRN_UNKNOWN_AGENT', `agent '${agentId}' went away during the drain`, 'agentId') });
      return;
    }
    recoverOffers(leader, (o) => o.agentId === agentId, true);
    if (leader.allocator.hasAgent(agentId)) leader.allocator.setAgentActive(agentId, false);
    leader.toAgent(agentId, { drain: drainOrder(drain) });
    leader.log('warn', 'agent draining: no more offers of it', { agentId, deadlineAtMs });
    leader.reply(request, { type: 'drained', drain });
  }, (message) => leader.replyFailed(request, message));
}
