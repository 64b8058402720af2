// Framework subscriptions: SUBSCRIBE made durable then answered, failover to a newer stream,
// a stream that ends (the framework's failover timeout starts), heartbeats, and teardown (by
// the framework, an operator, or its failover timeout passing).

import { CairnError } from '../../shared/errors.ts';
import { randomUuid } from '../../shared/random.ts';
import type { FrameworkSpec } from '../scheduler-calls.ts';
import { recoverOffers } from './allocation.ts';
import { killTask } from './launches.ts';
import type { LeaderState, Session } from './leader-state.ts';
import type { RequestId, StreamId } from './messages.ts';
import { classOf } from './preemption.ts';
import { resendTo } from './updates.ts';

/**
 * Frameworks from before a restart or a leader change are known but disconnected until they
 * resubscribe; they get at least the re-register grace to do so.
 */
export function restoreFrameworks(leader: LeaderState): void {
  const state = leader.registry();
  for (const fw of state.frameworks.values()) {
    const active = state.activeTasksOf(fw.id).length > 0;
    if (fw.removedAtMs !== undefined && !active) continue;
    leader.allocator.addFramework(fw.id, fw.role, { gpuAware: fw.capabilities?.includes('GPU_RESOURCES') ?? false, classRank: classRank(leader, fw.priorityClass) });
    leader.allocator.setFrameworkActive(fw.id, false);
    if (fw.removedAtMs === undefined) {
      leader.failoverDeadlines.set(fw.id, leader.nowMs + Math.max(fw.failoverTimeoutS * 1000, leader.config.frameworkReregisterGraceMs));
    }
  }
}

function classRank(leader: LeaderState, priorityClass: string | undefined): number {
  const classes = leader.config.priorityClasses;
  return classes.rank(classes.orDefault(priorityClass));
}

export function subscribe(leader: LeaderState, request: RequestId, stream: StreamId, spec: FrameworkSpec): void {
  const state = leader.registry();
  let frameworkId = spec.id;
  if (frameworkId !== undefined) {
    const existing = state.frameworks.get(frameworkId);
    if (existing?.removedAtMs !== undefined) {
      throw new CairnError('CAIRN_UNKNOWN_FRAMEWORK', `framework ${frameworkId} has been removed and cannot resubscribe`, 'framework_id');
    }
    if (existing && existing.role !== spec.role) {
      throw new CairnError('CAIRN_BAD_REQUEST', `framework ${frameworkId} is in role '${existing.role}'; changing role is not supported`, 'subscribe.framework_info.role');
    }
  } else {
    frameworkId = `${randomUuid(leader.random)}-0000`;
  }
  const classes = leader.config.priorityClasses;
  const priorityClass = classes.resolve(spec.priorityClass, 'subscribe.framework_info.labels');
  const known = state.frameworks.get(frameworkId);
  if (known && classOf(known, classes) !== priorityClass) {
    throw new CairnError('CAIRN_BAD_REQUEST', `framework ${frameworkId} is of class '${classOf(known, classes)}'; changing class is not supported`, 'subscribe.framework_info.labels');
  }
  const id = frameworkId;
  leader.subscribing.set(stream, false);
  leader.propose({
    type: 'framework_subscribed',
    framework: {
      id,
      name: spec.name,
      user: spec.user,
      role: spec.role,
      principal: spec.principal,
      failoverTimeoutS: spec.failoverTimeoutS,
      capabilities: spec.capabilities,
      registeredAtMs: leader.nowMs,
      ...(priorityClass !== classes.defaultClass ? { priorityClass } : {}),
    },
    atMs: leader.nowMs,
  }, () => subscribed(leader, request, stream, id, spec), (message) => {
    leader.subscribing.delete(stream);
    leader.emit({ type: 'reply_error', request, error: new CairnError('CAIRN_NOT_LEADER', `subscription not recorded: ${message}`, 'subscribe') });
  });
}

function subscribed(leader: LeaderState, request: RequestId, stream: StreamId, frameworkId: string, spec: FrameworkSpec): void {
  const closedMeanwhile = leader.subscribing.get(stream) === true;
  leader.subscribing.delete(stream);
  const fw = leader.registry().frameworks.get(frameworkId);
  if (!fw || fw.removedAtMs !== undefined) {
    leader.emit({ type: 'reply_error', request, error: new CairnError('CAIRN_UNKNOWN_FRAMEWORK', `framework ${frameworkId} was removed meanwhile`, 'framework_id') });
    return;
  }
  const old = leader.sessions.get(frameworkId);
  if (old) {
    leader.emit({ type: 'to_framework', stream: old.stream, event: { type: 'ERROR', error: { message: 'framework failed over to a newer subscription' } } });
    leader.emit({ type: 'end_stream', stream: old.stream });
    leader.sessions.delete(frameworkId);
  }
  leader.failoverDeadlines.delete(frameworkId);
  const allocator = leader.allocator;
  const gpuAware = spec.capabilities.includes('GPU_RESOURCES');
  if (allocator.hasFramework(frameworkId) && allocator.isGpuAware(frameworkId) !== gpuAware) {
    recoverOffers(leader, (o) => o.frameworkId === frameworkId, false);
    allocator.setGpuAware(frameworkId, gpuAware);
  }
  if (!allocator.hasFramework(frameworkId)) allocator.addFramework(frameworkId, spec.role, { gpuAware, classRank: classRank(leader, fw.priorityClass) });
  leader.reply(request, { type: 'subscribed', frameworkId });
  if (closedMeanwhile) {
    // Its stream ended before the subscription was durable: it is subscribed and at once
    // disconnected, so it gets its failover timeout as any framework would.
    allocator.setFrameworkActive(frameworkId, false);
    leader.failoverDeadlines.set(frameworkId, leader.nowMs + fw.failoverTimeoutS * 1000);
    return;
  }
  allocator.setFrameworkActive(frameworkId, true);
  leader.sessions.set(frameworkId, { stream, nextHeartbeatMs: leader.nowMs + leader.config.frameworkHeartbeatMs });
  leader.toFramework(frameworkId, { type: 'SUBSCRIBED', subscribed: { framework_id: { value: frameworkId }, heartbeat_interval_seconds: leader.config.frameworkHeartbeatMs / 1000 } });
  resendTo(leader, frameworkId);
  leader.log('info', 'framework subscribed', { frameworkId, framework: spec.name, role: spec.role });
  leader.requestAllocation();
}

export function streamClosed(leader: LeaderState, stream: StreamId): void {
  if (leader.subscribing.has(stream)) {
    leader.subscribing.set(stream, true);
    return;
  }
  let frameworkId: string | undefined;
  for (const [id, s] of leader.sessions) if (s.stream === stream) frameworkId = id;
  if (frameworkId === undefined) return;
  leader.sessions.delete(frameworkId);
  const fw = leader.registry().frameworks.get(frameworkId);
  if (!fw || fw.removedAtMs !== undefined) return;
  leader.log('info', 'framework disconnected', { frameworkId, failoverTimeoutS: fw.failoverTimeoutS });
  leader.allocator.setFrameworkActive(frameworkId, false);
  recoverOffers(leader, (o) => o.frameworkId === frameworkId, false);
  leader.failoverDeadlines.set(frameworkId, leader.nowMs + fw.failoverTimeoutS * 1000);
}

/** The session a call must come from: framework subscribed and stream id matching. */
export function requireSession(leader: LeaderState, frameworkId: string, streamId: StreamId | undefined): Session {
  const fw = leader.registry().frameworks.get(frameworkId);
  if (!fw || fw.removedAtMs !== undefined) throw new CairnError('CAIRN_UNKNOWN_FRAMEWORK', `framework ${frameworkId} is not subscribed`, 'framework_id');
  const s = leader.sessions.get(frameworkId);
  if (!s) throw new CairnError('CAIRN_UNKNOWN_FRAMEWORK', `framework ${frameworkId} has no open subscription`, 'framework_id');
  if (streamId === undefined) throw new CairnError('CAIRN_STREAM_MISMATCH', 'the Mesos-Stream-Id header is required', 'Mesos-Stream-Id');
  if (s.stream !== streamId) throw new CairnError('CAIRN_STREAM_MISMATCH', 'Mesos-Stream-Id does not match the current subscription', 'Mesos-Stream-Id');
  return s;
}

export function teardown(leader: LeaderState, frameworkId: string, why: string, request?: RequestId): void {
  const fw = leader.registry().frameworks.get(frameworkId);
  if (!fw || fw.removedAtMs !== undefined) {
    if (request !== undefined) leader.reply(request, { type: 'done' });
    return;
  }
  leader.log('info', 'removing framework', { frameworkId, why });
  leader.propose({ type: 'framework_removed', frameworkId, atMs: leader.nowMs }, () => {
    const s = leader.sessions.get(frameworkId);
    if (s) {
      leader.emit({ type: 'end_stream', stream: s.stream });
      leader.sessions.delete(frameworkId);
    }
    leader.failoverDeadlines.delete(frameworkId);
    recoverOffers(leader, (o) => o.frameworkId === frameworkId, false);
    const active = leader.registry().activeTasksOf(frameworkId);
    if (leader.allocator.hasFramework(frameworkId)) {
      if (active.length === 0) leader.allocator.removeFramework(frameworkId);
      else leader.allocator.setFrameworkActive(frameworkId, false);
    }
    for (const t of active) killTask(leader, t);
    leader.requestAllocation();
    if (request !== undefined) leader.reply(request, { type: 'done' });
  });
}

/** Removes the frameworks whose failover timeout passed without a new subscription. */
export function expireFailovers(leader: LeaderState): void {
  for (const [frameworkId, deadline] of [...leader.failoverDeadlines]) {
    if (leader.nowMs < deadline) continue;
    leader.failoverDeadlines.delete(frameworkId);
    if (!leader.sessions.has(frameworkId)) teardown(leader, frameworkId, 'failover timeout passed');
  }
}

export function sendHeartbeats(leader: LeaderState): void {
  for (const [frameworkId, s] of leader.sessions) {
    if (leader.nowMs < s.nextHeartbeatMs) continue;
    s.nextHeartbeatMs = leader.nowMs + leader.config.frameworkHeartbeatMs;
    leader.toFramework(frameworkId, { type: 'HEARTBEAT' });
  }
}

/** When the next heartbeat or failover deadline falls (Infinity: none). */
export function nextSubscriptionWakeMs(leader: LeaderState): number {
  let t = Infinity;
  for (const s of leader.sessions.values()) t = Math.min(t, s.nextHeartbeatMs);
  for (const d of leader.failoverDeadlines.values()) t = Math.min(t, d);
  return t;
}
