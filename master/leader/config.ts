// The leader's settings: what the core decides with, each default with its reason. Durations
// carry their unit in the name. Compiled once at the edge (master/server.ts) and never changed.

import { PriorityClasses } from '../../shared/sharing/priority-classes.ts';

export interface LeaderConfig {
  /** Agent liveness: a ping every pingIntervalMs; unreachable after maxMissedPings unanswered. */
  pingIntervalMs: number;
  maxMissedPings: number;
  /** Outstanding offers older than this are rescinded. */
  offerTimeoutMs: number;
  allocationIntervalMs: number;
  /** DECLINE/ACCEPT filter when the framework gives none (Mesos: 5 s). */
  defaultRefuseMs: number;
  /** HEARTBEAT events on framework streams. */
  frameworkHeartbeatMs: number;
  /** How often unacknowledged status updates are re-sent to frameworks. */
  updateRetryMs: number;
  /** After a leader change or restart, frameworks get at least this long to resubscribe. */
  frameworkReregisterGraceMs: number;
  roleWeights: Record<string, number>;
  /** The priority classes, highest first, and the default one. */
  priorityClasses: PriorityClasses;
  /** How long a preempted task has between SIGTERM and SIGKILL (to write a checkpoint). */
  preemptionGraceMs: number;
  /** How long, past the grace, the agents freed by a preemption are offered to the preemptor only. */
  earmarkMs: number;
}

export const DEFAULT_LEADER_CONFIG: LeaderConfig = {
  pingIntervalMs: 15_000, // Mesos: --agent_ping_timeout 15 s
  maxMissedPings: 5, // Mesos: --max_agent_ping_timeouts 5
  offerTimeoutMs: 60_000, // frameworks that sit on offers give them back within a minute
  allocationIntervalMs: 1_000, // Mesos: --allocation_interval 1 s
  defaultRefuseMs: 5_000, // Mesos: Filters.refuse_seconds default
  frameworkHeartbeatMs: 15_000, // Mesos: 15 s heartbeat events
  updateRetryMs: 10_000, // Mesos' status update retry starts at 10 s
  frameworkReregisterGraceMs: 60_000,
  roleWeights: {},
  priorityClasses: new PriorityClasses(),
  preemptionGraceMs: 10_000, // a checkpoint's worth; Kubernetes gives 30 s by default
  earmarkMs: 15_000, // several allocation rounds and a gang's gathering window
};
